//! Flags that several subcommands share, each declared once here and flattened where it is
//! used: `-j`, `--chunk-size`, INPUT/`-o`/`-f`/`--sync`, `--progress`/`-q` and the
//! `--distributed` group. Each resolves to the value the rest of the program uses.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use paracrypt_core::plan::ChunkSize;

use crate::io::{OutputPolicy, thread_pool};
use crate::progress::Show;
use crate::size::parse_usize;

/// `-j/--threads`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ThreadsFlag {
    /// Worker threads (default: one per core).
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
}

impl ThreadsFlag {
    /// The command's thread pool.
    pub fn pool(self) -> Result<rayon::ThreadPool> {
        thread_pool(self.threads)
    }
}

/// `--chunk-size`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ChunkSizeFlag {
    /// Bytes per chunk: a multiple of 16, at most 1GiB (4096, 64KiB, 1MiB, ...; default 1MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_chunk_size)]
    pub chunk_size: Option<ChunkSize>,
}

impl ChunkSizeFlag {
    /// The size given, or the default (1 MiB).
    pub fn get(&self) -> ChunkSize {
        self.chunk_size.unwrap_or(ChunkSize::DEFAULT)
    }
}

/// Parses a chunk size (`64KiB`): the error quotes what was typed (clap adds the value).
pub fn parse_chunk_size(text: &str) -> Result<ChunkSize, String> {
    let bytes = parse_usize(text)?;
    ChunkSize::new(bytes).map_err(|e| match e {
        paracrypt_core::Error::ChunkSize { reason, .. } => reason.to_string(),
        other => other.to_string(),
    })
}

/// INPUT, `-o/--output`, `-f/--force` and `--sync` of a command that turns one input into one
/// output.
#[derive(Clone, Debug, Args)]
pub struct FilesFlags {
    /// Input file, `-` for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    pub input: PathBuf,
    /// Output file, `-` for stdout.
    #[arg(short, long, value_name = "OUTPUT", default_value = "-")]
    pub output: PathBuf,
    /// Overwrite OUTPUT if it exists.
    #[arg(short, long)]
    pub force: bool,
    /// fsync OUTPUT before renaming it into place (for jobs that delete the input afterwards).
    #[arg(long)]
    pub sync: bool,
}

impl FilesFlags {
    /// The output policy, for ciphertext (`binary`) or not.
    pub fn policy(&self, binary: bool) -> OutputPolicy {
        OutputPolicy {
            force: self.force,
            binary,
            sync: self.sync,
            private: false,
        }
    }
}

/// `--recursive`: INPUT and OUTPUT are directory trees. No short form: `-r` and `-R` name
/// recipients, as in age.
#[derive(Clone, Copy, Debug, Args)]
pub struct RecursiveFlag {
    /// INPUT and OUTPUT are directories: every file of the tree, on one schedule, with an
    /// encrypted manifest at OUTPUT's top (docs/guide/trees.md). With --distributed, `encrypt
    /// --recursive` and `decrypt --recursive` spread the tree's files over MPI ranks.
    #[arg(long)]
    pub recursive: bool,
}

/// `-v/--verbose` of a command without `--distributed` (`rekey`, `verify`).
#[derive(Clone, Copy, Debug, Args)]
pub struct VerboseFlag {
    /// With --recursive: one line per file on stderr saying what was done to it (`rekeyed
    /// a/b.txt`, `verified a/b.txt`; docs/guide/trees.md).
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

/// `--dry-run` and `--json` of a tree run (`encrypt`, `decrypt` and `rekey --recursive`).
#[derive(Clone, Copy, Debug, Args)]
pub struct TreeReportFlags {
    /// With --recursive: say what would be done to each file (with -v or --json) and in a
    /// summary line, writing nothing (the previous manifest of --update, or the tree to decrypt
    /// or rekey, is opened and checked as the run would).
    #[arg(long, requires = "recursive")]
    pub dry_run: bool,
    /// With --recursive: JSON lines on stdout, one object per file, then one summary object
    /// (a stable shape: docs/guide/trees.md).
    #[arg(long, requires = "recursive")]
    pub json: bool,
}

/// `--progress` / `-q/--quiet`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ProgressFlags {
    /// Show a progress bar even when stderr is not a terminal.
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
    /// No progress bar and no warnings.
    #[arg(short, long)]
    pub quiet: bool,
}

