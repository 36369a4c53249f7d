//! Where input comes from: stdin, or a path opened exactly once.
//!
//! Only a regular file whose size can be trusted is read with positional I/O (every thread
//! reading its own chunks), whether it is named or given as stdin (`< FILE`). Everything else is
//! read as a stream, front to back: pipes, FIFOs, character devices, and the regular files of
//! /proc, /sys and their kin, which report a size of 0 or 4096 whatever they hold.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::remote::{self, RemoteInput};

/// Where input comes from.
#[derive(Debug)]
pub enum Input {
    /// Standard input.
    Stdin,
    /// A path, opened once.
    File {
        /// The open file.
        file: File,
        /// The path as given.
        path: PathBuf,
        /// The length, when the file is a regular file whose size can be trusted.
        len: Option<u64>,
    },
    /// An object (`s3://bucket/key`), read with ranged GETs.
    Remote(Box<RemoteInput>),
}

impl Input {
    /// Opens `path`, `-` meaning stdin. A FIFO is opened here and only here (opening it waits
    /// for a writer, as `cat` does).
    pub fn open(path: &Path) -> Result<Self> {
        if path == Path::new("-") {
            if let Some(input) = Self::stdin_file() {
                return Ok(input);
            }
            super::grow_pipe(std::io::stdin());
            return Ok(Input::Stdin);
        }
        if remote::is_url(path) {
            return Ok(Input::Remote(Box::new(RemoteInput::open(path)?)));
        }
        let cannot = || format!("cannot read {}", path.display());
        let file = paracrypt_core::request::open_input(path)?;
        let meta = file.metadata().with_context(cannot)?;
        let len = (meta.is_file() && size_is_trustworthy(&file)).then_some(meta.len());
        super::grow_pipe(&file);
        Ok(Input::File {
            file,
            path: path.to_path_buf(),
            len,
        })
    }

    /// Stdin, when it is a regular file of trusted size read from its start (`paracrypt
    /// encrypt < FILE`): a file like any other, read positionally on every worker. Its offset
    /// is moved to the end once read ([`Input::consumed`]), as a stream reader would leave it.
    /// Stdin at another offset (a script that read part of it first) stays a stream, read from
    /// where it is.
    fn stdin_file() -> Option<Self> {
        let file = File::from(std::io::stdin().as_fd().try_clone_to_owned().ok()?);
        let meta = file.metadata().ok()?;
        let at_start = rustix::fs::seek(&file, rustix::fs::SeekFrom::Current(0)).ok()? == 0;
        (meta.is_file() && at_start && size_is_trustworthy(&file)).then(|| Input::File {
            file,
            path: PathBuf::from("-"),
            len: Some(meta.len()),
        })
    }

    /// Marks the input read to its end: stdin given as a regular file is left at its end, where
    /// reading it as a stream would have left it (for `{ paracrypt …; cat; } < FILE`).
    pub fn consumed(&self) {
        if let Input::File {
            file,
            path,
            len: Some(len),
        } = self
            && path == Path::new("-")
        {
            let _ = rustix::fs::seek(file, rustix::fs::SeekFrom::Start(*len));
        }
    }

    /// The file, when the input supports positional reads (a regular file of known size).
    pub fn as_file(&self) -> Option<&File> {
        match self {
            Input::File {
                file, len: Some(_), ..
            } => Some(file),
            _ => None,
        }
    }

    /// The input's length when it is a regular file of known size.
    pub fn len(&self) -> Option<u64> {
        match self {
            Input::File { len, .. } => *len,
            Input::Stdin => None,
            Input::Remote(remote) => Some(remote.len()),
        }
    }

    /// The object, when the input is one.
    pub fn remote(&mut self) -> Option<&mut RemoteInput> {
        match self {
            Input::Remote(remote) => Some(remote),
            _ => None,
        }
    }

    /// The path, or `-`.
    pub fn path(&self) -> &Path {
        match self {
            Input::Stdin => Path::new("-"),
            Input::File { path, .. } => path,
            Input::Remote(remote) => remote.path(),
        }
    }

    /// A sequential reader over the input.
    pub fn reader(&mut self) -> Box<dyn Read + Send + '_> {
        match self {
            Input::Stdin => Box::new(std::io::stdin()),
            Input::File { file, .. } => Box::new(file),
            Input::Remote(remote) => Box::new(remote.reader()),
        }
    }
}

/// Filesystems whose regular files make up their content when read, so that their reported
/// size means nothing (values of `f_type`, from linux/magic.h).
const SYNTHETIC_FILESYSTEMS: [u32; 14] = [
    0x9fa0,      // proc
    0x6265_6572, // sysfs
    0x6462_6720, // debugfs
    0x7472_6163, // tracefs
    0x7363_6673, // securityfs
    0x0027_e0eb, // cgroup
    0x6367_7270, // cgroup2
    0x6265_6570, // configfs
    0xde5e_81e4, // efivarfs
    0x6165_676c, // pstore
    0xcafe_4a11, // bpf
    0xf97c_ff8c, // selinuxfs
    0x4341_5d53, // smackfs
    0x6573_5543, // fusectl
];

/// Whether `file`'s size says how many bytes reading it gives: false on the synthetic
/// filesystems above (`/proc/cpuinfo` has size 0 and hundreds of bytes).
fn size_is_trustworthy(file: &File) -> bool {
    match rustix::fs::fstatfs(file.as_fd()) {
        // `f_type` is a signed word whose low 32 bits are the magic number.
        Ok(stat) => !SYNTHETIC_FILESYSTEMS.contains(&(stat.f_type as u32)),
        Err(_) => false,
    }
}
