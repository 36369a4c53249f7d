//! Whole directory trees (`--recursive`, issue #35), end to end: every secret kind and format
//! round trips a tree with its modes, times, links and odd names; each encrypted file opens
//! alone with the one-file commands and with `age`; refusals come before any output; a file
//! that fails is named and the others are complete; an interrupt leaves no temporary file.
//! Trees are kept small (a few dozen files) so that the suite stays fast.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::container::keygen;
use crate::people::x25519;
use crate::signed::signing_key;

/// What a tree holds, as `cp -a` keeps it: each path's kind, mode, modification time (to the
/// nanosecond), and a file's bytes or a link's target.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Dir {
        mode: u32,
        mtime: (i64, i64),
    },
    File {
        mode: u32,
        mtime: (i64, i64),
        bytes: Vec<u8>,
    },
    Link {
        target: PathBuf,
    },
}

/// Every entry under `root`, by path (the root itself as the empty path).
pub(crate) fn snapshot(root: &Path) -> BTreeMap<Vec<u8>, Node> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<Vec<u8>, Node>) {
        let at = root.join(rel);
        let meta = std::fs::symlink_metadata(&at).unwrap();
        let mode = meta.mode() & 0o7777;
        let mtime = (meta.mtime(), meta.mtime_nsec());
        let key = rel.as_os_str().as_bytes().to_vec();
        if meta.file_type().is_symlink() {
            out.insert(
                key,
                Node::Link {
                    target: std::fs::read_link(&at).unwrap(),
                },
            );
        } else if meta.is_dir() {
            out.insert(key, Node::Dir { mode, mtime });
            for entry in std::fs::read_dir(&at).unwrap() {
                walk(root, &rel.join(entry.unwrap().file_name()), out);
            }
        } else {
            out.insert(
                key,
                Node::File {
                    mode,
                    mtime,
                    bytes: std::fs::read(&at).unwrap(),
                },
            );
        }
    }
    walk(root, Path::new(""), &mut out);
    out
}

/// Every path under `root` whose name is a temporary file's.
pub(crate) fn temporaries(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(listing) = std::fs::read_dir(root) {
        for entry in listing {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(".paracrypt-") {
                found.push(path.clone());
            }
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                found.extend(temporaries(&path));
            }
        }
    }
    found
}

/// Sets the modification time of `path` itself (a link too).
fn touch(path: &Path, seconds: i64, nanos: i64) {
    let times = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: seconds,
            tv_nsec: nanos,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: seconds,
            tv_nsec: nanos,
        },
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        path,
        &times,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// A small tree with what `cp -a` keeps: nested and empty directories, an empty file, files
/// around the chunk size, a file of several tasks, odd names (a space, a newline, bytes that
/// are not UTF-8), modes (an executable, a private file, a read-only directory) and times to the
/// nanosecond, and links (relative, dangling, absolute out of the tree). Returns its root.
fn sample_tree(dir: &Path) -> PathBuf {
    let root = dir.join("plain");
    let sub = root.join("sub dir/deeper");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(root.join("empty dir")).unwrap();
    write(&root, "empty", b"");
    write(&root, "one chunk", &data(4096, 1));
    write(&sub, "chunk and one", &data(4097, 2));
    write(&root, "several tasks", &data(3 << 20, 3));
    let odd = root.join(OsStr::from_bytes(b"new\nline \xff"));
    std::fs::write(&odd, data(100, 4)).unwrap();
    let exe = write(&root.join("sub dir"), "run.sh", b"#!/bin/sh\necho hi\n");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let private = write(&sub, "private", &data(10, 5));
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("sub dir/run.sh", root.join("link to run")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("sub dir/dangling")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join("outside")).unwrap();
    touch(&private, 1_000_000_000, 123_456_789);
    touch(&root.join("outside"), 1_100_000_000, 5);
    touch(&sub, 1_200_000_000, 999_999_999);
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).unwrap();
    touch(&root.join("empty dir"), 1_300_000_000, 1);
    root
}

pub(crate) fn encrypt(args: &[&str], input: &Path, output: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--recursive", "-q"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    cmd
}

