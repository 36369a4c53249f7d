//! The chunks of one job over every rank.
//!
//! Static + shared-fs is the plain case: each rank runs its block with the core's engine on
//! the shared files and nothing crosses MPI until the final agreement. Every other combination
//! is a task farm driven by rank 0 ([`farm`](crate::farm)). A serial job runs on rank 0 alone.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use paracrypt_core::engine::{self, Job, Sink, SliceSink, Source};
use paracrypt_core::plan::ChunkPlan;
use paracrypt_core::{ChunkError, ErrorKind};
use rayon::ThreadPool;

use crate::cluster::Cluster;
use crate::error::{Failure, Result};
use crate::farm;
use crate::protocol::{Assign, Report};
use crate::schedule::block;
use crate::{Options, Schedule, Transport};

/// The files a rank works on: the input, and the output it writes chunks into.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Files<'a> {
    /// The input, read with positional reads.
    pub input: &'a File,
    /// The output, written with positional writes.
    pub output: &'a File,
}

/// Runs every chunk of `job` across the ranks of `cluster` (collective: every rank calls it
/// with an equal job) and returns the output's end, the same on every rank.
///
/// Each rank transforms its chunks in `pool`. Rank 0 always needs `files`; the other ranks
/// need them under [`Transport::SharedFs`] and ignore them under [`Transport::Messages`].
/// A serial job (CBC encryption, RC4) cannot be split: rank 0 runs every chunk alone, in
/// order, and the other ranks wait.
///
/// On failure every rank returns the same [`Error::Rank`](crate::Error::Rank), naming the rank
/// and the lowest failing chunk (the one a single process reports). The output then holds
/// partial data: the caller removes it.
pub(crate) fn run(
    cluster: &Cluster,
    pool: &ThreadPool,
    job: &Job,
    options: Options,
    files: Option<Files<'_>>,
) -> Result<u64> {
    let plan = job.plan().expect("a distributed job has a plan");
    let outcome = Outcome::default();
    let root = cluster.is_root();
    let shared = options.transport == Transport::SharedFs;
    let files = files.filter(|_| root || shared);
    if files.is_none() && (root || shared) {
        outcome.fail(Failure::new(
            ErrorKind::Io,
            format!(
                "rank {} was given no files to work on (the {} transport needs them)",
                cluster.rank(),
                options.transport
            ),
        ));
    } else {
        let batches = Batches {
            pool,
            job,
            plan,
            files,
            transport: options.transport,
            outcome: &outcome,
        };
        match (job.is_parallel(), options.schedule, options.transport, root) {
            (false, _, _, true) => {
                batches.run_files(0..plan.len());
            }
            (false, _, _, false) => {}
            (true, Schedule::Static, Transport::SharedFs, _) => {
                let range = block(plan.len(), cluster.size(), cluster.rank());
                log::debug!("rank {}: chunks {range:?}", cluster.rank());
                batches.run_files(range);
            }
            (true, _, _, true) => farm::serve(cluster, &batches, options.schedule),
            (true, _, _, false) => farm::work_for_root(cluster, &batches),
        }
        // Make this rank's writes durable before rank 0 renames the output (on NFS, data
        // written on one client is on the server, and its errors known, once synced).
        if let (false, true, true, Some(files)) = (root, shared, options.sync, files)
            && let Err(e) = files.output.sync_data()
        {
            outcome.fail(Failure::new(
                ErrorKind::Io,
                format!("syncing the output: {e}"),
            ));
        }
    }
    let end = cluster.agree(outcome.into_result())?;
    Ok(cluster.all_max(end))
}

/// Everything a rank needs to run batches of chunks.
pub(crate) struct Batches<'a> {
    pub pool: &'a ThreadPool,
    pub job: &'a Job,
    pub plan: &'a ChunkPlan,
    pub files: Option<Files<'a>>,
    pub transport: Transport,
    pub outcome: &'a Outcome,
}

