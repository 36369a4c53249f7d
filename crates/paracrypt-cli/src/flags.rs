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

/// The headings `--help` groups options under, by what users do with them. Every shared flag
/// names its own (a struct-wide `next_help_heading` would leak onto the flags after it).
pub mod heading {
    /// Key file, password, recipients, identities, KMS.
    pub const SECRET: &str = "Secret";
    /// Where the result goes: -o, -f, --sync, --range.
    pub const OUTPUT: &str = "Output";
    /// What is written: --format, -a, -c, --chunk-size, --sign.
    pub const FORMAT: &str = "Format";
    /// --recursive and the options of trees.
    pub const TREES: &str = "Trees";
    /// -j, --progress, -q.
    pub const PERFORMANCE: &str = "Performance";
    /// Options of s3://, gs://, az:// and http(s):// objects.
    pub const STORAGE: &str = "Object storage (s3://, gs://, az://, http(s)://)";
    /// --distributed and its options.
    pub const MPI: &str = "Distributed (MPI)";
    /// What few need: --provider, --rsa-scheme, transport and schedule.
    pub const EXPERT: &str = "Expert";
}

/// `-j/--threads`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ThreadsFlag {
    /// Worker threads (default: one per core).
    #[arg(
        short = 'j',
        long = "threads",
        value_name = "N",
        help_heading = heading::PERFORMANCE
    )]
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
    /// Bytes per chunk (default 1MiB).
    ///
    /// A multiple of 16, at most 1GiB: 4096, 64KiB, 1MiB, 1MB (KiB/MiB/GiB and K/M/G are
    /// 1024-based, KB/MB/GB 1000-based).
    #[arg(long, value_name = "SIZE", value_parser = parse_chunk_size, help_heading = heading::FORMAT, hide_short_help = true)]
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
    #[arg(short, long, value_name = "OUTPUT", default_value = "-", help_heading = heading::OUTPUT)]
    pub output: PathBuf,
    /// Overwrite OUTPUT if it exists.
    #[arg(short, long, help_heading = heading::OUTPUT)]
    pub force: bool,
    /// fsync OUTPUT before renaming it into place (for jobs that delete the input afterwards).
    #[arg(long, help_heading = heading::OUTPUT, hide_short_help = true)]
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
/// recipients, as in age. Each command says what it does with a tree (`mut_arg`); this text is
/// `encrypt`'s and `decrypt`'s.
#[derive(Clone, Copy, Debug, Args)]
pub struct RecursiveFlag {
    /// INPUT and OUTPUT are directory trees.
    ///
    /// Every file on one schedule, with an encrypted manifest at OUTPUT's top
    /// (docs/guide/trees.md). With --distributed, the tree's files are spread over MPI ranks.
    #[arg(long, help_heading = heading::TREES)]
    pub recursive: bool,
}

/// `-v/--verbose` of a command without `--distributed` (`rekey`, `verify`).
#[derive(Clone, Copy, Debug, Args)]
pub struct VerboseFlag {
    /// With --recursive: list each file and what was done to it.
    ///
    /// One line per file on stderr (`rekeyed a/b.txt`, `verified a/b.txt`;
    /// docs/guide/trees.md).
    #[arg(short = 'v', long, help_heading = heading::TREES)]
    pub verbose: bool,
}

/// `--dry-run` and `--json` of a tree run (`encrypt`, `decrypt` and `rekey --recursive`).
#[derive(Clone, Copy, Debug, Args)]
pub struct TreeReportFlags {
    /// With --recursive: say what would be done, writing nothing.
    ///
    /// Each file (with -v or --json) and a summary line; the previous manifest of --update, or
    /// the tree to decrypt or rekey, is opened and checked as the run would.
    #[arg(long, requires = "recursive", help_heading = heading::TREES, hide_short_help = true)]
    pub dry_run: bool,
    /// With --recursive: JSON lines on stdout, a file's each, then a summary.
    ///
    /// One object per file, then one summary object (a stable shape: docs/guide/trees.md).
    #[arg(long, requires = "recursive", help_heading = heading::TREES, hide_short_help = true)]
    pub json: bool,
}

/// `--progress` / `-q/--quiet`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ProgressFlags {
    /// Show progress even when stderr is not a terminal (a log): plain lines, and a final
    /// `done: N bytes (…) in T s, R/s` line when the work succeeded.
    #[arg(
        long,
        conflicts_with = "quiet",
        help_heading = heading::PERFORMANCE,
        hide_short_help = true
    )]
    pub progress: bool,
    /// No progress bar and no warnings.
    #[arg(short, long, help_heading = heading::PERFORMANCE)]
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
pub struct DistributedFlags {
    /// Run across the ranks of an MPI job (`mpirun -n N paracrypt ... --distributed`).
    ///
    /// Needs a build with `--features mpi`; INPUT and OUTPUT must be files, or with
    /// `--recursive` directories every rank sees.
    #[arg(long, help_heading = heading::MPI, hide_short_help = true)]
    pub distributed: bool,
    /// Which rank gets which chunks: contiguous blocks, or batches rank 0 hands out on request.
    #[arg(long, value_enum, value_name = "SCHEDULE", default_value_t = ScheduleArg::Static, requires = "distributed", help_heading = heading::MPI, hide_short_help = true)]
    pub schedule: ScheduleArg,
    /// How chunks reach the ranks: every rank reads and writes the files on a filesystem all
    /// ranks see, or only rank 0 touches files and chunks travel as MPI messages.
    #[arg(long, value_enum, value_name = "TRANSPORT", default_value_t = TransportArg::SharedFs, requires = "distributed", help_heading = heading::MPI, hide_short_help = true)]
    pub transport: TransportArg,
    /// List each file and what was done to it; with --distributed, the layout too.
    ///
    /// With --recursive: one line per file on stderr (`encrypted a/b.txt`; docs/guide/trees.md).
    /// With --distributed: also the effective layout (ranks, hosts, threads and cores per rank).
    #[arg(short = 'v', long, help_heading = heading::TREES)]
    pub verbose: bool,
    /// Abort the whole job (exit status 3) when nothing progresses on any rank for SECONDS: a
    /// rank stopped or killed, a link cut. Each rank says what it was waiting for and removes
    /// what it holds. 0 disables the watchdog.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = STALL_TIMEOUT_SECS,
        requires = "distributed",
        help_heading = heading::MPI,
        hide_short_help = true
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
        // A decimal megabyte is a multiple of 16; 1 KB is not.
        assert_eq!(parse_chunk_size("1MB").unwrap().get(), 1_000_000);
        assert_eq!(
            parse_chunk_size("1KB").unwrap_err(),
            "must be a multiple of 16 bytes"
        );
        assert!(parse_chunk_size("1.5MB").unwrap_err().contains("`1.5MB`"));
    }
}
