//! Ordered streaming: `Read` → `Write` through a bounded window of chunks.
//!
//! A parallel job streams on every pool thread: each worker in turn reads the next run of
//! chunks from the reader, transforms it while the others read and transform theirs, and
//! hands it to the output through the ordered window of the `ordered` module, which writes
//! tasks strictly in order as they are ready. A serial job streams in waves of `window`
//! chunks: while the pool transforms one wave, the calling thread writes the wave before it
//! and reads the next into the buffers that wave released. Either way reading, transforming
//! and writing overlap, memory stays bounded whatever the input size, and when a chunk fails
//! the chunks before it are written and its error is returned.

use std::io::{ErrorKind, Read, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::job::lowest_error;
use super::ordered::{Ready, Window};
use super::{Apply, ChunkCtx, Job, MAX_CONTEXT, TASK_BYTES};
use crate::buffer::AlignedBuf;
use crate::error::{ChunkError, Error, Result};
use crate::plan::ChunkLayout;

/// The first buffer a stream's chunk gets (64 KiB); it doubles as data arrives.
pub(crate) const FIRST_BUFFER: usize = 64 * 1024;

/// The window used when the caller passes 0: one task's worth of chunks ([`TASK_BYTES`] of
/// input, at least one chunk) per pool thread per wave. A wave costs a hand-off to the pool
/// and back whatever its size; one chunk per thread per wave paid it for every 64 KiB of an age
/// file. The pool splits a wave among its threads as it sees fit, so a thread runs its share of
/// the wave's chunks in one piece.
pub(crate) fn default_window(layout: &ChunkLayout) -> usize {
    rayon::current_num_threads() * (TASK_BYTES / layout.input_chunk).max(1)
}

/// One chunk in flight: its buffer, what it holds and, once transformed, its result.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Holds the input, then the output.
    pub buf: AlignedBuf,
    /// The chunk's index.
    pub index: u64,
    /// Where the chunk's payload starts (see [`ChunkCtx::offset`]).
    pub offset: u64,
    /// The layout's chunk size (see [`ChunkCtx::chunk_size`]).
    pub chunk_size: usize,
    /// Input bytes in `buf`.
    pub input_len: usize,
    /// Whether this is the last chunk of the stream.
    pub is_last: bool,
    context: [u8; MAX_CONTEXT],
    context_len: usize,
    /// The output length, once transformed.
    pub output_len: Option<usize>,
}

impl Slot {
    /// An empty slot with a buffer of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Slot {
            buf: AlignedBuf::new(capacity),
            index: 0,
            offset: 0,
            chunk_size: 0,
            input_len: 0,
            is_last: false,
            context: [0; MAX_CONTEXT],
            context_len: 0,
            output_len: None,
        }
    }

    /// Makes the slot chunk `index` of `layout`, empty and not yet transformed.
    pub fn reset(&mut self, layout: &ChunkLayout, index: u64) {
        self.index = index;
        self.offset = layout.payload_start(index);
        self.chunk_size = layout.payload_chunk();
        self.input_len = 0;
        self.is_last = false;
        self.context_len = 0;
        self.output_len = None;
    }

    fn transform_with(&mut self, transform: &mut Apply<'_>) -> Result<(), ChunkError> {
        let ctx = ChunkCtx {
            index: self.index,
            offset: self.offset,
            chunk_size: self.chunk_size,
            is_last: self.is_last,
            context: &self.context[..self.context_len],
        };
        let len = transform
            .in_place(&ctx, &mut self.buf[..], self.input_len)
            .map_err(|source| {
                super::wipe(&mut self.buf[..]);
                ChunkError {
                    index: self.index,
                    source,
                }
            })?;
        self.output_len = Some(len);
        Ok(())
    }

    /// Sets the input bytes just before this chunk (for transforms that need context).
    pub fn set_context(&mut self, context: &[u8]) {
        self.context[..context.len()].copy_from_slice(context);
        self.context_len = context.len();
    }
}

