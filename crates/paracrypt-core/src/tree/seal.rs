//! Encrypting a tree: the walk, the output's directories, every file on the one schedule, and
//! the manifest last.

use std::collections::HashSet;
use std::fs;
use std::io::{BufReader, Write};
use std::ops::Range;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use age::secrecy::ExposeSecret;
use rayon::prelude::*;
use zeroize::Zeroizing;

use super::chunks::{Plain, run_here};
use super::io::{
    InputReader, OutputFile, OutputWriter, PlainInput, Plaintexts, Reading, TreeOutput,
};
use super::manifest::{Entry, EntryKind, FileEntry, Keying, Manifest, TreeFormat};
use super::open::{open_manifest, read_sealed};
use super::out::{Dest, Out, ThroughLink, open_no_follow};
use super::path::shown;
use super::schedule::{self, FileWork, Planned};
use super::state::{Record, Written};
use super::task::{Outcome, Task, TaskFile, TaskResult};
use super::update::{Candidate, Checking, Checks, Encrypted};
use super::walk::{Found, Walk, Walked, join, stored_over_dir};
use super::{Action, MANIFEST, OnFile, Options, Summary, in_tree, tell, tell_failed};
use crate::engine::io::PositionalReader;
use crate::engine::{InputId, Job, Source};
use crate::error::{Error, Result};
use crate::plan::ChunkSize;
use crate::provider::Provider;
use crate::recipe::Runner;
use crate::recipient::Recipients;
use crate::request::{Driver, Format, Kind, Request, Resolved, Sealing, share};
use crate::request::{Key, Secret};
use crate::sign::SigningKey;
use crate::sign::tree::{HASH_LEN, TreeHash, root};

/// Encrypts the tree under the directory `input` into the directory `output` with `request`
/// (an encryption: [`Request::encrypt`]), on every thread of the caller's pool. See the
/// [module](super).
///
/// `output` must not exist (its parent must), or be an empty directory, or
/// [`Options::force`] must be set. Refused before anything is written: an input that is not a
/// directory, one that holds a FIFO, socket or device (named), an output inside the input (or
/// the input inside the output), a directory at the input's top named [`MANIFEST`]. Then each
/// file that fails is reported in [`Summary::failures`], the others go on, and the manifest
/// lists the files done (marked incomplete when any failed); when no file could be written at
/// all, the directories this run made are removed again and no manifest is written.
pub fn encrypt(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: &Path,
    options: &Options,
) -> Result<Summary> {
    let plan = plan(runner, request, input, output, options)?;
    let sealed = plan.seal_here(runner);
    Ok(plan.finish(runner, sealed))
}

/// Step 1 of a tree's encryption, done once (on the one process, or a coordinator: a Dask
/// client, rank 0): checks `request` and `options` as [`encrypt`] does, reads the tree already
/// at the output (`--update`), draws the tree's secrets (its key or identity with a password,
/// its name key with [`Options::hide_names`]), walks `input`, makes the output's directories
/// and lists the files to seal. Every refusal [`encrypt`] makes before writing is made here.
/// Then [`Plan::seal_here`] (every file, in this process) or [`Plan::tasks`] and
/// [`Plan::task`] (files cut into tasks that other processes run with [`seal_task`]) seal
/// the files, and [`Plan::finish`] writes the manifest from what they return.
///
/// It is [`prepare`], the walk in this process ([`Walk::here`]), then [`Prepared::plan`]: a
/// coordinator that spreads the walk too (MPI ranks) walks between the two.
pub fn plan(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: &Path,
    options: &Options,
) -> Result<Plan> {
    let prepared = prepare(runner, request, input, output, options)?;
    let walk = Walk::here(input)?;
    prepared.plan(walk)
}

/// [`plan`] up to the walk: the request and options checked, the tree already at the output
/// read (`--update`), the tree's secrets drawn. Nothing is written. Then the input is walked,
/// here ([`Walk::here`]) or in parts over other processes ([`walk_top`](super::walk_top)), and
/// [`Prepared::plan`] plans from the walk.
pub fn prepare(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: &Path,
    options: &Options,
) -> Result<Prepared> {
    prepare_out(runner, request, input, local_out(output, options), options)
}

/// The local directory `output` as an encryption's output.
pub(super) fn local_out(output: &Path, options: &Options) -> Out {
    Out::Local(Dest {
        root: output.to_path_buf(),
        replace: options.force || options.update,
        named: options.named_temps,
        sync: options.sync,
        guard: Arc::clone(&options.guard),
    })
}

/// [`prepare`] into `out`.
fn prepare_out(
    runner: &Runner,
    request: &Request,
    input: &Path,
    out: Out,
    options: &Options,
) -> Result<Prepared> {
    let Kind::Encrypt {
        secret,
        format,
        armor,
        suite,
        chunk_size,
        sign,
        salt,
    } = request.kind()
    else {
        return Err(Error::Request(
            "a tree is encrypted with an encryption request (a key, a password or recipients)"
                .into(),
        ));
    };
    options_valid(options)?;
    if options.dry_run && matches!(out, Out::Other(_)) {
        return Err(super::dry_run_refused());
    }
    if salt.is_some() {
        return Err(Error::Request(
            "a fixed salt would seal every file of a tree under one keystream: a tree draws a \
             fresh salt for each file"
                .into(),
        ));
    }
    let tree_format = match (format, armor) {
        (Format::Container, _) => TreeFormat::Container,
        (Format::Age, false) => TreeFormat::Age,
        (Format::Age, true) => TreeFormat::ArmoredAge,
    };
    // What this host recorded of the tree at the output (nothing with no state directory).
    let record = options
        .state
        .as_deref()
        .map(|dir| match options.dry_run {
            // A dry run makes no state directory and no host key.
            true => Record::read(dir, &out.get().location()),
            false => Record::open(dir, &out.get().location()),
        })
        .transpose()?;
    // `--update`: the manifest's file at the output as stored (a local directory, or what the
    // output gives to read it), when it has one.
    let sealed = match &out {
        _ if !options.update => None,
        Out::Local(dest) => stored_manifest(&super::open::local(&dest.root))?,
        Out::Other(other) => {
            let Some(existing) = other.existing() else {
                return Err(Error::Request(
                    "an update reads and removes files of the tree already at the output: \
                     this output cannot be read"
                        .into(),
                ));
            };
            stored_manifest(existing)?
        }
    };
    let previous = match sealed {
        Some(sealed) => previous_tree(
            runner,
            secret,
            sign.as_ref(),
            tree_format,
            options,
            &sealed,
            record.as_ref(),
            &out.get().shown(MANIFEST.as_bytes()),
        )?,
        None => None,
    };
    // What the files are sealed with (see the module: a password seals the manifest only); an
    // update keeps the tree's own key, so that its files still open.
    let (keying, file_secret) = match previous.as_ref().map(|p| &p.keying) {
        Some(Keying::TreeKey(key)) => (Keying::TreeKey(key.clone()), Secret::Key(key.clone())),
        Some(Keying::TreeIdentity(text)) => {
            let identity: age::x25519::Identity = text
                .parse()
                .map_err(|_| Error::Manifest("its tree identity is not an identity".into()))?;
            let mut recipients = Recipients::new();
            recipients.add(&identity.to_public().to_string(), "the tree's identity")?;
            (
                Keying::TreeIdentity(text.clone()),
                Secret::Recipients(Arc::new(recipients)),
            )
        }
        _ => match secret {
            Secret::Key(_) | Secret::Recipients(_) => (Keying::Secret, secret.clone()),
            Secret::Password(..) if *format == Format::Container => {
                let key = Key::generate();
                (Keying::TreeKey(key.clone()), Secret::Key(key))
            }
            Secret::Password(..) => {
                let identity = age::x25519::Identity::generate();
                let mut recipients = Recipients::new();
                recipients.add(&identity.to_public().to_string(), "the tree's identity")?;
                let text = Zeroizing::new(identity.to_string().expose_secret().to_owned());
                (
                    Keying::TreeIdentity(text),
                    Secret::Recipients(Arc::new(recipients)),
                )
            }
            Secret::Identities(_) => unreachable!("refused by Request::encrypt"),
        },
    };
    let container = *format == Format::Container;
    let sealing = Sealing {
        format: *format,
        armor: *armor,
        suite: container.then_some(*suite),
        chunk_size: container.then_some(*chunk_size),
        sign: sign.clone(),
    };
    let file_request = Request::encrypt(file_secret, sealing.clone())?;
    let manifest_request = Request::encrypt(
        secret.clone(),
        Sealing {
            sign: None,
            chunk_size: None,
            ..sealing
        },
    )?;
    let resolved = file_request.resolve(&[], Driver::Whole)?;
    let provider = runner.chosen_provider();
    // The plaintext chunk of every file (the tree hash's chunk): the container's chunk size,
    // age's 64 KiB.
    let chunk = resolved
        .recipe()
        .first_job(&mut &[][..], Some(0), provider)?
        .layout()
        .payload_chunk();
    Ok(Prepared {
        tree_format,
        keying,
        sign: sign.clone(),
        previous,
        file_request,
        manifest_request,
        resolved,
        provider,
        chunk,
        input: input.to_path_buf(),
        plain: None,
        out,
        record,
        options: options.clone(),
    })
}

