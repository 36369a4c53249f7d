//! `rekey --recursive` (issue #35): a tree to recipients is rekeyed to others (its files open
//! with `age -d` after), a password tree keeps its files byte for byte under a new password, a
//! signed tree needs its signing key, and what cannot be rekeyed is refused before anything is
//! written; the old tree is never changed.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::container::keygen;
use crate::people::x25519;
use crate::signed::signing_key;
use crate::tree::{decrypt, encrypt, small_tree, snapshot, temporaries};

fn rekey(args: &[&str], input: &Path, output: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["rekey", "--recursive"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    cmd
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_tree_to_recipients_is_rekeyed_and_its_files_open_with_age() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (alice, alice_to) = x25519(d, "alice.key");
    let (bob, bob_to) = x25519(d, "bob.key");
    for (format, suffix) in [("paracrypt", ".pcr"), ("age", ".age")] {
        let old = d.join(format!("old-{format}"));
        ok(run(encrypt(
            &["--format", format, "-r", &alice_to],
            &plain,
            &old,
        )));
        let before = snapshot(&old);
        let new = d.join(format!("new-{format}"));
        ok(run(rekey(
            &["-i", s(&alice), "-r", &bob_to, "-j", "3"],
            &old,
            &new,
        )));
        assert!(temporaries(&new).is_empty());
        let back = d.join(format!("back-{format}"));
        ok(run(decrypt(&["-i", s(&bob)], &new, &back)));
        assert_eq!(snapshot(&back), snapshot(&plain), "{format}");
        fails(run(decrypt(&["-i", s(&alice)], &new, &d.join("no"))), 1, "");
        assert!(!d.join("no").exists());
        // The old tree is as it was.
        assert_eq!(snapshot(&old), before, "{format}");
        // Each rekeyed file opens alone, with age itself for an age tree.
        if format == "age" && have("age", "--version") {
            let mut age = Command::new("age");
            age.args(["-d", "-i", s(&bob)])
                .arg(new.join(format!("a/b/z{suffix}")));
            assert_eq!(
                ok(run(age)),
                data(1 << 20, 8),
                "age -d reads the rekeyed file"
            );
        }
        let mut one = paracrypt();
        one.args(["decrypt", "-i", s(&bob)])
            .arg(new.join(format!("x{suffix}")));
        assert_eq!(ok(run(one)), data(70_000, 9), "{format}");
    }
}

#[test]
fn a_password_tree_keeps_its_files_byte_for_byte_under_a_new_password() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let old_pw = write(d, "old-pw", b"correct horse\n");
    let new_pw = write(d, "new-pw", b"battery staple\n");
    for (format, seal) in [
        ("paracrypt", vec!["--password-file", s(&old_pw)]),
        (
            "age",
            vec![
                "--format",
                "age",
                "--passphrase",
                "--password-file",
                s(&old_pw),
            ],
        ),
    ] {
        let old = d.join(format!("old-{format}"));
        ok(run(encrypt(&seal, &plain, &old)));
        let new = d.join(format!("new-{format}"));
        ok(run(rekey(
            &[
                "--password-file",
                s(&old_pw),
                "--passphrase",
                "--new-password-file",
                s(&new_pw),
            ],
            &old,
            &new,
        )));
        // Every stored file is the old one, byte for byte; only the manifest differs.
        let (mut was, mut now) = (snapshot(&old), snapshot(&new));
        let manifest = b"paracrypt-manifest".to_vec();
        assert_ne!(was.remove(&manifest), now.remove(&manifest));
        was.remove(&b""[..]);
        now.remove(&b""[..]);
        assert_eq!(now, was, "{format}");
        ok(run(decrypt(
            &["--password-file", s(&new_pw)],
            &new,
            &d.join(format!("back-{format}")),
        )));
        assert_eq!(
            snapshot(&d.join(format!("back-{format}"))),
            snapshot(&plain)
        );
        fails(
            run(decrypt(
                &["--password-file", s(&old_pw)],
                &new,
                &d.join("no"),
            )),
            1,
            "",
        );
        ok(run(decrypt(
            &["--password-file", s(&old_pw)],
            &old,
            &d.join(format!("still-{format}")),
        )));
    }
}

#[test]
fn a_signed_tree_is_rekeyed_with_its_signing_key() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (alice, alice_to) = x25519(d, "alice.key");
    let (bob, bob_to) = x25519(d, "bob.key");
    let (signer, public) = signing_key(d, "ed25519", "me");
    let old = d.join("old");
    ok(run(encrypt(
        &["-r", &alice_to, "--sign", s(&signer)],
        &plain,
        &old,
    )));
    let new = d.join("new");
    let stderr = fails(
        run(rekey(&["-i", s(&alice), "-r", &bob_to], &old, &new)),
        2,
        "is signed by ed25519",
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!new.exists());
    ok(run(rekey(
        &["-i", s(&alice), "-r", &bob_to, "--sign", s(&signer)],
        &old,
        &new,
    )));
    ok(run(decrypt(
        &["-i", s(&bob), "--verify-with", s(&public)],
        &new,
        &d.join("back"),
    )));
    assert_eq!(snapshot(&d.join("back")), snapshot(&plain));
}

