//! Sealing and opening one chunk: the per-chunk work of every suite, a pure function of the
//! chunk's index, its last-chunk flag and its bytes.
//!
//! - AEAD suites: nonce = 88-bit big-endian chunk index ‖ last-chunk flag byte (the STREAM
//!   construction of age and Tink), associated data = the header MAC, 16-byte tag appended.
//! - Legacy suites, encrypt-then-MAC: the chunk is encrypted, then
//!   `HMAC-SHA256(mac_key, header MAC ‖ u64 index ‖ flag ‖ ciphertext)` is appended; opening
//!   checks the MAC before decrypting anything.

use cipher::block_padding::{Padding, Pkcs7};
use zeroize::Zeroizing;

use super::suite::Suite;
use crate::engine::ChunkCtx;
use crate::error::{Error, Result};
use crate::provider::{AeadAlg, BlockAlg, BlockCipher, CtrCipher, HmacSha256, Provider};
use crate::raw::Direction;
use crate::stream::AeadChunks;
pub(crate) use crate::stream::{ChunkCipher, Open, Seal};

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

/// The cipher for `suite` keyed with `payload` (from the key schedule), bound to `header_mac`,
/// computed by `provider`. The bytes are the same whichever provider computes them.
pub(crate) fn chunk_cipher(
    suite: Suite,
    payload: &[u8],
    header_mac: &[u8],
    provider: Provider,
) -> Result<Box<dyn ChunkCipher>> {
    let aad: [u8; 32] = header_mac.try_into().expect("header MAC is 32 bytes");
    let keyed = |what| Error::Provider { what };
    let aead = |alg: AeadAlg| -> Result<Box<dyn ChunkCipher>> {
        Ok(Box::new(AeadChunks {
            aead: provider
                .aead(alg, payload)
                .ok_or_else(|| keyed("keying the AEAD"))?,
            aad: aad.to_vec(),
        }))
    };
    let etm = |enc: Encryption, key_len: usize| -> Result<Box<dyn ChunkCipher>> {
        Ok(Box::new(EncryptThenMac {
            enc,
            mac: provider.hmac_sha256(&payload[key_len..]),
            header_mac: aad,
        }))
    };
    let cbc = |alg: BlockAlg, key_len: usize| -> Result<Box<dyn ChunkCipher>> {
        let cipher = provider
            .block_cipher(alg, &payload[..key_len])
            .ok_or_else(|| keyed("keying the block cipher"))?;
        etm(Encryption::Cbc(cipher), key_len)
    };
    match suite {
        Suite::Aes256Gcm => aead(AeadAlg::Aes256Gcm),
        Suite::Aes128Gcm => aead(AeadAlg::Aes128Gcm),
        Suite::ChaCha20Poly1305 => aead(AeadAlg::ChaCha20Poly1305),
        Suite::Aes256CtrHmacSha256 => {
            // One CTR keystream over the whole payload (IV zero: the key is unique per file),
            // each chunk seeking to its own plaintext offset.
            let ctr = provider
                .aes_ctr(&payload[..32])
                .ok_or_else(|| keyed("keying AES-CTR"))?;
            etm(Encryption::Ctr(ctr), 32)
        }
        Suite::DesEde3CbcHmacSha256 => cbc(BlockAlg::TripleDes, 24),
        Suite::BfCbcHmacSha256 => cbc(BlockAlg::Blowfish, 16),
        Suite::Rc4HmacSha256 => etm(
            Encryption::SegmentedRc4 {
                prk: Zeroizing::new(payload[..32].try_into().expect("32 bytes")),
                provider,
            },
            32,
        ),
    }
}

/// The legacy suites' encryption, each on the provider's whole-chunk interface.
enum Encryption {
    /// AES-256-CTR from the chunk's plaintext offset.
    Ctr(Box<dyn CtrCipher>),
    /// 3DES or Blowfish in CBC, each chunk padded, with its own IV.
    Cbc(Box<dyn BlockCipher>),
    /// RC4 keyed per chunk from this pseudorandom key (HKDF-Expand).
    SegmentedRc4 {
        prk: Zeroizing<[u8; 32]>,
        provider: Provider,
    },
}

/// Encrypt-then-MAC with HMAC-SHA256.
struct EncryptThenMac {
    enc: Encryption,
    mac: Box<dyn HmacSha256>,
    header_mac: [u8; 32],
}

const MAC_LEN: usize = 32;

/// The HKDF info of segment `index`'s RC4 key, before the index.
const RC4_CHUNK_LABEL: &[u8] = b"paracrypt v1 rc4 chunk ";

