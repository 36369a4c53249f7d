//! `encrypt --recursive --update` (issue #35): an interrupted run leaves a manifest of the files
//! done (a checkpoint) from which `--update` goes on to the tree one run makes; an update seals
//! only what is missing or changed (size and time, or `--checksum`), removes what is gone, and
//! writes the next generation; an old manifest put back is not trusted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::container::keygen;
use crate::tree::{
    decrypt, encrypt, small_tree, snapshot, temporaries, terminate_after_first, without_override,
};

pub(crate) fn update(args: &[&str], input: &Path, output: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--recursive", "--update"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    cmd
}

/// What an update says it did: `(encrypted, unchanged, removed)`.
#[track_caller]
pub(crate) fn counts(stderr: &str) -> (u64, u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" unchanged, "))
        .unwrap_or_else(|| panic!("no count in {stderr}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

pub(crate) fn ok_stderr(cmd: Command) -> String {
    let out = run(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    stderr
}

fn verified(k: &str, tree: &Path) {
    let mut cmd = paracrypt();
    cmd.args(["verify", "--recursive", "-k", k]).arg(tree);
    ok(run(cmd));
}

#[test]
fn an_interrupted_run_goes_on_with_update_to_the_tree_one_run_makes() {
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    for i in 0..100 {
        write(&plain, &format!("f{i:02}"), &data(128 << 10, i));
    }
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    // 16-byte chunks: a run of about a second, stopped once its first checkpoint is written.
    let slow = ["-k", k, "-j", "2", "--chunk-size", "16"];
    let status = terminate_after_first(encrypt(&slow, &plain, &sealed), &sealed, b"-manifest");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(temporaries(&sealed).is_empty());
    let mut info = paracrypt();
    info.args(["info", "--recursive", "--json", "-k", k])
        .arg(&sealed);
    let json: serde_json::Value = serde_json::from_slice(&ok(run(info))).unwrap();
    assert_eq!(json["complete"], false);
    let listed = json["files"].as_u64().unwrap();
    assert!((1..100).contains(&listed), "{listed} files");

    // Run again without --update: refused, pointing at it.
    fails(run(encrypt(&slow, &plain, &sealed)), 2, "use --update");
    let stderr = ok_stderr(update(&slow, &plain, &sealed));
    let (sealed_now, unchanged, removed) = counts(&stderr);
    assert_eq!((sealed_now + unchanged, removed), (100, 0), "{stderr}");
    assert_eq!(unchanged, listed, "{stderr}");
    verified(k, &sealed);
    let back = d.join("back");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

#[test]
fn update_seals_only_what_changed_and_removes_what_is_gone() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let first = std::fs::read(sealed.join("paracrypt-manifest")).unwrap();
    let z_before = std::fs::read(sealed.join("a/b/z.pcr")).unwrap();
    let x_before = std::fs::read(sealed.join("x.pcr")).unwrap();
    // Nothing changed: nothing sealed, the next generation written.
    assert_eq!(
        counts(&ok_stderr(update(&["-k", k], &plain, &sealed))),
        (0, 3, 0)
    );

    // One file changed (same size), one removed, one added.
    write(&plain, "x", &data(70_000, 10));
    std::fs::remove_file(plain.join("a/y")).unwrap();
    write(&plain.join("a"), "new", b"new file");
    assert_eq!(
        counts(&ok_stderr(update(&["-k", k], &plain, &sealed))),
        (2, 1, 1)
    );
    assert_eq!(std::fs::read(sealed.join("a/b/z.pcr")).unwrap(), z_before);
    assert_ne!(std::fs::read(sealed.join("x.pcr")).unwrap(), x_before);
    assert!(!sealed.join("a/y.pcr").exists());
    verified(k, &sealed);
    let back = d.join("back");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));
    let mut info = paracrypt();
    info.args(["info", "--recursive", "--json", "-k", k])
        .arg(&sealed);
    let json: serde_json::Value = serde_json::from_slice(&ok(run(info))).unwrap();
    assert_eq!(json["generation"], 3);

    // A time changed, the contents not: size and time seal the file again, --checksum keeps it
    // (and lists its new time).
    let z = plain.join("a/b/z");
    let set_time = |seconds: u64| {
        std::fs::File::options()
            .write(true)
            .open(&z)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
            .unwrap();
    };
    set_time(1_000_000);
    assert_eq!(
        counts(&ok_stderr(update(&["-k", k], &plain, &sealed))),
        (1, 2, 0)
    );
    let z_sealed = std::fs::read(sealed.join("a/b/z.pcr")).unwrap();
    assert_ne!(z_sealed, z_before);
    set_time(2_000_000);
    let checksum = ["-k", k, "--checksum"];
    assert_eq!(
        counts(&ok_stderr(update(&checksum, &plain, &sealed))),
        (0, 3, 0)
    );
    assert_eq!(std::fs::read(sealed.join("a/b/z.pcr")).unwrap(), z_sealed);
    verified(k, &sealed);
    let back = d.join("back-2");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));

    // The first manifest put back: its files are not the ones stored, which verify names, and
    // an update from it trusts none of them.
    std::fs::write(sealed.join("paracrypt-manifest"), first).unwrap();
    let mut check = paracrypt();
    check.args(["verify", "--recursive", "-k", k]).arg(&sealed);
    let out = run(check);
    assert_eq!(out.status.code(), Some(1));
    let lines = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(lines.contains("removed: a/y"), "{lines}");
    assert!(
        lines.contains("changed: x: its encrypted file x.pcr is not the one"),
        "{lines}"
    );
    assert!(
        lines.contains("changed: a/b/z: its encrypted file"),
        "{lines}"
    );
    // Nor does an update: the host that wrote the newest generation refuses generation 1 put back
    // (tree_trust.rs has the rest of this attack).
    fails(
        run(update(&["-k", k], &plain, &sealed)),
        1,
        "generation 1 of the tree, older than the generation",
    );
}

