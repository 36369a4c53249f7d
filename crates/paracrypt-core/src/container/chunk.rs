//! Sealing and opening one chunk: the per-chunk work of every suite, a pure function of the
//! chunk's index, its last-chunk flag and its bytes.
//!
//! - AEAD suites: nonce = 88-bit big-endian chunk index ‖ last-chunk flag byte (the STREAM
//!   construction of age and Tink), associated data = the header MAC, 16-byte tag appended.
//! - Legacy suites, encrypt-then-MAC: the chunk is encrypted, then
//!   `HMAC-SHA256(mac_key, header MAC ‖ u64 index ‖ flag ‖ ciphertext)` is appended; opening
//!   checks the MAC before decrypting anything.

use aes_gcm::aead::{AeadCore, AeadInOut, Nonce, Tag};
use cipher::block_padding::Pkcs7;
use cipher::{
    Array, BlockCipherDecrypt, BlockCipherEncrypt, BlockModeDecrypt, BlockModeEncrypt, InnerIvInit,
    KeyInit, StreamCipher, typenum::Unsigned,
};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::suite::Suite;
use crate::engine::{ChunkCtx, ChunkTransform, Transform};
use crate::error::{Error, Result};
use crate::raw::{Direction, RawCipher, RawCipherName};

/// RC4 keystream bytes every segment discards (the RC4-drop\[3072\] recommendation).
pub const RC4_DROP: usize = 3072;

/// Bytes of payload key material each suite takes from the key schedule.
pub(crate) fn payload_key_len(suite: Suite) -> usize {
    match suite {
        Suite::Aes256Gcm | Suite::ChaCha20Poly1305 => 32,
        Suite::Aes128Gcm => 16,
        Suite::Aes256CtrHmacSha256 | Suite::Rc4HmacSha256 => 32 + 32,
        Suite::DesEde3CbcHmacSha256 => 24 + 32,
        Suite::BfCbcHmacSha256 => 16 + 32,
    }
}

