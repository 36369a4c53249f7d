//! Decrypting a tree: the manifest first, then every file it lists on the one schedule, each
//! checked against its entry before it takes its name; links and directory times last.

use std::io::{BufReader, Read, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::chunks::{Plain, run_here};
use super::io::{
    InputFile, InputReader, LocalInput, OutputFile, OutputWriter, TreeInput, TreeOutput,
};
use super::manifest::{EntryKind, FileEntry, Keying, MAX_MANIFEST, Manifest, TreeFormat};
use super::out::{Dest, Out};
use super::path::shown;
use super::schedule::{self, FileWork, Planned};
use super::task::{OpenTask, OpenTaskFile, Outcome, TaskResult};
use super::{Action, MANIFEST, OnFile, Options, Summary, in_tree, tell, tell_failed};
use crate::engine::Job;
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::recipe::Runner;
use crate::recipient::Identities;
use crate::request::Secret;
use crate::request::{Driver, Kind, Request, Resolved, Signer};
use crate::sign::VerifyingKey;
use crate::sign::tree::{HASH_LEN, leaf, root};

/// Age's payload chunk, which every age file of a tree is hashed in.
const AGE_CHUNK: usize = crate::request::Format::Age
    .fixed_chunk()
    .expect("age fixes its chunk");

/// Reads the manifest of the encrypted tree at `encrypted` with `request` (a decryption:
/// [`Request::decrypt`]) and checks it: its fields and paths, its signature when it has one,
/// and the signer the request requires, if any (an unsigned manifest, or one signed by another
/// key, is refused then).
pub fn read_manifest(runner: &Runner, request: &Request, encrypted: &Path) -> Result<Manifest> {
    read_manifest_from(runner, request, &local(encrypted))
}

/// [`read_manifest`] of the encrypted tree `input`, a [`TreeInput`] a front end plugs in.
pub fn read_manifest_from(
    runner: &Runner,
    request: &Request,
    input: &dyn TreeInput,
) -> Result<Manifest> {
    let sealed = read_sealed(input)?;
    open_manifest(runner, request, &sealed)
}

/// The manifest's file of the encrypted tree `input`, as stored (sealed), refused past
/// [`MAX_MANIFEST`].
pub(crate) fn read_sealed(input: &dyn TreeInput) -> Result<Vec<u8>> {
    let at = input.shown(MANIFEST.as_bytes());
    let file = input.open(MANIFEST.as_bytes()).map_err(|e| {
        let what = if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "{} has no manifest: it is not an encrypted tree, or the run that began it \
                 stopped before its first checkpoint (`encrypt --recursive --update` finishes \
                 it; Python: encrypt_tree(update=True))",
                input.shown(b"")
            )
        } else {
            format!("cannot read {at}")
        };
        Error::io(what, e)
    })?;
    let mut sealed = Vec::new();
    InputReader {
        file: &*file,
        at: 0,
    }
    .take(MAX_MANIFEST + 1)
    .read_to_end(&mut sealed)
    .map_err(|e| Error::io(format!("cannot read {at}"), e))?;
    if sealed.len() as u64 > MAX_MANIFEST {
        return Err(in_tree(
            MANIFEST.as_bytes(),
            Error::Manifest("it is larger than 1 GiB".into()),
        ));
    }
    Ok(sealed)
}

/// Opens and checks the manifest's file `sealed` with `request` (see [`read_manifest`]).
pub(crate) fn open_manifest(runner: &Runner, request: &Request, sealed: &[u8]) -> Result<Manifest> {
    let (secret, verify_with) = decryption(request)?;
    let in_manifest = |e| in_tree(MANIFEST.as_bytes(), e);
    // The manifest is sealed without chunk signatures (its signature is inside it): it is
    // opened without a required signer, which is checked below against its signature.
    let open = Request::decrypt(secret.clone(), None)?;
    let quiet = Runner::new().provider(runner.chosen_provider());
    let plain = (|| {
        let resolved = open.resolve(sealed, Driver::Whole)?;
        if resolved.in_order() {
            let mut out = Vec::new();
            resolved.stream(&quiet, &mut &sealed[..], &mut out)?;
            Ok(zeroize::Zeroizing::new(out))
        } else {
            Ok(zeroize::Zeroizing::new(
                quiet.vec(resolved.recipe(), sealed)?,
            ))
        }
    })()
    .map_err(in_manifest)?;
    let manifest = Manifest::parse(&plain).map_err(in_manifest)?;
    if manifest.format == TreeFormat::Plain {
        return Err(in_manifest(Error::Manifest(
            "it is a plaintext tree's signed manifest, which no encrypted tree holds".into(),
        )));
    }
    check_signer(&manifest, verify_with.as_ref())?;
    keying_fits(&manifest, secret).map_err(in_manifest)?;
    Ok(manifest)
}

/// Refuses a manifest whose keying the caller's secret does not produce: a tree written with a
/// password carries the key its files are sealed with (a container key, or for age an X25519
/// identity), and a tree written with a key file or to recipients seals its files with that
/// secret itself. A manifest encrypted to public recipients can be written by anyone who holds
/// them: one that carried a key of its own would have the owner's next files sealed to its
/// author.
fn keying_fits(manifest: &Manifest, secret: &Secret) -> Result<()> {
    let why = match (&manifest.keying, secret, manifest.format) {
        (Keying::Secret, Secret::Password(..), _) => {
            "it says its files are sealed with the password itself, which no tree writer does"
        }
        (Keying::TreeKey(_), _, TreeFormat::Age | TreeFormat::ArmoredAge)
        | (Keying::TreeIdentity(_), _, TreeFormat::Container) => {
            "its tree key does not fit its file format"
        }
        (Keying::TreeKey(_) | Keying::TreeIdentity(_), Secret::Password(..), _)
        | (Keying::Secret, _, _) => return Ok(()),
        (Keying::TreeKey(_) | Keying::TreeIdentity(_), Secret::Identities(_), _) => {
            "it carries a key of its own, which only a tree written with a password does: \
             anyone who holds the recipients' public keys could have written it, to have the \
             tree's files sealed to a key they know"
        }
        (Keying::TreeKey(_) | Keying::TreeIdentity(_), _, _) => {
            "it carries a key of its own, which only a tree written with a password does"
        }
    };
    Err(Error::Manifest(why.into()))
}

