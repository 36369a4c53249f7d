//! A task of a tree's encryption, as it travels to another process and back: what
//! [`Plan::task`](super::Plan::task) makes and [`seal_task`](super::seal_task) runs, and
//! what it returns to [`Sealed::add`](super::Sealed::add).
//!
//! **What a task carries.** The output's and input's roots (both on a filesystem every process
//! sees, or either a prefix's URL that each process opens with its own credentials:
//! [`TreeOutput::task_root`](super::TreeOutput::task_root),
//! [`PlainInput::task_root`](super::PlainInput::task_root)), how files are written there (replacing, named temporary files, `fsync`), the plaintext
//! chunk and provider, and for each file: its index in the plan, its path and stored name, what
//! the walk saw of it (length, inode or an object's version, mode, modification time: a file
//! that changed since is refused, as in a local run), and its header with the keys derived for that one file (a
//! container's header and payload keys, an age file's file key). Never the key file, password or
//! identities, nor the tree's own key, identity or name key: a task's bytes open only its own
//! files. A signed tree's task carries the signing key (every file is a signed container), as a
//! signed one-file distributed job does. Treat a task's bytes as a secret: send them over an
//! encrypted connection.
//!
//! **What comes back.** For each file, its manifest entry (length, chunk size, BLAKE3 root,
//! header length and hash), or the one line saying why it failed, or that it was not started
//! (a full disk stopped the task). The plan names each failure by its path.
//!
//! Both are read with every length checked against what is left, and refuse anything else
//! ([`Error::Request`]): they come from the plan's own process, but over a wire.

use std::ffi::OsString;
use std::ops::Range;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use zeroize::Zeroizing;

use super::manifest::FileEntry;
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::pubkey::rsa::RsaScheme;
use crate::sign::{Scheme, SigningKey};

/// The most plaintext bytes of small files one task batches (a larger file is a task alone, its chunks spread over the threads of the process running it).
pub const TASK_BYTES: u64 = 64 << 20;
/// The most files one task carries.
pub const TASK_FILES: usize = 1024;

/// Files of lengths `lens` (in the walk's order) cut into tasks: see
/// [`Plan::tasks`](super::Plan::tasks).
pub(crate) fn cut(lens: &[u64], at_least: usize) -> Vec<Range<usize>> {
    let mut tasks = Vec::new();
    let (mut start, mut bytes) = (0, 0u64);
    for (at, &len) in lens.iter().enumerate() {
        if at > start && (bytes + len > TASK_BYTES || at - start == TASK_FILES) {
            tasks.push(start..at);
            (start, bytes) = (at, 0);
        }
        bytes += len;
    }
    if start < lens.len() {
        tasks.push(start..lens.len());
    }
    // Halve the task of the most files (the first of them) until there are enough.
    while tasks.len() < at_least {
        let Some((at, most)) = tasks
            .iter()
            .enumerate()
            .max_by_key(|(at, task)| (task.len(), std::cmp::Reverse(*at)))
            .filter(|(_, task)| task.len() > 1)
            .map(|(at, task)| (at, task.clone()))
        else {
            break;
        };
        let middle = most.start + most.len() / 2;
        tasks[at] = most.start..middle;
        tasks.insert(at + 1, middle..most.end);
    }
    tasks
}

const TASK_MAGIC: &[u8] = b"PARACRYPT-TREE-TASK\x02";
const OPEN_MAGIC: &[u8] = b"PARACRYPT-TREE-OPEN\x02";
const RESULT_MAGIC: &[u8] = b"PARACRYPT-TREE-DONE\x01";

/// One task of a tree's encryption: what it carries and returns is this module's first
/// paragraphs (docs/guide/trees.md, *What a task carries*).
pub struct Task {
    pub(crate) input: PathBuf,
    pub(crate) output: PathBuf,
    pub(crate) replace: bool,
    pub(crate) named: bool,
    pub(crate) sync: bool,
    pub(crate) hidden: bool,
    pub(crate) chunk: usize,
    pub(crate) provider: Provider,
    pub(crate) sign: Option<SigningKey>,
    pub(crate) files: Vec<TaskFile>,
}

