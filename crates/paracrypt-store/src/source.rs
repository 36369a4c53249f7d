//! Reading an object: a positional [`Source`] over ranged GETs with a bounded read-ahead, and a
//! sequential reader on top of it.
//!
//! The engine announces the input bytes a run will read ([`Source::will_read`]); the source
//! fetches them in blocks of [`BLOCK`] bytes, up to [`Options::download_concurrency`] blocks
//! ahead of what the workers have consumed, each block one ranged GET on the object's runtime.
//! A worker that asks for bytes waits for the blocks that hold them, copies them out, and a
//! block is dropped once every byte of it was read. Bytes nobody announced (a header, a
//! context read whose block is gone) are one ranged GET of exactly those bytes. Every GET
//! carries the ETag of the version first seen (`If-Match`), so a run never mixes two versions
//! of an object.
//!
//! Memory: at most `download_concurrency` blocks ahead, plus one per worker waiting for a
//! block beyond them: `(download_concurrency + threads) × 8 MiB`.
//!
//! [`Options::download_concurrency`]: crate::Options::download_concurrency

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;
use paracrypt_core::engine::Source;

use crate::error::Error;
use crate::object::{Meta, Object, get_range};

/// The bytes one read-ahead GET fetches (8 MiB).
pub const BLOCK: u64 = 8 << 20;

/// A positional source over an object's bytes (see the [crate docs](crate)).
pub struct ObjectSource {
    object: Object,
    meta: Meta,
    shared: Arc<Shared>,
    window: usize,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    /// The bytes announced and not yet fetched: what read-ahead fetches next.
    ahead: Range<u64>,
    /// Blocks fetched or being fetched, by their start.
    blocks: BTreeMap<u64, Block>,
    /// Bytes fetched in all (GET bodies), for tests and `--verbose`.
    fetched: u64,
}

struct Block {
    end: u64,
    data: Option<Result<Bytes, Error>>,
    /// Bytes of the block read out so far.
    consumed: u64,
}

