//! STREAM (Hoang, Reyhanitabar, Rogaway and Vizár, 2015): each chunk sealed on its own under a
//! nonce made of its index and a last-chunk flag, so chunks seal and open on any core in any
//! order, yet a stream that is cut, extended, reordered or spliced fails to open. The one
//! implementation behind the container's chunks and age's payload; each keeps its own key
//! schedule and framing and gives this module a [`ChunkCipher`].
//!
//! - [`nonce`]: chunk `i`'s 12-byte nonce, `i` as an 88-bit big-endian counter, then the flag.
//! - [`AeadChunks`]: sealing and opening chunk `i` with an AEAD (and fixed associated data).
//! - [`Seal`] and [`Open`]: the engine's transforms; [`Open`] says why a chunk fails: cut after
//!   it, extended after it, or damaged.

use crate::engine::{ChunkCtx, ChunkTransform};
use crate::error::{Error, Result};
use crate::provider::{Aead, NONCE_LEN, TAG_LEN};

/// The STREAM nonce of chunk `index`: the index as an 88-bit big-endian counter, then the
/// last-chunk flag byte.
pub(crate) fn nonce(index: u64, last: bool) -> [u8; NONCE_LEN] {
    let mut nonce = [0u8; NONCE_LEN];
    nonce[3..11].copy_from_slice(&index.to_be_bytes());
    nonce[11] = u8::from(last);
    nonce
}