/// Transforms every slot of a wave: in parallel for parallel work, in order for serial work
/// (stopping at the first failure, since later chunks depend on the state it left). Returns
/// the lowest failing chunk's error, for [`write_wave`].
pub(crate) fn transform_wave(slots: &mut [Slot], job: &Job) -> Result<(), ChunkError> {
    job.transform()
        .each(slots, |t, slot| slot.transform_with(t).map(|()| None::<()>))
        .map(drop)
}

/// Writes a wave's transformed slots in order; stops at the first failed (or untransformed)
/// chunk and returns its error (`transformed`: what [`transform_wave`] returned). Returns the
/// bytes written.
pub(crate) fn write_wave(
    slots: &mut [Slot],
    transformed: Result<(), ChunkError>,
    writer: &mut dyn Write,
) -> Result<u64> {
    let mut written = 0;
    for slot in slots {
        let Some(len) = slot.output_len.take() else {
            return Err(match transformed {
                Err(e) if e.index == slot.index => e.source,
                _ => Error::io(
                    format!("chunk {}", slot.index),
                    std::io::Error::other("chunk was never transformed"),
                ),
            });
        };
        writer
            .write_all(&slot.buf[..len])
            .map_err(|e| Error::io(format!("writing chunk {}", slot.index), e))?;
        written += len as u64;
    }
    Ok(written)
}

/// Reads a stream chunk by chunk and knows which chunk is the last: a short read is the last
/// chunk, and a full chunk is the last when one byte of look-ahead finds the end.
pub(crate) struct ChunkReader<R> {
    reader: R,
    layout: ChunkLayout,
    context_len: usize,
    carry: Option<u8>,
    tail: [u8; MAX_CONTEXT],
    next_index: u64,
    done: bool,
}

impl<R: Read> ChunkReader<R> {
    /// Reads the input chunks of `layout`; keeps the last `context_len` bytes of each chunk as
    /// the next chunk's context.
    pub fn new(reader: R, layout: ChunkLayout, context_len: usize) -> Self {
        assert!(context_len <= MAX_CONTEXT && context_len <= layout.input_chunk);
        ChunkReader {
            reader,
            layout,
            context_len,
            carry: None,
            tail: [0; MAX_CONTEXT],
            next_index: 0,
            done: false,
        }
    }

