//! Whole directory trees through the Rust API (`paracrypt_core::tree`): the manifest describes
//! the same tree at any thread count (the same plaintext roots, every file once), a signed
//! tree names its signer, and every temporary file is told to the caller's guard and gone
//! after a run, a failed file included.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use paracrypt_core::Runner;
use paracrypt_core::request::{ChunkSize, Key, Request, Sealing, Secret};
use paracrypt_core::sign::SigningKey;
use paracrypt_core::tree::{self, Entry, EntryKind, Guard, Options};

use super::raw::{data, with_threads};

/// A tree of 150 small files over three directories (batched many to a task), one file of
/// 3 MiB (split over tasks), an empty file, a private file and a link. Returns its root.
fn sample(dir: &Path) -> PathBuf {
    let root = dir.join("plain");
    for sub in ["a", "b/c", "d"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    for i in 0..150u32 {
        let sub = ["a", "b/c", "d"][i as usize % 3];
        let len = (i as usize * 37) % 3000;
        std::fs::write(root.join(sub).join(format!("f{i}")), data(len, i)).unwrap();
    }
    std::fs::write(root.join("large"), data(3 << 20, 999)).unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::write(root.join("d/private"), b"secret").unwrap();
    std::fs::set_permissions(
        root.join("d/private"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("../large", root.join("a/link")).unwrap();
    root
}

/// The entries without what differs between two encryptions (each file's header), one line
/// each.
fn described(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            let kind = match &e.kind {
                EntryKind::Dir => "dir".to_owned(),
                EntryKind::File(f) => format!("{} {} {:?}", f.size, f.chunk_size, f.root),
                EntryKind::Symlink(target) => format!("-> {target:?}"),
            };
            format!("{:?} {:o} {:?} {kind}", e.path, e.mode, e.mtime)
        })
        .collect()
}

#[test]
fn the_manifest_lists_the_same_tree_at_any_thread_count_and_names_its_signer() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let signer = SigningKey::generate_ed25519();
    let sealing = Sealing {
        chunk_size: Some(ChunkSize::new(64 << 10).unwrap()),
        sign: Some(signer.clone()),
        ..Sealing::default()
    };
    let seal = Request::encrypt(Secret::Key(key.clone()), sealing).unwrap();
    let open = Request::decrypt(Secret::Key(key), Some(signer.verifying_key())).unwrap();
    let runner = Runner::new();
    let mut listed = Vec::new();
    for threads in [1, 4] {
        let sealed = dir.path().join(format!("sealed-{threads}"));
        let done = with_threads(threads, || {
            tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default())
        })
        .unwrap();
        assert!(done.is_complete(), "{:?}", done.failures);
        assert_eq!(
            (done.files, done.bytes),
            (
                153,
                (3 << 20) + 6 + (0..150).map(|i| (i * 37) % 3000).sum::<u64>()
            )
        );
        let manifest = tree::read_manifest(&runner, &open, &sealed).unwrap();
        assert!(manifest.complete && manifest.generation == 1);
        assert_eq!(
            manifest.signer.as_ref().unwrap().to_field(),
            signer.verifying_key().to_field()
        );
        let large = manifest.entry(b"large").unwrap();
        let EntryKind::File(file) = &large.kind else {
            panic!("{large:?}")
        };
        assert_eq!((file.size, file.chunk_size), (3 << 20, 64 << 10));
        assert_eq!(
            manifest.entry(b"a/link").unwrap().kind,
            EntryKind::Symlink(b"../large".to_vec())
        );
        assert_eq!(manifest.entry(b"d/private").unwrap().mode, 0o600);
        listed.push(described(&manifest.entries));

        let back = dir.path().join(format!("back-{threads}"));
        let done = with_threads(2, || {
            tree::decrypt(&runner, &open, &sealed, &back, &Options::default())
        })
        .unwrap();
        assert!(done.is_complete() && done.files == 153);
        for (entry, _) in manifest.files() {
            let path = String::from_utf8(entry.path.clone()).unwrap();
            assert_eq!(
                std::fs::read(back.join(&path)).unwrap(),
                std::fs::read(plain.join(&path)).unwrap(),
                "{path}"
            );
        }
    }
    assert_eq!(listed[0], listed[1]);
}

