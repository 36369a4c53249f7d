//! The refusal table (`tests/refusals/table.json`, read its `about`) through every front door of
//! the command line: file to file, stdin to stdout, a range of the whole plaintext, and
//! `mpirun -n 2 … --distributed`. Every door must give each row's outcome: its exit status,
//! the row's words in the one-line error, no output file on a refusal, the plaintext on
//! success. Its `trees` rows go through the doors that open a tree: `decrypt --recursive`,
//! `mpirun -n 2 … decrypt --recursive --distributed`, `verify --recursive` and `rekey
//! --recursive`; its `signed-trees` rows through `verify --recursive -s SIG`. The Python package
//! runs the same table (crates/paracrypt-py/tests/test_refusals.py).

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
    /// Words every door's message contains (none for `ok`).
    says: Vec<&'a str>,
    in_order: bool,
    name: String,
    /// The environment of every door: the test plugin first on PATH, then the request's `env`.
    env: Vec<(String, String)>,
}

fn rows<'a>(table: &'a Value, rows: &'a Value) -> Vec<Row<'a>> {
    rows.as_array()
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
                says: match &row["says"] {
                    Value::String(says) => vec![says.as_str()],
                    Value::Array(says) => says.iter().map(|s| s.as_str().unwrap()).collect(),
                    _ => Vec::new(),
                },
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
    args.extend(credential_flags(
        request,
        files,
        [
            ("key", "-k"),
            ("password", "--password-file"),
            ("identities", "-i"),
            ("verify_with", "--verify-with"),
        ],
    ));
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
        ("usage", "ok") => vec!["armor"],
        _ => row.says.clone(),
    };
    let code = table["outcomes"][outcome]["exit"]
        .as_i64()
        .expect("an exit status") as i32;
    let (status, stderr) = status_and_stderr(&out);
    let at = format!("{} through {door:?}", row.name);
    assert_eq!(status, code, "{at}: exit status; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{at}: {stderr}");
    if code != 0 {
        assert!(!says.is_empty(), "{at}: a refusal's words");
        for says in says {
            assert!(
                stderr.contains(says),
                "{at}: stderr should say `{says}`: {stderr}"
            );
        }
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
    let rows = rows(&table, &table["rows"]);
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

/// The doors that open a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TreeDoor {
    /// `decrypt --recursive INPUT -o OUTPUT`.
    Decrypt,
    /// `mpirun -n 2 paracrypt decrypt --recursive INPUT -o OUTPUT --distributed`.
    #[cfg(feature = "mpi")]
    Distributed,
    /// `verify --recursive INPUT`.
    Verify,
    /// `rekey --recursive INPUT -o OUTPUT`, to the request's kind of secret.
    Rekey,
}

/// Every regular file under `dir`, by its path under `dir`, with its bytes.
fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, into);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                into.insert(path.strip_prefix(root).unwrap().to_owned(), bytes);
            }
        }
    }
    let mut files = std::collections::BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// The flags of the credential `request` gives: for each `(field, flag)` of `flags` that it
/// has, the flag and the field's file in `files`.
fn credential_flags(request: &Value, files: &Path, flags: [(&str, &str); 4]) -> Vec<String> {
    let mut args = Vec::new();
    for (field, flag) in flags {
        if let Some(value) = request.get(field) {
            let file = files.join(value.as_str().unwrap());
            args.extend([flag.to_owned(), file.display().to_string()]);
        }
    }
    args
}

/// The credential flags of the tree doors (`rekey` has no key file, nor `--verify-with`: the
/// table's `about`).
const TREE_FLAGS: [(&str, &str); 4] = [
    ("key", "--key-file"),
    ("password", "--password-file"),
    ("identities", "-i"),
    ("verify_with", "--verify-with"),
];