/// Opens ahead, in one session per plugin, the keys of the manifest and of every regular file
/// under the encrypted tree `input` ([`Request::open_ahead`]): the files are not known before
/// the manifest is open, so every file there is asked about (a file the manifest does not list
/// is never opened after). A tree that cannot be walked is left to the decryption to report.
pub(crate) fn open_ahead(request: &Request, input: &Path) {
    let Ok(found) = super::walk::walk(input) else {
        return;
    };
    let paths: Vec<_> = found
        .iter()
        .filter(|w| matches!(w.found, super::walk::Found::File { .. }))
        .map(|w| super::walk::join(input, &w.path))
        .collect();
    request.open_ahead(&paths);
}

/// The local directory `root` as a tree's input.
pub(crate) fn local(root: &Path) -> LocalInput {
    LocalInput {
        root: root.to_path_buf(),
    }
}

/// The secret and required signer of a decryption request.
fn decryption(request: &Request) -> Result<(&Secret, &Option<VerifyingKey>)> {
    match request.kind() {
        Kind::Decrypt {
            secret,
            verify_with,
        } => Ok((secret, verify_with)),
        _ => Err(Error::Request(
            "a tree is decrypted with a decryption request (a key, a password or identities)"
                .into(),
        )),
    }
}

/// Refuses a manifest that is unsigned, or signed by another key, when `expected` is required.
pub(crate) fn check_signer(manifest: &Manifest, expected: Option<&VerifyingKey>) -> Result<()> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let Some(signer) = &manifest.signer else {
        return Err(Error::Unsigned {
            expected: expected.fingerprint(),
        });
    };
    match expected.for_scheme(signer.scheme()) {
        Some(key) if key.to_field() == signer.to_field() => Ok(()),
        _ => Err(Error::WrongSigner {
            signer: signer.fingerprint(),
            expected: expected.fingerprint(),
        }),
    }
}

/// The request that opens the tree's files: the caller's, or one of the key or identity the
/// manifest carries, with the same required signer.
pub(crate) fn file_request(request: &Request, manifest: &Manifest) -> Result<Request> {
    let (secret, verify_with) = decryption(request)?;
    let secret = match &manifest.keying {
        Keying::Secret => secret.clone(),
        Keying::TreeKey(key) => Secret::Key(key.clone()),
        Keying::TreeIdentity(text) => {
            let mut identities = Identities::new();
            identities.add_file("the tree's identity", text.as_bytes())?;
            Secret::Identities(Arc::new(identities))
        }
    };
    Request::decrypt(secret, verify_with.clone())
}

/// Who signed the manifest, as a decryption reports it.
pub(crate) fn signer_of(manifest: &Manifest, request: &Request) -> Option<Signer> {
    let required = matches!(
        request.kind(),
        Kind::Decrypt {
            verify_with: Some(_),
            ..
        }
    );
    manifest.signer.clone().map(|key| Signer { key, required })
}

/// Decrypts the encrypted tree at `input` into the directory `output` with `request` (a
/// decryption: [`Request::decrypt`]), on every thread of the caller's pool: the original tree,
/// with its directories, modes, modification times and symbolic links. See the
/// [module](super).
///
/// The manifest is read and checked first ([`read_manifest`]); `output` must then not exist
/// (its parent must), or be an empty directory, or [`Options::force`] must be set. Each
/// file's encrypted header is checked against its entry before any key is used on it (a file
/// swapped for another of the tree, or for another encryption of itself, fails there), each
/// chunk is authenticated, and its length and plaintext tree-hash root are checked before it
/// takes its name. A file that fails is reported in [`Summary::failures`] and the others go
/// on.
pub fn decrypt(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: &Path,
    options: &Options,
) -> Result<Summary> {
    let plan = open_plan(runner, request, input, output, options, Driver::Whole)?;
    let opened = plan.open_here(runner);
    Ok(plan.finish(opened))
}

/// [`decrypt`] of the encrypted tree `input`, a [`TreeInput`] a front end plugs in (a prefix
/// in object storage), into the local directory `output`: the same checks and the same
/// schedule, each file read through the input's positional reads. A request with plugin
/// identities opens each file's keys as the file is opened (the keys are opened ahead, in one
/// session, for a local input only).
pub fn decrypt_from(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn TreeInput>,
    output: &Path,
    options: &Options,
) -> Result<Summary> {
    let plan = open_plan_from(runner, request, input, output, options, Driver::Whole)?;
    let opened = plan.open_here(runner);
    Ok(plan.finish(opened))
}

/// [`decrypt_from`] into `output`, a [`TreeOutput`] a front end plugs in (a prefix in object
/// storage): the same checks and the same schedule, each file written through the output and
/// committed there only once it is complete and checked (an upload completed, or aborted when
/// the file fails). What the output cannot hold fails by name, the files done: an object store
/// keeps no directories, modes, times or links (each link is a failure that names it).
pub fn decrypt_to(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn TreeInput>,
    output: Arc<dyn TreeOutput>,
    options: &Options,
) -> Result<Summary> {
    let plan = open_plan_to(runner, request, input, output, options, Driver::Whole)?;
    let opened = plan.open_here(runner);
    Ok(plan.finish(opened))
}

/// A tree's decryption in three steps, so that other processes can open its files (Dask's
/// workers, MPI's ranks): what [`decrypt`] does in one process.
///
/// 1. [`open_plan`] here: the manifest read and checked (its signature, the signer required),
///    the output checked and its directories made. With [`Driver::Distributed`] (its files
///    opened in tasks), a tree of armored age files, read in order on one process, is refused
///    first.
/// 2. The files opened: here with [`OpenPlan::open_here`], or in tasks
///    ([`OpenPlan::tasks`], [`OpenPlan::task`], sent as [`OpenTask::to_bytes`]) that
///    [`open_task`] runs on any process that sees the input and the output, each result given
///    back to [`Opened::add`].
/// 3. [`OpenPlan::finish`]: the links made, every directory given its mode and time.
///
/// A task carries, for each of its files, the header the plan read and the keys it derived
/// for that file alone (a container's payload keys, an age file's file key), never the key
/// file, password, identities or the tree's own key (see [`OpenTask`]).
pub fn open_plan(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: &Path,
    options: &Options,
    driver: Driver,
) -> Result<OpenPlan> {
    open_plan_from(
        runner,
        request,
        Arc::new(local(input)),
        output,
        options,
        driver,
    )
}