impl EncryptThenMac {
    /// The MAC input: header MAC ‖ u64 index ‖ last-chunk flag ‖ ciphertext.
    fn tag_parts<'a>(
        &'a self,
        index: &'a [u8; 8],
        flag: &'a [u8; 1],
        ciphertext: &'a [u8],
    ) -> [&'a [u8]; 4] {
        [&self.header_mac, index, flag, ciphertext]
    }

    /// Encrypts (or, for the stream ciphers, decrypts: the same operation) in place and returns
    /// the output length. CTR seeks to the chunk's plaintext offset; CBC pads every chunk, and
    /// its IV is the chunk index encrypted under the chunk key (NIST SP 800-38A, Appendix C).
    /// `None`: CBC ciphertext whose padding is wrong (checked before anything is decrypted).
    fn crypt(
        &self,
        direction: Direction,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        len: usize,
    ) -> Result<Option<usize>> {
        match &self.enc {
            Encryption::Ctr(ctr) => {
                ctr.apply_keystream(&[0; 16], chunk.offset, &mut buf[..len])?;
                Ok(Some(len))
            }
            Encryption::Cbc(cipher) => cbc_chunk(&**cipher, direction, chunk.index, buf, len),
            Encryption::SegmentedRc4 { prk, provider } => {
                segment_rc4(prk, *provider, chunk.index)?.apply_keystream(&mut buf[..len]);
                Ok(Some(len))
            }
        }
    }

    /// [`crypt`](Self::crypt) from `input` into `output` (room for the result), one pass.
    fn crypt_to(
        &self,
        direction: Direction,
        chunk: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Option<usize>> {
        let len = input.len();
        match &self.enc {
            Encryption::Ctr(ctr) => {
                ctr.apply_keystream_to(&[0; 16], chunk.offset, input, &mut output[..len])?;
                Ok(Some(len))
            }
            Encryption::Cbc(cipher) => {
                cbc_chunk_to(&**cipher, direction, chunk.index, input, output)
            }
            Encryption::SegmentedRc4 { prk, provider } => {
                segment_rc4(prk, *provider, chunk.index)?
                    .apply_keystream_to(input, &mut output[..len]);
                Ok(Some(len))
            }
        }
    }

    /// Appends the MAC of the `sealed` ciphertext bytes at the start of `buf`; returns the
    /// sealed chunk's length.
    fn append_mac(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], sealed: usize) -> usize {
        let (index, flag) = (chunk.index.to_be_bytes(), [u8::from(chunk.is_last)]);
        let tag = self.mac.mac(&self.tag_parts(&index, &flag, &buf[..sealed]));
        buf[sealed..sealed + MAC_LEN].copy_from_slice(&tag);
        sealed + MAC_LEN
    }

    /// The ciphertext of a sealed chunk whose MAC checks, or `None`.
    fn authentic<'a>(&self, chunk: &ChunkCtx<'_>, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let len = sealed.len().checked_sub(MAC_LEN)?;
        let (index, flag) = (chunk.index.to_be_bytes(), [u8::from(chunk.is_last)]);
        let parts = self.tag_parts(&index, &flag, &sealed[..len]);
        self.mac
            .verify(&parts, &sealed[len..])
            .then_some(&sealed[..len])
    }
}

/// Segment `index`'s RC4 keystream, keyed from `prk` by HKDF-Expand, past the dropped bytes.
fn segment_rc4(
    prk: &[u8; 32],
    provider: Provider,
    index: u64,
) -> Result<Box<dyn crate::provider::StreamCipher>> {
    let mut key = Zeroizing::new([0u8; 32]);
    provider.hkdf_sha256_expand(
        &prk[..],
        &[RC4_CHUNK_LABEL, &index.to_be_bytes()],
        &mut key[..],
    );
    let mut rc4 = provider
        .rc4(&key[..])
        .ok_or(Error::Provider { what: "keying RC4" })?;
    rc4.apply_keystream(&mut [0u8; RC4_DROP]);
    Ok(rc4)
}

/// The IV of chunk `index`'s CBC chain: the index encrypted under the chunk key (NIST SP
/// 800-38A, Appendix C), in the first block-size bytes.
fn cbc_iv(cipher: &dyn BlockCipher, index: u64) -> Result<[u8; 16]> {
    let bs = cipher.block_size();
    let mut iv = [0u8; 16];
    iv[bs - 8..bs].copy_from_slice(&index.to_be_bytes());
    cipher.ecb(true, &mut iv[..bs])?;
    Ok(iv)
}

