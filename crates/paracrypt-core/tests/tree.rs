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
use paracrypt_core::container::Argon2Params;
use paracrypt_core::request::{ChunkSize, Driver, Key, Request, Sealing, Secret};
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
    fn create(
        &self,
        path: &Path,
        create: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        // Created inside the call, never before it.
        assert!(!path.exists(), "{}", path.display());
        create()?;
        assert!(path.exists(), "{}", path.display());
        self.added.lock().unwrap().push(path.to_path_buf());
        Ok(())
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

/// Replaces the output's directory `dir` by a link to `elsewhere` as the first named temporary
/// file in it is created: a directory of the tree swapped for a link under a run that already
/// made it (or found it as it should be).
pub(super) struct Swapping {
    pub dir: PathBuf,
    pub elsewhere: PathBuf,
    pub swapped: std::sync::atomic::AtomicBool,
}

impl Guard for Swapping {
    fn create(
        &self,
        path: &Path,
        create: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        if path.parent() == Some(&self.dir) && !self.swapped.swap(true, Ordering::SeqCst) {
            std::fs::rename(&self.dir, self.dir.with_extension("moved")).unwrap();
            std::os::unix::fs::symlink(&self.elsewhere, &self.dir).unwrap();
        }
        create()
    }
}

impl Swapping {
    /// Checks that the swap happened, that nothing came to be where the link leads, and that
    /// the run's failures name the link.
    #[track_caller]
    pub fn nothing_through(&self, failures: &[paracrypt_core::Error]) {
        assert!(self.swapped.load(Ordering::SeqCst));
        let there: Vec<_> = std::fs::read_dir(&self.elsewhere)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(there.is_empty(), "written through the link: {there:?}");
        let refused = format!(
            "{} is a symbolic link: nothing is written or removed through a link",
            self.dir.display()
        );
        assert!(
            failures.iter().any(|e| e.to_string().contains(&refused)),
            "{failures:?}"
        );
    }
}

/// Decryption into a tree whose directory is swapped for a link mid-run writes nothing where
/// the link leads: each file goes into the directory opened for it, or fails naming the link.
#[test]
fn a_decryption_writes_nothing_through_a_directory_swapped_for_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default()).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let runner = Runner::new();
    let sealed = dir.path().join("sealed");
    tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
    let back = dir.path().join("back");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let guard = Arc::new(Swapping {
        dir: back.join("d"),
        elsewhere,
        swapped: Default::default(),
    });
    let options = Options {
        named_temps: true,
        guard: guard.clone(),
        ..Options::default()
    };
    let done = with_threads(2, || {
        tree::decrypt(&runner, &open, &sealed, &back, &options)
    })
    .unwrap();
    guard.nothing_through(&done.failures);
}

/// Step 2 of [`tree::plan`] as another process runs it: the task to bytes and back, sealed
/// there, its result to bytes and back.
fn seal_elsewhere(runner: &Runner, task: &tree::Task, threads: usize) -> tree::TaskResult {
    let sent = task.to_bytes().unwrap();
    let there = tree::Task::from_bytes(&sent).unwrap();
    let result = with_threads(threads, || tree::seal_task(runner, &there));
    tree::TaskResult::from_bytes(&result.to_bytes()).unwrap()
}