/// The manifest's file of the tree at an update's output, as stored; `None` where there is
/// none (the tree is written whole).
fn stored_manifest(output: &dyn super::io::TreeInput) -> Result<Option<Vec<u8>>> {
    match output.open(MANIFEST.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // Any other failure is read_sealed's to report.
        _ => read_sealed(output).map(Some),
    }
}

/// The manifest an update takes the tree at its output from, `sealed` being its file there;
/// `None` where nothing at the output can be trusted, and every file is encrypted again.
///
/// The output is storage others may write. A manifest sealed with the caller's key or
/// password was written by whoever holds that secret. One encrypted to recipients may have been
/// written by anyone who holds their public keys: it is taken from this host's `record` of
/// what it wrote there (which needs no identity), or read with the identities of
/// [`Options::update_with`] when it is signed by the update's own signing key; otherwise
/// nothing of it is taken. Whatever it is, it must be the tree this host last wrote there
/// (`record`), at the same generation or a newer one: an older one put back is refused.
#[allow(clippy::too_many_arguments)]
fn previous_tree(
    runner: &Runner,
    secret: &Secret,
    sign: Option<&SigningKey>,
    format: TreeFormat,
    options: &Options,
    sealed: &[u8],
    record: Option<&Record>,
    shown: &str,
) -> Result<Option<Manifest>> {
    let recorded = record.and_then(|r| r.find(blake3::hash(sealed).as_bytes()));
    let previous = match (secret, &options.update_with) {
        (Secret::Key(_) | Secret::Password(..), None) => Some(open_manifest(
            runner,
            &Request::decrypt(secret.clone(), None)?,
            sealed,
        )?),
        (Secret::Recipients(_), _) if recorded.is_some_and(|w| w.plain.is_some()) => {
            let recorded = recorded.and_then(Written::manifest).expect("checked");
            Some(recorded.map_err(|e| in_tree(MANIFEST.as_bytes(), e))?)
        }
        (Secret::Recipients(_), Some(identities)) => {
            let open = Request::decrypt(Secret::Identities(Arc::clone(identities)), None)?;
            let read = open_manifest(runner, &open, sealed)?;
            check_previous(&read, format, sign, options.hide_names)?;
            // Signed by the update's own key (check_previous pinned it): the owner's.
            read.signer.is_some().then_some(read)
        }
        (Secret::Recipients(_), None) => None,
        _ => {
            return Err(Error::Request(
                "identities open the manifest of a tree encrypted to recipients: this \
                 tree's key or password opens its own"
                    .into(),
            ));
        }
    };
    let Some(previous) = previous else {
        log::debug!(
            "{shown}: not written by this host, nor signed by the update's key: every file is encrypted again"
        );
        return Ok(None);
    };
    check_previous(&previous, format, sign, options.hide_names)?;
    if let Some((tree_id, newest)) = record.and_then(Record::newest) {
        let at = record.map(Record::path).unwrap_or(Path::new(""));
        if previous.tree_id != *tree_id {
            return Err(Error::Rollback(format!(
                "{shown}: not the tree this host last wrote there (its record: {}): update it \
                 from the host that wrote it, or encrypt it anew without --update",
                at.display()
            )));
        }
        if previous.generation < newest {
            return Err(Error::Rollback(format!(
                "{shown}: generation {} of the tree, older than the generation {newest} this \
                 host wrote there (an old manifest put back): nothing was written",
                previous.generation
            )));
        }
    }
    Ok(Some(previous))
}

/// [`encrypt`] into `output`, a [`TreeOutput`] a front end plugs in (a prefix in object
/// storage) instead of a local directory: the same checks, the same schedule and the same
/// files, the manifest written last (such an output takes no checkpoints: a tree without its
/// manifest is an unfinished one). An update ([`Options::update`]) reads the tree already
/// there through [`TreeOutput::existing`] (refused for an output that gives none), keeps the
/// files unchanged as a local update does, and removes the files gone
/// ([`TreeOutput::remove`]) before the new manifest is written, last: until then the previous
/// manifest stands, and an update stopped at any point is finished by the next.
pub fn encrypt_to(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: Arc<dyn TreeOutput>,
    options: &Options,
) -> Result<Summary> {
    let prepared = prepare_out(runner, request, input, Out::Other(output), options)?;
    let walk = Walk::here(input)?;
    let plan = prepared.plan(walk)?;
    let sealed = plan.seal_here(runner);
    Ok(plan.finish(runner, sealed))
}

/// [`plan`] into `output`, a [`TreeOutput`] a front end plugs in, as [`encrypt_to`] writes
/// into it: its files are then sealed here ([`Plan::seal_here`]) or, where the output says
/// how another process opens it again ([`TreeOutput::task_root`]: a prefix), in tasks run
/// with [`seal_task_to`]; [`Plan::finish`] writes the manifest into it, last.
pub fn plan_to(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: Arc<dyn TreeOutput>,
    options: &Options,
) -> Result<Plan> {
    let prepared = prepare_to(runner, request, input, output, options)?;
    let walk = Walk::here(input)?;
    prepared.plan(walk)
}

/// [`prepare`] into `output`, a [`TreeOutput`] a front end plugs in ([`plan_to`] up to the
/// walk: MPI ranks walk between the two).
pub fn prepare_to(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: Arc<dyn TreeOutput>,
    options: &Options,
) -> Result<Prepared> {
    prepare_out(runner, request, input, Out::Other(output), options)
}

/// [`plan`] of the plaintext tree `input`, a [`PlainInput`] a front end plugs in (a prefix in
/// object storage) instead of a local directory, into the local directory `output`: listed
/// once ([`Walk::of`]), each file then read through the input's positional reads on the same
/// schedule, and checked to be the version listed. Its files are sealed here
/// ([`Plan::seal_here`]), or in tasks on other processes where the input names a root they
/// open again ([`PlainInput::task_root`]: a prefix's URL, each task reading the versions this
/// plan listed, run with [`seal_task_from`] or [`seal_task_from_to`]).
pub fn plan_from(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn PlainInput>,
    output: &Path,
    options: &Options,
) -> Result<Plan> {
    plan_plain(runner, request, input, local_out(output, options), options)
}

/// [`plan_from`] into `output`, a [`TreeOutput`] a front end plugs in (a prefix into a
/// prefix).
pub fn plan_from_to(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn PlainInput>,
    output: Arc<dyn TreeOutput>,
    options: &Options,
) -> Result<Plan> {
    plan_plain(runner, request, input, Out::Other(output), options)
}

fn plan_plain(
    runner: &Runner,
    request: &Request,
    input: Arc<dyn PlainInput>,
    out: Out,
    options: &Options,
) -> Result<Plan> {
    let mut prepared = prepare_out(runner, request, input.root(), out, options)?;
    let walk = Walk::of(&*input)?;
    prepared.plain = Some(input);
    prepared.plan(walk)
}

/// A tree's encryption up to its walk, as [`prepare`] made it: the tree's secrets and what
/// seals the files and the manifest.
pub struct Prepared {
    tree_format: TreeFormat,
    keying: Keying,
    sign: Option<SigningKey>,
    previous: Option<Manifest>,
    file_request: Request,
    manifest_request: Request,
    resolved: Resolved,
    provider: Provider,
    chunk: usize,
    input: PathBuf,
    /// A plaintext tree plugged in (whose root is `input`), read through it.
    plain: Option<Arc<dyn PlainInput>>,
    out: Out,
    /// What this host recorded of the tree at the output.
    record: Option<Record>,
    options: Options,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("input", &self.input)
            .field("output", &self.out.get().shown(b""))
            .finish_non_exhaustive()
    }
}

impl Prepared {
    /// The rest of [`plan`], from the finished walk of the input (`walk`, of the input this
    /// was prepared for): the output checked and its directories made, the files listed (an
    /// update's unchanged files kept, checked here).
    pub fn plan(self, walk: Walk) -> Result<Plan> {
        self.plan_kept(walk, None)
    }

    /// An update's checks of the walked files (see [`Checks`]), for a coordinator that spreads
    /// them over other processes: the files whose size (and, without
    /// [`Options::checksum`](super::Options::checksum), modification time) the previous
    /// manifest lists, cut into at least `at_least` tasks where there are as many. None when
    /// this is not an update of a tree already at the output. Nothing is read but the walk.
    pub fn checks(&self, walk: &Walk, at_least: usize) -> Option<Checks> {
        let previous = self.previous.as_ref()?;
        if self.plain.is_some() {
            // Checked by the plan, through the input plugged in.
            return None;
        }
        let output = &self.out.local()?.root;
        let checksum = self.options.checksum;
        let candidates = walk
            .entries
            .iter()
            .enumerate()
            .filter_map(|(at, w)| {
                let (len, file) = candidate(w, previous, checksum)?;
                Some(Candidate {
                    at,
                    path: w.path.clone(),
                    stored: previous.stored(&w.path),
                    len,
                    file: file.clone(),
                })
            })
            .collect();
        Some(Checks::new(
            &self.input,
            output,
            previous.format,
            checksum,
            self.chunk,
            walk.entries.len(),
            candidates,
            at_least,
        ))
    }