/// [`open_plan`] of the encrypted tree `input`, a [`TreeInput`] a front end plugs in. Its
/// files are opened here ([`OpenPlan::open_here`]), or in tasks on other processes where the
/// input names a root they open again ([`TreeInput::task_root`]: a prefix's URL, each task
/// reading the versions this plan listed, run with [`open_task_from`]).
pub fn open_plan_from(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn TreeInput>,
    output: &Path,
    options: &Options,
    driver: Driver,
) -> Result<OpenPlan> {
    let dest = Dest {
        root: output.to_path_buf(),
        replace: options.force,
        named: options.named_temps,
        sync: options.sync,
        guard: Arc::clone(&options.guard),
    };
    open_plan_out(runner, request, input, Out::Local(dest), options, driver)
}

/// [`open_plan_from`] into `output`, a [`TreeOutput`] a front end plugs in (see
/// [`decrypt_to`]). Its files are opened here, or in tasks on other processes where the output
/// names a root they open again ([`TreeOutput::task_root`]: a prefix's URL).
pub fn open_plan_to(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn TreeInput>,
    output: Arc<dyn TreeOutput>,
    options: &Options,
    driver: Driver,
) -> Result<OpenPlan> {
    open_plan_out(runner, request, input, Out::Other(output), options, driver)
}

fn open_plan_out(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn TreeInput>,
    out: Out,
    options: &Options,
    driver: Driver,
) -> Result<OpenPlan> {
    let local_input = input.local().map(Path::to_path_buf);
    // The output checked (and made): a local directory against a local input, which it must
    // not be inside of; an output plugged in by its own rules.
    // A dry run makes nothing.
    let prepare = |out: &Out| match options.dry_run {
        true => out
            .check(local_input.as_deref(), options.force)
            .map(|()| false),
        false => out.prepare(local_input.as_deref(), options.force),
    };
    let mut prepared = None;
    if request.uses_plugins() {
        // One plugin session for the manifest and every file (a hardware key's PIN typed
        // once): the output is checked first, so that a refused output asks for nothing.
        match (&out, &local_input) {
            (Out::Local(dest), Some(at)) => super::seal::check(at, &dest.root, options)?,
            (Out::Local(dest), None) => super::seal::check_dest(&dest.root, options)?,
            (Out::Other(_), _) => prepared = Some(prepare(&out)?),
        }
        if let Some(at) = &local_input {
            open_ahead(request, at);
        }
    }
    let manifest = read_manifest_from(runner, request, &*input)?;
    if let Some(at_least) = options.min_generation
        && manifest.generation < at_least
    {
        return Err(Error::Rollback(format!(
            "{}: the manifest is generation {}, older than the generation {at_least} asked for \
             (an old manifest put back?)",
            input.shown(MANIFEST.as_bytes()),
            manifest.generation
        )));
    }
    if manifest.format == TreeFormat::ArmoredAge
        && let Some(why) = driver.refuses_armor()
    {
        return Err(Error::Request(format!("an armored age tree: {why}")));
    }
    let files_request = file_request(request, &manifest)?;
    let created_root = match prepared {
        Some(made) => made,
        None => prepare(&out)?,
    };
    let mut made = Vec::new();
    for entry in manifest.entries.iter().skip(1) {
        if entry.kind == EntryKind::Dir && !options.dry_run {
            match out.get().mkdir(&entry.path) {
                Ok(true) => made.push(entry.path.clone()),
                Ok(false) => {}
                Err(e) => {
                    out.get().remove_made(&made, created_root);
                    return Err(in_tree(
                        &entry.path,
                        Error::io("cannot create the directory", e),
                    ));
                }
            }
        }
    }
    let files = manifest_files(&manifest).count();
    Ok(OpenPlan {
        signer: signer_of(&manifest, request),
        manifest,
        files_request,
        input,
        out,
        made,
        created_root,
        provider: runner.chosen_provider(),
        files,
        dry_run: options.dry_run,
        on_file: options.on_file.clone(),
    })
}

/// A tree's decryption, planned (step 1 of [`open_plan`]'s three).
pub struct OpenPlan {
    manifest: Manifest,
    /// The request that opens the files (the caller's, or the tree's own key or identity).
    files_request: Request,
    signer: Option<Signer>,
    input: Arc<dyn TreeInput>,
    out: Out,
    /// The directories this run made, and whether it made the output.
    made: Vec<Vec<u8>>,
    created_root: bool,
    provider: Provider,
    files: usize,
    /// [`Options::dry_run`]: no file is opened, nothing written.
    dry_run: bool,
    /// Told of each file as [`OpenPlan::finish`] lists it.
    on_file: Option<OnFile>,
}

impl std::fmt::Debug for OpenPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenPlan")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

/// Failures, each with the path of its file in the tree.
pub(crate) type PathFailures = Vec<(Vec<u8>, Error)>;

/// What step 2 of a decryption did: which files are done, and the failures.
#[derive(Debug)]
pub struct Opened {
    done: Vec<bool>,
    failures: Vec<(usize, Error)>,
    not_started: u64,
}

impl Opened {
    /// Nothing opened yet, for the files of `plan`.
    pub fn new(plan: &OpenPlan) -> Self {
        Opened {
            done: vec![false; plan.files],
            failures: Vec::new(),
            not_started: 0,
        }
    }