/// A tree planned once and sealed in tasks, each through its bytes (as Dask workers or MPI
/// ranks get them), lists the same tree as one process sealing it whole, opens with the same
/// secret and signer, and decrypts to the same tree; the tasks carry neither the key nor the
/// tree's own key.
#[test]
fn a_tree_sealed_in_tasks_lists_the_same_tree_as_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let signer = SigningKey::generate_ed25519();
    let runner = Runner::new();
    for secret in [
        Secret::Key(key.clone()),
        Secret::password_with_params(
            "tree password",
            Argon2Params {
                m_cost: 64,
                t_cost: 1,
                p_cost: 1,
            },
        ),
    ] {
        let password = matches!(secret, Secret::Password(..));
        let sealing = Sealing {
            chunk_size: Some(ChunkSize::new(64 << 10).unwrap()),
            sign: Some(signer.clone()),
            ..Sealing::default()
        };
        let seal = Request::encrypt(secret.clone(), sealing).unwrap();
        let open = Request::decrypt(secret, Some(signer.verifying_key())).unwrap();
        let whole = dir.path().join(format!("whole-{password}"));
        let done = tree::encrypt(&runner, &seal, &plain, &whole, &Options::default()).unwrap();
        assert!(done.is_complete(), "{:?}", done.failures);
        let expected = described(&tree::read_manifest(&runner, &open, &whole).unwrap().entries);

        let tasked = dir.path().join(format!("tasks-{password}"));
        let plan = tree::plan(&runner, &seal, &plain, &tasked, &Options::default()).unwrap();
        assert_eq!(plan.files(), 153);
        // The plan's own cut covers every file once, in order: one task for so small a
        // tree, or as many as asked for.
        let one = plan.tasks(1);
        assert_eq!((one.len(), one[0].clone()), (1, 0..153));
        let cut = plan.tasks(5);
        assert_eq!(cut.len(), 5);
        assert_eq!(cut.first().unwrap().start, 0);
        assert_eq!(cut.last().unwrap().end, 153);
        assert!(cut.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(plan.tasks(1000).len(), 153);
        // Any cut seals the same tree: three tasks of uneven sizes, at 1 and 3 threads.
        let mut sealed = tree::Sealed::new(&plan);
        for (at, files) in [0..1, 1..100, 100..153].into_iter().enumerate() {
            let task = plan.task(files).unwrap();
            let sent = task.to_bytes().unwrap();
            assert!(
                !sent.windows(32).any(|w| w == key.as_bytes()),
                "a task carries the key"
            );
            let result = seal_elsewhere(&runner, &task, 1 + 2 * (at % 2));
            assert_eq!(result.failed(), 0);
            sealed.add(&plan, result).unwrap();
        }
        let done = plan.finish(&runner, sealed);
        assert!(done.is_complete(), "{:?}", done.failures);
        assert_eq!(done.files, 153);
        let manifest = tree::read_manifest(&runner, &open, &tasked).unwrap();
        assert_eq!(described(&manifest.entries), expected);
        assert_eq!(
            manifest.signer.as_ref().unwrap().to_field(),
            signer.verifying_key().to_field()
        );
        let back = dir.path().join(format!("back-{password}"));
        let done = tree::decrypt(&runner, &open, &tasked, &back, &Options::default()).unwrap();
        assert!(done.is_complete() && done.files == 153);
        for (entry, _) in manifest.files() {
            let path = String::from_utf8(entry.path.clone()).unwrap();
            assert_eq!(
                std::fs::read(back.join(&path)).unwrap(),
                std::fs::read(plain.join(&path)).unwrap(),
                "{path}"
            );
        }
        assert!(
            tree::verify(&runner, &open, &tasked, &[])
                .unwrap()
                .is_intact()
        );
    }
}

/// A file that changed between the plan and its task, and a task that never came back, leave
/// the tree done in part as a local run does: every other file complete, each failure naming
/// its file, the manifest listing what was done and marked incomplete; `--update` then
/// finishes it.
#[test]
fn a_failed_task_leaves_the_tree_done_in_part() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let runner = Runner::new();
    let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default()).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let sealed_at = dir.path().join("sealed");
    let plan = tree::plan(&runner, &seal, &plain, &sealed_at, &Options::default()).unwrap();
    let tasks = [plan.task(0..50).unwrap(), plan.task(50..153).unwrap()];
    // The files under a/ are the plan's first 50 (the walk's order); "b/c/f1" is in the
    // second task, and grows after the plan.
    std::fs::write(plain.join("b/c/f1"), data(5000, 1)).unwrap();
    let mut sealed = tree::Sealed::new(&plan);
    let result = seal_elsewhere(&runner, &tasks[1], 2);
    assert_eq!(result.failed(), 1);
    sealed.add(&plan, result).unwrap();
    // The first task's worker died: its files are lost.
    sealed.lost(&plan, 0..50, "its worker died");
    let done = plan.finish(&runner, sealed);
    assert!(!done.is_complete());
    assert_eq!(done.failures.len(), 51);
    assert_eq!(done.files, 102);
    let lines: Vec<String> = done.failures.iter().map(ToString::to_string).collect();
    // In the tree's order, each naming its file.
    assert!(
        lines[0].contains("a/f0") && lines[0].contains("its worker died"),
        "{lines:?}"
    );
    assert!(
        lines[50].contains("b/c/f1") && lines[50].contains("changed since"),
        "{lines:?}"
    );
    let manifest = tree::read_manifest(&runner, &open, &sealed_at).unwrap();
    assert!(!manifest.complete);
    assert_eq!(manifest.files().count() as u64, done.files);

    let update = Options {
        update: true,
        ..Options::default()
    };
    let done = tree::encrypt(&runner, &seal, &plain, &sealed_at, &update).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    assert_eq!(done.files + done.unchanged, 153);
    assert!(
        tree::verify(&runner, &open, &sealed_at, &[])
            .unwrap()
            .is_intact()
    );
}

