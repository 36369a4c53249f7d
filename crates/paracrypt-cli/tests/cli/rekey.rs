//! `paracrypt rekey`: containers to recipients (version 2) and age files get a new header for
//! the same file key and keep every byte after it. The result opens with the new credentials
//! only (the old ones fail), an age file rekeyed here opens in the real `age`, `-o INPUT`
//! replaces the input atomically, and a wrong credential or a damaged header changes nothing.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::people::x25519;

/// `paracrypt rekey ARGS…`, its output.
fn rekey(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = paracrypt();
    cmd.arg("rekey").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

/// `paracrypt decrypt ARGS… FILE` to stdout.
fn decrypt(file: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "-q"]).args(args).arg(file);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Where the bytes after the header start: a container's header length (`info`), or the end
/// of an age header's MAC line.
fn header_len(file: &[u8]) -> usize {
    if file.starts_with(b"age-encryption.org/") {
        let mac = file.windows(4).position(|w| w == b"\n---").unwrap() + 1;
        mac + file[mac..].iter().position(|&b| b == b'\n').unwrap() + 1
    } else {
        let info = paracrypt_core::container::read_header(&mut &file[..]).unwrap();
        info.len
    }
}

#[test]
fn rekey_a_container_adds_and_removes_recipients_and_copies_the_chunks() {
    let dir = scratch();
    let d = dir.path();
    let (a_key, a) = x25519(d, "a.key");
    let (b_key, b) = x25519(d, "b.key");
    let (c_key, c) = x25519(d, "c.key");
    let plain = data(300_000, 3);
    let input = write(d, "plain", &plain);
    let sealed = d.join("sealed");
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "-q", "--chunk-size", "64KiB", "-r", &a, "-r", &b])
        .arg(&input)
        .arg("-o")
        .arg(&sealed);
    ok(run(cmd));
    // Keep a, drop b, add c.
    let rekeyed = d.join("rekeyed");
    ok(rekey(
        &[
            "-i",
            s(&a_key),
            "-r",
            &a,
            "-r",
            &c,
            s(&sealed),
            "-o",
            s(&rekeyed),
        ],
        &[],
    ));
    let (old, new) = (
        std::fs::read(&sealed).unwrap(),
        std::fs::read(&rekeyed).unwrap(),
    );
    assert_eq!(&new[header_len(&new)..], &old[header_len(&old)..]);
    assert_ne!(new[..header_len(&new)], old[..header_len(&old)]);
    let mut cmd = paracrypt();
    cmd.arg("info").arg(&rekeyed);
    let info = String::from_utf8(ok(run(cmd))).unwrap();
    assert!(
        info.contains("2 recipients (decrypt with an identity), rekeyed"),
        "{info}"
    );
    for key in [&a_key, &c_key] {
        assert_eq!(ok(decrypt(&rekeyed, &["-i", s(key)], &[])), plain);
    }
    fails(
        decrypt(&rekeyed, &["-i", s(&b_key)], &[]),
        1,
        "no identity matches this file",
    );
    // The old file still opens with b: rekeying is not revocation.
    assert_eq!(ok(decrypt(&sealed, &["-i", s(&b_key)], &[])), plain);
    // stdin to stdout gives the same kind of file.
    let mut cmd = paracrypt();
    cmd.args(["rekey", "-i", s(&c_key), "-r", &b]);
    let piped = ok(run_with_stdin(cmd, &new));
    let piped_file = write(d, "piped", &piped);
    assert_eq!(ok(decrypt(&piped_file, &["-i", s(&b_key)], &[])), plain);
    fails(
        decrypt(&piped_file, &["-i", s(&c_key)], &[]),
        1,
        "no identity matches",
    );
}

