//! Whole directory trees: every regular file of a tree encrypted into its own file, in the
//! format and with the options a single file takes, all of them on one schedule in the
//! caller's Rayon pool, with one encrypted manifest at the output's top that lists the tree and
//! binds each encrypted file to its place (`docs/FORMAT.md`, *Trees*).
//!
//! - [`encrypt`]: a directory into an encrypted tree: each file at the same path with the
//!   format's suffix (`.pcr`, `.age`), or under an opaque name ([`Options::hide_names`]);
//!   directories, modes and modification times kept; symbolic links recorded in the manifest,
//!   never followed; anything else (a FIFO, a socket, a device) refused by name before any
//!   work.
//! - [`decrypt`]: an encrypted tree back into the original tree, every file checked against
//!   the manifest before it takes its name.
//! - [`verify`]: an encrypted tree checked against its manifest, writing nothing: every file
//!   added, removed, renamed or changed, one [`Change`] each; or any one file alone.
//! - [`rekey`]: an encrypted tree for new recipients (each file's header rewrapped, its
//!   payload copied) or a new password (the manifest sealed again, the files copied).
//! - [`sign`] and [`verify_signed`]: a plaintext tree signed as a whole (a manifest of format
//!   [`TreeFormat::Plain`], written beside it), and checked against that signature later.
//! - [`read_manifest`]: the manifest alone.
//! - [`encrypt_to`], [`decrypt_from`], [`decrypt_to`], [`verify_from`] and
//!   [`read_manifest_from`]: the same with an output or an input that a front end plugs in
//!   instead of a local directory
//!   ([`TreeOutput`], [`TreeInput`]; `paracrypt-store` has those of a prefix in object
//!   storage), each file opened once through it and its chunks read and written positionally
//!   on the same schedule.
//! - [`plan`], [`Plan::seal_here`] and [`Plan::finish`]: [`encrypt`]'s three steps, which
//!   [`Plan::task`] and [`seal_task`] spread over other processes (Dask workers, MPI ranks): the tree
//!   planned once, its files sealed in tasks ([`Task`]: each file's header and the keys
//!   derived for it alone), the manifest written from what the tasks return
//!   (`docs/guide/trees.md`, *One tree over many processes*). [`prepare`], a walk and
//!   [`Prepared::plan`] are [`plan`] in two, so that the walk too is spread: [`walk_top`]
//!   lists the top of the tree and cuts the rest into walk tasks ([`walk_task`]).
//!
//! What a request holds decides how the files are sealed: with a key file, each file is a
//! container of that key; to recipients, each file is encrypted to them (any one of them opens
//! any file alone, with `paracrypt decrypt` or `age -d`); with a password, the tree draws a
//! random key (an age tree: an X25519 identity) that seals the files, and the manifest, sealed
//! with the password, carries it, so that a tree of a hundred thousand files costs one
//! Argon2id (one scrypt), not one per file. With a signing key, the manifest is signed as a
//! whole and every file is a signed container.
//!
//! Every file is written to a temporary file in its directory that takes its name only once
//! complete and checked, so a failure or an interrupt leaves every finished file complete and
//! no partial or temporary file. A failure of one file (unreadable, changed while read,
//! damaged) is reported naming it, in [`Summary::failures`], and the others go on; a full disk
//! stops new files.
//!
//! ```
//! use paracrypt_core::request::{Key, Request, Sealing, Secret};
//! use paracrypt_core::tree::{self, Options};
//! use paracrypt_core::Runner;
//!
//! let dir = tempfile::tempdir()?;
//! let (plain, sealed, back) = (dir.path().join("plain"), dir.path().join("sealed"), dir.path().join("back"));
//! std::fs::create_dir_all(plain.join("sub"))?;
//! std::fs::write(plain.join("sub/notes.txt"), b"hello, tree")?;
//!
//! let key = Key::generate();
//! let runner = Runner::new();
//! let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default())?;
//! let done = tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default())?;
//! assert!(done.is_complete() && done.files == 1);
//! assert!(sealed.join("sub/notes.txt.pcr").is_file());
//!
//! let open = Request::decrypt(Secret::Key(key), None)?;
//! tree::decrypt(&runner, &open, &sealed, &back, &Options::default())?;
//! assert_eq!(std::fs::read(back.join("sub/notes.txt"))?, b"hello, tree");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod chunks;
mod io;
pub mod manifest;
mod open;
mod out;
pub mod path;
mod plain;
mod rekeying;
mod schedule;
mod seal;
mod state;
mod task;
mod update;
mod verify;
mod walk;

