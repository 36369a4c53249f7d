//! The chunk engine: runs a per-chunk transform over a [`ChunkPlan`] in the caller's Rayon pool.
//!
//! A transform sees one chunk at a time, in a buffer that holds the chunk's input and has room
//! for its output. A [`ChunkTransform`] is a pure function of the chunk (its index, its input
//! and a few bytes of input just before it, which CBC decryption needs), so chunks may run in any
//! order on any thread and the output is the same at any thread count. A [`SerialTransform`]
//! (CBC encryption, RC4) carries state from chunk to chunk and runs in order on one thread.
//!
//! Three drivers consume the same transforms:
//! - [`process_in_place`]: a buffer in memory, chunk slices transformed where they are;
//! - [`run`]: positional [`Source`] → [`Sink`] (files with `read_at`/`write_at`, or memory),
//!   each worker owning one page-aligned buffer, so reading, transforming and writing of
//!   different chunks overlap across threads and at most one chunk per thread is in memory;
//! - [`stream::process_stream`]: `Read` → `Write` through a bounded, ordered window.
//!
//! None of them builds a thread pool: they run in whatever pool the caller `install`s (the
//! global one otherwise), and a one-thread pool runs the very same code serially.

pub mod io;
pub mod stream;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::buffer::{AlignedBuf, with_scratch};
use crate::error::{Error, Result};
use crate::plan::ChunkPlan;
pub use io::{Sink, SliceSink, SliceSource, Source};

/// The most bytes of preceding input a transform may ask for.
pub const MAX_CONTEXT: usize = 64;

/// What a transform knows about the chunk in front of it.
#[derive(Clone, Copy, Debug)]
pub struct ChunkCtx<'a> {
    /// The chunk's index in the plan.
    pub index: u64,
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
}

/// A transform that carries state from one chunk to the next and must see chunks in order.
pub trait SerialTransform: Send {
    /// As [`ChunkTransform::transform`]; called for chunks 0, 1, 2, … in order.
    fn transform(
        &mut self,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        input_len: usize,
    ) -> Result<usize>;
}

/// A transform together with how it may be scheduled.
pub enum Work<'a> {
    /// Chunks are independent and run in parallel.
    Parallel(&'a dyn ChunkTransform),
    /// Chunks run in order on one thread (CBC encryption, RC4).
    Serial(&'a mut dyn SerialTransform),
}

impl Work<'_> {
    /// Whether the work runs on more than one thread when the pool has them.
    pub fn is_parallel(&self) -> bool {
        matches!(self, Work::Parallel(_))
    }

    fn context_len(&self) -> usize {
        match self {
            Work::Parallel(t) => t.context_len(),
            Work::Serial(_) => 0,
        }
    }
}

impl std::fmt::Debug for Work<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_parallel() {
            "Work::Parallel"
        } else {
            "Work::Serial"
        })
    }
}

