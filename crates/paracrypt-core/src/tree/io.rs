//! Where an encrypted tree is written: a local directory, or anything a front end plugs in
//! ([`TreeOutput`]: a prefix in object storage, which `paracrypt-store` provides, since the
//! core depends on no store).
//!
//! Each file is opened once ([`TreeOutput::create`], one call and one allocation per file),
//! its chunks written through the [`Sink`] it gives (the schedule's runs, from every thread
//! at once, as for a local file), then committed under its name ([`OutputFile::commit`]) or
//! dropped, which leaves nothing: a local file's temporary file is removed (or was never
//! named), an upload is aborted.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::out::open_no_follow;
use super::walk::join;
use crate::engine::{InputId, Sink, Source};
use crate::error::Result;

/// A tree's output, as [`encrypt_to`](super::encrypt_to) writes it. The local directory's
/// implementation is the one [`encrypt`](super::encrypt) uses.
pub trait TreeOutput: Send + Sync {
    /// `rel` under the output, as messages show it (a path, or an object's URL).
    fn shown(&self, rel: &[u8]) -> String;

    /// Where the output is, as the host's record of the tree written there names it
    /// ([`Options::state`](super::Options::state)): by default its top as
    /// [`TreeOutput::shown`] shows it (a prefix's URL).
    fn location(&self) -> String {
        self.shown(b"")
    }

    /// Checks the output before anything is written (an output that already holds files is
    /// refused unless `force`; one that is or holds the local `input`, or lies inside it, is
    /// refused) and makes it if need be. Returns whether this made it (so that a run that
    /// writes no file removes it again with [`TreeOutput::remove_made`]).
    fn prepare(&self, input: &Path, force: bool) -> Result<bool>;

    /// Makes the directory `rel` (an output without directories does nothing). Returns
    /// whether it was made.
    fn mkdir(&self, rel: &[u8]) -> io::Result<bool>;

    /// Starts the file `rel`, of `len` bytes (its full encrypted length when known, or 0: a
    /// file written in order), written into until it is committed.
    fn create(&self, rel: &[u8], len: u64) -> io::Result<Box<dyn OutputFile + '_>>;

    /// Writes the whole file `rel` (the manifest), replacing one of that name.
    fn put(&self, rel: &[u8], data: &[u8]) -> io::Result<()>;

    /// Gives the directory `rel` its mode and modification time, once every file in it is
    /// written (an output without directories does nothing).
    fn finish_dir(&self, rel: &[u8], mode: u32, mtime: (i64, u32)) -> io::Result<()>;

    /// Removes the (empty) directories `made` (parents first), and the output when
    /// `made_root`: what a run that wrote no file leaves.
    fn remove_made(&self, made: &[Vec<u8>], made_root: bool);

    /// Makes the symbolic link `rel` to `target` with the modification time `mtime` (a
    /// decryption, once every file is written), replacing a file there where the output
    /// allows it. An output that holds no links (object storage) fails, and the decryption
    /// names the link as a failure: the manifest still lists it.
    fn link(&self, rel: &[u8], target: &[u8], mtime: (i64, u32)) -> io::Result<()> {
        let _ = (rel, target, mtime);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this output holds no symbolic links",
        ))
    }

    /// The encrypted tree already at the output, as an update ([`Options::update`](super::Options::update))
    /// reads it: its manifest, and the header of each file it may keep. `None` where an update
    /// cannot read the output (it is then refused) and for a local directory, which the core
    /// reads in place.
    fn existing(&self) -> Option<&dyn TreeInput> {
        None
    }

    /// Removes the file `rel`, an update's file gone from the tree. Returns whether there was
    /// one to remove.
    fn remove(&self, rel: &[u8]) -> io::Result<bool>;

    /// Whether the run writes an incomplete manifest now and then as it goes (a checkpoint,
    /// from which an update goes on): an output that an update cannot read takes none, and
    /// then a tree without a manifest is an unfinished one.
    fn checkpoints(&self) -> bool {
        false
    }

    /// Where a process that runs a task of the plan ([`Plan::task`](super::Plan::task), run
    /// with [`seal_task_to`](super::seal_task_to)) opens this output again, and whether its
    /// files replace those of the same names: a prefix's URL, which a worker opens with its
    /// own credentials. `None` (the default): the files of a tree into this output are sealed
    /// on one process only.
    fn task_root(&self) -> Option<(std::path::PathBuf, bool)> {
        None
    }
}

/// A file of a [`TreeOutput`] being written.
pub trait OutputFile: Send + Sync {
    /// Where the schedule writes the file's chunks (positional, from any thread).
    fn sink(&self) -> &dyn Sink;