/// One format's chunk operations, given the chunk's position (index, last-chunk flag, offset).
///
/// A sealed chunk is its ciphertext (as long as the plaintext, or padded to whole blocks by
/// the CBC suites) and then what authenticates it: an AEAD tag ([`AeadChunks`]: age's payload
/// and the container's AEAD suites), an HMAC (the container's legacy suites), and in a signed
/// container a signature after either. [`Open`] is told only the least that adds (its
/// `tag_len`).
pub(crate) trait ChunkCipher: Send + Sync {
    /// Seals `buf[..len]` in place (`buf` has room for the sealed chunk); returns the sealed
    /// length.
    fn seal(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize>;
    /// Checks and decrypts the sealed chunk `buf[..len]` in place; returns the plaintext's
    /// length (it is then `buf[..n]`), or `None` when the chunk does not authenticate, and then
    /// `buf` is exactly as it was (so the caller may open it again as another position or
    /// length). An error is the provider's own failure, or a verdict that needs no diagnosis:
    /// a signed chunk whose signature fails while its tag holds ([`Error::ChunkSignature`],
    /// `buf` left as it was); never a wrong tag.
    fn open(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<Option<usize>>;
    /// As [`seal`](Self::seal), from `input` into `output` (room for the sealed chunk).
    fn seal_to(&self, chunk: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize>;
    /// As [`open`](Self::open), from the sealed chunk `input` into `output` (room for the
    /// plaintext of the longest chunk the layout has), with the same errors. `None`: the chunk
    /// does not authenticate; `output` then holds no plaintext. `input` is never changed. A CBC
    /// chunk that authenticates but opens to more than `output` holds (a malformed chunk made
    /// with the key) gives its length unwritten: no chunk of the layout has that length, so the
    /// caller refuses it.
    fn open_to(
        &self,
        chunk: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Option<usize>>;
}

/// Chunks sealed with an AEAD under the STREAM [`nonce`], with the same associated data for
/// every chunk (the container's header MAC; nothing for age), the tag appended.
pub(crate) struct AeadChunks {
    /// The AEAD, keyed.
    pub aead: Box<dyn Aead>,
    /// The associated data of every chunk.
    pub aad: Vec<u8>,
}

impl ChunkCipher for AeadChunks {
    fn seal(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        let nonce = nonce(chunk.index, chunk.is_last);
        let tag = self.aead.seal(&nonce, &self.aad, &mut buf[..len])?;
        buf[len..len + TAG_LEN].copy_from_slice(&tag);
        Ok(len + TAG_LEN)
    }

    fn open(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<Option<usize>> {
        let Some(data_len) = len.checked_sub(TAG_LEN) else {
            return Ok(None);
        };
        let (data, tag) = buf[..len].split_at_mut(data_len);
        let tag: [u8; TAG_LEN] = (&*tag).try_into().expect("a 16-byte tag");
        let nonce = nonce(chunk.index, chunk.is_last);
        let opened = self.aead.open(&nonce, &self.aad, data, &tag)?;
        Ok(opened.then_some(data_len))
    }

    fn seal_to(&self, chunk: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        let len = input.len();
        let nonce = nonce(chunk.index, chunk.is_last);
        let tag = self
            .aead
            .seal_to(&nonce, &self.aad, input, &mut output[..len])?;
        output[len..len + TAG_LEN].copy_from_slice(&tag);
        Ok(len + TAG_LEN)
    }

    fn open_to(
        &self,
        chunk: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Option<usize>> {
        let Some(data_len) = input.len().checked_sub(TAG_LEN) else {
            return Ok(None);
        };
        let (data, tag) = input.split_at(data_len);
        let tag: [u8; TAG_LEN] = tag.try_into().expect("a 16-byte tag");
        let nonce = nonce(chunk.index, chunk.is_last);
        let opened = self
            .aead
            .open_to(&nonce, &self.aad, data, &mut output[..data_len], &tag)?;
        Ok(opened.then_some(data_len))
    }
}

/// The engine transform that seals chunks.
pub(crate) struct Seal(pub Box<dyn ChunkCipher>);

impl ChunkTransform for Seal {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        self.0.seal(ctx, buf, len)
    }

    fn transform_to(&self, ctx: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        self.0.seal_to(ctx, input, output)
    }
}

/// How many bytes in all the search for an early end ([`Open::ends_inside`]) may authenticate
/// in one failed chunk: 256 MiB, a fraction of a second. It covers every length of a chunk of
/// up to 16 KiB, and the last 256 lengths of a 1 MiB chunk (bytes appended after a short last
/// chunk: `echo >> file`, or a file written twice).
const END_SEARCH_BUDGET: usize = 256 << 20;

/// The engine transform that opens chunks and, when one fails, says why: a chunk that
/// authenticates only with the other last-chunk flag means the stream was cut after it (or
/// extended after it). A chunk that authenticates but opens to a length no writer produces
/// (not the chunk size before the last; more than the chunk size, or empty after chunk 0, as
/// the last) fails, so every plaintext has exactly one encoding.
pub(crate) struct Open {
    /// The format's chunk operations.
    pub cipher: Box<dyn ChunkCipher>,
    /// The bytes a sealed chunk adds.
    pub tag_len: usize,
    /// What an empty last chunk after data is reported as (age names it; the container
    /// reports a damaged chunk).
    pub empty_last: fn(u64) -> Error,
    /// Whether a failed chunk is searched for a shorter prefix that authenticates as the last
    /// one (the stream really ended inside it, and bytes were appended).
    pub search_end: bool,
    /// What each try of that search costs beside the prefix's bytes, counted against its
    /// budget (a signed container checks a signature on each).
    pub search_cost: usize,
}

impl ChunkTransform for Open {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        self.open_or_diagnose(ctx, len, |chunk, len| self.cipher.open(chunk, buf, len))
    }

    fn transform_to(&self, ctx: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        self.open_or_diagnose(ctx, input.len(), |chunk, len| {
            self.cipher.open_to(chunk, &input[..len], output)
        })
    }
}

/// Opens the chunk as `chunk` says from its first `len` bytes (in place or into an output
/// slot): the plaintext length, or `None` when it does not authenticate.
type TryOpen<'a> = dyn FnMut(&ChunkCtx<'_>, usize) -> Result<Option<usize>> + 'a;

impl Open {
    /// Opens a chunk of `len` bytes with `open`; when it fails, opens it again as the other
    /// kind of chunk, or shorter, to say why.
    fn open_or_diagnose(
        &self,
        ctx: &ChunkCtx<'_>,
        len: usize,
        mut open: impl FnMut(&ChunkCtx<'_>, usize) -> Result<Option<usize>>,
    ) -> Result<usize> {
        let (index, last) = (ctx.index, ctx.is_last);
        if len < self.tag_len {
            return Err(Error::Truncated { index });
        }
        // A chunk that opens only as the other kind (last or not) was moved to the end or away
        // from it: the stream was cut, or extended.
        let flipped = || ChunkCtx {
            is_last: !last,
            ..*ctx
        };
        let full = ctx.chunk_size;
        match open(ctx, len)? {
            Some(0) if last && index > 0 => Err((self.empty_last)(index)),
            Some(n) if n == full || (last && n < full) => Ok(n),
            Some(_) => Err(Error::ChunkAuth { index }),
            None if open(&flipped(), len)?.is_some() => Err(if last {
                Error::TruncatedAfter { index }
            } else {
                Error::TrailingData { index }
            }),
            None if self.search_end && self.ends_inside(ctx, len, &mut open)? => {
                Err(Error::TrailingData { index })
            }
            None => Err(Error::ChunkAuth { index }),
        }
    }

    /// Whether a shorter prefix of this failed chunk authenticates as the stream's last chunk:
    /// the stream really ended inside it, and what follows was appended. Tries the longest
    /// prefixes first, within [`END_SEARCH_BUDGET`]. A failed open leaves the chunk's bytes as
    /// they were ([`ChunkCipher::open`]'s contract, on every provider; out of place the input
    /// is never written), so each try sees them; the plaintext of a match is never used.
    fn ends_inside(
        &self,
        chunk: &ChunkCtx<'_>,
        len: usize,
        open: &mut TryOpen<'_>,
    ) -> Result<bool> {
        let as_last = ChunkCtx {
            is_last: true,
            ..*chunk
        };
        let mut budget = END_SEARCH_BUDGET;
        for prefix in (self.tag_len..len).rev() {
            match budget.checked_sub(prefix + self.search_cost) {
                Some(left) => budget = left,
                None => return Ok(false),
            }
            if open(&as_last, prefix)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
