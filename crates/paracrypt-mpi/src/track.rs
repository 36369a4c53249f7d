//! Adapters around the engine's transform, source and sink: they note the lowest chunk that
//! failed (the engine returns the error of the lowest failing chunk, not its index), and serve
//! a batch received as a message as if it were the input file.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use paracrypt_core::Result as CoreResult;
use paracrypt_core::engine::{ChunkCtx, ChunkTransform, Sink, Source};

use crate::error::Failure;

/// The lowest chunk that failed in the calls it watched.
#[derive(Debug)]
pub struct Watch(AtomicU64);

impl Watch {
    pub fn new() -> Self {
        Watch(AtomicU64::new(u64::MAX))
    }

    fn note<T>(&self, index: u64, result: CoreResult<T>) -> CoreResult<T> {
        if result.is_err() {
            self.0.fetch_min(index, Ordering::Relaxed);
        }
        result
    }

    /// The lowest failed chunk, if any.
    pub fn failed(&self) -> Option<u64> {
        let at = self.0.load(Ordering::Relaxed);
        (at != u64::MAX).then_some(at)
    }
}

/// A transform whose failures are noted.
pub struct Watched<'a, T: ?Sized> {
    pub inner: &'a T,
    pub watch: &'a Watch,
}

impl ChunkTransform for Watched<'_, dyn ChunkTransform + '_> {
    fn context_len(&self) -> usize {
        self.inner.context_len()
    }

    fn transform(
        &self,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        input_len: usize,
    ) -> CoreResult<usize> {
        self.watch
            .note(chunk.index, self.inner.transform(chunk, buf, input_len))
    }
}

impl Source for Watched<'_, dyn Source + '_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> CoreResult<()> {
        self.watch
            .note(index, self.inner.read_chunk(index, offset, buf))
    }
}

impl Sink for Watched<'_, dyn Sink + '_> {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> CoreResult<()> {
        self.watch
            .note(index, self.inner.write_chunk(index, offset, data))
    }
}

/// A batch's input held in memory: `bytes` are the input from offset `base` on.
pub struct BatchSource<'a> {
    pub base: u64,
    pub bytes: &'a [u8],
}

impl Source for BatchSource<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> CoreResult<()> {
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
pub struct Outcome {
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
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.1.as_ref().is_none_or(|f| failure.key() < f.key()) {
            state.1 = Some(failure);
        }
    }

    /// The result to agree on: the end (0 when this rank did not run the last chunk) or the
    /// failure.
    pub fn into_result(self) -> Result<u64, Failure> {
        let (end, failure) = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        match failure {
            Some(failure) => Err(failure),
            None => Ok(end.unwrap_or(0)),
        }
    }
}