use std::path::Path;
use std::sync::Arc;

pub use io::{
    InputFile, LocalInput, OutputFile, PlainEntry, PlainInput, Stored, TreeInput, TreeOutput,
};
pub use manifest::{Counts, Entry, EntryKind, FileEntry, Manifest, TreeFormat};
pub use open::{
    OpenPlan, Opened, decrypt, decrypt_from, decrypt_to, open_plan, open_plan_from, open_plan_to,
    open_task, open_task_from, open_task_guarded, open_task_to, read_manifest, read_manifest_from,
};
pub(crate) use out::open_no_follow;
pub use plain::{
    PLAIN_CHUNK, PlainChange, SignedCheck, SignedTree, sign, sign_from, signature_path,
    verify_signed, verify_signed_from,
};
pub use rekeying::{RekeyTo, check_rekey, check_rekey_from, rekey, rekey_from, rekey_to};
pub use schedule::BATCH_FILES;
pub use seal::{
    Plan, Prepared, Sealed, check, check_dest, check_in_store, encrypt, encrypt_to, plan,
    plan_from, plan_from_to, plan_to, prepare, prepare_to, seal_task, seal_task_from,
    seal_task_from_to, seal_task_guarded, seal_task_to,
};
pub use state::default_dir as default_state_dir;
pub use task::{OpenTask, TASK_BYTES, TASK_FILES, Task, TaskResult};
pub use update::{Checks, check_task};
pub use walk::{Walk, WalkTop, walk_task, walk_top};

/// Runs a task of a tree's encryption ([`Task`]) or decryption ([`OpenTask`]) from its bytes,
/// whichever they are, with [`seal_task`] or [`open_task`]: what a worker of any scheduler
/// runs. Bytes that are neither are refused ([`Error::Request`]).
pub fn run_task(runner: &crate::recipe::Runner, bytes: &[u8]) -> crate::error::Result<TaskResult> {
    if task::is_open_task(bytes) {
        Ok(open_task(runner, &OpenTask::from_bytes(bytes)?))
    } else {
        Ok(seal_task(runner, &Task::from_bytes(bytes)?))
    }
}
pub use verify::{Change, Checked, verify, verify_from};

use crate::error::Error;
use crate::request::Signer;

/// The name of the manifest at the top of an encrypted tree. Every encrypted file's name ends
/// with its format's suffix, so no file of the tree takes it; a directory at the top of the
/// tree with this name is refused.
pub const MANIFEST: &str = "paracrypt-manifest";

/// Told of the temporary files a tree writes, so that a front end removes them on an interrupt;
/// and runs each commit of two steps so that an interrupt lands before or after it, never
/// during. Every method does nothing by default.
pub trait Guard: Send + Sync {
    /// Runs `create`, which creates the named temporary file `path`; once it succeeds, remove
    /// `path` on an interrupt (until [`Guard::forget`]). A front end holds its interrupt
    /// handler off while `create` runs (many threads may create at once: only the handler
    /// waits for them), so that an interrupt finds the file either not yet created or known
    /// to it: never created after the handler looked.
    fn create(
        &self,
        path: &Path,
        create: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let _ = path;
        create()
    }

    /// `path` is no longer a temporary file (it took its name, or was removed).
    fn forget(&self, path: &Path) {
        let _ = path;
    }

    /// Runs `commit`, a finished file taking the place of an existing one (a hidden link, then
    /// a rename over the old file: an interrupt between the two would leave the hidden link):
    /// a front end holds its interrupt handler off for the call. A file taking a new name (one
    /// link or one rename, atomic) is not held off, so that commits take no lock.
    fn commit(&self, commit: &mut dyn FnMut()) {
        commit();
    }
}

