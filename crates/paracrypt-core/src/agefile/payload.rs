//! The age payload: STREAM over ChaCha20-Poly1305 in 64 KiB chunks, each chunk sealed on its
//! own, so every core takes chunks.
//!
//! Chunk `i` is sealed with the 12-byte nonce `i` (11 bytes, big-endian) ‖ `0x01` for the last
//! chunk, `0x00` for the others, and no associated data. Every chunk but the last holds
//! exactly 64 KiB; the last holds 1 to 64 KiB, or nothing when the whole payload is empty.

use zeroize::Zeroizing;

use crate::engine::{ChunkCtx, ChunkTransform};
use crate::error::{Error, Result};
use crate::plan::{ChunkLayout, Tail};
use crate::provider::{self, Aead, AeadAlg, Provider, stream_nonce};
use crate::raw::Direction;

/// Plaintext bytes per chunk.
pub const CHUNK_SIZE: usize = 64 * 1024;
/// The tag after every chunk.
pub const TAG_LEN: usize = 16;
/// A full sealed chunk.
pub const SEALED_CHUNK_LEN: usize = CHUNK_SIZE + TAG_LEN;

/// Where chunks go: plaintext in `CHUNK_SIZE` pieces, sealed after `prefix` bytes (header and
/// nonce) when encrypting; the reverse when decrypting.
pub(crate) fn layout(direction: Direction, prefix: u64) -> ChunkLayout {
    let layout = match direction {
        Direction::Encrypt => {
            ChunkLayout::framed(0, CHUNK_SIZE, prefix, SEALED_CHUNK_LEN, Tail::Fixed)
        }
        Direction::Decrypt => {
            ChunkLayout::framed(prefix, SEALED_CHUNK_LEN, 0, CHUNK_SIZE, Tail::Fixed)
        }
    };
    layout.expect("64 KiB chunks with 16-byte tags are a valid layout")
}

/// ChaCha20-Poly1305 under the payload key, computed by a [`Provider`]: the only place the age
/// payload calls the AEAD.
pub(crate) struct PayloadCipher(Box<dyn Aead>);

impl PayloadCipher {
    pub(crate) fn new(key: Zeroizing<[u8; 32]>, provider: Provider) -> Result<Self> {
        provider
            .aead(AeadAlg::ChaCha20Poly1305, &key[..])
            .map(PayloadCipher)
            .ok_or(Error::Provider {
                what: "keying ChaCha20-Poly1305",
            })
    }

    /// Encrypts `buf[..len]` in place and appends the tag; returns the sealed length.
    fn seal(&self, index: u64, last: bool, buf: &mut [u8], len: usize) -> Result<usize> {
        let tag = self
            .0
            .seal(&stream_nonce(index, last), &[], &mut buf[..len])?;
        buf[len..len + TAG_LEN].copy_from_slice(&tag);
        Ok(len + TAG_LEN)
    }

    /// Checks and decrypts `buf[..len]` in place; the plaintext length, or `None` when the
    /// chunk does not authenticate under this position (and then `buf` is as it was).
    fn open(&self, index: u64, last: bool, buf: &mut [u8], len: usize) -> Result<Option<usize>> {
        let Some(data_len) = len.checked_sub(TAG_LEN) else {
            return Ok(None);
        };
        let (data, tag) = buf[..len].split_at_mut(data_len);
        let tag: &[u8; provider::TAG_LEN] = (&*tag).try_into().expect("a 16-byte tag");
        let opened = self.0.open(&stream_nonce(index, last), &[], data, tag)?;
        Ok(opened.then_some(data_len))
    }
}

/// Seals chunks.
pub(crate) struct Seal(pub PayloadCipher);

impl ChunkTransform for Seal {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        self.0.seal(ctx.index, ctx.is_last, buf, len)
    }
}

/// Opens chunks and says why one fails: authenticating only under the other last-chunk flag
/// means the file was cut after it (or goes on after its last chunk); an empty last chunk
/// after data is refused, as age refuses it.
pub(crate) struct Open(pub PayloadCipher);

impl ChunkTransform for Open {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        let (index, last) = (ctx.index, ctx.is_last);
        if len < TAG_LEN {
            return Err(Error::Truncated { index });
        }
        match self.0.open(index, last, buf, len)? {
            Some(0) if last && index > 0 => Err(Error::EmptyLastChunk { index }),
            Some(n) => Ok(n),
            None if self.0.open(index, !last, buf, len)?.is_some() => Err(if last {
                Error::TruncatedAfter { index }
            } else {
                Error::TrailingData { index }
            }),
            None => Err(Error::ChunkAuth { index }),
        }
    }
}