    /// Adds what one task did ([`open_task`]'s result, read back with
    /// [`TaskResult::from_bytes`]). Each failure is named by the manifest's path of its file.
    pub fn add(&mut self, plan: &OpenPlan, result: TaskResult) -> Result<()> {
        for (file, outcome) in result.files {
            if file >= self.done.len() || matches!(outcome, Outcome::Sealed(_)) {
                return Err(Error::Tree(format!(
                    "a task's result for file {file} is not one of this decryption of {} files",
                    self.done.len()
                )));
            }
            match outcome {
                Outcome::Opened => self.done[file] = true,
                Outcome::Failed(message) => {
                    let path = plan.path(file);
                    self.failures
                        .push((file, in_tree(path, Error::Tree(message))));
                }
                Outcome::NotStarted => self.not_started += 1,
                Outcome::Sealed(_) => unreachable!("refused above"),
            }
        }
        Ok(())
    }

    /// A task that returned nothing (its worker died, it was cancelled): its files not done
    /// failed, each with `why`.
    pub fn lost(&mut self, plan: &OpenPlan, task: Range<usize>, why: &str) {
        for file in task {
            if self.done.get(file) == Some(&false) {
                let path = plan.path(file);
                self.failures
                    .push((file, in_tree(path, Error::Tree(why.to_string()))));
            }
        }
    }
}

impl OpenPlan {
    /// How many files the tree's manifest lists.
    pub fn files(&self) -> usize {
        self.files
    }

    /// The path of file `file` (in the manifest's order of files).
    fn path(&self, file: usize) -> &[u8] {
        manifest_files(&self.manifest)
            .nth(file)
            .map_or(&[][..], |f| f.path)
    }

    /// Step 2 in this process: every file on the one schedule in the caller's pool.
    pub fn open_here(&self, runner: &Runner) -> Opened {
        if self.dry_run {
            return Opened::new(self);
        }
        let work = Open::new(
            runner,
            &self.files_request,
            &self.manifest,
            &*self.input,
            Some(self.out.get()),
        );
        let ran = schedule::run(&work, &work.planned());
        let (done, failures) = work.done();
        Opened {
            done,
            failures,
            not_started: ran.not_started,
        }
    }

    /// The files cut into tasks for other processes, as [`Plan::tasks`](super::Plan::tasks)
    /// cuts a tree's encryption: consecutive small files together, a large file alone, and at
    /// least `at_least` tasks when there are as many files.
    pub fn tasks(&self, at_least: usize) -> Vec<Range<usize>> {
        if self.dry_run {
            return Vec::new();
        }
        let lens: Vec<u64> = manifest_files(&self.manifest)
            .map(|f| f.entry.size)
            .collect();
        super::task::cut(&lens, at_least)
    }

    /// The task of files `files` (one of [`OpenPlan::tasks`], or any run of them), for
    /// [`open_task`] on another process. Each file's header is read and checked here against
    /// the manifest, then opened with the tree's secret, on every thread of the caller's pool:
    /// the task carries that header and the keys derived for that one file. A file whose
    /// header cannot be opened (missing, swapped, damaged) goes in the task as its failure.
    /// Armored age files are read in order, on one process: such a tree is not cut into tasks.
    pub fn task(&self, files: Range<usize>) -> Result<OpenTask> {
        if files.start > files.end || files.end > self.files {
            return Err(Error::Request(format!(
                "files {}..{} are not a run of the tree's {} files",
                files.start, files.end, self.files
            )));
        }
        if self.manifest.format == TreeFormat::ArmoredAge {
            return Err(Error::Request(
                "an armored age tree is read in order, on one process: decrypt it here".into(),
            ));
        }
        let Some(input) = self.input.task_root() else {
            return Err(Error::Request(
                "this tree's input is read on this process only: its files are not opened in \
                 tasks"
                    .into(),
            ));
        };
        let Some((output, replace, named, sync)) = self.out.task_root() else {
            return Err(Error::Request(
                "this tree's output is written by one process: its files are not opened in \
                 tasks"
                    .into(),
            ));
        };
        let resolved_for =
            |source: &dyn InputFile| -> Result<(Vec<u8>, zeroize::Zeroizing<Vec<u8>>)> {
                let head = source.head()?;
                let resolved = self.files_request.resolve(&head, Driver::Distributed)?;
                let len = source.len();
                let mut reader = BufReader::new(InputReader {
                    file: source,
                    at: 0,
                });
                let job = resolved
                    .recipe()
                    .first_job(&mut reader, Some(len), self.provider)?;
                let shared = job
                    .shared_key()
                    .ok_or_else(|| Error::Request("this format is not run in parts".into()))?;
                Ok((
                    job.header().to_vec(),
                    zeroize::Zeroizing::new(shared.to_vec()),
                ))
            };
        let listed: Vec<OpenFile<'_>> = manifest_files(&self.manifest)
            .skip(files.start)
            .take(files.len())
            .collect();
        let task_files = listed
            .par_iter()
            .zip(files.clone().into_par_iter())
            .map(|(file, index)| {
                let keys = check_header(&*self.input, file, false)
                    .and_then(|checked| resolved_for(&*checked.source))
                    .map_err(|e| e.to_string());
                OpenTaskFile {
                    index,
                    path: file.path.to_vec(),
                    stored: file.stored.clone(),
                    mode: file.mode,
                    mtime: file.mtime,
                    entry: file.entry.clone(),
                    keys,
                    listed: (
                        self.input.len(&file.stored),
                        self.input.version(&file.stored),
                    ),
                }
            })
            .collect();
        Ok(OpenTask {
            input,
            output,
            replace,
            named,
            sync,
            provider: self.provider,
            files: task_files,
        })
    }

