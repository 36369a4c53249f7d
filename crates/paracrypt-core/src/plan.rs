//! The chunk plan: the one description of how a job is cut into independent chunks.
//!
//! A [`ChunkLayout`] says where chunk `i` starts in the input and in the output and how the last
//! chunk's output length follows from its input length. A [`ChunkPlan`] is a layout applied to an
//! input of known length: it knows how many chunks there are and yields every [`Chunk`] with its
//! byte ranges. The local engine and the MPI ranks consume the same plan, which is why their
//! output is identical: chunk `i` is always the same bytes, whoever processes it.
//!
//! ```
//! use paracrypt_core::plan::ChunkPlan;
//!
//! let plan = ChunkPlan::identity(10_000, 4096).unwrap();
//! assert_eq!(plan.len(), 3);
//! let last = plan.chunk(2);
//! assert_eq!(last.input, 8192..10_000);
//! assert_eq!(last.output, 8192..10_000);
//! assert!(last.is_last);
//! ```

use std::ops::Range;

use crate::error::{Error, Result};

/// What the length of a file's payload says about its chunks, without a key (`paracrypt
/// info`): how many there are, how much plaintext they hold, and whether any writer makes a
/// payload of that length.
///
/// ```
/// use paracrypt_core::plan::Sizes;
///
/// // Two full 4 KiB chunks and one of 100 bytes, each with a 16-byte tag.
/// let sizes = Sizes::sealed(2 * (4096 + 16) + 116, 4096, 16, 16);
/// assert_eq!((sizes.chunks, sizes.plaintext), (3, 8292..=8292));
/// assert!(sizes.damage.is_none());
/// // Nothing after the header: not even the one chunk an empty plaintext has.
/// assert!(Sizes::sealed(0, 4096, 16, 16).damage.is_some());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Sizes {
    /// The bytes after the header (and anything else before the first chunk).
    pub payload: u64,
    /// How many chunks they make (at least one).
    pub chunks: u64,
    /// The plaintext's length: one value, or the bounds when the last chunk's padding (CBC)
    /// is only known once it is decrypted.
    pub plaintext: std::ops::RangeInclusive<u64>,
    /// Why no writer makes a payload of this length (the file was cut or damaged), if so.
    pub damage: Option<Error>,
}

impl Sizes {
    /// A payload of sealed chunks: each full one holds `chunk_size` bytes of plaintext and
    /// grows by `overhead` when sealed (its tag, and its padding); the last one is shorter, and
    /// at least its `tag`. A payload of 0 bytes has not even the one chunk an empty plaintext
    /// has.
    pub fn sealed(payload: u64, chunk_size: u64, overhead: u64, tag: u64) -> Self {
        let stride = chunk_size + overhead;
        let chunks = payload.div_ceil(stride).max(1);
        let last = payload - (chunks - 1) * stride;
        let damage = if payload == 0 {
            Some(Error::TruncatedAfterHeader)
        } else if last < tag {
            Some(Error::Truncated { index: chunks - 1 })
        } else {
            None
        };
        let plaintext = (chunks - 1) * chunk_size + last.saturating_sub(tag);
        Sizes {
            payload,
            chunks,
            plaintext: plaintext..=plaintext,
            damage,
        }
    }

    /// The same, the last chunk ending in 1 to `block` bytes of padding (CBC), which only its
    /// decryption tells.
    pub fn padded(mut self, block: u64) -> Self {
        let most = *self.plaintext.end();
        self.plaintext = most.saturating_sub(block)..=most.saturating_sub(1);
        self
    }
}

/// The largest chunk size accepted (1 GiB): beyond it a chunk no longer fits a bounded window.
/// The limit is on the data a chunk carries; its framing (a tag, padding) comes on top.
pub const MAX_CHUNK_SIZE: usize = 1 << 30;

/// The chunk size used when the caller does not choose one (1 MiB).
pub const DEFAULT_CHUNK_SIZE: usize = 1 << 20;

