//! `--distributed` with objects, under a real `mpirun` against the S3 server: every rank reads
//! its own ranges of an input object and uploads its own parts of the output object (one
//! multipart upload that rank 0 creates and completes), at 1, 2 and 3 ranks, both schedules and
//! both transports — the object is byte for byte what one process uploads and what one process
//! writes to a file. A damaged chunk in the input and a part that keeps failing leave neither
//! an object nor a multipart upload in progress.

use std::path::Path;

use super::{Action, Bucket, Proxy, Request, Server};
use crate::common::*;
use crate::container::keygen;
use crate::distributed::with_mpi::{
    have_mpirun, mpirun_command, mpirun_with, one_error, time_to_clean_up,
};

const SALT: &str = "0101010101010101010101010101010101010101010101010101010101010101";
const KEY: &str = "1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f";
const IV: &str = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf";
/// 32 KiB chunks: 256 sealed chunks to an 8 MiB part.
const CHUNK: usize = 32 << 10;
/// 33 MiB and a byte: 1,057 chunks, 4 parts of 264 or 265 chunks (the last one short).
const LEN: usize = (33 << 20) + 1;

/// Every schedule and transport at 3 ranks, and every pair of rank count, schedule and transport
/// (not every triple: each layout costs two `mpirun`s over 33 MiB).
const LAYOUTS: [(usize, &str, &str); 8] = [
    (1, "static", "shared-fs"),
    (1, "dynamic", "messages"),
    (2, "static", "messages"),
    (2, "dynamic", "shared-fs"),
    (3, "static", "shared-fs"),
    (3, "static", "messages"),
    (3, "dynamic", "shared-fs"),
    (3, "dynamic", "messages"),
];