    /// Step 3: the links made, then every directory given its mode and time, deepest first.
    /// When no file could be written at all, the directories the plan made are removed. What
    /// failed is in [`Summary::failures`], in the tree's order.
    pub fn finish(self, opened: Opened) -> Summary {
        let Opened {
            mut done,
            mut failures,
            not_started,
        } = opened;
        if self.dry_run {
            // What would be done: every file.
            done = vec![true; self.files];
        }
        failures.sort_by_key(|(at, _)| *at);
        for (at, (file, done)) in manifest_files(&self.manifest).zip(&done).enumerate() {
            if *done {
                tell(self.on_file.as_ref(), file.path, Action::Decrypted);
            } else if let Ok(i) = failures.binary_search_by_key(&at, |(at, _)| *at) {
                tell_failed(self.on_file.as_ref(), file.path, &failures[i].1);
            }
        }
        let mut summary = Summary {
            failures: failures.into_iter().map(|(_, e)| e).collect(),
            not_started,
            signer: self.signer.clone(),
            manifest_complete: self.manifest.complete,
            ..Summary::default()
        };
        for (file, done) in manifest_files(&self.manifest).zip(done) {
            if done {
                summary.files += 1;
                summary.bytes += file.entry.size;
            }
        }
        if self.dry_run {
            return summary;
        }
        let out = self.out.get();
        if summary.files == 0 && (!summary.failures.is_empty() || summary.not_started > 0) {
            out.remove_made(&self.made, self.created_root);
            return summary;
        }
        for entry in &self.manifest.entries {
            if let EntryKind::Symlink(target) = &entry.kind
                && let Err(e) = out.link(&entry.path, target, entry.mtime)
            {
                summary
                    .failures
                    .push(in_tree(&entry.path, Error::io("cannot make the link", e)));
            }
        }
        for entry in self.manifest.entries.iter().rev() {
            if entry.kind == EntryKind::Dir
                && let Err(e) = out.finish_dir(&entry.path, entry.mode, entry.mtime)
            {
                let what = format!("cannot set the mode and time of {}", out.shown(&entry.path));
                summary.failures.push(Error::io(what, e));
            }
        }
        summary
    }
}

/// Step 2 on another process: opens the files of `task` (made by [`OpenPlan::task`] and sent
/// as [`OpenTask::to_bytes`]) on the one schedule in the caller's pool, each from the header
/// and derived keys the task carries, into the output the plan made: each file's header on
/// disk is checked against the manifest's entry, every chunk authenticated, its length and
/// plaintext root checked, and it takes its name once complete, as in a local run. Returns
/// whether each file was done, or why it failed, for [`Opened::add`].
pub fn open_task(runner: &Runner, task: &OpenTask) -> TaskResult {
    open_task_guarded(runner, task, Arc::new(super::NoGuard))
}

/// [`open_task`], telling `guard` of the temporary files it writes and running its commits
/// through it, as a local run tells [`Options::guard`](super::Options::guard): so that a process that runs tasks (an
/// MPI rank) and is interrupted removes the named temporary files of the files it was writing
/// (where the filesystem has no `O_TMPFILE`, as NFS).
pub fn open_task_guarded(
    runner: &Runner,
    task: &OpenTask,
    guard: Arc<dyn super::Guard>,
) -> TaskResult {
    open_task_from(runner, task, &local(&task.input), guard)
}

/// [`open_task_guarded`] from `input`, the input the task names ([`OpenTask::input`]) opened
/// again by the front end that runs it (a prefix in object storage, serving the files the task
/// lists with [`OpenTask::listed`]: [`TreeInput::task_root`]). Each file's header is read from
/// `input` and checked against the one the plan read, as from a local directory.
pub fn open_task_from(
    runner: &Runner,
    task: &OpenTask,
    input: &dyn TreeInput,
    guard: Arc<dyn super::Guard>,
) -> TaskResult {
    open_task_to(runner, task, input, &task.dest(guard))
}

/// [`open_task_from`] into `output`, the output the task names ([`OpenTask::output`]) opened
/// again by the front end that runs it (a prefix in object storage:
/// [`TreeOutput::task_root`]), each file committed there once complete and checked.
pub fn open_task_to(
    runner: &Runner,
    task: &OpenTask,
    input: &dyn TreeInput,
    output: &dyn TreeOutput,
) -> TaskResult {
    let mut outcomes: Vec<Option<Outcome>> = vec![None; task.files.len()];
    let mut opening = Vec::new();
    let mut keys = Vec::new();
    for (at, file) in task.files.iter().enumerate() {
        match &file.keys {
            Err(why) => outcomes[at] = Some(Outcome::Failed(why.clone())),
            Ok((header, shared)) => {
                opening.push(at);
                keys.push((&header[..], &shared[..]));
            }
        }
    }
    let files = opening
        .iter()
        .map(|&at| {
            let file = &task.files[at];
            OpenFile {
                path: &file.path,
                stored: file.stored.clone(),
                entry: &file.entry,
                mode: file.mode,
                mtime: file.mtime,
            }
        })
        .collect();
    let runner = runner.clone().provider(task.provider);
    let work = Open::with(
        &runner,
        OpenKeys::Given(&keys),
        false,
        files,
        input,
        Some(output),
    );
    schedule::run(&work, &work.planned());
    let (done, failures) = work.done();
    for (&at, done) in opening.iter().zip(done) {
        if done {
            outcomes[at] = Some(Outcome::Opened);
        }
    }
    for (file, error) in failures {
        let message = match error {
            Error::InTree { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        outcomes[opening[file]] = Some(Outcome::Failed(message));
    }
    TaskResult {
        files: task
            .files
            .iter()
            .zip(outcomes)
            .map(|(file, outcome)| (file.index, outcome.unwrap_or(Outcome::NotStarted)))
            .collect(),
    }
}

/// The opening of a tree's files (a decryption into `dest`, or a check into nothing), as the
/// schedule runs it.
pub(crate) struct Open<'a> {
    runner: &'a Runner,
    keys: OpenKeys<'a>,
    provider: Provider,
    input: &'a dyn TreeInput,
    dest: Option<&'a dyn TreeOutput>,
    /// Whether the files are armored age files (read in order).
    armored: bool,
    files: Vec<OpenFile<'a>>,
    done: Mutex<Vec<bool>>,
    failures: Mutex<Vec<(usize, Error)>>,
}

/// What opens each file's header.
pub(crate) enum OpenKeys<'a> {
    /// The request of the tree's files ([`file_request`]), here.
    Request(&'a Request),
    /// For each file, the header the plan read and the keys it derived from it (a task on
    /// another process: see [`OpenTask`](super::OpenTask)).
    Given(&'a [(&'a [u8], &'a [u8])]),
}

/// One file to open: its path, where its encrypted file is, and what the manifest lists.
pub(crate) struct OpenFile<'a> {
    pub path: &'a [u8],
    pub stored: Vec<u8>,
    pub entry: &'a FileEntry,
    pub mode: u32,
    pub mtime: (i64, u32),
}

/// A file being opened.
pub(crate) struct Opening<'a> {
    source: Box<dyn InputFile + 'a>,
    temp: Option<Box<dyn OutputFile + 'a>>,
    /// The job; `None` for a file read in order (armor), which `resolved` runs as a stream.
    job: Option<Job>,
    resolved: Option<Resolved>,
    leaves: Mutex<Vec<[u8; HASH_LEN]>>,
    end: Mutex<Option<u64>>,
}