/// Transforms `buf` in place chunk by chunk and returns the output length.
///
/// The plan's layout must keep every chunk where it is (same offsets and chunk sizes in input
/// and output), and `buf` must be at least [`ChunkPlan::output_len`] long, with the input in
/// its first [`ChunkPlan::input_len`] bytes.
///
/// # Panics
/// If the layout moves chunks or `buf` is too short.
pub fn process_in_place(plan: &ChunkPlan, work: Work<'_>, buf: &mut [u8]) -> Result<u64> {
    let layout = plan.layout();
    assert!(
        layout.input_offset == layout.output_offset && layout.input_chunk == layout.output_chunk,
        "process_in_place needs a layout that keeps chunks in place"
    );
    assert!(
        buf.len() as u64 >= plan.output_len(),
        "buffer shorter than the plan's output"
    );
    let offset = layout.output_offset as usize;
    let buf = &mut buf[offset..plan.output_len() as usize];
    let full = layout.input_chunk;
    let last = plan.chunk(plan.len() - 1);

    // Context bytes are input: copy them out before any chunk overwrites its input.
    let ctx_len = work.context_len();
    let contexts: Vec<u8> = (1..plan.len())
        .flat_map(|i| {
            let at = i as usize * full;
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
        is_last: index == last.index,
        context: context(index),
    };

    let (body, tail) = buf.split_at_mut((last.output.start - layout.output_offset) as usize);
    let last_len = match work {
        Work::Parallel(t) => body
            .par_chunks_mut(full)
            .chain(rayon::iter::once(tail))
            .enumerate()
            .map(|(i, chunk)| {
                let i = i as u64;
                let len = t
                    .transform(&ctx(i), chunk, input_len(i))
                    .map_err(|e| (i, e))?;
                Ok((i == last.index).then_some(len))
            })
            .reduce(|| Ok(None), lowest_error)
            .map_err(|(_, e)| e)?
            .expect("the last chunk is always transformed"),
        Work::Serial(t) => {
            let mut len = 0;
            for (i, chunk) in body
                .chunks_mut(full)
                .chain(std::iter::once(tail))
                .enumerate()
            {
                len = t.transform(&ctx(i as u64), chunk, input_len(i as u64))?;
            }
            len
        }
    };
    Ok(last.output.start + last_len as u64)
}

/// A writer thread pays for itself (fresh buffers, a thread, a hand-off per chunk) only when
/// each pool thread has several chunks to transform; below this many, threads write their own.
const WRITER_MIN_CHUNKS_PER_THREAD: u64 = 4;

/// Runs the chunks `indices` of `plan` from `source` to `sink` and returns the output length if
/// the last chunk was among them (the exact length, also for [`Tail::Unpad`](crate::plan::Tail)).
///
/// Parallel work uses each pool thread's page-aligned scratch buffer ([`with_scratch`]), which
/// holds one chunk at a time (sized by [`ChunkPlan::max_buffer`]: never more than the input
/// needs): the thread reads the chunk, transforms it and writes it, so memory
/// stays at one chunk per thread whatever the input size. When the sink is a file (whose
/// writes serialise in the kernel) and there are at least four chunks per thread, the pool reads
/// and transforms and one writer thread writes, through a bounded ring of `2 × threads + 1`
/// buffers. Serial work runs `indices` in order on
/// the calling thread.
pub fn run(
    plan: &ChunkPlan,
    work: Work<'_>,
    indices: Range<u64>,
    source: &dyn Source,
    sink: &dyn Sink,
) -> Result<Option<u64>> {
    assert!(indices.end <= plan.len(), "chunk range beyond the plan");
    let buffer_len = plan.max_buffer();
    let ctx_len = work.context_len();
    // Reads and transforms chunk `index` in `buf`: its output length and, for the last chunk,
    // where the output ends.
    let one =
        |buf: &mut [u8], index: u64, mut t: TransformRef<'_, '_>| -> Result<(usize, Option<u64>)> {
            let chunk = plan.chunk(index);
            let input_len = chunk.input_len();
            source.read_chunk(index, chunk.input.start, &mut buf[..input_len])?;
            let mut context = [0u8; MAX_CONTEXT];
            let context = if index > 0 && ctx_len > 0 {
                let at = chunk.input.start - ctx_len as u64;
                source.read_chunk(index, at, &mut context[..ctx_len])?;
                &context[..ctx_len]
            } else {
                &[][..]
            };
            let ctx = ChunkCtx {
                index,
                is_last: chunk.is_last,
                context,
            };
            let out_len = t.transform(&ctx, buf, input_len)?;
            Ok((
                out_len,
                chunk.is_last.then_some(chunk.output.start + out_len as u64),
            ))
        };
    match work {
        Work::Parallel(t)
            if sink.single_writer()
                && rayon::current_num_threads() > 1
                && indices.end - indices.start
                    >= WRITER_MIN_CHUNKS_PER_THREAD * rayon::current_num_threads() as u64 =>
        {
            run_with_writer(plan, t, indices, buffer_len, &one, sink)
        }
        Work::Parallel(t) => {
            let failed = AtomicU64::new(u64::MAX);
            claim_each(indices, &failed, |index| {
                with_scratch(buffer_len, |buf| {
                    let (out_len, end) = one(buf, index, TransformRef::Parallel(t))?;
                    sink.write_chunk(index, plan.chunk(index).output.start, &buf[..out_len])?;
                    Ok(end)
                })
            })
            .map_err(|(_, e)| e)
        }
        Work::Serial(t) => with_scratch(buffer_len, |buf| {
            let mut end = None;
            for index in indices {
                let (out_len, chunk_end) = one(buf, index, TransformRef::Serial(&mut *t))?;
                sink.write_chunk(index, plan.chunk(index).output.start, &buf[..out_len])?;
                end = end.or(chunk_end);
            }
            Ok(end)
        }),
    }
}

/// Runs `f` on the chunks of `indices` from every pool thread. Threads claim indices in
/// increasing order from a shared counter (one atomic operation per chunk, no lock), so reads
/// and writes stay nearly sequential — kernel readahead and writeback see one stream, not one
/// per thread — and a slow chunk never holds up a pre-split share of the work.
///
/// The lowest failing chunk is the one reported, whatever the thread count: once chunk `i`
/// fails, no chunk above `i` is started, and every chunk below it was claimed earlier and runs
/// to completion.
fn claim_each<T: Send>(
    indices: Range<u64>,
    failed: &AtomicU64,
    f: impl Fn(u64) -> Result<Option<T>> + Sync,
) -> std::result::Result<Option<T>, (u64, Error)> {
    let next = AtomicU64::new(indices.start);
    (0..rayon::current_num_threads())
        .into_par_iter()
        .map(|_| {
            let mut result = Ok(None);
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= indices.end || index > failed.load(Ordering::Relaxed) {
                    return result;
                }
                let this = f(index).map_err(|e| {
                    failed.fetch_min(index, Ordering::Relaxed);
                    (index, e)
                });
                result = lowest_error(result, this);
            }
        })
        .reduce(|| Ok(None), lowest_error)
}