    /// [`Prepared::plan`] with an update's unchanged files known from `checks` (made by
    /// [`Prepared::checks`] from the same walk, their tasks' answers added): a file whose
    /// answer never came is sealed again. Refuses checks of another walk or input.
    pub fn plan_checked(self, walk: Walk, checks: Checks) -> Result<Plan> {
        if checks.walked != walk.entries.len()
            || checks.input != self.input
            || checks
                .candidates
                .iter()
                .any(|c| walk.entries.get(c.at).map(|w| &w.path) != Some(&c.path))
        {
            return Err(Error::Request(
                "an update's checks of another walk do not plan this tree".into(),
            ));
        }
        self.plan_kept(walk, Some(checks))
    }

    fn plan_kept(self, walk: Walk, checks: Option<Checks>) -> Result<Plan> {
        let Prepared {
            tree_format,
            keying,
            sign,
            previous,
            file_request,
            manifest_request,
            resolved,
            provider,
            chunk,
            input,
            plain,
            out,
            record,
            options,
        } = self;
        if walk.root != input {
            return Err(Error::Request(format!(
                "a walk of {} does not plan the tree of {}",
                walk.root.display(),
                input.display()
            )));
        }
        let (input, options) = (input.as_path(), &options);
        let walked = walk.entries;
        let replace = options.force || options.update;
        let created_root = match (&plain, &out) {
            // A dry run makes nothing.
            (Some(_), _) if options.dry_run => out.check(None, replace).map(|()| false)?,
            (None, _) if options.dry_run => out.check(Some(input), replace).map(|()| false)?,
            // No local input for the output to be inside of.
            (Some(_), Out::Local(dest)) => check_output_remote(&dest.root, replace)?,
            _ => out.get().prepare(input, replace)?,
        };
        let mut manifest = Manifest::new(tree_format, keying, options.hide_names);
        if let Some(previous) = &previous {
            manifest.tree_id = previous.tree_id;
            manifest.generation = previous.generation + 1;
            manifest.parent = previous.digest;
            manifest.name_key = previous.name_key;
        }
        // Only a directory would clash: a file of that name is stored with its suffix, and a link
        // only in the manifest.
        if !manifest.hides_names()
            && walked
                .iter()
                .any(|w| w.path == MANIFEST.as_bytes() && w.found == Found::Dir)
        {
            out.get().remove_made(&[], created_root);
            return Err(Error::Tree(format!(
                "{}: a directory at the top of a tree may not be named {MANIFEST} (the manifest's \
             name)",
                join(input, MANIFEST.as_bytes()).display()
            )));
        }
        if !manifest.hides_names()
            && let Some((file, dir)) = stored_over_dir(&walked, tree_format.suffix())
        {
            out.get().remove_made(&[], created_root);
            return Err(Error::TreeNameClash(format!(
                "{} and the directory {} would both be stored as {}: encrypt the tree with hidden \
                 names, which store its files under opaque names",
                join(input, file).display(),
                join(input, dir).display(),
                shown(dir)
            )));
        }
        let made = match make_dirs(out.get(), &walked, &manifest) {
            _ if options.dry_run => Vec::new(),
            Ok(made) => made,
            Err(e) => {
                out.get().remove_made(&[], created_root);
                return Err(e);
            }
        };

        // `--update`: the files the previous manifest lists as they are now, and whose encrypted
        // file is still the one it lists, are kept as they are.
        let kept: Vec<Option<FileEntry>> = match (&previous, checks, out.local()) {
            (Some(_), Some(checks), _) => {
                let mut kept = vec![None; walked.len()];
                for (n, c) in checks.candidates.iter().enumerate() {
                    if checks.same(n) {
                        kept[c.at] = Some(c.file.clone());
                    }
                }
                kept
            }
            (Some(previous), None, local) => {
                let output = match (local, out.get().existing()) {
                    (Some(dest), _) => Some(Encrypted::Local(&dest.root)),
                    (None, existing) => existing.map(Encrypted::Input),
                };
                match output {
                    Some(output) => walked
                        .par_iter()
                        .map(|w| {
                            let input = match &plain {
                                Some(plain) => Plaintexts::Other(&**plain),
                                None => Plaintexts::Local(input),
                            };
                            let checksum = options.checksum;
                            unchanged(w, previous, input, output, checksum, chunk, provider)
                        })
                        .collect(),
                    None => vec![None; walked.len()],
                }
            }
            _ => vec![None; walked.len()],
        };
        let files: Vec<usize> = (0..walked.len())
            .filter(|&at| matches!(walked[at].found, Found::File { .. }) && kept[at].is_none())
            .collect();
        let stored = files
            .iter()
            .map(|&at| manifest.stored(&walked[at].path))
            .collect();
        Ok(Plan {
            file_request,
            manifest_request,
            sign,
            resolved,
            provider,
            chunk,
            input: input.to_path_buf(),
            plain,
            out,
            walked,
            kept,
            files,
            stored,
            manifest,
            previous,
            made,
            created_root,
            record: Mutex::new(record),
            dry_run: options.dry_run,
            on_file: options.on_file.clone(),
        })
    }
}

/// A tree's encryption as [`plan`] made it: the walked tree, the tree's secrets and the files
/// to seal, the output's directories made. Step 2 seals its files, here ([`Plan::seal_here`])
/// or in tasks ([`Plan::task`], [`seal_task`]); step 3 ([`Plan::finish`]) writes the manifest.
pub struct Plan {
    /// What each file is sealed with (the tree's key or identity with a password).
    file_request: Request,
    /// What the manifest is sealed with (the caller's secret).
    manifest_request: Request,
    sign: Option<SigningKey>,
    resolved: Resolved,
    provider: Provider,
    /// The plaintext chunk of every file.
    chunk: usize,
    input: PathBuf,
    /// A plaintext tree plugged in (whose root is `input`), read through it.
    plain: Option<Arc<dyn PlainInput>>,
    out: Out,
    walked: Vec<Walked>,
    /// The files kept from the previous manifest (`--update`), by walked entry.
    kept: Vec<Option<FileEntry>>,
    /// The files to seal (their walked entries), in the walk's order.
    files: Vec<usize>,
    /// Each file's name in the output.
    stored: Vec<Vec<u8>>,
    manifest: Manifest,
    previous: Option<Manifest>,
    /// The directories this run made, and whether it made the output.
    made: Vec<Vec<u8>>,
    created_root: bool,
    /// What this host records of the tree at the output, as each manifest is written
    /// ([`Plan::write_manifest`]).
    record: Mutex<Option<Record>>,
    /// [`Options::dry_run`]: no file is sealed, nothing written.
    dry_run: bool,
    /// Told of each file as [`Plan::finish`] lists it.
    on_file: Option<OnFile>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("entries", &self.walked.len())
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

/// What step 2 did: each planned file's manifest entry once sealed, and the failures.
#[derive(Debug)]
pub struct Sealed {
    /// By planned file: its entry, once sealed and committed.
    done: Vec<Option<FileEntry>>,
    /// The files that failed (planned file, error naming it).
    failures: Vec<(usize, Error)>,
    not_started: u64,
    /// When [`Sealed::checkpoint`] writes its next manifest.
    next_checkpoint: Instant,
}

impl Sealed {
    /// Nothing sealed yet, for the files of `plan`.
    pub fn new(plan: &Plan) -> Self {
        Sealed {
            done: vec![None; plan.files.len()],
            failures: Vec::new(),
            not_started: 0,
            next_checkpoint: Instant::now(),
        }
    }

    /// Writes the manifest of what is sealed so far over the output's (marked incomplete), when
    /// one is due, as [`Plan::seal_here`] does as it goes: so that a run stopped at any point
    /// (a signal, a killed process or rank) leaves a manifest of the files done up to then, from
    /// which `--update` goes on. The next is due after ten times as long as this one took (at
    /// least a second), so that checkpoints cost at most a tenth of the run whatever the tree's
    /// size; none once every file is done ([`Plan::finish`] writes the manifest next). A
    /// checkpoint that fails is left to [`Plan::finish`], which reports its own.
    pub fn checkpoint(&mut self, plan: &Plan, runner: &Runner) {
        let start = Instant::now();
        if start < self.next_checkpoint
            || !plan.out.get().checkpoints()
            || self.done.iter().all(Option::is_some)
        {
            return;
        }
        let mut manifest = plan.manifest.clone();
        manifest.entries = plan.listing(&|file| self.done[file].clone()).entries;
        manifest.complete = false;
        manifest.written = now();
        let _ = plan.write_manifest(runner, &mut manifest);
        self.next_checkpoint = Instant::now() + (start.elapsed() * 10).max(Duration::from_secs(1));
    }

