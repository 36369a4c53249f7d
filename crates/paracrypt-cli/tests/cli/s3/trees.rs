//! Encrypted trees under a prefix (`--recursive` with `s3://bucket/prefix/`, issue #35): a
//! local tree encrypted into a prefix decrypts back to the same tree, verifies and shows its
//! manifest from there; an existing prefix is refused without `--force`; a tampered object is
//! named and nothing of it is written; a file past one part goes up as a multipart upload, which
//! a failed part or an interrupt aborts. An encrypted tree, local or in a prefix, decrypts into a
//! prefix too, and the plaintext objects of a prefix encrypt as a tree. Every run leaves no multipart upload behind. Trees are
//! a few files; one file is just past 8 MiB (the smallest part) so that the multipart path runs.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Action, Bucket, Proxy, Server};
use crate::common::*;
use crate::container::keygen;
use crate::people::x25519;
use crate::signed::signing_key;
use crate::tree::{snapshot, temporaries};

/// `paracrypt OP --recursive -q ARGS INPUT -o OUTPUT` against the shared server.
fn tree_cmd(server: &Server, op: &str, args: &[&str], input: &str, output: &str) -> Command {
    let mut cmd = server.client();
    cmd.args([op, "--recursive", "-q"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    cmd
}

/// A small tree of UTF-8 names (object keys are UTF-8): nested and empty directories, an
/// empty file, a file of several chunks, a mode and times, links; with `large`, a file just
/// past one part (8 MiB), which goes up as a multipart upload.
fn tree(dir: &Path, large: bool) -> PathBuf {
    let root = dir.join("plain");
    std::fs::create_dir_all(root.join("sub dir/deeper")).unwrap();
    std::fs::create_dir_all(root.join("empty dir")).unwrap();
    write(&root, "empty", b"");
    write(&root, "x", &data(70_000, 9));
    let exe = write(&root.join("sub dir"), "run.sh", b"#!/bin/sh\necho hi\n");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(&root.join("sub dir/deeper"), "z", &data(300_000, 8));
    if large {
        write(&root, "large", &data((8 << 20) + 5, 7));
    }
    std::os::unix::fs::symlink("sub dir/run.sh", root.join("link to run")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("sub dir/dangling")).unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::new(1_200_000_000, 5);
    std::fs::File::options()
        .write(true)
        .open(&exe)
        .unwrap()
        .set_modified(old)
        .unwrap();
    root
}

/// The object keys under `prefix` in `bucket`, relative to it, sorted.
fn keys(bucket: &Bucket<'_>, prefix: &str) -> Vec<String> {
    let mut keys: Vec<String> = bucket
        .objects()
        .into_iter()
        .filter_map(|k| k.strip_prefix(prefix).map(str::to_owned))
        .collect();
    keys.sort();
    keys
}

/// Local → prefix → local gives the same tree (modes, times, links as the manifest keeps
/// them), with a key file in the container format and a file uploaded in parts; the prefix
/// holds one object per file and the manifest, nothing else; `verify` and `info` read it
/// there.
#[test]
fn a_tree_round_trips_through_a_prefix() {
    let server = Server::shared();
    let bucket = server.bucket("tree-roundtrip");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let prefix = bucket.url("trees/one/");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "-j", "2", "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        &prefix,
    )));
    assert_eq!(
        keys(&bucket, "trees/one/"),
        [
            "empty.pcr",
            "large.pcr",
            "paracrypt-manifest",
            "sub dir/deeper/z.pcr",
            "sub dir/run.sh.pcr",
            "x.pcr",
        ]
    );
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    // Each object is the file the one-file command opens.
    let mut one = server.client();
    one.args(["decrypt", "-k", k, &bucket.url("trees/one/large.pcr")]);
    assert!(ok(run(one)) == data((8 << 20) + 5, 7));

    for threads in ["1", "2"] {
        let back = d.join(format!("back-{threads}"));
        ok(run(tree_cmd(
            server,
            "decrypt",
            &["-k", k, "-j", threads],
            &prefix,
            back.to_str().unwrap(),
        )));
        assert_eq!(snapshot(&back), snapshot(&plain), "-j{threads}");
        assert!(temporaries(&back).is_empty());
    }

    let mut verify = server.client();
    verify.args(["verify", "--recursive", "-k", k, &prefix]);
    let out = String::from_utf8(ok(run(verify))).unwrap();
    assert!(out.contains(&format!("{prefix}: OK (5 files")), "{out}");
    let mut info = server.client();
    info.args(["info", "--recursive", "-k", k, &prefix]);
    let out = String::from_utf8(ok(run(info))).unwrap();
    assert!(out.contains("sub dir/deeper/z"), "{out}");
    assert!(out.contains("link to run -> sub dir/run.sh"), "{out}");
}

/// Age files to a recipient with hidden names (the objects' names say nothing), and a tree to
/// a recipient with a signed manifest (decrypted with its signer required): both decrypt back
/// to the tree.
#[test]
fn age_hidden_names_and_signed_trees_round_trip() {
    let server = Server::shared();
    let bucket = server.bucket("tree-age");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, false);
    let (identity, recipient) = x25519(d, "me.key");
    let identity = identity.to_str().unwrap().to_owned();
    let (signer, public) = signing_key(d, "ed25519", "me");
    let signer = signer.to_str().unwrap().to_owned();
    let cases: [(&str, Vec<&str>); 2] = [
        (
            "age/",
            vec!["--format", "age", "-r", &recipient, "--hide-names"],
        ),
        ("signed/", vec!["-r", &recipient, "--sign", &signer]),
    ];
    for (at, seal) in cases {
        let prefix = bucket.url(at);
        ok(run(tree_cmd(
            server,
            "encrypt",
            &seal,
            plain.to_str().unwrap(),
            &prefix,
        )));
        let stored = keys(&bucket, at);
        assert_eq!(stored.len(), 5, "{stored:?}");
        if at == "age/" {
            assert!(
                stored
                    .iter()
                    .all(|k| k == "paracrypt-manifest" || !k.contains("run") && !k.contains("sub")),
                "{stored:?}"
            );
        }
        let back = d.join(format!("back-{}", at.trim_end_matches('/')));
        let mut cmd = tree_cmd(
            server,
            "decrypt",
            &["-i", &identity],
            &prefix,
            back.to_str().unwrap(),
        );
        cmd.arg("--verify-with").arg(&public);
        if at == "age/" {
            // An unsigned tree, a signer required: refused.
            fails(run(cmd), 5, "not signed");
            assert!(!back.exists());
            let cmd = tree_cmd(
                server,
                "decrypt",
                &["-i", &identity],
                &prefix,
                back.to_str().unwrap(),
            );
            ok(run(cmd));
        } else {
            ok(run(cmd));
        }
        assert_eq!(snapshot(&back), snapshot(&plain), "{at}");
    }
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
}

/// A prefix that holds objects is refused before anything is written (its objects stay as they
/// were), and written into with `--force`.
#[test]
fn an_existing_prefix_is_refused_without_force() {
    let server = Server::shared();
    let bucket = server.bucket("tree-exists");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, false);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let other = write(d, "other", b"someone else's");
    bucket.put("p/theirs", &other);
    let prefix = bucket.url("p/");
    let stderr = fails(
        run(tree_cmd(
            server,
            "encrypt",
            &["-k", k],
            plain.to_str().unwrap(),
            &prefix,
        )),
        2,
        "is not empty",
    );
    assert!(stderr.contains("--force"), "{stderr}");
    bucket.holds_only(&["p/theirs"]);
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--force"],
        plain.to_str().unwrap(),
        &prefix,
    )));
    assert!(keys(&bucket, "p/").contains(&"paracrypt-manifest".to_string()));
    assert_eq!(bucket.get("p/theirs"), b"someone else's");
}