#[test]
fn a_file_denied_is_done_by_the_next_update() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    let locked = plain.join("a/b/z");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let cmd = without_override(encrypt(&["-k", k], &plain, &sealed));
    fails(run(cmd), 6, "a/b/z: cannot open it: Permission denied");
    let cmd = without_override(update(&["-k", k], &plain, &sealed));
    let stderr = fails(run(cmd), 6, "a/b/z: cannot open it: Permission denied");
    assert_eq!(counts(&stderr), (0, 2, 0));
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        counts(&ok_stderr(update(&["-k", k], &plain, &sealed))),
        (1, 2, 0)
    );
    verified(k, &sealed);
}

/// A file that changed and then fails (it cannot be read) keeps its previous encrypted version,
/// listed in the new manifest as it was: an update that fails on a file never loses the tree's
/// only copy of it (it used to remove it as gone). The next update seals the new contents.
#[test]
fn a_changed_file_that_fails_keeps_its_previous_version() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let locked = plain.join("a/b/z");
    let old = std::fs::read(&locked).unwrap();
    std::fs::write(&locked, b"changed since").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let cmd = without_override(update(&["-k", k], &plain, &sealed));
    let stderr = fails(run(cmd), 6, "a/b/z: cannot open it: Permission denied");
    assert_eq!(counts(&stderr), (0, 2, 0));
    let mut one = paracrypt();
    one.args(["decrypt", "-k", k]).arg(sealed.join("a/b/z.pcr"));
    assert_eq!(ok(run(one)), old);
    // The tree (marked incomplete) decrypts with the previous version.
    let back = d.join("back");
    fails(
        run(decrypt(&["-k", k], &sealed, &back)),
        6,
        "the encrypted tree is incomplete",
    );
    assert_eq!(std::fs::read(back.join("a/b/z")).unwrap(), old);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        counts(&ok_stderr(update(&["-k", k], &plain, &sealed))),
        (1, 2, 0)
    );
    verified(k, &sealed);
    let mut one = paracrypt();
    one.args(["decrypt", "-k", k]).arg(sealed.join("a/b/z.pcr"));
    assert_eq!(ok(run(one)), b"changed since");
}

#[test]
fn what_update_cannot_keep_is_refused_before_anything_is_written() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let before = snapshot(&sealed);
    fails(
        run(update(&["-k", k, "--hide-names"], &plain, &sealed)),
        2,
        "cannot update: the tree keeps its names",
    );
    let wrong = keygen(d, "wrong");
    fails(
        run(update(&["-k", wrong.to_str().unwrap()], &plain, &sealed)),
        1,
        "paracrypt-manifest",
    );
    assert_eq!(snapshot(&sealed), before);
    // No tree there yet: --update writes it whole.
    let fresh = d.join("fresh");
    assert_eq!(
        counts(&ok_stderr(update(&["-k", k], &plain, &fresh))),
        (3, 0, 0)
    );
    verified(k, &fresh);
}

