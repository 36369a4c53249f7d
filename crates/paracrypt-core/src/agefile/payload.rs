//! The age payload: STREAM over ChaCha20-Poly1305 in 64 KiB chunks, each chunk sealed on its
//! own, so every core takes chunks.
//!
//! Chunk `i` is sealed with the 12-byte nonce `i` (11 bytes, big-endian) ‖ `0x01` for the last
//! chunk, `0x00` for the others, and no associated data. Every chunk but the last holds
//! exactly 64 KiB; the last holds 1 to 64 KiB, or nothing when the whole payload is empty.

use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::plan::{ChunkLayout, Tail};
use crate::provider::{AeadAlg, Provider};
use crate::raw::Direction;
use crate::stream::{AeadChunks, ChunkCipher, Open, Seal};

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

/// ChaCha20-Poly1305 under the payload key, computed by a [`Provider`], as STREAM chunks
/// without associated data.
fn cipher(key: Zeroizing<[u8; 32]>, provider: Provider) -> Result<Box<dyn ChunkCipher>> {
    let aead = provider
        .aead(AeadAlg::ChaCha20Poly1305, &key[..])
        .ok_or(Error::Provider {
            what: "keying ChaCha20-Poly1305",
        })?;
    Ok(Box::new(AeadChunks {
        aead,
        aad: Vec::new(),
    }))
}

/// The transform that seals the payload's chunks under `key`.
pub(crate) fn seal(key: Zeroizing<[u8; 32]>, provider: Provider) -> Result<Seal> {
    Ok(Seal(cipher(key, provider)?))
}

/// The transform that opens the payload's chunks under `key` and says why one fails: cut after
/// it, extended after it, or an empty last chunk after data, which age refuses.
pub(crate) fn open(key: Zeroizing<[u8; 32]>, provider: Provider) -> Result<Open> {
    Ok(Open {
        cipher: cipher(key, provider)?,
        tag_len: TAG_LEN,
        empty_last: |index| Error::EmptyLastChunk { index },
        search_end: false,
        search_cost: 0,
    })
}