    /// Adds what one task did ([`seal_task`]'s result, read back with
    /// [`TaskResult::from_bytes`]). Each failure is named by the plan's path of its file.
    pub fn add(&mut self, plan: &Plan, result: TaskResult) -> Result<()> {
        for (file, outcome) in result.files {
            let Some(done) = self.done.get_mut(file) else {
                return Err(Error::Tree(format!(
                    "a task's result names file {file} of a plan of {}",
                    plan.files.len()
                )));
            };
            match outcome {
                Outcome::Sealed(entry) => *done = Some(entry),
                Outcome::Failed(message) => {
                    let path = &plan.walked[plan.files[file]].path;
                    self.failures
                        .push((file, in_tree(path, Error::Tree(message))));
                }
                Outcome::NotStarted => self.not_started += 1,
                Outcome::Opened => {
                    return Err(Error::Tree(format!(
                        "a task's result for file {file} is a decryption's, not this encryption's"
                    )));
                }
            }
        }
        Ok(())
    }

    /// A task that returned nothing (its worker died, it was cancelled): its files failed,
    /// each with `why`.
    pub fn lost(&mut self, plan: &Plan, task: Range<usize>, why: &str) {
        for file in task {
            if self.done.get(file).is_some_and(Option::is_none) {
                let path = &plan.walked[plan.files[file]].path;
                self.failures
                    .push((file, in_tree(path, Error::Tree(why.to_string()))));
            }
        }
    }
}

impl Plan {
    /// How many files are to be sealed.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Step 2 in this process: every planned file on the one schedule in the caller's pool,
    /// each file's header drawn as it is opened, an incomplete manifest written now and then
    /// (a checkpoint, from which `--update` goes on after an interrupt).
    pub fn seal_here(&self, runner: &Runner) -> Sealed {
        if self.dry_run {
            return Sealed::new(self);
        }
        let files: Vec<&Walked> = self.files.iter().map(|&at| &self.walked[at]).collect();
        let checkpoint = Checkpoint {
            plan: self,
            manifest: Mutex::new(self.manifest.clone()),
            start: Instant::now(),
            next: AtomicU64::new(0),
        };
        let work = Seal {
            runner,
            keys: Keys::Draw(&self.resolved),
            provider: self.provider,
            input: match &self.plain {
                Some(plain) => Plaintexts::Other(&**plain),
                None => Plaintexts::Local(&self.input),
            },
            dest: self.out.get(),
            stored: self.stored.iter().map(Vec::as_slice).collect(),
            hidden: self.manifest.hides_names(),
            chunk: self.chunk,
            done: files.iter().map(|_| Mutex::new(None)).collect(),
            failures: Mutex::new(Vec::new()),
            files,
            checkpoint: self.out.get().checkpoints().then_some(checkpoint),
        };
        let ran = schedule::run(&work, &self.planned(0..self.files.len()));
        work.into_sealed(ran)
    }

    /// The planned files `files`, as the schedule cuts them.
    fn planned(&self, files: Range<usize>) -> Vec<Planned> {
        self.files[files]
            .iter()
            .map(|&at| {
                let bytes = file_len(&self.walked[at]);
                Planned {
                    bytes,
                    chunks: bytes.div_ceil(self.chunk as u64).max(1),
                    chunk_size: self.chunk,
                    in_order: self.resolved.in_order(),
                }
            })
            .collect()
    }

    /// The planned files cut into tasks for other processes, in the walk's order: consecutive
    /// small files batched (up to [`TASK_FILES`](super::TASK_FILES) files and
    /// [`TASK_BYTES`](super::TASK_BYTES) bytes together), a larger file alone; then, while
    /// there are fewer than `at_least` tasks (the workers), the task of the most files is
    /// halved, so that a tree of a few hundred small files still reaches every worker. Each task's files then run on its process's
    /// schedule (a large file's chunks on every thread of it).
    pub fn tasks(&self, at_least: usize) -> Vec<Range<usize>> {
        if self.dry_run {
            // Nothing to seal: [`Plan::finish`] says what would be.
            return Vec::new();
        }
        let lens: Vec<u64> = self
            .files
            .iter()
            .map(|&at| file_len(&self.walked[at]))
            .collect();
        super::task::cut(&lens, at_least)
    }

    /// The task of the planned files `files` (one of [`Plan::tasks`], or any run of them),
    /// to be run by [`seal_task`] on another process. Each file's header is made here, as a
    /// one-file distributed job's is (a fresh salt, or file key): the task carries those
    /// headers and the keys derived for those files alone, never the key file, password or
    /// the tree's own key or identity; with a signing key, that key (every file is signed).
    /// Armored age files are written in order, on one process: such a tree is not cut into
    /// tasks.
    pub fn task(&self, files: Range<usize>) -> Result<Task> {
        if files.start > files.end || files.end > self.files.len() {
            return Err(Error::Request(format!(
                "files {}..{} are not a run of the plan's {} files",
                files.start,
                files.end,
                self.files.len()
            )));
        }
        let (input, plain) = match &self.plain {
            None => (self.input.clone(), None),
            Some(plain) => match plain.task_root() {
                Some(root) => (root, Some(&**plain)),
                None => {
                    return Err(Error::Request(
                        "this tree's input is read on this process only: its files are not \
                         sealed in tasks"
                            .into(),
                    ));
                }
            },
        };
        let Some((output, replace, named, sync)) = self.out.task_root() else {
            return Err(Error::Request(
                "this tree's output is written by one process: its files are not sealed in \
                 tasks"
                    .into(),
            ));
        };
        let resolved = self.file_request.resolve(&[], Driver::Distributed)?;
        let mut planned = Vec::with_capacity(files.len());
        for at in files {
            let walked = &self.walked[self.files[at]];
            let Found::File { len, ino } = walked.found else {
                unreachable!("only regular files are planned")
            };
            let job = resolved
                .recipe()
                .first_job(&mut &[][..], Some(len), self.provider)?;
            let shared = job
                .shared_key()
                .ok_or_else(|| Error::Request("this format is not run in parts".into()))?;
            planned.push(TaskFile {
                index: at,
                path: walked.path.clone(),
                len,
                ino,
                mode: walked.mode,
                mtime: walked.mtime,
                stored: self.stored[at].clone(),
                header: job.header().to_vec(),
                shared: Zeroizing::new(shared.to_vec()),
                version: plain.and_then(|plain| plain.version(&walked.path)),
            });
        }
        Ok(Task {
            input,
            output,
            replace,
            named,
            sync,
            hidden: self.manifest.hides_names(),
            chunk: self.chunk,
            provider: self.provider,
            sign: self.sign.clone(),
            files: planned,
        })
    }

    /// Step 3: writes the manifest of what `sealed` holds (signed with the request's signing
    /// key; marked incomplete when a file failed or was not started), then (an update)
    /// removes the encrypted files of files gone, and gives the output's directories their
    /// modes and times. When no file could be written at all, the directories the plan made
    /// are removed and no manifest is written. What failed is in [`Summary::failures`], in the
    /// tree's order.
    pub fn finish(mut self, runner: &Runner, sealed: Sealed) -> Summary {
        if self.dry_run {
            return self.dry_summary();
        }
        let Sealed {
            done,
            mut failures,
            not_started,
            ..
        } = sealed;
        failures.sort_by_key(|(at, _)| *at);
        let listed = self.listing(&|file| done[file].clone());
        if let Some(on_file) = &self.on_file {
            let mut planned = 0;
            for (w, kept) in self.walked.iter().zip(&self.kept) {
                match (&w.found, kept) {
                    (Found::File { .. }, Some(_)) => {
                        tell(Some(on_file), &w.path, Action::Unchanged)
                    }
                    (Found::File { .. }, None) => {
                        let file = planned;
                        planned += 1;
                        if done[file].is_some() {
                            tell(Some(on_file), &w.path, Action::Encrypted);
                        } else if let Ok(at) = failures.binary_search_by_key(&file, |(at, _)| *at) {
                            tell_failed(Some(on_file), &w.path, &failures[at].1);
                        }
                        // Not started: the summary counts it.
                    }
                    _ => {}
                }
            }
        }
        let mut summary = Summary {
            failures: failures.into_iter().map(|(_, e)| e).collect(),
            not_started,
            files: listed.files,
            bytes: listed.bytes,
            unchanged: listed.unchanged,
            ..Summary::default()
        };
        let mut manifest = std::mem::replace(
            &mut self.manifest,
            Manifest::new(TreeFormat::Plain, Keying::Secret, false),
        );
        manifest.entries = listed.entries;
        if summary.files == 0
            && summary.unchanged == 0
            && (!summary.failures.is_empty() || summary.not_started > 0)
        {
            // Nothing was done: nothing is left.
            self.out.get().remove_made(&self.made, self.created_root);
            return summary;
        }
        manifest.complete = summary.failures.is_empty() && summary.not_started == 0;
        manifest.written = now();
        // An output the update reads through `existing` (a prefix) has no checkpoints: its
        // files gone are removed first, the new manifest written last, so that until then the
        // previous manifest stands and the next update finishes a run stopped at any point. A
        // file that cannot be removed keeps the previous manifest (the next update removes it).
        if let (Some(previous), None) = (&self.previous, self.out.local()) {
            let (removed, failed) =
                remove_gone_files(self.out.get(), previous, &manifest, self.on_file.as_ref());
            summary.removed = removed;
            if !failed.is_empty() {
                summary.failures.extend(failed);
                return summary;
            }
        }
        let written = self.write_manifest(runner, &mut manifest);
        if let Err(e) = written {
            // The files are complete, and the tree without its manifest is not: a failure of
            // the manifest, with the files done (a tree done in part).
            summary.failures.push(in_tree(MANIFEST.as_bytes(), e));
            return summary;
        }
        summary.manifest_complete = manifest.complete;
        if let (Some(previous), Some(dest)) = (&self.previous, self.out.local()) {
            let refused;
            (summary.removed, refused) =
                remove_gone(dest, previous, &manifest, self.on_file.as_ref());
            summary.failures.extend(refused);
        }
        if !manifest.hides_names()
            && let Err(e) = dir_times(self.out.get(), &self.walked)
        {
            summary.failures.push(e);
        }
        summary
    }