/// A password tree with hidden names: an update keeps its tree key and its name key, so that
/// the files kept still open and every stored name is where the new manifest says.
#[test]
fn an_update_keeps_a_password_trees_key_and_hidden_names() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let sealed = d.join("sealed");
    let with_password = |mut cmd: Command| {
        cmd.env("PARACRYPT_PASSWORD", "correct horse");
        cmd
    };
    ok(run(with_password(encrypt(
        &["--hide-names"],
        &plain,
        &sealed,
    ))));
    write(&plain, "x", &data(70_001, 3));
    let stderr = ok_stderr(with_password(update(&[], &plain, &sealed)));
    assert_eq!(counts(&stderr), (1, 2, 0), "{stderr}");
    let mut check = with_password(paracrypt());
    check.args(["verify", "--recursive"]).arg(&sealed);
    ok(run(check));
    let back = d.join("back");
    ok(run(with_password(decrypt(&[], &sealed, &back))));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// A tree encrypted to recipients is brought up to date with the identity that opens its
/// manifest (`-i`): only the changed file is encrypted again (to `-r`), the others are kept
/// byte for byte; without `-i` the update is refused before anything is written, naming `-i`;
/// the updated tree decrypts whole, and its age files open with `age -d -i` too.
#[test]
fn a_tree_to_recipients_is_updated_with_the_identity_that_opens_it() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let id = d.join("id.txt");
    let mut keygen = paracrypt();
    keygen.args(["keygen", "--kind", "x25519", "-o"]).arg(&id);
    ok(run(keygen));
    let text = std::fs::read_to_string(&id).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .expect("the identity's public key")
        .to_owned();
    let i = id.to_str().unwrap();
    let sealed = d.join("sealed");
    let to = ["--format", "age", "-r", recipient.as_str()];
    ok(run(encrypt(&to, &plain, &sealed)));
    let before = snapshot(&sealed);
    write(&plain, "x", &data(70_001, 10));

    let with_id = [&to[..], &["-i", i]].concat();
    let stderr = ok_stderr(update(&with_id, &plain, &sealed));
    assert_eq!(counts(&stderr), (1, 2, 0), "{stderr}");
    let after = snapshot(&sealed);
    assert!(after[&b"a/b/z.age"[..]] == before[&b"a/b/z.age"[..]]);
    assert!(after[&b"x.age"[..]] != before[&b"x.age"[..]]);
    let back = d.join("back");
    ok(run(decrypt(&["-i", i], &sealed, &back)));
    assert!(snapshot(&back) == snapshot(&plain));
    if crate::people::have_age() {
        let mut age = Command::new("age");
        age.args(["-d", "-i", i]).arg(sealed.join("x.age"));
        assert_eq!(ok(run(age)), data(70_001, 10));
    }
}

/// The encrypted tree's `d` replaced by a link to a directory outside it (`elsewhere`), and
/// its source `d` removed: the update, removing what is gone, removes nothing where the link
/// leads (it used to remove `elsewhere/x.pcr`), and names the link.
#[test]
fn an_update_removes_no_file_through_a_directory_replaced_by_a_link() {
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::create_dir_all(plain.join("d")).unwrap();
    write(&plain, "keep", b"kept");
    write(&plain.join("d"), "x", b"gone");
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    std::fs::remove_dir_all(plain.join("d")).unwrap();
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    write(&elsewhere, "x.pcr", b"not the tree's");
    std::fs::remove_dir_all(sealed.join("d")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, sealed.join("d")).unwrap();

    let out = run(update(&["-k", k], &plain, &sealed));
    assert_eq!(
        std::fs::read(elsewhere.join("x.pcr")).unwrap(),
        b"not the tree's"
    );
    fails(
        out,
        6,
        "d is a symbolic link: nothing is written or removed through a link",
    );
}

/// A directory gone from the tree (`d/e`) whose parent in the encrypted tree was replaced by a
/// link: the update does not remove the directory of that name where the link leads.
#[test]
fn an_update_removes_no_directory_through_a_directory_replaced_by_a_link() {
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::create_dir_all(plain.join("d/e")).unwrap();
    write(&plain, "keep", b"kept");
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    std::fs::remove_dir_all(plain.join("d")).unwrap();
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("e")).unwrap();
    std::fs::remove_dir_all(sealed.join("d")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, sealed.join("d")).unwrap();

    let out = run(update(&["-k", k], &plain, &sealed));
    assert!(elsewhere.join("e").is_dir());
    fails(
        out,
        6,
        "d is a symbolic link: nothing is written or removed through a link",
    );
}