/// The guard that does nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoGuard;

impl Guard for NoGuard {}

/// How a tree run treats what is already at its output, and its options.
#[derive(Clone)]
pub struct Options {
    /// Write into an output directory that already holds files, replacing those of the same
    /// names (without it, an output directory must be new or empty).
    pub force: bool,
    /// Store files under opaque names (a keyed hash of the path, in 256 directories): the
    /// real names, the directories and the links are only in the encrypted manifest.
    pub hide_names: bool,
    /// Named temporary files only (`.paracrypt-XXXX.tmp`), as a filesystem without `O_TMPFILE`
    /// gets: lets tests reach that path.
    pub named_temps: bool,
    /// `fsync` every file before it takes its name (for jobs that delete the input
    /// afterwards).
    pub sync: bool,
    /// An encryption: bring the encrypted tree at the output up to date with the input (a
    /// tree written before, or one whose run was interrupted): the files its manifest lists
    /// unchanged (the same size and modification time) and still stored as listed are kept,
    /// every other file is encrypted, the encrypted files of files gone are removed, and a
    /// new manifest (the next generation) is written. An output with no manifest is written
    /// whole. Needs the secret that opens the manifest: the key or password, or for a tree
    /// encrypted to recipients [`Options::update_with`].
    pub update: bool,
    /// With [`Options::update`]: compare contents (the BLAKE3 tree-hash root of each file,
    /// read whole) instead of size and modification time.
    pub checksum: bool,
    /// With [`Options::update`] of a tree encrypted to recipients, whose manifest opens only
    /// with an identity: the identities that open it. The files kept stay encrypted to the
    /// recipients they were encrypted to; new and changed files, and the new manifest, are
    /// encrypted to the request's recipients (to change who opens every file, rekey the tree).
    pub update_with: Option<Arc<crate::recipient::Identities>>,
    /// Where this host records the trees it encrypts ([`default_state_dir`] by default;
    /// `None`: nothing is recorded). An encryption records the generation it wrote at its
    /// output (and, for a tree encrypted to recipients, that manifest), and an update holds
    /// the tree it finds against that record: an older generation put back, or another tree
    /// in its place, is refused; a tree encrypted to recipients is updated from the manifest
    /// recorded, with no identity, and without a record (or one that does not match) every
    /// file is encrypted again (`docs/guide/security.md`, *Trees on storage you don't
    /// trust*).
    pub state: Option<std::path::PathBuf>,
    /// A decryption or verification: refuse a tree whose manifest is of an older generation
    /// than this (an old manifest put back). Meaningful where the manifest is authenticated:
    /// sealed with a key or password, or signed by the signer required.
    pub min_generation: Option<u64>,
    /// Told of temporary files and commits.
    pub guard: Arc<dyn Guard>,
    /// Do everything a run does before it writes (walk the tree, open the previous manifest
    /// of an update or the tree to decrypt or rekey with the caller's secret, with every
    /// check the run makes, compare the files) and report what it would do, writing nothing:
    /// no output directory, no state record, no temporary file. The [`Summary`] and the
    /// [`Options::on_file`] events are those of the run (an encryption's files counted as
    /// encrypted, and so on); an encryption or a rekey into an output plugged in (a prefix)
    /// is refused.
    pub dry_run: bool,
    /// Told of each file of the tree once the run knows what became of it ([`FileEvent`]), in
    /// the tree's order, on the thread that finishes the run (never on a worker's: the
    /// events come from the step that writes the manifest, which every driver runs once: a
    /// local run, a prefix's, rank 0 of an MPI run, a Dask client).
    pub on_file: Option<OnFile>,
}