pub(crate) fn decrypt(args: &[&str], input: &Path, output: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--recursive", "-q"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    cmd
}

/// The regular files under `root`, relative to it.
pub(crate) fn files(root: &Path) -> Vec<PathBuf> {
    snapshot(root)
        .into_iter()
        .filter(|(_, node)| matches!(node, Node::File { .. }))
        .map(|(path, _)| PathBuf::from(OsStr::from_bytes(&path)))
        .collect()
}

#[test]
fn a_tree_round_trips_with_its_modes_times_links_and_names_at_1_and_3_threads() {
    let dir = scratch();
    let d = dir.path();
    let plain = sample_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    for threads in ["1", "3"] {
        let sealed = d.join(format!("sealed-{threads}"));
        let back = d.join(format!("back-{threads}"));
        ok(run(encrypt(
            &["-k", k, "-j", threads, "--chunk-size", "64KiB"],
            &plain,
            &sealed,
        )));
        // Each file at its path with the suffix; links and nothing else only in the manifest.
        let mut stored = files(&sealed);
        stored.sort();
        let mut expected: Vec<PathBuf> = files(&plain)
            .into_iter()
            .map(|p| {
                let mut name = p.into_os_string();
                name.push(".pcr");
                PathBuf::from(name)
            })
            .chain([PathBuf::from("paracrypt-manifest")])
            .collect();
        expected.sort();
        assert_eq!(stored, expected);
        assert!(!sealed.join("link to run").exists());
        ok(run(decrypt(&["-k", k, "-j", threads], &sealed, &back)));
        let (want, got) = (snapshot(&plain), snapshot(&back));
        // The top directory's time moves as the tree is made: compared as the rest are.
        assert_eq!(got, want, "-j{threads}");
        assert!(temporaries(&sealed).is_empty() && temporaries(&back).is_empty());
        // Every encrypted file opens alone with the one-file command.
        let mut one = paracrypt();
        one.args(["decrypt", "-k", k])
            .arg(sealed.join("sub dir/deeper/chunk and one.pcr"));
        assert_eq!(ok(run(one)), data(4097, 2));
    }
    // Made writable again so that the scratch directory can be removed.
    for root in ["plain", "back-1", "back-3"] {
        let sub = d.join(root).join("sub dir/deeper");
        std::fs::set_permissions(sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// A tree of a few files of every size class, for the secret kinds.
pub(crate) fn small_tree(dir: &Path) -> PathBuf {
    let root = dir.join("small");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    write(&root, "x", &data(70_000, 9));
    write(&root.join("a"), "y", b"");
    write(&root.join("a/b"), "z", &data(1 << 20, 8));
    std::os::unix::fs::symlink("../x", root.join("a/l")).unwrap();
    root
}

#[test]
fn progress_of_a_tree_into_a_log_is_plain_lines_ending_with_done() {
    let dir = scratch();
    let d = dir.path();
    let plain = sample_tree(d);
    let key = keygen(d, "key");
    let log = d.join("log");
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--recursive", "--progress", "-k"])
        .arg(&key)
        .arg(&plain)
        .arg("-o")
        .arg(d.join("sealed"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    assert!(cmd.status().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("done: ") && last.contains(" bytes ("),
        "{text}"
    );
    assert!(
        text.lines()
            .filter(|l| !l.starts_with("paracrypt: "))
            .all(|l| l.starts_with("encrypting: ") || l.starts_with("done: ")),
        "{text}"
    );
}

#[test]
fn every_secret_kind_and_format_round_trips_and_each_file_opens_alone() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let (identity, recipient) = x25519(d, "me.key");
    let identity = identity.to_str().unwrap().to_owned();
    let password = write(d, "pw", b"correct horse\n");
    let pw = password.to_str().unwrap().to_owned();
    let cases: Vec<(&str, Vec<&str>, Vec<&str>, &str)> = vec![
        (
            "password",
            vec!["--password-file", &pw],
            vec!["--password-file", &pw],
            ".pcr",
        ),
        (
            "recipients",
            vec!["-r", &recipient],
            vec!["-i", &identity],
            ".pcr",
        ),
        (
            "age",
            vec!["--format", "age", "-r", &recipient],
            vec!["-i", &identity],
            ".age",
        ),
        (
            "age armor",
            vec!["--format", "age", "--armor", "-r", &recipient],
            vec!["-i", &identity],
            ".age",
        ),
        (
            "age passphrase",
            vec!["--format", "age", "--passphrase", "--password-file", &pw],
            vec!["--password-file", &pw],
            ".age",
        ),
    ];
    for (name, seal, open, suffix) in cases {
        let sealed = d.join(format!("sealed {name}"));
        let back = d.join(format!("back {name}"));
        ok(run(encrypt(&seal, &plain, &sealed)));
        assert!(sealed.join(format!("a/b/z{suffix}")).is_file(), "{name}");
        ok(run(decrypt(&open, &sealed, &back)));
        assert_eq!(snapshot(&back), snapshot(&plain), "{name}");
        // To recipients, every file opens alone with their identity; with a password the
        // tree's own key seals them, and the password opens the manifest only.
        let mut one = paracrypt();
        one.arg("decrypt")
            .args(&open)
            .arg(sealed.join(format!("x{suffix}")));
        let out = run(one);
        if name.contains("passphrase") || name == "password" {
            assert!(!out.status.success(), "{name}");
        } else {
            assert_eq!(ok(out), data(70_000, 9), "{name}");
        }
        if suffix == ".age" && !name.contains("passphrase") && have("age", "--version") {
            let mut age = Command::new("age");
            age.args(["-d", "-i", &identity])
                .arg(sealed.join(format!("a/b/z{suffix}")));
            assert_eq!(ok(run(age)), data(1 << 20, 8), "age -d reads {name}");
        }
    }
}

#[test]
fn a_signed_tree_is_checked_against_its_signer() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let (signer, public) = signing_key(d, "ed25519", "me");
    let (_, stranger) = signing_key(d, "ed25519", "stranger");
    let sealed = d.join("sealed");
    ok(run(encrypt(
        &["-k", k, "--sign", signer.to_str().unwrap()],
        &plain,
        &sealed,
    )));
    // Every file is a signed container too.
    let mut info = paracrypt();
    info.arg("info").arg(sealed.join("x.pcr"));
    let text = String::from_utf8(ok(run(info))).unwrap();
    assert!(text.contains("signed by:"), "{text}");

    let back = d.join("back");
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--recursive", "-k", k, "--verify-with"])
        .arg(&public)
        .arg(&sealed)
        .arg("-o")
        .arg(&back);
    let out = run(cmd);
    let (_, stderr) = status_and_stderr(&out);
    ok(out);
    assert!(
        stderr.contains("good signature: the tree's manifest is signed by ed25519"),
        "{stderr}"
    );
    assert_eq!(snapshot(&back), snapshot(&plain));

    let other = d.join("other");
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--recursive", "-k", k, "--verify-with"])
        .arg(&stranger)
        .arg(&sealed)
        .arg("-o")
        .arg(&other);
    fails(run(cmd), 5, "signed by another key");
    assert!(!other.exists());
    // An unsigned tree, when a signer is required.
    let unsigned = d.join("unsigned");
    ok(run(encrypt(&["-k", k], &plain, &unsigned)));
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--recursive", "-k", k, "--verify-with"])
        .arg(&public)
        .arg(&unsigned)
        .arg("-o")
        .arg(&other);
    fails(run(cmd), 5, "not signed");
    assert!(!other.exists());
}

#[test]
fn refusals_come_before_any_output() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let out = d.join("out");

    // A FIFO in the tree, named; nothing made.
    let fifo = plain.join("a/pipe");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    fails(run(encrypt(&["-k", k], &plain, &out)), 2, "a/pipe: a FIFO");
    assert!(!out.exists());
    std::fs::remove_file(&fifo).unwrap();

    // An output that holds files, without --force; the output inside the input.
    std::fs::create_dir(&out).unwrap();
    write(&out, "keep", b"mine");
    fails(
        run(encrypt(&["-k", k], &plain, &out)),
        2,
        "is not empty: use --update",
    );
    assert_eq!(listing(&out), ["keep"]);
    fails(
        run(encrypt(&["-k", k], &plain, &plain.join("a/enc"))),
        2,
        "is inside the input",
    );
    assert!(!plain.join("a/enc").exists());
    // A file, not a directory; no INPUT; stdout.
    fails(
        run(encrypt(&["-k", k], &plain.join("x"), &d.join("o2"))),
        2,
        "not a directory",
    );
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--recursive", "-k", k, "-o"])
        .arg(&out);
    fails(run(cmd), 2, "--recursive needs INPUT");
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--recursive", "-k", k]).arg(&plain);
    fails(run(cmd), 2, "--recursive needs -o OUTPUT");
    // One file's options a tree does not take.
    fails(
        run(decrypt(
            &["-k", k, "--range", "0:10"],
            &plain,
            &d.join("o3"),
        )),
        2,
        "--range reads one file",
    );
    // With --force, written into, the other file left alone.
    ok(run(encrypt(&["-k", k, "--force"], &plain, &out)));
    assert_eq!(std::fs::read(out.join("keep")).unwrap(), b"mine");
    // Decrypting needs a tree; a wrong key reads no file.
    let back = d.join("back");
    fails(
        run(decrypt(&["-k", k], &plain, &back)),
        1,
        "has no manifest: it is not an encrypted tree, or the run that began it stopped before \
         its first checkpoint (`encrypt --recursive --update` finishes it",
    );
    let other = keygen(d, "other");
    fails(
        run(decrypt(&["-k", other.to_str().unwrap()], &out, &back)),
        1,
        "paracrypt-manifest: wrong key",
    );
    assert!(!back.exists());
}

/// Runs `cmd` as root would without its power to read anything (a permission-denied test that
/// means something as root too).
pub(crate) fn without_override(cmd: Command) -> Command {
    if !std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        return cmd;
    }
    let mut wrapped = Command::new("setpriv");
    wrapped
        .arg("--bounding-set=-dac_override,-dac_read_search")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    wrapped
}

#[test]
fn a_file_that_fails_is_named_and_every_other_file_is_complete() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let locked = plain.join("a/b/z");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    for named in [false, true] {
        let sealed = d.join(format!("sealed-{named}"));
        let mut cmd = without_override(encrypt(&["-k", k, "-j", "2"], &plain, &sealed));
        if named {
            cmd.env("PARACRYPT_NO_TMPFILE", "1");
        }
        let stderr = fails(run(cmd), 6, "a/b/z: cannot open it: Permission denied");
        assert!(stderr.contains("2 files done and complete"), "{stderr}");
        assert!(!sealed.join("a/b/z.pcr").exists());
        assert!(
            temporaries(&sealed).is_empty(),
            "{:?}",
            temporaries(&sealed)
        );
        // The manifest lists the files done; decrypting says the tree is not whole.
        let back = d.join(format!("back-{named}"));
        let stderr = fails(run(decrypt(&["-k", k], &sealed, &back)), 6, "incomplete");
        assert!(!stderr.contains("a/b/z"), "{stderr}");
        assert_eq!(std::fs::read(back.join("x")).unwrap(), data(70_000, 9));
        assert!(!back.join("a/b/z").exists());
    }
    // Nothing can be read: nothing is left, and the status is the failure's own.
    for name in ["x", "a/y"] {
        std::fs::set_permissions(plain.join(name), std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    let none = d.join("none");
    fails(
        run(without_override(encrypt(&["-k", k], &plain, &none))),
        1,
        "Permission denied",
    );
    assert!(!none.exists());
}

#[test]
fn swapped_or_missing_files_are_refused_and_named() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    // Two files of the tree swapped: each opens under the key, neither is where it belongs.
    let (x, y) = (sealed.join("x.pcr"), sealed.join("a/y.pcr"));
    let swap = d.join("swap");
    std::fs::rename(&x, &swap).unwrap();
    std::fs::rename(&y, &x).unwrap();
    std::fs::rename(&swap, &y).unwrap();
    let back = d.join("back");
    let stderr = fails(
        run(decrypt(&["-k", k], &sealed, &back)),
        6,
        "x: its encrypted file x.pcr is not the one the manifest lists",
    );
    assert!(
        stderr.contains("a/y: its encrypted file a/y.pcr is not the one"),
        "{stderr}"
    );
    assert!(!back.join("x").exists() && !back.join("a/y").exists());
    assert_eq!(std::fs::read(back.join("a/b/z")).unwrap(), data(1 << 20, 8));
    assert!(temporaries(&back).is_empty());

    // Swapped back, and one dropped: named as missing, the others complete.
    std::fs::rename(&x, &swap).unwrap();
    std::fs::rename(&y, &x).unwrap();
    std::fs::rename(&swap, &y).unwrap();
    std::fs::remove_file(sealed.join("a/b/z.pcr")).unwrap();
    let dropped = d.join("dropped");
    let stderr = fails(
        run(decrypt(&["-k", k], &sealed, &dropped)),
        6,
        "a/b/z: its encrypted file a/b/z.pcr is missing",
    );
    assert!(!dropped.join("a/b/z").exists(), "{stderr}");
    assert_eq!(std::fs::read(dropped.join("x")).unwrap(), data(70_000, 9));
}

#[test]
fn an_old_manifest_does_not_open_newer_files() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let old = std::fs::read(sealed.join("paracrypt-manifest")).unwrap();
    // The tree encrypted again into the same place (the same plaintext, fresh encryptions),
    // then its manifest replaced by the old one: every file is another encryption than the
    // one the old manifest lists, and each is named.
    ok(run(encrypt(&["-k", k, "--force"], &plain, &sealed)));
    std::fs::write(sealed.join("paracrypt-manifest"), &old).unwrap();
    let back = d.join("back");
    let stderr = fails(
        run(decrypt(&["-k", k], &sealed, &back)),
        1,
        "x: its encrypted file x.pcr is not the one the manifest lists",
    );
    for name in ["a/y", "a/b/z"] {
        assert!(
            stderr.contains(&format!("{name}: its encrypted file")),
            "{stderr}"
        );
    }
    // Nothing was done: nothing is left.
    assert!(!back.exists());
}