impl<'a> Open<'a> {
    pub(crate) fn new(
        runner: &'a Runner,
        request: &'a Request,
        manifest: &'a Manifest,
        input: &'a dyn TreeInput,
        dest: Option<&'a dyn TreeOutput>,
    ) -> Self {
        let files = manifest_files(manifest).collect();
        Open::with(
            runner,
            OpenKeys::Request(request),
            manifest.format == TreeFormat::ArmoredAge,
            files,
            input,
            dest,
        )
    }

    /// The opening of `files` under `input` with `keys`.
    pub(crate) fn with(
        runner: &'a Runner,
        keys: OpenKeys<'a>,
        armored: bool,
        files: Vec<OpenFile<'a>>,
        input: &'a dyn TreeInput,
        dest: Option<&'a dyn TreeOutput>,
    ) -> Self {
        Open {
            runner,
            keys,
            provider: runner.chosen_provider(),
            input,
            dest,
            armored,
            done: Mutex::new(vec![false; files.len()]),
            failures: Mutex::new(Vec::new()),
            files,
        }
    }

    /// Whether each file was done.
    pub(crate) fn done(self) -> (Vec<bool>, Vec<(usize, Error)>) {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        let failures = self
            .failures
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        (done, failures)
    }

    /// The schedule's view of the files.
    ///
    /// A file's share is its size as the manifest lists it, but never more than its encrypted
    /// file holds (every format only adds bytes): a manifest that claims sizes no file has plans
    /// only the work the files on disk can give (and each such file then fails when it is
    /// opened), so that a hostile manifest stays cheap.
    pub(crate) fn planned(&self) -> Vec<Planned> {
        let in_order = self.armored;
        self.files
            .par_iter()
            .map(|file| {
                let on_disk = self.input.len(&file.stored);
                let bytes = file.entry.size.min(on_disk);
                Planned {
                    bytes,
                    chunks: bytes.div_ceil(u64::from(file.entry.chunk_size)).max(1),
                    chunk_size: file.entry.chunk_size as usize,
                    in_order,
                }
            })
            .collect()
    }

    /// What a check into nothing found: the paths of the files found as listed, their bytes,
    /// and each failure with the path of its file, in the tree's order.
    pub(crate) fn checked(self) -> (Vec<Vec<u8>>, u64, PathFailures) {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut failures = self
            .failures
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        failures.sort_by_key(|(at, _)| *at);
        let (mut files, mut bytes) = (Vec::new(), 0);
        for (file, done) in self.files.iter().zip(done) {
            if done {
                files.push(file.path.to_vec());
                bytes += file.entry.size;
            }
        }
        let failures = failures
            .into_iter()
            .map(|(at, e)| (self.files[at].path.to_vec(), e))
            .collect();
        (files, bytes, failures)
    }

    fn mismatch(&self, file: usize, why: impl std::fmt::Display) -> Error {
        mismatch(&self.files[file].stored, why)
    }
}

impl<'a> FileWork for Open<'a> {
    type Open = Opening<'a>;

