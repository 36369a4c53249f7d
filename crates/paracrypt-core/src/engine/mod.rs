//! The chunk engine: runs a [`Job`] — a [`ChunkPlan`], a per-chunk transform and the header
//! bytes around the chunks — in the caller's Rayon pool.
//!
//! A transform sees one chunk at a time, in a buffer that holds the chunk's input and has room
//! for its output, with the chunk's position ([`ChunkCtx`]: its index, byte offset and the
//! plan's chunk size). A
//! [`ChunkTransform`] is a pure function of the chunk (its position, its input and a few bytes
//! of input just before it, which CBC decryption needs), so chunks may run in any order on any
//! thread and the output is the same at any thread count. A [`SerialTransform`] (CBC
//! encryption, RC4) carries state from chunk to chunk and runs in order on one thread.
//!
//! The drivers, all consuming a [`Job`]:
//! - [`process_in_place`], [`run_in_memory`] and [`run_into_slice`]: buffers in memory;
//! - [`run`]: any range of chunks from a positional [`Source`] to a [`Sink`] (files with
//!   `read_at`/`write_at`, or memory), in tasks of consecutive chunks ([`TASK_BYTES`] of input
//!   each, at least one chunk), each worker owning one page-aligned pair of buffers, so reading,
//!   transforming and writing of different tasks overlap across threads and at most one task
//!   per thread is in memory; a failure names its chunk ([`ChunkError`]);
//! - [`run_to_writer`]: every chunk from a positional [`Source`] to a `Write` that takes bytes
//!   only in order (a pipe, a socket, `/dev/null`): every pool thread reads, transforms and, in
//!   its turn, writes, through a window of `2 × threads` tasks (no thread reads for the
//!   others or only writes); [`run_range`] is the same driver over the chunks of a range;
//! - [`run_to_buffer`]: a run of chunks into a buffer of their own: one part of the output,
//!   made by whichever process or task owns it (a rank's batch, a Dask task, a multipart
//!   upload's part), with the job made elsewhere from the same header
//!   ([`Recipe::job_from_header`](crate::Recipe::job_from_header)) and the run chosen with
//!   [`ChunkPlan::block`] or [`ChunkPlan::output_span`];
//! - the stream driver behind [`Runner::stream`](crate::Runner::stream): `Read` → `Write` through a
//!   bounded, ordered window.
//!
//! What is public here is what `paracrypt-mpi`, benchmarks and tools that make or check single
//! chunks need: [`Job`] and [`Transform`] with the transform traits and [`ChunkCtx`], the
//! drivers above with [`Source`]/[`Sink`] (and the in-memory [`SliceSource`]/[`SliceSink`]).
//! Streams and the `Write` adapter go through [`Runner`](crate::Runner).
//!
//! None of them builds a thread pool: they run in whatever pool the caller `install`s (the
//! global one otherwise), and a one-thread pool runs the very same code serially.

mod input;
pub(crate) mod io;
mod job;
mod ordered;
mod range;
pub(crate) mod stream;

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::buffer::{AlignedBuf, with_scratch};
use crate::error::{ChunkError, Error, Result};
use crate::plan::{ChunkLayout, ChunkPlan};
pub use input::{INPUT_ID_LEN, InputId};
pub use io::{Sink, SliceSink, SliceSource, Source};
pub(crate) use job::Apply;
use job::lowest_error;
pub use job::{Job, Transform};
pub use range::run_range;

/// The most bytes of preceding input a transform may ask for.
pub const MAX_CONTEXT: usize = 64;

/// What a transform knows about the chunk in front of it.
#[derive(Clone, Copy, Debug)]
pub struct ChunkCtx<'a> {
    /// The chunk's index in the plan.
    pub index: u64,
    /// Where the chunk's payload starts in the unframed data (the plaintext of a container, the
    /// data of a raw cipher): what CTR seeks its keystream to and errors count from. See
    /// [`ChunkLayout::payload_start`](crate::plan::ChunkLayout::payload_start).
    pub offset: u64,
    /// The plan's chunk size, in the same coordinate: the payload bytes of every chunk but the
    /// last (which has at most this many). What a transform that checks framing compares with,
    /// so that it never keeps a chunk size of its own. See
    /// [`ChunkLayout::payload_chunk`](crate::plan::ChunkLayout::payload_chunk).
    pub chunk_size: usize,
    /// Whether it is the last chunk.
    pub is_last: bool,
    /// The [`ChunkTransform::context_len`] input bytes just before the chunk; empty for chunk 0.
    pub context: &'a [u8],
}