/// Reads chunk `index` into a buffer and transforms it there: its output length and, for the
/// last chunk, where the output ends.
type ReadTransform<'a> =
    dyn Fn(&mut [u8], u64, TransformRef<'_, '_>) -> Result<(usize, Option<u64>)> + Sync + 'a;

/// A transformed chunk on its way to the writer.
struct Written {
    index: u64,
    buf: AlignedBuf,
    len: usize,
    end: Option<u64>,
}

/// Parallel work into a sink whose writes serialise (a file): the pool reads and transforms,
/// one writer thread (outside the pool) writes. Nobody spins on the file's lock, and only one
/// thread takes fresh page-cache pages. Buffers circulate between the two sides, at most
/// `2 × threads + 1` of them, so memory stays bounded; a transformed chunk waits for the writer
/// only when the writer is the bottleneck anyway.
fn run_with_writer(
    plan: &ChunkPlan,
    t: &dyn ChunkTransform,
    indices: Range<u64>,
    buffer_len: usize,
    one: &ReadTransform<'_>,
    sink: &dyn Sink,
) -> Result<Option<u64>> {
    let buffers = 2 * rayon::current_num_threads() + 1;
    let (full_tx, full_rx) = crossbeam_channel::bounded::<Written>(buffers);
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
            let mut result: std::result::Result<Option<u64>, (u64, Error)> = Ok(None);
            // Drain until every sender is gone, also after a failure, so that no transforming
            // thread ever waits for a buffer that will not come back.
            for done in full_rx {
                if let Ok(end) = &mut result {
                    let offset = plan.chunk(done.index).output.start;
                    match sink.write_chunk(done.index, offset, &done.buf[..done.len]) {
                        Ok(()) => *end = end.or(done.end),
                        Err(e) => {
                            failed.fetch_min(done.index, Ordering::Relaxed);
                            result = Err((done.index, e));
                        }
                    }
                }
                let _ = free_tx.send(done.buf);
            }
            result
        });
        let transformed = claim_each(indices, &failed, |index| {
            let mut buf = take();
            match one(&mut buf, index, TransformRef::Parallel(t)) {
                Ok((len, end)) => {
                    let done = Written {
                        index,
                        buf,
                        len,
                        end,
                    };
                    full_tx
                        .send(done)
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
        lowest_error(transformed, written).map_err(|(_, e)| e)
    })
}

/// Combines two chunk results: the error of the lowest chunk wins, else the last chunk's end.
fn lowest_error<T>(
    a: std::result::Result<Option<T>, (u64, Error)>,
    b: std::result::Result<Option<T>, (u64, Error)>,
) -> std::result::Result<Option<T>, (u64, Error)> {
    match (a, b) {
        (Err(x), Err(y)) => Err(if x.0 <= y.0 { x } else { y }),
        (Err(x), Ok(_)) | (Ok(_), Err(x)) => Err(x),
        (Ok(x), Ok(y)) => Ok(x.or(y)),
    }
}

enum TransformRef<'a, 'b> {
    Parallel(&'a dyn ChunkTransform),
    Serial(&'a mut (dyn SerialTransform + 'b)),
}

impl TransformRef<'_, '_> {
    fn transform(&mut self, ctx: &ChunkCtx<'_>, buf: &mut [u8], input_len: usize) -> Result<usize> {
        match self {
            TransformRef::Parallel(t) => t.transform(ctx, buf, input_len),
            TransformRef::Serial(t) => t.transform(ctx, buf, input_len),
        }
    }
}