/// One file of a task.
pub(crate) struct TaskFile {
    /// Its index among the plan's files.
    pub index: usize,
    pub path: Vec<u8>,
    pub len: u64,
    pub ino: u64,
    pub mode: u32,
    pub mtime: (i64, u32),
    pub stored: Vec<u8>,
    pub header: Vec<u8>,
    pub shared: Zeroizing<Vec<u8>>,
    /// The version the plan listed of a file of a plaintext tree plugged in (an object's
    /// ETag); `None` for a local file, which its inode names.
    pub version: Option<String>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("files", &self.files.len())
            .field("bytes", &self.bytes())
            .finish_non_exhaustive()
    }
}

/// The local directory the plan named for a task's files (`replace`, `named`, `sync` as the
/// plan set them), telling `guard` of their temporary files.
fn local_dest(
    output: &std::path::Path,
    (replace, named, sync): (bool, bool, bool),
    guard: std::sync::Arc<dyn super::Guard>,
) -> super::out::Dest {
    super::out::Dest {
        root: output.to_path_buf(),
        replace,
        named,
        sync,
        guard,
    }
}

impl Task {
    /// The local directory its files are written into, telling `guard` of their temporary
    /// files.
    pub(crate) fn dest(&self, guard: std::sync::Arc<dyn super::Guard>) -> super::out::Dest {
        local_dest(&self.output, (self.replace, self.named, self.sync), guard)
    }

    /// How many files it seals.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// The input its files are read from: a local directory, or what the plan's
    /// [`PlainInput::task_root`](super::PlainInput::task_root) named (a prefix's URL), which
    /// the front end running the task opens again for [`seal_task_from`](super::seal_task_from).
    pub fn input(&self) -> &std::path::Path {
        &self.input
    }

    /// Each file of a task whose input is plugged in: its entry as the plan's walk listed it
    /// (path, length, mode, time) and the version listed (an object's ETag), what the front
    /// end running it opens the input with, without listing it again.
    pub fn listed(&self) -> impl Iterator<Item = (super::PlainEntry, Option<&str>)> {
        self.files.iter().map(|file| {
            let entry = super::PlainEntry {
                path: file.path.clone(),
                len: Some(file.len),
                mode: file.mode,
                mtime: file.mtime,
            };
            (entry, file.version.as_deref())
        })
    }

    /// The output its files are written into: a local directory, or what the plan's
    /// [`TreeOutput::task_root`](super::TreeOutput::task_root) named (a prefix's URL), which
    /// the front end running the task opens again for [`seal_task_to`](super::seal_task_to).
    pub fn output(&self) -> &std::path::Path {
        &self.output
    }

    /// Whether its files replace those of the same names at the output.
    pub fn replaces(&self) -> bool {
        self.replace
    }