/// A per-chunk transform that depends only on the chunk: safe to run on any thread, in any order.
pub trait ChunkTransform: Sync {
    /// How many input bytes just before each chunk the transform needs (at most
    /// [`MAX_CONTEXT`]): one block for CBC decryption, none otherwise.
    fn context_len(&self) -> usize {
        0
    }

    /// Transforms `buf[..input_len]` in place. `buf` is at least as long as the chunk's output
    /// (as the plan's layout gives it). Returns the output length, which equals the layout's
    /// output length except for the last chunk of a [`Tail::Unpad`](crate::plan::Tail) plan.
    fn transform(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], input_len: usize) -> Result<usize>;

    /// Transforms the chunk `input` into `output`, which is at least as long as the chunk's
    /// output (and shorter than `input` when the output is: opening drops a tag), and returns
    /// the output length as [`transform`](Self::transform) does, with the same bytes. The
    /// in-memory driver calls it with each chunk's own output slot, so a transform that reads
    /// one slice and writes another (an AEAD, CTR, ECB, CBC decryption) passes over memory
    /// once. By default the input is copied into `output` (or, when `output` is shorter, into
    /// this thread's scratch buffer) and transformed there.
    fn transform_to(&self, chunk: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        through_copy(input, output, |buf, len| self.transform(chunk, buf, len))
    }
}

/// A transform that carries state from one chunk to the next and must see chunks in order.
pub trait SerialTransform: Send {
    /// As [`ChunkTransform::transform`]; called for chunks 0, 1, 2, … in order. Chunk 0 starts
    /// over from the initial state, so that a job can be run again.
    fn transform(
        &mut self,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        input_len: usize,
    ) -> Result<usize>;