    /// What a dry run would do: every file to seal counted as encrypted, every file kept as
    /// unchanged, and (an update) every file of the previous manifest gone from the tree as
    /// removed, each told to [`Options::on_file`] in the order [`Plan::finish`] tells them.
    fn dry_summary(&self) -> Summary {
        let mut summary = Summary {
            manifest_complete: true,
            ..Summary::default()
        };
        let on_file = self.on_file.as_ref();
        for (w, kept) in self.walked.iter().zip(&self.kept) {
            if let Found::File { len, .. } = w.found {
                if kept.is_some() {
                    summary.unchanged += 1;
                    tell(on_file, &w.path, Action::Unchanged);
                } else {
                    summary.files += 1;
                    summary.bytes += len;
                    tell(on_file, &w.path, Action::Encrypted);
                }
            }
        }
        if let Some(previous) = &self.previous {
            let now: HashSet<&[u8]> = self
                .walked
                .iter()
                .filter(|w| matches!(w.found, Found::File { .. }))
                .map(|w| &w.path[..])
                .collect();
            for (entry, _) in previous.files() {
                if !now.contains(&entry.path[..]) {
                    summary.removed += 1;
                    tell(on_file, &entry.path, Action::Removed);
                }
            }
        }
        summary
    }

    /// The previous manifest's entry of `path` when it is a file (`--update`).
    fn previous_file(&self, path: &[u8]) -> Option<&Entry> {
        let entry = self.previous.as_ref()?.entry(path)?;
        matches!(entry.kind, EntryKind::File(_)).then_some(entry)
    }