impl ObjectSource {
    /// A source over `object`, whose HEAD gave `meta` (its reads require that ETag).
    pub fn new(object: &Object, meta: Meta) -> Self {
        ObjectSource {
            window: object.options.download_concurrency.max(1),
            object: object.clone(),
            meta,
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
            }),
        }
    }

    /// The object's length.
    pub fn len(&self) -> u64 {
        self.meta.len
    }

    /// Whether the object is empty.
    pub fn is_empty(&self) -> bool {
        self.meta.len == 0
    }

    /// The object.
    pub fn object(&self) -> &Object {
        &self.object
    }

    /// Its length and the ETag every read requires (another process opens the same version
    /// with [`ObjectSource::new`] and these: an MPI rank reading rank 0's input).
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Bytes this source fetched so far (bodies of its GETs).
    pub fn fetched(&self) -> u64 {
        self.lock().fetched
    }

    /// A sequential reader from byte `at` to the end, reading ahead.
    pub fn reader(&self, at: u64) -> ObjectReader<'_> {
        self.will_read(at..self.meta.len);
        ObjectReader { source: self, at }
    }

    /// A sequential reader from the start that reads only what is asked for, a GET at a
    /// time: for a header, before the rest is known to be needed.
    pub fn head_reader(&self) -> HeadReader<'_> {
        self.head_reader_at(0)
    }

    /// As [`ObjectSource::head_reader`], from byte `at`.
    pub fn head_reader_at(&self, at: u64) -> HeadReader<'_> {
        HeadReader { source: self, at }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts GETs for the next announced blocks, while fewer than the window are held (and
    /// at least up to `upto`, a byte a worker waits for).
    fn fetch_ahead(&self, state: &mut State, upto: Option<u64>) {
        loop {
            let held = state.blocks.len();
            let ahead = state.ahead.clone();
            let needed = upto.is_some_and(|at| at >= ahead.start && at < ahead.end);
            if ahead.is_empty() || (held >= self.window && !needed) {
                return;
            }
            let end = (ahead.start + BLOCK).min(ahead.end);
            state.ahead.start = end;
            state.blocks.insert(
                ahead.start,
                Block {
                    end,
                    data: None,
                    consumed: 0,
                },
            );
            let shared = self.shared.clone();
            let store = self.object.store.clone();
            let path = self.object.path.clone();
            let e_tag = self.meta.e_tag.clone();
            // Not the `Object`: it holds the runtime, and a task holding the last reference
            // would drop the runtime on its own worker thread (tokio panics) when the run ends
            // on an error while GETs are still in flight.
            let doing = format!("cannot read {}", self.object.url);
            let start = ahead.start;
            self.object.runtime.spawn(async move {
                let result = get_range(store, path, start..end, e_tag)
                    .await
                    .map_err(|e| Error::from_store(&doing, &e));
                let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Ok(bytes) = &result {
                    state.fetched += bytes.len() as u64;
                }
                if let Some(block) = state.blocks.get_mut(&start) {
                    block.data = Some(result);
                }
                shared.ready.notify_all();
            });
        }
    }

    /// Fills `buf` with the bytes at `offset`: from the blocks read ahead, else one GET.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), Error> {
        let end = offset + buf.len() as u64;
        let mut at = offset;
        let mut state = self.lock();
        while at < end {
            // Bytes announced but not yet asked for are fetched now, even past the window.
            self.fetch_ahead(&mut state, Some(at));
            // The block holding `at`, if it was fetched or is being fetched.
            let held = state
                .blocks
                .range(..=at)
                .next_back()
                .filter(|(_, block)| block.end > at)
                .map(|(&start, _)| start);
            let Some(start) = held else {
                // Not read ahead: fetch exactly the rest of what is asked, up to the next block.
                let stop = state
                    .blocks
                    .range(at..)
                    .next()
                    .map_or(end, |(&next, _)| next.min(end));
                drop(state);
                let bytes = self
                    .object
                    .get_range(at..stop, self.meta.e_tag.as_deref())?;
                buf[(at - offset) as usize..(stop - offset) as usize].copy_from_slice(&bytes);
                at = stop;
                state = self.lock();
                state.fetched += bytes.len() as u64;
                continue;
            };
            let block = loop {
                let block = state.blocks.get(&start).expect("held until consumed");
                if block.data.is_some() {
                    break block;
                }
                state = self
                    .shared
                    .ready
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            };
            let stop = block.end.min(end);
            match block.data.as_ref().expect("ready") {
                Ok(bytes) => {
                    let from = (at - start) as usize;
                    buf[(at - offset) as usize..(stop - offset) as usize]
                        .copy_from_slice(&bytes[from..from + (stop - at) as usize]);
                }
                Err(e) => return Err(Error::new(e.kind(), e.to_string())),
            }
            let block = state.blocks.get_mut(&start).expect("held");
            block.consumed += stop - at;
            if block.consumed >= block.end - start {
                state.blocks.remove(&start);
                self.fetch_ahead(&mut state, None);
            }
            at = stop;
        }
        Ok(())
    }
}

impl std::fmt::Debug for ObjectSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectSource")
            .field("object", &self.object.url)
            .field("len", &self.meta.len)
            .finish_non_exhaustive()
    }
}

impl Source for ObjectSource {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> paracrypt_core::Result<()> {
        self.read_at(offset, buf).map_err(|e| {
            paracrypt_core::Error::io(
                format!("reading chunk {index} at byte {offset}"),
                std::io::Error::other(e),
            )
        })
    }

    fn will_read(&self, bytes: Range<u64>) {
        let bytes = bytes.start.min(self.meta.len)..bytes.end.min(self.meta.len);
        let mut state = self.lock();
        // A new run replaces what was announced and not fetched yet; what is held stays.
        state.ahead = bytes;
        self.fetch_ahead(&mut state, None);
    }
}

/// Reads an object front to back, reading ahead ([`ObjectSource::reader`]).
pub struct ObjectReader<'a> {
    source: &'a ObjectSource,
    at: u64,
}

impl Read for ObjectReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(self.source.meta.len - self.at) as usize;
        if n == 0 {
            return Ok(0);
        }
        self.source
            .read_at(self.at, &mut buf[..n])
            .map_err(std::io::Error::other)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// Reads an object from its start, one GET per read ([`ObjectSource::head_reader`]); wrap it
/// in a `BufReader` to read a header in a few requests.
pub struct HeadReader<'a> {
    source: &'a ObjectSource,
    at: u64,
}

impl HeadReader<'_> {
    /// Where the next read starts.
    pub fn position(&self) -> u64 {
        self.at
    }
}

impl Read for HeadReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(self.source.meta.len - self.at) as usize;
        if n == 0 {
            return Ok(0);
        }
        self.source
            .read_at(self.at, &mut buf[..n])
            .map_err(std::io::Error::other)?;
        self.at += n as u64;
        Ok(n)
    }
}