/// Decrypts the last block of the CBC ciphertext `ct` (chained from `iv`) and checks its
/// PKCS#7 padding, touching nothing else: the plaintext block and how many of its bytes are
/// data, or `None` when `ct` is not whole blocks or the padding is wrong.
fn cbc_last_block(
    cipher: &dyn BlockCipher,
    iv: &[u8],
    ct: &[u8],
) -> Result<Option<([u8; 16], usize)>> {
    let (bs, len) = (cipher.block_size(), ct.len());
    if len < bs || !len.is_multiple_of(bs) {
        return Ok(None);
    }
    let before_last = if len == bs {
        iv
    } else {
        &ct[len - 2 * bs..len - bs]
    };
    let mut last = [0u8; 16];
    last[..bs].copy_from_slice(&ct[len - bs..]);
    cipher.cbc_decrypt(before_last, &mut last[..bs])?;
    let kept = Pkcs7::raw_unpad(&last[..bs]).map(<[u8]>::len).ok();
    Ok(kept.map(|kept| (last, kept)))
}

/// CBC over one chunk with PKCS#7 padding and the IV E_k(index). Decryption checks the padding
/// on a copy of the last block first, so ciphertext with wrong padding is left as it was.
fn cbc_chunk(
    cipher: &dyn BlockCipher,
    direction: Direction,
    index: u64,
    buf: &mut [u8],
    len: usize,
) -> Result<Option<usize>> {
    let bs = cipher.block_size();
    let mut iv = cbc_iv(cipher, index)?;
    let iv = &mut iv[..bs];
    match direction {
        Direction::Encrypt => {
            let whole = len / bs * bs;
            Pkcs7::raw_pad(&mut buf[whole..whole + bs], len - whole);
            cipher.cbc_encrypt(iv, &mut buf[..whole + bs])?;
            Ok(Some(whole + bs))
        }
        Direction::Decrypt => {
            let Some((_, kept)) = cbc_last_block(cipher, iv, &buf[..len])? else {
                return Ok(None);
            };
            cipher.cbc_decrypt(iv, &mut buf[..len])?;
            Ok(Some(len - bs + kept))
        }
    }
}

/// [`cbc_chunk`] from `input` into `output` (room for the result), one pass: the last,
/// padded block through a block on the stack.
fn cbc_chunk_to(
    cipher: &dyn BlockCipher,
    direction: Direction,
    index: u64,
    input: &[u8],
    output: &mut [u8],
) -> Result<Option<usize>> {
    let (bs, len) = (cipher.block_size(), input.len());
    let mut iv = cbc_iv(cipher, index)?;
    let iv = &mut iv[..bs];
    match direction {
        Direction::Encrypt => {
            let whole = len / bs * bs;
            cipher.cbc_encrypt_to(iv, &input[..whole], &mut output[..whole])?;
            let last = &mut output[whole..whole + bs];
            last[..len - whole].copy_from_slice(&input[whole..]);
            Pkcs7::raw_pad(last, len - whole);
            cipher.cbc_encrypt(iv, last)?;
            Ok(Some(whole + bs))
        }
        Direction::Decrypt => {
            let Some((last, kept)) = cbc_last_block(cipher, iv, input)? else {
                return Ok(None);
            };
            let head = len - bs;
            if head + kept > output.len() {
                // Longer than any chunk opens to (a chunk whose MAC checks, made with the
                // key, but padded wrong): its length alone tells the caller to refuse it.
                return Ok(Some(head + kept));
            }
            cipher.cbc_decrypt_to(iv, &input[..head], &mut output[..head])?;
            output[head..head + kept].copy_from_slice(&last[..kept]);
            Ok(Some(head + kept))
        }
    }
}

impl ChunkCipher for EncryptThenMac {
    fn seal(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        let sealed = self
            .crypt(Direction::Encrypt, chunk, buf, len)?
            .expect("encryption always has an output");
        Ok(self.append_mac(chunk, buf, sealed))
    }

    fn open(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<Option<usize>> {
        let Some(sealed) = self.authentic(chunk, &buf[..len]).map(<[u8]>::len) else {
            return Ok(None);
        };
        self.crypt(Direction::Decrypt, chunk, buf, sealed)
    }

    fn seal_to(&self, chunk: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        let sealed = self
            .crypt_to(Direction::Encrypt, chunk, input, output)?
            .expect("encryption always has an output");
        Ok(self.append_mac(chunk, output, sealed))
    }

    fn open_to(
        &self,
        chunk: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Option<usize>> {
        let Some(ciphertext) = self.authentic(chunk, input) else {
            return Ok(None);
        };
        self.crypt_to(Direction::Decrypt, chunk, ciphertext, output)
    }
}