    /// Their plaintext bytes.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len).sum()
    }

    /// The task's bytes, for another process (a secret: see [`Task`]).
    pub fn to_bytes(&self) -> Result<Zeroizing<Vec<u8>>> {
        let mut out = Zeroizing::new(TASK_MAGIC.to_vec());
        put_bytes(&mut out, self.input.as_os_str().as_bytes());
        put_bytes(&mut out, self.output.as_os_str().as_bytes());
        let flags = u8::from(self.replace)
            | u8::from(self.named) << 1
            | u8::from(self.sync) << 2
            | u8::from(self.hidden) << 3;
        out.push(flags);
        out.extend_from_slice(&(self.chunk as u64).to_le_bytes());
        put_bytes(&mut out, self.provider.as_str().as_bytes());
        match &self.sign {
            None => out.push(0),
            Some(key) => {
                out.push(key.scheme().id());
                put_bytes(&mut out, key.to_pkcs8_pem()?.as_bytes());
            }
        }
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        for file in &self.files {
            out.extend_from_slice(&(file.index as u64).to_le_bytes());
            put_bytes(&mut out, &file.path);
            out.extend_from_slice(&file.len.to_le_bytes());
            out.extend_from_slice(&file.ino.to_le_bytes());
            out.extend_from_slice(&file.mode.to_le_bytes());
            out.extend_from_slice(&file.mtime.0.to_le_bytes());
            out.extend_from_slice(&file.mtime.1.to_le_bytes());
            put_bytes(&mut out, &file.stored);
            put_bytes(&mut out, &file.header);
            put_bytes(&mut out, &file.shared);
            put_version(&mut out, file.version.as_deref());
        }
        Ok(out)
    }

    /// A task from [`Task::to_bytes`]'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Task> {
        let mut r = Reader::new(bytes, TASK_MAGIC, "a tree's task")?;
        let input = PathBuf::from(OsString::from_vec(r.bytes()?.to_vec()));
        let output = PathBuf::from(OsString::from_vec(r.bytes()?.to_vec()));
        let flags = r.u8()?;
        let chunk = usize::try_from(r.u64()?).map_err(|_| r.bad())?;
        let provider: Provider = std::str::from_utf8(r.bytes()?)
            .ok()
            .and_then(|name| name.parse().ok())
            .ok_or_else(|| r.bad())?;
        let sign = match r.u8()? {
            0 => None,
            id => {
                let scheme = Scheme::from_id(id).ok_or_else(|| r.bad())?;
                let rsa = if scheme == Scheme::RsaPss {
                    RsaScheme::Pss
                } else {
                    RsaScheme::Pkcs1v15
                };
                let pem = Zeroizing::new(r.bytes()?.to_vec());
                Some(SigningKey::from_key_file(&pem, rsa)?.with_provider(provider)?)
            }
        };
        let count = r.u64()?;
        let mut files = Vec::new();
        for _ in 0..count {
            files.push(TaskFile {
                index: usize::try_from(r.u64()?).map_err(|_| r.bad())?,
                path: r.bytes()?.to_vec(),
                len: r.u64()?,
                ino: r.u64()?,
                mode: r.u32()?,
                mtime: (r.u64()? as i64, r.u32()?),
                stored: r.bytes()?.to_vec(),
                header: r.bytes()?.to_vec(),
                shared: Zeroizing::new(r.bytes()?.to_vec()),
                version: read_version(&mut r)?,
            });
        }
        r.end()?;
        let bad_path = files
            .iter()
            .any(|file| !paths_fit(&file.path, &file.stored));
        if chunk == 0 || bad_path {
            return Err(r.bad());
        }
        Ok(Task {
            input,
            output,
            replace: flags & 1 != 0,
            named: flags & 2 != 0,
            sync: flags & 4 != 0,
            hidden: flags & 8 != 0,
            chunk,
            provider,
            sign,
            files,
        })
    }
}

/// One task of a tree's decryption, as it travels to another process and back: what
/// [`OpenPlan::task`](super::OpenPlan::task) makes and [`open_task`](super::open_task) runs.
///
/// It carries the input's and output's roots (the output on a filesystem every process sees;
/// the input too, or a prefix's URL that each process opens with its own credentials:
/// [`TreeInput::task_root`](super::TreeInput::task_root)), how files are written there, the
/// provider, and for each file: its index among the manifest's files, its path and stored name,
/// its mode, time and manifest entry, the length and version its encrypted file was listed with
/// (an object's ETag: the task reads that version or fails), and the header the plan read
/// with the keys it derived for that one file (a container's payload keys, an age file's file
/// key) — or why the plan could not open it. Never the key file, password, identities, or the
/// tree's own key: a task's bytes open only its own files. Treat them as a secret all the same,
/// and send them over an encrypted connection.
pub struct OpenTask {
    pub(crate) input: PathBuf,
    pub(crate) output: PathBuf,
    pub(crate) replace: bool,
    pub(crate) named: bool,
    pub(crate) sync: bool,
    pub(crate) provider: Provider,
    pub(crate) files: Vec<OpenTaskFile>,
}

/// One file of an [`OpenTask`].
pub(crate) struct OpenTaskFile {
    /// Its index among the manifest's files.
    pub index: usize,
    pub path: Vec<u8>,
    pub stored: Vec<u8>,
    pub mode: u32,
    pub mtime: (i64, u32),
    pub entry: FileEntry,
    /// The header the plan read and the keys it derived, or why it could not.
    pub keys: std::result::Result<(Vec<u8>, Zeroizing<Vec<u8>>), String>,
    /// Its encrypted file's length and version as the plan's input listed them
    /// ([`TreeInput::len`](super::TreeInput::len), [`TreeInput::version`](super::TreeInput::version)).
    pub listed: (u64, Option<String>),
}

