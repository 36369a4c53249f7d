//! One tree across MPI ranks (`mpirun -n N paracrypt encrypt --recursive --distributed`,
//! issue #35 item 5): the tree encrypted at 1, 2 and 3 ranks decrypts (on one machine) to the
//! same tree and verifies, every rank sealing some of it; a signed tree with hidden names and a
//! password; binary age files to a recipient, each opening with `age -d`; the combinations it
//! refuses, once, before any output; a file no rank can read leaves the tree done in part,
//! naming it, and `--update` across ranks finishes it; ranks ended by SIGTERM leave no
//! temporary file, and `--update` goes on from rank 0's checkpoint. The walk of a tree of many
//! directories is shared by the ranks (each directory listed once, by some rank, every rank
//! listing some, a few directories to a walk task), `--update` walks it the same way, and what
//! a walk refuses deep in a subtree (a FIFO, a directory that cannot be listed) is refused in a
//! local run's words and exit code. `--update --checksum` hashes the files on every rank, each
//! once, and seals again what a local update seals again.
//!
//! And decrypted across ranks (`mpirun -n N paracrypt decrypt --recursive --distributed`): a
//! tree encrypted on one machine decrypts at 1, 2 and 3 ranks to the same tree as a local
//! decryption; a signed tree with `--verify-with` (the signer's key, or another: exit 5 and
//! nothing at OUTPUT); an age tree opened with `-i`; two files swapped leave the tree done in
//! part, naming both; an armored tree is refused once; ranks ended by SIGTERM leave no temporary
//! file; only rank 0 reads the password.

#![cfg(feature = "mpi")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::*;
use crate::container::keygen;
use crate::distributed::with_mpi::{have_mpirun, mpirun_with, one_error};
use crate::signed::signing_key;

use crate::tree::{decrypt, files, snapshot, temporaries, without_override};

