//! ECDSA over P-256 with SHA-256: keys, deterministic signing (RFC 6979) and verification,
//! either p256's own or split over two threads.
//!
//! Signatures are ASN.1 DER, as `openssl dgst -sha256 -sign` writes them.
//!
//! # The split verification
//!
//! Verifying `(r, s)` over digest `z` computes `R = u1·G + u2·Q` with `u1 = z/s`, `u2 = r/s`
//! and checks `x(R) mod n = r`. p256's own verification ([`EcdsaVerify::Lincomb`]) evaluates
//! both products in one interleaved pass (`lincomb`). The split ([`EcdsaVerify::Split`])
//! computes `u1·G` (with p256's precomputed base-point table) and `u2·Q` (a variable-base
//! multiplication) under `rayon::join` and adds them. `u2·Q` alone is most of the work, so the
//! split cannot be much faster than that one multiplication: measure before relying on it
//! (the README has the figures). Both paths use p256's variable-time arithmetic, which is fine
//! for verification: every input is public.
//!
//! Measured (README): in a pool of two or more threads the split is slightly faster than
//! lincomb (about 1.07×: `u2·Q` alone is most of the work); on one thread lincomb is faster
//! (the split then runs both products one after the other). So, on RustCrypto,
//! [`EcdsaPublicKey::verify_digest`] takes [`EcdsaVerify::for_current_pool`], and a batch of
//! verifications runs each one unsplit, one per thread, which is always faster than splitting.
//!
//! # Providers
//!
//! Under the aws-lc provider (the default when compiled), a key signs and verifies with
//! aws-lc: one aws-lc verification is about five times faster than p256's, more than either
//! split path could win back, so it always runs unsplit (and a batch runs one per thread).
//! aws-lc signs with a fresh random nonce, RustCrypto deterministically (RFC 6979): the
//! signatures differ, both verify everywhere (each provider and `openssl`). Whichever signs,
//! `s` is then brought into the lower half of the group order (`n − s` for a high one): the
//! signature's one form, which paracrypt's own formats require (a high `s` is accepted here, in
//! DER, as `openssl dgst -verify` accepts it).

use p256::ecdsa::signature::hazmat::PrehashSigner;
use p256::ecdsa::{DerSignature, Signature, SigningKey, VerifyingKey};
use p256::elliptic_curve::Generate;
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use zeroize::Zeroizing;

use super::{Digest, Error, Result, Signer, Verifier, pem};
pub use crate::provider::public_key::EcdsaVerify;
use crate::provider::{EcdsaSignOps, EcdsaVerifyOps, KeyObject, Provider, verify_p256};

/// A P-256 private key.
///
/// ```
/// use paracrypt_core::pubkey::ecdsa::EcdsaPrivateKey;
/// use paracrypt_core::pubkey::sha256;
///
/// let key = EcdsaPrivateKey::generate();
/// let digest = sha256(b"hello");
/// let signature = key.sign_digest(&digest);
/// assert!(key.public_key().verify_digest(&digest, &signature));
/// ```
pub struct EcdsaPrivateKey {
    key: SigningKey,
    /// The backend's copy of the key, which signs.
    backend: KeyObject<dyn EcdsaSignOps>,
}

impl Clone for EcdsaPrivateKey {
    fn clone(&self) -> Self {
        EcdsaPrivateKey {
            key: self.key.clone(),
            backend: self.backend.clone(),
        }
    }
}

impl std::fmt::Debug for EcdsaPrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EcdsaPrivateKey")
            .field("provider", &self.provider())
            .finish_non_exhaustive()
    }
}

impl EcdsaPrivateKey {
    /// A new random key (OS-seeded RNG), run by the default provider.
    pub fn generate() -> Self {
        Self::from_p256(SigningKey::generate_from_rng(&mut rand::rng()))
    }

    /// Wraps p256's key, run by the default provider.
    fn from_p256(key: SigningKey) -> Self {
        EcdsaPrivateKey {
            backend: signer(&key, Provider::default()),
            key,
        }
    }

    /// The same key, signing with `provider`.
    pub fn with_provider(self, provider: Provider) -> Self {
        EcdsaPrivateKey {
            backend: signer(&self.key, provider),
            ..self
        }
    }

    /// The provider that signs with this key.
    pub fn provider(&self) -> Provider {
        self.backend.by
    }

    /// The key with secret scalar `bytes` (big-endian, 32 bytes).
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if the scalar is zero or not below the group order.
    pub fn from_scalar_bytes(bytes: &[u8; 32]) -> Result<Self> {
        SigningKey::from_slice(bytes)
            .map(Self::from_p256)
            .map_err(|_| Error::format("the P-256 secret scalar is out of range"))
    }

    /// Reads the key from a key file's bytes (PEM or DER, PKCS#8 or SEC1).
    ///
    /// # Errors
    ///
    /// See [`pem::parse`]; [`Error::WrongKeyType`] for any other kind of key.
    pub fn from_key_file(bytes: &[u8]) -> Result<Self> {
        let secret = pem::parse(bytes)?.into_ec_private()?;
        Ok(Self::from_p256(SigningKey::from(secret)))
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as `openssl genpkey` writes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if encoding fails (it does not).
    pub fn to_pkcs8_pem(&self) -> Result<Zeroizing<String>> {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))
    }

    /// The public key, verifying with this key's provider.
    pub fn public_key(&self) -> EcdsaPublicKey {
        EcdsaPublicKey::from_p256(*self.key.verifying_key(), self.provider())
    }

    /// p256's key.
    pub fn as_p256(&self) -> &SigningKey {
        &self.key
    }

    /// Signs a SHA-256 digest; returns the DER signature, its `s` in the lower half of the
    /// group order (the one form paracrypt writes). RustCrypto signs deterministically (RFC 6979,
    /// HMAC-SHA-256), aws-lc and OpenSSL with a random nonce (see the module docs).
    pub fn sign_digest(&self, digest: &Digest) -> Vec<u8> {
        let e = match self.backend.key.sign(digest) {
            Ok(signature) => return low_s(signature),
            Err(e) => e,
        };
        // Only an internal failure of a C backend: p256's signature is as valid.
        log::warn!(
            "{} ECDSA signing failed ({e}); signing with p256",
            self.backend.by
        );
        let signature: DerSignature = self
            .key
            .sign_prehash(digest)
            .expect("a 32-byte prehash is always accepted");
        low_s(signature.as_bytes().to_vec())
    }
}