    /// As [`ChunkTransform::transform_to`], in order as [`transform`](Self::transform).
    fn transform_to(
        &mut self,
        chunk: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<usize> {
        through_copy(input, output, |buf, len| self.transform(chunk, buf, len))
    }
}

/// Wipes the output slot of a chunk whose transform failed: whatever a transform wrote there
/// before it failed (the plaintext of a chunk that authenticated under the key but not where it
/// stands, say) is unproven, and the slot may be a caller's memory
/// ([`run_into_slice`], [`process_in_place`]). Nothing of a failed chunk reaches a caller.
pub(crate) fn wipe(slot: &mut [u8]) {
    zeroize::Zeroize::zeroize(slot);
}

/// [`wipe`]s `slot` and returns `error`.
fn failed(slot: &mut [u8], error: ChunkError) -> ChunkError {
    wipe(slot);
    error
}

/// Runs an in-place transform `f(buf, input_len)` from `input` into `output`: in `output` when
/// the input fits it, else in this thread's scratch buffer, whose output is then copied out.
pub(crate) fn through_copy(
    input: &[u8],
    output: &mut [u8],
    f: impl FnOnce(&mut [u8], usize) -> Result<usize>,
) -> Result<usize> {
    let len = input.len();
    if let Some(buf) = output.get_mut(..len) {
        buf.copy_from_slice(input);
        return f(output, len);
    }
    with_scratch(len, |buf| {
        buf.copy_from_slice(input);
        let written = f(buf, len)?;
        output[..written].copy_from_slice(&buf[..written]);
        Ok(written)
    })
}

/// Runs `job` over `buf` in place, chunk by chunk: `buf` holds the input and ends up holding
/// the output (grown by padding, or cut to the real length).
///
/// The job's layout must keep every chunk where it is (same offsets and chunk sizes in input
/// and output), and its plan must be for `buf.len()` bytes.
///
/// # Panics
/// If the layout moves chunks, or the job was planned for another length.
pub fn process_in_place(job: &Job, buf: &mut Vec<u8>) -> Result<(), ChunkError> {
    let plan = job.planned();
    let layout = plan.layout();
    assert!(
        layout.input_offset == layout.output_offset && layout.input_chunk == layout.output_chunk,
        "process_in_place needs a layout that keeps chunks in place"
    );
    assert_eq!(
        buf.len() as u64,
        plan.input_len(),
        "the job was planned for another length"
    );
    buf.resize(plan.output_len() as usize, 0);
    let offset = layout.output_offset as usize;
    let full = layout.input_chunk;
    let last = plan.chunk(plan.len() - 1);

    // Context bytes are input: copy them out before any chunk overwrites its input.
    let ctx_len = job.context_len();
    let contexts: Vec<u8> = (1..plan.len())
        .flat_map(|i| {
            let at = offset + i as usize * full;
            &buf[at - ctx_len..at]
        })
        .copied()
        .collect();
    let context = |index: u64| -> &[u8] {
        let at = (index as usize).saturating_sub(1) * ctx_len;
        if index == 0 {
            &[]
        } else {
            &contexts[at..at + ctx_len]
        }
    };
    let input_len = |index: u64| {
        if index == last.index {
            last.input_len()
        } else {
            full
        }
    };
    let ctx = |index: u64| ChunkCtx {
        index,
        offset: layout.payload_start(index),
        chunk_size: layout.payload_chunk(),
        is_last: index == last.index,
        context: context(index),
    };

    let chunks = &mut buf[offset..plan.output_len() as usize];
    let (body, tail) = chunks.split_at_mut((last.output.start - layout.output_offset) as usize);
    let chunks: Vec<_> = body
        .chunks_mut(full)
        .chain(std::iter::once(tail))
        .enumerate()
        .collect();
    let last_len = job
        .transform()
        .each(chunks, |t, (i, chunk)| {
            let i = i as u64;
            let len = t
                .in_place(&ctx(i), chunk, input_len(i))
                .map_err(|source| failed(chunk, ChunkError { index: i, source }))?;
            Ok((i == last.index).then_some(len))
        })?
        .expect("the last chunk is always transformed");
    buf.truncate((last.output.start + last_len as u64) as usize);
    Ok(())
}

/// Runs every chunk of `job` from `input` into `output`, which is resized to the output: the
/// output header, then the chunks, cut to their real length. `output` keeps its allocation
/// between runs.
///
/// # Panics
/// If the job was made without the input's length, or `input` is shorter than its plan.
pub fn run_in_memory(job: &Job, input: &[u8], output: &mut Vec<u8>) -> Result<(), ChunkError> {
    output.resize(job.planned().output_len() as usize, 0);
    let end = run_into_slice(job, input, output)?;
    output.truncate(end as usize);
    Ok(())
}

/// [`run_in_memory`] into a buffer the caller allocated: `output` must be exactly
/// [`ChunkPlan::output_len`] bytes long (the plan's bound on the output) and receives the
/// output header and every chunk, as `run_in_memory` writes them. Returns the output's real
/// length, which is `output.len()` but for a plan whose last chunk drops padding
/// ([`Tail::Unpad`](crate::plan::Tail)); the bytes after it are left as they were. What a
/// caller that owns its memory (a Python `bytes` object, a mapped file) runs into, without a
/// copy.
///
/// ```
/// use paracrypt_core::container::{Encryptor, Key};
/// use paracrypt_core::engine;
/// use paracrypt_core::provider::Provider;
/// use paracrypt_core::Recipe;
///
/// let input = vec![5u8; 100_000];
/// let job = Encryptor::new(Key::generate()).first_job(&mut &[][..], Some(100_000), Provider::default())?;
/// let mut output = vec![0u8; job.plan().unwrap().output_len() as usize];
/// let end = engine::run_into_slice(&job, &input, &mut output)?;
/// assert_eq!(end, output.len() as u64);
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
///
/// # Panics
/// If the job was made without the input's length, `input` is shorter than its plan, or
/// `output` is not [`ChunkPlan::output_len`] bytes long.
pub fn run_into_slice(job: &Job, input: &[u8], output: &mut [u8]) -> Result<u64, ChunkError> {
    let plan = job.planned();
    assert_eq!(
        output.len() as u64,
        plan.output_len(),
        "the output buffer must hold the plan's output"
    );
    let header = job.output_header();
    output[..header.len()].copy_from_slice(header);
    let base = plan.chunk(0).output.start as usize;
    let end = transform_in_slots(job, input, &mut output[base..])?;
    Ok(end.expect("the whole plan includes its last chunk"))
}

/// Runs every chunk of a plan from `input` into its own slot of `out` (the output from the
/// first chunk on) with [`ChunkTransform::transform_to`]: one pass over memory where the
/// transform reads one slice and writes another, the transform's context read from `input`.
/// Returns where the output ends.
fn transform_in_slots(
    job: &Job,
    input: &[u8],
    mut out: &mut [u8],
) -> Result<Option<u64>, ChunkError> {
    let plan = job.planned();
    let layout = plan.layout();
    let context_len = job.context_len();
    let mut slots = Vec::with_capacity(plan.len() as usize);
    for index in 0..plan.len() {
        let chunk = plan.chunk(index);
        let (slot, rest) = std::mem::take(&mut out).split_at_mut(chunk.output_len());
        slots.push((chunk, slot));
        out = rest;
    }
    job.transform().each(slots, |t, (chunk, slot)| {
        let index = chunk.index;
        let from = chunk.input.start as usize;
        let input_len = chunk.input_len();
        let context = if index > 0 {
            &input[from - context_len..from]
        } else {
            &[][..]
        };
        let ctx = ChunkCtx {
            index,
            offset: layout.payload_start(index),
            chunk_size: layout.payload_chunk(),
            is_last: chunk.is_last,
            context,
        };
        let len = t
            .apart(&ctx, &input[from..from + input_len], slot)
            .map_err(|source| failed(slot, ChunkError { index, source }))?;
        Ok(chunk.is_last.then_some(chunk.output.start + len as u64))
    })
}

/// Runs every chunk of `job` from `input` to `output`, positional reads and writes on every pool
/// thread: writes the output header, the chunks, and sets `output`'s length. Returns it.
///
/// # Panics
/// If the job was made without the input's length.
pub fn run_file(job: &Job, input: &dyn Source, output: &File) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let plan = job.planned();
    output
        .write_all_at(job.output_header(), 0)
        .map_err(|e| Error::io("writing the header", e))?;
    let end =
        run(job, 0..plan.len(), input, output)?.expect("the whole plan includes its last chunk");
    output
        .set_len(end)
        .map_err(|e| Error::io("setting the output length", e))?;
    Ok(end)
}

