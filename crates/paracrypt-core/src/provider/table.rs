//! The table of primitives that every backend fills, one `static` per backend (rustls's
//! `CryptoProvider` is the model): block ciphers, CTR, RC4, the AEADs, HMAC, HKDF, the RSA
//! private and public operations and prime search, ECDSA, Ed25519 and ML-DSA-65 signing and verification.
//!
//! Each entry names the backend that computes it ([`Entry::by`]): a backend that lacks a
//! primitive, or whose version measured slower, puts another backend's entry in its table
//! (aws-lc's Blowfish is RustCrypto's). A public-key entry makes the backend's key object
//! from the key as the RustCrypto crates read it (they read and write every key format for
//! all backends); a backend that does not take a key (RSA below 2048 bits in the C backends)
//! says so, and RustCrypto's entry makes it instead.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::public_key::{Digest, Parallelism};
use super::{Aead, AeadAlg, BlockCipher, CtrCipher, HmacSha256, Provider, StreamCipher};
use crate::error::pubkey::Result as PkResult;

/// A keyed block cipher, or `None` when the key length does not fit.
pub(crate) type BlockFn = fn(key: &[u8]) -> Option<Box<dyn BlockCipher>>;
/// AES-CTR keyed with 16, 24 or 32 bytes, or `None` for another length.
pub(crate) type CtrFn = fn(key: &[u8]) -> Option<Box<dyn CtrCipher>>;
/// RC4 keyed with 1 to 256 bytes, or `None` for another length.
pub(crate) type Rc4Fn = fn(key: &[u8]) -> Option<Box<dyn StreamCipher>>;
/// A keyed AEAD (the key length is checked by the caller).
pub(crate) type AeadFn = fn(alg: AeadAlg, key: &[u8]) -> Option<Box<dyn Aead>>;
/// HMAC-SHA256 keyed with any key.
pub(crate) type HmacFn = fn(key: &[u8]) -> Box<dyn HmacSha256>;
/// HKDF-SHA256-Expand of `prk` with `info` into `out` (limits checked by the caller).
pub(crate) type HkdfFn = fn(prk: &[u8], info: &[&[u8]], out: &mut [u8]);
/// The backend's copy of an RSA private key; `Ok(None)` when it does not take this key.
pub(crate) type RsaPrivateFn =
    fn(key: &rsa::RsaPrivateKey) -> PkResult<Option<Arc<dyn RsaPrivateOps>>>;
/// The backend's copy of an RSA public key; `Ok(None)` when it does not take this key.
pub(crate) type RsaPublicFn =
    fn(key: &rsa::RsaPublicKey) -> PkResult<Option<Arc<dyn RsaPublicOps>>>;
/// One random prime of `bits` bits with its two top bits set, or `None` once `stop` is set.
pub(crate) type PrimeFn =
    fn(bits: u32, stop: &AtomicBool) -> PkResult<Option<crypto_bigint::BoxedUint>>;
/// The backend's P-256 signing key, from its PKCS#8 DER.
pub(crate) type EcdsaSignerFn = fn(pkcs8_der: &[u8]) -> PkResult<Arc<dyn EcdsaSignOps>>;
/// The backend's P-256 public key, from its uncompressed SEC1 point.
pub(crate) type EcdsaVerifierFn = fn(sec1_point: &[u8]) -> PkResult<Arc<dyn EcdsaVerifyOps>>;
/// The backend's Ed25519 signing key, from its 32-byte seed (RFC 8032's private key).
pub(crate) type Ed25519SignerFn = fn(seed: &[u8; 32]) -> PkResult<Arc<dyn MessageSignOps>>;
/// The backend's Ed25519 public key, from its 32 bytes; an error when they are no point.
pub(crate) type Ed25519VerifierFn = fn(public: &[u8; 32]) -> PkResult<Arc<dyn MessageVerifyOps>>;
/// The backend's ML-DSA-65 signing key from its 32-byte seed (FIPS 204's ξ), and the public key
/// the backend derives from it (1952 bytes).
pub(crate) type MlDsaSignerFn = fn(seed: &[u8; 32]) -> PkResult<(Arc<dyn MessageSignOps>, Vec<u8>)>;
/// The backend's ML-DSA-65 public key, from its 1952 bytes.
pub(crate) type MlDsaVerifierFn = fn(public: &[u8]) -> PkResult<Arc<dyn MessageVerifyOps>>;

/// One primitive in a table: the function that makes it and the backend that computes it.
#[derive(Clone, Copy)]
pub(crate) struct Entry<F> {
    /// The backend whose code runs.
    pub(crate) by: Provider,
    /// The constructor.
    pub(crate) make: F,
}