/// The plaintext objects of `plain` (a tree without links) as a decryption into a prefix
/// writes them: every file at its path, nothing else.
#[track_caller]
fn holds_plaintext(bucket: &Bucket<'_>, prefix: &str, plain: &Path) {
    let mut want: Vec<String> = files_and_dirs(plain)
        .into_iter()
        .filter_map(|(rel, data, _)| data.map(|_| rel))
        .collect();
    want.sort();
    assert_eq!(keys(bucket, prefix), want, "objects under {prefix}");
    for rel in &want {
        assert!(
            bucket.get(&format!("{prefix}{rel}")) == std::fs::read(plain.join(rel)).unwrap(),
            "{prefix}{rel}"
        );
    }
}

/// An encrypted tree decrypts into a prefix, from a local directory and from a prefix, at one
/// thread and two, and an armored age tree too: one object per file (a file past one part uploaded in parts), its
/// plaintext, nothing else (no manifest, no directory); a link, which a prefix cannot hold, is
/// a failure that names it, the files all done (exit 6). A prefix that holds objects is
/// refused without `--force`, and a prefix inside the one read (or around it) always, before
/// anything is written; a tampered file is named and its object never appears.
#[test]
fn a_tree_decrypts_into_a_prefix() {
    let server = Server::shared();
    let bucket = server.bucket("tree-into");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();

    // With its links: every file is written, each link named.
    let sealed = d.join("sealed");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        sealed.to_str().unwrap(),
    )));
    let stderr = fails(
        run(tree_cmd(
            server,
            "decrypt",
            &["-k", k],
            sealed.to_str().unwrap(),
            &bucket.url("links/"),
        )),
        6,
        "link to run: cannot make the link",
    );
    assert!(stderr.contains("holds no symbolic links"), "{stderr}");
    assert!(stderr.contains("sub dir/dangling: "), "{stderr}");
    std::fs::remove_file(plain.join("link to run")).unwrap();
    std::fs::remove_file(plain.join("sub dir/dangling")).unwrap();
    holds_plaintext(&bucket, "links/", &plain);
    assert!(bucket.uploads().is_empty(), "multipart uploads left");

    // Without links, from a directory and from a prefix: whole, exit 0.
    let sealed = d.join("sealed-2");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        sealed.to_str().unwrap(),
    )));
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        &bucket.url("enc/"),
    )));
    for (from, threads, to) in [
        (sealed.to_str().unwrap().to_owned(), "2", "from-dir/"),
        (bucket.url("enc/"), "1", "from-prefix-1/"),
        (bucket.url("enc/"), "2", "from-prefix-2/"),
    ] {
        ok(run(tree_cmd(
            server,
            "decrypt",
            &["-k", k, "-j", threads],
            &from,
            &bucket.url(to),
        )));
        holds_plaintext(&bucket, to, &plain);
    }
    // An armored age tree, whose files are read in order: each object written as it streams
    // (the large one in parts), committed once checked.
    let (identity, recipient) = x25519(d, "me.key");
    let armored = d.join("armored");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-r", &recipient, "--format", "age", "--armor"],
        plain.to_str().unwrap(),
        armored.to_str().unwrap(),
    )));
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-i", identity.to_str().unwrap()],
        armored.to_str().unwrap(),
        &bucket.url("from-armor/"),
    )));
    holds_plaintext(&bucket, "from-armor/", &plain);
    assert!(bucket.uploads().is_empty(), "multipart uploads left");

    // A prefix that holds objects: refused, then written into with --force.
    let stderr = fails(
        run(tree_cmd(
            server,
            "decrypt",
            &["-k", k],
            &bucket.url("enc/"),
            &bucket.url("from-dir/"),
        )),
        2,
        "is not empty",
    );
    assert!(stderr.contains("--force"), "{stderr}");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-k", k, "--force"],
        &bucket.url("enc/"),
        &bucket.url("from-dir/"),
    )));
    holds_plaintext(&bucket, "from-dir/", &plain);
    // Into the prefix read, or one inside it or around it: refused, even with --force.
    for to in ["enc/", "enc/back/", ""] {
        fails(
            run(tree_cmd(
                server,
                "decrypt",
                &["-k", k, "--force"],
                &bucket.url("enc/"),
                &bucket.url(to),
            )),
            2,
            "overlap",
        );
    }

    // A tampered file: named, its object never written, the others are.
    bucket.damage("enc/sub dir/deeper/z.pcr", 200);
    let stderr = fails(
        run(tree_cmd(
            server,
            "decrypt",
            &["-k", k],
            &bucket.url("enc/"),
            &bucket.url("tampered/"),
        )),
        6,
        "sub dir/deeper/z: ",
    );
    assert!(!stderr.contains("x: "), "{stderr}");
    assert_eq!(
        keys(&bucket, "tampered/"),
        ["empty", "large", "sub dir/run.sh", "x"]
    );
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    // Nothing but what the runs wrote: no manifest, no object under enc/ added.
    assert_eq!(
        keys(&bucket, "enc/"),
        [
            "empty.pcr",
            "large.pcr",
            "paracrypt-manifest",
            "sub dir/deeper/z.pcr",
            "sub dir/run.sh.pcr",
            "x.pcr",
        ]
    );
}

/// Puts the regular files of `plain` as objects under `prefix` (each at its path), with the
/// server's own client: a plaintext tree in a prefix, as another tool leaves one.
fn put_tree(bucket: &Bucket<'_>, prefix: &str, plain: &Path) {
    let mut stack = vec![plain.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_symlink() {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(plain).unwrap().to_str().unwrap();
                bucket.put(&format!("{prefix}{rel}"), &path);
            }
        }
    }
}

/// The regular files of `root` by path, and its directories (a tree read from a prefix keeps
/// no links, modes or times of its own: mode 644 files, 755 directories).
fn files_and_dirs(root: &Path) -> Vec<(String, Option<Vec<u8>>, u32)> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o777;
            if meta.is_dir() {
                stack.push(path.clone());
                found.push((rel, None, mode));
            } else if meta.is_file() {
                found.push((rel, Some(std::fs::read(&path).unwrap()), mode));
            }
        }
    }
    found.sort();
    found
}

/// The plaintext objects of a prefix (as another tool leaves them) encrypt as a tree: into a
/// local directory and into a prefix, each object a file at its key's path (mode 644, the
/// directories its keys name, mode 755, a "folder" object among them), decrypting to those
/// files; `--update` from the
/// prefix encrypts only the object added; an output prefix that overlaps the input is refused,
/// and so is a plaintext prefix across MPI ranks, before any request.
#[test]
fn a_plaintext_tree_in_a_prefix_encrypts() {
    let server = Server::shared();
    let bucket = server.bucket("tree-from");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    for link in ["link to run", "sub dir/dangling"] {
        std::fs::remove_file(plain.join(link)).unwrap();
    }
    std::fs::remove_dir(plain.join("empty dir")).unwrap();
    put_tree(&bucket, "src/", &plain);
    // A console's "folder" (an empty object whose key ends with `/`) over objects: their
    // directory, not a file.
    bucket.put("src/sub dir/", &write(d, "nothing", b""));
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let want: Vec<(String, Option<Vec<u8>>, u32)> = files_and_dirs(&plain)
        .into_iter()
        .map(|(rel, data, _)| {
            let mode = if data.is_some() { 0o644 } else { 0o755 };
            (rel, data, mode)
        })
        .collect();

    // Into a local directory, then into a prefix; both decrypt to the objects' tree.
    let sealed = d.join("sealed");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB", "-j", "2"],
        &bucket.url("src/"),
        sealed.to_str().unwrap(),
    )));
    assert!(sealed.join("sub dir/deeper/z.pcr").is_file());
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        &bucket.url("src/"),
        &bucket.url("enc/"),
    )));
    assert_eq!(
        keys(&bucket, "enc/"),
        [
            "empty.pcr",
            "large.pcr",
            "paracrypt-manifest",
            "sub dir/deeper/z.pcr",
            "sub dir/run.sh.pcr",
            "x.pcr",
        ]
    );
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    for (from, back) in [
        (sealed.to_str().unwrap().to_owned(), "back-dir"),
        (bucket.url("enc/"), "back-prefix"),
    ] {
        let back = d.join(back);
        ok(run(tree_cmd(
            server,
            "decrypt",
            &["-k", k],
            &from,
            back.to_str().unwrap(),
        )));
        assert_eq!(files_and_dirs(&back), want, "{from}");
    }

    // An object added: the update encrypts it alone, then writes the manifest.
    let added = write(d, "added", b"one more object");
    bucket.put("src/sub dir/added.txt", &added);
    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let mut cmd = server.client_at(&proxy.url());
    cmd.args(["encrypt", "--recursive", "--update", "-q", "-k", k])
        .args(["--chunk-size", "64KiB"])
        .arg(bucket.url("src/"))
        .arg("-o")
        .arg(bucket.url("enc/"));
    ok(run(cmd));
    assert_eq!(
        writes(&proxy, &bucket, "enc/"),
        ["sub dir/added.txt.pcr", "paracrypt-manifest"]
    );
    let back = d.join("back-update");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-k", k],
        &bucket.url("enc/"),
        back.to_str().unwrap(),
    )));
    assert_eq!(
        std::fs::read(back.join("sub dir/added.txt")).unwrap(),
        b"one more object"
    );

    // Into the prefix read, or inside it: refused, nothing written.
    fails(
        run(tree_cmd(
            server,
            "encrypt",
            &["-k", k],
            &bucket.url("src/"),
            &bucket.url("src/enc/"),
        )),
        2,
        "overlap",
    );
    assert!(keys(&bucket, "src/enc/").is_empty());
}