/// Runs the tree row `row` through `door` in `scratch`; checks the outcome.
fn check_tree(table: &Value, (index, row): (usize, &Row<'_>), door: TreeDoor, scratch: &Path) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/refusals");
    let (files, trees) = (dir.join("files"), dir.join("trees"));
    let env = |cmd: &mut std::process::Command| {
        cmd.env_remove("PCTEST_FAIL").env_remove("PCTEST_LOG");
        cmd.envs(row.env.iter().map(|(k, v)| (k, v)));
    };
    let rekeying = door == TreeDoor::Rekey;
    if rekeying && (row.request.get("key").is_some() || row.request.get("verify_with").is_some()) {
        // No such request through the rekey door (the table's `about`).
        return;
    }
    let writing = door != TreeDoor::Verify;
    let mut args: Vec<std::ffi::OsString> = match door {
        TreeDoor::Verify => vec!["verify".into(), "--recursive".into()],
        TreeDoor::Rekey => vec!["rekey".into(), "--recursive".into()],
        _ => vec!["decrypt".into(), "--recursive".into(), "-q".into()],
    };
    args.extend(
        credential_flags(row.request, &files, TREE_FLAGS)
            .into_iter()
            .map(Into::into),
    );
    if rekeying {
        match row.request.get("password") {
            Some(password) => args.extend([
                "--passphrase".into(),
                "--new-password-file".into(),
                files.join(password.as_str().unwrap()).into(),
            ]),
            None => args.extend(["-R".into(), files.join("recipient.txt").into()]),
        }
    }
    let output = scratch.join(format!("tree-{door:?}-{index}"));
    args.push(trees.join(row.input).into());
    if writing {
        args.extend(["-o".into(), output.clone().into()]);
    }
    let out = match door {
        #[cfg(feature = "mpi")]
        TreeDoor::Distributed => crate::distributed::with_mpi::mpirun_with(2, args, env),
        _ => {
            let mut cmd = paracrypt();
            env(&mut cmd);
            cmd.args(args);
            run(cmd)
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The rekey doors' own outcome, where the row gives one.
    let (outcome, says) = match &table["trees"]["rows"][index]["rekey"] {
        Value::Object(rekey) if rekeying => (
            rekey["outcome"].as_str().unwrap(),
            vec![rekey["says"].as_str().unwrap()],
        ),
        _ => (row.outcome, row.says.clone()),
    };
    let class = match outcome {
        "files-refused" => {
            let door = match door {
                TreeDoor::Verify => "verify",
                TreeDoor::Rekey => "rekey",
                _ => "decrypt",
            };
            &table["trees"]["outcomes"]["files-refused"][door]
        }
        "cannot-rekey" => &table["trees"]["outcomes"][outcome],
        outcome => &table["outcomes"][outcome],
    };
    let code = class["exit"].as_i64().expect("an exit status") as i32;
    let (status, stderr) = status_and_stderr(&out);
    let at = format!("{} through {door:?}", row.name);
    assert_eq!(status, code, "{at}: exit status; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{at}: {stderr}");
    let plain = files_under(&trees.join(table["trees"]["plaintext"].as_str().unwrap()));
    if outcome == "ok" {
        match door {
            TreeDoor::Verify => assert!(stdout.contains(": OK ("), "{at}: {stdout}"),
            TreeDoor::Rekey => {
                // The rekeyed tree opens with the request, to the plaintext tree.
                let back = scratch.join(format!("tree-{door:?}-{index}-back"));
                let mut cmd = paracrypt();
                env(&mut cmd);
                cmd.args(["decrypt", "--recursive", "-q"])
                    .args(credential_flags(row.request, &files, TREE_FLAGS))
                    .arg(&output)
                    .arg("-o")
                    .arg(&back);
                let (status, stderr) = status_and_stderr(&run(cmd));
                assert_eq!(status, 0, "{at}: the rekeyed tree: {stderr}");
                assert!(files_under(&back) == plain, "{at}: not the plaintext tree");
            }
            _ => assert!(
                files_under(&output) == plain,
                "{at}: not the plaintext tree"
            ),
        }
        return;
    }
    // A difference is named on stdout by `verify`, a failed file on stderr by `decrypt`.
    let said = format!("{stdout}{stderr}");
    for says in &says {
        assert!(said.contains(says), "{at}: should say `{says}`: {said}");
    }
    if outcome != "files-refused" || rekeying {
        let errors = stderr.lines().filter(|l| l.contains("error:")).count();
        assert_eq!(errors, 1, "{at}: one error line: {stderr}");
        assert!(!output.exists(), "{at}: a refusal left OUTPUT");
    } else if writing {
        // Only complete files, each its plaintext, and no temporary file.
        let got = files_under(&output);
        assert!(
            !got.is_empty() && got.len() < plain.len(),
            "{at}: {:?}",
            got.keys()
        );
        for (path, bytes) in &got {
            assert!(
                plain.get(path) == Some(bytes),
                "{at}: {} is not its plaintext",
                path.display()
            );
        }
    }
}

/// Every tree row through `door`, a few at a time.
fn through_tree(door: TreeDoor) {
    let (table, _) = table();
    let dir = scratch();
    let rows = rows(&table, &table["trees"]["rows"]);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(row) = rows.get(index) else { break };
                    check_tree(&table, (index, row), door, dir.path());
                }
            });
        }
    });
}