/// The longest version of a listed file a task carries (an ETag is tens of bytes).
const VERSION_MAX: usize = 1024;

impl std::fmt::Debug for OpenTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenTask")
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

impl OpenTask {
    /// The local directory its files are written into, telling `guard` of their temporary
    /// files.
    pub(crate) fn dest(&self, guard: std::sync::Arc<dyn super::Guard>) -> super::out::Dest {
        local_dest(&self.output, (self.replace, self.named, self.sync), guard)
    }

    /// How many files it opens.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// The encrypted tree its files are read from: a local directory, or what the plan's
    /// [`TreeInput::task_root`](super::TreeInput::task_root) named (a prefix's URL), which
    /// the front end running the task opens again for [`open_task_from`](super::open_task_from).
    pub fn input(&self) -> &std::path::Path {
        &self.input
    }

    /// The output its files are written into: a local directory, or what the plan's
    /// [`TreeOutput::task_root`](super::TreeOutput::task_root) named (a prefix's URL), which
    /// the front end running the task opens again for [`open_task_to`](super::open_task_to).
    pub fn output(&self) -> &std::path::Path {
        &self.output
    }

    /// Whether its files replace those of the same names at the output.
    pub fn replaces(&self) -> bool {
        self.replace
    }

    /// Each file's stored name under [`OpenTask::input`], with its length and version as the
    /// plan's input listed them: what a front end's input opened for the task serves, without
    /// listing again.
    pub fn listed(&self) -> impl Iterator<Item = (&[u8], u64, Option<&str>)> {
        self.files
            .iter()
            .map(|file| (&file.stored[..], file.listed.0, file.listed.1.as_deref()))
    }

    /// The task's bytes, for another process (a secret: see the [type](OpenTask)).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(OPEN_MAGIC.to_vec());
        put_bytes(&mut out, self.input.as_os_str().as_bytes());
        put_bytes(&mut out, self.output.as_os_str().as_bytes());
        let flags = u8::from(self.replace) | u8::from(self.named) << 1 | u8::from(self.sync) << 2;
        out.push(flags);
        put_bytes(&mut out, self.provider.as_str().as_bytes());
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        for file in &self.files {
            out.extend_from_slice(&(file.index as u64).to_le_bytes());
            put_bytes(&mut out, &file.path);
            put_bytes(&mut out, &file.stored);
            out.extend_from_slice(&file.mode.to_le_bytes());
            out.extend_from_slice(&file.mtime.0.to_le_bytes());
            out.extend_from_slice(&file.mtime.1.to_le_bytes());
            out.extend_from_slice(&file.entry.size.to_le_bytes());
            out.extend_from_slice(&file.entry.chunk_size.to_le_bytes());
            out.extend_from_slice(&file.entry.root);
            out.extend_from_slice(&file.entry.header_len.to_le_bytes());
            out.extend_from_slice(&file.entry.header_hash);
            match &file.keys {
                Ok((header, shared)) => {
                    out.push(0);
                    put_bytes(&mut out, header);
                    put_bytes(&mut out, shared);
                }
                Err(why) => {
                    out.push(1);
                    put_bytes(&mut out, why.as_bytes());
                }
            }
            out.extend_from_slice(&file.listed.0.to_le_bytes());
            put_version(&mut out, file.listed.1.as_deref());
        }
        out
    }

    /// A task from [`OpenTask::to_bytes`]'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<OpenTask> {
        let mut r = Reader::new(bytes, OPEN_MAGIC, "a tree's decryption task")?;
        let input = PathBuf::from(OsString::from_vec(r.bytes()?.to_vec()));
        let output = PathBuf::from(OsString::from_vec(r.bytes()?.to_vec()));
        let flags = r.u8()?;
        let provider: Provider = std::str::from_utf8(r.bytes()?)
            .ok()
            .and_then(|name| name.parse().ok())
            .ok_or_else(|| r.bad())?;
        let count = r.u64()?;
        let mut files = Vec::new();
        for _ in 0..count {
            let index = usize::try_from(r.u64()?).map_err(|_| r.bad())?;
            let path = r.bytes()?.to_vec();
            let stored = r.bytes()?.to_vec();
            let mode = r.u32()?;
            let mtime = (r.u64()? as i64, r.u32()?);
            let entry = FileEntry {
                size: r.u64()?,
                chunk_size: r.u32()?,
                root: r.array()?,
                header_len: r.u32()?,
                header_hash: r.array()?,
            };
            let keys = match r.u8()? {
                0 => Ok((r.bytes()?.to_vec(), Zeroizing::new(r.bytes()?.to_vec()))),
                1 => Err(String::from_utf8_lossy(r.bytes()?).into_owned()),
                _ => return Err(r.bad()),
            };
            let len = r.u64()?;
            let version = read_version(&mut r)?;
            if entry.chunk_size == 0 || !paths_fit(&path, &stored) {
                return Err(r.bad());
            }
            files.push(OpenTaskFile {
                index,
                path,
                stored,
                mode,
                mtime,
                entry,
                keys,
                listed: (len, version),
            });
        }
        r.end()?;
        Ok(OpenTask {
            input,
            output,
            replace: flags & 1 != 0,
            named: flags & 2 != 0,
            sync: flags & 4 != 0,
            provider,
            files,
        })
    }
}