/// Interrupted while the large file's parts go up into the output prefix: its multipart upload
/// is aborted, no object of it appears, and the small files done are whole.
#[test]
fn an_interrupted_decryption_into_a_prefix_leaves_no_object_of_its_file() {
    let server = Server::shared();
    let bucket = server.bucket("tree-into-stop");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        sealed.to_str().unwrap(),
    )));
    stop_while_parts_go_up(
        server,
        &bucket,
        &["decrypt", "-k", k],
        &sealed,
        &bucket.url("stopped/"),
        || true,
    );
    let left = keys(&bucket, "stopped/");
    assert!(!left.iter().any(|k| k == "large"), "{left:?}");
    for rel in &left {
        assert!(
            bucket.get(&format!("stopped/{rel}")) == std::fs::read(plain.join(rel)).unwrap(),
            "{rel}"
        );
    }
}

/// A tampered object is named on decryption and nothing of its file is written; the other
/// files are complete. A tree of that one file leaves nothing at OUTPUT at all.
#[test]
fn a_tampered_object_is_named_and_nothing_of_it_is_written() {
    let server = Server::shared();
    let bucket = server.bucket("tree-tamper");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, false);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let prefix = bucket.url("t/");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        &prefix,
    )));
    bucket.damage("t/sub dir/deeper/z.pcr", 150_000);
    let back = d.join("back");
    let stderr = fails(
        run(tree_cmd(
            server,
            "decrypt",
            &["-k", k],
            &prefix,
            back.to_str().unwrap(),
        )),
        6,
        "sub dir/deeper/z: ",
    );
    assert_eq!(
        stderr.lines().filter(|l| l.contains("error")).count(),
        1,
        "{stderr}"
    );
    assert!(!back.join("sub dir/deeper/z").exists());
    assert!(temporaries(&back).is_empty());
    assert_eq!(std::fs::read(back.join("x")).unwrap(), data(70_000, 9));

    let lone = d.join("lone");
    std::fs::create_dir(&lone).unwrap();
    write(&lone, "only", &data(200_000, 3));
    let prefix = bucket.url("lone/");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        lone.to_str().unwrap(),
        &prefix,
    )));
    bucket.damage("lone/only.pcr", 100_000);
    let back = d.join("back-lone");
    // Nothing done: the exit status of the failure (a damaged chunk).
    fails(
        run(tree_cmd(
            server,
            "decrypt",
            &["-k", k],
            &prefix,
            back.to_str().unwrap(),
        )),
        1,
        "only: chunk 1 failed authentication",
    );
    assert!(!back.exists(), "nothing at OUTPUT");
}

/// A part that fails fails its file alone (named; its upload aborted, no object), the other
/// files are complete and the manifest lists them; a run interrupted mid-upload (SIGTERM)
/// aborts the upload and leaves its last checkpoint: a manifest marked incomplete that lists
/// files done, from which `--update` uploads only the rest. Neither leaves a multipart upload.
#[test]
fn a_failed_or_interrupted_upload_leaves_no_object_of_its_file() {
    let server = Server::shared();
    let bucket = server.bucket("tree-faults");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();

    // The large file's second part fails (no retry).
    let proxy = Proxy::start(server.port, |r| {
        if r.is_part() && r.target.contains("partNumber=2&") {
            Action::Fail
        } else {
            Action::Forward
        }
    });
    let mut cmd = server.client_at(&proxy.url());
    cmd.args(["--retries", "0", "encrypt", "--recursive", "-q", "-k", k])
        .args(["--chunk-size", "64KiB", "-j", "2"])
        .arg(&plain)
        .arg("-o")
        .arg(bucket.url("failed/"));
    let stderr = fails(run(cmd), 6, "large: ");
    assert!(stderr.contains("cannot write s3://"), "{stderr}");
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    assert_eq!(
        keys(&bucket, "failed/"),
        [
            "empty.pcr",
            "paracrypt-manifest",
            "sub dir/deeper/z.pcr",
            "sub dir/run.sh.pcr",
            "x.pcr",
        ]
    );

    // Interrupted while the large file's parts go up, slowly. The small files are done (and
    // the first checkpoint written after the first of them) long before the large file's two
    // parts, each held back 400 ms, one at a time.
    stop_while_parts_go_up(
        server,
        &bucket,
        &["encrypt", "-k", k, "--chunk-size", "64KiB"],
        &plain,
        &bucket.url("stopped/"),
        || keys(&bucket, "stopped/").contains(&"paracrypt-manifest".to_string()),
    );
    let left = keys(&bucket, "stopped/");
    assert!(!left.iter().any(|k| k == "large.pcr"), "{left:?}");
    let mut verify = server.client();
    verify.args(["verify", "--recursive", "-k", k, &bucket.url("stopped/")]);
    let out = run(verify);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("incomplete")
            || String::from_utf8_lossy(&out.stdout).contains("incomplete"),
        "{out:?}"
    );

    // The update uploads the large file and what the checkpoint does not list, not the
    // files it lists (at least the first one done).
    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let mut cmd = server.client_at(&proxy.url());
    cmd.args(["encrypt", "--recursive", "--update", "-q", "-k", k])
        .args(["--chunk-size", "64KiB"])
        .arg(&plain)
        .arg("-o")
        .arg(bucket.url("stopped/"));
    ok(run(cmd));
    let wrote = writes(&proxy, &bucket, "stopped/");
    assert!(wrote.contains(&"large.pcr".to_string()), "{wrote:?}");
    assert_eq!(wrote.last().map(String::as_str), Some("paracrypt-manifest"));
    let files = [
        "empty.pcr",
        "sub dir/deeper/z.pcr",
        "sub dir/run.sh.pcr",
        "x.pcr",
    ];
    assert!(
        files.iter().any(|f| !wrote.contains(&f.to_string())),
        "every file uploaded again: {wrote:?}"
    );
    let back = d.join("back-stopped");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-k", k],
        &bucket.url("stopped/"),
        back.to_str().unwrap(),
    )));
    assert_eq!(snapshot(&back), snapshot(&plain));
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
}