    /// Reads the next chunk into `slot`, growing its buffer as data arrives (doubling, from
    /// [`FIRST_BUFFER`], up to the chunk size): a short stream read with huge chunks holds
    /// about what it read, not a whole chunk. Returns `false` once the stream is exhausted.
    pub fn read_into(&mut self, slot: &mut Slot) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let index = self.next_index;
        let chunk = self.layout.input_chunk;
        let mut filled = 0;
        if let Some(byte) = self.carry.take() {
            if slot.buf.is_empty() {
                slot.buf.resize(FIRST_BUFFER.min(chunk));
            }
            slot.buf[0] = byte;
            filled = 1;
        }
        while filled < chunk {
            if slot.buf.len() <= filled {
                slot.buf.resize((2 * filled).max(FIRST_BUFFER).min(chunk));
            }
            let end = slot.buf.len().min(chunk);
            filled += read_full(&mut self.reader, &mut slot.buf[filled..end], index)?;
            if filled < end {
                break; // the stream ended
            }
        }
        let buf = &slot.buf[..];
        let is_last = if filled < chunk {
            true
        } else {
            let mut peek = [0u8; 1];
            let n = read_full(&mut self.reader, &mut peek, index + 1)?;
            self.carry = (n == 1).then_some(peek[0]);
            n == 0
        };
        let mut tail = [0u8; MAX_CONTEXT];
        let keep = self.context_len.min(filled);
        tail[..keep].copy_from_slice(&buf[filled - keep..filled]);
        slot.reset(&self.layout, index);
        slot.input_len = filled;
        slot.is_last = is_last;
        slot.set_context(if index == 0 {
            &[]
        } else {
            &self.tail[..self.context_len]
        });
        self.tail = tail;
        self.next_index += 1;
        self.done = is_last;
        Ok(true)
    }

    /// Whether the last chunk was read.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Reads the next run of up to `per_task` chunks into `buf`, behind the context bytes of
    /// its first chunk (the input bytes just before it, for transforms that need them), with
    /// as few reads as the stream allows and one byte of look-ahead for the whole run. `buf`
    /// grows as data arrives (doubling, from [`FIRST_BUFFER`]), so a short stream read with
    /// huge chunks holds about what it read. After a failed read the stream counts as ended.
    pub fn read_task(&mut self, buf: &mut AlignedBuf, per_task: u64) -> Result<StreamTask> {
        let chunk = self.layout.input_chunk;
        let first = self.next_index;
        let context = if first == 0 { 0 } else { self.context_len };
        let full = per_task as usize * chunk;
        let want = context + full + 1;
        if buf.len() < context + 1 {
            buf.resize((context + 1).max(FIRST_BUFFER.min(want)));
        }
        buf[..context].copy_from_slice(&self.tail[..context]);
        let mut filled = context;
        if let Some(byte) = self.carry.take() {
            buf[filled] = byte;
            filled += 1;
        }
        while filled < want {
            if buf.len() <= filled {
                buf.resize((2 * filled).max(FIRST_BUFFER).min(want));
            }
            let end = buf.len().min(want);
            let index = first + ((filled - context) / chunk) as u64;
            let read = read_full(&mut self.reader, &mut buf[filled..end], index);
            let n = read.inspect_err(|_| self.done = true)?;
            filled += n;
            if filled < end {
                break; // the stream ended
            }
        }
        let data = filled - context;
        let task = if data > full {
            // More follows: the byte past the run starts the next one.
            self.carry = Some(buf[context + full]);
            let end = context + full;
            self.tail[..self.context_len].copy_from_slice(&buf[end - self.context_len..end]);
            StreamTask {
                first,
                count: per_task,
                last_len: chunk,
                ends: false,
                context,
            }
        } else {
            let count = data.div_ceil(chunk).max(1);
            StreamTask {
                first,
                count: count as u64,
                last_len: data - (count - 1) * chunk,
                ends: true,
                context,
            }
        };
        self.next_index += task.count;
        self.done = task.ends;
        Ok(task)
    }

    /// Reads up to `window` chunks, reusing the slots in `spare` and making new ones as needed.
    /// `capacity` is what a full chunk needs (input and output); each slot is left with room
    /// for its own chunk's output.
    pub fn read_wave(
        &mut self,
        mut spare: Vec<Slot>,
        window: usize,
        capacity: usize,
    ) -> Result<Vec<Slot>> {
        let mut wave = Vec::with_capacity(window);
        while wave.len() < window && !self.done {
            let mut slot = spare.pop().unwrap_or_else(|| Slot::new(0));
            self.read_into(&mut slot)?;
            // A chunk's output is at most its input plus what a full chunk adds.
            // (A digest's output may be longer than a short last chunk's input.)
            let digest = self.layout.output_len(slot.input_len, slot.is_last);
            let room = (slot.input_len + capacity - self.layout.input_chunk)
                .min(capacity)
                .max(digest.unwrap_or(0));
            if slot.buf.len() < room {
                slot.buf.resize(room);
            }
            wave.push(slot);
        }
        Ok(wave)
    }
}

/// A run of consecutive chunks read from a stream by [`ChunkReader::read_task`]: every chunk
/// is full but the run's last, which is the stream's last when `ends`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamTask {
    /// The first chunk's index.
    pub first: u64,
    /// How many chunks the run holds (at least one).
    pub count: u64,
    /// The last chunk's input length.
    pub last_len: usize,
    /// Whether the run's last chunk is the stream's last.
    pub ends: bool,
    /// How many context bytes stand before the first chunk in the buffer.
    pub context: usize,
}

impl StreamTask {
    /// The output room the run needs: the full chunks' output, and for the last chunk what its
    /// input may become (a chunk never grows by more than a full one does, a digest is always
    /// its length).
    fn output_room(&self, layout: &ChunkLayout) -> usize {
        let capacity = layout.max_buffer();
        let digest = layout.output_len(self.last_len, self.ends).unwrap_or(0);
        let last = (self.last_len + capacity - layout.input_chunk)
            .min(capacity)
            .max(digest);
        (self.count as usize - 1) * layout.output_chunk + last
    }