/// A task's bytes cut short or altered are refused, and a plan of armored age files (written
/// in order, on one process) is not cut into tasks.
#[test]
fn a_damaged_task_and_an_armored_tree_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let runner = Runner::new();
    let seal = Request::encrypt(Secret::Key(Key::generate()), Sealing::default()).unwrap();
    let plan = tree::plan(
        &runner,
        &seal,
        &plain,
        &dir.path().join("out"),
        &Options::default(),
    )
    .unwrap();
    let bytes = plan.task(0..3).unwrap().to_bytes().unwrap();
    for bad in [
        &bytes[..bytes.len() - 1],
        &bytes[1..],
        &[bytes.as_slice(), b"x"].concat(),
    ] {
        let err = tree::Task::from_bytes(bad).unwrap_err();
        assert!(err.to_string().contains("not a tree's task"), "{err}");
    }
    assert!(tree::TaskResult::from_bytes(&bytes).is_err());

    let recipient = age::x25519::Identity::generate().to_public().to_string();
    let mut recipients = paracrypt_core::recipient::Recipients::new();
    recipients.add(&recipient, "test").unwrap();
    let armored = Sealing {
        format: paracrypt_core::request::Format::Age,
        armor: true,
        ..Sealing::default()
    };
    let seal = Request::encrypt(Secret::Recipients(Arc::new(recipients)), armored).unwrap();
    let plan = tree::plan(
        &runner,
        &seal,
        &plain,
        &dir.path().join("armored"),
        &Options::default(),
    )
    .unwrap();
    let err = plan.task(0..1).unwrap_err();
    assert!(err.to_string().contains("armor"), "{err}");
}

/// Step 2 of [`tree::open_plan`] as another process runs it: the task to bytes and back,
/// opened there, its result to bytes and back.
fn open_elsewhere(runner: &Runner, task: &tree::OpenTask, threads: usize) -> tree::TaskResult {
    let sent = task.to_bytes();
    let there = tree::OpenTask::from_bytes(&sent).unwrap();
    let result = with_threads(threads, || tree::open_task(runner, &there));
    tree::TaskResult::from_bytes(&result.to_bytes()).unwrap()
}

/// Every path under `root` with its kind, mode, time and contents (a link's target), one line
/// each: what a decryption must give back.
fn state(root: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_symlink() {
                format!("-> {:?}", std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else {
                blake3::hash(&std::fs::read(&path).unwrap())
                    .to_hex()
                    .to_string()
            };
            let mtime = if meta.is_symlink() {
                0
            } else {
                std::os::unix::fs::MetadataExt::mtime(&meta)
            };
            lines.push(format!(
                "{} {:o} {mtime} {what}",
                path.strip_prefix(root).unwrap().display(),
                meta.permissions().mode() & 0o7777,
            ));
        }
    }
    lines.sort();
    lines
}