/// A plaintext tree in a prefix is signed (`sign --recursive … -o SIG`, required) and checked
/// against its signature (`verify --recursive -s`), whole and one file alone; an object changed
/// or added is named (exit 1). A local tree's signature checks its copy in a prefix (kinds,
/// sizes and contents, not modes or times). A signature inside the prefix is refused.
#[test]
fn a_plaintext_tree_in_a_prefix_is_signed_and_checked() {
    let server = Server::shared();
    let bucket = server.bucket("tree-signed");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, false);
    for link in ["link to run", "sub dir/dangling"] {
        std::fs::remove_file(plain.join(link)).unwrap();
    }
    std::fs::remove_dir(plain.join("empty dir")).unwrap();
    put_tree(&bucket, "src/", &plain);
    let (signer, public) = signing_key(d, "ed25519", "signer");
    let url = bucket.url("src/");
    let sign = |args: &[&str]| {
        let mut cmd = server.client();
        cmd.args(["sign", "--recursive", "-k"])
            .arg(&signer)
            .args(args)
            .arg(&url);
        run(cmd)
    };
    let verify = |sig: &Path, paths: &[&str]| {
        let mut cmd = server.client();
        cmd.args(["verify", "--recursive", "-s"])
            .arg(sig)
            .arg("--public")
            .arg(&public)
            .arg(&url)
            .args(paths);
        run(cmd)
    };
    fails(
        sign(&[]),
        2,
        "has no place beside it: name its file (-o SIG",
    );
    fails(
        sign(&["-o", &bucket.url("src/inside.psig")]),
        2,
        "would be inside the tree",
    );
    let sig = d.join("src.psig");
    ok(sign(&["-o", sig.to_str().unwrap()]));
    let out = String::from_utf8(ok(verify(&sig, &[]))).unwrap();
    assert!(out.contains(&format!("{url}: OK (4 files")), "{out}");
    assert!(out.contains("good signature by"), "{out}");
    let out = String::from_utf8(ok(verify(&sig, &["sub dir/deeper/z"]))).unwrap();
    assert!(out.contains("OK (1 file,"), "{out}");

    // The local tree's own signature checks its copy in the prefix.
    let mut cmd = server.client();
    cmd.args(["sign", "--recursive", "-k"])
        .arg(&signer)
        .arg(&plain);
    ok(run(cmd));
    let local = d.join("plain.psig");
    assert!(
        String::from_utf8(ok(verify(&local, &[])))
            .unwrap()
            .contains("OK (4 files")
    );

    // An object changed and one added: both named.
    bucket.put("src/x", &write(d, "other", &data(70_000, 1)));
    bucket.put("src/new", &write(d, "new", b"new"));
    let out = verify(&sig, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("changed: x: its contents are not those signed"),
        "{stdout}"
    );
    assert!(stdout.contains("added: new"), "{stdout}");
    assert!(!keys(&bucket, "src/").contains(&"inside.psig".to_string()));
}

/// `paracrypt rekey --recursive ARGS INPUT -o OUTPUT` against the shared server.
fn rekey_cmd(server: &Server, args: &[&str], input: &str, output: &str) -> Command {
    let mut cmd = server.client();
    cmd.args(["rekey", "--recursive"])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    cmd
}

/// Whether each object under `new` ends as the object of the same key under `old` does, past
/// its first `header` bytes (what a rekey copies as it is), with nothing else under either.
fn same_payloads(bucket: &Bucket<'_>, old: &str, new: &str, header: usize) -> bool {
    keys(bucket, old) == keys(bucket, new)
        && keys(bucket, old)
            .iter()
            .filter(|k| k.as_str() != "paracrypt-manifest")
            .all(|k| {
                let (was, now) = (
                    bucket.get(&format!("{old}{k}")),
                    bucket.get(&format!("{new}{k}")),
                );
                let tail = was.len().saturating_sub(header);
                now.len() >= tail && was[was.len() - tail..] == now[now.len() - tail..]
            })
}

/// A tree to recipients is rekeyed from a prefix into a prefix, from a prefix into a
/// directory and from a directory into a prefix, at one thread and two: each new tree opens
/// with the new identity only, back to the tree (links too: the manifest keeps them), every
/// file's payload copied as it was (a file past one part uploaded in parts), the old tree
/// unchanged, no multipart upload left. A password tree in a prefix is rekeyed to a new
/// password, its files byte for byte.
#[test]
fn a_tree_is_rekeyed_in_and_out_of_a_prefix() {
    let server = Server::shared();
    let bucket = server.bucket("tree-rekey");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let (alice, alice_to) = x25519(d, "alice.key");
    let (bob, bob_to) = x25519(d, "bob.key");
    let (alice, bob) = (alice.to_str().unwrap(), bob.to_str().unwrap());
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-r", &alice_to, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        &bucket.url("old/"),
    )));
    let old = keys(&bucket, "old/");
    let old_bytes: Vec<Vec<u8>> = old
        .iter()
        .map(|k| bucket.get(&format!("old/{k}")))
        .collect();
    let local = d.join("old-dir");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-r", &alice_to, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        local.to_str().unwrap(),
    )));
    let new_dir = d.join("new-dir");
    for (run_at, (from, to, threads)) in [
        (bucket.url("old/"), bucket.url("new-1/"), "1"),
        (bucket.url("old/"), bucket.url("new-2/"), "2"),
        (
            bucket.url("old/"),
            new_dir.to_str().unwrap().to_owned(),
            "2",
        ),
        (
            local.to_str().unwrap().to_owned(),
            bucket.url("from-dir/"),
            "2",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        ok(run(rekey_cmd(
            server,
            &["-i", alice, "-r", &bob_to, "-j", threads],
            &from,
            &to,
        )));
        let back = d.join(format!("back-{run_at}"));
        ok(run(tree_cmd(
            server,
            "decrypt",
            &["-i", bob],
            &to,
            back.to_str().unwrap(),
        )));
        assert_eq!(snapshot(&back), snapshot(&plain), "{from} -> {to}");
        fails(
            run(tree_cmd(
                server,
                "decrypt",
                &["-i", alice],
                &to,
                d.join("no").to_str().unwrap(),
            )),
            1,
            "",
        );
        assert!(!d.join("no").exists());
    }
    assert!(temporaries(&new_dir).is_empty());
    // The same objects, each with a new header and the same payload (headers are shorter than
    // 1 KiB); the old tree as it was.
    assert!(same_payloads(&bucket, "old/", "new-2/", 1024));
    assert!(
        old.iter()
            .zip(&old_bytes)
            .all(|(k, b)| bucket.get(&format!("old/{k}")) == *b),
        "the old tree changed"
    );
    assert!(bucket.uploads().is_empty(), "multipart uploads left");

    // A password tree: its files kept byte for byte, its manifest sealed again.
    let (old_pw, new_pw) = (
        write(d, "old.pw", b"old secret\n"),
        write(d, "new.pw", b"new one\n"),
    );
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["--password-file", old_pw.to_str().unwrap()],
        plain.to_str().unwrap(),
        &bucket.url("pw/"),
    )));
    ok(run(rekey_cmd(
        server,
        &[
            "--password-file",
            old_pw.to_str().unwrap(),
            "--passphrase",
            "--new-password-file",
            new_pw.to_str().unwrap(),
        ],
        &bucket.url("pw/"),
        &bucket.url("pw-new/"),
    )));
    assert!(same_payloads(&bucket, "pw/", "pw-new/", 0));
    let back = d.join("back-pw");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["--password-file", new_pw.to_str().unwrap()],
        &bucket.url("pw-new/"),
        back.to_str().unwrap(),
    )));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// What a rekey with a prefix refuses, before any secret is read and before anything is
