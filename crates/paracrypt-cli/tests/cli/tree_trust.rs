//! Trees on storage others can write (issue #51, docs/guide/security.md): an update takes
//! nothing from the output on faith. Each test is an attack made with what the holder of the
//! output has (the recipients' public keys, write access, old copies), and what stops it.
//!
//! Every command here keeps its host's record of the trees it writes in a state directory of
//! the test's own (`PARACRYPT_STATE_DIR`), so that "another host" is another directory.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::container::keygen;
use crate::people::x25519;
use crate::signed::signing_key;
use crate::tree::{decrypt, encrypt, small_tree, snapshot};
use crate::tree_update::{counts, ok_stderr, update};

/// `cmd` run by the host whose record of its trees is under `state`.
fn on(state: &Path, mut cmd: Command) -> Command {
    cmd.env("PARACRYPT_STATE_DIR", state);
    cmd
}

/// The attack of issue #51 (1): someone with only the owner's public recipient and write
/// access to the output makes a password tree of her own, takes its manifest (which carries
/// her tree key), encrypts it to the owner's recipient and puts it in the owner's output. The
/// owner's next update with the identity used to seal new files with her key; it is refused
/// now, and an update without the identity (a backup host) takes nothing from it.
#[test]
fn a_planted_manifest_carrying_a_key_of_its_own_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = small_tree(d);
    let (owner, recipient) = x25519(d, "owner.key");
    let id = owner.to_str().unwrap();
    let pw = write(d, "her-pw", b"hers\n");
    let pw = pw.to_str().unwrap();
    for (format, her_secret) in [
        (vec![], vec!["--password-file", pw]),
        (
            vec!["--format", "age"],
            vec!["--format", "age", "--passphrase", "--password-file", pw],
        ),
    ] {
        let out = d.join(format!("out{}", format.len()));
        let to = [&format[..], &["-r", recipient.as_str()]].concat();
        ok(run(on(&state, encrypt(&to, &plain, &out))));

        // Her tree, her manifest's plaintext, sealed again to the owner's recipient.
        let hers = d.join(format!("hers{}", format.len()));
        ok(run(encrypt(&her_secret, &plain, &hers)));
        let mut open = paracrypt();
        open.args(["decrypt", "--password-file", pw])
            .arg(hers.join("paracrypt-manifest"));
        let plaintext = write(d, "her-manifest", &ok(run(open)));
        let mut seal = paracrypt();
        seal.args(["encrypt"]).args(&to).arg(&plaintext);
        std::fs::write(out.join("paracrypt-manifest"), ok(run(seal))).unwrap();
        write(&plain, "x", &data(70_001, format.len() as u8));
        let before = snapshot(&out);

        let with_id = [&to[..], &["-i", id]].concat();
        fails(
            run(on(&state, update(&with_id, &plain, &out))),
            1,
            "it carries a key of its own, which only a tree written with a password does",
        );
        assert!(snapshot(&out) == before, "a refused update wrote");

        // The backup host (no identity): the manifest is not the one it recorded, so every file
        // is encrypted again, to the owner; her password opens none of it.
        assert_eq!(
            counts(&ok_stderr(on(&state, update(&to, &plain, &out)))),
            (3, 0, 0)
        );
        let back = d.join(format!("back{}", format.len()));
        ok(run(decrypt(&["-i", id], &out, &back)));
        assert!(snapshot(&back) == snapshot(&plain));
        let theirs = d.join(format!("theirs{}", format.len()));
        let out_status = run(decrypt(&["--password-file", pw], &out, &theirs));
        assert!(!out_status.status.success());
    }
}

/// The attack of issue #51 (2): a signed tree replaced by one another key signed. The owner's
/// update with its own signing key used to sign over what she put there; it is refused now
/// (exit 5, a signature check), and without `--sign` the signed tree is not unsigned.
#[test]
fn an_update_with_sign_requires_the_trees_own_signer() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = small_tree(d);
    let (owner, recipient) = x25519(d, "owner.key");
    let id = owner.to_str().unwrap();
    let (mine, _) = signing_key(d, "ed25519", "me");
    let (hers, _) = signing_key(d, "ed25519", "her");
    let out = d.join("out");
    let to = ["-r", recipient.as_str()];
    let (mine, hers) = (mine.to_str().unwrap(), hers.to_str().unwrap());
    let by_me = [&to[..], &["--sign", mine]].concat();
    let by_her = [&to[..], &["--sign", hers]].concat();
    ok(run(on(&state, encrypt(&by_me, &plain, &out))));
    // She encrypts a tree of her own over it, to the same recipient, signed by her.
    let mimic = d.join("mimic");
    std::fs::create_dir(&mimic).unwrap();
    write(&mimic, "x", b"pay alice 100");
    let mut over = encrypt(&by_her, &mimic, &out);
    over.arg("--force");
    ok(run(over));
    let before = snapshot(&out);

    let with_id = [&by_me[..], &["-i", id]].concat();
    fails(
        run(on(&state, update(&with_id, &plain, &out))),
        5,
        "signed by another key",
    );
    let unsigned = [&to[..], &["-i", id]].concat();
    fails(
        run(on(&state, update(&unsigned, &plain, &out))),
        2,
        "the tree is signed: give its signing key to update it",
    );
    assert!(snapshot(&out) == before, "a refused update wrote");
}