    fn listing(&self, done: &dyn Fn(usize) -> Option<FileEntry>) -> Listing {
        let mut listing = Listing {
            entries: Vec::with_capacity(self.walked.len()),
            files: 0,
            bytes: 0,
            unchanged: 0,
        };
        let mut planned = 0;
        for (w, kept) in self.walked.iter().zip(&self.kept) {
            let kind = match (&w.found, kept) {
                (Found::Dir, _) => EntryKind::Dir,
                (Found::Symlink(target), _) => EntryKind::Symlink(target.clone()),
                (Found::File { .. }, Some(file)) => {
                    listing.unchanged += 1;
                    EntryKind::File(file.clone())
                }
                (Found::File { .. }, None) => {
                    let finished = done(planned);
                    planned += 1;
                    match finished {
                        Some(file) => {
                            listing.files += 1;
                            listing.bytes += file.size;
                            EntryKind::File(file)
                        }
                        None => {
                            // Not sealed (failed, or not reached yet): an update keeps the
                            // file's previous version, which a file that fails never replaces,
                            // listed as it was (its old time, so the next update seals it
                            // again). Dropping it would remove the tree's only copy of it.
                            if let Some(entry) = self.previous_file(&w.path) {
                                listing.entries.push(entry.clone());
                            }
                            continue;
                        }
                    }
                }
            };
            listing.entries.push(Entry {
                path: w.path.clone(),
                mode: w.mode,
                mtime: w.mtime,
                kind,
            });
        }
        listing
    }
}

/// Step 2 on another process: seals the files of `task` (made by [`Plan::task`] and sent as
/// [`Task::to_bytes`]) on the one schedule in the caller's pool, each from the header and
/// derived keys the task carries, into the output the plan made; each file is checked to be
/// the one the walk saw (its inode, length and time), written to a temporary file and given
/// its name once complete, as in a local run. Returns each file's manifest entry, or why it
/// failed, for [`Sealed::add`]. No manifest is written here: the plan's [`Plan::finish`]
/// writes it.
pub fn seal_task(runner: &Runner, task: &Task) -> TaskResult {
    seal_task_guarded(runner, task, Arc::new(super::NoGuard))
}

/// [`seal_task`], telling `guard` of the temporary files it writes and running its commits
/// through it, as a local run tells [`Options::guard`]: so that a process that runs tasks (an
/// MPI rank) and is interrupted removes the named temporary files of the files it was writing
/// (where the filesystem has no `O_TMPFILE`, as NFS).
pub fn seal_task_guarded(runner: &Runner, task: &Task, guard: Arc<dyn super::Guard>) -> TaskResult {
    seal_task_to(runner, task, &task.dest(guard))
}

/// [`seal_task`] into `output`, the output the task names ([`Task::output`]) opened again by
/// the front end that runs it (a prefix in object storage: [`TreeOutput::task_root`]).
pub fn seal_task_to(runner: &Runner, task: &Task, output: &dyn TreeOutput) -> TaskResult {
    seal_task_with(runner, task, Plaintexts::Local(&task.input), output)
}

/// [`seal_task_guarded`] of a task of a plaintext tree plugged in ([`plan_from`]): each file
/// read through `input`, the input the task names ([`Task::input`]) opened again by the front
/// end that runs it, each file at the version the task carries ([`Task::listed`]), into the
/// local directory the task names.
pub fn seal_task_from(
    runner: &Runner,
    task: &Task,
    input: &dyn PlainInput,
    guard: Arc<dyn super::Guard>,
) -> TaskResult {
    seal_task_with(runner, task, Plaintexts::Other(input), &task.dest(guard))
}

/// [`seal_task_from`] into `output` (a prefix: [`plan_from_to`]), opened again as for
/// [`seal_task_to`].
pub fn seal_task_from_to(
    runner: &Runner,
    task: &Task,
    input: &dyn PlainInput,
    output: &dyn TreeOutput,
) -> TaskResult {
    seal_task_with(runner, task, Plaintexts::Other(input), output)
}

/// Seals the files of `task`, read from `input`, into `output`.
fn seal_task_with(
    runner: &Runner,
    task: &Task,
    input: Plaintexts<'_>,
    output: &dyn TreeOutput,
) -> TaskResult {
    let walked: Vec<Walked> = task
        .files
        .iter()
        .map(|file| Walked {
            path: file.path.clone(),
            found: Found::File {
                len: file.len,
                ino: file.ino,
            },
            mode: file.mode,
            mtime: file.mtime,
        })
        .collect();
    let keys: Vec<(&[u8], &[u8])> = task
        .files
        .iter()
        .map(|file| (&file.header[..], &file.shared[..]))
        .collect();
    let planned: Vec<Planned> = task
        .files
        .iter()
        .map(|file| Planned {
            bytes: file.len,
            chunks: file.len.div_ceil(task.chunk as u64).max(1),
            chunk_size: task.chunk,
            in_order: false,
        })
        .collect();
    let work = Seal {
        runner,
        keys: Keys::Given {
            keys: &keys,
            sign: task.sign.as_ref(),
        },
        provider: task.provider,
        input,
        dest: output,
        stored: task.files.iter().map(|f| f.stored.as_slice()).collect(),
        hidden: task.hidden,
        chunk: task.chunk,
        done: walked.iter().map(|_| Mutex::new(None)).collect(),
        failures: Mutex::new(Vec::new()),
        files: walked.iter().collect(),
        checkpoint: None,
    };
    let ran = schedule::run(&work, &planned);
    let sealed = work.into_sealed(ran);
    let mut outcomes: Vec<Option<Outcome>> = sealed
        .done
        .into_iter()
        .map(|done| done.map(Outcome::Sealed))
        .collect();
    for (at, error) in sealed.failures {
        let message = match error {
            Error::InTree { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        outcomes[at] = Some(Outcome::Failed(message));
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

/// Checks, before anything is read or written, that a tree at `input` can be written at
/// `output` with `options` (as [`encrypt`] and [`decrypt`](super::decrypt) check it first): an
/// output that is not a directory, one that already holds files without [`Options::force`] (or
/// [`Options::update`]),
/// an output inside the input or the input inside the output are refused. What a front end
/// calls before it asks for a password, so that a prompt never precedes a refusal.
pub fn check(input: &Path, output: &Path, options: &Options) -> Result<()> {
    options_valid(options)?;
    paths(Some(input), output, options.force || options.update).map(drop)
}

/// Checks, before anything is read or written and before any secret is asked for, a tree run
/// with `input` or `output` in object storage (`input_in_store`, `output_in_store`: the front
/// end tells which, through `paracrypt-store`): an encryption reads a local directory (which
/// must be one) or a prefix into a local directory or a prefix (or updates the encrypted tree
/// there: [`Options::update`]), a decryption reads a prefix or a local directory into a local
/// directory that [`check_dest`] accepts or into a prefix; a prefix is checked by its own
/// rules. The rule every
/// front end applies to a prefix; what an update cannot keep (another format, a signed tree
/// without its key, hidden names asked for a tree that keeps its names) is refused once the
/// tree's manifest is read, before anything is written, as for a local directory.
pub fn check_in_store(
    encrypting: bool,
    (input, input_in_store): (&Path, bool),
    (output, output_in_store): (&Path, bool),
    options: &Options,
) -> Result<()> {
    options_valid(options)?;
    if options.dry_run && output_in_store {
        return Err(super::dry_run_refused());
    }
    if (encrypting && input_in_store) || (!encrypting && output_in_store) {
        // The prefix is checked by its own rules (listed, or `TreeOutput::prepare`).
        return Ok(());
    }
    if encrypting {
        if !input.is_dir() {
            return Err(Error::Tree(format!(
                "{} is not a directory (a tree's input is a directory)",
                input.display()
            )));
        }
        Ok(())
    } else {
        check_dest(output, options)
    }
}

/// Refuses options that make no sense together, for every front end: [`Options::checksum`]
/// compares with the tree already at the output, which only [`Options::update`] reads.
fn options_valid(options: &Options) -> Result<()> {
    if options.update_with.is_some() && !options.update {
        return Err(Error::Request(
            "identities for the tree already at the output are read by an update: they need \
             update"
                .into(),
        ));
    }
    if options.checksum && !options.update {
        return Err(Error::Request(
            "checksum compares the files with those of the encrypted tree already at the \
             output: it needs update"
                .into(),
        ));
    }
    Ok(())
}

/// The length the walk saw of a file.
fn file_len(w: &Walked) -> u64 {
    match w.found {
        Found::File { len, .. } => len,
        _ => 0,
    }
}

/// Seconds since the epoch, now.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Checks the output directory against the input and [`Options::force`], and makes it when it
/// does not exist (its parent must). Returns whether it was made.
pub(crate) fn check_output(input: &Path, output: &Path, force: bool) -> Result<bool> {
    make_output(Some(input), output, force)
}

/// [`check`] of the output alone, for a tree read from elsewhere than a local directory (a
/// prefix in object storage: [`decrypt_from`](super::decrypt_from)), which the output cannot
/// be inside of.
pub fn check_dest(output: &Path, options: &Options) -> Result<()> {
    options_valid(options)?;
    paths(None, output, options.force || options.update).map(drop)
}

/// [`check_output`] for a tree read from elsewhere than a local directory.
pub(crate) fn check_output_remote(output: &Path, force: bool) -> Result<bool> {
    make_output(None, output, force)
}

fn make_output(input: Option<&Path>, output: &Path, force: bool) -> Result<bool> {
    if paths(input, output, force)? {
        return Ok(false);
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(output)
        .map_err(|e| Error::io(format!("cannot create {}", output.display()), e))?;
    Ok(true)
}

/// The checks of [`check`] (a local input, or none for a tree read from elsewhere), making
/// nothing: a dry run's.
pub(crate) fn check_paths(input: Option<&Path>, output: &Path, force: bool) -> Result<()> {
    paths(input, output, force).map(drop)
}

/// The checks of [`check`]; returns whether the output exists.
fn paths(input: Option<&Path>, output: &Path, force: bool) -> Result<bool> {
    let shown = output.display();
    let input_at = input
        .map(|input| {
            fs::canonicalize(input)
                .map_err(|e| Error::io(format!("cannot read {}", input.display()), e))
        })
        .transpose()?;
    let output_at = match fs::metadata(output) {
        Ok(meta) if !meta.is_dir() => {
            return Err(Error::Tree(format!(
                "the output {shown} exists and is not a directory"
            )));
        }
        Ok(_) => {
            fs::canonicalize(output).map_err(|e| Error::io(format!("cannot read {shown}"), e))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = match output.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let parent = fs::canonicalize(parent)
                .map_err(|e| Error::io(format!("cannot create {shown}"), e))?;
            parent.join(output.file_name().unwrap_or_default())
        }
        Err(e) => return Err(Error::io(format!("cannot read {shown}"), e)),
    };
    if let (Some(input), Some(input_at)) = (input, &input_at) {
        if output_at.starts_with(input_at) {
            return Err(Error::Tree(format!(
                "the output {shown} is inside the input {}",
                input.display()
            )));
        }
        if input_at.starts_with(&output_at) {
            return Err(Error::Tree(format!(
                "the input {} is inside the output {shown}",
                input.display()
            )));
        }
    }
    match fs::read_dir(output) {
        Ok(mut listing) => {
            if listing.next().is_some() && !force {
                return Err(Error::TreeOutputExists(shown.to_string()));
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!("cannot read {shown}"), e)),
    }
}

/// Makes the output's directories: the tree's own, or with hidden names the 256 directories
/// the opaque names are spread over. Returns those it made, parents first.
fn make_dirs(
    dest: &dyn TreeOutput,
    walked: &[Walked],
    manifest: &Manifest,
) -> Result<Vec<Vec<u8>>> {
    let mut made = Vec::new();
    let mut make = |rel: &[u8]| -> Result<()> {
        if dest
            .mkdir(rel)
            .map_err(|e| Error::io(format!("cannot create directory {}", dest.shown(rel)), e))?
        {
            made.push(rel.to_vec());
        }
        Ok(())
    };
    if manifest.hides_names() {
        let mut fans: Vec<Vec<u8>> = walked
            .iter()
            .filter(|w| matches!(w.found, Found::File { .. }))
            .map(|w| super::path::parent(&manifest.stored(&w.path)).to_vec())
            .collect();
        fans.sort_unstable();
        fans.dedup();
        for fan in fans {
            make(&fan)?;
        }
    } else {
        for w in walked
            .iter()
            .filter(|w| w.found == Found::Dir && !w.path.is_empty())
        {
            make(&w.path)?;
        }
    }
    Ok(made)
}

/// Gives the output's directories the input's modes (owner access kept, so that the tree can
/// be written into again) and modification times, deepest first (writing into a directory
/// moves its time).
fn dir_times(dest: &dyn TreeOutput, walked: &[Walked]) -> Result<()> {
    for w in walked.iter().rev().filter(|w| w.found == Found::Dir) {
        dest.finish_dir(&w.path, (w.mode & 0o777) | 0o700, w.mtime)
            .map_err(|e| {
                Error::io(
                    format!("cannot set the times of {}", dest.shown(&w.path)),
                    e,
                )
            })?;
    }
    Ok(())
}

/// Seals `manifest` (signed by `sign`) with `request` and writes it at the output's top.
pub(crate) fn write_manifest(
    runner: &Runner,
    request: &Request,
    manifest: &mut Manifest,
    sign: Option<&SigningKey>,
    dest: &dyn TreeOutput,
) -> Result<()> {
    let plain = manifest.encode(sign)?;
    let sealed = seal_manifest(runner, request, &plain)?;
    put_manifest(dest, &sealed)
}

/// The manifest's plaintext `plain` sealed with `request`.
fn seal_manifest(runner: &Runner, request: &Request, plain: &[u8]) -> Result<Vec<u8>> {
    let quiet = Runner::new().provider(runner.chosen_provider());
    let resolved = request.resolve(&[], Driver::Whole)?;
    if resolved.in_order() {
        let mut out = Vec::new();
        resolved.stream(&quiet, &mut &plain[..], &mut out)?;
        Ok(out)
    } else {
        quiet.vec(resolved.recipe(), plain)
    }
}

fn put_manifest(dest: &dyn TreeOutput, sealed: &[u8]) -> Result<()> {
    dest.put(MANIFEST.as_bytes(), sealed).map_err(|e| {
        Error::io(
            format!("cannot write {}", dest.shown(MANIFEST.as_bytes())),
            e,
        )
    })
}

impl Plan {
    /// Writes `manifest` at the output (a checkpoint, or the last), recorded in this host's
    /// state first as being written and then as written, so that a run stopped in between
    /// leaves a manifest the next update knows. A tree encrypted to recipients records the
    /// manifest's plaintext too: its next update needs no identity.
    fn write_manifest(&self, runner: &Runner, manifest: &mut Manifest) -> Result<()> {
        let plain = manifest.encode(self.sign.as_ref())?;
        let sealed = seal_manifest(runner, &self.manifest_request, &plain)?;
        let mut record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(record) = record.as_mut() {
            let to_recipients = matches!(
                self.manifest_request.kind(),
                Kind::Encrypt {
                    secret: Secret::Recipients(_),
                    ..
                }
            );
            record.begin(Written::of(
                manifest,
                &sealed,
                to_recipients.then_some(&plain[..]),
            ))?;
        }
        put_manifest(self.out.get(), &sealed)?;
        match record.as_mut() {
            Some(record) => record.done(),
            None => Ok(()),
        }
    }
}

/// The encryption of a tree's files, as the schedule runs it: every planned file in a local
/// run, a task's files on another process.
struct Seal<'a> {
    runner: &'a Runner,
    keys: Keys<'a>,
    provider: Provider,
    input: Plaintexts<'a>,
    dest: &'a dyn TreeOutput,
    files: Vec<&'a Walked>,
    /// Each file's name in the output.
    stored: Vec<&'a [u8]>,
    hidden: bool,
    /// The plaintext chunk.
    chunk: usize,
    done: Vec<Mutex<Option<FileEntry>>>,
    failures: Mutex<Vec<(usize, Error)>>,
    /// A local run's checkpoints (a task's process writes none: its plan's does).
    checkpoint: Option<Checkpoint<'a>>,
}

/// Where each file's header and keys come from.
enum Keys<'a> {
    /// Drawn as the file is opened, from the request (a local run).
    Draw(&'a Resolved),
    /// Made by the plan ([`Plan::task`]): each file's header and derived keys, and the signing
    /// key of a signed tree.
    Given {
        keys: &'a [(&'a [u8], &'a [u8])],
        sign: Option<&'a SigningKey>,
    },
}

impl Seal<'_> {
    /// Whether files run in order (age's armor), as one task each.
    fn in_order_files(&self) -> bool {
        matches!(self.keys, Keys::Draw(resolved) if resolved.in_order())
    }

    /// What the schedule left: each file's entry, the failures (by file).
    fn into_sealed(self, ran: schedule::Ran) -> Sealed {
        Sealed {
            done: self
                .done
                .into_iter()
                .map(|d| d.into_inner().unwrap_or_else(|e| e.into_inner()))
                .collect(),
            failures: self
                .failures
                .into_inner()
                .unwrap_or_else(|e| e.into_inner()),
            not_started: ran.not_started,
            next_checkpoint: Instant::now(),
        }
    }
}

/// The manifest of what is done so far, written over the previous one as the run goes (an
/// incomplete manifest), so that a run stopped at any point (a signal, a kill, a crash) leaves a
/// manifest of the files done up to its last checkpoint, from which `--update` goes on.
struct Checkpoint<'a> {
    plan: &'a Plan,
    /// The manifest's fields; its entries are filled at each checkpoint. Held by the one
    /// thread writing a checkpoint.
    manifest: Mutex<Manifest>,
    /// When the run started, and when the next checkpoint is due (milliseconds after): an
    /// atomic, so that the files' commits take no lock to look.
    start: Instant,
    next: AtomicU64,
}

/// What a manifest lists now.
struct Listing {
    entries: Vec<Entry>,
    /// Files sealed by this run, and their bytes.
    files: u64,
    bytes: u64,
    /// Files kept from the previous manifest.
    unchanged: u64,
}

impl Checkpoint<'_> {
    /// Writes an incomplete manifest of what is done when one is due, no other thread is
    /// writing one and some file is not done yet. The next is due after ten times as long as
    /// this one took (at least a second), so that checkpoints cost at most a tenth of the run
    /// whatever the tree's size. A checkpoint that fails is left to the final manifest, which
    /// reports its failure.
    fn write(&self, runner: &Runner, done: &[Mutex<Option<FileEntry>>]) {
        let millis = |at: Instant| at.duration_since(self.start).as_millis() as u64;
        if millis(Instant::now()) < self.next.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut manifest) = self.manifest.try_lock() else {
            return;
        };
        // Every file done: the run's own manifest comes next, so a checkpoint would only be
        // written over at once (one more PUT, for a prefix).
        if done
            .iter()
            .all(|d| d.lock().unwrap_or_else(|e| e.into_inner()).is_some())
        {
            return;
        }
        let start = Instant::now();
        let plan = self.plan;
        manifest.entries = plan
            .listing(&|file| done[file].lock().unwrap_or_else(|e| e.into_inner()).clone())
            .entries;
        manifest.complete = false;
        manifest.written = now();
        let _ = plan.write_manifest(runner, &mut manifest);
        manifest.entries = Vec::new();
        let took = start.elapsed();
        let next = Instant::now() + (took * 10).max(Duration::from_secs(1));
        self.next.store(millis(next), Ordering::Relaxed);
    }
}

/// Refuses to update a tree written otherwise than this run would write it: another format, a
/// signed tree without `--sign` (or the reverse), one signed by another key than `sign` (as a
/// rekey pins its signer: an update would otherwise sign over what another signer put there),
/// hidden names asked for a tree that keeps them.
fn check_previous(
    previous: &Manifest,
    format: TreeFormat,
    sign: Option<&SigningKey>,
    hide_names: bool,
) -> Result<()> {
    if previous.format != format {
        return Err(Error::Tree(format!(
            "cannot update: the tree's files are {} files: update it in the same format",
            match previous.format {
                TreeFormat::Container => "paracrypt",
                TreeFormat::Age => "binary age",
                TreeFormat::ArmoredAge => "armored age",
                TreeFormat::Plain => "plaintext",
            }
        )));
    }
    match (&previous.signer, sign) {
        (Some(_), Some(key)) => {
            super::open::check_signer(previous, Some(&key.verifying_key()))
                .map_err(|e| in_tree(MANIFEST.as_bytes(), e))?;
        }
        (None, Some(_)) => {
            return Err(Error::Tree(
                "cannot update: the tree is not signed: update it without a signing key, or \
                 encrypt it anew"
                    .into(),
            ));
        }
        (Some(_), None) => {
            return Err(Error::Tree(
                "cannot update: the tree is signed: give its signing key to update it".into(),
            ));
        }
        (None, None) => {}
    }
    if hide_names && !previous.hides_names() {
        return Err(Error::Tree(
            "cannot update: the tree keeps its names: update it without hidden names, or \
             encrypt it anew"
                .into(),
        ));
    }
    Ok(())
}

/// The previous manifest's entry of the walked file `w`, when `w` is unchanged since (the same
/// size and modification time, or with `checksum` the same BLAKE3 tree-hash root) and its
/// encrypted file is still the one that entry lists (its header's hash): a replayed old
/// manifest, or a file sealed after the last checkpoint of an interrupted run, is sealed again.
fn unchanged(
    w: &Walked,
    previous: &Manifest,
    input: Plaintexts<'_>,
    output: Encrypted<'_>,
    checksum: bool,
    chunk: usize,
    provider: Provider,
) -> Option<FileEntry> {
    let (_, file) = candidate(w, previous, checksum)?;
    let checking = Checking {
        input,
        output,
        format: previous.format,
        checksum,
        chunk,
        provider,
    };
    checking
        .same(&w.path, &previous.stored(&w.path), file)
        .then(|| file.clone())
}

/// The walked file `w`'s length and previous manifest's entry, when it may be unchanged from
/// what the walk and the manifest say: the same size, and without `checksum` the same
/// modification time. What is left to check reads files ([`Checking::same`]): the size
/// returned is the file's now, the same as the entry's.
fn candidate<'m>(
    w: &Walked,
    previous: &'m Manifest,
    checksum: bool,
) -> Option<(u64, &'m FileEntry)> {
    let Found::File { len, .. } = w.found else {
        return None;
    };
    let entry = previous.entry(&w.path)?;
    let EntryKind::File(file) = &entry.kind else {
        return None;
    };
    if file.size != len || (!checksum && entry.mtime != w.mtime) {
        return None;
    }
    Some((len, file))
}