#[test]
fn rekey_an_age_file_between_recipients_and_passphrases_and_age_reads_it() {
    let dir = scratch();
    let d = dir.path();
    let (a_key, a) = x25519(d, "a.key");
    let (b_key, b) = x25519(d, "b.key");
    let plain = data(200_000, 5);
    let sealed = {
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "--format", "age", "-r", &a]);
        write(d, "sealed.age", &ok(run_with_stdin(cmd, &plain)))
    };
    // Recipients → passphrase.
    let pass = d.join("pass");
    ok(rekey(
        &["-i", s(&a_key), "--passphrase", s(&sealed), "-o", s(&pass)],
        &[("PARACRYPT_NEW_PASSWORD", "new secret")],
    ));
    let (old, new) = (
        std::fs::read(&sealed).unwrap(),
        std::fs::read(&pass).unwrap(),
    );
    assert_eq!(&new[header_len(&new)..], &old[header_len(&old)..]);
    let by = |p| [("PARACRYPT_PASSWORD", p)];
    assert_eq!(ok(decrypt(&pass, &[], &by("new secret"))), plain);
    fails(decrypt(&pass, &["-i", s(&a_key)], &[]), 1, "");
    fails(decrypt(&pass, &[], &by("old secret")), 1, "");
    // Passphrase → another passphrase, given by file; the old one no longer opens it.
    let new_pass = write(d, "new-pass", b"newer secret\n");
    let pass2 = d.join("pass2");
    ok(rekey(
        &[
            "--passphrase",
            "--new-password-file",
            s(&new_pass),
            s(&pass),
            "-o",
            s(&pass2),
        ],
        &by("new secret"),
    ));
    assert_eq!(ok(decrypt(&pass2, &[], &by("newer secret"))), plain);
    fails(decrypt(&pass2, &[], &by("new secret")), 1, "");
    // Passphrase → recipients.
    let to_b = d.join("to-b");
    ok(rekey(
        &["-r", &b, s(&pass2), "-o", s(&to_b)],
        &by("newer secret"),
    ));
    assert_eq!(ok(decrypt(&to_b, &["-i", s(&b_key)], &[])), plain);
    fails(decrypt(&to_b, &[], &by("newer secret")), 1, "");
    fails(
        decrypt(&to_b, &["-i", s(&a_key)], &[]),
        1,
        "no identity matches",
    );
    // The real age reads what rekey wrote to an X25519 recipient, and not with the old key.
    // (age reads a passphrase only from a terminal: typage opens the rekeyed passphrase file,
    // in typage.rs.)
    if have("age", "--version") {
        let mut cmd = Command::new("age");
        cmd.args(["-d", "-i", s(&b_key)]).arg(&to_b);
        assert_eq!(ok(run(cmd)), plain);
        let mut cmd = Command::new("age");
        cmd.args(["-d", "-i", s(&a_key)]).arg(&to_b);
        assert!(!run(cmd).status.success());
    } else {
        assert!(std::env::var_os("CI").is_none(), "age is required in CI");
    }
}

#[test]
fn rekey_in_place_replaces_the_input_atomically() {
    let dir = scratch();
    let d = dir.path();
    let (a_key, a) = x25519(d, "a.key");
    let (b_key, b) = x25519(d, "b.key");
    let plain = data(100_000, 9);
    for format in ["paracrypt", "age"] {
        let file = {
            let mut cmd = paracrypt();
            cmd.args(["encrypt", "-q", "--format", format, "-r", &a]);
            write(d, "file", &ok(run_with_stdin(cmd, &plain)))
        };
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o640))
            .unwrap();
        let before = listing(d);
        ok(rekey(
            &["-i", s(&a_key), "-r", &b, s(&file), "-o", s(&file)],
            &[],
        ));
        assert_eq!(listing(d), before, "{format}: no file left behind");
        let mode = std::fs::metadata(&file).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o640
        );
        assert_eq!(ok(decrypt(&file, &["-i", s(&b_key)], &[])), plain);
        fails(
            decrypt(&file, &["-i", s(&a_key)], &[]),
            1,
            "no identity matches",
        );
        // Another output that exists still needs --force.
        let other = write(d, "other", b"keep");
        fails(
            rekey(&["-i", s(&b_key), "-r", &a, s(&file), "-o", s(&other)], &[]),
            2,
            "already exists",
        );
        assert_eq!(std::fs::read(&other).unwrap(), b"keep");
        std::fs::remove_file(other).unwrap();
    }
}

