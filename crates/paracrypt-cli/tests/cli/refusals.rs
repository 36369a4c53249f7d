//! The refusal table (`tests/refusals/table.json`, read its `about`) through every front door of
//! the command line: file to file, stdin to stdout, a range of the whole plaintext, and
//! `mpirun -n 2 … --distributed`. Every door must give each row's outcome: its exit status,
//! the row's words in the one-line error, no output file on a refusal, the plaintext on
//! success. The Python package runs the same table (crates/paracrypt-py/tests/test_refusals.py).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::*;

/// The table and the directory of its inputs.
fn table() -> (Value, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/refusals");
    let text = std::fs::read_to_string(dir.join("table.json")).expect("tests/refusals/table.json");
    (
        serde_json::from_str(&text).expect("the table is JSON"),
        dir.join("files"),
    )
}

/// One row, as the doors run it.
struct Row<'a> {
    input: &'a str,
    request: &'a Value,
    outcome: &'a str,
    says: Option<&'a str>,
    in_order: bool,
    name: String,
    /// The environment of every door: the test plugin first on PATH, then the request's `env`.
    env: Vec<(String, String)>,
}

fn rows(table: &Value) -> Vec<Row<'_>> {
    table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            let request = row["request"].as_str().expect("a request name");
            let mut env = vec![("PATH".to_owned(), crate::plugin::path_with_plugin())];
            if let Some(set) = table["requests"][request]["env"].as_object() {
                env.extend(
                    set.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())),
                );
            }
            Row {
                input: row["input"].as_str().expect("an input"),
                request: &table["requests"][request],
                outcome: row["outcome"].as_str().expect("an outcome"),
                says: row["says"].as_str(),
                in_order: row["in_order"].as_bool().unwrap_or(false),
                name: format!("{} with {request}", row["input"].as_str().unwrap()),
                env,
            }
        })
        .collect()
}

/// How the doors differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Door {
    File,
    Stream,
    /// `--range 0:LEN`, the whole plaintext: every chunk, as the file door.
    Range,
    #[cfg(feature = "mpi")]
    Distributed,
}

impl Door {
    /// Whether the door needs positions (and so refuses what is read in order).
    fn positional(self) -> bool {
        !matches!(self, Door::File | Door::Stream)
    }
}

/// The command line of `request` on `input` (a path in `files`), without INPUT and OUTPUT; `None`
/// when the door has no such request (raw ciphers have no range).
fn args(request: &Value, files: &Path, door: Door) -> Option<Vec<String>> {
    let file = |name: &Value| files.join(name.as_str().unwrap()).display().to_string();
    let mut args = Vec::new();
    if let Some(raw) = request.get("raw") {
        if door == Door::Range {
            return None;
        }
        args.extend(["raw", "-d", "-c"].map(String::from));
        args.push(raw["cipher"].as_str().unwrap().into());
        if let Some(key) = raw.get("key") {
            args.extend(["-K".into(), key.as_str().unwrap().into()]);
            args.extend(["--iv".into(), raw["iv"].as_str().unwrap().into()]);
        } else {
            let password = file(&raw["password"]);
            args.extend(["--password-file".into(), password, "--pbkdf2".into()]);
        }
        return Some(args);
    }
    args.extend(["decrypt", "-q"].map(String::from));
    for (field, flag) in [
        ("key", "-k"),
        ("password", "-p"),
        ("identities", "-i"),
        ("verify_with", "--verify-with"),
    ] {
        if let Some(value) = request.get(field) {
            args.extend([flag.into(), file(value)]);
        }
    }
    if door == Door::Range {
        let len = std::fs::metadata(files.join("plain.txt")).unwrap().len();
        args.extend(["--range".into(), format!("0:{len}")]);
    }
    Some(args)
}

/// Runs `row` through `door` in `scratch` (its OUTPUT named for its index in the table); checks
/// the outcome.
fn check(table: &Value, files: &Path, (index, row): (usize, &Row<'_>), door: Door, scratch: &Path) {
    let Some(args) = args(row.request, files, door) else {
        return;
    };
    let input = files.join(row.input);
    let output = scratch.join(format!("out-{door:?}-{index}"));
    let env = |cmd: &mut std::process::Command| {
        cmd.env_remove("PCTEST_FAIL").env_remove("PCTEST_LOG");
        cmd.envs(row.env.iter().map(|(k, v)| (k, v)));
    };
    let out: Output = match door {
        Door::File | Door::Range => {
            let mut cmd = paracrypt();
            env(&mut cmd);
            cmd.args(&args).arg(&input).arg("-o").arg(&output);
            run(cmd)
        }
        Door::Stream => {
            let mut cmd = paracrypt();
            env(&mut cmd);
            cmd.args(&args);
            run_with_stdin(cmd, &std::fs::read(&input).unwrap())
        }
        #[cfg(feature = "mpi")]
        Door::Distributed => {
            let mut args = args;
            args.extend([input.display().to_string(), "-o".into()]);
            args.push(output.display().to_string());
            crate::distributed::with_mpi::mpirun_with(2, args, env)
        }
    };
    let outcome = match row.outcome {
        "ok" if row.in_order && door.positional() => "usage",
        outcome => outcome,
    };
    let says = match (outcome, row.outcome) {
        ("usage", "ok") => Some("armor"),
        _ => row.says,
    };
    let code = table["outcomes"][outcome]["exit"]
        .as_i64()
        .expect("an exit status") as i32;
    let (status, stderr) = status_and_stderr(&out);
    let at = format!("{} through {door:?}", row.name);
    assert_eq!(status, code, "{at}: exit status; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{at}: {stderr}");
    if code != 0 {
        let says = says.expect("a refusal's words");
        assert!(
            stderr.contains(says),
            "{at}: stderr should say `{says}`: {stderr}"
        );
        let errors = stderr
            .lines()
            .filter(|line| line.contains("error:"))
            .count();
        assert_eq!(errors, 1, "{at}: one error line: {stderr}");
        assert!(!output.exists(), "{at}: a refusal left OUTPUT");
        return;
    }
    let plain = std::fs::read(files.join("plain.txt")).unwrap();
    let got = match door {
        Door::Stream => out.stdout,
        _ => std::fs::read(&output).unwrap(),
    };
    assert!(got == plain, "{at}: not the plaintext");
}

/// Every row through `door`, a few at a time: each waits mostly on the start of a process (of
/// Open MPI's ranks, for `mpirun`), not on the CPU.
fn through(door: Door) {
    const AT_ONCE: usize = 4;
    let (table, files) = table();
    let dir = scratch();
    let rows = rows(&table);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(row) = rows.get(index) else { break };
                    check(&table, &files, (index, row), door, dir.path());
                }
            });
        }
    });
}

#[test]
fn every_refusal_through_file_to_file() {
    through(Door::File);
}

#[test]
fn every_refusal_through_stdin_to_stdout() {
    through(Door::Stream);
}

#[test]
fn every_refusal_through_a_range() {
    through(Door::Range);
}

#[cfg(feature = "mpi")]
#[test]
fn every_refusal_through_mpirun() {
    if crate::distributed::with_mpi::have_mpirun() {
        through(Door::Distributed);
    }
}