/// written: an output prefix that holds objects (without `--force`), two prefixes that
/// overlap, a tree of a key file; a tree not as its manifest lists it (a file swapped for
/// another) is refused whole, naming the file. A rekey interrupted while a part goes up aborts
/// the upload, and leaves no object of that file.
#[test]
fn a_rekey_with_a_prefix_refuses_and_stops_cleanly() {
    let server = Server::shared();
    let bucket = server.bucket("tree-rekey-no");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let (alice, alice_to) = x25519(d, "alice.key");
    let (_, bob_to) = x25519(d, "bob.key");
    let alice = alice.to_str().unwrap();
    let to_bob = ["-i", alice, "-r", &bob_to];
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-r", &alice_to],
        plain.to_str().unwrap(),
        &bucket.url("t/"),
    )));
    let theirs = write(d, "theirs", b"someone else's");
    bucket.put("full/theirs", &theirs);
    let (t, full) = (bucket.url("t/"), bucket.url("full/"));
    let stderr = fails(
        run(rekey_cmd(server, &to_bob, &t, &full)),
        2,
        "is not empty",
    );
    assert!(stderr.contains("--force"), "{stderr}");
    fails(
        run(rekey_cmd(server, &to_bob, &t, &bucket.url("t/in/"))),
        2,
        "overlap",
    );
    let key = keygen(d, "key");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", key.to_str().unwrap()],
        plain.to_str().unwrap(),
        &bucket.url("keyed/"),
    )));
    // No old credential given: the refusal comes before it would be asked for.
    fails(
        run(rekey_cmd(
            server,
            &["-r", &bob_to],
            &bucket.url("keyed/"),
            &bucket.url("k2/"),
        )),
        1,
        "encrypted with a key file",
    );
    // Two files swapped: the tree is refused whole.
    let (x, z) = (bucket.get("t/x.pcr"), bucket.get("t/sub dir/deeper/z.pcr"));
    let swapped = d.join("swapped");
    std::fs::create_dir(&swapped).unwrap();
    bucket.put(
        "sw/paracrypt-manifest",
        &write(&swapped, "m", &bucket.get("t/paracrypt-manifest")),
    );
    bucket.put("sw/x.pcr", &write(&swapped, "x", &z));
    bucket.put("sw/sub dir/deeper/z.pcr", &write(&swapped, "z", &x));
    for rel in ["empty.pcr", "large.pcr", "sub dir/run.sh.pcr"] {
        let file = write(&swapped, "f", &bucket.get(&format!("t/{rel}")));
        bucket.put(&format!("sw/{rel}"), &file);
    }
    let stderr = fails(
        run(rekey_cmd(
            server,
            &to_bob,
            &bucket.url("sw/"),
            &bucket.url("sw-new/"),
        )),
        1,
        "x: ",
    );
    assert!(stderr.contains("sub dir/deeper/z: "), "{stderr}");
    let out = d.join("sw-local");
    fails(
        run(rekey_cmd(
            server,
            &to_bob,
            &bucket.url("sw/"),
            out.to_str().unwrap(),
        )),
        1,
        "is not the one the manifest lists",
    );
    assert!(!out.exists(), "nothing at OUTPUT");
    bucket.holds_only(&[
        "full/theirs",
        "keyed/empty.pcr",
        "keyed/large.pcr",
        "keyed/paracrypt-manifest",
        "keyed/sub dir/deeper/z.pcr",
        "keyed/sub dir/run.sh.pcr",
        "keyed/x.pcr",
        "sw/empty.pcr",
        "sw/large.pcr",
        "sw/paracrypt-manifest",
        "sw/sub dir/deeper/z.pcr",
        "sw/sub dir/run.sh.pcr",
        "sw/x.pcr",
        "t/empty.pcr",
        "t/large.pcr",
        "t/paracrypt-manifest",
        "t/sub dir/deeper/z.pcr",
        "t/sub dir/run.sh.pcr",
        "t/x.pcr",
    ]);

    // Interrupted while the large file's parts go up: no object of it, no upload left.
    let local = d.join("local");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-r", &alice_to],
        plain.to_str().unwrap(),
        local.to_str().unwrap(),
    )));
    stop_while_parts_go_up(
        server,
        &bucket,
        &["rekey", "-i", alice, "-r", &bob_to],
        &local,
        &bucket.url("stopped/"),
        || true,
    );
    assert!(!keys(&bucket, "stopped/").contains(&"large.pcr".to_string()));
}

/// Runs `paracrypt --upload-concurrency 1 OP --recursive ARGS INPUT -o OUTPUT` through a
/// proxy that holds each part back 400 ms, and sends it SIGTERM once a part has gone up and
/// `ready` says so: it dies of the signal (its handler aborts the upload first), leaving no
/// multipart upload.
fn stop_while_parts_go_up(
    server: &Server,
    bucket: &Bucket<'_>,
    op_args: &[&str],
    input: &Path,
    output: &str,
    ready: impl Fn() -> bool,
) {
    let proxy = Proxy::start(server.port, |r| {
        if r.is_part() {
            Action::Delay(Duration::from_millis(400))
        } else {
            Action::Forward
        }
    });
    let mut cmd = Command::new("env");
    cmd.arg("--default-signal=HUP,INT,TERM")
        .arg(env!("CARGO_BIN_EXE_paracrypt"));
    server.credentials(&mut cmd, &proxy.url());
    cmd.args(["--upload-concurrency", "1"])
        .args(&op_args[..1])
        .arg("--recursive")
        .args(&op_args[1..])
        .arg(input)
        .arg("-o")
        .arg(output);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !proxy.requests().iter().any(|(r, _)| r.is_part()) || !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no part went up, or not ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(bucket.uploads().len(), 1, "an upload in progress");
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
}

/// `--upload-concurrency` bounds a tree's parts in flight, not each file's: with one, four
/// large files written by four threads send one part at a time among them (each part's request
/// reaches the server only after the previous part was answered, which the proxy holds back
/// for a while), so the parts held in memory do not grow with the files open at once.
#[test]
fn the_upload_concurrency_bounds_the_whole_trees_parts() {
    let server = Server::shared();
    let bucket = server.bucket("tree-budget");
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    for i in 0..4 {
        // Two parts each: 8 MiB and a little more.
        write(&plain, &format!("f{i}"), &data((8 << 20) + 4096, i));
    }
    let key = keygen(d, "key");
    let hold = Duration::from_millis(250);
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Instant>>> = Default::default();
    let proxy = {
        let seen = seen.clone();
        Proxy::start(server.port, move |r| {
            if r.is_part() {
                seen.lock().unwrap().push(Instant::now());
                Action::Delay(hold)
            } else {
                Action::Forward
            }
        })
    };
    let mut cmd = server.client_at(&proxy.url());
    cmd.args(["--upload-concurrency", "1", "encrypt", "--recursive", "-q"])
        .args(["-k", key.to_str().unwrap(), "-j", "4"])
        .arg(&plain)
        .arg("-o")
        .arg(bucket.url("budget/"));
    ok(run(cmd));
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen.len(), 8, "{seen:?}");
    for pair in seen.windows(2) {
        assert!(
            pair[1] - pair[0] >= hold,
            "two parts in flight at once: {:?} apart",
            pair[1] - pair[0]
        );
    }
    let mut back = server.client();
    back.args(["decrypt", "--recursive", "-q", "-k", key.to_str().unwrap()])
        .arg(bucket.url("budget/"))
        .arg("-o")
        .arg(d.join("back"));
    ok(run(back));
    for i in 0..4 {
        assert_eq!(
            std::fs::read(d.join("back").join(format!("f{i}"))).unwrap(),
            data((8 << 20) + 4096, i)
        );
    }
}

/// What a run through `proxy` wrote in `bucket`, in order: the key (relative to `prefix`) of
/// each PUT (a whole object, or a multipart upload's completion), and `DELETE` for each request
/// that deletes objects (one or a batch: the keys are in its body).
fn writes(proxy: &Proxy, bucket: &Bucket<'_>, prefix: &str) -> Vec<String> {
    let mut writes = Vec::new();
    for (r, _) in proxy.requests() {
        let (path, query) = r.target.split_once('?').unwrap_or((&r.target, ""));
        if r.method == "DELETE" && !query.contains("uploadId=")
            || r.method == "POST" && path == format!("/{}", bucket.name) && query == "delete"
        {
            writes.push("DELETE".into());
            continue;
        }
        let Some((_, key)) = path.split_once(&format!("/{}/{prefix}", bucket.name)) else {
            continue;
        };
        let key = key.replace("%20", " ");
        match r.method.as_str() {
            "PUT" if !query.contains("partNumber=") => writes.push(key),
            "POST" if query.contains("uploadId=") => writes.push(key),
            _ => {}
        }
    }
    writes
}