    /// Writes `data` at `offset` (a header, or a file written in order).
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()>;

    /// Cuts the file at `len` (its real end, once the last chunk is written).
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Gives the file its mode and modification time (an output that keeps neither ignores
    /// them: they are in the manifest).
    fn set_times(&self, mode: u32, mtime: (i64, u32)) -> io::Result<()>;

    /// Gives the finished file its name `rel`, replacing one there only where the output
    /// allows it; dropped before this, the file leaves nothing.
    fn commit(self: Box<Self>, rel: &[u8]) -> io::Result<()>;
}

/// `Write` at increasing offsets of an [`OutputFile`] (a file written in order).
pub(crate) struct OutputWriter<'a> {
    pub file: &'a dyn OutputFile,
    pub at: u64,
}

impl io::Write for OutputWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.file.write_at(data, self.at)?;
        self.at += data.len() as u64;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An encrypted tree to read, as [`decrypt_from`](super::decrypt_from) and
/// [`verify_from`](super::verify_from) read it: a local directory ([`LocalInput`]), or
/// anything a front end plugs in (a prefix in object storage).
pub trait TreeInput: Send + Sync {
    /// `rel` under the input, as messages show it (a path, or an object's URL).
    fn shown(&self, rel: &[u8]) -> String;

    /// The local directory, when the input is one (what a tree's tasks on other processes,
    /// and a plugin's keys opened ahead, need).
    fn local(&self) -> Option<&Path> {
        None
    }

    /// Opens the file `rel` (once per file: its chunks are then read through
    /// [`InputFile::source`]). A file that is not there fails with
    /// [`io::ErrorKind::NotFound`].
    fn open(&self, rel: &[u8]) -> io::Result<Box<dyn InputFile + '_>>;

    /// The length of the file `rel` as the input lists it, without opening it; 0 when there
    /// is none (what the schedule plans, never more than the file holds).
    fn len(&self, rel: &[u8]) -> u64;

    /// Everything the input holds, as `(path, what it is)`, in any order: to name what a
    /// manifest does not list.
    fn list(&self) -> Result<Vec<(Vec<u8>, Stored)>>;

    /// Where a process that runs a task of a decryption ([`OpenPlan::task`](super::OpenPlan::task))
    /// opens this input again: the local directory (on a filesystem every process sees), or a
    /// prefix's URL, which the front end running the task opens with that process's own
    /// credentials ([`open_task_from`](super::open_task_from)). `None`: the files are opened on
    /// this process only.
    fn task_root(&self) -> Option<PathBuf> {
        self.local().map(Path::to_path_buf)
    }

    /// The version of the file `rel` as the input listed it (an object's ETag), `None` where
    /// there is none (a local file). A task carries it with [`TreeInput::len`], so that its
    /// process reads that version and no other without listing the input again.
    fn version(&self, rel: &[u8]) -> Option<String> {
        let _ = rel;
        None
    }
}

/// A plaintext tree to encrypt that a front end plugs in instead of a local directory (a prefix
/// in object storage, which `paracrypt-store` provides), as [`plan_from`](super::plan_from)
/// reads it: listed once ([`PlainInput::walk`]), each file then opened once and read with
/// positional reads on the one schedule. It holds directories and regular files only.
pub trait PlainInput: Send + Sync {
    /// The tree's root as the run names it (a prefix's URL).
    fn root(&self) -> &Path;

    /// `rel` under the input, as messages show it.
    fn shown(&self, rel: &[u8]) -> String;

    /// Every entry of the tree, in any order: the root (the empty path, a directory), each
    /// directory (every parent of every file is one), and each regular file with its length,
    /// mode and modification time.
    fn walk(&self) -> Result<Vec<PlainEntry>>;

    /// Opens the file `rel` as the walk listed it: that version and no other (one replaced
    /// since fails when it is read). A file that is gone fails with
    /// [`io::ErrorKind::NotFound`].
    fn open(&self, rel: &[u8]) -> io::Result<Box<dyn InputFile + '_>>;

    /// The version of the file `rel` as the walk listed it (an object's ETag), `None` where
    /// there is none. A task carries it with the file's length, mode and time, so that its
    /// process reads that version and no other without listing the input again.
    fn version(&self, rel: &[u8]) -> Option<String> {
        let _ = rel;
        None
    }