/// Runs every chunk of `job` from `source` into `writer`, which takes bytes only in order (a
/// pipe, a socket, `/dev/null`, a `Write`): writes the output header, then every chunk in
/// order, flushes, and returns the bytes written.
///
/// Every pool thread reads its own tasks with positional reads and transforms them, as
/// [`run`] does; finished tasks reach `writer` in order through a window of `2 × threads`
/// output buffers, written by whichever worker finished the task the output waits for (see
/// the `ordered` module). Memory stays at the window plus one input buffer per thread.
///
/// Only verified output is written: when a chunk fails, every chunk before it is written, none
/// after, and its error is returned (the lowest failing chunk, whatever the thread count). A
/// write that fails ends the run with its error.
///
/// # Panics
/// If the job was made without the input's length.
pub fn run_to_writer(
    job: &Job,
    source: &dyn Source,
    writer: &mut (dyn Write + Send),
) -> Result<u64> {
    let header = job.output_header();
    writer
        .write_all(header)
        .map_err(|e| Error::io("writing the header", e))?;
    let mut written = header.len() as u64;
    run_in_order(job, 0..job.planned().len(), source, &mut |chunks, bytes| {
        writer
            .write_all(bytes)
            .map_err(|e| Error::io(format!("writing chunk {}", chunks.start), e))?;
        written += bytes.len() as u64;
        Ok(())
    })?;
    writer
        .flush()
        .map_err(|e| Error::io("flushing output", e))?;
    Ok(written)
}

/// Runs the chunks `indices` of `job`'s plan from `source` as [`run`] does, but hands their
/// output to `emit` in order, task by task (see [`run_to_writer`]): every chunk below a
/// failing one is emitted, none above. Returns the output's end if the last chunk was among
/// `indices`.
pub(crate) fn run_in_order(
    job: &Job,
    indices: Range<u64>,
    source: &dyn Source,
    emit: &mut ordered::Emit<'_>,
) -> Result<Option<u64>, ChunkError> {
    let plan = job.planned();
    assert!(indices.end <= plan.len(), "chunk range beyond the plan");
    if indices.is_empty() {
        return Ok(None);
    }
    let feed = Feed::new(job, indices, source);
    ordered::run_ordered(&feed, job.transform(), emit)
}

/// The most input bytes one task of the positional and stream drivers carries: a run of
/// consecutive chunks up to this size (always at least one chunk) is read, transformed chunk by
/// chunk and written as one piece of work.
///
/// A format's chunk is not the engine's unit of work. Each task pays a read, a write, a
/// claim and a turn at the output, whatever its size; age's 64 KiB
/// chunks paid them sixteen times as often as the container's default 1 MiB chunks (about
/// 5.6 µs a chunk). Grouped, a task of sixteen 64 KiB chunks costs what one 1 MiB chunk does.
pub const TASK_BYTES: usize = 1 << 20;