/// The most bytes of framing (tags, padding) a layout may add to a chunk's payload.
pub const MAX_FRAMING: usize = 4096;

/// The chunk size of a cipher job: whole 16-byte blocks (so that a chunk holds whole blocks of
/// every cipher paracrypt has), from 16 bytes to 1 GiB. It counts the data a chunk carries; a
/// container's framing (tag, padding) comes on top, so a sealed 1 GiB chunk is a little longer.
///
/// Checked once, when it is made; everything that takes one can rely on it.
///
/// ```
/// use paracrypt_core::plan::ChunkSize;
///
/// let size = ChunkSize::new(64 * 1024)?;
/// assert_eq!(size.get(), 65536);
/// assert!(ChunkSize::new(1 << 30).is_ok());
/// assert_eq!(
///     ChunkSize::new(1000).unwrap_err().to_string(),
///     "invalid chunk size 1000: must be a multiple of 16 bytes"
/// );
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkSize(usize);

impl ChunkSize {
    /// The smallest chunk size: one 16-byte block.
    pub const MIN: ChunkSize = ChunkSize(16);
    /// The largest chunk size: [`MAX_CHUNK_SIZE`].
    pub const MAX: ChunkSize = ChunkSize(MAX_CHUNK_SIZE);
    /// [`DEFAULT_CHUNK_SIZE`].
    pub const DEFAULT: ChunkSize = ChunkSize(DEFAULT_CHUNK_SIZE);

    /// Checks `bytes`: a multiple of 16, from 16 to [`MAX_CHUNK_SIZE`]. The error quotes
    /// `bytes` and says which rule it breaks.
    pub fn new(bytes: usize) -> Result<Self> {
        let reason = if bytes > MAX_CHUNK_SIZE {
            "must be at most 1 GiB"
        } else if bytes == 0 {
            "must be at least 16 bytes"
        } else if !bytes.is_multiple_of(16) {
            "must be a multiple of 16 bytes"
        } else {
            return Ok(ChunkSize(bytes));
        };
        Err(Error::ChunkSize {
            size: bytes as u64,
            reason,
        })
    }

    /// The size in bytes.
    pub const fn get(self) -> usize {
        self.0
    }
}

impl Default for ChunkSize {
    fn default() -> Self {
        ChunkSize::DEFAULT
    }
}

impl TryFrom<usize> for ChunkSize {
    type Error = Error;

    fn try_from(bytes: usize) -> Result<Self> {
        ChunkSize::new(bytes)
    }
}

impl From<ChunkSize> for usize {
    fn from(size: ChunkSize) -> usize {
        size.0
    }
}

impl std::fmt::Display for ChunkSize {
    /// The size in bytes, as a number.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// How the last chunk's output length follows from its input length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// The last chunk grows or shrinks by the same fixed amount as every chunk
    /// (`output_chunk - input_chunk`): no framing (raw CTR, RC4, unpadded ECB/CBC), or a tag
    /// per chunk (the container's AEAD and CTR suites).
    Fixed,
    /// PKCS#7 encryption: the last chunk's output is its input rounded up to the next whole
    /// `block` (a whole extra block when the input is already aligned), plus `overhead` bytes
    /// of framing (a MAC; 0 for raw ciphers).
    Pad {
        /// Block size in bytes.
        block: usize,
        /// Framing bytes added after the padded data.
        overhead: usize,
    },
    /// PKCS#7 decryption: the last chunk's output is at most its input less `overhead`; the
    /// exact length is known only once the padding has been decrypted and checked.
    Unpad {
        /// Framing bytes removed before the padded data.
        overhead: usize,
    },
    /// A digest of each chunk: every chunk, the last one too (even when short or empty),
    /// outputs exactly `output_chunk` bytes computed from its whole input (the leaves of a
    /// signed file's tree hash). The chunk's payload is its input.
    Digest,
}