/// Whether `bytes` are an [`OpenTask`]'s (by their magic).
pub(crate) fn is_open_task(bytes: &[u8]) -> bool {
    bytes.starts_with(OPEN_MAGIC)
}

/// Whether a task's `path` and `stored` name are paths under its roots: each is checked as a
/// manifest's are, so that no task, whatever its bytes, reads or writes outside them.
fn paths_fit(path: &[u8], stored: &[u8]) -> bool {
    !path.is_empty()
        && !stored.is_empty()
        && super::path::fault(path).is_none()
        && super::path::fault(stored).is_none()
}

/// What became of one file of a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Sealed and committed: its manifest entry.
    Sealed(FileEntry),
    /// Decrypted, checked and committed.
    Opened,
    /// Failed: why, in one line.
    Failed(String),
    /// Not started: a failure that stops every file (a full disk) came first.
    NotStarted,
}

/// What one task did: what became of each of its files (sealed or opened, failed and why, or
/// not started), by its index in the plan.
#[derive(Debug)]
pub struct TaskResult {
    pub(crate) files: Vec<(usize, Outcome)>,
}

impl TaskResult {
    /// How many of its files failed or were not started.
    pub fn failed(&self) -> usize {
        self.files
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Failed(_) | Outcome::NotStarted))
            .count()
    }

    /// The result's bytes, for the plan's process.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = RESULT_MAGIC.to_vec();
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        for (index, outcome) in &self.files {
            out.extend_from_slice(&(*index as u64).to_le_bytes());
            match outcome {
                Outcome::Sealed(entry) => {
                    out.push(0);
                    out.extend_from_slice(&entry.size.to_le_bytes());
                    out.extend_from_slice(&entry.chunk_size.to_le_bytes());
                    out.extend_from_slice(&entry.root);
                    out.extend_from_slice(&entry.header_len.to_le_bytes());
                    out.extend_from_slice(&entry.header_hash);
                }
                Outcome::Failed(why) => {
                    out.push(1);
                    put_bytes(&mut out, why.as_bytes());
                }
                Outcome::NotStarted => out.push(2),
                Outcome::Opened => out.push(3),
            }
        }
        out
    }

    /// A result from [`TaskResult::to_bytes`]'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<TaskResult> {
        let mut r = Reader::new(bytes, RESULT_MAGIC, "a tree task's result")?;
        let count = r.u64()?;
        let mut files = Vec::new();
        for _ in 0..count {
            let index = usize::try_from(r.u64()?).map_err(|_| r.bad())?;
            let outcome = match r.u8()? {
                0 => Outcome::Sealed(FileEntry {
                    size: r.u64()?,
                    chunk_size: r.u32()?,
                    root: r.array()?,
                    header_len: r.u32()?,
                    header_hash: r.array()?,
                }),
                1 => Outcome::Failed(String::from_utf8_lossy(r.bytes()?).into_owned()),
                2 => Outcome::NotStarted,
                3 => Outcome::Opened,
                _ => return Err(r.bad()),
            };
            files.push((index, outcome));
        }
        r.end()?;
        Ok(TaskResult { files })
    }
}