/// How many consecutive chunks one task carries in a run of `chunks` chunks of `layout` on
/// `threads` threads: as many as [`TASK_BYTES`] holds (at least one), but few enough that
/// each thread has four tasks when the run has the chunks for it.
pub(crate) fn chunks_per_task(layout: &ChunkLayout, chunks: u64, threads: usize) -> u64 {
    let by_size = (TASK_BYTES / layout.input_chunk).max(1) as u64;
    let by_balance = (chunks / (4 * threads.max(1) as u64)).max(1);
    by_size.min(by_balance)
}

/// Runs the chunks `indices` of `job`'s plan from `source` to `sink` and returns the output
/// length if the last chunk was among them (the exact length, also for
/// [`Tail::Unpad`](crate::plan::Tail)). On failure, the error of the lowest failing chunk, with
/// its index; every chunk below it is written. Headers are the caller's: only chunks are read
/// and written.
///
/// The unit of work is a task: a run of consecutive chunks of up to [`TASK_BYTES`] of input
/// (one chunk when chunks are larger), read with one [`Source::read_chunk`], transformed chunk
/// by chunk from the input buffer into an output buffer ([`ChunkTransform::transform_to`]: one
/// pass over memory) and written with one [`Sink::write_run`]. Parallel work uses each pool
/// thread's page-aligned scratch buffers, which hold one task at a time, so memory stays at one
/// task per thread whatever the input size. When the sink is a file (whose writes serialise in
/// the kernel), every worker reads and transforms and one at a time writes, whichever finds the
/// file free, through a bounded ring of `2 × threads + 1` output buffers. Serial
/// work runs `indices` in order on the calling thread.
///
/// Before any chunk is read, the source learns which input bytes the run reads
/// ([`Source::will_read`]: the chunks' input and the context bytes before the first), so that a
/// source whose reads are slow to start (ranged GETs from object storage) fetches ahead.
///
/// # Panics
/// If the job was made without the input's length, or `indices` go beyond its plan.
pub fn run(
    job: &Job,
    indices: Range<u64>,
    source: &dyn Source,
    sink: &dyn Sink,
) -> Result<Option<u64>, ChunkError> {
    let plan = job.planned();
    assert!(indices.end <= plan.len(), "chunk range beyond the plan");
    if indices.is_empty() {
        return Ok(None);
    }
    let transform = job.transform();
    let threads = transform.workers();
    let feed = Feed::new(job, indices, source);
    let tasks = feed.tasks();
    if transform.is_parallel() && sink.single_writer() && threads > 1 && tasks > 1 {
        return run_with_writer(&feed, transform, sink);
    }
    let (input_len, output_len) = feed.buffer_lens();
    let failed = AtomicU64::new(u64::MAX);
    claim_each(&feed, transform, &failed, |t, task| {
        with_scratch(input_len + output_len, |buf| {
            let (input, output) = buf.split_at_mut(input_len);
            let done = feed.read_and_transform(input, output, task, t, &failed);
            let written = feed.write(sink, &done, output);
            lowest_error(done.result, written)
        })
    })
}

