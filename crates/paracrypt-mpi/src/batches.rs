//! A rank's batches of chunks: run on its files, or on bytes rank 0 sent, and what came of
//! them. Used by both the plain static schedule ([`run`](crate::run)) and the task farm
//! ([`farm`](crate::farm)).

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use paracrypt_core::ChunkError;
use paracrypt_core::engine::{self, Job, Sink, SliceSink, Source};
use paracrypt_core::plan::ChunkPlan;
use rayon::ThreadPool;

use crate::Transport;
use crate::error::Failure;
use crate::protocol::{Assign, Report};
use crate::watchdog::Progress;

/// The files a rank works on: the input, and the output it writes chunks into.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Files<'a> {
    /// The input, read with positional reads.
    pub input: &'a File,
    /// The output, written with positional writes.
    pub output: &'a File,
}

/// Everything a rank needs to run batches of chunks.
pub(crate) struct Batches<'a> {
    pub pool: &'a ThreadPool,
    pub job: &'a Job,
    pub plan: &'a ChunkPlan,
    pub files: Option<Files<'a>>,
    pub transport: Transport,
    pub outcome: &'a Outcome,
    /// What the watchdog watches: every chunk written counts.
    pub progress: &'a Progress,
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
        self.progress.start(&batch);
        let sink = Watched {
            sink,
            progress: self.progress,
        };
        let result = self
            .pool
            .install(|| engine::run(self.job, batch.clone(), source, &sink));
        self.progress.finish(&batch);
        match result {
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
                let span = self.plan.output_span(batch.clone());
                let base = span.start;
                let mut out = vec![0u8; (span.end - base) as usize];
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

/// A sink that counts every write (a task's chunks) as progress (one relaxed atomic add: no
/// lock).
struct Watched<'a> {
    sink: &'a dyn Sink,
    progress: &'a Progress,
}

impl Sink for Watched<'_> {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> paracrypt_core::Result<()> {
        self.sink.write_chunk(index, offset, data)?;
        self.progress.tick();
        Ok(())
    }

    /// A task's chunks at once, as the inner sink takes them (one write into a file).
    fn write_run(
        &self,
        plan: &ChunkPlan,
        chunks: Range<u64>,
        data: &[u8],
    ) -> paracrypt_core::Result<()> {
        self.sink.write_run(plan, chunks, data)?;
        self.progress.tick();
        Ok(())
    }

    fn single_writer(&self) -> bool {
        self.sink.single_writer()
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