/// A tree of small and large files: 60 small ones (up to 20 KB) over a few directories, two
/// of 3 MiB (many chunks each at 64 KiB), an empty file, an empty directory and a link.
fn tree_of_sizes(dir: &Path) -> PathBuf {
    let root = dir.join("plain");
    for sub in ["a", "a/b", "c", "empty dir"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    for i in 0..60 {
        let sub = ["a", "a/b", "c"][i % 3];
        let len = 1 + (i * 331) % 20_000;
        write(&root.join(sub), &format!("small{i}"), &data(len, i as u8));
    }
    write(&root, "large1", &data(3 << 20, 1));
    write(&root.join("c"), "large2", &data(3 << 20 | 5, 2));
    write(&root, "empty", b"");
    std::os::unix::fs::symlink("a/small0", root.join("link")).unwrap();
    root
}

/// `encrypt --recursive -q -j 2 ARGS INPUT -o OUTPUT` on `ranks` ranks (`--distributed` is
/// added).
fn encrypt_on(
    ranks: usize,
    args: &[&str],
    input: &Path,
    output: &Path,
    setup: impl FnOnce(&mut std::process::Command),
) -> std::process::Output {
    let mut all: Vec<String> = ["encrypt", "--recursive", "-q", "-j", "2"]
        .map(String::from)
        .into();
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend([
        input.to_str().unwrap().to_string(),
        "-o".into(),
        output.to_str().unwrap().to_string(),
    ]);
    mpirun_with(ranks, all, setup)
}

/// `decrypt --recursive -j 2 ARGS INPUT -o OUTPUT` on `ranks` ranks (`--distributed` is
/// added).
fn decrypt_on(
    ranks: usize,
    args: &[&str],
    input: &Path,
    output: &Path,
    setup: impl FnOnce(&mut std::process::Command),
) -> std::process::Output {
    let mut all: Vec<String> = ["decrypt", "--recursive", "-j", "2"]
        .map(String::from)
        .into();
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend([s(input), "-o".into(), s(output)]);
    mpirun_with(ranks, all, setup)
}

/// The tasks each rank sealed, from `--verbose`'s line: `rank R: N` for every rank.
pub(crate) fn tasks_by_rank(stderr: &str, ranks: usize) -> Vec<u64> {
    let line = stderr
        .lines()
        .find(|l| l.contains(&format!("distributed: {ranks} ranks,")) && l.contains("tasks ("))
        .unwrap_or_else(|| panic!("no tasks line: {stderr}"));
    (0..ranks)
        .map(|rank| {
            let at = line.find(&format!("rank {rank}: ")).unwrap() + format!("rank {rank}: ").len();
            let digits: String = line[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().unwrap()
        })
        .collect()
}

#[test]
fn a_tree_encrypted_on_1_2_and_3_ranks_decrypts_to_the_same_tree_and_verifies() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    for ranks in [1, 2, 3] {
        let sealed = d.join(format!("sealed-{ranks}"));
        let args = ["-k", k, "--verbose", "--chunk-size", "65536"];
        let out = encrypt_on(ranks, &args, &plain, &sealed, |_| {});
        let (_, stderr) = status_and_stderr(&out);
        ok(out);
        // Every rank sealed some of the tree (rank 0 too), and every task was sealed once.
        let counts = tasks_by_rank(&stderr, ranks);
        assert!(counts.iter().all(|&n| n > 0), "{stderr}");
        assert!(counts.iter().sum::<u64>() >= 4 * ranks as u64, "{stderr}");
        assert!(sealed.join("a/b/small1.pcr").is_file());
        assert!(
            temporaries(&sealed).is_empty(),
            "{:?}",
            temporaries(&sealed)
        );
        let back = d.join(format!("back-{ranks}"));
        ok(run(decrypt(&["-k", k], &sealed, &back)));
        assert_eq!(snapshot(&back), snapshot(&plain));
        let mut verify = paracrypt();
        verify.args(["verify", "--recursive", "-k", k]).arg(&sealed);
        let stdout = String::from_utf8(ok(run(verify))).unwrap();
        assert!(stdout.contains("OK (63 files"), "{stdout}");
    }
}

#[test]
fn a_signed_tree_with_hidden_names_and_a_password_across_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let password = write(d, "password", b"correct horse battery staple\n");
    let (signer, public) = signing_key(d, "ed25519", "me");
    let sealed = d.join("sealed");
    let args = [
        "--password-file",
        password.to_str().unwrap(),
        "--sign",
        signer.to_str().unwrap(),
        "--hide-names",
    ];
    ok(encrypt_on(2, &args, &plain, &sealed, |_| {}));
    // Opaque names only, and nothing of the tree's names shows.
    let stored = files(&sealed);
    assert_eq!(stored.len(), 64, "{stored:?}");
    assert!(
        stored
            .iter()
            .all(|p| !p.to_str().unwrap().contains("small")
                && !p.to_str().unwrap().contains("large")),
        "{stored:?}"
    );
    let back = d.join("back");
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--recursive", "--password-file"])
        .arg(&password)
        .arg("--verify-with")
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
}

/// Binary age files to a recipient across ranks: the tree opens with the identity, and each
/// file alone with `age -d`.
#[test]
fn an_age_tree_to_a_recipient_across_ranks_opens_with_age() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let (identity, recipient) = crate::people::x25519(d, "identity");
    let sealed = d.join("sealed");
    let args = ["--format", "age", "-r", &recipient];
    ok(encrypt_on(3, &args, &plain, &sealed, |_| {}));
    let back = d.join("back");
    ok(run(decrypt(
        &["-i", identity.to_str().unwrap()],
        &sealed,
        &back,
    )));
    assert_eq!(snapshot(&back), snapshot(&plain));
    if have("age", "--version") {
        let mut age = std::process::Command::new("age");
        age.args(["-d", "-i"])
            .arg(&identity)
            .arg(sealed.join("c/large2.age"));
        assert_eq!(ok(run(age)), data(3 << 20 | 5, 2));
    }
}

