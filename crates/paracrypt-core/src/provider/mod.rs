//! Who computes the primitives: **aws-lc** (AWS-LC through `aws-lc-rs`, the default when it is
//! compiled), the system **OpenSSL** (libcrypto 3 through the `openssl` crate) or
//! **RustCrypto** (pure Rust, always compiled).
//!
//! Each backend fills one table of primitives (rustls's `CryptoProvider` is the model), a
//! `static` in its own folder (`aws_lc/`, `openssl/`, `rustcrypto/`); a [`Provider`] names one
//! table, and [`Provider::Fastest`] (the default) a table assembled per primitive from the
//! compiled ones ([`fastest`]). Nothing outside this module tree knows which backends are
//! compiled.
//!
//! The engine decides *what* runs on which thread; a [`Provider`] decides *how fast one thread
//! runs it*. All give the same bytes for every primitive (the unit tests below and the
//! cross-provider integration tests check it), so a file written with one opens with another.
//!
//! ```
//! use paracrypt_core::provider::Provider;
//!
//! let fastest = Provider::default();
//! assert_eq!(fastest, Provider::Fastest);
//! assert_eq!(fastest.to_string().parse::<Provider>()?, fastest);
//! assert!(Provider::ALL.contains(&Provider::RustCrypto));
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! # Which provider runs what
//!
//! The internal interface is shaped for whole chunks: a block cipher encrypts a slice of many
//! blocks in one call (so AES-NI pipelines), CTR XORs a keystream starting at any byte offset,
//! an AEAD seals or opens a chunk with a detached tag, in place or from one slice into another.
//! Within the aws-lc provider a primitive stays on RustCrypto where aws-lc measured no faster
//! on the reference machine (docs/guide/performance.md has the figures): Blowfish. The
//! OpenSSL backend names RustCrypto's DES, Blowfish and RC4 (OpenSSL 3 keeps them in its
//! `legacy` provider, which a library should not load into the whole process). RSA keys below
//! 2048 bits, and the public-key operations no C backend is asked for (PSS verification with
//! any salt length, OAEP encryption), run on RustCrypto whatever the provider.

#[cfg(feature = "aws-lc")]
mod aws_lc;
pub mod fastest;
#[cfg(feature = "openssl")]
mod openssl;
#[cfg(any(feature = "aws-lc", feature = "openssl"))]
mod per_thread;
pub(crate) mod public_key;
mod rustcrypto;
mod table;

use std::fmt;
use std::str::FromStr;

use crate::error::pubkey::{Error as PkError, Result as PkResult};
use crate::error::{Error, Result};
#[cfg(any(feature = "aws-lc", feature = "openssl"))]
use per_thread::PerThread;
/// P-256 verification on one of p256's paths, whatever the provider (for callers that choose
/// the path: `EcdsaPublicKey::verify_digest_with`).
pub(crate) use rustcrypto::verify_p256;
pub(crate) use table::{
    AeadFn, BlockFn, EcdsaSignOps, EcdsaVerifyOps, Entry, KeyObject, MessageSignOps,
    MessageVerifyOps, PrimeFn, RsaPrivateOps, RsaPublicOps, Table,
};

/// A cryptographic provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// AWS-LC (`aws-lc-rs`, and `aws-lc-sys` where it has no safe API): assembly-optimised,
    /// OpenSSL's speed. Compiled with the `aws-lc` feature (on by default).
    #[cfg(feature = "aws-lc")]
    AwsLc,
    /// The system OpenSSL (libcrypto 3, through the `openssl` crate): AVX-512 ChaCha20 and
    /// Poly1305 among others. Compiled with the `openssl` feature (on by default).
    #[cfg(feature = "openssl")]
    OpenSsl,
    /// RustCrypto (`aes`, `des`, `blowfish`, `rc4`, `aes-gcm`, `chacha20poly1305`, `hmac`,
    /// `rsa`, `p256`, …): pure Rust, always compiled.
    RustCrypto,
    /// The default: per primitive, the fastest compiled backend on this CPU, by the static
    /// rule of [`fastest`] (CPU features, never a timing). Not in [`Provider::ALL`], which
    /// lists the backends themselves.
    Fastest,
}

