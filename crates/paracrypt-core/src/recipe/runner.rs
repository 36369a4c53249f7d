//! The runner: the options every format shares, and the drivers that run any recipe.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;

use super::reader::Counted;
use super::{Recipe, StreamReader, StreamWriter};
use crate::engine::io::{Counting, PositionalReader, Progress, ProgressSource};
use crate::engine::{self, InputId, stream};
use crate::error::{Error, Result};
use crate::provider::Provider;

/// Runs any [`Recipe`] on every driver, with the options every format shares: the streaming
/// window, a progress callback and the provider. Work runs in the caller's Rayon pool (wrap calls in
/// `ThreadPool::install` to choose the thread count). See the [module](super) for an example.
#[derive(Clone, Default)]
pub struct Runner {
    window: usize,
    progress: Option<Progress>,
    provider: Provider,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("window", &self.window)
            .field("progress", &self.progress.is_some())
            .field("provider", &self.provider)
            .finish()
    }
}

impl Runner {
    /// A runner with the default window (a task's worth of chunks per pool thread), no progress
    /// callback and the default provider.
    pub fn new() -> Self {
        Self::default()
    }

    /// Chunks per wave when streaming (0, the default: [`TASK_BYTES`](crate::engine::TASK_BYTES)
    /// of input per pool thread, at least one chunk each). At most twice this many chunks are in
    /// memory.
    pub fn window(mut self, window: usize) -> Self {
        self.window = window;
        self
    }