impl ProgressFlags {
    /// When to draw a bar.
    pub fn show(self) -> Show {
        Show::from_flags(self.progress, self.quiet)
    }
}

/// `--distributed` and its options, shared by `raw`, `encrypt` and `decrypt`.
#[derive(Clone, Copy, Debug, Args)]
#[command(next_help_heading = "Distributed (MPI)")]
pub struct DistributedFlags {
    /// Run across the ranks of an MPI job: `mpirun -n N paracrypt ... --distributed` (needs a
    /// build with `--features mpi`; INPUT and OUTPUT must be files, or with `--recursive`
    /// directories every rank sees).
    #[arg(long)]
    pub distributed: bool,
    /// Which rank gets which chunks: contiguous blocks, or batches rank 0 hands out on request.
    #[arg(long, value_enum, value_name = "SCHEDULE", default_value_t = ScheduleArg::Static, requires = "distributed")]
    pub schedule: ScheduleArg,
    /// How chunks reach the ranks: every rank reads and writes the files on a filesystem all
    /// ranks see, or only rank 0 touches files and chunks travel as MPI messages.
    #[arg(long, value_enum, value_name = "TRANSPORT", default_value_t = TransportArg::SharedFs, requires = "distributed")]
    pub transport: TransportArg,
    /// With --recursive: one line per file on stderr saying what was done to it (`encrypted
    /// a/b.txt`; docs/guide/trees.md). With --distributed: also the effective layout (ranks,
    /// hosts, threads and cores per rank).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Abort the whole job (exit status 3) when nothing progresses on any rank for SECONDS: a
    /// rank stopped or killed, a link cut. Each rank says what it was waiting for and removes
    /// what it holds. 0 disables the watchdog.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = STALL_TIMEOUT_SECS,
        requires = "distributed"
    )]
    pub stall_timeout: u64,
}

/// `--stall-timeout`'s default, in seconds: `paracrypt_mpi::DEFAULT_STALL_TIMEOUT`, which this
/// crate can name only with the `mpi` feature. Every build with it checks the two are one value
/// (a build without it cannot run `--distributed`, so it never uses this one).
pub const STALL_TIMEOUT_SECS: u64 = 30;

#[cfg(feature = "mpi")]
const _: () = assert!(
    STALL_TIMEOUT_SECS == paracrypt_mpi::DEFAULT_STALL_TIMEOUT.as_secs()
        && paracrypt_mpi::DEFAULT_STALL_TIMEOUT.subsec_nanos() == 0,
    "--stall-timeout's default differs from paracrypt_mpi::DEFAULT_STALL_TIMEOUT"
);

/// `--schedule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScheduleArg {
    /// Contiguous blocks of chunks, one per rank.
    Static,
    /// A task farm: rank 0 hands out batches to whichever rank asks.
    Dynamic,
}

/// `--transport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// Every rank reads and writes the files in place (no file data crosses MPI).
    SharedFs,
    /// Only rank 0 touches files; chunks travel as messages.
    Messages,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_up_to_1_gib() {
        assert_eq!(parse_chunk_size("1GiB").unwrap().get(), 1 << 30);
        assert_eq!(parse_chunk_size("64KiB").unwrap().get(), 64 << 10);
        assert_eq!(
            parse_chunk_size("2GiB").unwrap_err(),
            "must be at most 1 GiB"
        );
        assert_eq!(
            parse_chunk_size("1000").unwrap_err(),
            "must be a multiple of 16 bytes"
        );
        assert!(parse_chunk_size("1MB").unwrap_err().contains("`1MB`"));
    }
}