/// Runs the chunks `chunks` of `job`'s plan from `source` into `out`, which is resized to hold
/// their output: the bytes of [`ChunkPlan::output_span`], cut to the real end when the run
/// holds the last chunk. A run of chunks is a part of the output on its own, whoever computes
/// it: what a task of a distributed job (an MPI rank's batch, a Dask task) or one part of a
/// multipart upload makes. The job's output header (before chunk 0) is the caller's. Returns
/// where the output ends (an offset in the whole output) if the last chunk was among `chunks`.
///
/// ```
/// use paracrypt_core::engine::{self, SliceSource};
/// use paracrypt_core::plan::ChunkSize;
/// use paracrypt_core::provider::Provider;
/// use paracrypt_core::raw::{Direction, RawCipher};
/// use paracrypt_core::Recipe;
///
/// let cipher = RawCipher::new("aes-128-ctr".parse()?, &[1; 16], Some(&[2; 16]))?;
/// let recipe = cipher.recipe(Direction::Encrypt, ChunkSize::new(4096)?);
/// let input = vec![9u8; 10_000];
/// let job = recipe.first_job(&mut &[][..], Some(10_000), Provider::default())?;
/// let whole = {
///     let mut whole = Vec::new();
///     engine::run_in_memory(&job, &input, &mut whole)?;
///     whole
/// };
/// // Two parts, computed apart (here one after the other), put side by side.
/// let plan = job.plan().unwrap();
/// let mut parts = Vec::new();
/// for part in 0..2 {
///     let mut out = Vec::new();
///     engine::run_to_buffer(&job, plan.block(part, 2), &SliceSource(&input), &mut out)?;
///     parts.extend_from_slice(&out);
/// }
/// assert_eq!(parts, whole);
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
///
/// # Panics
/// If the job was made without the input's length, or `chunks` is empty or goes beyond its
/// plan.
pub fn run_to_buffer(
    job: &Job,
    chunks: Range<u64>,
    source: &dyn Source,
    out: &mut Vec<u8>,
) -> Result<Option<u64>, ChunkError> {
    let plan = job.planned();
    let span = plan.output_span(chunks.clone());
    out.clear();
    out.resize((span.end - span.start) as usize, 0);
    let end = {
        let sink = SliceSink::new(plan, chunks.clone(), out);
        run(job, chunks, source, &sink)?
    };
    if let Some(end) = end {
        out.truncate((end - span.start) as usize);
    }
    Ok(end)
}

/// Feeds the tasks of a run of a plan's chunks from a source.
struct Feed<'a> {
    plan: &'a ChunkPlan,
    source: &'a dyn Source,
    context_len: usize,
    /// Chunks per task (the last task of the run may have fewer).
    per_task: u64,
    /// The run's chunks.
    indices: Range<u64>,
}

/// A task done, or done up to a failure.
pub(crate) struct Done {
    /// The chunks transformed (all the task's, or those before the one that failed).
    pub(crate) chunks: Range<u64>,
    /// Their output length, in the output buffer.
    pub(crate) len: usize,
    /// For the last chunk of the plan, where the output ends: `Ok(Some(end))`; the failure of
    /// the task's chunk that failed.
    pub(crate) result: Result<Option<u64>, ChunkError>,
}

/// Transforms the chunks `chunks` of `plan`, already read into `input` (from `input_start`,
/// with the `context_len` bytes before the first chunk when it is not chunk 0), each into its
/// place in `output`, in order, and shows each chunk done to `each` (its index, its input, its
/// output); stops at the first failure (wiping that chunk's output slot and lowering `failed`
/// to it) or before a chunk above `failed` (which another task already reported). The one
/// per-task chunk loop of the engine's positional drivers and of a tree's tasks
/// ([`crate::tree`], which hash each chunk's plaintext in `each` while it is in cache).
#[allow(clippy::too_many_arguments)]
pub(crate) fn transform_run(
    plan: &ChunkPlan,
    context_len: usize,
    chunks: Range<u64>,
    input_start: u64,
    input: &[u8],
    output: &mut [u8],
    transform: &mut Apply<'_>,
    failed: &AtomicU64,
    mut each: impl FnMut(u64, &[u8], &[u8]),
) -> Done {
    let first = plan.chunk(chunks.start);
    let mut done = Done {
        chunks: chunks.start..chunks.start,
        len: 0,
        result: Ok(None),
    };
    let layout = plan.layout();
    for index in chunks {
        if index > failed.load(Ordering::Relaxed) {
            break;
        }
        let chunk = plan.chunk(index);
        let from = (chunk.input.start - input_start) as usize;
        let context = if index > 0 {
            &input[from - context_len..from]
        } else {
            &[][..]
        };
        let ctx = ChunkCtx {
            index,
            offset: layout.payload_start(index),
            chunk_size: layout.payload_chunk(),
            is_last: chunk.is_last,
            context,
        };
        let at = (chunk.output.start - first.output.start) as usize;
        debug_assert_eq!(
            at, done.len,
            "chunks before the last have their full output"
        );
        let chunk_input = &input[from..from + chunk.input_len()];
        let slot = &mut output[at..at + chunk.output_len()];
        match transform.apart(&ctx, chunk_input, slot) {
            Ok(len) => {
                each(index, chunk_input, &slot[..len]);
                done.len = at + len;
                done.chunks.end = index + 1;
                if chunk.is_last {
                    done.result = Ok(Some(chunk.output.start + len as u64));
                }
            }
            Err(source) => {
                wipe(slot);
                failed.fetch_min(index, Ordering::Relaxed);
                done.result = Err(ChunkError { index, source });
                break;
            }
        }
    }
    done
}