/// Where each chunk sits in the input and the output, independent of the total length.
///
/// Streaming work (stdin → stdout) uses the layout alone, since the total is not known in
/// advance; positional work builds a [`ChunkPlan`] from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkLayout {
    /// Bytes before the first chunk in the input (a container header when decrypting).
    pub input_offset: u64,
    /// Input bytes per chunk (every chunk but the last is exactly this long).
    pub input_chunk: usize,
    /// Bytes before the first chunk in the output (a container header when encrypting).
    pub output_offset: u64,
    /// Output bytes per chunk (every chunk but the last is exactly this long).
    pub output_chunk: usize,
    /// The last chunk's rule.
    pub tail: Tail,
}

impl ChunkLayout {
    /// A layout where output chunk `i` is input chunk `i` transformed in place.
    pub fn identity(chunk_size: usize) -> Result<Self> {
        Self::framed(0, chunk_size, 0, chunk_size, Tail::Fixed)
    }

    /// A general layout. The smaller of the two chunk sizes is the chunk's payload (framing only
    /// adds bytes): it must pass [`check_chunk_size`], and the other may exceed it by at most
    /// [`MAX_FRAMING`] bytes.
    pub fn framed(
        input_offset: u64,
        input_chunk: usize,
        output_offset: u64,
        output_chunk: usize,
        tail: Tail,
    ) -> Result<Self> {
        let payload = input_chunk.min(output_chunk);
        check_chunk_size(payload)?;
        if input_chunk.max(output_chunk) - payload > MAX_FRAMING {
            return Err(Error::ChunkSize {
                size: input_chunk.max(output_chunk) as u64,
                reason: "frames its payload with more than 4096 bytes",
            });
        }
        Ok(ChunkLayout {
            input_offset,
            input_chunk,
            output_offset,
            output_chunk,
            tail,
        })
    }

    /// A layout where each input chunk of `chunk` bytes (after `input_offset` bytes) becomes a
    /// digest of `digest_len` bytes in the output ([`Tail::Digest`]): the output is the list of
    /// the chunks' digests, chunk `i`'s at `i · digest_len`.
    pub fn digest(input_offset: u64, chunk: usize, digest_len: usize) -> Result<Self> {
        check_chunk_size(chunk)?;
        if digest_len == 0 || digest_len > MAX_FRAMING {
            return Err(Error::ChunkSize {
                size: digest_len as u64,
                reason: "is no digest length (1 to 4096 bytes)",
            });
        }
        Ok(ChunkLayout {
            input_offset,
            input_chunk: chunk,
            output_offset: 0,
            output_chunk: digest_len,
            tail: Tail::Digest,
        })
    }

    /// The largest buffer one chunk needs: room for its input and for its output.
    pub fn max_buffer(&self) -> usize {
        let pad = match self.tail {
            Tail::Pad { block, .. } => block,
            Tail::Fixed | Tail::Unpad { .. } | Tail::Digest => 0,
        };
        self.input_chunk.max(self.output_chunk) + pad
    }

    /// The payload bytes of every chunk but the last: the smaller of the input and output chunk
    /// sizes (a seal adds framing to its input, an open removes it from its input).
    pub fn payload_chunk(&self) -> usize {
        match self.tail {
            Tail::Digest => self.input_chunk,
            _ => self.input_chunk.min(self.output_chunk),
        }
    }

    /// Where chunk `index`'s payload starts in the unframed data (the plaintext of a container,
    /// the data itself for a raw cipher): the offset a transform sees in
    /// [`ChunkCtx::offset`](crate::engine::ChunkCtx::offset).
    pub fn payload_start(&self, index: u64) -> u64 {
        index * self.payload_chunk() as u64
    }

    /// Where chunk `index` starts in the input.
    pub fn input_start(&self, index: u64) -> u64 {
        self.input_offset + index * self.input_chunk as u64
    }

    /// Where chunk `index` starts in the output.
    pub fn output_start(&self, index: u64) -> u64 {
        self.output_offset + index * self.output_chunk as u64
    }

