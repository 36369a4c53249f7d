//! Where chunks come from and go to in positional work: files (`read_at` / `write_at`, so any
//! number of threads read and write one file at once) and memory.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::plan::ChunkPlan;

/// Positional input: any chunk can be read at any time, from any thread.
pub trait Source: Sync {
    /// Fills `buf` with the input bytes at `offset` (for chunk `index`, named in errors).
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// A hint: the run about to start reads the input bytes `bytes`, roughly in order, and no
    /// others (besides a few bytes of context before its chunks). A source whose reads are
    /// slow to start (ranged GETs from object storage) fetches ahead within them; the default
    /// does nothing. [`run`](super::run) calls it once per run.
    fn will_read(&self, bytes: std::ops::Range<u64>) {
        let _ = bytes;
    }
}

/// Positional output: any chunk can be written at any time, from any thread.
pub trait Sink: Sync {
    /// Writes chunk `index`'s output `data` at `offset`.
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> Result<()>;

    /// Writes the output of the consecutive chunks `chunks` of `plan`, back to back in `data`
    /// (every chunk's full output, the plan's last chunk's real length), at the first one's
    /// output offset: what one task of the engine made. By default one
    /// [`write_chunk`](Self::write_chunk) per chunk; a sink that takes any bytes at any offset
    /// (a file) writes them at once.
    fn write_run(&self, plan: &ChunkPlan, chunks: std::ops::Range<u64>, data: &[u8]) -> Result<()> {
        let base = plan.chunk(chunks.start).output.start;
        for index in chunks {
            let chunk = plan.chunk(index);
            let from = (chunk.output.start - base) as usize;
            let to = (from + chunk.output_len()).min(data.len());
            self.write_chunk(index, chunk.output.start, &data[from..to])?;
        }
        Ok(())
    }

    /// Whether concurrent writes serialise anyway, so that the engine should write from one
    /// worker at a time while the others transform (true for files: Linux takes the inode lock
    /// for every buffered write, and threads that collide on it spin instead of working).
    fn single_writer(&self) -> bool {
        false
    }
}

/// Input in memory.
#[derive(Clone, Copy, Debug)]
pub struct SliceSource<'a>(pub &'a [u8]);

impl Source for SliceSource<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = offset as usize;
        let src = self.0.get(start..start + buf.len()).ok_or_else(|| {
            Error::io(
                format!("reading chunk {index}"),
                std::io::ErrorKind::UnexpectedEof.into(),
            )
        })?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl Source for File {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.read_exact_at(buf, offset)
            .map_err(|e| Error::io(format!("reading chunk {index} at byte {offset}"), e))
    }
}

impl Sink for File {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> Result<()> {
        self.write_all_at(data, offset)
            .map_err(|e| Error::io(format!("writing chunk {index} at byte {offset}"), e))
    }

    fn write_run(&self, plan: &ChunkPlan, chunks: std::ops::Range<u64>, data: &[u8]) -> Result<()> {
        self.write_chunk(chunks.start, plan.chunk(chunks.start).output.start, data)
    }

    fn single_writer(&self) -> bool {
        true
    }
}

/// An output buffer in memory, cut into one slot per chunk of a plan so that threads write
/// their chunks without sharing anything (each slot's lock is taken exactly once).
pub struct SliceSink<'a> {
    slots: Vec<Mutex<&'a mut [u8]>>,
    first: u64,
    base: u64,
}

impl<'a> SliceSink<'a> {
    /// Slots for chunks `indices` of `plan`, cut from `out`, which holds the plan's output from
    /// byte `plan.chunk(indices.start).output.start` on.
    ///
    /// # Panics
    /// If `out` is shorter than those chunks' output.
    pub fn new(plan: &ChunkPlan, indices: std::ops::Range<u64>, mut out: &'a mut [u8]) -> Self {
        let base = plan.chunk(indices.start).output.start;
        let first = indices.start;
        let mut slots = Vec::with_capacity((indices.end - indices.start) as usize);
        for i in indices {
            let (slot, rest) = std::mem::take(&mut out).split_at_mut(plan.chunk(i).output_len());
            slots.push(Mutex::new(slot));
            out = rest;
        }
        SliceSink { slots, first, base }
    }
}

impl Sink for SliceSink<'_> {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> Result<()> {
        let slot = &self.slots[(index - self.first) as usize];
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(offset >= self.base);
        slot[..data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// A progress callback: called with the number of input bytes just taken in.
pub(crate) type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// `Read` over a file with positional reads from `at`, leaving the file's cursor alone.
pub(crate) struct PositionalReader<'a> {
    pub(crate) file: &'a File,
    pub(crate) at: u64,
}

impl Read for PositionalReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// A source that reports the bytes read.
pub(crate) struct ProgressSource<'a> {
    inner: &'a dyn Source,
    progress: Option<&'a Progress>,
}

impl<'a> ProgressSource<'a> {
    pub(crate) fn new(inner: &'a dyn Source, progress: &'a Option<Progress>) -> Self {
        ProgressSource {
            inner,
            progress: progress.as_ref(),
        }
    }
}

impl Source for ProgressSource<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_chunk(index, offset, buf)?;
        if let Some(progress) = self.progress {
            progress(buf.len() as u64);
        }
        Ok(())
    }

    fn will_read(&self, bytes: std::ops::Range<u64>) {
        self.inner.will_read(bytes);
    }
}

/// A reader that reports the bytes read.
pub(crate) struct Counting<'a, 'r> {
    inner: &'r mut (dyn Read + Send),
    progress: Option<&'a Progress>,
}

impl<'a, 'r> Counting<'a, 'r> {
    pub(crate) fn new(inner: &'r mut (dyn Read + Send), progress: Option<&'a Progress>) -> Self {
        Counting { inner, progress }
    }
}

impl Read for Counting<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(progress) = self.progress {
            progress(n as u64);
        }
        Ok(n)
    }
}