impl<'a> Feed<'a> {
    /// The tasks of the chunks `indices` of `job`'s plan, read from `source`, which is told
    /// now what the run will read ([`Source::will_read`]).
    fn new(job: &'a Job, indices: Range<u64>, source: &'a dyn Source) -> Self {
        let plan = job.planned();
        let context = if indices.start > 0 {
            job.context_len() as u64
        } else {
            0
        };
        let first = plan.chunk(indices.start).input.start - context;
        source.will_read(first..plan.chunk(indices.end - 1).input.end);
        let workers = job.transform().workers();
        Feed {
            plan,
            source,
            context_len: job.context_len(),
            per_task: chunks_per_task(plan.layout(), indices.end - indices.start, workers),
            indices,
        }
    }

    /// How many tasks the run has.
    fn tasks(&self) -> u64 {
        (self.indices.end - self.indices.start).div_ceil(self.per_task)
    }

    /// The chunks of task `task`.
    fn task(&self, task: u64) -> Range<u64> {
        let start = self.indices.start + task * self.per_task;
        start..(start + self.per_task).min(self.indices.end)
    }

    /// The input and output buffer lengths a task needs at most: its chunks' input with the
    /// context before them, and their output with the room the plan's last chunk may need.
    fn buffer_lens(&self) -> (usize, usize) {
        let layout = self.plan.layout();
        let chunks = (self.per_task as usize).min((self.indices.end - self.indices.start) as usize);
        let input = self.context_len + (chunks - 1) * layout.input_chunk + self.plan.max_buffer();
        let output = (chunks - 1) * layout.output_chunk + self.plan.max_buffer();
        (input, output)
    }

    /// Reads task `task`'s chunks (and the context before the first) into `input` and
    /// transforms each one into its place in `output`, in order, stopping at the first
    /// failure (or at a chunk above `failed`, which another task already reported).
    fn read_and_transform(
        &self,
        input: &mut [u8],
        output: &mut [u8],
        task: u64,
        transform: &mut Apply<'_>,
        failed: &AtomicU64,
    ) -> Done {
        let chunks = self.task(task);
        let plan = self.plan;
        let first = plan.chunk(chunks.start);
        let last = plan.chunk(chunks.end - 1);
        let ctx_len = if chunks.start > 0 {
            self.context_len
        } else {
            0
        };
        let input_start = first.input.start - ctx_len as u64;
        let input_len = (last.input.end - input_start) as usize;
        if let Err(source) =
            self.source
                .read_chunk(chunks.start, input_start, &mut input[..input_len])
        {
            return Done {
                chunks: chunks.start..chunks.start,
                len: 0,
                result: Err(ChunkError {
                    index: chunks.start,
                    source,
                }),
            };
        }
        transform_run(
            plan,
            self.context_len,
            chunks,
            input_start,
            &input[..input_len],
            output,
            transform,
            failed,
            |_, _, _| {},
        )
    }

    /// Writes what `done` transformed (`output[..done.len]`) to `sink`; the error names the
    /// first chunk written.
    fn write(
        &self,
        sink: &dyn Sink,
        done: &Done,
        output: &[u8],
    ) -> Result<Option<u64>, ChunkError> {
        if done.chunks.is_empty() {
            return Ok(None);
        }
        sink.write_run(self.plan, done.chunks.clone(), &output[..done.len])
            .map(|()| None)
            .map_err(|source| ChunkError {
                index: done.chunks.start,
                source,
            })
    }
}