fn s(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

/// `mpirun -n RANKS paracrypt ARGS --distributed --schedule S --transport T`, a client of the
/// server at `endpoint`.
fn mpirun(
    server: &Server,
    endpoint: &str,
    (ranks, schedule, transport): (usize, &str, &str),
    args: &[String],
) -> std::process::Output {
    let mut args = args.to_vec();
    args.extend(["--schedule", schedule, "--transport", transport].map(String::from));
    mpirun_with(ranks, args, |cmd| server.credentials(cmd, endpoint))
}

fn direct(server: &Server) -> String {
    format!("http://127.0.0.1:{}", server.port)
}

fn encrypt_args(key: &Path, input: &str, output: &str) -> Vec<String> {
    let mut args: Vec<String> = ["encrypt", "-q", "--fixed-salt", SALT, "--key-file"]
        .map(String::from)
        .into();
    args.extend([
        s(key),
        "--chunk-size".into(),
        "32KiB".into(),
        "-o".into(),
        output.into(),
        input.into(),
    ]);
    args
}

#[track_caller]
fn nothing_left(bucket: &Bucket<'_>, objects: &[&str]) {
    bucket.holds_only(objects);
}

/// File → object, object → object and object → file: the object is the one a single process
/// uploads, which is the file a single process writes; what is decrypted from an object is the
/// plaintext. Each layout runs two of the three (layout `i` leaves out job `i % 3`), so every
/// job meets every rank count, schedule and transport in 16 `mpirun`s rather than 24.
#[test]
fn objects_at_every_layout_are_one_process_bytes() {
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("mpi");
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let plain = data(LEN, 5);
    let input = write(d, "plain", &plain);
    bucket.put("plain", &input);

    // One process: to a file, and to an object.
    let local = d.join("local.pcr");
    let mut cmd = paracrypt();
    cmd.args(encrypt_args(&key, &s(&input), &s(&local)));
    ok(run(cmd));
    let reference = std::fs::read(&local).unwrap();
    let mut cmd = server.client();
    cmd.args(encrypt_args(&key, &s(&input), &bucket.url("one.pcr")));
    ok(run(cmd));
    assert!(
        bucket.get("one.pcr") == reference,
        "one process: object and file differ"
    );

    let mut objects = vec!["plain".to_string(), "one.pcr".to_string()];
    for (i, layout) in LAYOUTS.into_iter().enumerate() {
        let (n, schedule, transport) = layout;
        let what = format!("{n} ranks, {schedule}, {transport}");
        let runs = |job: usize| i % 3 != job;
        // File in, object out.
        if runs(0) {
            let name = format!("f-{n}-{schedule}-{transport}.pcr");
            let args = encrypt_args(&key, &s(&input), &bucket.url(&name));
            ok(mpirun(server, &direct(server), layout, &args));
            assert!(
                bucket.get(&name) == reference,
                "{what}: file → object differs"
            );
            objects.push(name);
        }
        // Object in, object out.
        if runs(1) {
            let name = format!("o-{n}-{schedule}-{transport}.pcr");
            let args = encrypt_args(&key, &bucket.url("plain"), &bucket.url(&name));
            ok(mpirun(server, &direct(server), layout, &args));
            assert!(
                bucket.get(&name) == reference,
                "{what}: object → object differs"
            );
            objects.push(name);
        }
        // Object in, file out.
        if runs(2) {
            let out = d.join(format!("back-{n}-{schedule}-{transport}"));
            let mut args: Vec<String> = ["decrypt", "-q", "--key-file"].map(String::from).into();
            args.extend([s(&key), bucket.url("one.pcr"), "-o".into(), s(&out)]);
            ok(mpirun(server, &direct(server), layout, &args));
            assert!(
                std::fs::read(&out).unwrap() == plain,
                "{what}: object → file differs"
            );
        }
    }
    let objects: Vec<&str> = objects.iter().map(String::as_str).collect();
    nothing_left(&bucket, &objects);
    // The existing object is refused without -f (one line, nothing replaced), and replaced
    // with it.
    let args = encrypt_args(&key, &s(&input), &bucket.url("plain"));
    let out = mpirun(server, &direct(server), (2, "static", "shared-fs"), &args);
    let stderr = fails(out, 2, "already exists");
    one_error(&stderr, "use --force");
    assert!(bucket.get("plain") == plain);
    let mut args = encrypt_args(&key, &s(&input), &bucket.url("plain"));
    args.push("-f".into());
    ok(mpirun(
        server,
        &direct(server),
        (2, "dynamic", "shared-fs"),
        &args,
    ));
    assert!(bucket.get("plain") == reference);
    nothing_left(&bucket, &objects);
}

/// Every job kind that writes an output writes it to an object across ranks: raw openssl
/// encryption (the same bytes as one process), age files both ways, and container decryption.
#[test]
fn every_job_kind_uploads_across_ranks() {
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("mpi-kinds");
    let dir = scratch();
    let d = dir.path();
    let plain = data(LEN, 6);
    let input = write(d, "plain", &plain);
    bucket.put("plain", &input);
    let raw_args = |input: String, output: String| -> Vec<String> {
        let mut args: Vec<String> = ["raw", "-e", "-c", "aes-256-ctr", "-K", KEY, "--iv", IV]
            .map(String::from)
            .into();
        args.extend([
            "--chunk-size".into(),
            "64KiB".into(),
            input,
            "-o".into(),
            output,
        ]);
        args
    };
    let local = d.join("local.ctr");
    let mut cmd = paracrypt();
    cmd.args(raw_args(s(&input), s(&local)));
    ok(run(cmd));
    let (age_key, public) = crate::people::x25519(d, "me.key");
    let key = keygen(d, "k");
    let mut cmd = server.client();
    cmd.args(encrypt_args(&key, &s(&input), &bucket.url("sealed.pcr")));
    ok(run(cmd));
    for layout in [(2, "static", "shared-fs"), (3, "dynamic", "messages")] {
        let (n, schedule, _) = layout;
        let what = format!("{n} ranks, {schedule}");
        // raw: the very bytes of one process.
        let name = format!("ctr-{n}");
        ok(mpirun(
            server,
            &direct(server),
            layout,
            &raw_args(bucket.url("plain"), bucket.url(&name)),
        ));
        assert!(
            bucket.get(&name) == std::fs::read(&local).unwrap(),
            "{what}: raw"
        );
        // age: sealed to an object, opened from it to another object.
        let sealed = format!("age-{n}");
        let mut args: Vec<String> = ["encrypt", "-q", "--format", "age", "-r", &public]
            .map(String::from)
            .into();
        args.extend([s(&input), "-o".into(), bucket.url(&sealed)]);
        ok(mpirun(server, &direct(server), layout, &args));
        let opened = format!("age-opened-{n}");
        let mut args: Vec<String> = ["decrypt", "-q", "-i"].map(String::from).into();
        args.extend([
            s(&age_key),
            bucket.url(&sealed),
            "-o".into(),
            bucket.url(&opened),
        ]);
        ok(mpirun(server, &direct(server), layout, &args));
        assert!(bucket.get(&opened) == plain, "{what}: age");
        // The container, decrypted from an object to an object.
        let opened = format!("pcr-opened-{n}");
        let mut args: Vec<String> = ["decrypt", "-q", "--key-file"].map(String::from).into();
        args.extend([
            s(&key),
            bucket.url("sealed.pcr"),
            "-o".into(),
            bucket.url(&opened),
        ]);
        ok(mpirun(server, &direct(server), layout, &args));
        assert!(bucket.get(&opened) == plain, "{what}: decrypt");
    }
    nothing_left(
        &bucket,
        &[
            "plain",
            "sealed.pcr",
            "ctr-2",
            "ctr-3",
            "age-2",
            "age-3",
            "age-opened-2",
            "age-opened-3",
            "pcr-opened-2",
            "pcr-opened-3",
        ],
    );
}

/// A chunk that fails to verify on whichever rank reads it, and a part that keeps failing
/// after its retries on whichever rank uploads it: one error line, a non-zero exit, and
/// neither an object nor a multipart upload in progress — at every rank count and schedule.
#[test]
fn faults_leave_no_object_and_no_upload() {
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("mpi-faults");
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "plain", &data(LEN, 7));
    let mut cmd = server.client();
    cmd.args(encrypt_args(&key, &s(&input), &bucket.url("sealed.pcr")));
    ok(run(cmd));
    // Chunk 700 (of 32 KiB and its tag) damaged: in part 2.
    let header = bucket.get("sealed.pcr").len() - LEN - 1057 * 16;
    bucket.damage("sealed.pcr", (header + 700 * (CHUNK + 16) + 100) as u64);
    // A part that fails with 500 every time it is tried.
    let proxy = Proxy::start(server.port, |r| {
        if r.is_part() && r.target.contains("partNumber=3&") {
            Action::Fail
        } else {
            Action::Forward
        }
    });
    for layout in [
        (1, "static", "shared-fs"),
        (2, "dynamic", "shared-fs"),
        (3, "static", "shared-fs"),
        (3, "dynamic", "messages"),
    ] {
        let (n, schedule, transport) = layout;
        let what = format!("{n} ranks, {schedule}, {transport}");
        let mut args: Vec<String> = ["decrypt", "-q", "--key-file"].map(String::from).into();
        args.extend([
            s(&key),
            bucket.url("sealed.pcr"),
            "-o".into(),
            bucket.url("out"),
        ]);
        let stderr = fails(
            mpirun(server, &direct(server), layout, &args),
            1,
            "chunk 700 failed authentication",
        );
        one_error(&stderr, "chunk 700");
        nothing_left(&bucket, &["sealed.pcr"]);
        // To a file: no file either.
        let out = d.join("out");
        let mut args: Vec<String> = ["decrypt", "-q", "--key-file"].map(String::from).into();
        args.extend([s(&key), bucket.url("sealed.pcr"), "-o".into(), s(&out)]);
        let stderr = fails(
            mpirun(server, &direct(server), layout, &args),
            1,
            "chunk 700",
        );
        one_error(&stderr, "failed authentication");
        assert!(!out.exists(), "{what}");

        let mut args = encrypt_args(&key, &s(&input), &bucket.url("x.pcr"));
        args.extend(["--retries".into(), "1".into()]);
        let stderr = fails(
            mpirun(server, &proxy.url(), layout, &args),
            1,
            "cannot write s3://",
        );
        one_error(&stderr, "(part 2)");
        nothing_left(&bucket, &["sealed.pcr"]);
    }
    let tried = proxy
        .requests()
        .iter()
        .filter(|(_, a)| *a == Action::Fail)
        .count();
    assert_eq!(tried, 4 * 2, "part 3 tried twice in each run");
}