    fn open(&self, file: usize) -> Result<Opening<'a>> {
        let OpenFile { path, entry, .. } = self.files[file];
        let checked = check_header(self.input, &self.files[file], self.armored)?;
        let (source, len) = (checked.source, checked.len);
        let (job, resolved) = match &self.keys {
            OpenKeys::Request(request) => {
                let head = source.head()?;
                let resolved = request.resolve(&head, Driver::Whole)?;
                let job = if resolved.in_order() {
                    None
                } else {
                    let mut reader = BufReader::new(InputReader {
                        file: &*source,
                        at: 0,
                    });
                    Some(
                        resolved
                            .recipe()
                            .first_job(&mut reader, Some(len), self.provider)?,
                    )
                };
                (job, Some(resolved))
            }
            OpenKeys::Given(keys) => {
                // The header the plan opened must be the one the manifest lists, and so the
                // one on disk (checked above).
                let (header, key) = keys[file];
                if *blake3::hash(header).as_bytes() != entry.header_hash {
                    return Err(self.mismatch(file, "is not the one the plan opened"));
                }
                let job = crate::request::share::job(false, header, key, None, len, self.provider)?;
                (Some(job), None)
            }
        };
        // The tree hash's chunk is the file's own (its header's, or age's), never the
        // manifest's alone.
        let chunk = job
            .as_ref()
            .map_or(AGE_CHUNK, |job| job.layout().payload_chunk());
        if chunk != entry.chunk_size as usize {
            return Err(self.mismatch(
                file,
                format!(
                    "is in chunks of {chunk} bytes, where the manifest lists {}",
                    entry.chunk_size
                ),
            ));
        }
        if let Some(job) = &job {
            let chunks = entry.size.div_ceil(u64::from(entry.chunk_size)).max(1);
            if job.planned().len() != chunks {
                return Err(self.mismatch(file, "is not the length the manifest lists"));
            }
        }
        let temp = match self.dest {
            Some(dest) => Some(
                dest.create(path, entry.size)
                    .map_err(|e| Error::io("cannot create it in the output", e))?,
            ),
            None => None,
        };
        // One leaf a chunk of the job (whose plan, checked above, is the manifest's); a file
        // read in order computes its own.
        let leaves = job.as_ref().map_or(0, |job| job.planned().len());
        Ok(Opening {
            source,
            temp,
            job,
            resolved,
            leaves: Mutex::new(vec![[0; HASH_LEN]; leaves as usize]),
            end: Mutex::new(None),
        })
    }

    fn run(&self, _file: usize, open: &Opening<'a>, chunks: Range<u64>) -> Result<()> {
        let Some(job) = &open.job else {
            return self.in_order(open);
        };
        let sink = open.temp.as_ref().map(|t| t.sink());
        let ran = run_here(
            job,
            chunks.clone(),
            open.source.source(),
            sink,
            Plain::Output,
        )?;
        let plan = job.planned();
        self.runner
            .advance(plan.chunk(chunks.end - 1).input.end - plan.chunk(chunks.start).input.start);
        let mut leaves = open.leaves.lock().unwrap_or_else(|e| e.into_inner());
        leaves[chunks.start as usize..chunks.end as usize].copy_from_slice(&ran.leaves);
        if let Some(end) = ran.end {
            *open.end.lock().unwrap_or_else(|e| e.into_inner()) = Some(end);
        }
        Ok(())
    }

    fn finish(&self, file: usize, open: Opening<'a>) -> Result<()> {
        let OpenFile {
            path,
            entry,
            mode,
            mtime,
            ..
        } = self.files[file];
        let end = open.end.into_inner().unwrap_or_else(|e| e.into_inner());
        if end != Some(entry.size) {
            return Err(self.mismatch(
                file,
                format!(
                    "decrypts to {} bytes where the manifest lists {}",
                    end.unwrap_or(0),
                    entry.size
                ),
            ));
        }
        let leaves = open.leaves.into_inner().unwrap_or_else(|e| e.into_inner());
        if root(&leaves) != entry.root {
            return Err(self.mismatch(file, "does not decrypt to the contents the manifest lists"));
        }
        if let Some(temp) = open.temp {
            temp.set_len(entry.size)
                .map_err(|e| Error::io("setting its length", e))?;
            temp.set_times(mode, mtime)
                .map_err(|e| Error::io("setting its mode and time", e))?;
            temp.commit(path)
                .map_err(|e| Error::io("cannot give it its name", e))?;
        }
        self.done.lock().unwrap_or_else(|e| e.into_inner())[file] = true;
        Ok(())
    }

    fn failed(&self, file: usize, error: Error) {
        let error = in_tree(self.files[file].path, error);
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((file, error));
    }

    fn stops_all(&self, error: &Error) -> bool {
        self.dest.is_some() && super::stops_all(error)
    }
}

impl Open<'_> {
    /// A file read in order (age's armor): the stream into the temporary file (or nowhere),
    /// the plaintext's leaves computed as it goes.
    fn in_order(&self, open: &Opening<'_>) -> Result<()> {
        let resolved = open
            .resolved
            .as_ref()
            .expect("a file read in order is resolved here");
        let mut reader = BufReader::new(InputReader {
            file: &*open.source,
            at: 0,
        });
        // Age's chunk (checked by `open` to be the entry's).
        let mut leaves = Leaves::new(AGE_CHUNK);
        let written = match &open.temp {
            Some(temp) => {
                let to = OutputWriter {
                    file: &**temp,
                    at: 0,
                };
                let mut writer = Tee(std::io::BufWriter::with_capacity(1 << 16, to), &mut leaves);
                let n = resolved.stream(self.runner, &mut reader, &mut writer)?;
                writer.0.flush().map_err(|e| Error::io("writing it", e))?;
                n
            }
            None => resolved.stream(self.runner, &mut reader, &mut leaves)?,
        };
        *open.leaves.lock().unwrap_or_else(|e| e.into_inner()) = leaves.finish();
        *open.end.lock().unwrap_or_else(|e| e.into_inner()) = Some(written);
        Ok(())
    }
}

/// The files of `manifest`, in its order, as [`Open`] opens them.
pub(crate) fn manifest_files(manifest: &Manifest) -> impl Iterator<Item = OpenFile<'_>> {
    manifest.entries.iter().filter_map(|e| match &e.kind {
        EntryKind::File(entry) => Some(OpenFile {
            path: &e.path,
            stored: manifest.stored(&e.path),
            entry,
            mode: e.mode,
            mtime: e.mtime,
        }),
        _ => None,
    })
}

/// Why the encrypted file `stored` is not the one its entry lists.
pub(crate) fn mismatch(stored: &[u8], why: impl std::fmt::Display) -> Error {
    Error::TreeMismatch(format!("its encrypted file {} {why}", shown(stored)))
}

/// An encrypted file opened and its header checked against its entry.
pub(crate) struct CheckedHeader<'a> {
    pub source: Box<dyn InputFile + 'a>,
    pub len: u64,
}

/// Opens the encrypted file of `file` under `input` and checks its header against the
/// manifest's entry before any key touches it: another file of the tree, or another encryption
/// of this one, stops here (an armored file is hashed whole).
pub(crate) fn check_header<'a>(
    input: &'a dyn TreeInput,
    file: &OpenFile<'_>,
    armored: bool,
) -> Result<CheckedHeader<'a>> {
    let entry = file.entry;
    let source = input.open(&file.stored).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            mismatch(&file.stored, "is missing")
        } else {
            Error::io("cannot open its encrypted file", e)
        }
    })?;
    if !source.is_file() {
        return Err(mismatch(&file.stored, "is not a regular file"));
    }
    let len = source.len();
    let header_len = u64::from(entry.header_len);
    let hash = if armored {
        if len != header_len {
            return Err(mismatch(
                &file.stored,
                "is not the length the manifest lists",
            ));
        }
        hash_file(&*source)?
    } else {
        let mut header = vec![0u8; entry.header_len.min(1 << 20) as usize];
        if len < header_len || header.len() as u64 != header_len {
            return Err(mismatch(&file.stored, "is shorter than its header"));
        }
        source
            .read_exact_at(&mut header, 0)
            .map_err(|e| Error::io("reading its header", e))?;
        *blake3::hash(&header).as_bytes()
    };
    if hash != entry.header_hash {
        return Err(mismatch(
            &file.stored,
            "is not the one the manifest lists (another file's, or another encryption of this \
             one)",
        ));
    }
    // Every format only adds bytes to the plaintext.
    if len < entry.size {
        return Err(mismatch(
            &file.stored,
            "is shorter than the size the manifest lists",
        ));
    }
    Ok(CheckedHeader { source, len })
}

