//! Faults on the emulated cluster (`scripts/cluster.sh`: three hosts, Open MPI over TCP only,
//! rate-limited links so that a run lasts seconds): a stopped or killed worker, a killed rank
//! 0, a cut link, SIGTERM or SIGINT to `mpirun`. Each must end the job within a generous bound
//! (the watchdog's `--stall-timeout` is 3 s here), with a non-zero status, paracrypt naming
//! the lost rank and host where it can know (a stopped worker, a cut link: rank 0's watchdog
//! knows which batches that worker holds), and leave nothing behind on any host: no output
//! and no temporary file in rank 0's directory, and no process of the run (the other hosts'
//! private directories live in their mount namespaces, which end with their last process).
//!
//! Needs root (network namespaces); skipped with a note otherwise.
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::{can_make_a_cluster, s, script, strings};
use crate::common::*;

const KEY: &str = "1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f";
const IV: &str = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf";
/// 16 MiB over 10 Mbit/s links: each worker's third crosses its link in about 4 s each way.
const LEN: usize = 16 << 20;
const RATE: &str = "10mbit";
/// The watchdog's timeout in these tests.
const STALL: &str = "3";
/// The generous bound every faulty job must end within.
const BOUND: Duration = Duration::from_secs(60);
/// The status `--distributed` exits with when the watchdog aborts the job.
const STALLED: i32 = 3;

/// A fault dealt to a running job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// SIGSTOP to rank 2 (on host 3).
    StopWorker,
    /// SIGKILL to rank 2.
    KillWorker,
    /// SIGKILL to rank 0 (on host 1).
    KillRoot,
    /// Host 3's link taken down.
    CutLink,
    /// SIGTERM to `mpirun`.
    TermMpirun,
    /// SIGINT to `mpirun`.
    IntMpirun,
}

/// A process of the run, found by a marker in its command line.
#[derive(Debug, Clone)]
pub(crate) struct Proc {
    pub(crate) pid: u32,
    pub(crate) program: String,
    /// Its MPI rank, for a rank.
    pub(crate) rank: Option<usize>,
}

fn read_nul_separated(path: &Path) -> Vec<String> {
    std::fs::read(path)
        .unwrap_or_default()
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Every process whose command line mentions `marker`.
pub(crate) fn processes(marker: &str) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let args = read_nul_separated(&e.path().join("cmdline"));
        if !args.iter().any(|a| a.contains(marker)) {
            return None;
        }
        let program = Path::new(args.first()?).file_name()?.to_str()?.to_string();
        let rank = read_nul_separated(&e.path().join("environ"))
            .iter()
            .find_map(|v| v.strip_prefix("OMPI_COMM_WORLD_RANK=")?.parse().ok());
        Some(Proc { pid, program, rank })
    })
    .collect()
}