impl Provider {
    /// The providers compiled into this build, fastest first.
    pub const ALL: &'static [Provider] = &[
        #[cfg(feature = "aws-lc")]
        Provider::AwsLc,
        #[cfg(feature = "openssl")]
        Provider::OpenSsl,
        Provider::RustCrypto,
    ];

    /// The provider's name, as `--provider` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => "aws-lc",
            #[cfg(feature = "openssl")]
            Provider::OpenSsl => "openssl",
            Provider::RustCrypto => "rustcrypto",
            Provider::Fastest => "fastest",
        }
    }

    /// Every compiled provider's name, comma separated, for messages.
    pub fn valid_names() -> String {
        Provider::ALL
            .iter()
            .chain([&Provider::Fastest])
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Default for Provider {
    /// [`Provider::Fastest`]: per primitive, the fastest compiled backend on this CPU.
    fn default() -> Self {
        Provider::Fastest
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = Error;

    /// `aws-lc` (also `awslc`, `aws_lc`), `openssl`, `rustcrypto` (also `rust-crypto`) or
    /// `fastest`, any case. A
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
            #[cfg(feature = "openssl")]
            "openssl" => Ok(Provider::OpenSsl),
            #[cfg(not(feature = "openssl"))]
            "openssl" => Err(Error::UnknownProvider {
                name: s.to_owned(),
                valid: Provider::valid_names(),
                note: " (`openssl` is not compiled into this build)".to_owned(),
            }),
            "rustcrypto" => Ok(Provider::RustCrypto),
            "fastest" => Ok(Provider::Fastest),
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

/// A keyed block cipher working on whole chunks of blocks, in place or from one slice into
/// another.
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

    /// [`ecb`](Self::ecb) from `input` into `output` (of the same length). By default a copy
    /// and the in-place call; a backend that reads one slice and writes another in one pass
    /// overrides it (the `*_to` methods of every trait here are alike).
    fn ecb_to(&self, encrypt: bool, input: &[u8], output: &mut [u8]) -> Result<()> {
        output.copy_from_slice(input);
        self.ecb(encrypt, output)
    }

    /// [`cbc_encrypt`](Self::cbc_encrypt) from `input` into `output` (of the same length).
    fn cbc_encrypt_to(&self, iv: &mut [u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        output.copy_from_slice(input);
        self.cbc_encrypt(iv, output)
    }

    /// [`cbc_decrypt`](Self::cbc_decrypt) from `input` into `output` (of the same length).
    fn cbc_decrypt_to(&self, iv: &[u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        output.copy_from_slice(input);
        self.cbc_decrypt(iv, output)
    }
}

/// AES-CTR with a 128-bit big-endian counter (as OpenSSL): the keystream of `iv`, seekable.
pub(crate) trait CtrCipher: Send + Sync {
    /// XORs into `data` the keystream bytes `offset..offset + data.len()` of the stream that
    /// starts with counter block `iv` (the counter wraps modulo 2^128).
    fn apply_keystream(&self, iv: &[u8; 16], offset: u64, data: &mut [u8]) -> Result<()>;

    /// [`apply_keystream`](Self::apply_keystream) from `input` into `output` (of the same
    /// length). By default a copy and the in-place call.
    fn apply_keystream_to(
        &self,
        iv: &[u8; 16],
        offset: u64,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        output.copy_from_slice(input);
        self.apply_keystream(iv, offset, output)
    }
}

/// A stream cipher's keystream that only moves forward (RC4).
pub(crate) trait StreamCipher: Send {
    /// XORs the next `data.len()` keystream bytes into `data`.
    fn apply_keystream(&mut self, data: &mut [u8]);

    /// [`apply_keystream`](Self::apply_keystream) from `input` into `output` (of the same
    /// length). By default a copy and the in-place call.
    fn apply_keystream_to(&mut self, input: &[u8], output: &mut [u8]) {
        output.copy_from_slice(input);
        self.apply_keystream(output);
    }
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

/// A keyed AEAD that seals and opens whole chunks with a detached tag, in place or from one
/// slice into another (one pass over memory where the backend can: the in-memory driver
/// writes each chunk straight into its output slot).
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

    /// Seals `input` into `output` (of the same length); returns the tag. By default a copy
    /// and [`seal`](Self::seal) in place; a backend that reads one slice and writes another in
    /// one pass overrides it.
    fn seal_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<[u8; TAG_LEN]> {
        output.copy_from_slice(input);
        self.seal(nonce, aad, output)
    }

    /// Checks `tag` and decrypts `input` into `output` (of the same length). Returns `false`
    /// when the chunk does not authenticate; `output` then holds no plaintext (`input` is
    /// never changed, so the caller may try again). By default a copy and
    /// [`open`](Self::open) in place; overridden where the backend has a one-pass path.
    fn open_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool> {
        output.copy_from_slice(input);
        self.open(nonce, aad, output, tag)
    }
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
    /// This provider's table of primitives.
    pub(crate) fn table(self) -> &'static Table {
        match self {
            #[cfg(feature = "aws-lc")]
            Provider::AwsLc => &aws_lc::TABLE,
            #[cfg(feature = "openssl")]
            Provider::OpenSsl => &openssl::TABLE,
            Provider::RustCrypto => &rustcrypto::TABLE,
            Provider::Fastest => fastest::table(),
        }
    }

    /// Every primitive and the backend that computes it under this provider, as `paracrypt
    /// info` shows them: a backend that lacks a primitive names another one's.
    ///
    /// ```
    /// use paracrypt_core::provider::Provider;
    ///
    /// let table = Provider::RustCrypto.primitives();
    /// assert!(table.iter().all(|&(_, by)| by == Provider::RustCrypto));
    /// ```
    pub fn primitives(self) -> Vec<(&'static str, Provider)> {
        self.table().by().to_vec()
    }

    fn block_entry(self, alg: BlockAlg) -> Entry<BlockFn> {
        let table = self.table();
        match alg {
            BlockAlg::Aes => table.aes,
            BlockAlg::Des => table.des,
            BlockAlg::TripleDes => table.des_ede3,
            BlockAlg::Blowfish => table.blowfish,
        }
    }

    /// A keyed block cipher, or `None` when the key length does not fit `alg`.
    pub(crate) fn block_cipher(self, alg: BlockAlg, key: &[u8]) -> Option<Box<dyn BlockCipher>> {
        (self.block_entry(alg).make)(key)
    }

    /// AES-CTR with a 16, 24 or 32-byte key, or `None` for another length.
    pub(crate) fn aes_ctr(self, key: &[u8]) -> Option<Box<dyn CtrCipher>> {
        (self.table().aes_ctr.make)(key)
    }

    /// RC4 keyed with 1 to 256 bytes, or `None` for another length.
    pub(crate) fn rc4(self, key: &[u8]) -> Option<Box<dyn StreamCipher>> {
        (self.table().rc4.make)(key)
    }

    fn aead_entry(self, alg: AeadAlg) -> Entry<AeadFn> {
        match alg {
            AeadAlg::Aes128Gcm | AeadAlg::Aes256Gcm => self.table().aes_gcm,
            AeadAlg::ChaCha20Poly1305 => self.table().chacha20_poly1305,
        }
    }

    /// A keyed AEAD, or `None` when the key length does not fit `alg`.
    pub(crate) fn aead(self, alg: AeadAlg, key: &[u8]) -> Option<Box<dyn Aead>> {
        if key.len() != alg.key_len() {
            return None;
        }
        (self.aead_entry(alg).make)(alg, key)
    }

    /// HMAC-SHA256 keyed with `key` (any length).
    pub(crate) fn hmac_sha256(self, key: &[u8]) -> Box<dyn HmacSha256> {
        (self.table().hmac_sha256.make)(key)
    }

    /// HKDF-SHA256-Expand (RFC 5869) of the pseudorandom key `prk` (at least 32 bytes) with
    /// `info` into `out` (at most 255 × 32 bytes).
    pub(crate) fn hkdf_sha256_expand(self, prk: &[u8], info: &[&[u8]], out: &mut [u8]) {
        assert!(
            prk.len() >= 32 && out.len() <= 255 * 32,
            "HKDF-Expand limits"
        );
        (self.table().hkdf_sha256.make)(prk, info, out)
    }

    /// This provider's copy of an RSA private key, or RustCrypto's when the backend does not
    /// take this key (below 2048 bits in the C backends).
    pub(crate) fn rsa_private(
        self,
        key: &rsa::RsaPrivateKey,
    ) -> PkResult<KeyObject<dyn RsaPrivateOps>> {
        self.key_object(|t| t.rsa_private, |make| make(key))
    }

    /// The backend that runs this provider's RSA private operation (for keys it takes).
    pub(crate) fn rsa_private_by(self) -> Provider {
        self.table().rsa_private.by
    }

    /// This provider's copy of an RSA public key, or RustCrypto's when the backend does not
    /// take this key.
    pub(crate) fn rsa_public(
        self,
        key: &rsa::RsaPublicKey,
    ) -> PkResult<KeyObject<dyn RsaPublicOps>> {
        self.key_object(|t| t.rsa_public, |make| make(key))
    }

    /// This provider's prime search.
    pub(crate) fn rsa_prime(self) -> PrimeFn {
        self.table().rsa_prime.make
    }

    /// This provider's P-256 signing key, or RustCrypto's when the backend refuses the key.
    pub(crate) fn ecdsa_signer(self, pkcs8_der: &[u8]) -> PkResult<KeyObject<dyn EcdsaSignOps>> {
        self.key_object(|t| t.ecdsa_sign, |make| Ok(make(pkcs8_der).ok()))
    }

    /// This provider's P-256 public key, or RustCrypto's when the backend refuses the key.
    pub(crate) fn ecdsa_verifier(
        self,
        sec1_point: &[u8],
    ) -> PkResult<KeyObject<dyn EcdsaVerifyOps>> {
        self.key_object(|t| t.ecdsa_verify, |make| Ok(make(sec1_point).ok()))
    }

    /// This provider's Ed25519 signing key of `seed`, or RustCrypto's when the backend
    /// refuses it.
    pub(crate) fn ed25519_signer(self, seed: &[u8; 32]) -> PkResult<KeyObject<dyn MessageSignOps>> {
        self.key_object(|t| t.ed25519_sign, |make| Ok(make(seed).ok()))
    }

    /// This provider's Ed25519 public key, or RustCrypto's when the backend refuses it (an
    /// error when no backend takes the bytes as a point).
    pub(crate) fn ed25519_verifier(
        self,
        public: &[u8; 32],
    ) -> PkResult<KeyObject<dyn MessageVerifyOps>> {
        self.key_object(|t| t.ed25519_verify, |make| Ok(make(public).ok()))
    }

    /// This provider's ML-DSA-65 signing key of `seed` and the public key it derives, or
    /// RustCrypto's when the backend refuses it.
    pub(crate) fn ml_dsa_65_signer(
        self,
        seed: &[u8; 32],
    ) -> PkResult<(KeyObject<dyn MessageSignOps>, Vec<u8>)> {
        for entry in [
            self.table().ml_dsa_65_sign,
            rustcrypto::TABLE.ml_dsa_65_sign,
        ] {
            if let Ok((key, public)) = (entry.make)(seed) {
                return Ok((KeyObject { by: entry.by, key }, public));
            }
        }
        Err(PkError::UnsupportedKey {
            reason: "no provider takes the key".to_owned(),
        })
    }

    /// This provider's ML-DSA-65 public key, or RustCrypto's when the backend refuses it (an
    /// error when the bytes are no ML-DSA-65 public key).
    pub(crate) fn ml_dsa_65_verifier(
        self,
        public: &[u8],
    ) -> PkResult<KeyObject<dyn MessageVerifyOps>> {
        self.key_object(|t| t.ml_dsa_65_verify, |make| Ok(make(public).ok()))
    }

    /// A key object from this provider's entry `pick`, or from RustCrypto's when `make` says
    /// the backend does not take the key (`Ok(None)`); RustCrypto's refusal is the error.
    fn key_object<F: Copy, T: ?Sized>(
        self,
        pick: fn(&Table) -> Entry<F>,
        make: impl Fn(F) -> PkResult<Option<std::sync::Arc<T>>>,
    ) -> PkResult<KeyObject<T>> {
        for entry in [pick(self.table()), pick(&rustcrypto::TABLE)] {
            if let Some(key) = make(entry.make)? {
                return Ok(KeyObject { by: entry.by, key });
            }
        }
        Err(PkError::UnsupportedKey {
            reason: "no provider takes the key".to_owned(),
        })
    }
}

/// `iv + blocks` as a 128-bit big-endian counter, wrapping.
pub(crate) fn ctr_add(iv: &[u8; 16], blocks: u128) -> [u8; 16] {
    u128::from_be_bytes(*iv).wrapping_add(blocks).to_be_bytes()
}

#[cfg(test)]
mod tests;