/// One suite's chunk operations, given the chunk's position (index, last-chunk flag, offset).
pub(crate) trait ChunkCipher: Send + Sync {
    /// Encrypts `buf[..len]` in place and appends the tag; returns the sealed length.
    fn seal(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> usize;
    /// Checks and decrypts `buf[..len]` (ciphertext and tag) in place; returns the plaintext
    /// length, or `None` when the chunk does not authenticate (then `buf` holds no plaintext).
    fn open(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Option<usize>;
}

/// The cipher for `suite` keyed with `payload` (from the key schedule), bound to `header_mac`.
pub(crate) fn chunk_cipher(
    suite: Suite,
    payload: &[u8],
    header_mac: &[u8],
) -> Box<dyn ChunkCipher> {
    let aad: [u8; 32] = header_mac.try_into().expect("header MAC is 32 bytes");
    let etm = |enc: Encryption, key_len: usize| -> Box<dyn ChunkCipher> {
        Box::new(EncryptThenMac {
            enc,
            mac: <Hmac<Sha256> as KeyInit>::new_from_slice(&payload[key_len..])
                .expect("HMAC takes any key"),
            header_mac: aad,
        })
    };
    match suite {
        Suite::Aes256Gcm => Box::new(AeadChunks {
            aead: aes_gcm::Aes256Gcm::new_from_slice(payload).expect("32-byte key"),
            aad,
        }),
        Suite::Aes128Gcm => Box::new(AeadChunks {
            aead: aes_gcm::Aes128Gcm::new_from_slice(payload).expect("16-byte key"),
            aad,
        }),
        Suite::ChaCha20Poly1305 => Box::new(AeadChunks {
            aead: chacha20poly1305::ChaCha20Poly1305::new_from_slice(payload).expect("32-byte key"),
            aad,
        }),
        Suite::Aes256CtrHmacSha256 => {
            // One CTR keystream over the whole payload (IV zero: the key is unique per file),
            // each chunk seeking to its own offset: the raw engine's CTR transform.
            let ctr = RawCipher::new(RawCipherName::Aes256Ctr, &payload[..32], Some(&[0; 16]))
                .expect("valid AES-256 key and IV")
                .transform(Direction::Encrypt);
            let Transform::Parallel(ctr) = ctr else {
                unreachable!("CTR is parallel")
            };
            etm(Encryption::Ctr(ctr), 32)
        }
        Suite::DesEde3CbcHmacSha256 => etm(
            Encryption::TripleDes(
                des::TdesEde3::new_from_slice(&payload[..24]).expect("24-byte key"),
            ),
            24,
        ),
        Suite::BfCbcHmacSha256 => etm(
            Encryption::Blowfish(
                blowfish::Blowfish::new_from_slice(&payload[..16]).expect("16-byte key"),
            ),
            16,
        ),
        Suite::Rc4HmacSha256 => etm(
            Encryption::SegmentedRc4(
                Hkdf::<Sha256>::from_prk(&payload[..32]).expect("32-byte PRK"),
            ),
            32,
        ),
    }
}

/// STREAM nonce: 88-bit big-endian counter ‖ last-chunk flag.
fn stream_nonce<A: AeadCore>(index: u64, last: bool) -> Nonce<A> {
    let mut nonce = Nonce::<A>::default();
    let n = nonce.len();
    nonce[n - 9..n - 1].copy_from_slice(&index.to_be_bytes());
    nonce[n - 1] = u8::from(last);
    nonce
}

struct AeadChunks<A> {
    aead: A,
    aad: [u8; 32],
}

impl<A: AeadInOut + Send + Sync> ChunkCipher for AeadChunks<A> {
    fn seal(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> usize {
        let tag = self
            .aead
            .encrypt_inout_detached(
                &stream_nonce::<A>(chunk.index, chunk.is_last),
                &self.aad,
                (&mut buf[..len]).into(),
            )
            .expect("chunks are far below the AEAD's length limit");
        let tag_len = A::TagSize::USIZE;
        buf[len..len + tag_len].copy_from_slice(&tag);
        len + tag_len
    }

    fn open(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Option<usize> {
        let data_len = len.checked_sub(A::TagSize::USIZE)?;
        let (data, tag) = buf[..len].split_at_mut(data_len);
        let tag = Tag::<A>::try_from(&tag[..]).ok()?;
        self.aead
            .decrypt_inout_detached(
                &stream_nonce::<A>(chunk.index, chunk.is_last),
                &self.aad,
                data.into(),
                &tag,
            )
            .ok()?;
        Some(data_len)
    }
}

// One per job, so the size of its largest variant (a Blowfish key schedule) does not matter.
#[allow(clippy::large_enum_variant)]
enum Encryption {
    Ctr(Box<dyn ChunkTransform + Send>),
    TripleDes(des::TdesEde3),
    Blowfish(blowfish::Blowfish),
    SegmentedRc4(Hkdf<Sha256>),
}

/// Encrypt-then-MAC with HMAC-SHA256.
struct EncryptThenMac {
    enc: Encryption,
    mac: Hmac<Sha256>,
    header_mac: [u8; 32],
}

const MAC_LEN: usize = 32;

impl EncryptThenMac {
    fn tag(&self, chunk: &ChunkCtx<'_>, ciphertext: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(&self.header_mac);
        mac.update(&chunk.index.to_be_bytes());
        mac.update(&[u8::from(chunk.is_last)]);
        mac.update(ciphertext);
        mac
    }

    /// Encrypts (or, for the stream ciphers, decrypts: the same operation) in place and returns
    /// the output length. CTR seeks to the chunk's plaintext offset; CBC pads every chunk, and
    /// its IV is the chunk index encrypted under the chunk key (NIST SP 800-38A, Appendix C).
    fn crypt(
        &self,
        direction: Direction,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        len: usize,
    ) -> Option<usize> {
        let index = chunk.index;
        match &self.enc {
            Encryption::Ctr(ctr) => ctr.transform(chunk, buf, len).ok(),
            Encryption::TripleDes(c) => cbc_chunk(c, direction, index, buf, len),
            Encryption::Blowfish(c) => cbc_chunk(c, direction, index, buf, len),
            Encryption::SegmentedRc4(prk) => {
                let mut key = zeroize::Zeroizing::new([0u8; 32]);
                let info = [&b"paracrypt v1 rc4 chunk "[..], &index.to_be_bytes()].concat();
                prk.expand(&info, &mut key[..])
                    .expect("32 bytes is a valid HKDF length");
                let mut rc4 = rc4::Rc4::new_from_slice(&key[..]).expect("32-byte RC4 key");
                rc4.write_keystream(&mut [0u8; RC4_DROP]);
                rc4.apply_keystream(&mut buf[..len]);
                Some(len)
            }
        }
    }
}

fn cbc_chunk<C>(
    cipher: &C,
    direction: Direction,
    index: u64,
    buf: &mut [u8],
    len: usize,
) -> Option<usize>
where
    C: BlockCipherEncrypt + BlockCipherDecrypt + Clone,
{
    let mut iv = Array::<u8, C::BlockSize>::default();
    let bs = iv.len();
    iv[bs - 8..].copy_from_slice(&index.to_be_bytes());
    cipher.encrypt_block(&mut iv);
    match direction {
        Direction::Encrypt => cbc::Encryptor::<C>::inner_iv_init(cipher.clone(), &iv)
            .encrypt_padded::<Pkcs7>(buf, len)
            .ok()
            .map(<[u8]>::len),
        Direction::Decrypt => cbc::Decryptor::<C>::inner_iv_init(cipher.clone(), &iv)
            .decrypt_padded::<Pkcs7>(&mut buf[..len])
            .ok()
            .map(<[u8]>::len),
    }
}

impl ChunkCipher for EncryptThenMac {
    fn seal(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> usize {
        let sealed = self
            .crypt(Direction::Encrypt, chunk, buf, len)
            .expect("the buffer has room for padding");
        let tag = self.tag(chunk, &buf[..sealed]).finalize().into_bytes();
        buf[sealed..sealed + MAC_LEN].copy_from_slice(&tag);
        sealed + MAC_LEN
    }

    fn open(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Option<usize> {
        let sealed = len.checked_sub(MAC_LEN)?;
        self.tag(chunk, &buf[..sealed])
            .verify_slice(&buf[sealed..len])
            .ok()?;
        self.crypt(Direction::Decrypt, chunk, buf, sealed)
    }
}

/// The engine transform that seals chunks.
pub(crate) struct Seal(pub Box<dyn ChunkCipher>);

impl ChunkTransform for Seal {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        Ok(self.0.seal(ctx, buf, len))
    }
}

/// How many bytes in all the search for an early end ([`Open::ends_inside`]) may authenticate
/// in one failed chunk: 256 MiB, a fraction of a second. It covers every length of a chunk of
/// up to 16 KiB, and the last 256 lengths of a 1 MiB chunk (bytes appended after a short last
/// chunk: `echo >> file`, or a file written twice).
const END_SEARCH_BUDGET: usize = 256 << 20;

/// The engine transform that opens chunks and, when one fails, says why: a chunk that
/// authenticates only with the other last-chunk flag means the file was cut after it (or
/// extended after it), and a chunk whose beginning authenticates as the last chunk means bytes
/// were appended after a short last chunk. A chunk that authenticates but opens to a length no
/// writer produces (not the chunk size before the last; more than the chunk size, or empty after
/// chunk 0, as the last) fails like a damaged one, so every plaintext has exactly one encoding.
pub(crate) struct Open {
    pub cipher: Box<dyn ChunkCipher>,
    pub tag_len: usize,
}

impl ChunkTransform for Open {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        let (index, last) = (ctx.index, ctx.is_last);
        if len < self.tag_len {
            return Err(Error::Truncated { index });
        }
        // A chunk that opens only as the other kind (last or not) was moved to the end or away
        // from it: the file was cut, or extended.
        let flipped = || ChunkCtx {
            is_last: !last,
            ..*ctx
        };
        let full = ctx.chunk_size;
        match self.cipher.open(ctx, buf, len) {
            Some(n) if n == full || (last && n < full && (n > 0 || index == 0)) => Ok(n),
            Some(_) => Err(Error::ChunkAuth { index }),
            None if self.cipher.open(&flipped(), buf, len).is_some() => Err(if last {
                Error::TruncatedAfter { index }
            } else {
                Error::TrailingData { index }
            }),
            None if self.ends_inside(ctx, buf, len) => Err(Error::TrailingData { index }),
            None => Err(Error::ChunkAuth { index }),
        }
    }
}

impl Open {
    /// Whether a shorter prefix of this failed chunk authenticates as the file's last chunk:
    /// the file really ended inside it, and what follows was appended. Tries the longest
    /// prefixes first, within [`END_SEARCH_BUDGET`]. A tag that does not match leaves `buf`
    /// as it was (every suite checks the tag before decrypting), so each try sees the chunk's
    /// bytes; the plaintext of a match is never used.
    fn ends_inside(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> bool {
        let as_last = ChunkCtx {
            is_last: true,
            ..*chunk
        };
        let mut budget = END_SEARCH_BUDGET;
        for prefix in (self.tag_len..len).rev() {
            match budget.checked_sub(prefix) {
                Some(left) => budget = left,
                None => return false,
            }
            if self.cipher.open(&as_last, buf, prefix).is_some() {
                return true;
            }
        }
        false
    }
}