/// Writes a file's listed version (an object's ETag), or that it has none.
fn put_version(out: &mut Vec<u8>, version: Option<&str>) {
    match version {
        Some(version) => {
            out.push(1);
            put_bytes(out, version.as_bytes());
        }
        None => out.push(0),
    }
}

/// Reads what [`put_version`] wrote: at most [`VERSION_MAX`] bytes of UTF-8.
fn read_version(r: &mut Reader<'_>) -> Result<Option<String>> {
    match r.u8()? {
        0 => Ok(None),
        1 => {
            let version = r.bytes()?;
            if version.len() > VERSION_MAX {
                return Err(r.bad());
            }
            let version = std::str::from_utf8(version).map_err(|_| r.bad())?;
            Ok(Some(version.to_owned()))
        }
        _ => Err(r.bad()),
    }
}

pub(super) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads the fields of a task or result, each length checked against what is left.
pub(super) struct Reader<'a> {
    pub(super) rest: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], magic: &[u8], what: &'static str) -> Result<Self> {
        let reader = Reader { rest: bytes, what };
        match bytes.strip_prefix(magic) {
            Some(rest) => Ok(Reader { rest, what }),
            None => Err(reader.bad()),
        }
    }

    pub(super) fn bad(&self) -> Error {
        Error::Request(format!("not {} (or one of another version)", self.what))
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.rest.len() {
            return Err(self.bad());
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    pub(super) fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(super) fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = usize::try_from(self.u64()?).map_err(|_| self.bad())?;
        self.take(n)
    }

    pub(super) fn end(&self) -> Result<()> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.bad())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_are_batched_large_ones_alone_and_tasks_halved_for_the_workers() {
        let mib = 1 << 20;
        // 2000 tiny files: 1024 to a task.
        assert_eq!(cut(&[1; 2000], 1), [0..1024, 1024..2000]);
        // 64 MiB together at most; a file of more than 64 MiB alone.
        let lens = [10 * mib, 50 * mib, 10 * mib, 100 * mib, 1, 64 * mib, 0];
        assert_eq!(cut(&lens, 1), [0..2, 2..3, 3..4, 4..5, 5..7]);
        // At least 4 tasks: the task of the most files halved, then the next.
        assert_eq!(cut(&[1; 10], 4), [0..2, 2..5, 5..7, 7..10]);
        // No more tasks than files; none for no file.
        assert_eq!(cut(&[1; 3], 8), [0..1, 1..2, 2..3]);
        assert!(cut(&[], 4).is_empty());
    }

    /// A task that names a path outside its roots (`..`, absolute, empty) is refused when
    /// read, whoever made its bytes.
    #[test]
    fn a_task_naming_a_path_outside_its_roots_is_refused() {
        let task = |path: &[u8], stored: &[u8]| Task {
            input: "in".into(),
            output: "out".into(),
            replace: false,
            named: false,
            sync: false,
            hidden: false,
            chunk: 1 << 16,
            provider: Provider::RustCrypto,
            sign: None,
            files: vec![TaskFile {
                index: 0,
                path: path.to_vec(),
                len: 1,
                ino: 1,
                mode: 0o644,
                mtime: (0, 0),
                stored: stored.to_vec(),
                header: vec![1],
                shared: Zeroizing::new(vec![2]),
                version: Some("\"etag-1\"".into()),
            }],
        };
        let read = |t: Task| Task::from_bytes(&t.to_bytes().unwrap());
        // A file's version comes back with it (what a worker reads of a prefix).
        let back = read(task(b"a/b", b"a/b.pcr")).unwrap();
        let listed: Vec<_> = back.listed().collect();
        assert_eq!(listed[0].0.path, b"a/b");
        assert_eq!(listed[0].0.len, Some(1));
        assert_eq!(listed[0].1, Some("\"etag-1\""));
        for (path, stored) in [
            (&b"../b"[..], &b"b.pcr"[..]),
            (b"a/b", b"../../etc/b.pcr"),
            (b"/etc/passwd", b"b.pcr"),
            (b"a", b"/tmp/a.pcr"),
            (b"", b"a.pcr"),
            (b"a", b""),
            (b"a/./b", b"a.pcr"),
        ] {
            let err = read(task(path, stored)).unwrap_err();
            assert!(err.to_string().contains("not a tree's task"), "{err}");
        }
    }
}