/// What [`Options::on_file`] is: called once per file, from one thread at a time.
pub type OnFile = Arc<dyn Fn(&FileEvent<'_>) + Send + Sync>;

/// What a tree run did to one file (or, with [`Options::dry_run`], would do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// An encryption wrote its encrypted file.
    Encrypted,
    /// An update kept its encrypted file (the file is unchanged since the previous manifest).
    Unchanged,
    /// An update removed its encrypted file (the file is gone from the tree).
    Removed,
    /// A decryption wrote it.
    Decrypted,
    /// A rekey wrote its new encrypted file.
    Rekeyed,
    /// It failed (the failure is in [`Summary::failures`], naming it).
    Failed,
}

impl Action {
    /// The word front ends show for it, a stable name (`encrypted`, `unchanged`, `removed`,
    /// `decrypted`, `rekeyed`, `failed`).
    pub fn name(self) -> &'static str {
        match self {
            Action::Encrypted => "encrypted",
            Action::Unchanged => "unchanged",
            Action::Removed => "removed",
            Action::Decrypted => "decrypted",
            Action::Rekeyed => "rekeyed",
            Action::Failed => "failed",
        }
    }

    /// What a dry run says it would do (`encrypt`, `keep`, `remove`, `decrypt`, `rekey`,
    /// `fail`).
    pub fn verb(self) -> &'static str {
        match self {
            Action::Encrypted => "encrypt",
            Action::Unchanged => "keep",
            Action::Removed => "remove",
            Action::Decrypted => "decrypt",
            Action::Rekeyed => "rekey",
            Action::Failed => "fail",
        }
    }
}

/// One file of a tree run, as [`Options::on_file`] is told of it.
#[derive(Clone, Copy, Debug)]
pub struct FileEvent<'a> {
    /// Its path in the tree (shown with [`path::shown`]).
    pub path: &'a [u8],
    /// What was done to it.
    pub action: Action,
    /// Why it failed ([`Action::Failed`]; the error in [`Summary::failures`] that names it).
    pub error: Option<&'a Error>,
}

impl FileEvent<'_> {
    /// Why it failed, without its path (which [`FileEvent::path`] says), on one line.
    pub fn why(&self) -> Option<String> {
        self.error.map(|error| {
            match error {
                Error::InTree { source, .. } => source.to_string(),
                other => other.to_string(),
            }
            .replace('\n', " ")
        })
    }
}

/// The refusal of a dry run whose output is plugged in (a prefix): the same words from every
/// front end.
fn dry_run_refused() -> Error {
    Error::Request(
        "a dry run writes nothing, and reports on a local output directory: an output in \
         object storage cannot be dry run"
            .into(),
    )
}

/// Tells `on_file`, if any, that `action` was done to `path`.
fn tell(on_file: Option<&OnFile>, path: &[u8], action: Action) {
    if let Some(on_file) = on_file {
        on_file(&FileEvent {
            path,
            action,
            error: None,
        });
    }
}

/// Tells `on_file`, if any, that `path` failed with `error`.
fn tell_failed(on_file: Option<&OnFile>, path: &[u8], error: &Error) {
    if let Some(on_file) = on_file {
        on_file(&FileEvent {
            path,
            action: Action::Failed,
            error: Some(error),
        });
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            force: false,
            hide_names: false,
            named_temps: false,
            sync: false,
            update: false,
            checksum: false,
            update_with: None,
            state: state::default_dir(),
            min_generation: None,
            guard: Arc::new(NoGuard),
            dry_run: false,
            on_file: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("force", &self.force)
            .field("hide_names", &self.hide_names)
            .field("named_temps", &self.named_temps)
            .field("update", &self.update)
            .field("checksum", &self.checksum)
            .field("state", &self.state)
            .field("min_generation", &self.min_generation)
            .field("dry_run", &self.dry_run)
            .finish_non_exhaustive()
    }
}