/// How many files (names ending with `suffix`) the run writing `root` has given their names
/// so far (read while it runs: the directory may not exist yet, and temporary files come and
/// go).
fn named_so_far(root: &Path, suffix: &[u8]) -> usize {
    std::fs::read_dir(root).map_or(0, |listing| {
        listing
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name())
            .filter(|name| !name.as_bytes().starts_with(b".paracrypt-"))
            .filter(|name| name.as_bytes().ends_with(suffix))
            .count()
    })
}

#[test]
fn an_interrupted_run_leaves_finished_files_complete_and_no_temporary_file() {
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    for i in 0..100 {
        write(&plain, &format!("f{i:02}"), &data(128 << 10, i));
    }
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    for named in [false, true] {
        let sealed = d.join(format!("sealed-{named}"));
        // 100 files in 16-byte chunks: a run long enough (about a second here) that the signal,
        // sent once the first file has its name, lands in its middle.
        let mut cmd = encrypt(&["-k", k, "-j", "2", "--chunk-size", "16"], &plain, &sealed);
        if named {
            cmd.env("PARACRYPT_NO_TMPFILE", "1");
        }
        let status = terminate_after_first(cmd, &sealed, b".pcr");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(15), "{status:?}");
        assert!(
            temporaries(&sealed).is_empty(),
            "{:?}",
            temporaries(&sealed)
        );
        // The files done, and a checkpoint's manifest (see tree_update.rs).
        let done: Vec<PathBuf> = files(&sealed)
            .into_iter()
            .filter(|f| f != Path::new("paracrypt-manifest"))
            .collect();
        assert!(!done.is_empty() && done.len() < 100, "{} files", done.len());
        for file in done {
            let mut one = paracrypt();
            one.args(["decrypt", "-k", k]).arg(sealed.join(&file));
            let name = file.to_str().unwrap().trim_end_matches(".pcr");
            let i: u8 = name[1..].parse().unwrap();
            assert_eq!(ok(run(one)), data(128 << 10, i), "{name}");
        }
    }
    // Decrypting, interrupted likewise: the files done are whole, nothing else is there.
    let sealed = d.join("whole");
    ok(run(encrypt(
        &["-k", k, "--chunk-size", "16"],
        &plain,
        &sealed,
    )));
    for named in [false, true] {
        let back = d.join(format!("back-{named}"));
        let mut cmd = decrypt(&["-k", k, "-j", "2"], &sealed, &back);
        if named {
            cmd.env("PARACRYPT_NO_TMPFILE", "1");
        }
        let status = terminate_after_first(cmd, &back, b"");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(15), "{status:?}");
        assert!(temporaries(&back).is_empty(), "{:?}", temporaries(&back));
        let done = files(&back);
        assert!(!done.is_empty() && done.len() < 100, "{} files", done.len());
        for file in done {
            let i: u8 = file.to_str().unwrap()[1..].parse().unwrap();
            assert_eq!(std::fs::read(back.join(&file)).unwrap(), data(128 << 10, i));
        }
    }
}