/// A tree opened in tasks, each through its bytes (as Dask workers or MPI ranks get them),
/// decrypts to the same tree as one process (contents, modes, times, links), for a key-file
/// tree, a password tree and a tree to an age recipient; no task carries the key, the
/// password's tree key or the identity. A file swapped for another fails alone, named, in the
/// task the plan made; a damaged task's bytes are refused, and an armored tree is not cut.
#[test]
fn a_tree_opened_in_tasks_gives_the_same_tree_as_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let runner = Runner::new();
    let key = Key::generate();
    let identity = age::x25519::Identity::generate();
    let identity_text = {
        use age::secrecy::ExposeSecret;
        identity.to_string().expose_secret().to_owned()
    };
    let mut recipients = paracrypt_core::recipient::Recipients::new();
    recipients
        .add(&identity.to_public().to_string(), "test")
        .unwrap();
    let mut identities = paracrypt_core::recipient::Identities::new();
    identities
        .add_file("test", identity_text.as_bytes())
        .unwrap();
    let weak = Argon2Params {
        m_cost: 64,
        t_cost: 1,
        p_cost: 1,
    };
    let cases = [
        ("key", Secret::Key(key.clone()), Secret::Key(key.clone())),
        (
            "password",
            Secret::password_with_params("tree password", weak),
            Secret::password_with_params("tree password", weak),
        ),
        (
            "recipient",
            Secret::Recipients(Arc::new(recipients)),
            Secret::Identities(Arc::new(identities)),
        ),
    ];
    for (name, seal, open) in cases {
        let seal = Request::encrypt(seal, Sealing::default()).unwrap();
        let open = Request::decrypt(open, None).unwrap();
        let sealed = dir.path().join(format!("sealed-{name}"));
        let done = tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
        assert!(done.is_complete(), "{:?}", done.failures);
        let whole = dir.path().join(format!("whole-{name}"));
        let done = tree::decrypt(&runner, &open, &sealed, &whole, &Options::default()).unwrap();
        assert!(done.is_complete(), "{:?}", done.failures);

        let tasked = dir.path().join(format!("tasked-{name}"));
        let plan = tree::open_plan(
            &runner,
            &open,
            &sealed,
            &tasked,
            &Options::default(),
            Driver::Distributed,
        )
        .unwrap();
        assert_eq!(plan.files(), 153);
        let cut = plan.tasks(3);
        assert_eq!(cut.len(), 3);
        let mut opened = tree::Opened::new(&plan);
        for (at, files) in cut.into_iter().enumerate() {
            let task = plan.task(files).unwrap();
            let sent = task.to_bytes();
            assert!(
                !sent.windows(32).any(|w| w == key.as_bytes()),
                "a task carries the key"
            );
            assert!(
                !sent
                    .windows(20)
                    .any(|w| w == &identity_text.as_bytes()[..20]),
                "a task carries the identity"
            );
            let result = open_elsewhere(&runner, &task, 1 + 2 * (at % 2));
            assert_eq!(result.failed(), 0);
            opened.add(&plan, result).unwrap();
        }
        let done = plan.finish(opened);
        assert!(done.is_complete(), "{name}: {:?}", done.failures);
        assert_eq!((done.files, done.bytes), (153, whole_bytes(&plain)));
        assert_eq!(state(&tasked), state(&whole), "{name}");
        assert_eq!(state(&tasked), state(&plain), "{name}");
    }

    // Two files of the key tree swapped: each fails alone, named; the others are written.
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let sealed = dir.path().join("sealed-key");
    let (a, b) = (sealed.join("a/f0.pcr"), sealed.join("a/f3.pcr"));
    let held = std::fs::read(&a).unwrap();
    std::fs::copy(&b, &a).unwrap();
    std::fs::write(&b, held).unwrap();
    let out = dir.path().join("swapped");
    let plan = tree::open_plan(
        &runner,
        &open,
        &sealed,
        &out,
        &Options::default(),
        Driver::Distributed,
    )
    .unwrap();
    let mut opened = tree::Opened::new(&plan);
    for files in plan.tasks(2) {
        let result = open_elsewhere(&runner, &plan.task(files).unwrap(), 2);
        opened.add(&plan, result).unwrap();
    }
    let done = plan.finish(opened);
    let failed: Vec<String> = done.failures.iter().map(ToString::to_string).collect();
    assert_eq!(done.files, 151, "{failed:?}");
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed[0].starts_with("a/f0: its encrypted file a/f0.pcr is not the one"),
        "{failed:?}"
    );
    assert!(failed[1].starts_with("a/f3: "), "{failed:?}");
    assert!(!out.join("a/f0").exists() && out.join("a/f6").exists());

    // A task's bytes cut short or altered are refused.
    let plan = tree::open_plan(
        &runner,
        &open,
        &sealed,
        &dir.path().join("refused"),
        &Options::default(),
        Driver::Distributed,
    )
    .unwrap();
    let bytes = plan.task(0..3).unwrap().to_bytes();
    for bad in [
        &bytes[..bytes.len() - 1],
        &bytes[1..],
        &[&bytes[..], b"x"].concat(),
    ] {
        let err = tree::OpenTask::from_bytes(bad).unwrap_err();
        assert!(
            err.to_string().contains("not a tree's decryption task"),
            "{err}"
        );
    }
    assert!(tree::Task::from_bytes(&bytes).is_err());

    // An armored age tree is read in order, on one process: it is not cut into tasks.
    let mut recipients = paracrypt_core::recipient::Recipients::new();
    recipients
        .add(&identity.to_public().to_string(), "test")
        .unwrap();
    let armored = Sealing {
        format: paracrypt_core::request::Format::Age,
        armor: true,
        ..Sealing::default()
    };
    let seal = Request::encrypt(Secret::Recipients(Arc::new(recipients)), armored).unwrap();
    let sealed = dir.path().join("sealed-armored");
    assert!(
        tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default())
            .unwrap()
            .is_complete()
    );
    let mut identities = paracrypt_core::recipient::Identities::new();
    identities
        .add_file("test", identity_text.as_bytes())
        .unwrap();
    let open = Request::decrypt(Secret::Identities(Arc::new(identities)), None).unwrap();
    let armored_out = dir.path().join("armored");
    let err = tree::open_plan(
        &runner,
        &open,
        &sealed,
        &armored_out,
        &Options::default(),
        Driver::Distributed,
    )
    .unwrap_err();
    assert!(err.to_string().contains("an armored age tree"), "{err}");
    assert!(!armored_out.exists(), "a refused plan made its output");
    // Planned to be opened here, it is not cut into tasks either.
    let plan = tree::open_plan(
        &runner,
        &open,
        &sealed,
        &armored_out,
        &Options::default(),
        Driver::Whole,
    )
    .unwrap();
    assert!(plan.task(0..1).is_err());
}

/// The plaintext bytes of the regular files under `root`.
fn whole_bytes(root: &Path) -> u64 {
    walkdir_files(root)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

fn walkdir_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                files.push(path);
            }
        }
    }
    files
}