/// The attack of issue #51 (rollback): an older generation of a tree put back (its manifest,
/// with the files it lists). The host that wrote the newer one refuses to update from it, and
/// a decryption told the generation it must see refuses it too.
#[test]
fn an_older_generation_put_back_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let out = d.join("out");
    ok(run(on(&state, encrypt(&["-k", k], &plain, &out))));
    let first = std::fs::read(out.join("paracrypt-manifest")).unwrap();
    let first_x = std::fs::read(out.join("x.pcr")).unwrap();
    write(&plain, "x", b"pay alice 900");
    assert_eq!(
        counts(&ok_stderr(on(&state, update(&["-k", k], &plain, &out)))),
        (1, 2, 0)
    );
    let second = std::fs::read(out.join("paracrypt-manifest")).unwrap();

    let back = d.join("back");
    let mut newest = decrypt(&["-k", k, "--min-generation", "2"], &out, &back);
    newest.arg("--force");
    ok(run(newest));
    assert_eq!(std::fs::read(back.join("x")).unwrap(), b"pay alice 900");

    std::fs::write(out.join("paracrypt-manifest"), &first).unwrap();
    std::fs::write(out.join("x.pcr"), &first_x).unwrap();
    let before = snapshot(&out);
    fails(
        run(on(&state, update(&["-k", k], &plain, &out))),
        1,
        "generation 1 of the tree, older than the generation 2 this host wrote there",
    );
    assert!(snapshot(&out) == before, "a refused update wrote");
    let old = d.join("old");
    fails(
        run(decrypt(&["-k", k, "--min-generation", "2"], &out, &old)),
        1,
        "the manifest is generation 1, older than the generation 2 asked for",
    );
    assert!(!old.exists());
    let mut one = paracrypt();
    one.args(["decrypt", "-k", k, "--min-generation", "2"])
        .arg(out.join("x.pcr"));
    fails(run(one), 2, "--min-generation checks a tree's manifest");

    // Another tree put in its place is not the one this host last wrote there either.
    let other = d.join("other");
    ok(run(encrypt(&["-k", k], &plain, &other)));
    std::fs::write(
        out.join("paracrypt-manifest"),
        std::fs::read(other.join("paracrypt-manifest")).unwrap(),
    )
    .unwrap();
    fails(
        run(on(&state, update(&["-k", k], &plain, &out))),
        1,
        "not the tree this host last wrote there",
    );
    // The newest generation back: the update goes on.
    std::fs::write(out.join("paracrypt-manifest"), &second).unwrap();
    // (x.pcr is the old one it put back: sealed again.)
    assert_eq!(
        counts(&ok_stderr(on(&state, update(&["-k", k], &plain, &out)))),
        (1, 2, 0)
    );
}

/// A backup host that holds no identity keeps a tree to recipients up to date from its own
/// record of what it wrote; only the identity holder reads it. Another host (or a lost record)
/// encrypts every file again, and a record altered or moved is refused.
#[test]
fn a_host_without_the_identity_updates_a_tree_to_recipients() {
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let plain = small_tree(d);
    let (owner, recipient) = x25519(d, "owner.key");
    let id = owner.to_str().unwrap();
    let out = d.join("out");
    let to = ["--format", "age", "-r", recipient.as_str()];
    ok(run(on(&state, encrypt(&to, &plain, &out))));
    let before = snapshot(&out);
    write(&plain, "x", &data(70_001, 10));

    assert_eq!(
        counts(&ok_stderr(on(&state, update(&to, &plain, &out)))),
        (1, 2, 0)
    );
    let after = snapshot(&out);
    assert!(after[&b"a/b/z.age"[..]] == before[&b"a/b/z.age"[..]]);
    assert!(after[&b"x.age"[..]] != before[&b"x.age"[..]]);
    let back = d.join("back");
    ok(run(decrypt(&["-i", id], &out, &back)));
    assert!(snapshot(&back) == snapshot(&plain));
    if crate::people::have_age() {
        let mut age = Command::new("age");
        age.args(["-d", "-i", id]).arg(out.join("x.age"));
        assert_eq!(ok(run(age)), data(70_001, 10));
    }
    // With the identity too, this host's record is what the update keeps from.
    let with_id = [&to[..], &["-i", id]].concat();
    assert_eq!(
        counts(&ok_stderr(on(&state, update(&with_id, &plain, &out)))),
        (0, 3, 0)
    );

    // Another host, without a record of this tree: every file again, nothing lost.
    let elsewhere = d.join("elsewhere");
    assert_eq!(
        counts(&ok_stderr(on(&elsewhere, update(&to, &plain, &out)))),
        (3, 0, 0)
    );
    let back = d.join("back-2");
    ok(run(decrypt(&["-i", id], &out, &back)));
    assert!(snapshot(&back) == snapshot(&plain));

    // The first host's record no longer matches the manifest there: every file again.
    assert_eq!(
        counts(&ok_stderr(on(&state, update(&to, &plain, &out)))),
        (3, 0, 0)
    );

    // A record altered, or another output's record put in its place, is refused.
    let records: Vec<_> = std::fs::read_dir(state.join("trees"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    let mut bytes = std::fs::read(&records[0]).unwrap();
    let last = bytes.len() - 40;
    bytes[last] ^= 1;
    std::fs::write(&records[0], &bytes).unwrap();
    fails(
        run(on(&state, update(&to, &plain, &out))),
        2,
        "was altered, or was written with another host's key",
    );
    let second = d.join("out-2");
    ok(run(on(&elsewhere, encrypt(&to, &plain, &second))));
    let theirs: Vec<_> = std::fs::read_dir(elsewhere.join("trees"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let moved = theirs
        .iter()
        .find(|p| p.file_name() != records[0].file_name())
        .unwrap();
    let copy = elsewhere
        .join("trees")
        .join(records[0].file_name().unwrap());
    std::fs::copy(moved, &copy).unwrap();
    fails(
        run(on(&elsewhere, update(&to, &plain, &out))),
        2,
        "describes another output",
    );
}
