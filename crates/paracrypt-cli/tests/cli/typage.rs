//! typage (npm `age-encryption`, the TypeScript age, run with node) and paracrypt on
//! post-quantum age files, both ways: typage decrypts what paracrypt writes to an `age1pq1…`
//! recipient (binary and armored, around the 64 KiB chunk, 1 and 3 threads), paracrypt decrypts
//! what typage writes (to a file and to stdout), and the keys either one makes work in the
//! other (`keygen -y` and typage's `identityToRecipient` agree).
//!
//! scripts/test.sh installs the pinned typage (tests/typage/package-lock.json) into
//! `target/typage` (and names it in `PARACRYPT_TYPAGE_DIR` for the builds of other target
//! directories); without it the tests say so and pass, except in CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// The driver script, kept beside the installed `node_modules`.
const SCRIPT: &str = include_str!("../../../../tests/typage/typage.mjs");

/// `PARACRYPT_TYPAGE_DIR`, else `typage` in this build's target directory, with the driver
/// script written there, when typage is installed.
pub(crate) fn typage_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("PARACRYPT_TYPAGE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_BIN_EXE_paracrypt"))
            .parent()?
            .parent()?
            .join("typage"),
    };
    let installed = dir
        .join("node_modules/age-encryption/package.json")
        .is_file();
    let node = Command::new("node").arg("--version").output().is_ok();
    if !installed || !node {
        assert!(
            std::env::var_os("CI").is_none(),
            "typage is required in CI (scripts/test.sh installs it into {})",
            dir.display()
        );
        eprintln!("typage or node not found in {}: skipping", dir.display());
        return None;
    }
    let script = dir.join("typage.mjs");
    if std::fs::read_to_string(&script).ok().as_deref() != Some(SCRIPT) {
        std::fs::write(&script, SCRIPT).unwrap();
    }
    Some(dir)
}

/// `node typage.mjs ARGS…` with `stdin`, asserting success; stdout.
pub(crate) fn typage(dir: &Path, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("typage.mjs")).args(args);
    let out: Output = run_with_stdin(cmd, stdin);
    assert!(
        out.status.success(),
        "typage {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `paracrypt keygen --kind pq` in `dir`: (identity file, recipient).
fn paracrypt_keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    ok(run({
        let mut c = paracrypt();
        c.args(["keygen", "--kind", "pq", "-o"]).arg(&path);
        c
    }));
    let recipient = ok(run({
        let mut c = paracrypt();
        c.args(["keygen", "-y"]).arg(&path);
        c
    }));
    (
        path,
        String::from_utf8(recipient).unwrap().trim().to_owned(),
    )
}

#[test]
fn typage_decrypts_what_paracrypt_writes_to_a_post_quantum_recipient() {
    let Some(typage_dir) = typage_dir() else {
        return;
    };
    let dir = scratch();
    let d = dir.path();
    let (identity, recipient) = paracrypt_keygen(d, "me.key");
    assert!(recipient.starts_with("age1pq1"), "{recipient}");
    // The key paracrypt made: typage finds the same recipient in it.
    let theirs = typage(&typage_dir, &["recipient", identity.to_str().unwrap()], b"");
    assert_eq!(String::from_utf8(theirs).unwrap().trim(), recipient);
    const K: usize = 64 * 1024;
    // Each length once, at 1 or 3 threads, armored or not: the four pairs each at least once
    // (a node start decrypting ML-KEM in JavaScript is about a second).
    for (i, len) in [0, 1, K, K + 1, 3 * K + 5].into_iter().enumerate() {
        let plain = data(len, 7);
        let threads = ["1", "3"][i % 2];
        let armor = (i + i / 2) % 2 == 1;
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "--format", "age", "-r", &recipient])
            .args(["-j", threads]);
        if armor {
            cmd.arg("-a");
        }
        let sealed = ok(run_with_stdin(cmd, &plain));
        let opened = typage(
            &typage_dir,
            &["decrypt", identity.to_str().unwrap()],
            &sealed,
        );
        assert!(
            opened == plain,
            "typage: {len} bytes, -j{threads}, armor {armor}"
        );
    }
}