/// A file that vanishes after the walk, one replaced by another file of the same name, and one
/// cut short fail alone, each naming its file, in a local run (`Plan::seal_here`, what
/// `tree::encrypt` runs); every other file is sealed, no temporary file is left, the manifest
/// lists what was done, marked incomplete, and `--update` then finishes the tree as it is now.
#[test]
fn a_file_vanishing_or_replaced_after_the_walk_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let runner = Runner::new();
    let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default()).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let out = dir.path().join("out");
    let plan = tree::plan(&runner, &seal, &plain, &out, &Options::default()).unwrap();
    // Between the walk and the sealing: one file gone, one replaced, the large one cut short.
    std::fs::remove_file(plain.join("a/f3")).unwrap();
    std::fs::write(plain.join("b/c/f4.new"), data(100, 4)).unwrap();
    std::fs::rename(plain.join("b/c/f4.new"), plain.join("b/c/f4")).unwrap();
    let large = std::fs::OpenOptions::new()
        .write(true)
        .open(plain.join("large"))
        .unwrap();
    large.set_len(1 << 20).unwrap();
    let sealed = with_threads(3, || plan.seal_here(&runner));
    let done = plan.finish(&runner, sealed);
    let lines: Vec<String> = done.failures.iter().map(ToString::to_string).collect();
    assert_eq!(done.files, 150, "{lines:?}");
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[0].starts_with("a/f3: ")
            && lines[0].contains("it was removed since the tree was listed"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("b/c/f4: ") && lines[1].contains("it was replaced since"),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with("large: ") && lines[2].contains("3145728 bytes then, 1048576 now"),
        "{lines:?}"
    );
    let stored: Vec<PathBuf> = walkdir_files(&out);
    assert!(
        stored
            .iter()
            .all(|p| !p.to_string_lossy().contains(".paracrypt-")),
        "{stored:?}"
    );
    assert!(!out.join("a/f3.pcr").exists() && !out.join("large.pcr").exists());
    let manifest = tree::read_manifest(&runner, &open, &out).unwrap();
    assert!(!manifest.complete);
    assert_eq!(manifest.files().count(), 150);

    let update = Options {
        update: true,
        ..Options::default()
    };
    let done = tree::encrypt(&runner, &seal, &plain, &out, &update).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    assert_eq!((done.files, done.unchanged), (2, 150));
    let back = dir.path().join("back");
    let done = tree::decrypt(&runner, &open, &out, &back, &Options::default()).unwrap();
    assert!(done.is_complete() && done.files == 152);
    assert_eq!(state(&back), state(&plain));
}

/// A coordinator that checkpoints as results come in (`Sealed::checkpoint`, as rank 0 of a
/// tree across MPI ranks does) leaves, when it is stopped before step 3, an incomplete
/// manifest of the files done so far, which `--update` keeps and goes on from.
#[test]
fn a_checkpoint_of_tasks_sealed_so_far_lets_update_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let runner = Runner::new();
    let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default()).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let sealed_at = dir.path().join("sealed");
    let plan = tree::plan(&runner, &seal, &plain, &sealed_at, &Options::default()).unwrap();
    let mut sealed = tree::Sealed::new(&plan);
    let result = seal_elsewhere(&runner, &plan.task(0..100).unwrap(), 2);
    sealed.add(&plan, result).unwrap();
    sealed.checkpoint(&plan, &runner);
    // The coordinator stops here (killed): no step 3.
    drop((sealed, plan));
    let manifest = tree::read_manifest(&runner, &open, &sealed_at).unwrap();
    assert!(!manifest.complete);
    assert_eq!(manifest.files().count(), 100);

    let update = Options {
        update: true,
        ..Options::default()
    };
    let done = tree::encrypt(&runner, &seal, &plain, &sealed_at, &update).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    assert_eq!((done.unchanged, done.files), (100, 53));
    assert!(
        tree::verify(&runner, &open, &sealed_at, &[])
            .unwrap()
            .is_intact()
    );
}

