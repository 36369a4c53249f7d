//! `sign --recursive` and `verify --recursive -s` (issue #35): one signature over a plaintext
//! tree, written beside it; the check names every file added, removed, renamed or changed, and
//! any file alone.

use std::path::Path;

use crate::common::*;
use crate::signed::signing_key;
use crate::tree::small_tree;

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_signed_plaintext_tree_names_what_changed_since() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (key, public) = signing_key(d, "ed25519", "me");
    let (_, stranger) = signing_key(d, "ed25519", "stranger");
    // `DIR/` signs DIR, beside it.
    let mut cmd = paracrypt();
    cmd.args(["sign", "--recursive", "-k", s(&key)])
        .arg(format!("{}/", s(&plain)));
    ok(run(cmd));
    let sig = d.join("small.psig");
    assert!(sig.is_file());
    let verify = |args: &[&str]| {
        let mut cmd = paracrypt();
        cmd.args(["verify", "--recursive", "-s", s(&sig)])
            .args(args)
            .arg(&plain);
        cmd
    };
    let out = String::from_utf8(ok(run(verify(&["--public", s(&public)])))).unwrap();
    assert!(
        out.contains("OK (3 files") && out.contains("good signature"),
        "{out}"
    );
    fails(run(verify(&["--public", s(&stranger)])), 5, "");
    // One file changed (the same size), one moved: each named, exit 1.
    let mut x = std::fs::read(plain.join("x")).unwrap();
    x[100] ^= 1;
    std::fs::write(plain.join("x"), x).unwrap();
    std::fs::rename(plain.join("a/b/z"), plain.join("z moved")).unwrap();
    let out = run(verify(&["--public", s(&public)]));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    fails(out, 1, "2 differences from its signed manifest");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "renamed: a/b/z (the same contents are now at z moved)",
            "changed: x: its contents are not those signed",
        ]
    );
    // A file alone; a signature inside the tree is refused.
    let mut one = verify(&["--public", s(&public)]);
    one.arg("a/y");
    ok(run(one));
    let mut inside = paracrypt();
    inside
        .args(["sign", "--recursive", "-k", s(&key), "-o"])
        .arg(plain.join("sig.psig"))
        .arg(&plain);
    fails(run(inside), 2, "inside the tree");
    assert!(!plain.join("sig.psig").exists());
}
