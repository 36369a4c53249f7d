//! `verify` of one encrypted file (issue #53): a container or an age file, with a key file, an
//! identity or a password, checked chunk by chunk into nothing — `FILE: OK`, or one line and
//! the decryption's exit status (1 damaged, cut or wrong secret; 5 another signer) — and nothing
//! written anywhere.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::people::x25519;
use crate::signed::signing_key;

const CHUNK: usize = 4096;

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn encrypt(args: &[&str], input: &Path, output: &Path) {
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "-q"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    ok(run(cmd));
}

fn verify(args: &[&str], file: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.arg("verify").args(args).arg(file);
    cmd
}

/// `verify ARGS FILE` succeeds, printing exactly `FILE: OK`.
#[track_caller]
fn verifies(args: &[&str], file: &Path) {
    let out = ok(run(verify(args, file)));
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!("{}: OK\n", file.display())
    );
}

#[test]
fn containers_and_age_files_verify_with_every_kind_of_secret_and_nothing_is_written() {
    let dir = scratch();
    let d = dir.path();
    let plain = write(d, "plain", &data(5 * CHUNK + 77, 3));
    let mut keygen = paracrypt();
    keygen.args(["keygen", "-o", s(&d.join("key"))]);
    ok(run(keygen));
    let key = d.join("key");
    let (id, recipient) = x25519(d, "id");
    let pw = write(d, "pw", b"correct horse\n");
    let by_key = d.join("by-key.pcr");
    let by_password = d.join("by-password.pcr");
    let to_recipient = d.join("to-recipient.age");
    let armored = d.join("armored.age");
    let age_password = d.join("by-password.age");
    encrypt(&["-k", s(&key), "--chunk-size", "4KiB"], &plain, &by_key);
    encrypt(&["--password-file", s(&pw)], &plain, &by_password);
    encrypt(
        &["--format", "age", "-r", &recipient],
        &plain,
        &to_recipient,
    );
    encrypt(
        &["--format", "age", "-a", "-r", &recipient],
        &plain,
        &armored,
    );
    encrypt(
        &["--format", "age", "--passphrase", "--password-file", s(&pw)],
        &plain,
        &age_password,
    );
    let before = listing(d);

    verifies(&["-k", s(&key)], &by_key);
    verifies(&["--password-file", s(&pw)], &by_password);
    verifies(&["-i", s(&id)], &to_recipient);
    verifies(&["-i", s(&id)], &armored);
    verifies(&["--password-file", s(&pw)], &age_password);
    // A password from the environment: no flag at all, and no --public PUB (no detached signature).
    let mut cmd = verify(&[], &by_password);
    cmd.env("PARACRYPT_PASSWORD", "correct horse");
    let out = ok(run(cmd));
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!("{}: OK\n", by_password.display())
    );
    // A range: only the chunks that cover it.
    let out = ok(run(verify(&["-k", s(&key), "--range", "4096:10"], &by_key)));
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!("{}: OK (bytes 4096..4106)\n", by_key.display())
    );
    // Nothing was written anywhere: the directory is as it was, and stdout said only OK.
    assert_eq!(listing(d), before);
}

#[test]
fn a_damaged_cut_or_wrongly_keyed_file_fails_with_exit_1() {
    let dir = scratch();
    let d = dir.path();
    let plain = write(d, "plain", &data(5 * CHUNK + 77, 4));
    let mut keygen = paracrypt();
    keygen.args(["keygen", "-o", s(&d.join("key"))]);
    ok(run(keygen));
    let key = d.join("key");
    let mut keygen = paracrypt();
    keygen.args(["keygen", "-o", s(&d.join("other"))]);
    ok(run(keygen));
    let sealed = d.join("sealed.pcr");
    encrypt(&["-k", s(&key), "--chunk-size", "4KiB"], &plain, &sealed);
    let good = std::fs::read(&sealed).unwrap();

    // A flipped byte in the third chunk: named.
    let mut flipped = good.clone();
    let at = good.len() - 3 * (CHUNK + 16);
    flipped[at] ^= 1;
    let damaged = write(d, "damaged.pcr", &flipped);
    let stderr = fails(run(verify(&["-k", s(&key)], &damaged)), 1, "chunk");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("paracrypt: error: "), "{stderr}");
    // A cut file (a whole chunk short, and a few bytes short).
    let cut = write(d, "cut.pcr", &good[..good.len() - (77 + 16)]);
    fails(run(verify(&["-k", s(&key)], &cut)), 1, "paracrypt: error: ");
    let short = write(d, "short.pcr", &good[..good.len() - 5]);
    fails(
        run(verify(&["-k", s(&key)], &short)),
        1,
        "paracrypt: error: ",
    );
    // Another key.
    fails(
        run(verify(&["-k", s(&d.join("other"))], &sealed)),
        1,
        "paracrypt: error: ",
    );
    // Nothing on stdout from any of them.
    let out = run(verify(&["-k", s(&key)], &damaged));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_signed_container_must_have_the_signer_asked_for() {
    let dir = scratch();
    let d = dir.path();
    let plain = write(d, "plain", &data(3 * CHUNK, 5));
    let mut keygen = paracrypt();
    keygen.args(["keygen", "-o", s(&d.join("key"))]);
    ok(run(keygen));
    let key = d.join("key");
    let (signer, public) = signing_key(d, "ed25519", "signer");
    let (_, stranger) = signing_key(d, "ed25519", "stranger");
    let sealed = d.join("sealed.pcr");
    encrypt(
        &["-k", s(&key), "--chunk-size", "4KiB", "--sign", s(&signer)],
        &plain,
        &sealed,
    );
    let out = run(verify(
        &["-k", s(&key), "--verify-with", s(&public)],
        &sealed,
    ));
    let (_, stderr) = status_and_stderr(&out);
    assert!(stderr.contains("good signature"), "{stderr}");
    assert_eq!(
        String::from_utf8(ok(out)).unwrap(),
        format!("{}: OK\n", sealed.display())
    );
    fails(
        run(verify(
            &["-k", s(&key), "--verify-with", s(&stranger)],
            &sealed,
        )),
        5,
        "paracrypt: error: ",
    );
}

#[test]
fn without_a_secret_or_a_signers_key_a_plain_file_is_a_usage_error() {
    let dir = scratch();
    let d = dir.path();
    let plain = write(d, "plain", b"not encrypted");
    let stderr = fails(run(verify(&[], &plain)), 2, "--public PUB");
    assert!(stderr.contains("-k, -i, --password-file"), "{stderr}");
    // A secret with a detached signature's flags: refused, naming both uses.
    let pw = write(d, "pw", b"pw\n");
    fails(
        run(verify(&["--password-file", s(&pw), "-s", s(&pw)], &plain)),
        2,
        "-s SIG",
    );
    // A secret given for a file that is not encrypted: the decryption's refusal.
    let (_, stderr) = status_and_stderr(&run(verify(&["--password-file", s(&pw)], &plain)));
    assert!(stderr.starts_with("paracrypt: error: "), "{stderr}");
    assert_eq!(listing(d), ["plain", "pw"]);
}