/// What a tree run did.
#[derive(Debug, Default)]
pub struct Summary {
    /// Files written (encrypted or decrypted), each complete and checked.
    pub files: u64,
    /// Their plaintext bytes.
    pub bytes: u64,
    /// The files that failed, one error each ([`Error::InTree`], naming the file), in the
    /// tree's order; then what failed once the files were done (writing the manifest, a
    /// directory's mode and time, a link), each naming its path.
    pub failures: Vec<Error>,
    /// Files never started because a failure stopped the run (a full disk).
    pub not_started: u64,
    /// An update: files kept as they were (unchanged since the previous manifest).
    pub unchanged: u64,
    /// An update: encrypted files removed because their files are gone from the tree.
    pub removed: u64,
    /// An encryption: whether the manifest was written and lists every file. A decryption:
    /// whether the manifest says the run that wrote it finished every file.
    pub manifest_complete: bool,
    /// Who signed the tree's manifest, when it was signed (a decryption: the signature was
    /// checked; `required` when the caller asked for this signer).
    pub signer: Option<Signer>,
    /// A rekey: what the old tree holds that its manifest does not list (a file added beside
    /// the tree's files; a directory named once), by stored path, as `verify` names each
    /// addition: not carried into the new tree, whose manifest would not list it either.
    pub left_behind: Vec<Vec<u8>>,
}

impl Summary {
    /// Whether every file was done and the tree is whole.
    pub fn is_complete(&self) -> bool {
        self.failures.is_empty() && self.not_started == 0 && self.manifest_complete
    }

    /// Each of [`Summary::left_behind`] on one line, as front ends show it.
    pub fn left_behind_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.left_behind.iter().map(|stored| {
            format!(
                "left behind: {} (in the encrypted tree, not in its manifest: not in the new tree)",
                path::shown(stored)
            )
        })
    }

    /// Whether the tree holds any file complete: written by this run, or kept by an update.
    pub fn did_anything(&self) -> bool {
        self.files + self.unchanged > 0
    }
}

/// Whether `error` stops a whole tree run: the output's filesystem is full, over quota or
/// read-only, so that no further file could be written either.
fn stops_all(error: &Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull
                    | std::io::ErrorKind::QuotaExceeded
                    | std::io::ErrorKind::ReadOnlyFilesystem
            );
        }
        cause = e.source();
    }
    false
}

