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
//! (the split then runs both products one after the other). So
//! [`EcdsaPublicKey::verify_digest`] takes [`EcdsaVerify::for_current_pool`], and a batch of
//! verifications runs each one unsplit, one per thread, which is always faster than splitting.

use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use p256::ecdsa::{DerSignature, Signature, SigningKey, VerifyingKey};
use p256::elliptic_curve::Generate;
use p256::elliptic_curve::ops::{Invert, MulByGeneratorVartime, MulVartime, Reduce};
use p256::elliptic_curve::point::AffineCoordinates;
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use p256::{FieldBytes, ProjectivePoint, Scalar};
use zeroize::Zeroizing;

use super::{Digest, Error, Result, Signer, Verifier, pem};

/// How a P-256 signature is verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcdsaVerify {
    /// p256's own verification: `u1·G + u2·Q` in one interleaved pass.
    Lincomb,
    /// `u1·G ‖ u2·Q` on two threads under `rayon::join`.
    Split,
}

impl EcdsaVerify {
    /// The faster path in the current Rayon pool: [`Split`](Self::Split) with two threads or
    /// more, [`Lincomb`](Self::Lincomb) on one (see the README's table).
    pub fn for_current_pool() -> Self {
        if rayon::current_num_threads() > 1 {
            EcdsaVerify::Split
        } else {
            EcdsaVerify::Lincomb
        }
    }
}

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
#[derive(Clone, Debug)]
pub struct EcdsaPrivateKey(SigningKey);

impl EcdsaPrivateKey {
    /// A new random key (OS-seeded RNG).
    pub fn generate() -> Self {
        EcdsaPrivateKey(SigningKey::generate_from_rng(&mut rand::rng()))
    }

    /// The key with secret scalar `bytes` (big-endian, 32 bytes).
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if the scalar is zero or not below the group order.
    pub fn from_scalar_bytes(bytes: &[u8; 32]) -> Result<Self> {
        SigningKey::from_slice(bytes)
            .map(EcdsaPrivateKey)
            .map_err(|_| Error::format("the P-256 secret scalar is out of range"))
    }

    /// Reads the key from a key file's bytes (PEM or DER, PKCS#8 or SEC1).
    ///
    /// # Errors
    ///
    /// See [`pem::parse`]; [`Error::WrongKeyType`] for any other kind of key.
    pub fn from_key_file(bytes: &[u8]) -> Result<Self> {
        let secret = pem::parse(bytes)?.into_ec_private()?;
        Ok(EcdsaPrivateKey(SigningKey::from(secret)))
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as `openssl genpkey` writes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if encoding fails (it does not).
    pub fn to_pkcs8_pem(&self) -> Result<Zeroizing<String>> {
        self.0
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))
    }

    /// The public key.
    pub fn public_key(&self) -> EcdsaPublicKey {
        EcdsaPublicKey(*self.0.verifying_key())
    }

    /// p256's key.
    pub fn as_p256(&self) -> &SigningKey {
        &self.0
    }

    /// Signs a SHA-256 digest deterministically (RFC 6979, HMAC-SHA-256); returns the DER
    /// signature.
    pub fn sign_digest(&self, digest: &Digest) -> Vec<u8> {
        let signature: DerSignature = self
            .0
            .sign_prehash(digest)
            .expect("a 32-byte prehash is always accepted");
        signature.as_bytes().to_vec()
    }
}

impl Signer for EcdsaPrivateKey {
    fn sign_digest(&self, digest: &Digest) -> Result<Vec<u8>> {
        Ok(EcdsaPrivateKey::sign_digest(self, digest))
    }
}

/// A P-256 public key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EcdsaPublicKey(VerifyingKey);

impl EcdsaPublicKey {
    /// Reads the key from a key file's bytes: a public key (SPKI), or the public half of a
    /// private key.
    ///
    /// # Errors
    ///
    /// See [`pem::parse`]; [`Error::WrongKeyType`] for any other kind of key.
    pub fn from_key_file(bytes: &[u8]) -> Result<Self> {
        let public = pem::parse(bytes)?.into_ec_public()?;
        Ok(EcdsaPublicKey(VerifyingKey::from(public)))
    }

    /// The key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`), as `openssl pkey -pubout` writes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if encoding fails (it does not).
    pub fn to_spki_pem(&self) -> Result<String> {
        self.0
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))
    }

    /// p256's key.
    pub fn as_p256(&self) -> &VerifyingKey {
        &self.0
    }

    /// Whether the DER `signature` is valid for the SHA-256 `digest`, by the faster path for
    /// the current pool ([`EcdsaVerify::for_current_pool`]).
    pub fn verify_digest(&self, digest: &Digest, signature: &[u8]) -> bool {
        self.verify_digest_with(EcdsaVerify::for_current_pool(), digest, signature)
    }

    /// [`verify_digest`](Self::verify_digest) by a chosen path; both give the same answer.
    pub fn verify_digest_with(&self, how: EcdsaVerify, digest: &Digest, signature: &[u8]) -> bool {
        let Ok(signature) = Signature::from_der(signature) else {
            return false;
        };
        match how {
            EcdsaVerify::Lincomb => self.0.verify_prehash(digest, &signature).is_ok(),
            EcdsaVerify::Split => self.verify_split(digest, &signature),
        }
    }

    /// `x(u1·G ‖ u2·Q) mod n = r`, the two products on two threads.
    fn verify_split(&self, digest: &Digest, signature: &Signature) -> bool {
        let (r, s) = signature.split_scalars();
        // z: the digest as an integer mod n (SHA-256 output is exactly n's 32 bytes).
        let z = <Scalar as Reduce<FieldBytes>>::reduce(&FieldBytes::from(*digest));
        let s_inv = *s.invert_vartime();
        let u1 = z * s_inv;
        let u2 = *r * s_inv;
        let q = ProjectivePoint::from(*self.0.as_affine());
        let (u1_g, u2_q) = rayon::join(
            || ProjectivePoint::mul_by_generator_vartime(&u1),
            || q.mul_vartime(&u2),
        );
        let x = (u1_g + u2_q).to_affine().x();
        <Scalar as Reduce<FieldBytes>>::reduce(&x) == *r
    }
}

impl Verifier for EcdsaPublicKey {
    fn verify_digest(&self, digest: &Digest, signature: &[u8]) -> bool {
        // One per thread in a batch: never split.
        self.verify_digest_with(EcdsaVerify::Lincomb, digest, signature)
    }
}
