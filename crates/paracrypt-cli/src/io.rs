//! Inputs and outputs as the CLI sees them: `-` is stdin/stdout; a file output is written to a
//! temporary file beside the destination and renamed over it only on success, so a failure
//! never leaves a partial OUTPUT.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tempfile::NamedTempFile;

use crate::exit::usage;

/// Where input comes from.
#[derive(Debug)]
pub enum Input {
    /// Standard input.
    Stdin,
    /// A regular file (or anything `open` can read).
    File(File, PathBuf),
}

impl Input {
    /// Opens `path`, `-` meaning stdin.
    pub fn open(path: &Path) -> Result<Self> {
        if path == Path::new("-") {
            return Ok(Input::Stdin);
        }
        let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            anyhow::bail!("cannot read {}: it is a directory", path.display());
        }
        Ok(Input::File(file, path.to_path_buf()))
    }

    /// The file, when the input is one that supports positional reads.
    pub fn as_file(&self) -> Option<&File> {
        match self {
            Input::File(file, _) if file.metadata().map(|m| m.is_file()).unwrap_or(false) => {
                Some(file)
            }
            _ => None,
        }
    }

    /// The input's length when it is a regular file.
    pub fn len(&self) -> Option<u64> {
        self.as_file()
            .and_then(|f| f.metadata().ok())
            .map(|m| m.len())
    }

    /// The path, or `-`.
    pub fn path(&self) -> &Path {
        match self {
            Input::Stdin => Path::new("-"),
            Input::File(_, path) => path,
        }
    }

    /// A sequential reader over the input.
    pub fn reader(&mut self) -> Box<dyn Read + Send + '_> {
        match self {
            Input::Stdin => Box::new(std::io::stdin()),
            Input::File(file, _) => Box::new(file),
        }
    }
}

/// Options that decide whether an output may be created.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutputPolicy {
    /// Overwrite an existing file.
    pub force: bool,
    /// The output is binary (ciphertext): refuse to write it to a terminal.
    pub binary: bool,
    /// `fsync` a file output before renaming it into place.
    pub sync: bool,
}

/// Where output goes, checked but not yet created.
#[derive(Debug)]
pub enum OutputTarget {
    /// Standard output.
    Stdout,
    /// A file, created through a temporary file beside it.
    File(PathBuf, OutputPolicy),
}

impl OutputTarget {
    /// Checks `path` (`-` is stdout) against the input and the policy: refuses output equal to
    /// the input, an existing file without `force`, and binary output to a terminal.
    pub fn new(path: &Path, input: &Path, policy: OutputPolicy) -> Result<Self> {
        if path == Path::new("-") {
            if policy.binary && std::io::stdout().is_terminal() {
                return usage(
                    "refusing to write binary output to a terminal (use -o FILE or redirect stdout)",
                );
            }
            return Ok(OutputTarget::Stdout);
        }
        if input != Path::new("-") && same_file::is_same_file(input, path).unwrap_or(false) {
            return usage(format!(
                "output {} is the input file; choose another output",
                path.display()
            ));
        }
        if path.exists() && !policy.force {
            return usage(format!(
                "output {} already exists (use --force to overwrite)",
                path.display()
            ));
        }
        if path.is_dir() {
            return usage(format!("output {} is a directory", path.display()));
        }
        Ok(OutputTarget::File(path.to_path_buf(), policy))
    }

    /// Creates the output: the temporary file for a file target.
    pub fn create(self) -> Result<Output> {
        match self {
            OutputTarget::Stdout => Ok(Output::Stdout(std::io::stdout())),
            OutputTarget::File(path, policy) => {
                let dir = match path.parent() {
                    Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let temp = tempfile::Builder::new()
                    .prefix(".paracrypt-")
                    .suffix(".tmp")
                    .tempfile_in(&dir)
                    .with_context(|| format!("cannot create a file in {}", dir.display()))?;
                Ok(Output::File { temp, path, policy })
            }
        }
    }
}

/// An output being written. Dropping it without [`Output::commit`] removes the temporary file.
#[derive(Debug)]
pub enum Output {
    /// Standard output.
    Stdout(std::io::Stdout),
    /// The temporary file and its final path.
    File {
        /// The temporary file beside the destination.
        temp: NamedTempFile,
        /// The destination.
        path: PathBuf,
        /// Whether to replace an existing destination and to `fsync` first.
        policy: OutputPolicy,
    },
}

impl Output {
    /// The file, for positional writes.
    pub fn as_file(&self) -> Option<&File> {
        match self {
            Output::File { temp, .. } => Some(temp.as_file()),
            Output::Stdout(_) => None,
        }
    }

    /// A sequential writer.
    pub fn writer(&mut self) -> Box<dyn Write + Send + '_> {
        match self {
            Output::Stdout(out) => Box::new(out),
            Output::File { temp, .. } => Box::new(temp.as_file()),
        }
    }

    /// Renames the temporary file onto the destination (after an `fsync` when asked for).
    pub fn commit(self) -> Result<()> {
        match self {
            Output::Stdout(mut out) => out.flush().context("writing to stdout"),
            Output::File { temp, path, policy } => {
                if policy.sync {
                    temp.as_file()
                        .sync_all()
                        .with_context(|| format!("writing {}", path.display()))?;
                }
                if policy.force {
                    temp.persist(&path)
                        .map(drop)
                        .map_err(|e| e.error)
                        .with_context(|| format!("cannot create {}", path.display()))
                } else {
                    temp.persist_noclobber(&path)
                        .map(drop)
                        .map_err(|e| e.error)
                        .with_context(|| format!("cannot create {}", path.display()))
                }
            }
        }
    }
}

/// Builds the thread pool the command runs in: `threads` workers, or one per core when `None`.
pub fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let threads = match threads {
        Some(0) => return usage("--threads must be at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("paracrypt-{i}"))
        .build()
        .context("cannot start the thread pool")
}

/// Decodes a hex argument, naming the option in the error.
pub fn decode_hex(option: &str, text: &str) -> Result<Vec<u8>> {
    let text = text.trim();
    let text = text.strip_prefix("0x").unwrap_or(text);
    match hex::decode(text) {
        Ok(bytes) => Ok(bytes),
        Err(e) => usage(format!("bad hex in {option}: {e}")),
    }
}