    /// Where a process that runs a task of the plan ([`Plan::task`](super::Plan::task)) opens
    /// this input again: a prefix's URL, which the front end running the task opens with that
    /// process's own credentials, each file at the version the task carries. `None` (the
    /// default): the files are read on this process only.
    fn task_root(&self) -> Option<PathBuf> {
        None
    }
}

/// Where a tree's encryption reads its plaintext files: a local directory, or a plaintext tree
/// a front end plugged in.
#[derive(Clone, Copy)]
pub(crate) enum Plaintexts<'a> {
    Local(&'a Path),
    Other(&'a dyn PlainInput),
}

/// A plaintext file being read: a local file (checked, as it is read, to be still the one
/// opened), or a file of a plaintext tree plugged in (read at the version listed).
pub(crate) enum Reading<'a> {
    Local { file: File, id: InputId },
    Other(Box<dyn InputFile + 'a>),
}

impl Reading<'_> {
    pub fn source(&self) -> &dyn Source {
        match self {
            Reading::Local { file, .. } => file,
            Reading::Other(file) => file.source(),
        }
    }

    /// Whether a local file is still the one opened, unchanged.
    pub fn check(&self) -> Result<()> {
        match self {
            Reading::Local { file, id } => id.check(file),
            Reading::Other(_) => Ok(()),
        }
    }
}

/// One entry of a [`PlainInput`]'s walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainEntry {
    /// Its path under the root, `/`-separated; empty for the root.
    pub path: Vec<u8>,
    /// A regular file's length; `None` for a directory.
    pub len: Option<u64>,
    /// Its permission bits.
    pub mode: u32,
    /// Its modification time: seconds since the epoch and nanoseconds.
    pub mtime: (i64, u32),
}

/// What is stored at a name of an encrypted tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stored {
    /// A regular file (an object).
    File,
    /// A directory.
    Dir,
    /// Anything else (a link, a FIFO...).
    Other,
}

/// A file of a [`TreeInput`], open.
pub trait InputFile: Send + Sync {
    /// Where the schedule reads the file's chunks (positional, from any thread).
    fn source(&self) -> &dyn Source;

    /// Its length when it was opened.
    fn len(&self) -> u64;

    /// Whether it was empty when it was opened.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it is a regular file (what a tree stores; a local name may hold anything).
    fn is_file(&self) -> bool {
        true
    }

    /// Reads into `buf` from `offset`: as many bytes as there are, up to `buf.len()` (0 at
    /// the end), as `pread` does.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl dyn InputFile + '_ {
    /// Fills `buf` from `offset`, failing at the end.
    pub(crate) fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Its first bytes, up to [`HEAD_LEN`](crate::request::HEAD_LEN), as
    /// [`head_of`](crate::request::head_of) reads a file's.
    pub(crate) fn head(&self) -> Result<Vec<u8>> {
        let mut head = vec![0u8; crate::request::HEAD_LEN];
        let mut filled = 0;
        while filled < head.len() {
            match self.read_at(&mut head[filled..], filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(crate::error::Error::io("reading the header", e)),
            }
        }
        head.truncate(filled);
        Ok(head)
    }
}

/// `Read` from an [`InputFile`] at increasing offsets from `at`.
pub(crate) struct InputReader<'a> {
    pub file: &'a dyn InputFile,
    pub at: u64,
}

impl io::Read for InputReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// A local directory as a [`TreeInput`]: links are never followed (a link in a file's place
/// is refused when it is opened).
#[derive(Clone, Debug)]
pub struct LocalInput {
    /// The directory.
    pub root: PathBuf,
}

impl TreeInput for LocalInput {
    fn shown(&self, rel: &[u8]) -> String {
        join(&self.root, rel).display().to_string()
    }

    fn local(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn open(&self, rel: &[u8]) -> io::Result<Box<dyn InputFile + '_>> {
        let file = open_no_follow(&join(&self.root, rel))?;
        let meta = file.metadata()?;
        Ok(Box::new(LocalFile { file, meta }))
    }

    fn len(&self, rel: &[u8]) -> u64 {
        std::fs::symlink_metadata(join(&self.root, rel)).map_or(0, |m| m.len())
    }

    fn list(&self) -> Result<Vec<(Vec<u8>, Stored)>> {
        super::verify::list(&self.root, &[])
    }
}

/// A local file, open, and what it was when opened.
struct LocalFile {
    file: File,
    meta: std::fs::Metadata,
}

impl InputFile for LocalFile {
    fn source(&self) -> &dyn Source {
        &self.file
    }

    fn len(&self) -> u64 {
        self.meta.len()
    }

    fn is_file(&self) -> bool {
        self.meta.is_file()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }
}
