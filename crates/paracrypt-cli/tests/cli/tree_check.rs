//! `verify --recursive` and `info --recursive` (issue #35): an encrypted tree checked against
//! its manifest, every file added, removed, renamed or changed named on a line of its own, one
//! file checked alone, the manifest's signer required; the manifest summarised as text and
//! JSON. Trees are a few files, so that the suite stays fast.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;
use crate::container::keygen;
use crate::sigfiles::s;
use crate::signed::signing_key;
use crate::tree::{encrypt, small_tree};

fn verify(args: &[&str], tree: &Path, paths: &[&str]) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["verify", "--recursive"])
        .args(args)
        .arg(tree)
        .args(paths);
    cmd
}

/// stdout's lines.
fn lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Asserts the exit status and returns stdout's lines.
#[track_caller]
fn exits(out: Output, code: i32) -> Vec<String> {
    let (status, stderr) = status_and_stderr(&out);
    assert_eq!(status, code, "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    lines(&out)
}

#[test]
fn verify_names_every_file_added_removed_renamed_or_changed() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let whole = exits(run(verify(&["-k", k], &sealed, &[])), 0);
    assert_eq!(whole.len(), 1, "{whole:?}");
    assert!(
        whole[0].ends_with(
            ": OK (3 files, 1118576 bytes, every file as its manifest lists it, nothing else)"
        ),
        "{whole:?}"
    );

    // One file renamed, one removed, one damaged, one added.
    std::fs::rename(sealed.join("x.pcr"), sealed.join("moved.pcr")).unwrap();
    std::fs::remove_file(sealed.join("a/y.pcr")).unwrap();
    let z = sealed.join("a/b/z.pcr");
    let mut bytes = std::fs::read(&z).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 1;
    std::fs::write(&z, bytes).unwrap();
    write(&sealed.join("a"), "new.pcr", b"not an encrypted file");
    // A directory added is named once, not with everything in it.
    std::fs::create_dir_all(sealed.join("new dir/inner")).unwrap();
    write(&sealed.join("new dir/inner"), "f.pcr", b"");
    let out = run(verify(&["-k", k], &sealed, &[]));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.contains("5 differences from its manifest"),
        "{stderr}"
    );
    assert_eq!(
        exits(out, 1),
        [
            "changed: a/b/z: chunk 0 failed authentication (damaged, reordered or from another file)",
            "added: a/new.pcr (in the encrypted tree, not in its manifest)",
            "removed: a/y (its encrypted file is missing)",
            "added: new dir (in the encrypted tree, not in its manifest)",
            "renamed: x (its encrypted file is now at moved.pcr)",
        ]
    );

    // One file checked alone: only it is named.
    assert_eq!(
        exits(run(verify(&["-k", k], &sealed, &["a/y"])), 1),
        ["removed: a/y (its encrypted file is missing)"]
    );
    std::fs::rename(sealed.join("moved.pcr"), sealed.join("x.pcr")).unwrap();
    let alone = exits(run(verify(&["-k", k], &sealed, &["x"])), 0);
    assert!(
        alone[0].ends_with(": OK (1 file, 70000 bytes, as its manifest lists it)"),
        "{alone:?}"
    );
    fails(
        run(verify(&["-k", k], &sealed, &["a/l"])),
        2,
        "a/l: not a regular file of the tree's manifest",
    );
    fails(
        run(verify(&["-k", k], &sealed, &["nothing"])),
        2,
        "nothing: not a regular file of the tree's manifest",
    );
}