impl Batches<'_> {
    /// Runs `batch` on the rank's files. Returns the lowest failed chunk, if any.
    pub fn run_files(&self, batch: Range<u64>) -> Option<u64> {
        let files = self.files.expect("a rank with files");
        self.run_on(batch, files.input, files.output)
    }

    fn run_on(&self, batch: Range<u64>, source: &dyn Source, sink: &dyn Sink) -> Option<u64> {
        if batch.is_empty() {
            return None;
        }
        match self
            .pool
            .install(|| engine::run(self.job, batch, source, sink))
        {
            Ok(end) => {
                if let Some(end) = end {
                    self.outcome.end(end);
                }
                None
            }
            Err(failed) => {
                self.outcome.fail(Failure::from(&failed));
                Some(failed.index)
            }
        }
    }

    /// Where a batch's input starts: its first chunk, less the context bytes before it.
    fn input_start(&self, batch: &Range<u64>) -> u64 {
        let context = if batch.start > 0 {
            self.job.context_len() as u64
        } else {
            0
        };
        self.plan.chunk(batch.start).input.start - context
    }

    /// Reads a batch's input (rank 0, messages transport).
    pub fn read_batch(&self, batch: &Range<u64>) -> std::io::Result<Vec<u8>> {
        let files = self.files.expect("rank 0 has the files");
        let start = self.input_start(batch);
        let end = self.plan.chunk(batch.end - 1).input.end;
        let mut bytes = vec![0u8; (end - start) as usize];
        files.input.read_exact_at(&mut bytes, start)?;
        Ok(bytes)
    }

    /// Runs a batch a worker was given and says how it went.
    pub fn compute(&self, assign: Assign) -> Report {
        let batch = assign.batch.expect("only batches are computed");
        let mut report = Report {
            batch: Some(batch.clone()),
            ..Report::default()
        };
        match self.transport {
            Transport::SharedFs => report.failed = self.run_files(batch),
            Transport::Messages => {
                let source = BatchSource {
                    base: self.input_start(&batch),
                    bytes: &assign.payload,
                };
                let base = self.plan.chunk(batch.start).output.start;
                let max_end = self.plan.chunk(batch.end - 1).output.end;
                let mut out = vec![0u8; (max_end - base) as usize];
                // The batch's own outcome first: only a batch that succeeded is sent back.
                let mine = Outcome::default();
                let failed = {
                    let sink = SliceSink::new(self.plan, batch.clone(), &mut out);
                    let batches = Batches {
                        outcome: &mine,
                        ..*self
                    };
                    batches.run_on(batch, &source, &sink)
                };
                match mine.into_result() {
                    Ok(end) => {
                        if end > 0 {
                            out.truncate((end - base) as usize);
                            report.end = Some(end);
                            self.outcome.end(end);
                        }
                        report.payload = out;
                    }
                    Err(failure) => {
                        report.failed = failed;
                        self.outcome.fail(failure);
                    }
                }
            }
        }
        report
    }
}

/// A batch's input held in memory: `bytes` are the input from offset `base` on.
struct BatchSource<'a> {
    base: u64,
    bytes: &'a [u8],
}

impl Source for BatchSource<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> paracrypt_core::Result<()> {
        let at = offset
            .checked_sub(self.base)
            .map(|at| at as usize)
            .filter(|&at| at + buf.len() <= self.bytes.len());
        match at {
            Some(at) => {
                buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
                Ok(())
            }
            None => Err(paracrypt_core::Error::io(
                format!("chunk {index} missing from the batch rank 0 sent"),
                std::io::ErrorKind::UnexpectedEof.into(),
            )),
        }
    }
}

/// What one rank found: the output's end if it ran the last chunk, and its first failure.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    state: Mutex<(Option<u64>, Option<Failure>)>,
}

impl Outcome {
    /// Notes the end of the output.
    pub fn end(&self, end: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 = Some(state.0.map_or(end, |e| e.max(end)));
    }

    /// Notes a failure; the first in [`Failure`] order is kept.
    pub fn fail(&self, failure: Failure) {
        log::debug!("failed: {failure:?}");
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.1.as_ref().is_none_or(|f| failure.key() < f.key()) {
            state.1 = Some(failure);
        }
    }

    /// Notes that chunks `batch` could not be read or written at all (rank 0, messages
    /// transport): a failure of the batch's first chunk, `context` saying what was done.
    pub fn fail_batch(&self, batch: &Range<u64>, context: String, error: std::io::Error) {
        self.fail(Failure::from(&ChunkError {
            index: batch.start,
            source: paracrypt_core::Error::io(context, error),
        }));
    }

    /// The result to agree on: the end (0 when this rank did not run the last chunk) or the
    /// failure.
    pub fn into_result(self) -> std::result::Result<u64, Failure> {
        let (end, failure) = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        match failure {
            Some(failure) => Err(failure),
            None => Ok(end.unwrap_or(0)),
        }
    }
}
