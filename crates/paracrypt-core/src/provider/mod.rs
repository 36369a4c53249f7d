//! Who computes the primitives: **aws-lc** (AWS-LC through `aws-lc-rs`, the default when it is
//! compiled) or **RustCrypto** (pure Rust, always compiled).
//!
//! The engine decides *what* runs on which thread; a [`Provider`] decides *how fast one thread
//! runs it*. Both give the same bytes for every primitive (the unit tests below and the
//! cross-provider integration tests check it), so a file written with one opens with the other.
//!
//! ```
//! use paracrypt_core::provider::Provider;
//!
//! let fastest = Provider::default();
//! assert_eq!(fastest.to_string().parse::<Provider>()?, fastest);
//! assert!(Provider::ALL.contains(&Provider::RustCrypto));
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! # Which provider runs what
//!
//! The internal interface is shaped for whole chunks: a block cipher encrypts a slice of many
//! blocks in one call (so AES-NI pipelines), CTR XORs a keystream starting at any byte offset,
//! an AEAD seals or opens a chunk in place with a detached tag. Within the aws-lc provider a
//! primitive stays on RustCrypto where aws-lc measured no faster on the reference machine
//! (the README's *Providers* section has the figures): Blowfish.

#[cfg(feature = "aws-lc")]
mod aws_lc;
#[cfg(feature = "aws-lc")]
pub(crate) mod ffi;
mod rustcrypto;

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A cryptographic provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// AWS-LC (`aws-lc-rs`, and `aws-lc-sys` where it has no safe API): assembly-optimised,
    /// OpenSSL's speed. Compiled with the `aws-lc` feature (on by default).
    #[cfg(feature = "aws-lc")]
    AwsLc,
    /// RustCrypto (`aes`, `des`, `blowfish`, `rc4`, `aes-gcm`, `chacha20poly1305`, `hmac`,
    /// `rsa`, `p256`, …): pure Rust, always compiled.
    RustCrypto,
}