/// Runs `cmd` and sends it SIGTERM as soon as the first file whose name ends with `suffix`
/// (and is not a temporary file) is in `out`; returns how it ended.
pub(crate) fn terminate_after_first(
    mut cmd: Command,
    out: &Path,
    suffix: &[u8],
) -> std::process::ExitStatus {
    let mut child = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while named_so_far(out, suffix) == 0 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(2));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    child.wait().unwrap()
}

#[test]
fn hidden_names_keep_names_directories_and_links_only_in_the_manifest() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k, "--hide-names"], &plain, &sealed)));
    // Three files under opaque names in fan-out directories; no name, directory or link of
    // the tree shows.
    let stored = files(&sealed);
    assert_eq!(stored.len(), 4, "{stored:?}");
    for path in &stored {
        let shown = path.to_str().unwrap();
        if shown == "paracrypt-manifest" {
            continue;
        }
        let (fan, name) = shown.split_once('/').unwrap();
        assert!(
            fan.len() == 2 && name.len() == 30 + 4 && name.ends_with(".pcr"),
            "{shown}"
        );
        assert!(!shown.contains("x.") && !shown.contains("z."), "{shown}");
    }
    assert!(!sealed.join("a").exists());
    let back = d.join("back");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));
    // --hide-names is for encrypting a tree.
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--hide-names", "-k", k])
        .arg(plain.join("x"));
    fails(run(cmd), 2, "--recursive");
}