/// The same checkpoint of a tree to recipients, on a host that holds no identity: the host's
/// record of the checkpoint it wrote is what the update goes on from (every file sealed so far
/// kept), and without that record (another host's state directory) every file is sealed again.
#[test]
fn a_checkpoint_of_a_tree_to_recipients_is_recorded_for_an_update_without_identity() {
    use age::secrecy::ExposeSecret;
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let identity = age::x25519::Identity::generate();
    let mut recipients = paracrypt_core::recipient::Recipients::new();
    recipients
        .add(&identity.to_public().to_string(), "r")
        .unwrap();
    let runner = Runner::new();
    let seal =
        Request::encrypt(Secret::Recipients(Arc::new(recipients)), Sealing::default()).unwrap();
    let state = |name: &str| Options {
        state: Some(dir.path().join(name)),
        ..Options::default()
    };
    let sealed_at = dir.path().join("sealed");
    let plan = tree::plan(&runner, &seal, &plain, &sealed_at, &state("host")).unwrap();
    let mut sealed = tree::Sealed::new(&plan);
    let result = seal_elsewhere(&runner, &plan.task(0..100).unwrap(), 2);
    sealed.add(&plan, result).unwrap();
    sealed.checkpoint(&plan, &runner);
    drop((sealed, plan));

    let update = |host: &str| Options {
        update: true,
        ..state(host)
    };
    let done = tree::encrypt(&runner, &seal, &plain, &sealed_at, &update("host")).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    assert_eq!((done.unchanged, done.files), (100, 53));
    let done = tree::encrypt(&runner, &seal, &plain, &sealed_at, &update("another")).unwrap();
    assert_eq!((done.unchanged, done.files), (0, 153));
    let mut identities = paracrypt_core::recipient::Identities::new();
    identities
        .add_file("k", identity.to_string().expose_secret().as_bytes())
        .unwrap();
    let open = Request::decrypt(Secret::Identities(Arc::new(identities)), None).unwrap();
    assert!(
        tree::verify(&runner, &open, &sealed_at, &[])
            .unwrap()
            .is_intact()
    );
}

/// A task sealed with a guard (`seal_task_guarded`, as an MPI rank seals its tasks) tells it
/// of each named temporary file it writes, so that the process's interrupt handler can remove
/// them; the plan's own guard is not the task's (it stays in the plan's process).
#[test]
fn a_task_tells_its_guard_of_every_named_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let runner = Runner::new();
    let seal = Request::encrypt(Secret::Key(Key::generate()), Sealing::default()).unwrap();
    let options = Options {
        named_temps: true,
        ..Options::default()
    };
    let sealed_at = dir.path().join("sealed");
    let plan = tree::plan(&runner, &seal, &plain, &sealed_at, &options).unwrap();
    let task = tree::Task::from_bytes(&plan.task(0..20).unwrap().to_bytes().unwrap()).unwrap();
    let guard = Arc::new(Recorded::default());
    let result = tree::seal_task_guarded(&runner, &task, guard.clone());
    assert_eq!(result.failed(), 0);
    let added: BTreeSet<PathBuf> = guard.added.lock().unwrap().iter().cloned().collect();
    let forgotten: BTreeSet<PathBuf> = guard.forgotten.lock().unwrap().iter().cloned().collect();
    assert_eq!(added.len(), 20, "{added:?}");
    assert_eq!(added, forgotten);
    assert!(added.iter().all(|path| !path.exists()));
}

/// Files larger than one task, between small files (the schedule's lanes give their tasks to
/// different threads at once), decrypt to the same tree at 1 and 3 threads; a damaged chunk in
/// the middle of one of them fails that file alone, naming it, and leaves nothing at its name
/// and no temporary file, while the others are done.
#[test]
fn large_files_among_small_ones_give_the_same_tree_at_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(plain.join("s")).unwrap();
    for (i, len) in [(3 << 20) + 5, 5 << 20, (2 << 20) + 100_001]
        .into_iter()
        .enumerate()
    {
        std::fs::write(plain.join(format!("big{i}")), data(len, 100 + i as u32)).unwrap();
    }
    for i in 0..40u32 {
        let len = (i as usize * 20_011) % 700_000;
        std::fs::write(plain.join("s").join(format!("f{i}")), data(len, i)).unwrap();
    }
    let key = Key::generate();
    let sealing = Sealing {
        chunk_size: Some(ChunkSize::new(64 << 10).unwrap()),
        ..Sealing::default()
    };
    let seal = Request::encrypt(Secret::Key(key.clone()), sealing).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let runner = Runner::new();
    let sealed = dir.path().join("sealed");
    let done = with_threads(3, || {
        tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default())
    })
    .unwrap();
    assert!(
        done.is_complete() && done.files == 43,
        "{:?}",
        done.failures
    );
    for threads in [1, 3] {
        let back = dir.path().join(format!("back-{threads}"));
        let done = with_threads(threads, || {
            tree::decrypt(&runner, &open, &sealed, &back, &Options::default())
        })
        .unwrap();
        assert!(
            done.is_complete() && done.files == 43,
            "{:?}",
            done.failures
        );
        assert_eq!(state(&back), state(&plain), "{threads} threads");
    }

    // One byte of big1's third MiB changed: its chunk fails to authenticate.
    let damaged = sealed.join("big1.pcr");
    let mut bytes = std::fs::read(&damaged).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&damaged, bytes).unwrap();
    for threads in [1, 3] {
        let back = dir.path().join(format!("damaged-{threads}"));
        let done = with_threads(threads, || {
            tree::decrypt(&runner, &open, &sealed, &back, &Options::default())
        })
        .unwrap();
        assert_eq!(done.files, 42, "{threads} threads");
        assert_eq!(done.failures.len(), 1, "{:?}", done.failures);
        assert!(
            done.failures[0].to_string().contains("big1"),
            "{}",
            done.failures[0]
        );
        assert!(!back.join("big1").exists());
        let mut files: Vec<String> = walkdir_files(&back)
            .iter()
            .map(|p| p.strip_prefix(&back).unwrap().display().to_string())
            .collect();
        files.sort();
        let mut expected: Vec<String> = (0..40).map(|i| format!("s/f{i}")).collect();
        expected.extend(["big0".to_owned(), "big2".to_owned()]);
        expected.sort();
        assert_eq!(files, expected, "{threads} threads");
    }
}