#[test]
fn what_a_tree_across_ranks_cannot_do_is_refused_once_before_any_output() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let (identity, recipient) = crate::people::x25519(d, "identity");
    let out = d.join("out");
    let refused: [(&[&str], &str); 2] = [
        (
            &["--format", "age", "--armor", "-r", &recipient],
            "an armored tree is not spread over ranks",
        ),
        (
            &["-k", k, "--transport", "messages"],
            "drop --transport messages",
        ),
    ];
    for (args, needle) in refused {
        let output = encrypt_on(2, args, &plain, &out, |_| {});
        let (code, stderr) = status_and_stderr(&output);
        assert_eq!(code, 2, "{stderr}");
        one_error(&stderr, needle);
        assert!(!out.exists());
    }
    // An armored age tree is read in order by one process: refused by rank 0, which reads its
    // manifest, once.
    let armored = d.join("armored");
    ok(run(crate::tree::encrypt(
        &["--format", "age", "--armor", "-r", &recipient],
        &plain,
        &armored,
    )));
    let output = decrypt_on(
        2,
        &["-i", identity.to_str().unwrap()],
        &armored,
        &out,
        |_| {},
    );
    let (code, stderr) = status_and_stderr(&output);
    assert_eq!(code, 2, "{stderr}");
    one_error(&stderr, "an armored age tree");
    assert!(!out.exists());
}

fn s(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

#[test]
fn a_file_no_rank_can_read_leaves_the_tree_done_in_part_and_update_finishes_it() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let locked = plain.join("c/large2");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let sealed = d.join("sealed");
    // Run as root would be without its power to read anything (every rank inherits it).
    let out = encrypt_on(3, &["-k", k], &plain, &sealed, |cmd| {
        *cmd = without_override(std::mem::replace(cmd, paracrypt()));
    });
    let (code, stderr) = status_and_stderr(&out);
    assert_eq!(code, 6, "{stderr}");
    one_error(&stderr, "c/large2: cannot open it: Permission denied");
    assert!(
        stderr.contains("62 files done and complete; the tree is not"),
        "{stderr}"
    );
    assert!(!sealed.join("c/large2.pcr").exists());
    assert!(
        temporaries(&sealed).is_empty(),
        "{:?}",
        temporaries(&sealed)
    );

    // Readable again: --update across ranks seals that one file and the tree is whole.
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = encrypt_on(2, &["-k", k, "--update"], &plain, &sealed, |_| {});
    ok(out);
    let back = d.join("back");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// The processes whose command line is a `paracrypt` rank of a run writing to `output` (not
/// `mpirun` or `timeout`, whose command lines hold the same arguments).
fn ranks_writing(output: &Path) -> Vec<i32> {
    let needle = output.as_os_str().as_encoded_bytes();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let mut args = cmdline.split(|&b| b == 0);
        let program = args.next().unwrap_or_default();
        if program.ends_with(b"/paracrypt") && args.any(|a| a == needle) {
            pids.push(pid);
        }
    }
    pids
}

/// Every rank told SIGTERM mid-run (as a batch system ends a job), on a filesystem without
/// `O_TMPFILE` (named temporary files, as NFS gets): each rank removes the temporary files of
/// the files it was writing, rank 0's last checkpoint lists the files done, and `--update`
/// across ranks keeps them and finishes the tree.
#[test]
fn ranks_ended_by_sigterm_leave_no_temporary_file_and_update_finishes_the_tree() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    for i in 0..300 {
        write(&plain, &format!("f{i:03}"), &data(128 << 10, i as u8));
    }
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    // 300 files in 16-byte chunks: a run of a second or two, which the signal, sent once rank
    // 0 wrote its first checkpoint (after the first task's files), lands in the middle of.
    let args = [
        "encrypt",
        "--recursive",
        "-q",
        "-j",
        "1",
        "-k",
        k,
        "--chunk-size",
        "16",
    ]
    .map(String::from)
    .into_iter()
    .chain([s(&plain), "-o".into(), s(&sealed)]);
    let (mut cmd, _session) = crate::distributed::with_mpi::mpirun_command(3, args, |cmd| {
        cmd.env("PARACRYPT_NO_TMPFILE", "1");
    });
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !sealed.join("paracrypt-manifest").exists() && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let ranks = ranks_writing(&sealed);
    assert_eq!(ranks.len(), 3, "{ranks:?}");
    for pid in ranks {
        let pid = rustix::process::Pid::from_raw(pid).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    assert!(!child.wait().unwrap().success());
    assert!(
        temporaries(&sealed).is_empty(),
        "{:?}",
        temporaries(&sealed)
    );
    let done = files(&sealed).len();
    assert!(done < 301, "{done} files");
    let mut info = paracrypt();
    info.args(["info", "--recursive", "--json", "-k", k])
        .arg(&sealed);
    let about = String::from_utf8(ok(run(info))).unwrap();
    assert!(about.contains("\"complete\": false"), "{about}");

    // The rest at the default chunk size (the files kept keep theirs), then the manifest and
    // a few files checked (reading all of them at 16-byte chunks takes long).
    ok(encrypt_on(
        2,
        &["-k", k, "--update"],
        &plain,
        &sealed,
        |_| {},
    ));
    let mut info = paracrypt();
    info.args(["info", "--recursive", "--json", "-k", k])
        .arg(&sealed);
    let about = String::from_utf8(ok(run(info))).unwrap();
    assert!(
        about.contains("\"complete\": true") && about.contains("\"files\": 300"),
        "{about}"
    );
    let mut verify = paracrypt();
    verify
        .args(["verify", "--recursive", "-k", k])
        .arg(&sealed)
        .args(["f000", "f150", "f299"]);
    ok(run(verify));
}

