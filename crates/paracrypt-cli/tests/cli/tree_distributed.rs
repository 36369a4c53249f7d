//! One tree across MPI ranks (`mpirun -n N paracrypt encrypt --recursive --distributed`,
//! issue #35 item 5): the tree encrypted at 1, 2 and 3 ranks decrypts (on one machine) to the
//! same tree and verifies, every rank sealing some of it; a signed tree with hidden names and a
//! password; binary age files to a recipient, each opening with `age -d`; the combinations it
//! refuses, once, before any output; a file no rank can read leaves the tree done in part,
//! naming it, and `--update` across ranks finishes it; ranks ended by SIGTERM leave no
//! temporary file, and `--update` goes on from rank 0's checkpoint.

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

/// The tasks each rank sealed, from `--verbose`'s line: `rank R: N` for every rank.
fn tasks_by_rank(stderr: &str, ranks: usize) -> Vec<u64> {
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
    let (_, recipient) = crate::people::x25519(d, "identity");
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
    // Decrypting a tree runs on one machine.
    let sealed = d.join("sealed");
    ok(run(crate::tree::encrypt(&["-k", k], &plain, &sealed)));
    let mut all: Vec<String> = ["decrypt", "--recursive", "-q", "-k", k]
        .map(String::from)
        .into();
    all.extend([s(&sealed), "-o".into(), s(&out)]);
    let output = mpirun_with(2, all, |_| {});
    let (code, stderr) = status_and_stderr(&output);
    assert_eq!(code, 2, "{stderr}");
    one_error(&stderr, "decrypt --recursive runs on this machine's cores");
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