    /// Calls `progress` with the input bytes taken in, as the work goes (files, streams and
    /// ranges).
    pub fn progress(mut self, progress: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Computes the primitives with `provider` (the default, [`Provider::Fastest`]: per
    /// primitive, the fastest compiled one). The bytes are the same whichever provider runs.
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// Runs `recipe` from `input` into `output` with positional I/O on every pool thread and
    /// sets `output`'s length. Returns the bytes written. The progress callback is told of
    /// every input byte, the header a decryption reads included (as a stream counts it). An
    /// input that grows, shrinks or is rewritten while it is read fails
    /// ([`Error::InputChanged`]) rather than being cut or mixed.
    pub fn file(&self, recipe: &dyn Recipe, input: &File, output: &File) -> Result<u64> {
        let id = InputId::of(input)?;
        let job = recipe.first_job(&mut head_of(input), Some(id.len()), self.provider)?;
        let header = job.layout().input_offset;
        if let (Some(progress), true) = (&self.progress, header > 0) {
            progress(header);
        }
        let written = engine::run_file(&job, &ProgressSource::new(input, &self.progress), output)?;
        id.check(input)?;
        Ok(written)
    }

    /// Runs `recipe` from `input` into `writer`, an output that takes bytes only in order (a
    /// pipe, a socket, `/dev/null`): positional reads and transforms on every pool thread, the
    /// output written in order as it is ready ([`engine::run_to_writer`]). Only verified
    /// output is written: on failure, the chunks before the failing one have been written.
    /// Returns the bytes written. Progress counts as [`Runner::file`]'s does.
    pub fn file_to_writer(
        &self,
        recipe: &dyn Recipe,
        input: &File,
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let job = recipe.first_job(&mut head_of(input), Some(file_len(input)?), self.provider)?;
        let header = job.layout().input_offset;
        if let (Some(progress), true) = (&self.progress, header > 0) {
            progress(header);
        }
        engine::run_to_writer(&job, &ProgressSource::new(input, &self.progress), writer)
    }

    /// Runs `recipe` from a stream to a stream through a bounded ordered window. Only finished
    /// chunks are written, in order; on failure the chunks before the failing one have been
    /// written. Returns the bytes written.
    pub fn stream(
        &self,
        recipe: &dyn Recipe,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let mut counted = self.count(reader);
        let mut input = BufReader::new(&mut counted);
        self.stream_buffered(recipe, &mut input, writer)
    }

    /// `reader`, reporting the bytes read to the progress callback.
    pub(crate) fn count<'a, 'r>(&'a self, reader: &'r mut (dyn Read + Send)) -> Counting<'a, 'r> {
        Counting::new(reader, self.progress.as_ref())
    }

    /// [`Runner::stream`] from a reader that is buffered already (whose header a caller may
    /// have looked at).
    pub(crate) fn stream_buffered(
        &self,
        recipe: &dyn Recipe,
        input: &mut (dyn BufRead + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let job = recipe.first_job(input, None, self.provider)?;
        stream::process_stream(&job, input, writer, self.window)
    }

    /// Runs `recipe` over a buffer in memory and returns the output.
    pub fn vec(&self, recipe: &dyn Recipe, input: &[u8]) -> Result<Vec<u8>> {
        let job = recipe.first_job(&mut &input[..], Some(input.len() as u64), self.provider)?;
        let mut output = Vec::new();
        engine::run_in_memory(&job, input, &mut output)?;
        Ok(output)
    }

    /// Runs `recipe`'s job over a file into memory, with positional reads on every pool thread:
    /// all its chunks, or only `chunks` (a run of consecutive chunks), and returns their output
    /// (the output header is not included). For jobs whose output is small beside their input:
    /// a tree hash's leaves ([`sign::tree::TreeHash`](crate::sign::tree::TreeHash)).
    ///
    /// # Panics
    ///
    /// If `chunks` is empty or goes beyond the job's plan.
    pub fn file_to_vec(
        &self,
        recipe: &dyn Recipe,
        input: &File,
        chunks: Option<std::ops::Range<u64>>,
    ) -> Result<Vec<u8>> {
        let id = InputId::of(input)?;
        let job = recipe.first_job(&mut head_of(input), Some(id.len()), self.provider)?;
        let chunks = chunks.unwrap_or(0..job.planned().len());
        let source = ProgressSource::new(input, &self.progress);
        let mut out = Vec::new();
        engine::run_to_buffer(&job, chunks, &source, &mut out)?;
        id.check(input)?;
        Ok(out)
    }

    /// Runs only the chunks of `recipe`'s job over `input` whose output covers bytes
    /// `offset..offset + len` and writes those bytes (fewer when the output ends first). A
    /// range that reaches the end also runs the last chunk, so that a cut file fails here as
    /// everywhere else. Returns the bytes written.
    pub fn range(
        &self,
        recipe: &dyn Recipe,
        input: &File,
        offset: u64,
        len: u64,
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let job = recipe.first_job(&mut head_of(input), Some(file_len(input)?), self.provider)?;
        let source = ProgressSource::new(input, &self.progress);
        engine::run_range(&job, &source, offset, len, writer)
    }

    /// A `Read` adapter that runs `recipe` over `inner`: what is read from it is the job's
    /// output, made wave by wave as it is read (see [`StreamReader`]). The job is made now: a
    /// recipe that opens a header reads and checks it here (a wrong key fails before any
    /// output), one that writes a header hands it out first. Progress counts the bytes read
    /// from `inner`.
    pub fn reader<R: Read>(&self, recipe: &dyn Recipe, inner: R) -> Result<StreamReader<R>> {
        let mut input = BufReader::new(inner);
        let job = recipe.first_job(&mut input, None, self.provider)?;
        let counted = Counted {
            inner: input,
            progress: self.progress.clone(),
        };
        if let Some(progress) = &self.progress {
            // The header, read before the counting began.
            let header = job.layout().input_offset;
            if header > 0 {
                progress(header);
            }
        }
        Ok(StreamReader::new(counted, job, self.window))
    }

    /// A `Write` adapter that runs `recipe` over everything written to it into `inner`: the
    /// job's header is written now, and [`StreamWriter::finish`] must be called to write the
    /// last chunk. For recipes that read no header from their input (every encryption, raw
    /// ciphers both ways); one that does fails here, as its input is still empty.
    pub fn writer<W: Write + Send>(
        &self,
        recipe: &dyn Recipe,
        mut inner: W,
    ) -> Result<StreamWriter<W>> {
        let job = recipe.first_job(&mut &[][..], None, self.provider)?;
        inner
            .write_all(job.output_header())
            .map_err(|e| Error::io("writing the header", e))?;
        Ok(StreamWriter::new(inner, job, self.window))
    }
}

/// The front of a file, read with positional reads (the file's cursor is left alone).
fn head_of(file: &File) -> BufReader<PositionalReader<'_>> {
    BufReader::new(PositionalReader { file, at: 0 })
}

fn file_len(file: &File) -> Result<u64> {
    Ok(file
        .metadata()
        .map_err(|e| Error::io("reading input metadata", e))?
        .len())
}