/// `--update` of a tree in a prefix, as of a local one: after one file changed, one added and
/// one removed, only those two are uploaded and the removed one's object deleted, the new
/// manifest written last; the prefix decrypts to the new tree and verifies. With `--checksum`,
/// a file changed in place under the same size and time is found and uploaded again (without
/// it, kept). Nothing is left in progress.
#[test]
fn an_update_uploads_only_what_changed_and_deletes_what_is_gone() {
    let server = Server::shared();
    let bucket = server.bucket("tree-update");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, false);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let prefix = bucket.url("upd-tree/");
    let (p, pre) = (plain.to_str().unwrap(), "upd-tree/");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        p,
        &prefix,
    )));
    write(&plain, "x", &data(90_000, 4));
    write(&plain, "added", &data(10_000, 5));
    std::fs::remove_file(plain.join("sub dir/deeper/z")).unwrap();

    let update = |args: &[&str]| {
        let proxy = Proxy::start(server.port, |_| Action::Forward);
        let mut cmd = server.client_at(&proxy.url());
        cmd.args(["encrypt", "--recursive", "--update", "-q", "-k", k])
            .args(["--chunk-size", "64KiB"])
            .args(args)
            .arg(&plain)
            .arg("-o")
            .arg(&prefix);
        ok(run(cmd));
        writes(&proxy, &bucket, pre)
    };
    // The changed and added files (a checkpoint's manifest after the first, unless both were
    // done by then), then the removed one's object deleted, the manifest last.
    let mut wrote = update(&[]);
    let end = wrote.split_off(wrote.len() - 2);
    assert_eq!(end, ["DELETE", "paracrypt-manifest"]);
    let checkpoints = wrote.iter().filter(|w| *w == "paracrypt-manifest").count();
    assert!(checkpoints <= 1, "{wrote:?}");
    wrote.retain(|w| w != "paracrypt-manifest");
    wrote.sort();
    assert_eq!(wrote, ["added.pcr", "x.pcr"]);
    assert_eq!(
        keys(&bucket, pre),
        [
            "added.pcr",
            "empty.pcr",
            "paracrypt-manifest",
            "sub dir/run.sh.pcr",
            "x.pcr",
        ]
    );
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    let back = d.join("back");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-k", k],
        &prefix,
        back.to_str().unwrap(),
    )));
    assert_eq!(snapshot(&back), snapshot(&plain));
    let mut verify = server.client();
    verify.args(["verify", "--recursive", "-k", k, &prefix]);
    let out = String::from_utf8(ok(run(verify))).unwrap();
    assert!(out.contains(&format!("{prefix}: OK (4 files")), "{out}");

    // Nothing changed: the manifest alone (the next generation).
    assert_eq!(update(&[]), ["paracrypt-manifest"]);

    // `x` changed in place: the same size and time.
    let x = plain.join("x");
    let mtime = std::fs::metadata(&x).unwrap().modified().unwrap();
    write(&plain, "x", &data(90_000, 6));
    std::fs::File::options()
        .write(true)
        .open(&x)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(update(&[]), ["paracrypt-manifest"]);
    assert_eq!(update(&["--checksum"]), ["x.pcr", "paracrypt-manifest"]);
    let back = d.join("back-checksum");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-k", k],
        &prefix,
        back.to_str().unwrap(),
    )));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// What an update cannot keep is refused before anything is written, as for a local tree: hidden
/// names for a tree that keeps its names, a signing key for a tree not signed, a key that does
/// not open the manifest.
/// The prefix is as it was (the same objects, the same manifest).
#[test]
fn a_refused_update_of_a_prefix_writes_nothing() {
    let server = Server::shared();
    let bucket = server.bucket("tree-update-refused");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, false);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let wrong = keygen(d, "wrong");
    let prefix = bucket.url("r/");
    let p = plain.to_str().unwrap();
    ok(run(tree_cmd(server, "encrypt", &["-k", k], p, &prefix)));
    write(&plain, "x", &data(1000, 1));
    let before = keys(&bucket, "r/");
    let manifest = bucket.get("r/paracrypt-manifest");
    let update = |args: &[&str]| {
        let mut all = vec!["--update"];
        all.extend_from_slice(args);
        run(tree_cmd(server, "encrypt", &all, p, &prefix))
    };
    fails(
        update(&["-k", k, "--hide-names"]),
        2,
        "cannot update: the tree keeps its names",
    );
    let (signer, _) = signing_key(d, "ed25519", "me");
    fails(
        update(&["-k", k, "--sign", signer.to_str().unwrap()]),
        2,
        "cannot update: the tree is not signed",
    );
    fails(
        update(&["-k", wrong.to_str().unwrap()]),
        1,
        "paracrypt-manifest",
    );
    assert_eq!(keys(&bucket, "r/"), before);
    assert_eq!(bucket.get("r/paracrypt-manifest"), manifest);
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
}

/// Issue #51 in a prefix: an older generation of the manifest put back is refused by the host
/// that wrote the newer one (and by a decryption told the generation it must see), and a
/// manifest planted to the owner's recipient carrying a key of its own is refused; neither
/// writes anything.
#[test]
fn an_old_generation_or_a_planted_manifest_in_a_prefix_is_refused() {
    let server = Server::shared();
    let bucket = server.bucket("tree-untrusted");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, false);
    let p = plain.to_str().unwrap();
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let update = |args: &[&str], prefix: &str| {
        let mut all = vec!["--update"];
        all.extend_from_slice(args);
        run(tree_cmd(server, "encrypt", &all, p, prefix))
    };

    let prefix = bucket.url("g/");
    ok(run(tree_cmd(server, "encrypt", &["-k", k], p, &prefix)));
    let first = write(d, "first", &bucket.get("g/paracrypt-manifest"));
    write(&plain, "x", &data(1000, 1));
    ok(update(&["-k", k], &prefix));
    bucket.put("g/paracrypt-manifest", &first);
    let before = keys(&bucket, "g/");
    fails(
        update(&["-k", k], &prefix),
        1,
        "older than the generation 2 this host wrote there",
    );
    let back = d.join("back");
    fails(
        run(tree_cmd(
            server,
            "decrypt",
            &["-k", k, "--min-generation", "2"],
            &prefix,
            back.to_str().unwrap(),
        )),
        1,
        "older than the generation 2 asked for",
    );
    assert!(!back.exists());
    assert_eq!(keys(&bucket, "g/"), before);
    assert_eq!(
        bucket.get("g/paracrypt-manifest"),
        std::fs::read(&first).unwrap()
    );

    let (owner, recipient) = x25519(d, "owner.key");
    let to = ["-r", recipient.as_str()];
    let prefix = bucket.url("r/");
    ok(run(tree_cmd(server, "encrypt", &to, p, &prefix)));
    let pw = write(d, "pw", b"hers\n");
    let pw = pw.to_str().unwrap();
    let hers = d.join("hers");
    let mut mine = paracrypt();
    mine.args(["encrypt", "--recursive", "-q", "--password-file", pw])
        .arg(&plain)
        .arg("-o")
        .arg(&hers);
    ok(run(mine));
    let mut open = paracrypt();
    open.args(["decrypt", "--password-file", pw])
        .arg(hers.join("paracrypt-manifest"));
    let plaintext = write(d, "her-manifest", &ok(run(open)));
    let mut seal = paracrypt();
    seal.arg("encrypt").args(to).arg(&plaintext);
    let planted = write(d, "planted", &ok(run(seal)));
    bucket.put("r/paracrypt-manifest", &planted);
    let before = keys(&bucket, "r/");
    let with_id = [&to[..], &["-i", owner.to_str().unwrap()]].concat();
    fails(update(&with_id, &prefix), 1, "it carries a key of its own");
    assert_eq!(keys(&bucket, "r/"), before);
    assert_eq!(
        bucket.get("r/paracrypt-manifest"),
        std::fs::read(&planted).unwrap()
    );
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
}