/// [`tree_of_sizes`] with a private file and a private directory.
fn private_tree(dir: &Path) -> PathBuf {
    let root = tree_of_sizes(dir);
    std::fs::set_permissions(root.join("a/small3"), PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::set_permissions(root.join("a/b"), PermissionsExt::from_mode(0o700)).unwrap();
    root
}

#[test]
fn a_tree_decrypted_on_1_2_and_3_ranks_is_the_tree_a_local_decryption_gives() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = private_tree(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(crate::tree::encrypt(
        &["-k", k, "--chunk-size", "65536"],
        &plain,
        &sealed,
    )));
    let here = d.join("here");
    ok(run(decrypt(&["-k", k], &sealed, &here)));
    assert_eq!(snapshot(&here), snapshot(&plain));
    for ranks in [1, 2, 3] {
        let back = d.join(format!("back-{ranks}"));
        let out = decrypt_on(ranks, &["-q", "-k", k, "--verbose"], &sealed, &back, |_| {});
        let (_, stderr) = status_and_stderr(&out);
        ok(out);
        // Every rank opened some of the tree (rank 0 too).
        let counts = tasks_by_rank(&stderr, ranks);
        assert!(counts.iter().all(|&n| n > 0), "{stderr}");
        assert!(counts.iter().sum::<u64>() >= 4 * ranks as u64, "{stderr}");
        assert_eq!(snapshot(&back), snapshot(&here), "{ranks} ranks");
        assert!(temporaries(&back).is_empty(), "{:?}", temporaries(&back));
    }
    // An output that holds files is refused once (as a local run refuses it), and written
    // into with --force.
    let back = d.join("back-2");
    std::fs::write(back.join("large1"), b"older").unwrap();
    let out = decrypt_on(2, &["-q", "-k", k], &sealed, &back, |_| {});
    let (code, stderr) = status_and_stderr(&out);
    assert_eq!(code, 2, "{stderr}");
    one_error(&stderr, "use --force");
    assert_eq!(std::fs::read(back.join("large1")).unwrap(), b"older");
    ok(decrypt_on(
        2,
        &["-q", "-k", k, "--force"],
        &sealed,
        &back,
        |_| {},
    ));
    assert_eq!(snapshot(&back), snapshot(&here));
}

#[test]
fn a_signed_tree_decrypted_across_ranks_with_its_signer_or_another_key() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let password = write(d, "password", b"correct horse battery staple\n");
    let p = password.to_str().unwrap();
    let (signer, public) = signing_key(d, "ed25519", "me");
    let (_, other) = signing_key(d, "ed25519", "other");
    let sealed = d.join("sealed");
    ok(run(crate::tree::encrypt(
        &["--password-file", p, "--sign", signer.to_str().unwrap()],
        &plain,
        &sealed,
    )));
    let back = d.join("back");
    let args = [
        "--password-file",
        p,
        "--verify-with",
        public.to_str().unwrap(),
    ];
    let out = decrypt_on(2, &args, &sealed, &back, |_| {});
    let (_, stderr) = status_and_stderr(&out);
    ok(out);
    assert_eq!(
        stderr
            .matches("good signature: the tree's manifest is signed by ed25519")
            .count(),
        1,
        "{stderr}"
    );
    assert_eq!(snapshot(&back), snapshot(&plain));

    let elsewhere = d.join("elsewhere");
    let args = [
        "--password-file",
        p,
        "--verify-with",
        other.to_str().unwrap(),
    ];
    let out = decrypt_on(3, &args, &sealed, &elsewhere, |_| {});
    let (code, stderr) = status_and_stderr(&out);
    assert_eq!(code, 5, "{stderr}");
    one_error(&stderr, "signed by another key");
    assert!(!elsewhere.exists());
}