/// The BLAKE3 hash of a whole file, read in order.
fn hash_file(file: &dyn InputFile) -> Result<[u8; HASH_LEN]> {
    let mut hasher = blake3::Hasher::new();
    let mut reader = InputReader { file, at: 0 };
    std::io::copy(&mut reader, &mut hasher).map_err(|e| Error::io("reading it", e))?;
    Ok(*hasher.finalize().as_bytes())
}

/// A writer that computes the tree hash's leaves of what is written to it.
struct Leaves {
    chunk: usize,
    buf: Vec<u8>,
    leaves: Vec<[u8; HASH_LEN]>,
}

impl Leaves {
    fn new(chunk: usize) -> Self {
        Leaves {
            chunk,
            buf: Vec::with_capacity(chunk),
            leaves: Vec::new(),
        }
    }

    fn finish(mut self) -> Vec<[u8; HASH_LEN]> {
        if !self.buf.is_empty() || self.leaves.is_empty() {
            self.leaves.push(leaf(self.leaves.len() as u64, &self.buf));
        }
        self.leaves
    }
}

impl Write for Leaves {
    fn write(&mut self, mut data: &[u8]) -> std::io::Result<usize> {
        let n = data.len();
        while !data.is_empty() {
            if self.buf.len() == self.chunk {
                let index = self.leaves.len() as u64;
                self.leaves.push(leaf(index, &self.buf));
                self.buf.clear();
            }
            let take = (self.chunk - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes to a writer and to the leaves.
struct Tee<'a, W: Write>(W, &'a mut Leaves);

impl<W: Write> Write for Tee<'_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(data)?;
        self.1.write_all(&data[..n])?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Sealing;
    use crate::tree::NoGuard;
    use crate::tree::seal::write_manifest;

    /// A manifest (written by someone with the secret) that claims a file of 2^60 bytes plans
    /// only what the file on disk holds, and the file fails, named, without the run
    /// allocating for the claim: in the container and in armored age (read in order).
    #[test]
    fn a_manifest_claiming_sizes_no_file_has_stays_cheap() {
        forged(
            |file| file.size = 1 << 60,
            |_| "shorter than the size".into(),
        );
    }

    /// A manifest (written by someone with the secret) whose entry says `chunk_size = 16`:
    /// the plaintext is hashed in the file's own chunks (the container's, age's 64 KiB), never
    /// in 16-byte ones (leaves of twice the file), and the file fails, named: in the container
    /// and in armored age (read in order, where nothing else gives the chunk).
    #[test]
    fn a_manifest_s_chunk_size_is_never_the_one_hashed_with() {
        forged(
            |file| file.chunk_size = 16,
            |armored| {
                let chunk = if armored { 64 << 10 } else { 1 << 20 };
                format!("is in chunks of {chunk} bytes, where the manifest lists 16")
            },
        );
    }

    /// Decrypts a tree of two files, `f` and `g`, whose manifest's entry of `f` was `forge`d:
    /// `f` fails with an error that says `says(armored)`, `g` comes back.
    fn forged(forge: impl Fn(&mut FileEntry), says: impl Fn(bool) -> String) {
        let identity = age::x25519::Identity::generate();
        let mut recipients = crate::recipient::Recipients::new();
        recipients
            .add(&identity.to_public().to_string(), "test")
            .unwrap();
        let mut identities = Identities::new();
        use age::secrecy::ExposeSecret;
        identities
            .add_file("test", identity.to_string().expose_secret().as_bytes())
            .unwrap();
        let cases = [
            (
                Secret::Key(crate::container::Key::generate()),
                Sealing::default(),
                None,
            ),
            (
                Secret::Recipients(Arc::new(recipients)),
                Sealing {
                    format: crate::request::Format::Age,
                    armor: true,
                    ..Sealing::default()
                },
                Some(Secret::Identities(Arc::new(identities))),
            ),
        ];
        for (secret, sealing, opener) in cases {
            let armored = sealing.armor;
            let dir = tempfile::tempdir().unwrap();
            let plain = dir.path().join("plain");
            std::fs::create_dir(&plain).unwrap();
            std::fs::write(plain.join("f"), vec![7u8; 100]).unwrap();
            std::fs::write(plain.join("g"), vec![8u8; 100]).unwrap();
            let sealed = dir.path().join("sealed");
            let runner = Runner::new();
            let seal = Request::encrypt(secret.clone(), sealing.clone()).unwrap();
            super::super::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
            let open = Request::decrypt(opener.unwrap_or(secret.clone()), None).unwrap();
            let mut manifest = read_manifest(&runner, &open, &sealed).unwrap();
            let at = manifest
                .entries
                .iter()
                .position(|e| e.path == b"f")
                .unwrap();
            let EntryKind::File(file) = &mut manifest.entries[at].kind else {
                panic!("f is a file")
            };
            forge(file);
            let dest = Dest {
                root: sealed.clone(),
                replace: true,
                named: false,
                sync: false,
                guard: Arc::new(NoGuard),
            };
            let rewrite = Request::encrypt(
                secret,
                Sealing {
                    sign: None,
                    chunk_size: None,
                    ..sealing
                },
            )
            .unwrap();
            write_manifest(&runner, &rewrite, &mut manifest, None, &dest).unwrap();

            let back = dir.path().join("back");
            let done = decrypt(&runner, &open, &sealed, &back, &Options::default()).unwrap();
            assert_eq!(done.files, 1);
            assert_eq!(done.failures.len(), 1);
            let failure = done.failures[0].to_string();
            assert!(
                failure.starts_with("f: ") && failure.contains(&says(armored)),
                "{failure}"
            );
            assert_eq!(std::fs::read(back.join("g")).unwrap(), vec![8u8; 100]);
        }
    }
}