    /// The output length of a chunk with `input_len` input bytes, or for [`Tail::Unpad`] the
    /// largest it can be. `None` when the input is too short to hold the chunk's framing.
    pub fn output_len(&self, input_len: usize, is_last: bool) -> Option<usize> {
        if !is_last {
            return (input_len == self.input_chunk).then_some(self.output_chunk);
        }
        match self.tail {
            Tail::Fixed => (input_len + self.output_chunk).checked_sub(self.input_chunk),
            Tail::Pad { block, overhead } => Some((input_len / block + 1) * block + overhead),
            Tail::Unpad { overhead } => input_len.checked_sub(overhead),
            Tail::Digest => Some(self.output_chunk),
        }
    }
}

/// Checks a layout's chunk size against the engine's limits: from 1 byte to [`MAX_CHUNK_SIZE`].
/// (The ciphers ask for more: see [`ChunkSize`].)
pub fn check_chunk_size(size: usize) -> Result<()> {
    let reason = if size == 0 {
        "must be at least 1 byte"
    } else if size > MAX_CHUNK_SIZE {
        "must be at most 1 GiB"
    } else {
        return Ok(());
    };
    Err(Error::ChunkSize {
        size: size as u64,
        reason,
    })
}

/// One chunk of a plan: its index and where it reads and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Position in the plan, from 0.
    pub index: u64,
    /// Input byte range.
    pub input: Range<u64>,
    /// Output byte range (for [`Tail::Unpad`], the largest it can be).
    pub output: Range<u64>,
    /// Whether this is the plan's last chunk.
    pub is_last: bool,
}

impl Chunk {
    /// Input length in bytes.
    pub fn input_len(&self) -> usize {
        (self.input.end - self.input.start) as usize
    }

    /// Output length in bytes (for [`Tail::Unpad`], the largest it can be).
    pub fn output_len(&self) -> usize {
        (self.output.end - self.output.start) as usize
    }
}

/// A [`ChunkLayout`] applied to an input of known length.
///
/// There is always at least one chunk: empty input is one empty last chunk, so padding and
/// container framing have somewhere to go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkPlan {
    layout: ChunkLayout,
    input_len: u64,
    count: u64,
}

impl ChunkPlan {
    /// Plans `input_len` bytes (the whole input, including any `input_offset`) with `layout`.
    ///
    /// Fails when the input is shorter than the layout's offset. A last chunk too short to hold
    /// its framing (a tag) is planned with an empty output: the transform that opens it reports
    /// it, in chunk order with every other failure.
    pub fn new(layout: ChunkLayout, input_len: u64) -> Result<Self> {
        let payload = input_len
            .checked_sub(layout.input_offset)
            .ok_or(Error::Truncated { index: 0 })?;
        let count = payload.div_ceil(layout.input_chunk as u64).max(1);
        Ok(ChunkPlan {
            layout,
            input_len,
            count,
        })
    }

    /// An identity plan: `len` bytes in chunks of `chunk_size`, output where the input was.
    pub fn identity(len: u64, chunk_size: usize) -> Result<Self> {
        Self::new(ChunkLayout::identity(chunk_size)?, len)
    }

    /// The layout this plan applies.
    pub fn layout(&self) -> &ChunkLayout {
        &self.layout
    }

    /// Number of chunks (at least 1).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Total input length.
    pub fn input_len(&self) -> u64 {
        self.input_len
    }

    /// Total output length (for [`Tail::Unpad`], the largest it can be).
    pub fn output_len(&self) -> u64 {
        self.chunk(self.count - 1).output.end
    }

