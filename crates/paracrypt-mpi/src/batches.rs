//! A rank's batches of work: run on its input and output, or on bytes rank 0 sent, and what
//! came of them. Used by both the plain static schedule ([`run`](crate::run)) and the task
//! farm ([`farm`](crate::farm)).
//!
//! The unit of work is a chunk, or, for an output made of [`Parts`], a part (a run of whole
//! chunks that one rank computes and stores): batches, shares and failures are counted in
//! units ([`Batches::chunks`] gives a batch's chunks).

use std::fs::File;
use std::ops::Range;
use std::sync::Mutex;

use paracrypt_core::ChunkError;
use paracrypt_core::engine::{self, Job, Sink, SliceSink, Source};
use paracrypt_core::plan::ChunkPlan;
use rayon::ThreadPool;

use crate::Transport;
use crate::error::Failure;
use crate::protocol::{Assign, Report};
use crate::remote::Parts;
use crate::watchdog::Progress;

/// What a rank reads and writes in place: the input, and the output file it writes chunks
/// into (none for an output made of parts).
#[derive(Clone, Copy)]
pub(crate) struct Files<'a> {
    /// The input, read with positional reads (a file, or an object).
    pub input: &'a dyn Source,
    /// The output, written with positional writes.
    pub output: Option<&'a File>,
}

/// An output made of parts, as this rank stores them.
#[derive(Clone, Copy)]
pub(crate) struct PartsOut<'a> {
    pub parts: &'a dyn Parts,
    /// How many parts the output has.
    pub count: u64,
}

/// Everything a rank needs to run batches of chunks.
pub(crate) struct Batches<'a> {
    pub pool: &'a ThreadPool,
    pub job: &'a Job,
    pub plan: &'a ChunkPlan,
    pub files: Option<Files<'a>>,
    /// Set when the output is made of parts: the units of work are parts.
    pub parts: Option<PartsOut<'a>>,
    pub transport: Transport,
    pub outcome: &'a Outcome,
    /// What the watchdog watches: every chunk written counts.
    pub progress: &'a Progress,
}

impl Batches<'_> {
    /// How many units of work there are: chunks, or parts.
    pub fn units(&self) -> u64 {
        self.parts.map_or(self.plan.len(), |p| p.count)
    }

    /// The chunks of the units `units`.
    pub fn chunks(&self, units: &Range<u64>) -> Range<u64> {
        match self.parts {
            None => units.clone(),
            Some(_) if units.is_empty() => units.clone(),
            Some(p) => {
                let count = p.count as usize;
                let first = self.plan.block(units.start as usize, count).start;
                first..self.plan.block(units.end as usize - 1, count).end
            }
        }
    }

    /// The most bytes one unit's buffers take (to size batches).
    pub fn unit_bytes(&self) -> usize {
        let chunk = self.plan.layout().max_buffer().max(1);
        match self.parts {
            None => chunk,
            Some(p) => chunk.saturating_mul(self.plan.len().div_ceil(p.count.max(1)) as usize),
        }
    }

    /// Runs the units `batch` on the rank's input and output. Returns the lowest failed unit,
    /// if any.
    pub fn run_files(&self, batch: Range<u64>) -> Option<u64> {
        let files = self.files.expect("a rank with files");
        match files.output {
            Some(output) => self.run_on(batch, files.input, output),
            None => self.run_parts(batch, files.input),
        }
    }

    /// Computes and stores the parts `batch` from `source`. Returns the lowest failed part.
    fn run_parts(&self, batch: Range<u64>, source: &dyn Source) -> Option<u64> {
        let out = self.parts.expect("an output made of parts");
        let source = WatchedSource {
            source,
            progress: self.progress,
        };
        for index in batch {
            let chunks = self.chunks(&(index..index + 1));
            self.progress.start(&chunks);
            let result = self
                .pool
                .install(|| out.parts.put(self.job, &source, index as usize));
            self.progress.finish(&chunks);
            self.progress.tick();
            match result {
                Ok(Some(end)) => self.outcome.end(end),
                Ok(None) => {}
                Err(failure) => {
                    self.outcome.fail(failure);
                    return Some(index);
                }
            }
        }
        None
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

    /// Where the input of the chunks `batch` starts: the first one, less the context bytes
    /// before it.
    fn input_start(&self, batch: &Range<u64>) -> u64 {
        let context = if batch.start > 0 {
            self.job.context_len() as u64
        } else {
            0
        };
        self.plan.chunk(batch.start).input.start - context
    }

    /// Reads the input of the units `batch` (rank 0, messages transport).
    pub fn read_batch(&self, batch: &Range<u64>) -> paracrypt_core::Result<Vec<u8>> {
        let files = self.files.expect("rank 0 has the files");
        let chunks = self.chunks(batch);
        let start = self.input_start(&chunks);
        let end = self.plan.chunk(chunks.end - 1).input.end;
        let mut bytes = vec![0u8; (end - start) as usize];
        files.input.read_chunk(chunks.start, start, &mut bytes)?;
        Ok(bytes)
    }

    /// Runs a batch a worker was given and says how it went.
    pub fn compute(&self, assign: Assign) -> Report {
        let batch = assign.batch.expect("only batches are computed");
        let mut report = Report {
            batch: Some(batch.clone()),
            ..Report::default()
        };
        match (self.transport, self.parts) {
            (Transport::SharedFs, _) => report.failed = self.run_files(batch),
            (Transport::Messages, Some(_)) => {
                // The parts are stored from here: nothing goes back but how it went.
                let source = BatchSource {
                    base: self.input_start(&self.chunks(&batch)),
                    bytes: &assign.payload,
                };
                report.failed = self.run_parts(batch, &source);
            }
            (Transport::Messages, None) => {
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

/// A source that counts every read (a task's chunks) as progress: parts are written where the
/// watchdog cannot see them.
struct WatchedSource<'a> {
    source: &'a dyn Source,
    progress: &'a Progress,
}

impl Source for WatchedSource<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> paracrypt_core::Result<()> {
        self.source.read_chunk(index, offset, buf)?;
        self.progress.tick();
        Ok(())
    }

    fn will_read(&self, bytes: Range<u64>) {
        self.source.will_read(bytes);
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
        self.fail_chunk(batch.start, paracrypt_core::Error::io(context, error));
    }

    /// Notes that chunk `index` failed with `error`.
    pub fn fail_chunk(&self, index: u64, error: paracrypt_core::Error) {
        self.fail(Failure::from(&ChunkError {
            index,
            source: error,
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