/// An update's checks in tasks (as MPI ranks run them), each through its bytes, keep the
/// files a local update keeps: with `checksum`, a file changed with its size and time kept is
/// sealed again, every other file kept. A task whose answer never came keeps none of its
/// files; a check task naming a path outside the tree, an answer of another task, and checks
/// of another walk are refused.
#[test]
fn an_updates_checks_in_tasks_keep_what_a_local_update_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let key = Key::generate();
    let sealing = Sealing {
        chunk_size: Some(ChunkSize::new(64 << 10).unwrap()),
        ..Sealing::default()
    };
    let seal = Request::encrypt(Secret::Key(key.clone()), sealing).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    let runner = Runner::new();
    let sealed = dir.path().join("sealed");
    let done = tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
    assert!(done.is_complete() && done.files == 153);
    // Two files changed, each keeping its size and time: a small one and the large one.
    for name in ["b/c/f4", "large"] {
        let path = plain.join(name);
        let time = std::fs::metadata(&path).unwrap().modified().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(time).unwrap();
    }
    let update = Options {
        update: true,
        checksum: true,
        ..Options::default()
    };
    // A local update's plan: the two changed files to seal.
    let local = tree::plan(&runner, &seal, &plain, &sealed, &update).unwrap();
    assert_eq!(local.files(), 2);
    drop(local);

    let provider = paracrypt_core::provider::Provider::default();
    let checked = |answered: &dyn Fn(usize) -> bool| {
        let prepared = tree::prepare(&runner, &seal, &plain, &sealed, &update).unwrap();
        let walk = tree::Walk::here(&plain).unwrap();
        let mut checks = prepared.checks(&walk, 4).unwrap();
        assert_eq!(checks.files(), 153, "every file has its size listed");
        assert!(checks.tasks() >= 4, "{checks:?}");
        for i in 0..checks.tasks() {
            let bytes = checks.task(i);
            let answer = with_threads(1 + 2 * (i % 2), || {
                tree::check_task(&bytes, provider, &|| {})
            })
            .unwrap();
            // An answer cut short, or of a task that does not exist, is refused.
            assert!(checks.add(i, &answer[..answer.len() - 1]).is_err());
            assert!(checks.add(checks.tasks(), &answer).is_err());
            if answered(i) {
                checks.add(i, &answer).unwrap();
            }
        }
        (prepared, walk, checks)
    };
    // Every answer in: the same two files to seal, and the tree updated is the tree as it is.
    let (prepared, walk, checks) = checked(&|_| true);
    let plan = prepared.plan_checked(walk, checks).unwrap();
    assert_eq!(plan.files(), 2);
    let sealed_now = plan.seal_here(&runner);
    let done = plan.finish(&runner, sealed_now);
    assert!(done.is_complete(), "{:?}", done.failures);
    assert_eq!((done.files, done.unchanged), (2, 151));
    let back = dir.path().join("back");
    let done = tree::decrypt(&runner, &open, &sealed, &back, &Options::default()).unwrap();
    assert!(done.is_complete() && done.files == 153);
    for name in ["b/c/f4", "large", "a/f0", "d/private"] {
        assert_eq!(
            std::fs::read(back.join(name)).unwrap(),
            std::fs::read(plain.join(name)).unwrap(),
            "{name}"
        );
    }

    // The first task's answer lost: its files are sealed again, the others kept.
    let (prepared, walk, checks) = checked(&|i| i != 0);
    let first = {
        let bytes = checks.task(0);
        let answer = tree::check_task(&bytes, provider, &|| {}).unwrap();
        let mut alone = prepared.checks(&walk, 4).unwrap();
        alone.add(0, &answer).unwrap()
    };
    assert!(first > 0);
    let plan = prepared.plan_checked(walk, checks).unwrap();
    assert!(
        plan.files() >= first && plan.files() <= first + 2,
        "{}",
        plan.files()
    );
    drop(plan);

    // Checks of another walk do not plan this one.
    let (prepared, _, checks) = checked(&|_| true);
    std::fs::write(plain.join("new"), b"new").unwrap();
    let walk = tree::Walk::here(&plain).unwrap();
    assert!(prepared.plan_checked(walk, checks).is_err());

    // A check task naming a path outside the trees is refused.
    let prepared = tree::prepare(&runner, &seal, &plain, &sealed, &update).unwrap();
    let walk = tree::Walk::here(&plain).unwrap();
    let checks = prepared.checks(&walk, 1).unwrap();
    let good = checks.task(0);
    assert!(tree::check_task(&good, provider, &|| {}).is_ok());
    let needle = b"a/f0";
    let at = good
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    let mut bad = good.clone();
    bad[at..at + 4].copy_from_slice(b"../x");
    let refused = tree::check_task(&bad, provider, &|| {}).unwrap_err();
    assert!(refused.to_string().contains("check task"), "{refused}");
    assert!(tree::check_task(&good[..good.len() - 1], provider, &|| {}).is_err());
}

