//! What a tree run says (issue #53): `-v` lists each file with what was done to it (`encrypted
//! a/b.txt`, `unchanged …`, `removed …`, `decrypted …`, `rekeyed …`, `verified …`) on stderr;
//! `--dry-run` says what the run would do, with the same words, and writes nothing (no output,
//! no state record); `--json` writes one object per file and one summary object on stdout, for
//! a run and for `verify --recursive` of a good tree and of a damaged one (exit 1).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;
use crate::container::keygen;
use crate::tree::snapshot;

/// `paracrypt ARGS` with this test's own state directory.
fn cli(state: &Path, args: &[&str]) -> Command {
    let mut cmd = paracrypt();
    cmd.env("PARACRYPT_STATE_DIR", state).args(args);
    cmd
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The `-v` lines of `stderr` (`VERB PATH`, a dry run's `would VERB PATH`), sorted.
fn listed(stderr: &str) -> Vec<String> {
    const WORDS: [&str; 7] = [
        "encrypted ",
        "unchanged ",
        "removed ",
        "decrypted ",
        "rekeyed ",
        "verified ",
        "would ",
    ];
    let mut lines: Vec<String> = stderr
        .lines()
        .filter(|l| WORDS.iter().any(|w| l.starts_with(w)))
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

/// Runs `cmd`, which must succeed; returns its stdout and stderr.
fn succeeds(cmd: Command) -> (String, String) {
    let out = run(cmd);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    (stdout, stderr)
}

fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every line of `stdout`, each parsed as one JSON object.
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?} in {stdout}")))
        .collect()
}

/// The per-file objects of `lines` as `(path, result)`, sorted, and the summary object (the
/// last line).
fn per_file(lines: &[Value]) -> (Vec<(String, String)>, &Value) {
    let (summary, files) = lines.split_last().expect("a summary line");
    let mut files: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["result"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    files.sort();
    (files, &summary["summary"])
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(p, r)| (p.to_string(), r.to_string()))
        .collect()
}

/// A tree of three files: `a/b.txt`, `c.txt` and `old.txt`.
fn three_files(d: &Path) -> std::path::PathBuf {
    let plain = d.join("plain");
    std::fs::create_dir_all(plain.join("a")).unwrap();
    write(&plain.join("a"), "b.txt", b"one");
    write(&plain, "c.txt", b"two");
    write(&plain, "old.txt", b"three");
    plain
}

#[test]
fn verbose_names_each_file_with_what_each_command_did_to_it() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = three_files(d);
    let key = keygen(d, "key");
    let (k, p, sealed) = (s(&key), s(&plain), d.join("sealed"));
    let encrypt = ["encrypt", "--recursive", "--key-file", k, "-v"];

    let (stdout, stderr) = succeeds(cli(
        &state,
        &[&encrypt[..], &[p, "-o", s(&sealed)]].concat(),
    ));
    assert_eq!(stdout, "");
    assert_eq!(
        listed(&stderr),
        ["encrypted a/b.txt", "encrypted c.txt", "encrypted old.txt"],
        "{stderr}"
    );
    assert!(
        stderr.contains("paracrypt: 3 files encrypted, 0 unchanged, 0 removed"),
        "{stderr}"
    );

    // An update that changes one file, removes one and keeps one.
    write(&plain, "c.txt", b"two, changed");
    std::fs::remove_file(plain.join("old.txt")).unwrap();
    let update = [&encrypt[..], &["--update", p, "-o", s(&sealed)]].concat();
    let (_, stderr) = succeeds(cli(&state, &update));
    assert_eq!(
        listed(&stderr),
        ["encrypted c.txt", "removed old.txt", "unchanged a/b.txt"],
        "{stderr}"
    );

    let back = d.join("back");
    let decrypt = ["decrypt", "--recursive", "--key-file", k, "-v"];
    let (_, stderr) = succeeds(cli(
        &state,
        &[&decrypt[..], &[s(&sealed), "-o", s(&back)]].concat(),
    ));
    assert_eq!(
        listed(&stderr),
        ["decrypted a/b.txt", "decrypted c.txt"],
        "{stderr}"
    );
    assert!(stderr.contains("paracrypt: 2 files decrypted"), "{stderr}");

    let (stdout, stderr) = succeeds(cli(
        &state,
        &["verify", "--recursive", "--key-file", k, "-v", s(&sealed)],
    ));
    assert_eq!(
        listed(&stderr),
        ["verified a/b.txt", "verified c.txt"],
        "{stderr}"
    );
    assert!(stdout.contains(": OK (2 files"), "{stdout}");

    // Without -v, the first run of a tree says nothing, as before.
    let (_, stderr) = succeeds(cli(
        &state,
        &[
            "encrypt",
            "--recursive",
            "--key-file",
            k,
            p,
            "-o",
            s(&d.join("quiet")),
        ],
    ));
    assert_eq!(listed(&stderr), Vec::<String>::new(), "{stderr}");
}