/// An update stopped part way leaves a tree the next update finishes: a file whose part fails
/// is named (exit 6), the manifest lists what was done (marked incomplete), the upload is
/// aborted; an update interrupted (SIGTERM) while a part goes up leaves the previous manifest
/// or a checkpoint of the files done, which `verify` reads as a tree not whole (the files
/// replaced named as changed, or the manifest incomplete). Then `--update` finishes it.
#[test]
fn a_failed_or_interrupted_update_is_finished_by_the_next() {
    let server = Server::shared();
    let bucket = server.bucket("tree-update-stopped");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let prefix = bucket.url("s/");
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k, "--chunk-size", "64KiB"],
        plain.to_str().unwrap(),
        &prefix,
    )));
    write(&plain, "large", &data((8 << 20) + 9, 2));
    write(&plain, "x", &data(1000, 3));
    let update_cmd = |endpoint: &str| {
        let mut cmd = server.client_at(endpoint);
        cmd.args(["--retries", "0", "--upload-concurrency", "1"])
            .args(["encrypt", "--recursive", "--update", "-q", "-k", k])
            .args(["--chunk-size", "64KiB", "-j", "2"])
            .arg(&plain)
            .arg("-o")
            .arg(&prefix);
        cmd
    };

    // The large file's second part fails.
    let proxy = Proxy::start(server.port, |r| {
        if r.is_part() && r.target.contains("partNumber=2&") {
            Action::Fail
        } else {
            Action::Forward
        }
    });
    fails(run(update_cmd(&proxy.url())), 6, "large: ");
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    // The file that failed keeps its previous object (it used to be deleted as gone).
    let mut one = server.client();
    one.args(["decrypt", "-k", k, &bucket.url("s/large.pcr")]);
    assert!(ok(run(one)) == data((8 << 20) + 5, 7));
    let mut verify = server.client();
    verify.args(["verify", "--recursive", "-k", k, &prefix]);
    let out = run(verify);
    assert!(!out.status.success());

    // Interrupted while the large file's parts go up, slowly.
    let proxy = Proxy::start(server.port, |r| {
        if r.is_part() {
            Action::Delay(Duration::from_millis(400))
        } else {
            Action::Forward
        }
    });
    let mut cmd = Command::new("env");
    cmd.arg("--default-signal=HUP,INT,TERM");
    let inner = update_cmd(&proxy.url());
    cmd.arg(inner.get_program()).args(inner.get_args());
    for (name, value) in inner.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !proxy.requests().iter().any(|(r, _)| r.is_part()) {
        assert!(start.elapsed() < Duration::from_secs(60), "no part went up");
        std::thread::sleep(Duration::from_millis(20));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    let mut verify = server.client();
    verify.args(["verify", "--recursive", "-k", k, &prefix]);
    assert!(!run(verify).status.success(), "a tree not whole");

    ok(run(update_cmd(&format!(
        "http://127.0.0.1:{}",
        server.port
    ))));
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    let back = d.join("back");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-k", k],
        &prefix,
        back.to_str().unwrap(),
    )));
    assert_eq!(snapshot(&back), snapshot(&plain));
    let mut verify = server.client();
    verify.args(["verify", "--recursive", "-k", k, &prefix]);
    ok(run(verify));
}