#[test]
fn verify_names_a_swap_and_a_copy_by_whose_encryption_each_name_holds() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k, "--hide-names"], &plain, &sealed)));
    exits(run(verify(&["-k", k], &sealed, &[])), 0);
    // With hidden names the stored names come from the manifest.
    let json: serde_json::Value =
        serde_json::from_slice(&ok(run(info(&["-k", k, "--json"], &sealed)))).unwrap();
    let stored = |path: &str| {
        json["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == path)
            .unwrap()["stored_as"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (x, y) = (stored("x"), stored("a/y"));
    let (xp, yp) = (sealed.join(&x), sealed.join(&y));
    let swap = d.join("swap");
    std::fs::rename(&xp, &swap).unwrap();
    std::fs::rename(&yp, &xp).unwrap();
    std::fs::rename(&swap, &yp).unwrap();
    let fan = Path::new(&x).parent().unwrap().to_str().unwrap();
    std::fs::copy(&xp, sealed.join(fan).join("copy.pcr")).unwrap();
    // Sorted by path: a stored name (hidden, random) among the tree's paths.
    let mut found = exits(run(verify(&["-k", k], &sealed, &[])), 1);
    found.sort();
    assert_eq!(
        found,
        [
            format!("added: {fan}/copy.pcr (in the encrypted tree, not in its manifest)"),
            format!("changed: a/y: its encrypted file {y} holds the encryption of x"),
            format!("changed: x: its encrypted file {x} holds the encryption of a/y"),
        ]
    );
}

#[test]
fn verify_requires_the_signer_asked_for_and_spots_a_replayed_manifest() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let (signer, public) = signing_key(d, "ed25519", "signer");
    let (_, other) = signing_key(d, "ed25519", "other");
    let signed = d.join("signed");
    ok(run(encrypt(
        &["-k", k, "--sign", s(&signer)],
        &plain,
        &signed,
    )));
    let good = exits(
        run(verify(&["-k", k, "--public", s(&public)], &signed, &[])),
        0,
    );
    assert!(
        good[0].contains("good signature: the manifest is signed by ed25519"),
        "{good:?}"
    );
    let noted = exits(run(verify(&["-k", k], &signed, &[])), 0);
    assert!(
        noted[0].contains("not checked against a key you trust"),
        "{noted:?}"
    );
    fails(
        run(verify(&["-k", k, "--verify-with", s(&other)], &signed, &[])),
        5,
        "signed by",
    );
    let unsigned = d.join("unsigned");
    ok(run(encrypt(&["-k", k], &plain, &unsigned)));
    fails(
        run(verify(&["-k", k, "--public", s(&public)], &unsigned, &[])),
        5,
        "not signed",
    );

    // The tree encrypted again over itself, and the old manifest put back: every file is
    // another encryption than the one it lists.
    let old = std::fs::read(unsigned.join("paracrypt-manifest")).unwrap();
    ok(run(encrypt(&["-k", k, "--force"], &plain, &unsigned)));
    std::fs::write(unsigned.join("paracrypt-manifest"), old).unwrap();
    let replayed = exits(run(verify(&["-k", k], &unsigned, &[])), 1);
    assert_eq!(replayed.len(), 3, "{replayed:?}");
    assert!(
        replayed[0].starts_with(
            "changed: a/b/z: its encrypted file a/b/z.pcr is not the one the manifest lists"
        ),
        "{replayed:?}"
    );
    // A wrong key opens nothing.
    let wrong = keygen(d, "wrong");
    fails(
        run(verify(&["-k", s(&wrong)], &signed, &[])),
        1,
        "paracrypt-manifest",
    );
}

fn info(args: &[&str], tree: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["info", "--recursive"]).args(args).arg(tree);
    cmd
}

#[test]
fn info_summarises_the_manifest_as_text_and_json() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let text = String::from_utf8(ok(run(info(&["-k", k], &sealed)))).unwrap();
    for line in [
        "format:      paracrypt\n",
        "names:       kept\n",
        "signed by:   nobody (unsigned)\n",
        "complete:    yes\n",
        "entries:     3 directories, 3 files (1118576 bytes), 1 links\n",
        " a/l -> ../x\n",
        "      1048576 ",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    assert_eq!(text.lines().count(), 9 + 7, "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&ok(run(info(&["-k", k, "--json"], &sealed)))).unwrap();
    assert_eq!(json["files"], 3);
    assert_eq!(json["links"], 1);
    assert_eq!(json["complete"], true);
    assert_eq!(json["generation"], 1);
    let entries = json["entries"].as_array().unwrap();
    let z = entries.iter().find(|e| e["path"] == "a/b/z").unwrap();
    assert_eq!(z["kind"], "file");
    assert_eq!(z["size"], 1 << 20);
    assert_eq!(z["stored_as"], "a/b/z.pcr");
    assert_eq!(z["blake3_tree_root"].as_str().unwrap().len(), 64);
    let l = entries.iter().find(|e| e["path"] == "a/l").unwrap();
    assert_eq!(
        (&l["kind"], &l["target"]),
        (&"symlink".into(), &"../x".into())
    );

    fails(
        run(info(&["-k", s(&keygen(d, "wrong"))], &sealed)),
        1,
        "paracrypt-manifest",
    );
    let mut keyed = paracrypt();
    keyed.args(["info", "-k", k]).arg(sealed.join("x.pcr"));
    fails(run(keyed), 2, "-k, --password-file and -i need --recursive");
}