/// Removes what the previous manifest listed that the new one does not: the encrypted files of
/// files gone from the tree (or no longer files), then its directories gone, deepest first
/// (those that are not empty stay). Returns the files removed, and a failure for each removal
/// refused because a directory on its way is a symbolic link.
fn remove_gone(
    dest: &Dest,
    previous: &Manifest,
    now: &Manifest,
    on_file: Option<&OnFile>,
) -> (u64, Vec<Error>) {
    // Locally the new manifest is written: a file left behind is only reported by `verify`.
    // A link in place of one of the tree's directories is not left behind but put there, by
    // someone other than the run: that is reported.
    let (removed, failed) = remove_gone_files(dest, previous, now, on_file);
    let mut refused: Vec<Error> = failed
        .into_iter()
        .filter(|e| matches!(e, Error::Io { source, .. } if ThroughLink::is(source)))
        .collect();
    if !previous.hides_names() {
        for entry in previous.entries.iter().rev() {
            if entry.kind == EntryKind::Dir
                && !entry.path.is_empty()
                && !matches!(now.entry(&entry.path), Some(e) if e.kind == EntryKind::Dir)
                && let Err(e) = dest.remove_dir(&entry.path)
                && ThroughLink::is(&e)
            {
                let what = format!("cannot remove {}", dest.shown(&entry.path));
                refused.push(Error::io(what, e));
            }
        }
    }
    (removed, refused)
}