#[test]
fn verbose_names_each_file_a_rekey_rewrites() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = three_files(d);
    let old_pw = write(d, "old-pw", b"correct horse\n");
    let new_pw = write(d, "new-pw", b"battery staple\n");
    let (old, new) = (d.join("old"), d.join("new"));
    succeeds(cli(
        &state,
        &[
            "encrypt",
            "--recursive",
            "--password-file",
            s(&old_pw),
            s(&plain),
            "-o",
            s(&old),
        ],
    ));
    let (_, stderr) = succeeds(cli(
        &state,
        &[
            "rekey",
            "--recursive",
            "-v",
            "--password-file",
            s(&old_pw),
            "--passphrase",
            "--new-password-file",
            s(&new_pw),
            s(&old),
            "-o",
            s(&new),
        ],
    ));
    assert_eq!(
        listed(&stderr),
        ["rekeyed a/b.txt", "rekeyed c.txt", "rekeyed old.txt"],
        "{stderr}"
    );
    assert!(stderr.contains("paracrypt: 3 files rekeyed"), "{stderr}");
}

/// A dry run of `args` (which end with `-o OUTPUT`) changes nothing under `d` (the trees, the
/// state directory: no output, no record, no temporary file) and lists what the real run then
/// lists, word for word, with `would VERB`; the real run is run after it.
fn dry_run_then_run(d: &Path, state: &Path, args: &[&str], verb: &[(&str, &str)]) {
    let before = snapshot(d);
    let mut dry = args.to_vec();
    dry.extend(["--dry-run", "-v"]);
    let (stdout, stderr) = succeeds(cli(state, &dry));
    assert_eq!(stdout, "");
    assert!(
        snapshot(d) == before,
        "a dry run of {args:?} wrote under {}: {stderr}",
        d.display()
    );
    assert!(stderr.contains("dry run: "), "{stderr}");
    assert!(stderr.contains("; nothing was written"), "{stderr}");
    let mut real = args.to_vec();
    real.push("-v");
    let (_, done) = succeeds(cli(state, &real));
    // `would encrypt x` in the dry run for each `encrypted x` of the real run.
    let mut said: Vec<String> = listed(&done)
        .iter()
        .map(|line| {
            let (word, path) = line.split_once(' ').unwrap();
            let (_, verb) = verb.iter().find(|(w, _)| *w == word).unwrap();
            format!("would {verb} {path}")
        })
        .collect();
    said.sort();
    assert_eq!(listed(&stderr), said, "{stderr}\n{done}");
    assert!(!said.is_empty());
}

#[test]
fn a_dry_run_writes_nothing_and_lists_what_the_run_then_does() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = three_files(d);
    let key = keygen(d, "key");
    let pw = write(d, "pw", b"correct horse\n");
    let new_pw = write(d, "new-pw", b"battery staple\n");
    let verbs = [
        ("encrypted", "encrypt"),
        ("unchanged", "keep"),
        ("removed", "remove"),
        ("decrypted", "decrypt"),
        ("rekeyed", "rekey"),
    ];
    let (k, p) = (s(&key), s(&plain));
    let (sealed, back) = (d.join("sealed"), d.join("back"));

    // A first run: no output directory, no state directory yet.
    let first = [
        "encrypt",
        "--recursive",
        "--key-file",
        k,
        p,
        "-o",
        s(&sealed),
    ];
    dry_run_then_run(d, &state, &first, &verbs);
    assert!(state.is_dir());

    // An update that changes one file, removes one and keeps one: the previous manifest is
    // opened (and the state record read), nothing written.
    write(&plain, "c.txt", b"two, changed");
    std::fs::remove_file(plain.join("old.txt")).unwrap();
    let update = [&first[..], &["--update"]].concat();
    dry_run_then_run(d, &state, &update, &verbs);

    let decrypt = [
        "decrypt",
        "--recursive",
        "--key-file",
        k,
        s(&sealed),
        "-o",
        s(&back),
    ];
    dry_run_then_run(d, &state, &decrypt, &verbs);

    let (old, new) = (d.join("old"), d.join("new"));
    let seal = [
        "encrypt",
        "--recursive",
        "--password-file",
        s(&pw),
        p,
        "-o",
        s(&old),
    ];
    succeeds(cli(&state, &seal));
    let rekey = [
        "rekey",
        "--recursive",
        "--password-file",
        s(&pw),
        "--passphrase",
        "--new-password-file",
        s(&new_pw),
        s(&old),
        "-o",
        s(&new),
    ];
    dry_run_then_run(d, &state, &rekey, &verbs);
}

