//! Faults of object storage: each ends with one clear line and a documented exit code, and
//! leaves nothing behind — no object, no multipart upload in progress (the bucket is listed
//! after each).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{Action, Proxy, Server};
use crate::common::*;
use crate::container::keygen;

fn encrypt(mut cmd: Command, key: &Path, input: &Path, output: &str) -> Command {
    cmd.args(["encrypt", "-q", "--key-file"])
        .arg(key)
        .args(["-o", output])
        .arg(input);
    cmd
}

/// The error of a run that failed with `code`: exactly one line, naming `needle`.
#[track_caller]
fn one_line(out: std::process::Output, code: i32, needle: &str) -> String {
    let stderr = fails(out, code, needle);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].starts_with("paracrypt: error: "), "{stderr}");
    stderr
}

/// A part that keeps failing (500 after every retry) aborts the whole upload; throttling
/// (503 SlowDown) is retried with backoff and the upload succeeds.
#[test]
fn a_failed_part_aborts_and_throttling_is_retried() {
    let server = Server::shared();
    let bucket = server.bucket("parts");
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let plain = data(30 << 20, 1);
    let input = write(dir.path(), "in", &plain);

    let proxy = Proxy::start(server.port, |r| {
        if r.is_part() && r.target.contains("partNumber=2&") {
            Action::Fail
        } else {
            Action::Forward
        }
    });
    let mut cmd = server.client_at(&proxy.url());
    cmd.args(["--retries", "2"]);
    let out = run(encrypt(cmd, &key, &input, &bucket.url("x.pcr")));
    one_line(out, 1, "cannot write s3://");
    let failed = proxy
        .requests()
        .iter()
        .filter(|(_, a)| *a == Action::Fail)
        .count();
    assert_eq!(failed, 3, "the part was tried 1 + 2 times");
    bucket.holds_only(&[]);

    // 503 SlowDown on the first four part uploads: retried, the object is made.
    let slowed = Arc::new(AtomicUsize::new(0));
    let proxy = {
        let slowed = slowed.clone();
        Proxy::start(server.port, move |r| {
            if r.is_part() && slowed.fetch_add(1, Ordering::Relaxed) < 4 {
                Action::SlowDown
            } else {
                Action::Forward
            }
        })
    };
    let out = run(encrypt(
        server.client_at(&proxy.url()),
        &key,
        &input,
        &bucket.url("y.pcr"),
    ));
    ok(out);
    let answered = proxy
        .requests()
        .iter()
        .filter(|(_, a)| *a == Action::SlowDown)
        .count();
    assert_eq!(answered, 4);
    let mut back = server.client();
    back.args(["decrypt", "--key-file"])
        .arg(&key)
        .arg(bucket.url("y.pcr"));
    assert!(ok(run(back)) == plain);
    bucket.holds_only(&["y.pcr"]);
}

/// Wrong credentials, a missing bucket and a missing object: one line each, nothing made.
#[test]
fn credentials_buckets_and_objects_that_are_not_there() {
    let server = Server::shared();
    let bucket = server.bucket("missing");
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let input = write(dir.path(), "in", &data(1 << 20, 2));

    let mut wrong = server.client();
    wrong.env("AWS_SECRET_ACCESS_KEY", "not-the-secret");
    one_line(
        run(encrypt(wrong, &key, &input, &bucket.url("x.pcr"))),
        1,
        "access denied",
    );
    let mut unknown = server.client();
    unknown.env("AWS_ACCESS_KEY_ID", "AKIANOBODYKNOWS00000");
    let mut read = unknown;
    read.args(["decrypt", "--key-file"])
        .arg(&key)
        .arg(bucket.url("x.pcr"));
    one_line(run(read), 1, "access denied");

    one_line(
        run(encrypt(
            server.client(),
            &key,
            &input,
            "s3://pc-no-such-bucket/x.pcr",
        )),
        1,
        "no such bucket",
    );
    let mut read = server.client();
    read.args(["decrypt", "--key-file"])
        .arg(&key)
        .arg(bucket.url("nothing.pcr"));
    one_line(run(read), 1, "no such object");
    bucket.holds_only(&[]);
}