/// Records what a run tells its guard.
#[derive(Default)]
struct Recorded {
    added: Mutex<Vec<PathBuf>>,
    forgotten: Mutex<Vec<PathBuf>>,
    commits: AtomicU64,
}

impl Guard for Recorded {
    fn add(&self, path: &Path) {
        self.added.lock().unwrap().push(path.to_path_buf());
    }

    fn forget(&self, path: &Path) {
        self.forgotten.lock().unwrap().push(path.to_path_buf());
    }

    fn commit(&self, commit: &mut dyn FnMut()) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        commit();
    }
}

/// A file taking a new name is one atomic link and holds the guard (a front end's interrupt
/// lock) not at all; only a file replacing another, in two steps, is held off.
#[test]
fn only_a_commit_that_replaces_a_file_is_held_off() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let seal = Request::encrypt(Secret::Key(Key::generate()), Sealing::default()).unwrap();
    let runner = Runner::new();
    let guard = Arc::new(Recorded::default());
    let mut options = Options {
        guard: guard.clone(),
        ..Options::default()
    };
    let sealed = dir.path().join("sealed");
    with_threads(2, || {
        tree::encrypt(&runner, &seal, &plain, &sealed, &options)
    })
    .unwrap();
    let unnamed = guard.added.lock().unwrap().is_empty();
    // Where the filesystem has unnamed temporary files, only the final manifest replacing the
    // first checkpoint's is held; elsewhere each commit is one rename, held off never.
    assert_eq!(guard.commits.load(Ordering::Relaxed), u64::from(unnamed));
    options.force = true;
    let start = std::time::Instant::now();
    with_threads(2, || {
        tree::encrypt(&runner, &seal, &plain, &sealed, &options)
    })
    .unwrap();
    // Every file and the manifest replaced, and the manifest by each checkpoint: the first,
    // after the first file, then at most one a second.
    let commits = guard.commits.load(Ordering::Relaxed) - u64::from(unnamed);
    if unnamed {
        let checkpoints = commits - 153 - 1;
        assert!(
            (1..=1 + start.elapsed().as_secs()).contains(&checkpoints),
            "{commits} commits"
        );
    } else {
        assert_eq!(commits, 0);
    }
    let left: Vec<_> = std::fs::read_dir(&sealed)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().starts_with(".paracrypt-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn every_named_temporary_is_told_to_the_guard_and_gone_after_a_failed_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default()).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let runner = Runner::new();
    let guard = Arc::new(Recorded::default());
    let options = Options {
        named_temps: true,
        guard: guard.clone(),
        ..Options::default()
    };
    let sealed = dir.path().join("sealed");
    let done = with_threads(3, || {
        tree::encrypt(&runner, &seal, &plain, &sealed, &options)
    })
    .unwrap();
    assert!(done.is_complete());
    // The large file's middle chunk damaged: that file fails, named, and leaves nothing.
    let large = sealed.join("large.pcr");
    let mut bytes = std::fs::read(&large).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&large, bytes).unwrap();
    let back = dir.path().join("back");
    let done = with_threads(3, || {
        tree::decrypt(&runner, &open, &sealed, &back, &options)
    })
    .unwrap();
    assert_eq!(done.files, 152);
    assert_eq!(done.failures.len(), 1);
    let failure = done.failures[0].to_string();
    assert!(failure.starts_with("large: "), "{failure}");
    assert!(!back.join("large").exists());

    let added: BTreeSet<PathBuf> = guard.added.lock().unwrap().iter().cloned().collect();
    let forgotten: BTreeSet<PathBuf> = guard.forgotten.lock().unwrap().iter().cloned().collect();
    // Each file of both runs and the manifest went through a named temporary.
    assert!(added.len() > 2 * 153, "{}", added.len());
    assert_eq!(added, forgotten);
    assert!(added.iter().all(|path| !path.exists()));
}