/// The encrypted files the previous manifest listed that the new one does not (files gone from
/// the tree, or no longer files), removed from `dest`. Returns how many there were, and a
/// failure for each that could not be removed, naming it. Each removed is told to `on_file`
/// by its path in the tree.
fn remove_gone_files(
    dest: &dyn TreeOutput,
    previous: &Manifest,
    now: &Manifest,
    on_file: Option<&OnFile>,
) -> (u64, Vec<Error>) {
    let gone: Vec<(&[u8], Vec<u8>)> = previous
        .files()
        .map(|(entry, _)| (&entry.path[..], previous.stored(&entry.path)))
        .filter(|(path, stored)| {
            !(matches!(now.entry(path), Some(e) if matches!(e.kind, EntryKind::File(_)))
                && now.stored(path) == *stored)
        })
        .collect();
    // Each removal a request where the output is a store: in parallel, as the files are.
    let results: Vec<std::io::Result<bool>> =
        gone.par_iter().map(|(_, rel)| dest.remove(rel)).collect();
    let mut removed = 0;
    let mut failed = Vec::new();
    for ((path, rel), result) in gone.iter().zip(results) {
        match result {
            Ok(true) => {
                removed += 1;
                tell(on_file, path, Action::Removed);
            }
            Ok(false) => {}
            Err(e) => failed.push(Error::io(format!("cannot remove {}", dest.shown(rel)), e)),
        }
    }
    (removed, failed)
}

/// A file being encrypted.
struct Writing<'a> {
    source: Reading<'a>,
    temp: Box<dyn OutputFile + 'a>,
    /// The job; `None` for a file run in order (armor).
    job: Option<Job>,
    leaves: Mutex<Vec<[u8; HASH_LEN]>>,
    end: Mutex<Option<u64>>,
    /// The header's length and hash (armor: the whole file's).
    header: Mutex<(u32, [u8; HASH_LEN])>,
}

impl<'a> FileWork for Seal<'a> {
    type Open = Writing<'a>;

    fn open(&self, file: usize) -> Result<Writing<'a>> {
        let walked = self.files[file];
        let cannot_open = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::InputChanged("it was removed since the tree was listed".into())
            } else {
                Error::io("cannot open it", e)
            }
        };
        let Found::File { len, ino } = walked.found else {
            unreachable!("only regular files are scheduled")
        };
        let changed = |now: u64| {
            Error::InputChanged(format!(
                "it changed since the tree was listed ({len} bytes then, {now} now)"
            ))
        };
        let source = match self.input {
            Plaintexts::Local(root) => {
                let source = open_no_follow(&join(root, &walked.path)).map_err(cannot_open)?;
                let meta = source
                    .metadata()
                    .map_err(|e| Error::io("cannot read its metadata", e))?;
                if !meta.is_file() || meta.ino() != ino {
                    return Err(Error::InputChanged(
                        "it was replaced since the tree was listed".into(),
                    ));
                }
                if meta.len() != len || super::walk::mtime_of(&meta) != walked.mtime {
                    return Err(changed(meta.len()));
                }
                let id = InputId::of(&source)?;
                Reading::Local { file: source, id }
            }
            Plaintexts::Other(plain) => {
                let source = plain.open(&walked.path).map_err(cannot_open)?;
                if source.len() != len {
                    return Err(changed(source.len()));
                }
                Reading::Other(source)
            }
        };
        let chunks = len.div_ceil(self.chunk as u64).max(1);
        let create = |len| {
            self.dest
                .create(self.stored[file], len)
                .map_err(|e| Error::io("cannot create its encrypted file", e))
        };
        let (job, header, temp) = if self.in_order_files() {
            (None, (0, [0; HASH_LEN]), create(0)?)
        } else {
            let job = match &self.keys {
                Keys::Draw(resolved) => {
                    resolved
                        .recipe()
                        .first_job(&mut &[][..], Some(len), self.provider)?
                }
                Keys::Given { keys, sign } => {
                    let (header, key) = keys[file];
                    share::job(true, header, key, *sign, len, self.provider)?
                }
            };
            let temp = create(job.planned().output_len())?;
            let head = job.output_header();
            temp.write_at(head, 0)
                .map_err(|e| Error::io("writing the header", e))?;
            let header = (head.len() as u32, *blake3::hash(head).as_bytes());
            (Some(job), header, temp)
        };
        Ok(Writing {
            source,
            temp,
            job,
            leaves: Mutex::new(vec![[0; HASH_LEN]; chunks as usize]),
            end: Mutex::new(None),
            header: Mutex::new(header),
        })
    }

    fn run(&self, file: usize, open: &Writing<'a>, chunks: Range<u64>) -> Result<()> {
        let result = match &open.job {
            Some(job) => run_here(
                job,
                chunks.clone(),
                open.source.source(),
                Some(open.temp.sink()),
                Plain::Input,
            )
            .map_err(Error::from)
            .map(|ran| {
                let plan = job.planned();
                let bytes =
                    plan.chunk(chunks.end - 1).input.end - plan.chunk(chunks.start).input.start;
                self.runner.advance(bytes);
                let mut leaves = open.leaves.lock().unwrap_or_else(|e| e.into_inner());
                leaves[chunks.start as usize..chunks.end as usize].copy_from_slice(&ran.leaves);
                if let Some(end) = ran.end {
                    *open.end.lock().unwrap_or_else(|e| e.into_inner()) = Some(end);
                }
            }),
            None => self.in_order(file, open),
        };
        // A read that failed because the file shrank says so.
        result.map_err(|e| open.source.check().err().unwrap_or(e))
    }

    fn finish(&self, file: usize, open: Writing<'a>) -> Result<()> {
        let walked = self.files[file];
        open.source.check()?;
        if let Some(end) = *open.end.lock().unwrap_or_else(|e| e.into_inner()) {
            open.temp
                .set_len(end)
                .map_err(|e| Error::io("setting its length", e))?;
        }
        if !self.hidden {
            open.temp
                .set_times((walked.mode & 0o777) | 0o600, walked.mtime)
                .map_err(|e| Error::io("setting its mode and time", e))?;
        }
        open.temp
            .commit(self.stored[file])
            .map_err(|e| Error::io("cannot give its encrypted file its name", e))?;
        let leaves = open.leaves.into_inner().unwrap_or_else(|e| e.into_inner());
        let (header_len, header_hash) = open.header.into_inner().unwrap_or_else(|e| e.into_inner());
        *self.done[file].lock().unwrap_or_else(|e| e.into_inner()) = Some(FileEntry {
            size: file_len(walked),
            chunk_size: self.chunk as u32,
            root: root(&leaves),
            header_len,
            header_hash,
        });
        if let Some(checkpoint) = &self.checkpoint {
            checkpoint.write(self.runner, &self.done);
        }
        Ok(())
    }

    fn failed(&self, file: usize, error: Error) {
        let error = in_tree(&self.files[file].path, error);
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((file, error));
    }

    fn stops_all(&self, error: &Error) -> bool {
        super::stops_all(error)
    }
}

impl Seal<'_> {
    /// A file run in order (age's armor): the stream into the temporary file, hashed as it is
    /// written (the whole file is what the manifest names), then the plaintext's leaves.
    fn in_order(&self, file: usize, open: &Writing<'_>) -> Result<()> {
        let reader: Box<dyn std::io::Read + Send + '_> = match &open.source {
            Reading::Local { file, .. } => Box::new(PositionalReader { file, at: 0 }),
            Reading::Other(file) => Box::new(InputReader {
                file: &**file,
                at: 0,
            }),
        };
        let mut reader = BufReader::new(reader);
        let mut writer = Hashing {
            inner: std::io::BufWriter::new(OutputWriter {
                file: &*open.temp,
                at: 0,
            }),
            hasher: blake3::Hasher::new(),
            len: 0,
        };
        let Keys::Draw(resolved) = self.keys else {
            unreachable!("a task's files are never run in order")
        };
        resolved.stream(self.runner, &mut reader, &mut writer)?;
        writer
            .inner
            .flush()
            .map_err(|e| Error::io("writing its encrypted file", e))?;
        let len = u32::try_from(writer.len).map_err(|_| {
            Error::Tree("an armored file of a tree is at most 4 GiB encrypted".into())
        })?;
        *open.header.lock().unwrap_or_else(|e| e.into_inner()) =
            (len, *writer.hasher.finalize().as_bytes());
        let leaves = leaves_of(
            open.source.source(),
            file_len(self.files[file]),
            self.chunk,
            self.provider,
        )?;
        *open.leaves.lock().unwrap_or_else(|e| e.into_inner()) = leaves;
        Ok(())
    }
}

/// The plaintext leaves of the `len` bytes of `file` in chunks of `chunk`, on this thread.
pub(crate) fn leaves_of(
    file: &dyn Source,
    len: u64,
    chunk: usize,
    provider: Provider,
) -> Result<Vec<[u8; HASH_LEN]>> {
    let recipe = TreeHash::new(ChunkSize::new(chunk)?);
    let job = crate::Recipe::first_job(&recipe, &mut &[][..], Some(len), provider)?;
    let count = job.planned().len();
    let per_task = (crate::engine::TASK_BYTES / chunk).max(1) as u64;
    let mut leaves = Vec::with_capacity(count as usize);
    let mut start = 0;
    while start < count {
        let end = (start + per_task).min(count);
        leaves.extend(run_here(&job, start..end, file, None, Plain::Input)?.leaves);
        start = end;
    }
    Ok(leaves)
}

/// A writer that hashes what goes through it.
struct Hashing<W: Write> {
    inner: W,
    hasher: blake3::Hasher,
    len: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(data)?;
        self.hasher.update(&data[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