    /// The largest buffer any chunk of this plan needs: room for its input and for its output.
    ///
    /// At most [`ChunkLayout::max_buffer`], and less when the input is shorter than one chunk:
    /// a 1 KiB input planned with 512 MiB chunks needs a buffer of about 1 KiB.
    ///
    /// ```
    /// use paracrypt_core::plan::ChunkPlan;
    ///
    /// assert_eq!(ChunkPlan::identity(1000, 1 << 29).unwrap().max_buffer(), 1000);
    /// assert_eq!(ChunkPlan::identity(10_000, 4096).unwrap().max_buffer(), 4096);
    /// ```
    pub fn max_buffer(&self) -> usize {
        let last = self.chunk(self.count - 1);
        let last_needs = last.input_len().max(last.output_len());
        if self.count == 1 {
            last_needs
        } else {
            last_needs.max(self.layout.input_chunk.max(self.layout.output_chunk))
        }
    }

    /// Chunk `index`.
    ///
    /// # Panics
    /// If `index >= self.len()`.
    pub fn chunk(&self, index: u64) -> Chunk {
        assert!(
            index < self.count,
            "chunk {index} out of a plan of {}",
            self.count
        );
        let layout = &self.layout;
        let is_last = index + 1 == self.count;
        let start = layout.input_start(index);
        let end = if is_last {
            self.input_len
        } else {
            start + layout.input_chunk as u64
        };
        let out_start = layout.output_start(index);
        let out_len = layout
            .output_len((end - start) as usize, is_last)
            .unwrap_or(0);
        Chunk {
            index,
            input: start..end,
            output: out_start..out_start + out_len as u64,
            is_last,
        }
    }

    /// Every chunk in order.
    pub fn chunks(&self) -> impl Iterator<Item = Chunk> + '_ {
        (0..self.count).map(|i| self.chunk(i))
    }

    /// Block `part` of `parts` contiguous blocks of chunks whose lengths differ by at most one
    /// chunk: the share of one of `parts` workers that each take one run of the plan (an MPI
    /// rank under the static schedule, a Dask task). Every chunk is in exactly one block; a
    /// block is empty when there are more parts than chunks.
    ///
    /// ```
    /// use paracrypt_core::plan::ChunkPlan;
    ///
    /// let plan = ChunkPlan::identity(10 * 4096, 4096).unwrap();
    /// let blocks: Vec<_> = (0..3).map(|part| plan.block(part, 3)).collect();
    /// assert_eq!(blocks, [0..3, 3..6, 6..10]);
    /// ```
    ///
    /// # Panics
    /// If `part >= parts`.
    pub fn block(&self, part: usize, parts: usize) -> Range<u64> {
        share(self.count, part, parts)
    }

    /// The output bytes of the chunks `chunks` (a run of consecutive chunks): from the first
    /// one's output start to the last one's output end (for [`Tail::Unpad`], the largest it can
    /// be). The header before chunk 0 is not included.
    ///
    /// # Panics
    /// If `chunks` is empty or goes beyond the plan.
    pub fn output_span(&self, chunks: Range<u64>) -> Range<u64> {
        assert!(chunks.start < chunks.end, "an empty run of chunks");
        self.chunk(chunks.start).output.start..self.chunk(chunks.end - 1).output.end
    }

    /// The chunks whose output overlaps `range` (for random access).
    pub fn chunks_covering_output(&self, range: Range<u64>) -> Range<u64> {
        let data = |x: u64| x.saturating_sub(self.layout.output_offset);
        let size = self.layout.output_chunk as u64;
        let first = (data(range.start) / size).min(self.count - 1);
        let last = if range.end <= range.start {
            first
        } else {
            (data(range.end - 1) / size).min(self.count - 1)
        };
        first..last + 1
    }
}