#[test]
fn rekey_with_a_wrong_credential_or_a_damaged_header_changes_nothing() {
    let dir = scratch();
    let d = dir.path();
    let (a_key, a) = x25519(d, "a.key");
    let (b_key, b) = x25519(d, "b.key");
    let plain = data(100_000, 1);
    for format in ["paracrypt", "age"] {
        let sealed = {
            let mut cmd = paracrypt();
            cmd.args(["encrypt", "-q", "--format", format, "-r", &a]);
            ok(run_with_stdin(cmd, &plain))
        };
        let len = header_len(&sealed);
        // In the header: a byte of the age header's MAC, of the container's recipient block.
        let mut damaged_header = sealed.clone();
        let at = if format == "age" { len - 10 } else { 76 + 70 };
        damaged_header[at] = if damaged_header[at] == b'A' {
            b'B'
        } else {
            b'A'
        };
        let cases: [(&[u8], &str, &str); 3] = [
            (&sealed, s(&b_key), "no identity matches this file"),
            (&damaged_header, s(&a_key), "header"),
            (b"PARACRYPT\x09 not a file", s(&a_key), "unsupported"),
        ];
        for (bytes, identity, needle) in cases {
            let file = write(d, "in", bytes);
            let before = listing(d);
            // In place and to another file: the input stays, nothing else appears.
            for out in ["in", "out"] {
                fails(
                    rekey(
                        &["-i", identity, "-r", &b, s(&file), "-o", s(&d.join(out))],
                        &[],
                    ),
                    1,
                    needle,
                );
                assert_eq!(std::fs::read(&file).unwrap(), bytes, "{format} {needle}");
                assert_eq!(listing(d), before, "{format} {needle}");
            }
        }
        // A damaged chunk is not seen (the payload is not decrypted): it is copied as it is,
        // and the next decryption names it.
        let mut damaged_chunk = sealed.clone();
        damaged_chunk[len + 100] ^= 1;
        let file = write(d, "in", &damaged_chunk);
        let out = d.join("out");
        ok(rekey(
            &["-i", s(&a_key), "-r", &b, s(&file), "-o", s(&out)],
            &[],
        ));
        fails(decrypt(&out, &["-i", s(&b_key)], &[]), 1, "chunk 0");
        std::fs::remove_file(out).unwrap();
    }
}

#[test]
fn rekey_refuses_what_it_cannot_rekey_with_one_line() {
    let dir = scratch();
    let d = dir.path();
    let (a_key, a) = x25519(d, "a.key");
    let plain = data(1000, 2);
    let password = write(d, "pw", b"hunter2\n");
    let v1 = {
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "--password-file", s(&password)]);
        write(d, "v1", &ok(run_with_stdin(cmd, &plain)))
    };
    let stderr = fails(
        rekey(
            &["--password-file", s(&password), "-r", &a, s(&v1), "-o", "-"],
            &[],
        ),
        1,
        "version 1 container",
    );
    assert!(
        stderr.contains("encrypt it again") && stderr.trim().lines().count() == 1,
        "{stderr}"
    );
    let armored = {
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "--format", "age", "-a", "-r", &a]);
        write(d, "armored", &ok(run_with_stdin(cmd, &plain)))
    };
    fails(
        rekey(
            &[
                "-i",
                s(&a_key),
                "-r",
                &a,
                s(&armored),
                "-o",
                s(&d.join("x")),
            ],
            &[],
        ),
        1,
        "armored age file",
    );
    let v2 = {
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "-r", &a]);
        write(d, "v2", &ok(run_with_stdin(cmd, &plain)))
    };
    fails(
        rekey(
            &[
                "-i",
                s(&a_key),
                "--passphrase",
                s(&v2),
                "-o",
                s(&d.join("x")),
            ],
            &[("PARACRYPT_NEW_PASSWORD", "p")],
        ),
        1,
        "not to a passphrase",
    );
    fails(
        rekey(&["-i", s(&a_key), s(&v2), "-o", s(&d.join("x"))], &[]),
        2,
        "needs the new recipients",
    );
    // Without a credential or a terminal (`setsid` detaches from any): the error says what to
    // give.
    if have("setsid", "--version") {
        let mut cmd = Command::new("setsid");
        cmd.args(["-w", env!("CARGO_BIN_EXE_paracrypt"), "rekey", "-r", &a])
            .arg(&v2)
            .arg("-o")
            .arg(d.join("x"))
            .env_remove("PARACRYPT_PASSWORD");
        fails(
            run(cmd),
            2,
            "no old credential: use -i FILE, --password-file FILE or PARACRYPT_PASSWORD",
        );
    }
    assert!(!d.join("x").exists());
    // The help says what rekeying does not do.
    let help = String::from_utf8(ok(rekey(&["--help"], &[]))).unwrap();
    assert!(help.contains("NOT revocation"), "{help}");
}