#[test]
fn a_damaged_file_is_named_and_nothing_of_it_is_written() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    // 64 KiB chunks: the 1 MiB file is 16 chunks, cut into several tasks of the schedule.
    ok(run(encrypt(
        &["-k", k, "--chunk-size", "64KiB"],
        &plain,
        &sealed,
    )));
    let z = sealed.join("a/b/z.pcr");
    let mut bytes = std::fs::read(&z).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&z, &bytes).unwrap();
    for threads in ["1", "2"] {
        let back = d.join(format!("back-{threads}"));
        let stderr = fails(
            run(decrypt(&["-k", k, "-j", threads], &sealed, &back)),
            6,
            "a/b/z: ",
        );
        assert_eq!(
            stderr.lines().filter(|l| l.contains("error")).count(),
            1,
            "{stderr}"
        );
        assert!(!back.join("a/b/z").exists());
        assert!(temporaries(&back).is_empty());
        assert_eq!(std::fs::read(back.join("x")).unwrap(), data(70_000, 9));
    }
}

/// A key holder (any recipient of a tree to recipients) can seal other contents under a file's
/// own header, which then matches the manifest's header hash: the plaintext's tree-hash root
/// in the manifest is what refuses it. Made here with the test-only fixed salt, which gives
/// the same header for the same key.
#[cfg(feature = "test-hooks")]
#[test]
fn other_contents_under_a_files_own_header_are_refused() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let x = sealed.join("x.pcr");
    let original = std::fs::read(&x).unwrap();
    // Version 1: magic, version, suite, kdf, chunk size, Argon2 fields, then the salt.
    let salt: String = original[28..60]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let other = write(d, "other", &data(70_000, 10));
    let mut forge = paracrypt();
    forge
        .args(["encrypt", "-q", "-k", k, "--fixed-salt", &salt, "-f"])
        .arg(&other)
        .arg("-o")
        .arg(&x);
    ok(run(forge));
    let forged = std::fs::read(&x).unwrap();
    assert_eq!(forged[..116], original[..116], "the same header");
    assert_ne!(forged, original);
    let back = d.join("back");
    let stderr = fails(
        run(decrypt(&["-k", k], &sealed, &back)),
        6,
        "x: its encrypted file x.pcr does not decrypt to the contents the manifest lists",
    );
    assert!(!back.join("x").exists(), "{stderr}");
    assert!(temporaries(&back).is_empty());
}

