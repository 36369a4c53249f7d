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
//! - [`process_in_place`] and [`run_in_memory`]: buffers in memory;
//! - [`run`]: any range of chunks from a positional [`Source`] to a [`Sink`] (files with
//!   `read_at`/`write_at`, or memory), each worker owning one page-aligned buffer, so reading,
//!   transforming and writing of different chunks overlap across threads and at most one chunk
//!   per thread is in memory; a failure names its chunk ([`ChunkError`]);
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

pub(crate) mod io;
mod job;
mod range;
pub(crate) mod stream;

use std::fs::File;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::buffer::{AlignedBuf, with_scratch};
use crate::error::{ChunkError, Error, Result};
use crate::plan::ChunkPlan;
pub use io::{Sink, SliceSink, SliceSource, Source};
use job::{Apply, lowest_error};
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
                .map_err(|source| ChunkError { index: i, source })?;
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
    let plan = job.planned();
    output.resize(plan.output_len() as usize, 0);
    let header = job.output_header();
    output[..header.len()].copy_from_slice(header);
    let base = plan.chunk(0).output.start as usize;
    let end = transform_in_slots(job, input, &mut output[base..])?;
    output.truncate(end.expect("the whole plan includes its last chunk") as usize);
    Ok(())
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
            .map_err(|source| ChunkError { index, source })?;
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

/// A writer thread pays for itself (fresh buffers, a thread, a hand-off per chunk) only when
/// each pool thread has several chunks to transform; below this many, threads write their own.
const WRITER_MIN_CHUNKS_PER_THREAD: u64 = 4;