/// The DER signature `der` with `s` replaced by `n − s` when `s` is in the upper half of the
/// group order `n`: `(r, s)` and `(r, n − s)` verify alike, so every signature has a second
/// form that anyone can compute, and a signed container whose chunk signatures were flipped
/// would still verify as different bytes. paracrypt writes the low form only (as libsecp256k1
/// and BIP 146 do), and its own formats accept nothing else
/// ([`sign::VerifyingKey::verify`](crate::sign::VerifyingKey::verify)). No backend
/// normalises on its own: aws-lc and OpenSSL leave `s` as their random nonce gives it, p256 as
/// RFC 6979's does (P-256's `NORMALIZE_S` is off). A `der` that is not a signature (a
/// backend's fault) is returned as it is, for the caller to refuse.
fn low_s(der: Vec<u8>) -> Vec<u8> {
    match Signature::from_der(&der) {
        Ok(signature) => signature.normalize_s().to_der().as_bytes().to_vec(),
        Err(_) => der,
    }
}

impl Signer for EcdsaPrivateKey {
    fn sign_digest(&self, digest: &Digest) -> Result<Vec<u8>> {
        Ok(EcdsaPrivateKey::sign_digest(self, digest))
    }
}

/// A P-256 public key.
#[derive(Clone)]
pub struct EcdsaPublicKey {
    key: VerifyingKey,
    /// The backend's copy of the key, which verifies.
    backend: KeyObject<dyn EcdsaVerifyOps>,
}

impl std::fmt::Debug for EcdsaPublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EcdsaPublicKey")
            .field("key", &self.key)
            .field("provider", &self.provider())
            .finish()
    }
}

impl PartialEq for EcdsaPublicKey {
    /// Keys are equal when their points are, whichever provider runs them.
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for EcdsaPublicKey {}

impl EcdsaPublicKey {
    fn from_p256(key: VerifyingKey, provider: Provider) -> Self {
        EcdsaPublicKey {
            backend: verifier(&key, provider),
            key,
        }
    }

    /// Wraps p256's key, verified by the default provider.
    pub fn from_verifying_key(key: VerifyingKey) -> Self {
        Self::from_p256(key, Provider::default())
    }

    /// The same key, verifying with `provider`.
    pub fn with_provider(self, provider: Provider) -> Self {
        EcdsaPublicKey {
            backend: verifier(&self.key, provider),
            ..self
        }
    }

    /// The provider that verifies with this key.
    pub fn provider(&self) -> Provider {
        self.backend.by
    }

    /// Reads the key from a key file's bytes: a public key (SPKI), or the public half of a
    /// private key.
    ///
    /// # Errors
    ///
    /// See [`pem::parse`]; [`Error::WrongKeyType`] for any other kind of key.
    pub fn from_key_file(bytes: &[u8]) -> Result<Self> {
        let public = pem::parse(bytes)?.into_ec_public()?;
        Ok(Self::from_p256(
            VerifyingKey::from(public),
            Provider::default(),
        ))
    }

    /// The key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`), as `openssl pkey -pubout` writes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if encoding fails (it does not).
    pub fn to_spki_pem(&self) -> Result<String> {
        self.key
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))
    }

    /// p256's key.
    pub fn as_p256(&self) -> &VerifyingKey {
        &self.key
    }

    /// Whether the DER `signature` is valid for the SHA-256 `digest`: aws-lc's verification
    /// under aws-lc, otherwise p256's faster path for the current pool
    /// ([`EcdsaVerify::for_current_pool`]). A high `s` is accepted, as `openssl dgst -verify`
    /// accepts it: OpenSSL's own signatures have one half the time (paracrypt's never do, see
    /// [`EcdsaPrivateKey::sign_digest`]).
    pub fn verify_digest(&self, digest: &Digest, signature: &[u8]) -> bool {
        self.backend.key.verify(digest, signature, false)
    }

    /// Verification by one of p256's paths (RustCrypto whatever the key's provider); both
    /// give the same answer.
    pub fn verify_digest_with(&self, how: EcdsaVerify, digest: &Digest, signature: &[u8]) -> bool {
        verify_p256(&self.key, how, digest, signature)
    }
}

/// `provider`'s copy of the signing key `key`.
fn signer(key: &SigningKey, provider: Provider) -> KeyObject<dyn EcdsaSignOps> {
    let der = key.to_pkcs8_der().expect("p256 encodes its own key");
    provider
        .ecdsa_signer(der.as_bytes())
        .expect("p256 reads back the PKCS#8 it writes")
}

/// `provider`'s copy of the public key `key`.
fn verifier(key: &VerifyingKey, provider: Provider) -> KeyObject<dyn EcdsaVerifyOps> {
    provider
        .ecdsa_verifier(key.to_sec1_point(false).as_bytes())
        .expect("p256 reads back the point it writes")
}

impl Verifier for EcdsaPublicKey {
    fn verify_digest(&self, digest: &Digest, signature: &[u8]) -> bool {
        // One per thread in a batch: never split.
        self.backend.key.verify(digest, signature, true)
    }
}