/// Every primitive a backend provides.
#[derive(Clone, Copy)]
pub(crate) struct Table {
    pub(crate) aes: Entry<BlockFn>,
    pub(crate) des: Entry<BlockFn>,
    pub(crate) des_ede3: Entry<BlockFn>,
    pub(crate) blowfish: Entry<BlockFn>,
    pub(crate) aes_ctr: Entry<CtrFn>,
    pub(crate) rc4: Entry<Rc4Fn>,
    pub(crate) aes_gcm: Entry<AeadFn>,
    pub(crate) chacha20_poly1305: Entry<AeadFn>,
    pub(crate) hmac_sha256: Entry<HmacFn>,
    pub(crate) hkdf_sha256: Entry<HkdfFn>,
    pub(crate) rsa_private: Entry<RsaPrivateFn>,
    pub(crate) rsa_public: Entry<RsaPublicFn>,
    pub(crate) rsa_prime: Entry<PrimeFn>,
    pub(crate) ecdsa_sign: Entry<EcdsaSignerFn>,
    pub(crate) ecdsa_verify: Entry<EcdsaVerifierFn>,
    pub(crate) ed25519_sign: Entry<Ed25519SignerFn>,
    pub(crate) ed25519_verify: Entry<Ed25519VerifierFn>,
    pub(crate) ml_dsa_65_sign: Entry<MlDsaSignerFn>,
    pub(crate) ml_dsa_65_verify: Entry<MlDsaVerifierFn>,
}

impl Table {
    /// Every primitive's name and the backend that computes it, in a fixed order.
    pub(crate) fn by(&self) -> [(&'static str, Provider); 19] {
        [
            ("AES (ECB, CBC)", self.aes.by),
            ("DES", self.des.by),
            ("3DES-EDE3", self.des_ede3.by),
            ("Blowfish", self.blowfish.by),
            ("AES-CTR", self.aes_ctr.by),
            ("RC4", self.rc4.by),
            ("AES-GCM", self.aes_gcm.by),
            ("ChaCha20-Poly1305", self.chacha20_poly1305.by),
            ("HMAC-SHA256", self.hmac_sha256.by),
            ("HKDF-SHA256", self.hkdf_sha256.by),
            ("RSA private operation", self.rsa_private.by),
            ("RSA public operation", self.rsa_public.by),
            ("RSA prime search", self.rsa_prime.by),
            ("ECDSA P-256 signing", self.ecdsa_sign.by),
            ("ECDSA P-256 verification", self.ecdsa_verify.by),
            ("Ed25519 signing", self.ed25519_sign.by),
            ("Ed25519 verification", self.ed25519_verify.by),
            ("ML-DSA-65 signing", self.ml_dsa_65_sign.by),
            ("ML-DSA-65 verification", self.ml_dsa_65_verify.by),
        ]
    }
}

/// A backend's RSA private key.
pub(crate) trait RsaPrivateOps: Send + Sync {
    /// The backend's own one-thread signature, PKCS#1 v1.5 or PSS (32-byte salt).
    fn sign(&self, pss: bool, digest: &Digest) -> PkResult<Vec<u8>>;
    /// PKCS#1 v1.5 through the split private operation on the backend's big numbers,
    /// re-checked by its verifier; `None` when the backend or this key does not split.
    fn sign_pkcs1v15_split(
        &self,
        em: &[u8],
        digest: &Digest,
        parallelism: Parallelism,
    ) -> Option<PkResult<Vec<u8>>>;
    /// RSA-OAEP-SHA256 (MGF1-SHA256) decryption with `label`.
    fn decrypt_oaep(&self, ciphertext: &[u8], label: &[u8]) -> PkResult<Vec<u8>>;
}

/// A backend's RSA public key.
pub(crate) trait RsaPublicOps: Send + Sync {
    /// Whether `signature` is a PKCS#1 v1.5 SHA-256 signature of `digest`.
    fn verify_pkcs1v15(&self, digest: &Digest, signature: &[u8]) -> bool;
}

/// A backend's P-256 signing key.
pub(crate) trait EcdsaSignOps: Send + Sync {
    /// The DER signature of `digest`.
    fn sign(&self, digest: &Digest) -> PkResult<Vec<u8>>;
}

/// A backend's P-256 public key.
pub(crate) trait EcdsaVerifyOps: Send + Sync {
    /// Whether the DER `signature` is valid for `digest`. `in_batch`: one of many
    /// verifications running at once, one per thread (a backend that can split one
    /// verification over the pool does not then).
    fn verify(&self, digest: &Digest, signature: &[u8], in_batch: bool) -> bool;
}

/// A backend's key of a scheme that signs whole messages (Ed25519: PureEdDSA over the
/// message; ML-DSA-65: FIPS 204's ML-DSA.Sign, hedged, with the empty context; the messages are
/// short statements).
pub(crate) trait MessageSignOps: Send + Sync {
    /// The signature of `message`.
    fn sign(&self, message: &[u8]) -> PkResult<Vec<u8>>;
}

/// A backend's public key of a scheme that verifies whole messages.
pub(crate) trait MessageVerifyOps: Send + Sync {
    /// Whether `signature` is valid for `message`.
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool;
}

/// A key object of a backend, with the backend's name.
pub(crate) struct KeyObject<T: ?Sized> {
    pub(crate) by: Provider,
    pub(crate) key: Arc<T>,
}

impl<T: ?Sized> Clone for KeyObject<T> {
    fn clone(&self) -> Self {
        KeyObject {
            by: self.by,
            key: Arc::clone(&self.key),
        }
    }
}