/// A 3-rank encryption to an object, caught in the middle of its upload: the proxy holds every
/// part back for `hold` (ms), and this returns once the first part reached it. `setup` changes
/// the `mpirun` command first.
struct MidUpload {
    child: std::process::Child,
    proxy: Proxy,
    /// In the object's name, so in every process's command line: finds this run's processes.
    marker: String,
    _session: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl MidUpload {
    fn start(
        server: &Server,
        bucket: &Bucket<'_>,
        hold: u64,
        seed: u8,
        extra: &[&str],
        setup: fn(&mut std::process::Command),
    ) -> Self {
        let dir = scratch();
        let d = dir.path();
        let key = keygen(d, "k");
        let input = write(d, "plain", &data(LEN, seed));
        let proxy = Proxy::start(server.port, move |r| {
            if r.is_part() {
                Action::Delay(std::time::Duration::from_millis(hold))
            } else {
                Action::Forward
            }
        });
        let marker = format!("mid-upload-{}", bucket.name);
        let mut args = encrypt_args(&key, &s(&input), &bucket.url(&marker));
        args.extend(["--upload-concurrency", "1", "--schedule", "static"].map(String::from));
        args.extend(extra.iter().map(|a| a.to_string()));
        let (mut cmd, session) = mpirun_command(3, args, |cmd| {
            server.credentials(cmd, &proxy.url());
            setup(cmd);
        });
        let child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while !proxy.requests().iter().any(|(r, _)| r.is_part()) {
            assert!(start.elapsed().as_secs() < 120, "no part was ever sent");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        MidUpload {
            child,
            proxy,
            marker,
            _session: session,
            _dir: dir,
        }
    }

    /// The pid of this run's process `program` (of rank `rank`, if given).
    fn pid(&self, program: &str, rank: Option<usize>) -> u32 {
        crate::cluster_faults::processes(&self.marker)
            .into_iter()
            .find(|p| p.program == program && (rank.is_none() || p.rank == rank))
            .unwrap_or_else(|| panic!("{program} runs"))
            .pid
    }

    /// Waits for the run to end; checks that neither an object nor an upload is left and that
    /// the upload was never completed.
    fn end(self, bucket: &Bucket<'_>) -> (std::process::Output, Vec<(Request, Action)>) {
        let out = self.child.wait_with_output().unwrap();
        nothing_left(bucket, &[]);
        let requests = self.proxy.requests();
        assert!(
            !requests.iter().any(|(r, _)| r.is_complete()),
            "the upload was completed"
        );
        (out, requests)
    }
}

/// SIGTERM to `mpirun` in the middle of the upload: Open MPI passes it on to every rank (after a
/// SIGCONT and `odls_base_sigkill_timeout`, and it kills them as long after: 5 s here, see
/// `time_to_clean_up`, 1 s by default; every part is held longer than that, so the upload is
/// still under way when the ranks get the signal), every rank's interrupt handler
/// aborts the upload it joined at once, without waiting for its parts in flight, and neither an
/// object nor an upload is left.
///
/// The signal goes to `mpirun` alone and once: `mpirun` takes a second signal within 5 s as
/// "abort now" and ends without passing anything on, and `timeout` (which the test
/// runs `mpirun` under) sends two, one to its child and one to its process group. docs/guide/
/// object-storage.md says so.
#[test]
fn a_signal_aborts_the_distributed_upload() {
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("mpi-signal");
    let run = MidUpload::start(server, &bucket, 12_000, 8, &[], time_to_clean_up);
    crate::cluster_faults::signal("-TERM", run.pid("mpirun", None));
    let (out, requests) = run.end(&bucket);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        requests.iter().any(|(r, _)| r.method == "DELETE"),
        "no rank aborted the upload: {requests:?}"
    );
}

/// A worker stopped (SIGSTOP) in the middle of the upload: the other ranks' watchdogs fire
/// after `--stall-timeout`, their hooks abort the upload, and the job ends with the watchdog's
/// status, leaving neither an object nor an upload.
#[test]
fn a_stalled_rank_aborts_the_distributed_upload() {
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("mpi-stall");
    let run = MidUpload::start(server, &bucket, 1000, 9, &["--stall-timeout", "4"], |_| {});
    crate::cluster_faults::signal("-STOP", run.pid("paracrypt", Some(2)));
    let (out, _) = run.end(&bucket);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("--stall-timeout"), "{stderr}");
}

/// An object created by someone else while the ranks upload is not replaced: rank 0's complete
/// request is conditional (`If-None-Match: *`, no `-f`), fails, and the upload is aborted.
#[test]
fn an_object_created_meanwhile_is_not_replaced_across_ranks() {
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("mpi-race");
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "plain", &data(LEN, 10));
    let proxy = {
        let name = bucket.name.clone();
        Proxy::start(server.port, move |r| {
            if r.is_complete() {
                let theirs = tempfile::NamedTempFile::new().unwrap();
                std::fs::write(theirs.path(), b"someone else's").unwrap();
                Server::shared().command(serde_json::json!({
                    "op": "put", "bucket": name, "key": "x.pcr", "file": theirs.path(),
                }));
            }
            Action::Forward
        })
    };
    let args = encrypt_args(&key, &s(&input), &bucket.url("x.pcr"));
    let out = mpirun(server, &proxy.url(), (3, "dynamic", "shared-fs"), &args);
    let stderr = fails(out, 2, "created by someone else meanwhile");
    one_error(&stderr, "use --force");
    assert_eq!(bucket.get("x.pcr"), b"someone else's");
    nothing_left(&bucket, &["x.pcr"]);
}