#[test]
fn only_a_directory_named_as_the_manifest_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    std::fs::create_dir(plain.join("paracrypt-manifest")).unwrap();
    let sealed = d.join("sealed");
    fails(
        run(encrypt(&["-k", k], &plain, &sealed)),
        2,
        "may not be named paracrypt-manifest",
    );
    assert!(!sealed.exists());
    // A file of that name is stored as any other (with its suffix), and comes back.
    std::fs::remove_dir(plain.join("paracrypt-manifest")).unwrap();
    write(&plain, "paracrypt-manifest", b"not the manifest");
    ok(run(encrypt(&["-k", k], &plain, &sealed)));
    let back = d.join("back");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// A file `x` beside a directory `x.pcr` would both be stored as `x.pcr`: refused before
/// anything is written, on one line naming both and `--hide-names` (exit 2), here and across
/// ranks; with `--hide-names` the tree round trips.
#[test]
fn a_file_and_a_directory_of_its_stored_name_are_refused_with_the_way_out() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    std::fs::create_dir(plain.join("a/x.pcr")).unwrap();
    write(&plain.join("a/x.pcr"), "y", b"beside x");
    write(&plain.join("a"), "x", b"x");
    let says = format!(
        "{} and the directory {} would both be stored as a/x.pcr",
        plain.join("a/x").display(),
        plain.join("a/x.pcr").display()
    );
    let sealed = d.join("sealed");
    let stderr = fails(run(encrypt(&["-k", k], &plain, &sealed)), 2, &says);
    assert!(stderr.contains("use --hide-names"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!sealed.exists());
    #[cfg(feature = "mpi")]
    if crate::distributed::with_mpi::have_mpirun() {
        let args: Vec<&OsStr> = vec![
            "encrypt".as_ref(),
            "--recursive".as_ref(),
            "-q".as_ref(),
            "-k".as_ref(),
            k.as_ref(),
            plain.as_os_str(),
            "-o".as_ref(),
            sealed.as_os_str(),
        ];
        let out = crate::distributed::with_mpi::mpirun_with(2, args, |_| {});
        let stderr = fails(out, 2, &says);
        assert!(stderr.contains("use --hide-names"), "{stderr}");
        assert!(!sealed.exists());
    }
    ok(run(encrypt(&["-k", k, "--hide-names"], &plain, &sealed)));
    let back = d.join("back");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// A manifest that cannot be written (here a directory holds its name in the output) leaves
/// the files done complete and says the tree was done in part, naming the manifest.
#[test]
fn a_manifest_that_cannot_be_written_is_a_tree_done_in_part() {
    let dir = scratch();
    let d = dir.path();
    let plain = small_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    std::fs::create_dir_all(sealed.join("paracrypt-manifest/in the way")).unwrap();
    let stderr = fails(
        run(encrypt(&["-k", k, "--force"], &plain, &sealed)),
        6,
        "paracrypt-manifest: cannot write",
    );
    assert!(stderr.contains("3 files done and complete"), "{stderr}");
    assert!(temporaries(&sealed).is_empty());
    let mut one = paracrypt();
    one.args(["decrypt", "-k", k]).arg(sealed.join("x.pcr"));
    assert_eq!(ok(run(one)), data(70_000, 9));
}
