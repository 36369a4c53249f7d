//! Inputs and outputs as the CLI sees them (`-` is stdin/stdout), the thread pool, and hex
//! arguments.

mod input;
mod output;
pub mod remote;

pub use input::Input;
#[cfg(feature = "mpi")]
pub use output::NewOutput;
pub use output::{Output, OutputPolicy, OutputTarget};

use anyhow::{Context, Result};

use crate::exit::usage;

/// The pipe buffer asked for on a pipe we read or write (Linux's default is 64 KiB; 1 MiB is
/// what an unprivileged process may ask for by default, `/proc/sys/fs/pipe-max-size`).
const PIPE_BUFFER: usize = 1 << 20;

/// Grows the buffer of `fd` to [`PIPE_BUFFER`] when it is a pipe, so that the process at its
/// other end and this one hand over a task's worth of bytes at a time instead of one 64 KiB
/// buffer (a sleep and a wake-up on each side for every 64 KiB: 16,000 of each per GiB).
/// Anything else, or a refusal (a user over `pipe-user-pages-soft`), leaves it as it was.
pub(crate) fn grow_pipe(fd: impl std::os::fd::AsFd) {
    let is_pipe = rustix::fs::fstat(&fd)
        .is_ok_and(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_fifo());
    if is_pipe && rustix::pipe::fcntl_getpipe_size(&fd).is_ok_and(|size| size < PIPE_BUFFER) {
        let _ = rustix::pipe::fcntl_setpipe_size(&fd, PIPE_BUFFER);
    }
}

/// The most worker threads per core `-j` accepts: more only adds threads that wait, each with
/// a chunk buffer, and a typo like `-j 100000` would spend minutes starting threads.
pub const MAX_THREADS_PER_CORE: usize = 4;

/// The cores this process may use (its CPU affinity and quota).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Checks a thread count from the command line: 1 to [`MAX_THREADS_PER_CORE`] × the cores.
pub fn check_threads(option: &str, threads: usize) -> Result<()> {
    let cores = cores();
    let max = MAX_THREADS_PER_CORE * cores;
    if threads == 0 {
        return usage(format!("{option} must be at least 1"));
    }
    if threads > max {
        let s = if cores == 1 { "" } else { "s" };
        return usage(format!(
            "{option} {threads} is more than {max} ({MAX_THREADS_PER_CORE} per core; this process may use {cores} core{s})"
        ));
    }
    Ok(())
}

/// Builds the thread pool the command runs in: `threads` workers, or one per core when `None`.
pub fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let threads = match threads {
        Some(n) => {
            check_threads("--threads", n)?;
            n
        }
        None => cores(),
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
