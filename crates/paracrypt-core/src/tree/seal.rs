//! Encrypting a tree: the walk, the output's directories, every file on the one schedule, and
//! the manifest last.

use std::fs::{self, File};
use std::io::{BufReader, Write};
use std::ops::Range;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use age::secrecy::ExposeSecret;
use zeroize::Zeroizing;

use super::chunks::{Plain, run_here};
use super::manifest::{Entry, EntryKind, FileEntry, Keying, Manifest, TreeFormat};
use super::out::{Dest, Temp, finish_file, open_no_follow, set_times};
use super::schedule::{self, FileWork, Planned};
use super::walk::{Found, Walked, join, walk};
use super::{MANIFEST, Options, Summary, in_tree};
use crate::container::{Key, Secret};
use crate::engine::io::PositionalReader;
use crate::engine::{InputId, Job};
use crate::error::{Error, Result};
use crate::plan::ChunkSize;
use crate::provider::Provider;
use crate::recipe::Runner;
use crate::recipient::Recipients;
use crate::request::{Driver, Format, Kind, Request, Resolved, Sealing};
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
    // What the files are sealed with (see the module: a password seals the manifest only).
    let (keying, file_secret) = match secret {
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

    let walked = walk(input)?;
    let created_root = check_output(input, output, options.force)?;
    let mut manifest = Manifest::new(tree_format, keying, options.hide_names);
    // Only a directory would clash: a file of that name is stored with its suffix, and a link
    // only in the manifest.
    if !manifest.hides_names()
        && walked
            .iter()
            .any(|w| w.path == MANIFEST.as_bytes() && w.found == Found::Dir)
    {
        remove_made(output, &[], created_root);
        return Err(Error::Tree(format!(
            "{}: a directory at the top of a tree may not be named {MANIFEST} (the manifest's \
             name)",
            join(input, MANIFEST.as_bytes()).display()
        )));
    }
    let dest = Dest {
        root: output.to_path_buf(),
        replace: options.force,
        named: options.named_temps,
        sync: options.sync,
        guard: Arc::clone(&options.guard),
    };
    let made = match make_dirs(&dest, &walked, &manifest) {
        Ok(made) => made,
        Err(e) => {
            remove_made(output, &[], created_root);
            return Err(e);
        }
    };

    let files: Vec<&Walked> = walked
        .iter()
        .filter(|w| matches!(w.found, Found::File { .. }))
        .collect();
    let planned: Vec<Planned> = files
        .iter()
        .map(|w| {
            let bytes = file_len(w);
            Planned {
                bytes,
                chunks: bytes.div_ceil(chunk as u64).max(1),
                chunk_size: chunk,
                in_order: resolved.in_order(),
            }
        })
        .collect();
    let work = Seal {
        runner,
        resolved: &resolved,
        provider,
        input,
        dest: &dest,
        stored: files.iter().map(|w| manifest.stored(&w.path)).collect(),
        hidden: manifest.hides_names(),
        chunk,
        done: files.iter().map(|_| Mutex::new(None)).collect(),
        failures: Mutex::new(Vec::new()),
        files,
    };
    let ran = schedule::run(&work, &planned);

    let mut failures = work
        .failures
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    failures.sort_by_key(|(at, _)| *at);
    let done: Vec<Option<FileEntry>> = work
        .done
        .into_iter()
        .map(|d| d.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    let mut summary = Summary {
        failures: failures.into_iter().map(|(_, e)| e).collect(),
        not_started: ran.not_started,
        ..Summary::default()
    };
    let mut done = done.into_iter();
    for w in &walked {
        let kind = match &w.found {
            Found::Dir => EntryKind::Dir,
            Found::Symlink(target) => EntryKind::Symlink(target.clone()),
            Found::File { .. } => match done.next().flatten() {
                Some(file) => {
                    summary.files += 1;
                    summary.bytes += file.size;
                    EntryKind::File(file)
                }
                None => continue,
            },
        };
        manifest.entries.push(Entry {
            path: w.path.clone(),
            mode: w.mode,
            mtime: w.mtime,
            kind,
        });
    }
    if summary.files == 0 && (!summary.failures.is_empty() || summary.not_started > 0) {
        // Nothing was done: nothing is left.
        remove_made(output, &made, created_root);
        return Ok(summary);
    }
    manifest.complete = summary.failures.is_empty() && summary.not_started == 0;
    manifest.written = now();
    let written = write_manifest(
        runner,
        &manifest_request,
        &mut manifest,
        sign.as_ref(),
        &dest,
    );
    if let Err(e) = written {
        // The files are complete, and the tree without its manifest is not: a failure of the
        // manifest, with the files done (a tree done in part).
        summary.failures.push(in_tree(MANIFEST.as_bytes(), e));
        return Ok(summary);
    }
    summary.manifest_complete = manifest.complete;
    if !manifest.hides_names()
        && let Err(e) = dir_times(&dest, &walked)
    {
        summary.failures.push(e);
    }
    Ok(summary)
}

/// Checks, before anything is read or written, that a tree at `input` can be written at
/// `output` with `options` (as [`encrypt`] and [`decrypt`](super::decrypt) check it first): an
/// output that is not a directory, one that already holds files without [`Options::force`],
/// an output inside the input or the input inside the output are refused. What a front end
/// calls before it asks for a password, so that a prompt never precedes a refusal.
pub fn check(input: &Path, output: &Path, options: &Options) -> Result<()> {
    paths(input, output, options.force).map(drop)
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
    if paths(input, output, force)? {
        return Ok(false);
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(output)
        .map_err(|e| Error::io(format!("cannot create {}", output.display()), e))?;
    Ok(true)
}

/// The checks of [`check`]; returns whether the output exists.
fn paths(input: &Path, output: &Path, force: bool) -> Result<bool> {
    let shown = output.display();
    let input_at = fs::canonicalize(input)
        .map_err(|e| Error::io(format!("cannot read {}", input.display()), e))?;
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
    if output_at.starts_with(&input_at) {
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
fn make_dirs(dest: &Dest, walked: &[Walked], manifest: &Manifest) -> Result<Vec<Vec<u8>>> {
    let mut made = Vec::new();
    let mut make = |rel: &[u8]| -> Result<()> {
        if dest.mkdir(rel).map_err(|e| {
            Error::io(
                format!("cannot create directory {}", dest.path(rel).display()),
                e,
            )
        })? {
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

/// Removes the (empty) directories a run made, deepest first, and the output when the run
/// made it.
pub(crate) fn remove_made(output: &Path, made: &[Vec<u8>], made_root: bool) {
    for rel in made.iter().rev() {
        let _ = fs::remove_dir(join(output, rel));
    }
    if made_root {
        let _ = fs::remove_dir(output);
    }
}

/// Gives the output's directories the input's modes (owner access kept, so that the tree can
/// be written into again) and modification times, deepest first (writing into a directory
/// moves its time).
fn dir_times(dest: &Dest, walked: &[Walked]) -> Result<()> {
    for w in walked.iter().rev().filter(|w| w.found == Found::Dir) {
        let at = dest.path(&w.path);
        let set = fs::set_permissions(&at, fs::Permissions::from_mode((w.mode & 0o777) | 0o700))
            .and_then(|()| set_times(&at, w.mtime));
        set.map_err(|e| Error::io(format!("cannot set the times of {}", at.display()), e))?;
    }
    Ok(())
}

/// Seals `manifest` (signed by `sign`) with `request` and writes it at the output's top.
pub(crate) fn write_manifest(
    runner: &Runner,
    request: &Request,
    manifest: &mut Manifest,
    sign: Option<&SigningKey>,
    dest: &Dest,
) -> Result<()> {
    let plain = manifest.encode(sign)?;
    let quiet = Runner::new().provider(runner.chosen_provider());
    let resolved = request.resolve(&[], Driver::Whole)?;
    let sealed = if resolved.in_order() {
        let mut out = Vec::new();
        resolved.stream(&quiet, &mut &plain[..], &mut out)?;
        out
    } else {
        quiet.vec(resolved.recipe(), &plain)?
    };
    let cannot = |e| {
        Error::io(
            format!("cannot write {}", dest.path(MANIFEST.as_bytes()).display()),
            e,
        )
    };
    let temp = dest.temp(MANIFEST.as_bytes()).map_err(cannot)?;
    temp.file.write_all_at(&sealed, 0).map_err(cannot)?;
    dest.commit_replacing(temp, MANIFEST.as_bytes())
        .map_err(cannot)
}

/// The encryption of a tree's files, as the schedule runs it.
struct Seal<'a> {
    runner: &'a Runner,
    resolved: &'a Resolved,
    provider: Provider,
    input: &'a Path,
    dest: &'a Dest,
    files: Vec<&'a Walked>,
    /// Each file's name in the output.
    stored: Vec<Vec<u8>>,
    hidden: bool,
    /// The plaintext chunk.
    chunk: usize,
    done: Vec<Mutex<Option<FileEntry>>>,
    failures: Mutex<Vec<(usize, Error)>>,
}

/// A file being encrypted.
struct Writing {
    source: File,
    id: InputId,
    temp: Temp,
    /// The job; `None` for a file run in order (armor).
    job: Option<Job>,
    leaves: Mutex<Vec<[u8; HASH_LEN]>>,
    end: Mutex<Option<u64>>,
    /// The header's length and hash (armor: the whole file's).
    header: Mutex<(u32, [u8; HASH_LEN])>,
}

impl Seal<'_> {
    fn path(&self, file: usize) -> PathBuf {
        join(self.input, &self.files[file].path)
    }
}

impl FileWork for Seal<'_> {
    type Open = Writing;

    fn open(&self, file: usize) -> Result<Writing> {
        let walked = self.files[file];
        let source = open_no_follow(&self.path(file)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::InputChanged("it was removed since the tree was listed".into())
            } else {
                Error::io("cannot open it", e)
            }
        })?;
        let meta = source
            .metadata()
            .map_err(|e| Error::io("cannot read its metadata", e))?;
        let Found::File { len, ino } = walked.found else {
            unreachable!("only regular files are scheduled")
        };
        if !meta.is_file() || meta.ino() != ino {
            return Err(Error::InputChanged(
                "it was replaced since the tree was listed".into(),
            ));
        }
        if meta.len() != len || super::walk::mtime_of(&meta) != walked.mtime {
            return Err(Error::InputChanged(format!(
                "it changed since the tree was listed ({} bytes then, {} now)",
                len,
                meta.len()
            )));
        }
        let id = InputId::of(&source)?;
        let temp = self
            .dest
            .temp(&self.stored[file])
            .map_err(|e| Error::io("cannot create its encrypted file", e))?;
        let chunks = len.div_ceil(self.chunk as u64).max(1);
        let (job, header) = if self.resolved.in_order() {
            (None, (0, [0; HASH_LEN]))
        } else {
            let job = self
                .resolved
                .recipe()
                .first_job(&mut &[][..], Some(len), self.provider)?;
            let head = job.output_header();
            temp.file
                .write_all_at(head, 0)
                .map_err(|e| Error::io("writing the header", e))?;
            let header = (head.len() as u32, *blake3::hash(head).as_bytes());
            (Some(job), header)
        };
        Ok(Writing {
            source,
            id,
            temp,
            job,
            leaves: Mutex::new(vec![[0; HASH_LEN]; chunks as usize]),
            end: Mutex::new(None),
            header: Mutex::new(header),
        })
    }

    fn run(&self, file: usize, open: &Writing, chunks: Range<u64>) -> Result<()> {
        let result = match &open.job {
            Some(job) => run_here(
                job,
                chunks.clone(),
                &open.source,
                Some(&open.temp.file),
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
        result.map_err(|e| open.id.check(&open.source).err().unwrap_or(e))
    }

    fn finish(&self, file: usize, open: Writing) -> Result<()> {
        let walked = self.files[file];
        open.id.check(&open.source)?;
        if let Some(end) = *open.end.lock().unwrap_or_else(|e| e.into_inner()) {
            open.temp
                .file
                .set_len(end)
                .map_err(|e| Error::io("setting its length", e))?;
        }
        if !self.hidden {
            finish_file(&open.temp.file, (walked.mode & 0o777) | 0o600, walked.mtime)
                .map_err(|e| Error::io("setting its mode and time", e))?;
        }
        self.dest
            .commit(open.temp, &self.stored[file])
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
    fn in_order(&self, file: usize, open: &Writing) -> Result<()> {
        let mut reader = BufReader::new(PositionalReader {
            file: &open.source,
            at: 0,
        });
        let mut writer = Hashing {
            inner: std::io::BufWriter::new(&open.temp.file),
            hasher: blake3::Hasher::new(),
            len: 0,
        };
        self.resolved
            .stream(self.runner, &mut reader, &mut writer)?;
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
            &open.source,
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
    file: &File,
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