/// `error`, naming the file `path` of the tree.
fn in_tree(path: &[u8], error: Error) -> Error {
    match error {
        Error::InTree { .. } => error,
        source => Error::InTree {
            path: path::shown(path),
            source: Box::new(source),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::recipe::Runner;
    use crate::request::{Key, Request, Sealing, Secret};

    /// What [`Options::on_file`] was told: `(result, path)` each.
    type Seen = Arc<Mutex<Vec<(String, String)>>>;

    /// Options that collect each file told to [`Options::on_file`] as `(result, path)`.
    fn collecting(options: Options) -> (Options, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&seen);
        let on_file: OnFile = Arc::new(move |event: &FileEvent<'_>| {
            let mut seen = into.lock().unwrap();
            seen.push((event.action.name().to_owned(), path::shown(event.path)));
        });
        let options = Options {
            on_file: Some(on_file),
            ..options
        };
        (options, seen)
    }

    /// Every file under `root`, with its bytes, and every directory.
    fn everything(root: &Path) -> Vec<(std::path::PathBuf, Option<Vec<u8>>)> {
        let mut found = Vec::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(dir) = todo.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    found.push((path.clone(), None));
                    todo.push(path);
                } else {
                    found.push((path.clone(), Some(std::fs::read(&path).unwrap())));
                }
            }
        }
        found.sort();
        found
    }

    /// A dry run tells the events the run then tells, in the same order, and writes nothing
    /// (no output, no state record); a run tells each file's outcome: a first run, an update
    /// that changes, removes and keeps a file, a decryption.
    #[test]
    fn a_dry_run_tells_what_the_run_then_does_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let plain = d.join("plain");
        std::fs::create_dir_all(plain.join("a")).unwrap();
        std::fs::write(plain.join("a/b.txt"), b"one").unwrap();
        std::fs::write(plain.join("c.txt"), b"two").unwrap();
        std::fs::write(plain.join("old.txt"), b"three").unwrap();
        let (sealed, back) = (d.join("sealed"), d.join("back"));
        let runner = Runner::new();
        let secret = Secret::Key(Key::generate());
        let seal = Request::encrypt(secret.clone(), Sealing::default()).unwrap();
        let open = Request::decrypt(secret, None).unwrap();
        let base = Options {
            state: Some(d.join("state")),
            ..Options::default()
        };
        let dry = Options {
            dry_run: true,
            ..base.clone()
        };
        // Runs `run` dry, then for real: both tell the same files; the dry run wrote nothing.
        let twice = |run: &dyn Fn(&Options) -> crate::error::Result<Summary>, options: &Options| {
            let before = everything(d);
            let (dry, seen_dry) = collecting(Options {
                dry_run: true,
                ..options.clone()
            });
            let would = run(&dry).unwrap();
            assert_eq!(everything(d), before);
            let (real, seen) = collecting(options.clone());
            let did = run(&real).unwrap();
            assert!(did.is_complete() && would.is_complete());
            assert_eq!(
                (would.files, would.bytes, would.unchanged, would.removed),
                (did.files, did.bytes, did.unchanged, did.removed)
            );
            let seen = seen.lock().unwrap().clone();
            assert_eq!(*seen_dry.lock().unwrap(), seen);
            seen
        };
        let pairs = |items: &[(&str, &str)]| -> Vec<(String, String)> {
            items
                .iter()
                .map(|(r, p)| (r.to_string(), p.to_string()))
                .collect()
        };

        let encrypt = |o: &Options| super::encrypt(&runner, &seal, &plain, &sealed, o);
        assert_eq!(
            twice(&encrypt, &base),
            pairs(&[
                ("encrypted", "a/b.txt"),
                ("encrypted", "c.txt"),
                ("encrypted", "old.txt")
            ])
        );
        std::fs::write(plain.join("c.txt"), b"two, changed").unwrap();
        std::fs::remove_file(plain.join("old.txt")).unwrap();
        let update = Options {
            update: true,
            ..base.clone()
        };
        assert_eq!(
            twice(&encrypt, &update),
            pairs(&[
                ("unchanged", "a/b.txt"),
                ("encrypted", "c.txt"),
                ("removed", "old.txt")
            ])
        );
        let decrypt = |o: &Options| super::decrypt(&runner, &open, &sealed, &back, o);
        assert_eq!(
            twice(&decrypt, &base),
            pairs(&[("decrypted", "a/b.txt"), ("decrypted", "c.txt")])
        );

        // The plan's steps, as other drivers run them: no task, nothing sealed.
        let plan = super::plan(&runner, &seal, &plain, &d.join("planned"), &dry).unwrap();
        assert!(plan.tasks(4).is_empty());
        let sealed = Sealed::new(&plan);
        let summary = plan.finish(&runner, sealed);
        assert_eq!(summary.files, 2);
        assert!(!d.join("planned").exists());
    }

    /// A dry run reads the state record without making it: no directory, no host key.
    #[test]
    fn a_dry_run_makes_no_state() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let read = state::Record::read(&state, "/out").unwrap();
        assert!(read.newest().is_none());
        assert!(!state.exists());
    }

    /// An output plugged in (a prefix) cannot be dry run: refused by the checks a front end
    /// makes before any secret is asked for, a usage error.
    #[test]
    fn a_dry_run_into_an_output_plugged_in_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let dry = Options {
            dry_run: true,
            ..Options::default()
        };
        let (here, prefix) = ((dir.path(), false), (Path::new("s3://b/p/"), true));
        for encrypting in [true, false] {
            let error = check_in_store(encrypting, here, prefix, &dry).unwrap_err();
            assert_eq!(error.kind(), crate::error::ErrorKind::Usage);
            assert!(error.to_string().contains("cannot be dry run"), "{error}");
            // Into a local directory, it is the run's own checks.
            check_in_store(encrypting, prefix, (&dir.path().join("new"), false), &dry).unwrap();
        }
        let input = LocalInput {
            root: dir.path().to_path_buf(),
        };
        let error = check_rekey_from(&input, None, &dry).unwrap_err();
        assert!(error.to_string().contains("cannot be dry run"), "{error}");
    }
}