#[test]
fn a_dry_run_checks_what_the_run_checks() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = three_files(d);
    let key = keygen(d, "key");
    let other = keygen(d, "other");
    let sealed = d.join("sealed");
    let (k, p) = (s(&key), s(&plain));
    succeeds(cli(
        &state,
        &[
            "encrypt",
            "--recursive",
            "--key-file",
            k,
            p,
            "-o",
            s(&sealed),
        ],
    ));
    let before = snapshot(d);
    // Another key does not open the previous manifest: refused as the update would be.
    let out = run(cli(
        &state,
        &[
            "encrypt",
            "--recursive",
            "--update",
            "--dry-run",
            "--key-file",
            s(&other),
            p,
            "-o",
            s(&sealed),
        ],
    ));
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("paracrypt: error: "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // An output that holds files, without --update or --force: refused, with the way.
    let out = run(cli(
        &state,
        &[
            "encrypt",
            "--recursive",
            "--dry-run",
            "--key-file",
            k,
            p,
            "-o",
            s(&sealed),
        ],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", texts(&out).1);
    assert!(snapshot(d) == before);
}

#[test]
fn json_lines_of_an_update_and_of_a_verification_good_and_damaged() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = three_files(d);
    let key = keygen(d, "key");
    let (k, p, sealed) = (s(&key), s(&plain), d.join("sealed"));
    succeeds(cli(
        &state,
        &[
            "encrypt",
            "--recursive",
            "--key-file",
            k,
            p,
            "-o",
            s(&sealed),
        ],
    ));
    write(&plain, "c.txt", b"two, changed");
    std::fs::remove_file(plain.join("old.txt")).unwrap();
    let (stdout, stderr) = succeeds(cli(
        &state,
        &[
            "encrypt",
            "--recursive",
            "--update",
            "--json",
            "--key-file",
            k,
            p,
            "-o",
            s(&sealed),
        ],
    ));
    // No human line with --json.
    assert!(!stderr.contains(" unchanged, "), "{stderr}");
    let lines = json_lines(&stdout);
    let (files, summary) = per_file(&lines);
    assert_eq!(
        files,
        pairs(&[
            ("a/b.txt", "unchanged"),
            ("c.txt", "encrypted"),
            ("old.txt", "removed")
        ])
    );
    assert_eq!(summary["operation"], "encrypt");
    assert_eq!(summary["dry_run"], false);
    assert_eq!(summary["files"], 1);
    assert_eq!(summary["bytes"], 12);
    assert_eq!(summary["unchanged"], 1);
    assert_eq!(summary["removed"], 1);
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["not_started"], 0);
    assert_eq!(summary["complete"], true);

    let verify = || {
        let args = [
            "verify",
            "--recursive",
            "--json",
            "--key-file",
            k,
            s(&sealed),
        ];
        run(cli(&state, &args))
    };
    let out = verify();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let lines = json_lines(&stdout);
    let (files, summary) = per_file(&lines);
    assert_eq!(
        files,
        pairs(&[("a/b.txt", "verified"), ("c.txt", "verified")])
    );
    assert_eq!(summary["operation"], "verify");
    assert_eq!(summary["files"], 2);
    assert_eq!(summary["bytes"], 15);
    assert_eq!(summary["differences"], 0);
    assert_eq!(summary["intact"], true);
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["signer"], Value::Null);

    // Damaged: one file's bytes changed, one added beside the tree's.
    let stored = sealed.join("c.txt.pcr");
    let mut bytes = std::fs::read(&stored).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&stored, bytes).unwrap();
    write(&sealed, "stray.pcr", b"not listed");
    let out = verify();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("paracrypt: error: ") && stderr.contains("2 differences"),
        "{stderr}"
    );
    let lines = json_lines(&stdout);
    let (files, summary) = per_file(&lines);
    assert_eq!(
        files,
        pairs(&[
            ("a/b.txt", "verified"),
            ("c.txt", "changed"),
            ("stray.pcr", "added")
        ])
    );
    let changed = lines.iter().find(|l| l["path"] == "c.txt").unwrap();
    assert!(changed["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(summary["intact"], false);
    assert_eq!(summary["differences"], 2);
    assert_eq!(summary["files"], 1);
}

/// Across MPI ranks, rank 0 lists every file once, and `--dry-run` is refused in one line.
#[cfg(feature = "mpi")]
#[test]
fn across_ranks_verbose_lists_each_file_once_and_a_dry_run_is_refused() {
    use crate::distributed::with_mpi::{have_mpirun, mpirun_with};
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = three_files(d);
    let key = keygen(d, "key");
    let sealed = d.join("sealed");
    let args = |extra: &[&str]| {
        let mut all = vec!["encrypt", "--recursive", "-j", "2", "--key-file", s(&key)];
        all.extend(extra);
        all.extend([s(&plain), "-o", s(&sealed)]);
        all.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let out = mpirun_with(2, args(&["-v"]), |cmd| {
        cmd.env("PARACRYPT_STATE_DIR", &state);
    });
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        listed(&stderr),
        ["encrypted a/b.txt", "encrypted c.txt", "encrypted old.txt"],
        "{stderr}"
    );
    let out = mpirun_with(2, args(&["--update", "--dry-run"]), |cmd| {
        cmd.env("PARACRYPT_STATE_DIR", &state);
    });
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("paracrypt: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("--dry-run"), "{stderr}");
}