    /// Transforms the run's chunks from `input` (as `read_task` left it) into `output`, in
    /// order, stopping at the first failure (or at a chunk above `failed`, which another
    /// worker already reported).
    fn transform(
        &self,
        layout: &ChunkLayout,
        context_len: usize,
        input: &[u8],
        output: &mut [u8],
        transform: &mut Apply<'_>,
        failed: &AtomicU64,
    ) -> (Ready, Result<Option<u64>, ChunkError>) {
        let chunk = layout.input_chunk;
        let mut result = Ok(None);
        let mut ready = Ready {
            chunks: self.first..self.first,
            len: 0,
            whole: true,
        };
        for k in 0..self.count as usize {
            let index = self.first + k as u64;
            if index > failed.load(Ordering::Relaxed) {
                ready.whole = false;
                break;
            }
            let is_last = k + 1 == self.count as usize;
            let from = self.context + k * chunk;
            let len = if is_last { self.last_len } else { chunk };
            let context = if index > 0 {
                &input[from - context_len..from]
            } else {
                &[][..]
            };
            let ctx = ChunkCtx {
                index,
                offset: layout.payload_start(index),
                chunk_size: layout.payload_chunk(),
                is_last: is_last && self.ends,
                context,
            };
            let at = k * layout.output_chunk;
            let room = if is_last {
                output.len() - at
            } else {
                layout.output_chunk
            };
            let slot = &mut output[at..at + room];
            match transform.apart(&ctx, &input[from..from + len], slot) {
                Ok(n) => {
                    ready.len = at + n;
                    ready.chunks.end = index + 1;
                }
                Err(source) => {
                    // Never written, but a buffer that held unproven bytes is wiped (see
                    // `engine::wipe`).
                    super::wipe(slot);
                    failed.fetch_min(index, Ordering::Relaxed);
                    ready.whole = false;
                    result = Err(ChunkError { index, source });
                    break;
                }
            }
        }
        (ready, result)
    }
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8], index: u64) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(format!("reading chunk {index}"), e)),
        }
    }
    Ok(filled)
}

/// Streams `reader` through `job` into `writer`: writes the job's output header, then every
/// chunk in order, and returns the bytes written. `window` bounds the chunks read ahead of the
/// output (0: [`TASK_BYTES`] of input per task, at least one chunk, and two tasks per pool
/// thread); at most about `2 × window` chunks are in memory.
///
/// A parallel job runs on every pool thread at once ([`stream_ordered`]); a serial one in
/// waves, the next read and the last written while the pool transforms ([`stream_waves`]).
///
/// `reader` starts at the first chunk: a header in the input was read before (the job was
/// made from it). The job needs no plan: a stream's length is found as it ends.
pub fn process_stream(
    job: &Job,
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    window: usize,
) -> Result<u64> {
    let header = job.output_header();
    writer
        .write_all(header)
        .map_err(|e| Error::io("writing the header", e))?;
    let written = header.len() as u64;
    let written = written
        + if job.is_parallel() {
            stream_ordered(job, reader, writer, window)?
        } else {
            stream_waves(job, reader, writer, window)?
        };
    writer
        .flush()
        .map_err(|e| Error::io("flushing output", e))?;
    Ok(written)
}