/// The parent of `pid`.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces, so split after its closing parenthesis.
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The `orted` that started `pid`, if any (the daemon of a host other than mpirun's).
fn daemon_of(pid: u32) -> Option<u32> {
    let mut at = pid;
    for _ in 0..8 {
        at = parent(at)?;
        let comm = std::fs::read_to_string(format!("/proc/{at}/comm")).ok()?;
        if comm.trim() == "orted" {
            return Some(at);
        }
    }
    None
}

pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

pub(crate) fn signal(signal: &str, pid: u32) {
    ok(run({
        let mut cmd = Command::new("kill");
        cmd.args([signal, &pid.to_string()]);
        cmd
    }));
}

/// Runs a 3-host job under `transport`, deals `fault` once every rank runs, and checks that
/// the job ends in bounded time, fails, and leaves nothing. Returns its status and stderr.
fn deal(fault: Fault, transport: &str) -> (i32, String) {
    let dir = scratch();
    let input = write(dir.path(), "plain", &data(LEN, 23));
    let output = dir.path().join("sealed");
    let mut args = strings(&["raw", "-e", "-c", "aes-256-ctr", "-K", KEY, "--iv", IV]);
    args.extend([s(&input), "-o".into(), s(&output)]);
    args.extend(strings(&["--chunk-size", "4096", "--schedule", "static"]));
    args.extend(strings(&[
        "--transport",
        transport,
        "--stall-timeout",
        STALL,
    ]));
    args.push("--distributed".into());
    let mut cmd = Command::new("bash");
    cmd.arg(script())
        .args(["run", "-n", "3", "--rate", RATE, "--timeout", "120"]);
    if transport == "messages" {
        cmd.arg("--private").arg(dir.path());
    }
    cmd.arg("--")
        .arg(env!("CARGO_BIN_EXE_paracrypt"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start cluster.sh");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut all);
        all
    });

    // The output's path marks this run's processes. Wait for the three ranks (and their
    // hosts' daemons), then a little, so that the fault lands while chunks cross the links.
    let marker = s(&output);
    let ranks = loop {
        let ranks: Vec<Proc> = processes(&marker)
            .into_iter()
            .filter(|p| p.program == "paracrypt" && p.rank.is_some())
            .collect();
        if ranks.len() == 3 {
            break ranks;
        }
        assert!(
            start.elapsed() < BOUND,
            "the ranks did not start: {ranks:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let rank = |r: usize| ranks.iter().find(|p| p.rank == Some(r)).unwrap().pid;
    let daemons: Vec<u32> = ranks.iter().filter_map(|p| daemon_of(p.pid)).collect();
    // The fault lands while chunks cross the links, after MPI has started on every rank (a
    // fault inside `MPI_Init` is Open MPI's start-up to end, not the watchdog's): once host 3
    // has received its first MiB (of about 5.3, at 10 Mbit/s).
    let received = || {
        std::fs::read_to_string("/sys/class/net/pc-v3/statistics/tx_bytes")
            .ok()
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    while received() < 1 << 20 {
        assert!(
            start.elapsed() < BOUND,
            "no chunk reached host 3 within {BOUND:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mpirun = || {
        processes(&marker)
            .into_iter()
            .find(|p| p.program == "mpirun")
            .expect("mpirun runs")
            .pid
    };
    match fault {
        Fault::StopWorker => signal("-STOP", rank(2)),
        Fault::KillWorker => signal("-KILL", rank(2)),
        Fault::KillRoot => signal("-KILL", rank(0)),
        Fault::CutLink => {
            let mut cmd = Command::new("bash");
            cmd.arg(script()).args(["cut", "3"]);
            ok(run(cmd));
        }
        Fault::TermMpirun => signal("-TERM", mpirun()),
        Fault::IntMpirun => signal("-INT", mpirun()),
    }
    let status = child.wait().unwrap().code().unwrap_or(-1);
    let took = start.elapsed();
    let stderr = reader.join().unwrap();
    let what = format!("{fault:?} under {transport}: status {status}, {took:?}\n{stderr}");
    assert!(took < BOUND, "{what}");
    assert!(status != 0 && status != 124, "{what}");
    assert!(!stderr.contains("panicked"), "{what}");

    // Nothing left: no output or temporary file on rank 0's side, no process of the run.
    assert_eq!(listing(dir.path()), ["plain"], "{what}");
    let gone = Instant::now();
    let mut left: Vec<u32> = Vec::new();
    while gone.elapsed() < Duration::from_secs(20) {
        left = ranks
            .iter()
            .map(|p| p.pid)
            .chain(daemons.iter().copied())
            .chain(processes(&marker).iter().map(|p| p.pid))
            .filter(|&pid| alive(pid))
            .collect();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(left.is_empty(), "processes left: {left:?}; {what}");
    println!("{what}");
    (status, stderr)
}

/// The faults the watchdog must end: paracrypt names the lost rank and host.
fn watchdog_ends(fault: Fault, transport: &str) {
    let (status, stderr) = deal(fault, transport);
    assert_eq!(status, STALLED, "{fault:?} under {transport}: {stderr}");
    assert!(
        stderr.contains("paracrypt: error: rank 0 on pc-h1: no progress")
            && stderr.contains("rank 2 on pc-h3 (chunks "),
        "{fault:?} under {transport}: {stderr}"
    );
}

#[test]
fn a_stopped_worker_is_named_and_the_job_aborted() {
    if !can_make_a_cluster() {
        return;
    }
    watchdog_ends(Fault::StopWorker, "messages");
}

#[test]
fn a_cut_link_is_named_and_the_job_aborted() {
    if !can_make_a_cluster() {
        return;
    }
    watchdog_ends(Fault::CutLink, "messages");
}

#[test]
fn a_killed_worker_ends_the_job() {
    if !can_make_a_cluster() {
        return;
    }
    deal(Fault::KillWorker, "messages");
}

#[test]
fn a_killed_rank_0_ends_the_job_and_leaves_nothing() {
    if !can_make_a_cluster() {
        return;
    }
    // Under the messages transport rank 0's output has no name (O_TMPFILE): nothing to leave.
    deal(Fault::KillRoot, "messages");
}

#[test]
fn sigterm_and_sigint_to_mpirun_end_the_job() {
    if !can_make_a_cluster() {
        return;
    }
    deal(Fault::TermMpirun, "messages");
    deal(Fault::IntMpirun, "messages");
}

#[test]
fn the_stall_timeout_belongs_to_distributed_runs() {
    let dir = scratch();
    let input = write(dir.path(), "in", &data(1000, 1));
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-256-ctr", "-K", KEY, "--iv", IV])
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("out"))
        .args(["--stall-timeout", "5"]);
    fails(run(cmd), 2, "--distributed");
    assert_eq!(listing(dir.path()), ["in"]);
}