/// A file `x` beside a directory `x.pcr` (`x.age` in an age tree), empty or not, would both be
/// stored as `x.pcr`: refused before anything is written, on one line naming both, from a walk
/// here and a walk in parts alike. Hidden names store them; a link or a file of that name
/// is no clash.
#[test]
fn a_file_and_a_directory_of_its_stored_name_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Runner::new();
    let key = Key::generate();
    let mut recipients = paracrypt_core::recipient::Recipients::new();
    let identity = age::x25519::Identity::generate();
    recipients
        .add(&identity.to_public().to_string(), "test")
        .unwrap();
    let age = Sealing {
        format: paracrypt_core::request::Format::Age,
        ..Sealing::default()
    };
    let cases = [
        (Secret::Key(key.clone()), Sealing::default(), ".pcr"),
        (Secret::Recipients(Arc::new(recipients)), age, ".age"),
    ];
    for (n, (secret, sealing, suffix)) in cases.into_iter().enumerate() {
        let seal = Request::encrypt(secret, sealing).unwrap();
        for (m, full) in [true, false].into_iter().enumerate() {
            let plain = dir.path().join(format!("plain-{n}-{m}"));
            std::fs::create_dir_all(plain.join("d")).unwrap();
            std::fs::write(plain.join("d/x"), b"x").unwrap();
            let clash = plain.join(format!("d/x{suffix}"));
            std::fs::create_dir(&clash).unwrap();
            if full {
                std::fs::write(clash.join("y"), b"y").unwrap();
            }
            let says = format!(
                "{} and the directory {} would both be stored as d/x{suffix}: encrypt the tree \
                 with hidden names",
                plain.join("d/x").display(),
                clash.display()
            );
            let sealed = dir.path().join(format!("sealed-{n}-{m}"));
            let refused = tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default())
                .expect_err("refused");
            assert!(
                matches!(refused, paracrypt_core::Error::TreeNameClash(_)),
                "{refused}"
            );
            assert!(refused.to_string().starts_with(&says), "{refused}");
            assert!(!refused.to_string().contains('\n'));
            assert!(!sealed.exists(), "nothing written");

            // A walk in parts, as ranks walk it, is planned the same.
            let prepared = tree::prepare(&runner, &seal, &plain, &sealed, &Options::default());
            let mut top = tree::walk_top(&plain, 1, 2).unwrap();
            for i in 0..top.tasks() {
                let part = tree::walk_task(&top.task(i), &|| {}).unwrap();
                top.add(i, &part).unwrap();
            }
            let refused = prepared.unwrap().plan(top.finish().unwrap()).err();
            assert!(
                refused.is_some_and(|e| e.to_string().starts_with(&says)),
                "a walk in parts"
            );
            assert!(!sealed.exists(), "nothing written");

            // Hidden names store both.
            let hidden = Options {
                hide_names: true,
                ..Options::default()
            };
            let done = tree::encrypt(&runner, &seal, &plain, &sealed, &hidden).unwrap();
            assert!(done.is_complete(), "{:?}", done.failures);
        }
    }

    // A link, or a file, of that name is stored otherwise (the manifest; `x.pcr.pcr`).
    let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default()).unwrap();
    let open = Request::decrypt(Secret::Key(key), None).unwrap();
    for link in [true, false] {
        let plain = dir.path().join(format!("beside-{link}"));
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join("x"), b"x").unwrap();
        if link {
            std::os::unix::fs::symlink("x", plain.join("x.pcr")).unwrap();
        } else {
            std::fs::write(plain.join("x.pcr"), b"not sealed").unwrap();
        }
        let sealed = dir.path().join(format!("beside-{link}-sealed"));
        let done = tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
        assert!(done.is_complete(), "{:?}", done.failures);
        let back = dir.path().join(format!("beside-{link}-back"));
        let done = tree::decrypt(&runner, &open, &sealed, &back, &Options::default()).unwrap();
        assert!(done.is_complete(), "{:?}", done.failures);
        assert_eq!(
            std::fs::read(back.join("x.pcr")).unwrap(),
            if link { &b"x"[..] } else { b"not sealed" }
        );
    }
}