#[test]
fn every_tree_refusal_through_decrypt_recursive() {
    through_tree(TreeDoor::Decrypt);
}

#[cfg(feature = "mpi")]
#[test]
fn every_tree_refusal_through_decrypt_recursive_across_ranks() {
    if crate::distributed::with_mpi::have_mpirun() {
        through_tree(TreeDoor::Distributed);
    }
}

#[test]
fn every_tree_refusal_through_verify_recursive() {
    through_tree(TreeDoor::Verify);
}

#[test]
fn every_tree_refusal_through_rekey_recursive() {
    through_tree(TreeDoor::Rekey);
}

/// Every row of the table's `signed-trees` section (a plaintext tree against its signature)
/// through `verify --recursive -s SIG [-p PUB] DIR`: its exit status, the row's words on stdout
/// (each difference) or in the one error line.
#[test]
fn every_signed_tree_refusal_through_verify_recursive_with_a_signature() {
    let (table, files) = table();
    let section = &table["signed-trees"];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/refusals/signed-trees");
    for row in section["rows"].as_array().expect("rows") {
        let field = |name: &str| row[name].as_str().expect(name);
        let (input, request, outcome) = (field("input"), field("request"), field("outcome"));
        let at = format!("{input} against {} {request}", field("signature"));
        let mut cmd = paracrypt();
        cmd.args(["verify", "--recursive", "-s"])
            .arg(dir.join(field("signature")));
        if let Some(public) = section["requests"][request]["verify_with"].as_str() {
            cmd.arg("--public").arg(files.join(public));
        }
        cmd.arg(dir.join(input));
        let out = run(cmd);
        let class = match outcome {
            "tree-changed" => &section["outcomes"][outcome],
            outcome => &table["outcomes"][outcome],
        };
        let code = class["exit"].as_i64().expect("an exit status") as i32;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let (status, stderr) = status_and_stderr(&out);
        assert_eq!(status, code, "{at}: exit status; stderr: {stderr}");
        assert!(!stderr.contains("panicked"), "{at}: {stderr}");
        if outcome == "ok" {
            assert!(stdout.contains(": OK ("), "{at}: {stdout}");
            continue;
        }
        let says: Vec<&str> = match &row["says"] {
            Value::String(says) => vec![says.as_str()],
            Value::Array(says) => says.iter().map(|s| s.as_str().unwrap()).collect(),
            _ => panic!("{at}: a refusal's words"),
        };
        let said = format!("{stdout}{stderr}");
        for says in says {
            assert!(said.contains(says), "{at}: should say `{says}`: {said}");
        }
        let errors = stderr.lines().filter(|l| l.contains("error:")).count();
        assert_eq!(errors, 1, "{at}: one error line: {stderr}");
    }
}
