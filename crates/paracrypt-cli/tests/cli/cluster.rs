//! `--distributed` across an emulated cluster (`scripts/cluster.sh`): three hosts in network
//! namespaces, Open MPI over TCP only, so every byte between ranks crosses a veth whose
//! counters are read. Every job kind, at both schedules and both transports, gives one
//! process's bytes where its format is deterministic (raw ciphers, a container with a key file
//! or a password and a fixed salt) and otherwise opens to the plaintext on one process, with
//! `age -d`, or equals `openssl enc -S` under the file's salt; what one process encrypts opens on
//! the cluster. Under the messages transport each host but rank 0's sees an empty data directory
//! of its own (the key, identity and password files lie outside it: every rank reads them), the
//! chunks really cross the links, and nothing is left in any host's directory, after a success
//! or after a wrong identity, a wrong password or a damaged chunk.
//!
//! Needs root (network namespaces), `ip` and `mpirun`; without them a test says why and skips,
//! except in CI (`CI` set, as scripts/test.sh sets it), where a cluster that cannot be made
//! fails every test that needs one, as every other missing tool does.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

const KEY: &str = "1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f";
const IV: &str = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf";
const SALT: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
const CHUNK: usize = 4096;
const HOSTS: usize = 3;

pub(crate) fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    })
}

/// Whether the cluster can be made here: root, `ip` and `mpirun`, and a network namespace can
/// be made (root in a container may lack the right). If not, the test that asks says why and
/// skips, or in CI fails (scripts/test.sh runs as root and installs iproute2 and Open MPI).
pub(crate) fn can_make_a_cluster() -> bool {
    let runs = |tool: &str, arg: &str| {
        Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let why = if !is_root() {
        Some("not root".to_string())
    } else if !runs("ip", "-V") {
        Some("no ip (iproute2)".to_string())
    } else if !runs("mpirun", "--version") {
        Some("no mpirun (Open MPI)".to_string())
    } else {
        namespace_refused()
    };
    let Some(why) = why else {
        return true;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "the emulated cluster is required in CI, and none can be made here: {why} \
         (scripts/test.sh runs as root with iproute2 and Open MPI)"
    );
    eprintln!("{why}: skipping the emulated-cluster test");
    false
}

/// Why a network namespace cannot be made here (`ip netns add`, then removed), if it cannot.
/// The name is this test's own, never one of scripts/cluster.sh's hosts.
fn namespace_refused() -> Option<String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "pc-probe-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let out = Command::new("ip").args(["netns", "add", &name]).output();
    match out {
        Ok(out) if out.status.success() => {
            let _ = Command::new("ip").args(["netns", "del", &name]).output();
            None
        }
        Ok(out) => Some(format!(
            "no network namespace can be made ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("no network namespace can be made ({e})")),
    }
}

/// A cluster that cannot be made (here: no `ip` or `mpirun` on PATH) fails a cluster test in
/// CI, with the reason, and elsewhere skips it, saying why: this test binary runs one of its
/// cluster tests both ways.
#[test]
fn a_cluster_that_cannot_be_made_fails_in_ci_and_is_skipped_elsewhere() {
    let empty = scratch();
    let one_test = |ci: bool| {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "cluster::three_hosts_over_tcp_give_the_bytes_of_one_process",
            "--nocapture",
        ])
        .env("PATH", empty.path())
        .env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        let out = cmd.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (passed, text) = one_test(true);
    assert!(!passed, "in CI: {text}");
    assert!(
        text.contains("the emulated cluster is required in CI, and none can be made here: "),
        "{text}"
    );
    let (passed, text) = one_test(false);
    assert!(passed, "outside CI: {text}");
    assert!(
        text.contains(": skipping the emulated-cluster test"),
        "{text}"
    );
    assert!(text.contains("1 passed"), "{text}");
}

pub(crate) fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster.sh")
}

/// One host's link: what it sent and what it received, in bytes.
#[derive(Debug)]
struct Link {
    sent: u64,
    received: u64,
}

/// `scripts/cluster.sh run -n 3 [--private DIR] -- paracrypt ARGS --distributed`, and the
/// bytes each host's link carried.
fn on_cluster(private: Option<&Path>, args: &[String]) -> (Output, Vec<Link>) {
    on_cluster_through(&[], private, args)
}