#[test]
fn an_age_tree_to_a_recipient_opens_with_its_identity_across_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let (identity, recipient) = crate::people::x25519(d, "identity");
    let sealed = d.join("sealed");
    ok(run(crate::tree::encrypt(
        &["--format", "age", "-r", &recipient],
        &plain,
        &sealed,
    )));
    let back = d.join("back");
    let args = ["-q", "-i", identity.to_str().unwrap()];
    ok(decrypt_on(3, &args, &sealed, &back, |_| {}));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

#[test]
fn two_files_swapped_leave_a_tree_decrypted_across_ranks_done_in_part_naming_both() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(crate::tree::encrypt(&["-k", k], &plain, &sealed)));
    // Two files of the tree swapped: each opens under the key, neither is where it belongs.
    let (x, y) = (sealed.join("a/small3.pcr"), sealed.join("c/large2.pcr"));
    let swap = d.join("swap");
    std::fs::rename(&x, &swap).unwrap();
    std::fs::rename(&y, &x).unwrap();
    std::fs::rename(&swap, &y).unwrap();
    let back = d.join("back");
    let out = decrypt_on(3, &["-q", "-k", k], &sealed, &back, |_| {});
    let (code, stderr) = status_and_stderr(&out);
    assert_eq!(code, 6, "{stderr}");
    assert!(
        stderr.contains("a/small3: its encrypted file a/small3.pcr is not the one the manifest")
            && stderr.contains("c/large2: its encrypted file c/large2.pcr is not the one"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("paracrypt: error:").count(), 2, "{stderr}");
    assert!(
        stderr.contains("61 files done and complete; the tree is not"),
        "{stderr}"
    );
    // Every other file complete, the directories and the link as in the tree.
    let mut expected = snapshot(&plain);
    expected.remove(&b"a/small3"[..]);
    expected.remove(&b"c/large2"[..]);
    assert_eq!(snapshot(&back), expected);
    assert!(temporaries(&back).is_empty(), "{:?}", temporaries(&back));
}

/// Every rank told SIGTERM mid-decryption, on a filesystem without `O_TMPFILE` (named temporary
/// files, as NFS gets): each rank removes the temporary files of the files it was writing, and
/// every file left at OUTPUT is complete.
#[test]
fn ranks_ended_by_sigterm_mid_decryption_leave_no_temporary_file() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::create_dir(&plain).unwrap();
    for i in 0..300 {
        write(&plain, &format!("f{i:03}"), &data(128 << 10, i as u8));
    }
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    // 16-byte chunks: a decryption of a second or two, which the signal, sent once the first
    // file is done, lands in the middle of.
    ok(run(crate::tree::encrypt(
        &["-k", k, "--chunk-size", "16"],
        &plain,
        &sealed,
    )));
    let back = d.join("back");
    let args = ["decrypt", "--recursive", "-q", "-j", "1", "-k", k]
        .map(String::from)
        .into_iter()
        .chain([s(&sealed), "-o".into(), s(&back)]);
    let (mut cmd, _session) = crate::distributed::with_mpi::mpirun_command(3, args, |cmd| {
        cmd.env("PARACRYPT_NO_TMPFILE", "1");
    });
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    // A file that took its name (a listing only: temporary files come and go meanwhile).
    let named = || {
        std::fs::read_dir(&back).is_ok_and(|listing| {
            listing
                .flatten()
                .any(|entry| entry.file_name().as_encoded_bytes().starts_with(b"f"))
        })
    };
    while !named() && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let ranks = ranks_writing(&back);
    assert_eq!(ranks.len(), 3, "{ranks:?}");
    for pid in ranks {
        let pid = rustix::process::Pid::from_raw(pid).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    assert!(!child.wait().unwrap().success());
    assert!(temporaries(&back).is_empty(), "{:?}", temporaries(&back));
    let done = files(&back);
    assert!(!done.is_empty() && done.len() < 300, "{} files", done.len());
    for file in done {
        let name = file.to_str().unwrap();
        let i: usize = name[1..].parse().unwrap();
        assert_eq!(
            std::fs::read(back.join(&file)).unwrap(),
            data(128 << 10, i as u8)
        );
    }
}

