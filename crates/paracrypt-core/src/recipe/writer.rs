//! A `Write` adapter that runs any job through a bounded window.

use std::io::{self, Write};

use crate::engine::stream::{Slot, default_window, transform_wave, write_wave};
use crate::engine::{Job, MAX_CONTEXT};

/// Runs a job ([`Runner::writer`](super::Runner::writer)) over everything written to it into
/// the inner writer, transforming a wave of chunks in the current Rayon pool (in parallel, or
/// in order for a serial job) whenever the wave is full and more data follows.
///
/// A chunk is transformed only once it is known whether it is the last one, so the writer
/// keeps the current wave until the next byte arrives or [`StreamWriter::finish`] is called.
/// **Call `finish`**: without it the last chunks are never written (an authenticated file
/// then reads as truncated).
///
/// ```
/// use std::io::Write;
/// use age::secrecy::ExposeSecret;
/// use paracrypt_core::agefile::{Decryptor, Encryptor};
/// use paracrypt_core::recipient::{Identities, Recipients};
/// use paracrypt_core::Runner;
///
/// let me = age::x25519::Identity::generate();
/// let mut recipients = Recipients::new();
/// recipients.add(&me.to_public().to_string(), "recipient 1")?;
/// let runner = Runner::new();
/// let mut writer = runner.writer(&Encryptor::new(recipients), Vec::new())?;
/// writer.write_all(&[7u8; 100_000])?;
/// let sealed = writer.finish()?;
///
/// let mut identities = Identities::new();
/// identities.add_file("me.key", me.to_string().expose_secret().as_bytes())?;
/// assert_eq!(runner.vec(&Decryptor::new(identities), &sealed)?, vec![7u8; 100_000]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StreamWriter<W: Write> {
    inner: W,
    job: Job,
    capacity: usize,
    window: usize,
    wave: Vec<Slot>,
    spare: Vec<Slot>,
    next_index: u64,
}

impl<W: Write> std::fmt::Debug for StreamWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamWriter")
            .field("next_index", &self.next_index)
            .finish_non_exhaustive()
    }
}

impl<W: Write> StreamWriter<W> {
    /// Runs `job` (whose output header the caller has written) into `inner`.
    pub(crate) fn new(inner: W, job: Job, window: usize) -> Self {
        StreamWriter {
            inner,
            capacity: job.layout().max_buffer(),
            window: if window == 0 {
                default_window(job.layout())
            } else {
                window
            },
            job,
            wave: Vec::new(),
            spare: Vec::new(),
            next_index: 0,
        }
    }

    /// Starts the next chunk, whose context (the input bytes just before it, for CBC
    /// decryption) is `context`.
    fn new_slot(&mut self, context: &[u8]) {
        let mut slot = self.spare.pop().unwrap_or_else(|| Slot::new(self.capacity));
        slot.reset(self.job.layout(), self.next_index);
        slot.set_context(context);
        self.next_index += 1;
        self.wave.push(slot);
    }

    /// Transforms the wave (its last chunk flagged `last` or not) and writes it.
    fn flush_wave(&mut self, last: bool) -> io::Result<()> {
        if let Some(slot) = self.wave.last_mut() {
            slot.is_last = last;
        }
        let transformed = transform_wave(&mut self.wave, &self.job);
        write_wave(&mut self.wave, transformed, &mut self.inner).map_err(io::Error::other)?;
        self.spare.append(&mut self.wave);
        Ok(())
    }

    /// Transforms the last chunk, writes everything and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.wave.is_empty() {
            self.new_slot(&[]);
        }
        self.flush_wave(true)?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for StreamWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let chunk = self.job.layout().input_chunk;
        let full = self.wave.last().is_none_or(|s| s.input_len == chunk);
        if full {
            // The new chunk's context: the end of the full one's input, taken before the wave
            // is transformed in place.
            let mut context = [0u8; MAX_CONTEXT];
            let context_len = match self.wave.last() {
                Some(slot) => {
                    let n = self.job.context_len();
                    context[..n].copy_from_slice(&slot.buf[chunk - n..chunk]);
                    n
                }
                None => 0,
            };
            // More data follows, so every chunk held so far is not the last one.
            if self.wave.len() == self.window {
                self.flush_wave(false)?;
            }
            self.new_slot(&context[..context_len]);
        }
        let slot = self.wave.last_mut().expect("a slot was just ensured");
        let n = data.len().min(chunk - slot.input_len);
        slot.buf[slot.input_len..slot.input_len + n].copy_from_slice(&data[..n]);
        slot.input_len += n;
        Ok(n)
    }

    /// Writes nothing out: a chunk can only be transformed once it is known whether it is the
    /// last.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
