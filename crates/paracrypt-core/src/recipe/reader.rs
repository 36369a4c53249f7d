//! A `Read` adapter that runs any job over what it reads, wave by wave.

use std::io::{self, BufReader, Read};

use crate::engine::Job;
use crate::engine::io::Progress;
use crate::engine::stream::{ChunkReader, Slot, default_window, transform_wave};
use crate::error::Error;

/// Reads `inner` through a job ([`Runner::reader`](super::Runner::reader)): each read hands out
/// the job's output — its header first when it writes one, then the chunks in order — reading
/// and transforming a wave of chunks (in the current Rayon pool, in parallel or in order for a
/// serial job) whenever the last one is used up. At most one wave of chunks is in memory.
///
/// Only verified output is handed out: when a chunk fails, the chunks before it are read out
/// first, then the read fails with an [`io::Error`] that carries the chunk's
/// [`Error`](crate::Error) (`error.get_ref()` and `downcast_ref::<paracrypt_core::Error>()`
/// give it back, as [`StreamReader::error_of`] does). A truncated input fails at its end.
///
/// ```
/// use std::io::Read;
/// use paracrypt_core::container::{Decryptor, Encryptor, Key};
/// use paracrypt_core::Runner;
///
/// let key = Key::generate();
/// let runner = Runner::new();
/// let sealed = runner.vec(&Encryptor::new(key.clone()), &[3u8; 200_000])?;
/// let mut plain = Vec::new();
/// runner.reader(&Decryptor::new(key), &sealed[..])?.read_to_end(&mut plain)?;
/// assert_eq!(plain, vec![3u8; 200_000]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StreamReader<R: Read> {
    chunks: ChunkReader<Counted<BufReader<R>>>,
    job: Job,
    capacity: usize,
    window: usize,
    /// The output header, until it is handed out.
    header: Vec<u8>,
    header_at: usize,
    /// The current wave, transformed: the slots whose output is handed out.
    wave: Vec<Slot>,
    slot: usize,
    at: usize,
    /// The failure that ends the output once the wave before it is read out.
    failed: Option<Error>,
    /// Once that failure was returned: its message, for every later read.
    broken: Option<String>,
}

impl<R: Read> std::fmt::Debug for StreamReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamReader")
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

/// A reader that reports the bytes read to the runner's progress callback.
pub(crate) struct Counted<R> {
    pub(crate) inner: R,
    pub(crate) progress: Option<Progress>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(progress) = &self.progress {
            progress(n as u64);
        }
        Ok(n)
    }
}

impl<R: Read> StreamReader<R> {
    /// Reads the chunks after the header (which the job was made from) from `input`.
    pub(crate) fn new(input: Counted<BufReader<R>>, job: Job, window: usize) -> Self {
        let layout = *job.layout();
        StreamReader {
            chunks: ChunkReader::new(input, layout, job.context_len()),
            capacity: layout.max_buffer(),
            header: job.output_header().to_vec(),
            header_at: 0,
            job,
            window: if window == 0 {
                default_window(&layout)
            } else {
                window
            },
            wave: Vec::new(),
            slot: 0,
            at: 0,
            failed: None,
            broken: None,
        }
    }

    /// The [`Error`](crate::Error) an error of [`StreamReader::read`] carries, if it carries
    /// one (an error of the inner reader is one too: [`Error::Io`](crate::Error::Io)).
    pub fn error_of(error: &io::Error) -> Option<&Error> {
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<Error>())
    }

    /// Reads and transforms the next wave; keeps only the chunks before a failing one.
    fn next_wave(&mut self) -> Result<(), Error> {
        let spare = std::mem::take(&mut self.wave);
        let mut wave = self.chunks.read_wave(spare, self.window, self.capacity)?;
        if let Err(failed) = transform_wave(&mut wave, &self.job) {
            wave.retain(|slot| slot.index < failed.index);
            self.failed = Some(failed.source);
        }
        self.wave = wave;
        self.slot = 0;
        self.at = 0;
        Ok(())
    }
}

impl<R: Read> Read for StreamReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.header_at < self.header.len() {
            let n = buf.len().min(self.header.len() - self.header_at);
            buf[..n].copy_from_slice(&self.header[self.header_at..self.header_at + n]);
            self.header_at += n;
            return Ok(n);
        }
        loop {
            if let Some(slot) = self.wave.get(self.slot) {
                let len = slot.output_len.expect("a kept slot was transformed");
                if self.at < len {
                    let n = buf.len().min(len - self.at);
                    buf[..n].copy_from_slice(&slot.buf[self.at..self.at + n]);
                    self.at += n;
                    return Ok(n);
                }
                self.slot += 1;
                self.at = 0;
                continue;
            }
            if let Some(failed) = self.failed.take() {
                self.broken = Some(failed.to_string());
                return Err(io::Error::other(failed));
            }
            if let Some(broken) = &self.broken {
                return Err(io::Error::other(format!(
                    "an earlier read failed: {broken}"
                )));
            }
            if self.chunks.is_done() {
                return Ok(0);
            }
            self.next_wave().map_err(io::Error::other)?;
        }
    }
}