impl Provider {
    /// The providers compiled into this build, fastest first.
    pub const ALL: &'static [Provider] = &[
        #[cfg(feature = "aws-lc")]
        Provider::AwsLc,
        Provider::RustCrypto,
    ];

    /// The provider's name, as `--provider` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => "aws-lc",
            Provider::RustCrypto => "rustcrypto",
        }
    }

    /// Every compiled provider's name, comma separated, for messages.
    pub fn valid_names() -> String {
        Provider::ALL
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Default for Provider {
    /// The fastest compiled provider: aws-lc when compiled, RustCrypto otherwise.
    fn default() -> Self {
        Provider::ALL[0]
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = Error;

    /// `aws-lc` (also `awslc`, `aws_lc`) or `rustcrypto` (also `rust-crypto`), any case. A
    /// provider that this build does not include is refused with a message that says so.
    fn from_str(s: &str) -> Result<Self> {
        let wanted: String = s
            .trim()
            .to_ascii_lowercase()
            .chars()
            .filter(|c| !matches!(c, '-' | '_'))
            .collect();
        match wanted.as_str() {
            #[cfg(feature = "aws-lc")]
            "awslc" => Ok(Provider::AwsLc),
            #[cfg(not(feature = "aws-lc"))]
            "awslc" => Err(Error::UnknownProvider {
                name: s.to_owned(),
                valid: Provider::valid_names(),
                note: " (`aws-lc` is not compiled into this build)".to_owned(),
            }),
            "rustcrypto" => Ok(Provider::RustCrypto),
            _ => Err(Error::UnknownProvider {
                name: s.to_owned(),
                valid: Provider::valid_names(),
                note: String::new(),
            }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The internal interface

/// The block ciphers behind the raw ciphers and the legacy suites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BlockAlg {
    /// AES with a 16, 24 or 32-byte key.
    Aes,
    /// Single DES (8-byte key).
    Des,
    /// Triple DES, EDE3 (24-byte key).
    TripleDes,
    /// Blowfish (4 to 56-byte key).
    Blowfish,
}

/// A keyed block cipher working on whole chunks of blocks, in place.
///
/// `data` is always a whole number of blocks; IVs are one block.
pub(crate) trait BlockCipher: Send + Sync {
    /// The block size in bytes (16 for AES, 8 otherwise).
    fn block_size(&self) -> usize;
    /// ECB encryption (or decryption) of every block.
    fn ecb(&self, encrypt: bool, data: &mut [u8]) -> Result<()>;
    /// CBC encryption chained from `iv`, which becomes the last ciphertext block (so the next
    /// chunk continues the chain).
    fn cbc_encrypt(&self, iv: &mut [u8], data: &mut [u8]) -> Result<()>;
    /// CBC decryption with `iv` the ciphertext block before `data` (or the IV).
    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<()>;
}

/// AES-CTR with a 128-bit big-endian counter (as OpenSSL): the keystream of `iv`, seekable.
pub(crate) trait CtrCipher: Send + Sync {
    /// XORs into `data` the keystream bytes `offset..offset + data.len()` of the stream that
    /// starts with counter block `iv` (the counter wraps modulo 2^128).
    fn apply_keystream(&self, iv: &[u8; 16], offset: u64, data: &mut [u8]) -> Result<()>;
}

/// A stream cipher's keystream that only moves forward (RC4).
pub(crate) trait StreamCipher: Send {
    /// XORs the next `data.len()` keystream bytes into `data`.
    fn apply_keystream(&mut self, data: &mut [u8]);
}

/// The container's AEADs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum AeadAlg {
    /// AES-128-GCM.
    Aes128Gcm,
    /// AES-256-GCM.
    Aes256Gcm,
    /// ChaCha20-Poly1305 (RFC 8439).
    ChaCha20Poly1305,
}

impl AeadAlg {
    /// The key length in bytes.
    pub(crate) fn key_len(self) -> usize {
        match self {
            AeadAlg::Aes128Gcm => 16,
            AeadAlg::Aes256Gcm | AeadAlg::ChaCha20Poly1305 => 32,
        }
    }
}

/// The tag length of every AEAD here.
pub(crate) const TAG_LEN: usize = 16;
/// The nonce length of every AEAD here.
pub(crate) const NONCE_LEN: usize = 12;

/// A keyed AEAD that seals and opens whole chunks in place with a detached tag.
pub(crate) trait Aead: Send + Sync {
    /// Encrypts `data` in place; returns the tag.
    fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8]) -> Result<[u8; TAG_LEN]>;
    /// Checks `tag` and decrypts `data` in place. Returns `false` when the chunk does not
    /// authenticate, and then `data` holds the ciphertext exactly as it was (never
    /// unauthenticated plaintext), so the caller may try again with another nonce or length.
    /// An error is the provider's own failure (an allocation in C), never a wrong tag.
    fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool>;
}

/// HMAC-SHA256 with a fixed key.
pub(crate) trait HmacSha256: Send + Sync {
    /// The MAC of the concatenation of `parts`.
    fn mac(&self, parts: &[&[u8]]) -> [u8; 32];
    /// Whether `tag` is the MAC of `parts`, compared in constant time.
    fn verify(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        tag.len() == 32 && bool::from(self.mac(parts).ct_eq(tag))
    }
}

impl Provider {
    /// A keyed block cipher, or `None` when the key length does not fit `alg`.
    ///
    /// Per primitive, by measurement (README, *Providers*): AES and DES/3DES run on aws-lc;
    /// Blowfish stays on RustCrypto even under the aws-lc provider: aws-lc's (`decrepit`, one
    /// block per call) Blowfish measured no faster, within the noise, so it is not worth an
    /// `unsafe` binding.
    pub(crate) fn block_cipher(self, alg: BlockAlg, key: &[u8]) -> Option<Box<dyn BlockCipher>> {
        match self.block_cipher_by(alg) {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => aws_lc::block_cipher(alg, key),
            Provider::RustCrypto => rustcrypto::block_cipher(alg, key),
        }
    }

    /// Which library computes the block cipher `alg` under this provider (see
    /// [`block_cipher`](Self::block_cipher)): itself, but RustCrypto for Blowfish.
    pub(crate) fn block_cipher_by(self, alg: BlockAlg) -> Provider {
        match (self, alg) {
            #[cfg(feature = "aws-lc")]
            (Provider::AwsLc, BlockAlg::Blowfish) => Provider::RustCrypto,
            (other, _) => other,
        }
    }

    /// AES-CTR with a 16, 24 or 32-byte key, or `None` for another length.
    pub(crate) fn aes_ctr(self, key: &[u8]) -> Option<Box<dyn CtrCipher>> {
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => aws_lc::aes_ctr(key),
            Provider::RustCrypto => rustcrypto::aes_ctr(key),
        }
    }

    /// RC4 keyed with 1 to 256 bytes, or `None` for another length.
    pub(crate) fn rc4(self, key: &[u8]) -> Option<Box<dyn StreamCipher>> {
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => aws_lc::rc4(key),
            Provider::RustCrypto => rustcrypto::rc4(key),
        }
    }

    /// A keyed AEAD, or `None` when the key length does not fit `alg`.
    pub(crate) fn aead(self, alg: AeadAlg, key: &[u8]) -> Option<Box<dyn Aead>> {
        if key.len() != alg.key_len() {
            return None;
        }
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => aws_lc::aead(alg, key),
            Provider::RustCrypto => Some(rustcrypto::aead(alg, key)),
        }
    }

    /// HMAC-SHA256 keyed with `key` (any length).
    pub(crate) fn hmac_sha256(self, key: &[u8]) -> Box<dyn HmacSha256> {
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => aws_lc::hmac_sha256(key),
            Provider::RustCrypto => rustcrypto::hmac_sha256(key),
        }
    }

    /// HKDF-SHA256-Expand (RFC 5869) of the pseudorandom key `prk` (at least 32 bytes) with
    /// `info` into `out` (at most 255 × 32 bytes).
    pub(crate) fn hkdf_sha256_expand(self, prk: &[u8], info: &[&[u8]], out: &mut [u8]) {
        assert!(
            prk.len() >= 32 && out.len() <= 255 * 32,
            "HKDF-Expand limits"
        );
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => aws_lc::hkdf_sha256_expand(prk, info, out),
            Provider::RustCrypto => rustcrypto::hkdf_sha256_expand(prk, info, out),
        }
    }
}

/// `iv + blocks` as a 128-bit big-endian counter, wrapping.
pub(crate) fn ctr_add(iv: &[u8; 16], blocks: u128) -> [u8; 16] {
    u128::from_be_bytes(*iv).wrapping_add(blocks).to_be_bytes()
}

#[cfg(test)]
mod tests;