/// Only rank 0 reads the tree's secret: the password is in rank 0's environment alone (an
/// `mpirun` of two programs: `env PARACRYPT_PASSWORD=… paracrypt …` as rank 0, `paracrypt …` as
/// ranks 1 and 2), and the other ranks decrypt their files from what their tasks carry.
#[test]
fn only_rank_0_reads_the_password_of_a_tree_decrypted_across_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let password = "correct horse battery staple";
    let sealed = d.join("sealed");
    let mut encrypt = crate::tree::encrypt(&[], &plain, &sealed);
    encrypt.env("PARACRYPT_PASSWORD", password);
    ok(run(encrypt));
    let back = d.join("back");
    let paracrypt = env!("CARGO_BIN_EXE_paracrypt");
    let args = [
        paracrypt.to_string(),
        "decrypt".into(),
        "--recursive".into(),
        "-q".into(),
        "--verbose".into(),
        s(&sealed),
        "-o".into(),
        s(&back),
        "--distributed".into(),
    ];
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["600", "mpirun", "--oversubscribe"]);
    if rustix::process::geteuid().is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["-n", "1", "env"])
        .arg(format!("PARACRYPT_PASSWORD={password}"))
        .args(&args)
        .args([":", "-n", "2"])
        .args(&args)
        .env_remove("PARACRYPT_PASSWORD");
    let session = scratch();
    cmd.env("TMPDIR", session.path());
    let out = run(cmd);
    let (_, stderr) = status_and_stderr(&out);
    ok(out);
    let counts = tasks_by_rank(&stderr, 3);
    assert!(counts.iter().all(|&n| n > 0), "{stderr}");
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// A tree of 40 directories at its top, each with a subdirectory, two small files and a link:
/// more directories than rank 0 lists alone at 2 or 3 ranks (8 per rank), so its walk is
/// split. 81 directories in all, the root counted.
fn tree_of_directories(dir: &Path) -> PathBuf {
    let root = dir.join("plain");
    for i in 0..40 {
        let top = root.join(format!("dir{i:02}"));
        std::fs::create_dir_all(top.join("sub")).unwrap();
        write(&top, "one", &data(100 + i, i as u8));
        write(&top.join("sub"), "two", &data(1000 + i * 7, i as u8 + 1));
        std::os::unix::fs::symlink("sub/two", top.join("link")).unwrap();
    }
    write(&root, "top", b"top");
    root
}