/// A byte damaged in the stored object fails at its chunk (as a damaged file does), and a
/// decryption into a file or an object leaves neither.
#[test]
fn a_damaged_object_fails_at_its_chunk() {
    let server = Server::shared();
    let bucket = server.bucket("damaged");
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "in", &data(12 << 20, 3));
    ok(run(encrypt(
        server.client(),
        &key,
        &input,
        &bucket.url("x.pcr"),
    )));
    // Chunk 9 (of 1 MiB and its 16-byte tag), after the header.
    let header = bucket.get("x.pcr").len() as u64 - 12 * ((1 << 20) + 16);
    bucket.damage("x.pcr", header + 9 * ((1 << 20) + 16) + 1000);
    let mut cmd = server.client();
    cmd.args(["decrypt", "--key-file"])
        .arg(&key)
        .arg("-o")
        .arg(d.join("out"))
        .arg(bucket.url("x.pcr"));
    one_line(run(cmd), 1, "chunk 9 failed authentication");
    assert!(!d.join("out").exists());
    let mut cmd = server.client();
    cmd.args(["decrypt", "--key-file"])
        .arg(&key)
        .args(["-o", &bucket.url("out")])
        .arg(bucket.url("x.pcr"));
    one_line(run(cmd), 1, "chunk 9 failed authentication");
    bucket.holds_only(&["x.pcr"]);
}

/// SIGTERM and SIGINT in the middle of an upload abort it: the process ends as the signal
/// would end it, and neither an object nor an upload is left.
#[test]
fn signals_abort_the_upload() {
    let server = Server::shared();
    let bucket = server.bucket("signals");
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let input = write(dir.path(), "in", &data(40 << 20, 4));
    for (signal, name) in [(15, "TERM"), (2, "INT")] {
        // Parts go up one at a time, each held back a little: the run is mid-upload for seconds.
        let proxy = Proxy::start(server.port, |r| {
            if r.is_part() {
                Action::Delay(Duration::from_millis(400))
            } else {
                Action::Forward
            }
        });
        let mut cmd = Command::new("env");
        cmd.arg("--default-signal=HUP,INT,TERM")
            .arg(env!("CARGO_BIN_EXE_paracrypt"));
        server.credentials(&mut cmd, &proxy.url());
        cmd.args(["--upload-concurrency", "1"]);
        let mut child = encrypt(cmd, &key, &input, &bucket.url("x.pcr"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while proxy.requests().iter().filter(|(r, _)| r.is_part()).count() < 2 {
            assert!(start.elapsed() < Duration::from_secs(60), "no part went up");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(bucket.uploads().len(), 1, "an upload in progress");
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(
            pid,
            rustix::process::Signal::from_named_raw(signal).unwrap(),
        )
        .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "SIG{name}: {status:?}");
        bucket.holds_only(&[]);
    }
}

/// An object created by someone else between the check and the complete request is not
/// replaced: the complete is conditional (`If-None-Match: *`), fails, and the upload is
/// aborted.
#[test]
fn an_object_created_meanwhile_is_not_replaced() {
    let server = Server::shared();
    let bucket = Arc::new(server.bucket("race"));
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let input = write(dir.path(), "in", &data(10 << 20, 5));
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
    let out = run(encrypt(
        server.client_at(&proxy.url()),
        &key,
        &input,
        &bucket.url("x.pcr"),
    ));
    one_line(out, 2, "created by someone else meanwhile");
    assert_eq!(bucket.get("x.pcr"), b"someone else's");
    bucket.holds_only(&["x.pcr"]);
}

/// The server killed in the middle of an upload: the run ends within the retries, with one
/// error line (and a warning that the upload could not be aborted, since nothing answers).
#[test]
fn the_server_killed_mid_upload() {
    let server = Arc::new(Server::start());
    let bucket = server.bucket("killed");
    let name = bucket.name.clone();
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let input = write(dir.path(), "in", &data(40 << 20, 6));
    let proxy = {
        let server = server.clone();
        let parts = AtomicUsize::new(0);
        Proxy::start(server.port, move |r| {
            if r.is_part() && parts.fetch_add(1, Ordering::Relaxed) == 2 {
                server.kill();
            }
            Action::Forward
        })
    };
    let mut cmd = server.client_at(&proxy.url());
    cmd.args(["--retries", "2", "--upload-concurrency", "1"]);
    let start = Instant::now();
    let out = run(encrypt(cmd, &key, &input, &format!("s3://{name}/x.pcr")));
    let (code, stderr) = status_and_stderr(&out);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "ended in bounded time"
    );
    assert!(stderr.contains("cannot write s3://"), "{stderr}");
    assert!(
        stderr.contains("server cannot be reached") || stderr.contains("error"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