/// Runs the chunks `indices` of `job`'s plan from `source` to `sink` and returns the output
/// length if the last chunk was among them (the exact length, also for
/// [`Tail::Unpad`](crate::plan::Tail)). On failure, the error of the lowest failing chunk, with
/// its index. Headers are the caller's: only chunks are read and written.
///
/// Parallel work uses each pool thread's page-aligned scratch buffer, which
/// holds one chunk at a time (sized by [`ChunkPlan::max_buffer`]: never more than the input
/// needs): the thread reads the chunk, transforms it and writes it, so memory
/// stays at one chunk per thread whatever the input size. When the sink is a file (whose
/// writes serialise in the kernel) and there are at least four chunks per thread, the pool reads
/// and transforms and one writer thread writes, through a bounded ring of `2 × threads + 1`
/// buffers. Serial work runs `indices` in order on the calling thread.
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
    if !indices.is_empty() {
        let context = if indices.start > 0 {
            job.context_len() as u64
        } else {
            0
        };
        let first = plan.chunk(indices.start).input.start - context;
        source.will_read(first..plan.chunk(indices.end - 1).input.end);
    }
    let feed = Feed {
        plan,
        source,
        context_len: job.context_len(),
    };
    let buffer_len = plan.max_buffer();
    let transform = job.transform();
    if transform.is_parallel()
        && sink.single_writer()
        && rayon::current_num_threads() > 1
        && indices.end - indices.start
            >= WRITER_MIN_CHUNKS_PER_THREAD * rayon::current_num_threads() as u64
    {
        return run_with_writer(&feed, transform, indices, buffer_len, sink);
    }
    let failed = AtomicU64::new(u64::MAX);
    claim_each(transform, indices, &failed, |t, index| {
        with_scratch(buffer_len, |buf| {
            let done = feed.read_and_transform(buf, index, t)?;
            sink.write_chunk(index, done.output_start, &buf[..done.len])?;
            Ok(done.end)
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

/// Feeds a plan's chunks from a source, each with its context.
struct Feed<'a> {
    plan: &'a ChunkPlan,
    source: &'a dyn Source,
    context_len: usize,
}

/// A chunk transformed in its buffer.
struct Transformed {
    /// Its output length.
    len: usize,
    /// Where its output goes.
    output_start: u64,
    /// For the last chunk, where the output ends.
    end: Option<u64>,
}

impl Feed<'_> {
    /// Reads chunk `index` (and its context) into `buf` and transforms it there.
    fn read_and_transform(
        &self,
        buf: &mut [u8],
        index: u64,
        transform: &mut Apply<'_>,
    ) -> Result<Transformed> {
        let chunk = self.plan.chunk(index);
        let input_len = chunk.input_len();
        self.source
            .read_chunk(index, chunk.input.start, &mut buf[..input_len])?;
        let mut context = [0u8; MAX_CONTEXT];
        let ctx_len = self.context_len;
        let context = if index > 0 && ctx_len > 0 {
            let at = chunk.input.start - ctx_len as u64;
            self.source.read_chunk(index, at, &mut context[..ctx_len])?;
            &context[..ctx_len]
        } else {
            &[][..]
        };
        let layout = self.plan.layout();
        let ctx = ChunkCtx {
            index,
            offset: layout.payload_start(index),
            chunk_size: layout.payload_chunk(),
            is_last: chunk.is_last,
            context,
        };
        let len = transform.in_place(&ctx, buf, input_len)?;
        Ok(Transformed {
            len,
            output_start: chunk.output.start,
            end: chunk.is_last.then_some(chunk.output.start + len as u64),
        })
    }
}

/// Runs `f` on the chunks of `indices` from every worker of `transform` (every pool thread for
/// parallel work, the calling thread for serial work, which thus runs in order). Workers claim
/// indices in
/// increasing order from a shared counter (one atomic operation per chunk, no lock), so reads
/// and writes stay nearly sequential — kernel readahead and writeback see one stream, not one
/// per thread — and a slow chunk never holds up a pre-split share of the work.
///
/// The lowest failing chunk is the one reported, whatever the thread count: once chunk `i`
/// fails, no chunk above `i` is started, and every chunk below it was claimed earlier and runs
/// to completion.
fn claim_each<T: Send>(
    transform: &Transform,
    indices: Range<u64>,
    failed: &AtomicU64,
    f: impl Fn(&mut Apply<'_>, u64) -> Result<Option<T>> + Sync,
) -> Result<Option<T>, ChunkError> {
    let next = AtomicU64::new(indices.start);
    transform.each(0..transform.workers(), |t, _| {
        let mut result = Ok(None);
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= indices.end || index > failed.load(Ordering::Relaxed) {
                return result;
            }
            let this = f(t, index).map_err(|source| {
                failed.fetch_min(index, Ordering::Relaxed);
                ChunkError { index, source }
            });
            result = lowest_error(result, this);
        }
    })
}

/// A transformed chunk on its way to the writer.
struct Outgoing {
    index: u64,
    buf: AlignedBuf,
    chunk: Transformed,
}

/// Parallel work into a sink whose writes serialise (a file): the pool reads and transforms,
/// one writer thread (outside the pool) writes. Nobody spins on the file's lock, and only one
/// thread takes fresh page-cache pages. Buffers circulate between the two sides, at most
/// `2 × threads + 1` of them, so memory stays bounded; a transformed chunk waits for the writer
/// only when the writer is the bottleneck anyway.
fn run_with_writer(
    feed: &Feed<'_>,
    transform: &Transform,
    indices: Range<u64>,
    buffer_len: usize,
    sink: &dyn Sink,
) -> Result<Option<u64>, ChunkError> {
    let buffers = 2 * rayon::current_num_threads() + 1;
    let (full_tx, full_rx) = crossbeam_channel::bounded::<Outgoing>(buffers);
    let (free_tx, free_rx) = crossbeam_channel::bounded::<AlignedBuf>(buffers);
    // Buffers are made on demand, up to `buffers`: a short run, or one whose writer keeps up,
    // never pays for (and faults in) buffers it does not need.
    let made = AtomicUsize::new(0);
    let take = || match free_rx.try_recv() {
        Ok(buf) => buf,
        Err(_) if made.fetch_add(1, Ordering::Relaxed) < buffers => AlignedBuf::new(buffer_len),
        Err(_) => free_rx.recv().expect("the writer returns every buffer"),
    };
    let failed = AtomicU64::new(u64::MAX);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut result: Result<Option<u64>, ChunkError> = Ok(None);
            // Drain until every sender is gone, also after a failure, so that no transforming
            // thread ever waits for a buffer that will not come back.
            for out in full_rx {
                if let Ok(end) = &mut result {
                    let data = &out.buf[..out.chunk.len];
                    match sink.write_chunk(out.index, out.chunk.output_start, data) {
                        Ok(()) => *end = end.or(out.chunk.end),
                        Err(source) => {
                            failed.fetch_min(out.index, Ordering::Relaxed);
                            result = Err(ChunkError {
                                index: out.index,
                                source,
                            });
                        }
                    }
                }
                let _ = free_tx.send(out.buf);
            }
            result
        });
        let transformed = claim_each(transform, indices, &failed, |t, index| {
            let mut buf = take();
            match feed.read_and_transform(&mut buf, index, t) {
                Ok(chunk) => {
                    full_tx
                        .send(Outgoing { index, buf, chunk })
                        .expect("the writer runs until the senders are gone");
                    Ok(None)
                }
                Err(e) => {
                    let _ = free_tx.send(buf);
                    Err(e)
                }
            }
        });
        drop(full_tx);
        let written = writer.join().expect("the writer thread does not panic");
        lowest_error(transformed, written)
    })
}