/// From `--verbose`'s walk line: the walk tasks, the directories they hold, and the
/// directories each rank listed.
fn walk_by_rank(stderr: &str, ranks: usize) -> (u64, u64, Vec<u64>) {
    let line = stderr
        .lines()
        .find(|l| l.contains(&format!("distributed: walk: {ranks} ranks, ")))
        .unwrap_or_else(|| panic!("no walk line: {stderr}"));
    let number_after = |word: &str| -> u64 {
        let at = line.find(word).unwrap() + word.len();
        let digits: String = line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    let tasks = number_after(&format!("{ranks} ranks, "));
    let pending = number_after(" walk tasks of ");
    let listed = (0..ranks)
        .map(|rank| number_after(&format!("rank {rank}: ")))
        .collect();
    (tasks, pending, listed)
}

#[test]
fn a_tree_of_many_directories_is_walked_by_every_rank_and_decrypts_to_the_same_tree() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_directories(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    for ranks in [1, 2, 3] {
        let sealed = d.join(format!("sealed-{ranks}"));
        let out = encrypt_on(ranks, &["-k", k, "--verbose"], &plain, &sealed, |_| {});
        let (_, stderr) = status_and_stderr(&out);
        ok(out);
        // Each of the 81 directories listed once; at 2 and 3 ranks rank 0 lists the root and
        // hands out the 40 below it, 4 walk tasks per rank of several directories each, and
        // every rank lists some.
        let (tasks, pending, listed) = walk_by_rank(&stderr, ranks);
        assert_eq!(listed.iter().sum::<u64>(), 81, "{stderr}");
        if ranks == 1 {
            assert_eq!((tasks, pending), (0, 0), "{stderr}");
        } else {
            assert_eq!((tasks, pending), (4 * ranks as u64, 40), "{stderr}");
            assert!(listed.iter().all(|&n| n > 0), "{stderr}");
        }
        let back = d.join(format!("back-{ranks}"));
        ok(run(decrypt(&["-k", k], &sealed, &back)));
        assert_eq!(snapshot(&back), snapshot(&plain));
    }

    // --update walks the tree across the ranks too: a file changed deep in it, a directory
    // added, one removed.
    let sealed = d.join("sealed-3");
    write(&plain.join("dir07/sub"), "two", b"changed");
    std::fs::create_dir_all(plain.join("dir40/new")).unwrap();
    write(&plain.join("dir40/new"), "file", b"new");
    std::fs::remove_dir_all(plain.join("dir03")).unwrap();
    let args = ["-k", k, "--update", "--verbose"];
    let out = encrypt_on(2, &args, &plain, &sealed, |_| {});
    let (_, stderr) = status_and_stderr(&out);
    ok(out);
    let (tasks, pending, listed) = walk_by_rank(&stderr, 2);
    assert_eq!(
        (tasks, pending, listed.iter().sum::<u64>()),
        (8, 40, 81),
        "{stderr}"
    );
    assert!(listed.iter().all(|&n| n > 0), "{stderr}");
    let back = d.join("back-update");
    ok(run(decrypt(&["-k", k], &sealed, &back)));
    assert_eq!(snapshot(&back), snapshot(&plain));
}

/// The encrypted files under `tree` (not the manifest) whose bytes differ from those at the
/// same name under `before`.
fn resealed(before: &Path, tree: &Path) -> Vec<String> {
    let mut differ: Vec<String> = files(tree)
        .into_iter()
        .filter(|name| !name.starts_with("paracrypt-manifest"))
        .filter(|name| std::fs::read(before.join(name)).ok() != std::fs::read(tree.join(name)).ok())
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    differ.sort();
    differ
}

/// `--update --checksum` across ranks: the files are checked (their contents hashed) by every
/// rank, each file once, and the tree is the one a local update makes: the files changed with
/// their size and time kept are sealed again, every other file kept as it was.
#[test]
fn an_update_with_checksum_is_checked_by_every_rank_and_keeps_what_a_local_update_keeps() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let first = d.join("first");
    ok(run(crate::tree::encrypt(&["-k", k], &plain, &first)));
    // Two files changed, a small one and a large one, each keeping its size and time.
    for name in ["a/b/small1", "c/large2"] {
        let path = plain.join(name);
        let time = std::fs::metadata(&path).unwrap().modified().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(time).unwrap();
    }
    let copy = |to: &Path| {
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(&first)
            .arg(to)
            .status()
            .unwrap();
        assert!(status.success());
    };
    let local = d.join("local");
    copy(&local);
    ok(run(crate::tree::encrypt(
        &["-k", k, "--update", "--checksum"],
        &plain,
        &local,
    )));
    let sealed_again = resealed(&first, &local);
    assert_eq!(sealed_again, ["a/b/small1.pcr", "c/large2.pcr"]);

    let all_files = 63;
    for ranks in [1, 2, 3] {
        let sealed = d.join(format!("sealed-{ranks}"));
        copy(&sealed);
        let args = ["-k", k, "--update", "--checksum", "--verbose"];
        let out = encrypt_on(ranks, &args, &plain, &sealed, |_| {});
        let (_, stderr) = status_and_stderr(&out);
        ok(out);
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("distributed: update: {ranks} ranks, ")))
            .unwrap_or_else(|| panic!("no update line: {stderr}"));
        let checked: Vec<u64> = (0..ranks)
            .map(|rank| {
                let word = format!("rank {rank}: ");
                let at = line.find(&word).unwrap() + word.len();
                let digits: String = line[at..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse().unwrap()
            })
            .collect();
        assert!(
            line.contains(&format!(" check tasks of {all_files} files")),
            "{line}"
        );
        assert_eq!(checked.iter().sum::<u64>(), all_files, "{line}");
        assert!(checked.iter().all(|&n| n > 0), "{line}");
        assert_eq!(resealed(&first, &sealed), sealed_again, "{ranks} ranks");
        let back = d.join(format!("back-{ranks}"));
        ok(run(decrypt(&["-k", k], &sealed, &back)));
        assert_eq!(snapshot(&back), snapshot(&plain));
    }
}

