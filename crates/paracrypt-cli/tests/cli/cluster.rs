//! `--distributed` across an emulated cluster (`scripts/cluster.sh`): three hosts in network
//! namespaces, Open MPI over TCP only, so every byte between ranks crosses a veth whose
//! counters are read. The bytes equal one process's; under the messages transport each host
//! but rank 0's sees an empty data directory of its own, and the chunks really cross the links.
//!
//! Needs root (network namespaces); skipped with a note otherwise. CI runs as root, so there
//! these tests run.
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

/// Whether the cluster can be made here: root, `ip` and `mpirun`.
pub(crate) fn can_make_a_cluster() -> bool {
    let root = is_root();
    let tools = ["ip", "mpirun"].iter().all(|tool| {
        Command::new(tool)
            .arg(if *tool == "ip" { "-V" } else { "--version" })
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !(root && tools) {
        eprintln!("not root, or no ip/mpirun: skipping the emulated-cluster test");
    }
    root && tools
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
        .arg(format!(
            "echo \"$OMPI_COMM_WORLD_RANK $(hostname) $(ls {} | wc -l)\"",
            s(data.path())
        ));
    let out = String::from_utf8(ok(run(cmd))).unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0 pc-h1 1", "1 pc-h2 0", "2 pc-h3 0"]);
}

#[test]
fn the_cluster_script_refuses_to_run_without_root() {
    // As root, setpriv (util-linux) runs the script as nobody; a user who is not root is
    // refused by the script itself.
    let mut cmd = if is_root() {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash"]);
        cmd
    } else {
        Command::new("bash")
    };
    cmd.arg(script()).arg("up");
    let out = run(cmd);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("setpriv:"));
    fails(out, 2, "cluster.sh: needs root");
}