/// [`on_cluster`], each rank's `paracrypt` started by `wrapper` (a command that runs the
/// command its arguments end with).
fn on_cluster_through(
    wrapper: &[String],
    private: Option<&Path>,
    args: &[String],
) -> (Output, Vec<Link>) {
    let counters = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(script())
        .args(["run", "-n", &HOSTS.to_string(), "--timeout", "300"])
        .arg("--counters")
        .arg(counters.path());
    if let Some(dir) = private {
        cmd.arg("--private").arg(dir);
    }
    cmd.arg("--")
        .args(wrapper)
        .arg(env!("CARGO_BIN_EXE_paracrypt"))
        .args(args)
        .arg("--distributed");
    cmd.env_remove("PARACRYPT_PASSWORD");
    let out = run(cmd);
    let links = std::fs::read_to_string(counters.path())
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Link {
                sent: f[1].parse().unwrap(),
                received: f[2].parse().unwrap(),
            }
        })
        .collect();
    (out, links)
}

pub(crate) fn s(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

pub(crate) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// Runs `args` on the cluster under every schedule and transport, the messages transport
/// with a private data directory; returns the links of the static messages run.
fn every_layout(
    data_dir: &Path,
    args: impl Fn(&str) -> Vec<String>,
    check: impl Fn(&str),
) -> Vec<Link> {
    let mut static_messages = Vec::new();
    for schedule in ["static", "dynamic"] {
        for transport in ["shared-fs", "messages"] {
            let tag = format!("{schedule}-{transport}");
            let mut a = args(&tag);
            a.extend(strings(&["--schedule", schedule, "--transport", transport]));
            let private = (transport == "messages").then_some(data_dir);
            let (out, links) = on_cluster(private, &a);
            ok(out);
            assert_eq!(links.len(), HOSTS);
            check(&tag);
            if tag == "static-messages" {
                static_messages = links;
            }
        }
    }
    static_messages
}

#[test]
fn three_hosts_over_tcp_give_the_bytes_of_one_process() {
    if !can_make_a_cluster() {
        return;
    }
    // The data directory is private to rank 0 under the messages transport; the key is not.
    let data = scratch();
    let keys = scratch();
    let plain = data_of(41 * CHUNK + 77);
    let input = write(data.path(), "plain", &plain);
    let key = keys.path().join("key");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-o"]).arg(&key);
    ok(run(cmd));

    // Raw AES-256-CTR: one process's bytes.
    let raw = |output: &Path| -> Vec<String> {
        let mut a = strings(&["raw", "-e", "-c", "aes-256-ctr", "-K", KEY, "--iv", IV]);
        a.extend([
            "--chunk-size".into(),
            CHUNK.to_string(),
            s(&input),
            "-o".into(),
        ]);
        a.push(s(output));
        a
    };
    let reference = data.path().join("raw-local");
    ok(run({
        let mut cmd = paracrypt();
        cmd.args(raw(&reference));
        cmd
    }));
    let reference = std::fs::read(&reference).unwrap();
    let out = |tag: &str, what: &str| data.path().join(format!("{what}-{tag}"));
    every_layout(
        data.path(),
        |tag| raw(&out(tag, "raw")),
        |tag| {
            assert!(
                std::fs::read(out(tag, "raw")).unwrap() == reference,
                "raw {tag}"
            )
        },
    );

    // The container with a fixed salt: one process's bytes, and it opens again on the cluster.
    let seal = |output: &Path| -> Vec<String> {
        let mut a = strings(&["encrypt", "-q", "--fixed-salt", SALT, "-k"]);
        a.extend([s(&key), "--chunk-size".into(), CHUNK.to_string(), s(&input)]);
        a.extend(["-o".into(), s(output)]);
        a
    };
    let reference = data.path().join("sealed-local");
    ok(run({
        let mut cmd = paracrypt();
        cmd.args(seal(&reference));
        cmd
    }));
    let reference_bytes = std::fs::read(&reference).unwrap();
    every_layout(
        data.path(),
        |tag| seal(&out(tag, "sealed")),
        |tag| {
            assert!(
                std::fs::read(out(tag, "sealed")).unwrap() == reference_bytes,
                "container {tag}"
            )
        },
    );
    every_layout(
        data.path(),
        |tag| {
            let mut a = strings(&["decrypt", "-q", "-k"]);
            a.extend([s(&key), s(&reference), "-o".into(), s(&out(tag, "opened"))]);
            a
        },
        |tag| {
            assert!(
                std::fs::read(out(tag, "opened")).unwrap() == plain,
                "open {tag}"
            )
        },
    );
    // Every temporary file was renamed or removed, on rank 0's side.
    assert!(
        listing(data.path())
            .iter()
            .all(|f| !f.starts_with(".paracrypt"))
    );
}

#[test]
fn the_messages_transport_carries_the_chunks_over_the_links() {
    if !can_make_a_cluster() {
        return;
    }
    let data = scratch();
    let len = 400 * CHUNK;
    let input = write(data.path(), "plain", &data_of(len));
    let args = |transport: &str, output: &str| -> Vec<String> {
        let mut a = strings(&["raw", "-e", "-c", "aes-256-ctr", "-K", KEY, "--iv", IV]);
        a.extend([
            "--chunk-size".into(),
            CHUNK.to_string(),
            s(&input),
            "-o".into(),
        ]);
        a.extend([s(&data.path().join(output)), "--transport".into()]);
        a.extend(strings(&[transport, "--schedule", "static"]));
        a
    };
    // Under the static schedule each of the 3 ranks takes a third of the chunks: the other
    // two hosts receive their third over their link and send it back, encrypted.
    let (out, links) = on_cluster(Some(data.path()), &args("messages", "m"));
    ok(out);
    for (host, link) in links.iter().enumerate().skip(1) {
        assert!(
            link.received >= (len / 3) as u64 && link.sent >= (len / 3) as u64,
            "host {}: {link:?} for a third of {len} bytes",
            host + 1
        );
    }
    // Under the shared file system, every rank reads and writes the file itself: only a few
    // messages cross the links.
    let (out, links) = on_cluster(None, &args("shared-fs", "s"));
    ok(out);
    for (host, link) in links.iter().enumerate().skip(1) {
        assert!(
            link.received + link.sent < (len / 10) as u64,
            "host {}: {link:?} under the shared file system",
            host + 1
        );
    }
}

/// Deterministic test data.
fn data_of(len: usize) -> Vec<u8> {
    data(len, 11)
}

#[test]
fn a_private_directory_is_seen_by_rank_0_only() {
    if !can_make_a_cluster() {
        return;
    }
    let data = scratch();
    write(data.path(), "input", b"only rank 0 sees this");
    let mut cmd = Command::new("bash");
    cmd.arg(script())
        .args(["run", "-n", "3", "--timeout", "120", "--private"])
        .arg(data.path())
        .args(["--", "sh", "-c"])
        .arg("echo \"$OMPI_COMM_WORLD_RANK $(hostname) $(ls \"$1\" | wc -l)\"")
        .arg("sh")
        .arg(data.path());
    let out = String::from_utf8(ok(run(cmd))).unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0 pc-h1 1", "1 pc-h2 0", "2 pc-h3 0"]);
}

#[test]
fn the_cluster_script_refuses_to_run_without_root() {
    fails(up_as_nobody(&script()), 2, "cluster.sh: needs root");
}

/// The same from a checkout nobody but root can enter (a clone under a 0700 directory, as
/// under `/root` or `mktemp -d`), on a path with spaces: the user the test becomes needs
/// nothing of the checkout. (Before, it ran the script by its path: bash could not open it and
/// exited 126.)
#[test]
fn the_cluster_script_refuses_without_root_from_a_private_checkout() {
    use std::os::unix::fs::PermissionsExt;
    let private = scratch();
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let scripts = private.path().join("a clone with spaces/scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let copy = scripts.join("cluster.sh");
    std::fs::copy(script(), &copy).unwrap();
    fails(up_as_nobody(&copy), 2, "cluster.sh: needs root");
}

/// `cluster.sh up` as a user who is not root: as root, setpriv (util-linux) runs it as nobody;
/// a user who is not root runs it as is (and is refused by the script itself). The script goes
/// to bash on standard input, read by this process, and the command runs from `/`: the user
/// needs no access to the checkout, whatever its directories' modes.
fn up_as_nobody(script: &Path) -> Output {
    let mut cmd = if is_root() {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash"]);
        cmd
    } else {
        Command::new("bash")
    };
    cmd.args(["-s", "--", "up"]).current_dir("/");
    let text = std::fs::read(script).unwrap();
    let out = run_with_stdin(cmd, &text);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("setpriv:"));
    out
}

/// The layouts the job kinds run at on the cluster: both schedules × both transports (the
/// messages transport with the data directory private to rank 0).
const LAYOUTS: [(&str, &str); 4] = [
    ("static", "messages"),
    ("dynamic", "shared-fs"),
    ("static", "shared-fs"),
    ("dynamic", "messages"),
];

/// The two layouts job kind `i` runs at: each kind gets both schedules and both transports
/// (the messages transport with private directories), and each layout half the kinds. The
/// schedule and transport are the same code for every recipe (raw CTR and the container with a
/// key file run all four layouts above); two a kind keeps CI's time down (a cluster run is
/// about 1.6 s).
fn layouts_for(i: usize) -> [(&'static str, &'static str); 2] {
    let first = 2 * (i % 2);
    [LAYOUTS[first], LAYOUTS[first + 1]]
}

/// Plaintext for the job kinds: seven 64 KiB age chunks and a short one (two or three per rank),
/// 113 container chunks of 4 KiB.
const PLAIN_LEN: usize = 7 * 64 * 1024 + 5;

/// How one rank's `paracrypt` ended, as its own host saw it.
#[derive(Debug)]
struct RankEnd {
    host: String,
    status: i32,
    /// What the host sees in the data directory once its `paracrypt` ended.
    files: Vec<String>,
}

/// `paracrypt ARGS --distributed` on the cluster (`private`: `data` private to rank 0), and
/// how each rank ended, in rank order. Each rank's `paracrypt` runs under a shell that then
/// lists its host's view of `data` (a worker host's private directory is a tmpfs that goes
/// with the run) and exits 0, so that mpirun lets every rank list its own before the job ends.
fn ranks_on_cluster(data: &Path, private: bool, args: &[String]) -> (Output, Vec<RankEnd>) {
    let script = format!(
        "\"$@\"; status=$?; echo \"rank-end $OMPI_COMM_WORLD_RANK $(hostname) $status \
         $(ls -A {} | tr '\\n' ' ')\"",
        sh_quote(data)
    );
    let wrapper = strings(&["sh", "-c", &script, "sh"]);
    let (out, _) = on_cluster_through(&wrapper, private.then_some(data), args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut ends: Vec<(usize, RankEnd)> = stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.strip_prefix("rank-end ")?.split_whitespace();
            let rank = fields.next()?.parse().ok()?;
            let host = fields.next()?.to_string();
            let status = fields.next()?.parse().ok()?;
            let files = fields.map(String::from).collect();
            Some((
                rank,
                RankEnd {
                    host,
                    status,
                    files,
                },
            ))
        })
        .collect();
    ends.sort_by_key(|(rank, _)| *rank);
    assert_eq!(
        ends.iter().map(|(rank, _)| *rank).collect::<Vec<_>>(),
        (0..HOSTS).collect::<Vec<_>>(),
        "every rank reports how it ended: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, ends.into_iter().map(|(_, end)| end).collect())
}

/// Every rank ran on its own host and ended with `status`; rank 0 left no temporary file, and
/// a worker host with a private data directory has nothing in it (its chunks came and went as
/// messages). (Without private directories a worker may list the shared one before rank 0 has
/// renamed or removed its temporary file: the caller checks that directory once the job is over.)
#[track_caller]
fn ranks_ended(what: &str, ends: &[RankEnd], status: i32, private: bool) {
    for (rank, end) in ends.iter().enumerate() {
        assert_eq!(end.host, format!("pc-h{}", rank + 1), "{what}: {ends:?}");
        assert_eq!(end.status, status, "{what}: rank {rank}'s exit: {ends:?}");
    }
    assert!(
        !ends[0].files.iter().any(|f| f.starts_with(".paracrypt")),
        "{what}: a temporary file left: {ends:?}"
    );
    if private {
        for end in &ends[1..] {
            assert!(
                end.files.is_empty(),
                "{what}: left on {}: {ends:?}",
                end.host
            );
        }
    }
}

/// `args` (a subcommand and its options) from `input` to `output`.
fn job(args: &[String], input: &Path, output: &Path) -> Vec<String> {
    let mut a = args.to_vec();
    a.extend([s(input), "-o".into(), s(output)]);
    a
}

/// `paracrypt ARGS` on one local process, asserting success.
fn locally(args: &[String]) {
    let mut cmd = paracrypt();
    cmd.args(args);
    ok(run(cmd));
}

/// One job kind `--distributed` runs: how to encrypt and decrypt (key, identity and password
/// files lie outside the data directory: every rank reads them itself), and what its
/// distributed encryption is checked against.
struct Kind {
    name: &'static str,
    encrypt: Vec<String>,
    decrypt: Vec<String>,
    sealed: Sealed,
}

/// What a distributed encryption must be.
enum Sealed {
    /// The format is deterministic: one local process's bytes.
    Same,
    /// A fresh file key: the file opens to the plaintext on one process and, given an
    /// identity, with the real `age -d`.
    Opens { age: Option<PathBuf> },
    /// An `openssl enc` password file, under a fresh salt: it opens on one process, and
    /// `openssl enc -S SALT` with the file's salt writes the same bytes after the header.
    Salted {
        cipher: &'static str,
        password: PathBuf,
    },
}

/// Every job kind the cluster tests add to the raw CTR and key-file container of
/// [`three_hosts_over_tcp_give_the_bytes_of_one_process`], with their secrets made in `keys`.
fn kinds(keys: &Path) -> Vec<Kind> {
    // The container and raw ciphers in small chunks, a few dozen a rank (age's are 64 KiB).
    let chunk = CHUNK.to_string();
    let c = chunk.as_str();
    let password = write(keys, "password", b"correct horse battery staple\n");
    let pw = s(&password);
    let (identity, recipient) = crate::people::x25519(keys, "me.key");
    let id = s(&identity);
    let mut kinds = vec![
        Kind {
            name: "raw AES-256-CBC (serial encryption on rank 0, parallel decryption)",
            encrypt: strings(&[
                "raw",
                "-e",
                "-c",
                "aes-256-cbc",
                "-K",
                KEY,
                "--iv",
                IV,
                "--chunk-size",
                c,
            ]),
            decrypt: strings(&[
                "raw",
                "-d",
                "-c",
                "aes-256-cbc",
                "-K",
                KEY,
                "--iv",
                IV,
                "--chunk-size",
                c,
            ]),
            sealed: Sealed::Same,
        },
        Kind {
            name: "container, password (Argon2id on every rank)",
            encrypt: strings(&[
                "encrypt",
                "-q",
                "--fixed-salt",
                SALT,
                "--password-file",
                &pw,
                "--chunk-size",
                c,
            ]),
            decrypt: strings(&["decrypt", "-q", "--password-file", &pw]),
            sealed: Sealed::Same,
        },
        Kind {
            name: "container to recipients (version 2)",
            encrypt: strings(&["encrypt", "-q", "-r", &recipient, "--chunk-size", c]),
            decrypt: strings(&["decrypt", "-q", "-i", &id]),
            sealed: Sealed::Opens { age: None },
        },
        Kind {
            name: "age, X25519",
            encrypt: strings(&["encrypt", "-q", "--format", "age", "-r", &recipient]),
            decrypt: strings(&["decrypt", "-q", "-i", &id]),
            sealed: Sealed::Opens {
                age: Some(identity.clone()),
            },
        },
        Kind {
            name: "age, passphrase (scrypt on rank 0)",
            encrypt: strings(&[
                "encrypt",
                "-q",
                "--format",
                "age",
                "--passphrase",
                "--password-file",
                &pw,
            ]),
            decrypt: strings(&["decrypt", "-q", "--password-file", &pw]),
            sealed: Sealed::Opens { age: None },
        },
        Kind {
            name: "openssl password file (PBKDF2 on every rank)",
            encrypt: strings(&[
                "raw",
                "-e",
                "-c",
                "aes-256-ctr",
                "--pbkdf2",
                "--password-file",
                &pw,
                "--chunk-size",
                c,
            ]),
            decrypt: strings(&[
                "raw",
                "-d",
                "-c",
                "aes-256-ctr",
                "--pbkdf2",
                "--password-file",
                &pw,
                "--chunk-size",
                c,
            ]),
            sealed: Sealed::Salted {
                cipher: "aes-256-ctr",
                password: password.clone(),
            },
        },
    ];
    if let Some((ssh, public)) = crate::people::ssh_key(keys, "ed25519") {
        kinds.push(Kind {
            name: "age, SSH (ed25519)",
            encrypt: strings(&["encrypt", "-q", "--format", "age", "-r", &public]),
            decrypt: strings(&["decrypt", "-q", "-i", &s(&ssh)]),
            sealed: Sealed::Opens { age: Some(ssh) },
        });
    }
    kinds
}

/// Checks a distributed encryption of `input` (`plain`) against `kind` and the local
/// `reference`; `scratch` holds what the checks write.
fn check_sealed(
    kind: &Kind,
    what: &str,
    sealed: &Path,
    reference: &Path,
    input: &Path,
    plain: &[u8],
    scratch: &Path,
) {
    let bytes = std::fs::read(sealed).unwrap();
    if let Sealed::Same = kind.sealed {
        assert!(
            bytes == std::fs::read(reference).unwrap(),
            "{what}: differs from one process"
        );
        return;
    }
    let opened = scratch.join("opened-locally");
    locally(&job(&kind.decrypt, sealed, &opened));
    assert!(
        std::fs::read(&opened).unwrap() == plain,
        "{what}: does not open on one process"
    );
    std::fs::remove_file(opened).unwrap();
    match &kind.sealed {
        Sealed::Opens {
            age: Some(identity),
        } if have("age", "--version") => {
            let mut cmd = Command::new("age");
            cmd.arg("-d").arg("-i").arg(identity).arg(sealed);
            assert!(ok(run(cmd)) == plain, "{what}: age -d differs");
        }
        Sealed::Salted { cipher, password } if openssl().is_some() => {
            assert!(bytes.starts_with(b"Salted__"), "{what}: no Salted__ header");
            let salt = hex::encode(&bytes[8..16]);
            let pass = format!("file:{}", s(password));
            let theirs = openssl_ok(&[
                "enc",
                "-e",
                &format!("-{cipher}"),
                "-pbkdf2",
                "-S",
                &salt,
                "-pass",
                &pass,
                "-in",
                &s(input),
            ]);
            // OpenSSL 3 leaves the header out when the salt is given; 1.1 writes it.
            let theirs = theirs.strip_prefix(&bytes[..16]).unwrap_or(&theirs);
            assert!(
                &bytes[16..] == theirs,
                "{what}: differs from openssl enc -S {salt}"
            );
        }
        _ => {}
    }
}

#[test]
fn every_job_kind_on_three_hosts() {
    if !can_make_a_cluster() {
        return;
    }
    // The data directory is private to rank 0 under the messages transport; the secrets are not.
    let data = scratch();
    let keys = scratch();
    let plain = data_of(PLAIN_LEN);
    let input = write(data.path(), "plain", &plain);
    for (i, kind) in kinds(keys.path()).into_iter().enumerate() {
        // One process's encryption: the reference, and what the cluster decrypts.
        let reference = data.path().join("local");
        locally(&job(&kind.encrypt, &input, &reference));
        for (schedule, transport) in layouts_for(i) {
            let what = format!("{}, {schedule} {transport}", kind.name);
            let private = transport == "messages";
            let layout = strings(&["--schedule", schedule, "--transport", transport]);
            let sealed = data.path().join("sealed");
            let mut args = job(&kind.encrypt, &input, &sealed);
            args.extend(layout.clone());
            let (_, ends) = ranks_on_cluster(data.path(), private, &args);
            ranks_ended(&format!("{what}, encrypting"), &ends, 0, private);
            check_sealed(
                &kind,
                &what,
                &sealed,
                &reference,
                &input,
                &plain,
                keys.path(),
            );

            let opened = data.path().join("opened");
            let mut args = job(&kind.decrypt, &reference, &opened);
            args.extend(layout);
            let (_, ends) = ranks_on_cluster(data.path(), private, &args);
            ranks_ended(&format!("{what}, decrypting"), &ends, 0, private);
            assert!(
                std::fs::read(&opened).unwrap() == plain,
                "{what}: decryption differs"
            );
            std::fs::remove_file(sealed).unwrap();
            std::fs::remove_file(opened).unwrap();
        }
        std::fs::remove_file(reference).unwrap();
        assert_eq!(listing(data.path()), ["plain"], "{}", kind.name);
    }
}

#[test]
fn failures_on_the_cluster_leave_nothing_on_any_host() {
    if !can_make_a_cluster() {
        return;
    }
    let data = scratch();
    let keys = scratch();
    let k = keys.path();
    let plain = data_of(PLAIN_LEN);
    let input = write(data.path(), "plain", &plain);
    let chunk = CHUNK.to_string();
    // A wrong identity: rank 0 finds it reading the header, before any output exists.
    let (_, recipient) = crate::people::x25519(k, "me.key");
    let (other, _) = crate::people::x25519(k, "other.key");
    let aged = data.path().join("sealed.age");
    locally(&job(
        &strings(&["encrypt", "-q", "--format", "age", "-r", &recipient]),
        &input,
        &aged,
    ));
    // A wrong password on a CBC password file: the last chunk's padding, on the last rank.
    let cbc = |password: &Path| {
        strings(&[
            "raw",
            "-c",
            "aes-256-cbc",
            "--pbkdf2",
            "--chunk-size",
            &chunk,
            "--password-file",
            &s(password),
        ])
    };
    let password = write(k, "password", b"hunter2\n");
    let wrong = write(k, "wrong", b"hunter3\n");
    let salted = data.path().join("sealed.cbc");
    let mut args = cbc(&password);
    // A fixed salt: under a random one, the wrong password's key would pass the padding check
    // about once in 256 runs; under this one it does not.
    args.extend(strings(&["-e", "--fixed-salt", "0102030405060708"]));
    locally(&job(&args, &input, &salted));
    // A damaged chunk in the last third of a container: rank 2's under the static schedule.
    let key = k.join("key");
    locally(&strings(&["keygen", "-o", &s(&key)]));
    let sealed = data.path().join("sealed.pcr");
    locally(&job(
        &strings(&["encrypt", "-q", "-k", &s(&key), "--chunk-size", &chunk]),
        &input,
        &sealed,
    ));
    let mut bytes = std::fs::read(&sealed).unwrap();
    // From the end: the 5-byte last chunk and its tag, then two whole chunks.
    let damaged_chunk = PLAIN_LEN / CHUNK - 2;
    let at = bytes.len() - (PLAIN_LEN % CHUNK + 16) - 2 * (CHUNK + 16) + 100;
    bytes[at] ^= 1;
    let damaged = write(data.path(), "damaged.pcr", &bytes);

    let mut decrypt_cbc = cbc(&wrong);
    decrypt_cbc.push("-d".into());
    let cases = [
        (
            "a wrong identity",
            job(
                &strings(&["decrypt", "-q", "-i", &s(&other)]),
                &aged,
                &data.path().join("out"),
            ),
            "rank 0: no identity matches".to_string(),
        ),
        (
            "a wrong password",
            job(&decrypt_cbc, &salted, &data.path().join("out")),
            "rank 2: bad password".to_string(),
        ),
        (
            "a damaged chunk",
            job(
                &strings(&["decrypt", "-q", "-k", &s(&key)]),
                &damaged,
                &data.path().join("out"),
            ),
            format!("rank 2: chunk {damaged_chunk} failed authentication"),
        ),
    ];
    let before = listing(data.path());
    for transport in ["shared-fs", "messages"] {
        let private = transport == "messages";
        for (what, args, needle) in &cases {
            let what = format!("{what}, {transport}");
            let mut args = args.clone();
            args.extend(strings(&["--schedule", "static", "--transport", transport]));
            let (out, ends) = ranks_on_cluster(data.path(), private, &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                stderr.matches("paracrypt: error:").count(),
                1,
                "{what}: {stderr}"
            );
            assert!(
                stderr.contains(needle.as_str()),
                "{what}: `{needle}` expected: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{what}: {stderr}");
            // Nothing at the destination on rank 0's host, nor a temporary file on any host.
            ranks_ended(&what, &ends, 1, private);
            assert_eq!(ends[0].files, before, "{what}");
            assert_eq!(listing(data.path()), before, "{what}");
        }
    }
}