/// The error line of a run, without `paracrypt: error: ` and the rank that reports it.
fn error_words(stderr: &str) -> String {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("paracrypt: error: "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    let unranked = line
        .strip_prefix("rank ")
        .and_then(|rest| rest.split_once(": "))
        .map_or(line, |(_, rest)| rest);
    unranked.to_string()
}

/// What the walk refuses deep in a subtree that is a walk task (walked by whichever rank takes
/// it, its refusal sent back to rank 0 as a part's bytes, even rank 0's own): a FIFO, a
/// directory that cannot be listed. Refused once, in the words and with the exit code of a
/// local run, and nothing is written.
#[test]
fn what_the_walk_refuses_deep_in_a_subtree_is_refused_in_a_local_runs_words() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_directories(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");

    let fifo = plain.join("dir23/sub/pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()));
    let local = run(crate::tree::encrypt(&["-k", k], &plain, &sealed));
    let (local_code, local_stderr) = status_and_stderr(&local);
    assert_eq!(local_code, 2, "{local_stderr}");
    assert!(
        local_stderr.contains("dir23/sub/pipe: a FIFO"),
        "{local_stderr}"
    );
    assert!(!sealed.exists());
    for ranks in [2, 3] {
        let out = encrypt_on(ranks, &["-k", k], &plain, &sealed, |_| {});
        let (code, stderr) = status_and_stderr(&out);
        assert_eq!(code, local_code, "{stderr}");
        one_error(&stderr, "dir23/sub/pipe: a FIFO");
        assert_eq!(error_words(&stderr), error_words(&local_stderr));
        assert!(!sealed.exists());
    }
    std::fs::remove_file(&fifo).unwrap();

    // A directory no rank can list (run as root would be without its power to read
    // anything).
    let locked = plain.join("dir31/sub");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let local = run(without_override(crate::tree::encrypt(
        &["-k", k],
        &plain,
        &sealed,
    )));
    let (local_code, local_stderr) = status_and_stderr(&local);
    assert!(
        local_stderr.contains("cannot list directory") && local_stderr.contains("dir31/sub"),
        "{local_stderr}"
    );
    let out = encrypt_on(2, &["-k", k], &plain, &sealed, |cmd| {
        *cmd = without_override(std::mem::replace(cmd, paracrypt()));
    });
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stderr) = status_and_stderr(&out);
    assert_eq!(code, local_code, "{stderr}");
    one_error(&stderr, "Permission denied");
    assert_eq!(error_words(&stderr), error_words(&local_stderr));
    assert!(!sealed.exists());
}

/// Issue #51 across ranks: rank 0 holds the tree it finds against its host's record, as a
/// local update does: an older generation put back is refused once, before any rank writes.
#[test]
fn an_old_generation_put_back_is_refused_across_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = tree_of_sizes(d);
    let key = keygen(d, "key");
    let k = key.to_str().unwrap();
    let sealed = d.join("sealed");
    ok(run(crate::tree::encrypt(&["-k", k], &plain, &sealed)));
    let first = std::fs::read(sealed.join("paracrypt-manifest")).unwrap();
    std::fs::write(plain.join("a/b/small1"), b"newer").unwrap();
    let output = encrypt_on(2, &["-k", k, "--update"], &plain, &sealed, |_| {});
    assert!(output.status.success(), "{:?}", status_and_stderr(&output));
    std::fs::write(sealed.join("paracrypt-manifest"), &first).unwrap();
    let before = snapshot(&sealed);
    let output = encrypt_on(2, &["-k", k, "--update"], &plain, &sealed, |_| {});
    let (code, stderr) = status_and_stderr(&output);
    assert_eq!(code, 1, "{stderr}");
    one_error(&stderr, "older than the generation 2 this host wrote there");
    assert!(snapshot(&sealed) == before, "a refused update wrote");
}