/// Share `part` of `parts` of `count` consecutive units — chunks ([`ChunkPlan::block`]), or
/// runs of them such as the parts of a multipart upload that an MPI schedule hands out: the
/// units `count × part / parts` up to `count × (part + 1) / parts`. The shares are contiguous,
/// cover every unit once, and differ in length by at most one; a share is empty when there are
/// more parts than units.
///
/// ```
/// use paracrypt_core::plan::share;
///
/// let shares: Vec<_> = (0..3).map(|part| share(10, part, 3)).collect();
/// assert_eq!(shares, [0..3, 3..6, 6..10]);
/// ```
///
/// # Panics
/// If `part >= parts`.
pub fn share(count: u64, part: usize, parts: usize) -> Range<u64> {
    assert!(part < parts, "share {part} of {parts}");
    let at = |p: usize| (count as u128 * p as u128 / parts as u128) as u64;
    at(part)..at(part + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_chunk_once() {
        for chunks in [1u64, 2, 3, 7, 100, 101] {
            let plan = ChunkPlan::identity(chunks * 16, 16).unwrap();
            for parts in 1..9 {
                let mut next = 0;
                for part in 0..parts {
                    let b = plan.block(part, parts);
                    assert_eq!(b.start, next);
                    assert!(b.end - b.start <= chunks / parts as u64 + 1);
                    next = b.end;
                }
                assert_eq!(next, chunks);
            }
        }
    }

    #[test]
    fn an_output_span_runs_from_the_first_chunk_to_the_end_of_the_last() {
        let layout = ChunkLayout::framed(0, 100, 40, 116, Tail::Fixed).unwrap();
        let plan = ChunkPlan::new(layout, 250).unwrap();
        assert_eq!(plan.output_span(0..1), 40..156);
        assert_eq!(plan.output_span(1..3), 156..40 + 2 * 116 + 50 + 16);
        assert_eq!(plan.output_span(0..3).end, plan.output_len());
    }

    #[test]
    fn empty_input_is_one_empty_chunk() {
        let plan = ChunkPlan::identity(0, 16).unwrap();
        assert_eq!(plan.len(), 1);
        assert_eq!(plan.chunk(0).input, 0..0);
        assert!(plan.chunk(0).is_last);
    }

    #[test]
    fn aligned_input_has_no_empty_tail_chunk() {
        let plan = ChunkPlan::identity(64, 16).unwrap();
        assert_eq!(plan.len(), 4);
        assert_eq!(plan.chunk(3).input, 48..64);
    }

    #[test]
    fn padding_grows_only_the_last_chunk() {
        let layout = ChunkLayout::framed(
            0,
            32,
            0,
            32,
            Tail::Pad {
                block: 16,
                overhead: 0,
            },
        )
        .unwrap();
        let plan = ChunkPlan::new(layout, 64).unwrap();
        assert_eq!(plan.chunk(0).output, 0..32);
        assert_eq!(plan.chunk(1).output, 32..80);
        let plan = ChunkPlan::new(layout, 70).unwrap();
        assert_eq!(plan.chunk(2).output, 64..80);
        assert_eq!(plan.output_len(), 80);
    }

    #[test]
    fn framed_layout_maps_header_and_tags() {
        // 10-byte header, 100-byte chunks sealed with 16-byte tags.
        let layout = ChunkLayout::framed(10, 116, 0, 100, Tail::Fixed).unwrap();
        let plan = ChunkPlan::new(layout, 10 + 116 + 20).unwrap();
        assert_eq!(plan.len(), 2);
        assert_eq!(plan.chunk(1).input, 126..146);
        assert_eq!(plan.chunk(1).output, 100..104);
        // A last chunk shorter than its tag is planned with no output, for the transform to
        // report.
        let short = ChunkPlan::new(layout, 10 + 116 + 15).unwrap();
        assert_eq!(short.chunk(1).input, 126..141);
        assert_eq!(short.chunk(1).output, 100..100);
        assert!(matches!(
            ChunkPlan::new(layout, 5),
            Err(Error::Truncated { index: 0 })
        ));
    }

    #[test]
    fn buffers_fit_the_largest_chunk_not_the_chunk_size() {
        let pad = |block| Tail::Pad {
            block,
            overhead: 32,
        };
        let sealing = ChunkLayout::framed(0, 1 << 29, 116, (1 << 29) + 48, pad(16)).unwrap();
        let small = ChunkPlan::new(sealing, 1000).unwrap();
        assert_eq!(small.max_buffer(), 1008 + 32);
        assert_eq!(small.max_buffer() as u64, small.chunk(0).output.end - 116);
        let empty = ChunkPlan::new(sealing, 0).unwrap();
        assert_eq!(empty.max_buffer(), 16 + 32);
        // Several chunks: a full chunk's input and output, whichever is longer.
        let layout = ChunkLayout::framed(0, 64, 0, 80, Tail::Fixed).unwrap();
        assert_eq!(ChunkPlan::new(layout, 130).unwrap().max_buffer(), 80);
        // Never more than the layout's bound (raw CBC: padding, no framing).
        let raw_cbc = Tail::Pad {
            block: 16,
            overhead: 0,
        };
        for len in [0, 1, 15, 16, 17, 63, 64, 65, 1000] {
            let plan =
                ChunkPlan::new(ChunkLayout::framed(0, 64, 0, 64, raw_cbc).unwrap(), len).unwrap();
            assert!(plan.max_buffer() <= plan.layout().max_buffer());
            assert!(
                plan.chunks()
                    .all(|c| c.input_len().max(c.output_len()) <= plan.max_buffer())
            );
        }
    }

    #[test]
    fn chunk_size_limits() {
        assert!(ChunkLayout::identity(0).is_err());
        assert!(ChunkLayout::identity(MAX_CHUNK_SIZE + 1).is_err());
        assert!(ChunkLayout::identity(MAX_CHUNK_SIZE).is_ok());
    }

    #[test]
    fn framing_may_take_a_chunk_past_the_limit() {
        // A sealed 1 GiB chunk (payload + tag) is a valid layout either way round.
        let max = MAX_CHUNK_SIZE;
        let seal = ChunkLayout::framed(0, max, 116, max + 40, Tail::Fixed).unwrap();
        assert_eq!(seal.payload_chunk(), max);
        assert_eq!(seal.payload_start(2), 2 * max as u64);
        assert!(ChunkLayout::framed(116, max + 16, 0, max, Tail::Fixed).is_ok());
        // The payload itself is bounded, and so is the framing.
        assert!(ChunkLayout::framed(0, max + 16, 0, max + 32, Tail::Fixed).is_err());
        assert!(ChunkLayout::framed(0, 4096, 0, 4096 + MAX_FRAMING + 1, Tail::Fixed).is_err());
    }

    #[test]
    fn chunk_sizes_are_whole_blocks_up_to_1_gib() {
        for good in [16, 4096, 1 << 20, MAX_CHUNK_SIZE] {
            assert_eq!(ChunkSize::new(good).unwrap().get(), good);
        }
        for (bad, reason) in [
            (0, "must be at least 16 bytes"),
            (8, "must be a multiple of 16 bytes"),
            (1000, "must be a multiple of 16 bytes"),
            (MAX_CHUNK_SIZE + 16, "must be at most 1 GiB"),
            (usize::MAX, "must be at most 1 GiB"),
        ] {
            let err = ChunkSize::new(bad).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("invalid chunk size {bad}: {reason}")
            );
        }
        assert_eq!(ChunkSize::default(), ChunkSize::DEFAULT);
        assert_eq!(ChunkSize::try_from(4096usize).unwrap().to_string(), "4096");
    }

    #[test]
    fn covering_chunks() {
        let plan = ChunkPlan::identity(100, 10).unwrap();
        assert_eq!(plan.chunks_covering_output(15..35), 1..4);
        assert_eq!(plan.chunks_covering_output(0..10), 0..1);
        assert_eq!(plan.chunks_covering_output(95..500), 9..10);
    }

    #[test]
    fn large_inputs_over_4_gib() {
        let plan = ChunkPlan::identity(5 << 30, 1 << 20).unwrap();
        assert_eq!(plan.len(), 5 * 1024);
        assert_eq!(plan.chunk(5 * 1024 - 1).input.end, 5 << 30);
    }
}