#[test]
fn paracrypt_decrypts_what_typage_writes_with_typage_keys() {
    let Some(typage_dir) = typage_dir() else {
        return;
    };
    let dir = scratch();
    let d = dir.path();
    // The key typage made: paracrypt reads it and finds the same recipient.
    let made = String::from_utf8(typage(&typage_dir, &["keygen-pq"], b"")).unwrap();
    let (identity_line, recipient) = made.trim().split_once('\n').unwrap();
    let identity = write(d, "typage.key", format!("{identity_line}\n").as_bytes());
    let ours = ok(run({
        let mut c = paracrypt();
        c.args(["keygen", "-y"]).arg(&identity);
        c
    }));
    assert_eq!(String::from_utf8(ours).unwrap().trim(), recipient);
    // And a second recipient made by paracrypt: typage encrypts to both.
    let (mine, my_recipient) = paracrypt_keygen(d, "me.key");
    for len in [0, 1, 64 * 1024, 200_000] {
        let plain = data(len, 3);
        let sealed = typage(&typage_dir, &["encrypt", recipient, &my_recipient], &plain);
        let input = write(d, "in.age", &sealed);
        for key in [&identity, &mine] {
            for threads in ["1", "3"] {
                let out = d.join("out");
                let _ = std::fs::remove_file(&out);
                ok(run({
                    let mut c = paracrypt();
                    c.args(["decrypt", "-q", "-j", threads, "-i"])
                        .arg(key)
                        .arg(&input)
                        .arg("-o")
                        .arg(&out);
                    c
                }));
                assert!(
                    std::fs::read(&out).unwrap() == plain,
                    "{len} bytes to a file"
                );
                let stdout = ok(run({
                    let mut c = paracrypt();
                    c.args(["decrypt", "-q", "-j", threads, "-i"])
                        .arg(key)
                        .arg(&input);
                    c
                }));
                assert!(stdout == plain, "{len} bytes to stdout");
            }
        }
        // typage opens what paracrypt writes to the key typage made.
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "--format", "age", "-r", recipient]);
        let sealed = ok(run_with_stdin(cmd, &plain));
        let opened = typage(
            &typage_dir,
            &["decrypt", identity.to_str().unwrap()],
            &sealed,
        );
        assert!(opened == plain, "typage with its own key: {len} bytes");
    }
}

#[test]
fn typage_opens_post_quantum_and_passphrase_files_rekeyed_by_paracrypt() {
    let Some(typage_dir) = typage_dir() else {
        return;
    };
    let dir = scratch();
    let d = dir.path();
    let (old_key, old) = paracrypt_keygen(d, "old.key");
    // A key typage made, the new recipient.
    let made = String::from_utf8(typage(&typage_dir, &["keygen-pq"], b"")).unwrap();
    let (identity, recipient) = made.trim().split_once('\n').unwrap();
    let new_key = write(d, "new.key", format!("{identity}\n").as_bytes());
    let plain = data(3 * 64 * 1024 + 5, 4);
    let sealed = {
        let mut c = paracrypt();
        c.args(["encrypt", "-q", "--format", "age", "-r", &old]);
        write(d, "sealed.age", &ok(run_with_stdin(c, &plain)))
    };
    let rekey = |args: &[&str], env: Option<&str>, out: &str| {
        let mut c = paracrypt();
        c.arg("rekey")
            .args(args)
            .arg(&sealed)
            .arg("-o")
            .arg(d.join(out));
        if let Some(pass) = env {
            c.env("PARACRYPT_NEW_PASSWORD", pass);
        }
        ok(run(c));
        std::fs::read(d.join(out)).unwrap()
    };
    let old_key = old_key.to_str().unwrap();
    // To typage's post-quantum recipient: typage opens it, the old identity does not.
    let to_new = rekey(&["-i", old_key, "-r", recipient.trim()], None, "to-new.age");
    let opened = typage(
        &typage_dir,
        &["decrypt", new_key.to_str().unwrap()],
        &to_new,
    );
    assert!(
        opened == plain,
        "typage opens the rekeyed post-quantum file"
    );
    let mut c = Command::new("node");
    c.arg(typage_dir.join("typage.mjs"))
        .args(["decrypt", old_key]);
    assert!(!run_with_stdin(c, &to_new).status.success());
    // To a passphrase: typage opens it with the passphrase.
    let to_pass = rekey(
        &["-i", old_key, "--passphrase"],
        Some("pq to pass"),
        "pass.age",
    );
    let opened = typage(&typage_dir, &["decrypt-passphrase", "pq to pass"], &to_pass);
    assert!(opened == plain, "typage opens the rekeyed passphrase file");
}