/// Runs `f` on the tasks `0..tasks` from every worker of `transform` (every pool thread for
/// parallel work, the calling thread for serial work, which thus runs in order). Workers claim
/// tasks in increasing order from a shared counter (one atomic operation per task, no lock), so
/// reads and writes stay nearly sequential — kernel readahead and writeback see one stream, not
/// one per thread — and a slow task never holds up a pre-split share of the work.
///
/// The lowest failing chunk is the one reported, whatever the thread count: once chunk `i`
/// fails (`f` lowers `failed` to it), no task whose chunks are all above `i` is started, a task
/// stops before any chunk above `i`, and every chunk below `i` was claimed earlier and runs to
/// completion.
fn claim_each<T: Send>(
    feed: &Feed<'_>,
    transform: &Transform,
    failed: &AtomicU64,
    f: impl Fn(&mut Apply<'_>, u64) -> Result<Option<T>, ChunkError> + Sync,
) -> Result<Option<T>, ChunkError> {
    let (tasks, next) = (feed.tasks(), AtomicU64::new(0));
    transform.each(0..transform.workers(), |t, _| {
        let mut result = Ok(None);
        loop {
            let task = next.fetch_add(1, Ordering::Relaxed);
            if task >= tasks || feed.task(task).start > failed.load(Ordering::Relaxed) {
                return result;
            }
            let this = f(t, task);
            if let Err(e) = &this {
                failed.fetch_min(e.index, Ordering::Relaxed);
            }
            result = lowest_error(result, this);
        }
    })
}

/// A transformed task on its way to the output.
struct Outgoing {
    buf: AlignedBuf,
    done: Done,
}

/// Parallel work into a sink whose writes serialise (a file: Linux takes the inode's lock for
/// every buffered write, and writers that collide on it spin): every worker reads and
/// transforms, and one worker at a time writes, whichever finds nobody writing when it queues
/// a task. It writes every task queued until the queue is empty (tasks queued meanwhile by
/// the others included), then goes back to transforming. No thread is set aside to write
/// (a writer thread was one more thread than cores, and the hand-off to it a wake-up per
/// task), no worker spins on the file's lock, and a task is written as soon as the file is
/// free, in any order, so a slow worker holds up nobody. Output buffers circulate, at most
/// `2 × threads + 1` of them (made as needed), so memory stays bounded; a worker with no free
/// buffer writes what is queued, or waits for the one writing.
fn run_with_writer(
    feed: &Feed<'_>,
    transform: &Transform,
    sink: &dyn Sink,
) -> Result<Option<u64>, ChunkError> {
    let (input_len, output_len) = feed.buffer_lens();
    let buffers = 2 * transform.workers() + 1;
    let (full_tx, full_rx) = crossbeam_channel::bounded::<Outgoing>(buffers);
    let (free_tx, free_rx) = crossbeam_channel::bounded::<AlignedBuf>(buffers);
    // Buffers are made on demand, up to `buffers`: a short run, or one whose writes keep up,
    // never pays for (and faults in) buffers it does not need.
    let made = AtomicUsize::new(0);
    let writing = std::sync::atomic::AtomicBool::new(false);
    let failed = AtomicU64::new(u64::MAX);
    // Writes every queued task if no other worker is writing; the one that is sees every task
    // queued before it stops. After a failed write nothing more is written, but buffers keep
    // coming back so that no worker waits for one forever.
    let write_queued = || -> Result<Option<u64>, ChunkError> {
        let mut result = Ok(None);
        loop {
            if writing.swap(true, Ordering::AcqRel) {
                return result;
            }
            while let Ok(out) = full_rx.try_recv() {
                if failed.load(Ordering::Relaxed) >= out.done.chunks.start {
                    let written = feed.write(sink, &out.done, &out.buf);
                    if let Err(e) = &written {
                        failed.fetch_min(e.index, Ordering::Relaxed);
                    }
                    result = lowest_error(result, written);
                }
                let _ = free_tx.send(out.buf);
            }
            writing.store(false, Ordering::SeqCst);
            // A task queued after the last look and before the flag fell found the flag up
            // and left its task to this writer: look once more.
            if full_rx.is_empty() {
                return result;
            }
        }
    };
    claim_each(feed, transform, &failed, |t, task| {
        let mut written = Ok(None);
        let mut buf = match free_rx.try_recv() {
            Ok(buf) => buf,
            Err(_) if made.fetch_add(1, Ordering::Relaxed) < buffers => AlignedBuf::new(output_len),
            Err(_) => {
                // Every buffer is queued or being written (more than the other workers hold):
                // write them, or else the worker writing now frees one.
                written = write_queued();
                free_rx.recv().expect("this worker holds a sender")
            }
        };
        let mut done = with_scratch(input_len, |input| {
            feed.read_and_transform(input, &mut buf, task, t, &failed)
        });
        let result = std::mem::replace(&mut done.result, Ok(None));
        full_tx
            .send(Outgoing { buf, done })
            .expect("the queue holds every buffer");
        lowest_error(lowest_error(result, written), write_queued())
    })
}