/// `mpirun -n N paracrypt encrypt --recursive --distributed DIR -o s3://…` (issue #35 item 5:
/// no filesystem shared for the output): rank 0 checks the prefix and plans, every rank uploads
/// the files of its tasks, rank 0 writes the manifest last. At 1, 2 and 3 ranks the prefix
/// holds the objects one process uploads, no multipart upload is left, and the tree decrypts
/// to the same tree, decrypted from the prefix across as many ranks (every rank reading the
/// objects of its tasks); an update across ranks uploads what changed and deletes what is gone;
/// a prefix that holds objects is refused without `--force` before anything is written; the
/// tree decrypts into a prefix across ranks, and those plaintext objects encrypt across ranks
/// again.
#[cfg(feature = "mpi")]
#[test]
fn a_tree_is_encrypted_into_a_prefix_across_ranks() {
    use crate::distributed::with_mpi::{have_mpirun, mpirun_with};
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("tree-ranks");
    let dir = scratch();
    let d = dir.path();
    let plain = tree(d, true);
    let key = keygen(d, "key");
    let (k, p) = (key.to_str().unwrap(), plain.to_str().unwrap());
    let endpoint = format!("http://127.0.0.1:{}", server.port);
    let mpirun = |ranks: usize, args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        mpirun_with(ranks, args, |cmd| server.credentials(cmd, &endpoint))
    };
    let all = [
        "empty.pcr",
        "large.pcr",
        "paracrypt-manifest",
        "sub dir/deeper/z.pcr",
        "sub dir/run.sh.pcr",
        "x.pcr",
    ];
    for ranks in 1..=3 {
        let prefix = format!("ranks-{ranks}/");
        let url = bucket.url(&prefix);
        let out = mpirun(
            ranks,
            &[
                "encrypt",
                "--recursive",
                "--verbose",
                "-k",
                k,
                "--chunk-size",
                "64KiB",
                p,
                "-o",
                &url,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        ok(out);
        // Every rank uploaded some of the tree (rank 0 too).
        let counts = crate::tree_distributed::tasks_by_rank(&stderr, ranks);
        assert!(counts.iter().all(|&n| n > 0), "{stderr}");
        assert_eq!(keys(&bucket, &prefix), all, "{ranks} ranks");
        assert!(
            bucket.uploads().is_empty(),
            "{ranks} ranks: multipart uploads left"
        );
        // Back across as many ranks: rank 0 lists the prefix and reads the manifest, every
        // rank reads its tasks' objects.
        let back = d.join(format!("back-{ranks}"));
        let out = mpirun(
            ranks,
            &[
                "decrypt",
                "--recursive",
                "--verbose",
                "-k",
                k,
                &url,
                "-o",
                back.to_str().unwrap(),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        ok(out);
        let counts = crate::tree_distributed::tasks_by_rank(&stderr, ranks);
        assert!(counts.iter().all(|&n| n > 0), "{stderr}");
        assert_eq!(snapshot(&back), snapshot(&plain), "{ranks} ranks");
    }

    // An update across two ranks: `x` changed, `z` gone.
    let url = bucket.url("ranks-2/");
    write(&plain, "x", &data(90_000, 4));
    std::fs::remove_file(plain.join("sub dir/deeper/z")).unwrap();
    ok(mpirun(
        2,
        &[
            "encrypt",
            "--recursive",
            "--update",
            "-k",
            k,
            "--chunk-size",
            "64KiB",
            p,
            "-o",
            &url,
        ],
    ));
    assert_eq!(
        keys(&bucket, "ranks-2/"),
        [
            "empty.pcr",
            "large.pcr",
            "paracrypt-manifest",
            "sub dir/run.sh.pcr",
            "x.pcr"
        ]
    );
    let back = d.join("back-update");
    ok(run(tree_cmd(
        server,
        "decrypt",
        &["-k", k],
        &url,
        back.to_str().unwrap(),
    )));
    assert_eq!(snapshot(&back), snapshot(&plain));

    // Refused before anything is written: a prefix that holds objects without --force.
    let manifest = bucket.get("ranks-2/paracrypt-manifest");
    let out = mpirun(2, &["encrypt", "--recursive", "-q", "-k", k, p, "-o", &url]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(bucket.get("ranks-2/paracrypt-manifest") == manifest);

    // Decrypted into a prefix across two ranks, every rank uploading the files of its tasks:
    // each object is its file's plaintext; the two links are named, the only failures.
    let into = bucket.url("back-ranks/");
    let out = mpirun(
        2,
        &[
            "decrypt",
            "--recursive",
            "--verbose",
            "-k",
            k,
            &url,
            "-o",
            &into,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    let counts = crate::tree_distributed::tasks_by_rank(&stderr, 2);
    assert!(counts.iter().all(|&n| n > 0), "{stderr}");
    assert!(
        stderr.contains("link to run: cannot make the link"),
        "{stderr}"
    );
    assert_eq!(
        keys(&bucket, "back-ranks/"),
        ["empty", "large", "sub dir/run.sh", "x"]
    );
    assert!(bucket.get("back-ranks/large") == data((8 << 20) + 5, 7));
    assert!(bucket.get("back-ranks/x") == data(90_000, 4));
    assert!(bucket.uploads().is_empty());

    // Those plaintext objects encrypt as a tree across two ranks: rank 0 lists the prefix
    // once, every rank reads the objects of its tasks at the versions listed, into a prefix or
    // a directory; each decrypts to those files.
    let local = d.join("again-dir");
    for (at, out_to) in [
        (0, bucket.url("again/")),
        (1, local.to_str().unwrap().to_owned()),
    ] {
        let out = mpirun(
            2,
            &[
                "encrypt",
                "--recursive",
                "--verbose",
                "-k",
                k,
                "--chunk-size",
                "64KiB",
                &into,
                "-o",
                &out_to,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let counts = crate::tree_distributed::tasks_by_rank(&stderr, 2);
        assert!(counts.iter().all(|&n| n > 0), "{stderr}");
        let back = d.join(format!("again-back-{at}"));
        ok(run(tree_cmd(
            server,
            "decrypt",
            &["-k", k],
            &out_to,
            back.to_str().unwrap(),
        )));
        for rel in ["empty", "large", "sub dir/run.sh", "x"] {
            assert!(
                std::fs::read(back.join(rel)).unwrap() == bucket.get(&format!("back-ranks/{rel}")),
                "{rel}"
            );
        }
    }
    assert_eq!(
        keys(&bucket, "again/"),
        [
            "empty.pcr",
            "large.pcr",
            "paracrypt-manifest",
            "sub dir/run.sh.pcr",
            "x.pcr"
        ]
    );
    assert!(bucket.uploads().is_empty());
}

/// SIGTERM to `mpirun` while the ranks upload a tree into a prefix: Open MPI passes it on to
/// every rank (5 s later here, `time_to_clean_up`: every part is held longer than that), each
/// rank's interrupt handler aborts the multipart uploads it started, and what
/// is left is what a stopped local run leaves: no multipart upload, only objects of files
/// complete, and no manifest (no file was done when the signal came, so rank 0 had written
/// no checkpoint: an unfinished tree, which `--update` writes whole).
#[cfg(feature = "mpi")]
#[test]
fn a_signal_aborts_the_uploads_of_every_rank() {
    use crate::distributed::with_mpi::{have_mpirun, mpirun_command, time_to_clean_up};
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("tree-ranks-signal");
    let dir = scratch();
    let d = dir.path();
    let root = d.join("plain");
    std::fs::create_dir(&root).unwrap();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        write(&root, name, &data((16 << 20) + 3, 20 + i as u8));
    }
    let key = keygen(d, "key");
    let proxy = Proxy::start(server.port, |r| {
        if r.is_part() {
            Action::Delay(std::time::Duration::from_secs(12))
        } else {
            Action::Forward
        }
    });
    // In the prefix, so in every rank's command line.
    let marker = "tree-ranks-signal-run";
    let url = bucket.url(&format!("{marker}/"));
    let args: Vec<String> = [
        "encrypt",
        "--recursive",
        "-q",
        "-k",
        key.to_str().unwrap(),
        "--upload-concurrency",
        "1",
        root.to_str().unwrap(),
        "-o",
        &url,
    ]
    .map(String::from)
    .into();
    let (cmd, _session) = mpirun_command(3, args, |cmd| {
        server.credentials(cmd, &proxy.url());
        time_to_clean_up(cmd);
    });
    let sent = || proxy.requests().iter().any(|(r, _)| r.is_part());
    let out = stop_mpirun_when(cmd, marker, sent, "no part was ever sent");
    assert!(!out.status.success(), "{out:?}");
    assert!(bucket.uploads().is_empty(), "multipart uploads left");
    let left = keys(&bucket, &format!("{marker}/"));
    assert!(!left.iter().any(|k| k == "paracrypt-manifest"), "{left:?}");
    let requests = proxy.requests();
    assert!(
        requests.iter().any(|(r, _)| r.method == "DELETE"),
        "no rank aborted its upload: {requests:?}"
    );
}

/// SIGTERM to `mpirun` while the ranks read a tree from a prefix (each GET of an object held
/// back by the proxy, and from the signal on held longer than the 5 s Open MPI takes here to
/// pass it on, `time_to_clean_up`): every rank's interrupt handler removes the named temporary files of the
/// files it was writing (`PARACRYPT_NO_TMPFILE`, as on NFS), and what is left at OUTPUT is what
/// a stopped local run leaves: no temporary file, and only files complete (each its
/// plaintext), never a part of one.
#[cfg(feature = "mpi")]
#[test]
fn a_signal_stops_every_rank_reading_from_a_prefix_and_leaves_no_partial_file() {
    use crate::distributed::with_mpi::{have_mpirun, mpirun_command, time_to_clean_up};
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let bucket = server.bucket("tree-ranks-read-signal");
    let dir = scratch();
    let d = dir.path();
    let root = d.join("plain");
    std::fs::create_dir(&root).unwrap();
    let names = ["a", "b", "c", "d"];
    for (i, name) in names.iter().enumerate() {
        write(&root, name, &data((12 << 20) + 5, 30 + i as u8));
    }
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    // In the prefix, so in every rank's command line.
    let marker = "tree-ranks-read-signal-run";
    let url = bucket.url(&format!("{marker}/"));
    ok(run(tree_cmd(
        server,
        "encrypt",
        &["-k", k],
        root.to_str().unwrap(),
        &url,
    )));
    let signalled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let held = signalled.clone();
    let proxy = Proxy::start(server.port, move |r| {
        if r.method == "GET" && r.target.contains(".pcr") {
            let signalled = held.load(std::sync::atomic::Ordering::Relaxed);
            Action::Delay(std::time::Duration::from_millis(if signalled {
                12_000
            } else {
                700
            }))
        } else {
            Action::Forward
        }
    });
    let back = d.join("back");
    let args: Vec<String> = [
        "decrypt",
        "--recursive",
        "-q",
        "-k",
        k,
        "--download-concurrency",
        "1",
        &url,
        "-o",
        back.to_str().unwrap(),
    ]
    .map(String::from)
    .into();
    let (cmd, _session) = mpirun_command(3, args, |cmd| {
        server.credentials(cmd, &proxy.url());
        cmd.env("PARACRYPT_NO_TMPFILE", "1");
        time_to_clean_up(cmd);
    });
    // Each header is read twice (rank 0's plan, then the task that opens the file): more reads
    // than that, and the ranks are reading the files' chunks.
    let reading = || {
        let reads = proxy
            .requests()
            .iter()
            .filter(|(r, _)| r.method == "GET" && r.target.contains(".pcr"))
            .count();
        let reading = reads > 2 * names.len();
        // No file finishes between the signal and the ranks getting it.
        signalled.store(reading, std::sync::atomic::Ordering::Relaxed);
        reading
    };
    let out = stop_mpirun_when(cmd, marker, reading, "the ranks never read");
    assert!(!out.status.success(), "{out:?}");
    assert!(temporaries(&back).is_empty(), "{:?}", temporaries(&back));
    // The files left (the run stopped before the last), each whole: its plaintext, mode and
    // time.
    let plain = snapshot(&root);
    let files: Vec<_> = if back.exists() {
        snapshot(&back)
            .into_iter()
            .filter(|(_, node)| matches!(node, crate::tree::Node::File { .. }))
            .collect()
    } else {
        Vec::new()
    };
    assert!(files.len() < names.len(), "the run was not stopped");
    for (name, node) in &files {
        let shown = String::from_utf8_lossy(name);
        assert!(
            plain.get(name) == Some(node),
            "{shown} is not its plaintext"
        );
    }
}

/// Runs `cmd` (an `mpirun` whose ranks' command lines hold `marker`) and sends `mpirun`
/// SIGTERM once `ready` holds (within two minutes, or the test fails saying `never`); returns
/// what it printed on stderr and its status once no process of the run is left.
#[cfg(feature = "mpi")]
fn stop_mpirun_when(
    mut cmd: Command,
    marker: &str,
    ready: impl Fn() -> bool,
    never: &str,
) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed().as_secs() < 120, "{never}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mpirun = crate::cluster_faults::processes(marker)
        .into_iter()
        .find(|p| p.program == "mpirun")
        .expect("mpirun runs")
        .pid;
    crate::cluster_faults::signal("-TERM", mpirun);
    let out = child.wait_with_output().unwrap();
    // `mpirun` may end before its ranks have: what they leave is looked at once they are gone.
    let gone = Instant::now();
    while !crate::cluster_faults::processes(marker).is_empty() {
        assert!(
            gone.elapsed().as_secs() < 30,
            "ranks still running 30 s after mpirun"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    out
}