#[test]
fn what_cannot_be_rekeyed_is_refused_before_anything_is_written() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (alice, alice_to) = x25519(d, "alice.key");
    let key = keygen(d, "key");
    let pw = write(d, "pw", b"pw\n");
    let keyed = d.join("keyed");
    ok(run(encrypt(&["-k", s(&key)], &plain, &keyed)));
    let people = d.join("people");
    ok(run(encrypt(&["-r", &alice_to], &plain, &people)));
    let by_password = d.join("by-password");
    ok(run(encrypt(
        &["--password-file", s(&pw)],
        &plain,
        &by_password,
    )));
    let out = d.join("out");
    let cases: Vec<(&Path, Vec<&str>, i32, &str)> = vec![
        // Refused from the manifest's header alone: no credential is asked for.
        (
            &keyed,
            vec!["-r", &alice_to],
            1,
            "encrypted with a key file",
        ),
        (
            &people,
            vec![
                "-i",
                s(&alice),
                "--passphrase",
                "--new-password-file",
                s(&pw),
            ],
            2,
            "rekeyed to recipients",
        ),
        (
            &by_password,
            vec!["--password-file", s(&pw), "-r", &alice_to],
            2,
            "rekeyed to a new password",
        ),
    ];
    for (tree, args, code, words) in cases {
        let stderr = fails(run(rekey(&args, tree, &out)), code, words);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!out.exists(), "{}", tree.display());
    }
    // No OUTPUT, an OUTPUT inside INPUT, an OUTPUT that holds files.
    let mut cmd = paracrypt();
    cmd.args(["rekey", "--recursive", "-i", s(&alice), "-r", &alice_to])
        .arg(&people);
    fails(run(cmd), 2, "needs -o OUTPUT");
    fails(
        run(rekey(&["-i", s(&alice), "-r", &alice_to], &people, &people)),
        2,
        "inside the input",
    );
    std::fs::create_dir(&out).unwrap();
    write(&out, "x", b"x");
    fails(
        run(rekey(&["-i", s(&alice), "-r", &alice_to], &people, &out)),
        2,
        "--force",
    );
    assert_eq!(listing(&out), ["x"]);
}

/// A file swapped for another: the tree is not as its manifest lists it, and is refused whole
/// on one line naming the file, with nothing at OUTPUT.
#[test]
fn a_file_swapped_for_another_is_named_and_nothing_is_rekeyed() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (alice, alice_to) = x25519(d, "alice.key");
    let (_, bob_to) = x25519(d, "bob.key");
    let old = d.join("old");
    ok(run(encrypt(&["-r", &alice_to], &plain, &old)));
    std::fs::copy(old.join("x.pcr"), old.join("a/y.pcr")).unwrap();
    let new = d.join("new");
    let stderr = fails(
        run(rekey(&["-i", s(&alice), "-r", &bob_to], &old, &new)),
        1,
        "a/y: its encrypted file a/y.pcr is not the one the manifest lists",
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!new.exists(), "{:?}", listing(&new));
}

/// The refusal comes before anything is written: `--force` into an OUTPUT that holds a file of
/// the tree's names leaves it as it was (it used to be replaced, then removed), and nothing else
/// at OUTPUT changes.
#[test]
fn a_tampered_tree_rekeyed_with_force_leaves_output_as_it_was() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (alice, alice_to) = x25519(d, "alice.key");
    let (_, bob_to) = x25519(d, "bob.key");
    let old = d.join("old");
    ok(run(encrypt(&["-r", &alice_to], &plain, &old)));
    std::fs::copy(old.join("x.pcr"), old.join("a/y.pcr")).unwrap();
    let out = d.join("out");
    std::fs::create_dir_all(out.join("a/b")).unwrap();
    write(&out, "x.pcr", b"mine");
    write(&out.join("a/b"), "z.pcr", b"mine too");
    let before = snapshot(&out);
    let stderr = fails(
        run(rekey(
            &["-i", s(&alice), "-r", &bob_to, "--force"],
            &old,
            &out,
        )),
        1,
        "a/y: its encrypted file a/y.pcr is not the one the manifest lists",
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(snapshot(&out), before);
    assert!(temporaries(&out).is_empty());
}

/// What INPUT holds that its manifest does not list is not carried into the new tree: each is
/// named on stderr as left behind (a directory once), as `verify --recursive` names it added,
/// and the rekey succeeds.
#[test]
fn what_input_holds_beyond_its_manifest_is_named_left_behind() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (alice, alice_to) = x25519(d, "alice.key");
    let (bob, bob_to) = x25519(d, "bob.key");
    let old = d.join("old");
    ok(run(encrypt(&["-r", &alice_to], &plain, &old)));
    std::fs::copy(old.join("x.pcr"), old.join("a/extra.pcr")).unwrap();
    std::fs::create_dir_all(old.join("more/deeper")).unwrap();
    write(&old.join("more/deeper"), "notes.pcr", b"not listed");
    let new = d.join("new");
    let out = run(rekey(&["-i", s(&alice), "-r", &bob_to], &old, &new));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "paracrypt: warning: left behind: a/extra.pcr (in the encrypted tree, not in its \
             manifest: not in the new tree)",
            "paracrypt: warning: left behind: more (in the encrypted tree, not in its manifest: \
             not in the new tree)",
        ]
    );
    assert!(!new.join("a/extra.pcr").exists() && !new.join("more").exists());
    // verify names the same paths added in the old tree; the new one is as listed.
    let mut verify = paracrypt();
    verify
        .args(["verify", "--recursive", "-i", s(&alice)])
        .arg(&old);
    let shown = String::from_utf8(run(verify).stdout).unwrap();
    assert!(
        shown.contains("added: a/extra.pcr") && shown.contains("added: more "),
        "{shown}"
    );
    let mut verify = paracrypt();
    verify
        .args(["verify", "--recursive", "-i", s(&bob)])
        .arg(&new);
    ok(run(verify));
    ok(run(decrypt(&["-i", s(&bob)], &new, &d.join("back"))));
    assert_eq!(snapshot(&d.join("back")), snapshot(&plain));
}