/// Streams a parallel job's chunks (after the header) on every worker of the pool: each in
/// turn takes the reader and reads the next task (a run of chunks, [`TASK_BYTES`] of input
/// unless `window` asks for fewer), then transforms it while the next worker reads, and
/// hands it to the output through the ordered window (see the `ordered` module), where
/// whichever worker finished the task the output waits for writes it. Reading, transforming
/// and writing thus overlap on every core, with no thread set aside for either end. Memory:
/// at most `2 × threads` tasks waiting for the output and one being read or transformed per
/// thread. Returns the chunk bytes written.
///
/// Only transformed chunks are written, in order: on failure, every chunk before the lowest
/// failing one is written, none after, and its error returned.
fn stream_ordered(
    job: &Job,
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    window: usize,
) -> Result<u64> {
    let layout = job.layout();
    let transform = job.transform();
    let workers = transform.workers();
    let (width, per_task) = if window == 0 {
        (2 * workers, (TASK_BYTES / layout.input_chunk).max(1) as u64)
    } else {
        let width = (2 * workers).min(window);
        (width, (window / width).max(1) as u64)
    };
    let mut written = 0u64;
    let mut emit = |chunks: std::ops::Range<u64>, bytes: &[u8]| {
        writer
            .write_all(bytes)
            .map_err(|e| Error::io(format!("writing chunk {}", chunks.start), e))?;
        written += bytes.len() as u64;
        Ok(())
    };
    let window = Window::new(width, &mut emit);
    let chunks = Mutex::new((ChunkReader::new(reader, *layout, job.context_len()), 0u64));
    let failed = AtomicU64::new(u64::MAX);
    transform
        .each(0..workers, |t, _| {
            let mut result = Ok(None);
            let mut input = AlignedBuf::new(0);
            loop {
                // The next task, read in turn; a worker a window ahead of the output waits
                // here, holding the reader, as there is no room for what it would read.
                let (task, read) = {
                    let mut guard = chunks.lock().unwrap_or_else(|e| e.into_inner());
                    let (chunks, next_task) = &mut *guard;
                    if chunks.is_done() || chunks.next_index > failed.load(Ordering::Relaxed) {
                        return result;
                    }
                    let task = *next_task;
                    if !window.wait_for_room(task, chunks.next_index, &failed) {
                        return result;
                    }
                    *next_task += 1;
                    let first = chunks.next_index;
                    (
                        task,
                        chunks
                            .read_task(&mut input, per_task)
                            .map_err(|source| ChunkError {
                                index: first,
                                source,
                            }),
                    )
                };
                let read = match read {
                    Ok(read) => read,
                    Err(e) => {
                        // The tasks before it are written; nothing after.
                        failed.fetch_min(e.index, Ordering::Relaxed);
                        let ready = Ready {
                            chunks: e.index..e.index,
                            len: 0,
                            whole: false,
                        };
                        window.put(task, window.take_buf(task), ready);
                        let written = window.write_ready(&failed);
                        return lowest_error(lowest_error(result, Err(e)), written);
                    }
                };
                let mut buf = window.take_buf(task);
                let room = read.output_room(layout);
                if buf.len() < room {
                    buf.resize(room);
                }
                let (ready, transformed) = read.transform(
                    layout,
                    job.context_len(),
                    &input,
                    &mut buf[..room],
                    t,
                    &failed,
                );
                window.put(task, buf, ready);
                result = lowest_error(result, transformed);
                result = lowest_error(result, window.write_ready(&failed));
                if result.is_err() {
                    break;
                }
            }
            result
        })
        .map_err(Error::from)?;
    drop(window);
    Ok(written)
}

/// Streams a serial job's chunks (after the header) in waves of `window` chunks (0: a task's
/// worth per pool thread): while the pool transforms one wave, the calling thread writes the
/// wave before it and reads the next, so at most `2 × window` chunks are in memory. Returns
/// the chunk bytes written.
fn stream_waves(
    job: &Job,
    reader: &mut (dyn Read + Send),
    writer: &mut (dyn Write + Send),
    window: usize,
) -> Result<u64> {
    let window = if window == 0 {
        default_window(job.layout())
    } else {
        window
    };
    let layout = job.layout();
    let capacity = layout.max_buffer();
    let mut chunks = ChunkReader::new(reader, *layout, job.context_len());
    let mut current = chunks.read_wave(Vec::new(), window, capacity)?;
    let mut done: (Vec<Slot>, Result<(), ChunkError>) = (Vec::new(), Ok(()));
    let mut written = 0;
    while !current.is_empty() {
        let (io, transformed) = rayon::join(
            || -> Result<Vec<Slot>> {
                let (mut slots, transformed) = std::mem::replace(&mut done, (Vec::new(), Ok(())));
                written += write_wave(&mut slots, transformed, writer)?;
                chunks.read_wave(slots, window, capacity)
            },
            || transform_wave(&mut current, job),
        );
        let next = io?;
        done = (std::mem::replace(&mut current, next), transformed);
    }
    written += write_wave(&mut done.0, done.1, writer)?;
    Ok(written)
}
