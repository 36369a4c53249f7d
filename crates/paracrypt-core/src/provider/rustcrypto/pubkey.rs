//! RustCrypto's public-key entries: the `rsa` crate (and, for PKCS#1 v1.5 signing, the split
//! private operation of [`crt`](super::crt) on its numbers) for RSA, crypto-primes for
//! the prime search, `p256` for ECDSA (its own verification, or `u1·G ‖ u2·Q` on two threads).
//!
//! Every other backend falls back to these for a key it does not take (RSA below 2048 bits).
//! Pure Rust keeps no lock, cache or reference count inside a key: threads share one object.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crypto_bigint::BoxedUint;
use crypto_primes::hazmat::{SetBits, SieveFactory, SmallFactorsSieveFactory};
use crypto_primes::{Flavor, is_prime};
use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use p256::ecdsa::{DerSignature, Signature, SigningKey, VerifyingKey};
use p256::elliptic_curve::ops::{Invert, MulByGeneratorVartime, MulVartime, Reduce};
use p256::elliptic_curve::point::AffineCoordinates;
use p256::pkcs8::DecodePrivateKey;
use p256::{FieldBytes, ProjectivePoint, Scalar};
use rsa::sha2::Sha256;
use rsa::traits::PublicKeyParts;
use rsa::{Oaep, Pkcs1v15Sign, Pss};

use super::crt::CrtKey;
use crate::error::pubkey::{Error, Result};
use crate::provider::public_key::{Digest, EcdsaVerify, Parallelism};
use crate::provider::{
    EcdsaSignOps, EcdsaVerifyOps, MessageSignOps, MessageVerifyOps, RsaPrivateOps, RsaPublicOps,
};

// ---------------------------------------------------------------------------------------------
// RSA

/// The table's RSA private entry: the `rsa` crate's key with its CRT parts (every key).
pub(super) fn rsa_private(key: &rsa::RsaPrivateKey) -> Result<Option<Arc<dyn RsaPrivateOps>>> {
    Ok(Some(Arc::new(RsaKey {
        crt: CrtKey::new(key)?,
        key: key.clone(),
    })))
}

/// An RSA private key of the `rsa` crate, with the CRT parts of the split private operation.
struct RsaKey {
    key: rsa::RsaPrivateKey,
    crt: CrtKey,
}

impl RsaPrivateOps for RsaKey {
    /// The crate's own signature (blinded, one thread).
    fn sign(&self, pss: bool, digest: &Digest) -> Result<Vec<u8>> {
        let mut rng = rand::rng();
        if pss {
            self.key
                .sign_with_rng(&mut rng, Pss::<Sha256>::new(), digest)
                .map_err(Error::rsa("PSS signing"))
        } else {
            self.key
                .sign_with_rng(&mut rng, Pkcs1v15Sign::new::<Sha256>(), digest)
                .map_err(Error::rsa("PKCS#1 v1.5 signing"))
        }
    }

    /// PKCS#1 v1.5 through the split operation, verified by the crate before it is returned:
    /// `s^e mod n` must be exactly the encoding the crate expects for this digest.
    fn sign_pkcs1v15_split(
        &self,
        em: &[u8],
        digest: &Digest,
        parallelism: Parallelism,
    ) -> Option<Result<Vec<u8>>> {
        Some((|| {
            let em = BoxedUint::from_be_slice(em, self.key.n_bits_precision())
                .expect("k bytes fit the modulus precision");
            let s = self.crt.private_op_unchecked(&em, parallelism)?;
            let signature = i2osp(&s, self.key.size());
            self.key
                .as_public_key()
                .verify(Pkcs1v15Sign::new::<Sha256>(), digest, &signature)
                .map_err(|_| Error::FaultDetected)?;
            Ok(signature)
        })())
    }

    /// RSA-OAEP-SHA256 decryption on the crate's blinded path.
    fn decrypt_oaep(&self, ciphertext: &[u8], label: &[u8]) -> Result<Vec<u8>> {
        let padding = Oaep::<Sha256>::new_with_label(label.to_vec());
        self.key
            .decrypt_blinded(&mut rand::rng(), padding, ciphertext)
            .map_err(|_| Error::Decryption)
    }
}

/// I2OSP: the integer as exactly `k` big-endian bytes (it is below `n`, so it fits).
fn i2osp(x: &BoxedUint, k: usize) -> Vec<u8> {
    let bytes = x.to_be_bytes();
    let skip = bytes.len() - k;
    debug_assert!(bytes[..skip].iter().all(|&b| b == 0));
    bytes[skip..].to_vec()
}

/// The table's RSA public entry: the `rsa` crate's key (every key).
pub(super) fn rsa_public(key: &rsa::RsaPublicKey) -> Result<Option<Arc<dyn RsaPublicOps>>> {
    Ok(Some(Arc::new(RsaPublic(key.clone()))))
}

/// An RSA public key of the `rsa` crate.
struct RsaPublic(rsa::RsaPublicKey);

impl RsaPublicOps for RsaPublic {
    fn verify_pkcs1v15(&self, digest: &Digest, signature: &[u8]) -> bool {
        self.0
            .verify(Pkcs1v15Sign::new::<Sha256>(), digest, signature)
            .is_ok()
    }
}

/// The table's prime search: candidates from a fresh random crypto-primes sieve (two top bits
/// set), each tested with `is_prime` (Miller–Rabin base 2 and a strong Lucas test), as the
/// `rsa` crate's own generator; `None` once `stop` is set.
pub(super) fn prime(bits: u32, stop: &AtomicBool) -> Result<Option<BoxedUint>> {
    let mut rng = rand::rng();
    let mut factory =
        SmallFactorsSieveFactory::<BoxedUint>::new(Flavor::Any, bits, SetBits::TwoMsb)
            .expect("RSA prime sizes are far above the sieve's minimum");
    while !stop.load(Ordering::Acquire) {
        let sieve = factory
            .make_sieve(&mut rng, None)
            .expect("RSA prime sizes fit the sieve")
            .expect("this sieve factory never runs out");
        for candidate in sieve {
            if stop.load(Ordering::Acquire) {
                return Ok(None);
            }
            if is_prime(Flavor::Any, &candidate) {
                return Ok(Some(candidate));
            }
        }
    }
    Ok(None)
}

// ---------------------------------------------------------------------------------------------
// ECDSA P-256

/// The table's ECDSA signing entry: p256's key, which signs deterministically (RFC 6979).
pub(super) fn ecdsa_signer(pkcs8_der: &[u8]) -> Result<Arc<dyn EcdsaSignOps>> {
    let key = SigningKey::from_pkcs8_der(pkcs8_der)
        .map_err(|e| Error::format(format!("cannot read the P-256 key: {e}")))?;
    Ok(Arc::new(EcdsaSigner(key)))
}

/// p256's signing key.
struct EcdsaSigner(SigningKey);

impl EcdsaSignOps for EcdsaSigner {
    fn sign(&self, digest: &Digest) -> Result<Vec<u8>> {
        let signature: DerSignature = self.0.sign_prehash(digest).map_err(|_| Error::Provider {
            what: "ECDSA signing",
        })?;
        Ok(signature.as_bytes().to_vec())
    }
}

/// The table's ECDSA verification entry: p256's key from its SEC1 point.
pub(super) fn ecdsa_verifier(sec1_point: &[u8]) -> Result<Arc<dyn EcdsaVerifyOps>> {
    let key = VerifyingKey::from_sec1_bytes(sec1_point)
        .map_err(|_| Error::format("the P-256 point is not on the curve"))?;
    Ok(Arc::new(EcdsaPublic(key)))
}

/// p256's public key.
struct EcdsaPublic(VerifyingKey);

impl EcdsaVerifyOps for EcdsaPublic {
    /// One interleaved pass (`lincomb`) in a batch, or alone on one thread; split over two
    /// threads alone in a larger pool (see [`EcdsaVerify`]).
    fn verify(&self, digest: &Digest, signature: &[u8], in_batch: bool) -> bool {
        let how = if in_batch {
            EcdsaVerify::Lincomb
        } else {
            EcdsaVerify::for_current_pool()
        };
        verify_p256(&self.0, how, digest, signature)
    }
}

/// Whether the DER `signature` is valid for `digest` under `key`, on p256's path `how`.
pub(crate) fn verify_p256(
    key: &VerifyingKey,
    how: EcdsaVerify,
    digest: &Digest,
    signature: &[u8],
) -> bool {
    let Ok(signature) = Signature::from_der(signature) else {
        return false;
    };
    match how {
        EcdsaVerify::Lincomb => key.verify_prehash(digest, &signature).is_ok(),
        EcdsaVerify::Split => verify_split(key, digest, &signature),
    }
}

/// `x(u1·G ‖ u2·Q) mod n = r`, the two products on two threads.
fn verify_split(key: &VerifyingKey, digest: &Digest, signature: &Signature) -> bool {
    let (r, s) = signature.split_scalars();
    // z: the digest as an integer mod n (SHA-256 output is exactly n's 32 bytes).
    let z = <Scalar as Reduce<FieldBytes>>::reduce(&FieldBytes::from(*digest));
    let s_inv = *s.invert_vartime();
    let u1 = z * s_inv;
    let u2 = *r * s_inv;
    let q = ProjectivePoint::from(*key.as_affine());
    let (u1_g, u2_q) = rayon::join(
        || ProjectivePoint::mul_by_generator_vartime(&u1),
        || q.mul_vartime(&u2),
    );
    let x = (u1_g + u2_q).to_affine().x();
    <Scalar as Reduce<FieldBytes>>::reduce(&x) == *r
}

// ---------------------------------------------------------------------------------------------
// Ed25519 (ed25519-dalek)

/// The table's Ed25519 signing entry: dalek's key of the seed.
pub(super) fn ed25519_signer(seed: &[u8; 32]) -> Result<Arc<dyn MessageSignOps>> {
    Ok(Arc::new(ed25519_dalek::SigningKey::from_bytes(seed)))
}

impl MessageSignOps for ed25519_dalek::SigningKey {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        Ok(ed25519_dalek::Signer::sign(self, message)
            .to_bytes()
            .to_vec())
    }
}

/// The table's Ed25519 verification entry: dalek's key, which refuses bytes that are no point.
pub(super) fn ed25519_verifier(public: &[u8; 32]) -> Result<Arc<dyn MessageVerifyOps>> {
    ed25519_dalek::VerifyingKey::from_bytes(public)
        .map(|key| Arc::new(key) as Arc<dyn MessageVerifyOps>)
        .map_err(|_| Error::UnsupportedKey {
            reason: "the Ed25519 public key is not a point".into(),
        })
}

impl MessageVerifyOps for ed25519_dalek::VerifyingKey {
    /// RFC 8032's verification as aws-lc and OpenSSL run it: `S` below the group order, the
    /// encodings of `A` and `R` as given (dalek's `verify`; `verify_strict` would also refuse
    /// small-order `A` and `R`, which the other backends accept).
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(signature) = ed25519_dalek::Signature::from_slice(signature) else {
            return false;
        };
        ed25519_dalek::Verifier::verify(self, message, &signature).is_ok()
    }
}

// ---------------------------------------------------------------------------------------------
// ML-DSA-65 (ml-dsa)

/// The length of an ML-DSA-65 public key.
const ML_DSA_65_PUBLIC_LEN: usize = 1952;

/// ml-dsa's ML-DSA-65 key (the expanded key, kept on the heap: about 30 KB).
struct MlDsa65Signer(Box<ml_dsa::SigningKey<ml_dsa::MlDsa65>>);

/// The table's ML-DSA-65 signing entry: ml-dsa's key of the seed (FIPS 204's
/// ML-DSA.KeyGen_internal) and its public key.
pub(super) fn ml_dsa_65_signer(seed: &[u8; 32]) -> Result<(Arc<dyn MessageSignOps>, Vec<u8>)> {
    let key = Box::new(ml_dsa::SigningKey::<ml_dsa::MlDsa65>::from_seed(
        &ml_dsa::Seed::from(*seed),
    ));
    let public = AsRef::<ml_dsa::VerifyingKey<_>>::as_ref(&*key)
        .encode()
        .to_vec();
    Ok((Arc::new(MlDsa65Signer(key)), public))
}

impl MessageSignOps for MlDsa65Signer {
    /// Hedged signing (FIPS 204's default): 32 fresh random bytes enter every signature, as in
    /// aws-lc; the context is empty.
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        self.0
            .expanded_key()
            .sign_randomized(message, &[], &mut rand::rng())
            .map(|signature| signature.encode().to_vec())
            .map_err(|_| Error::Provider {
                what: "ML-DSA-65 signing",
            })
    }
}

/// ml-dsa's ML-DSA-65 public key.
struct MlDsa65Public(Box<ml_dsa::VerifyingKey<ml_dsa::MlDsa65>>);

/// The table's ML-DSA-65 verification entry: any 1952 bytes are a key (FIPS 204's pkDecode
/// takes every string of the length).
pub(super) fn ml_dsa_65_verifier(public: &[u8]) -> Result<Arc<dyn MessageVerifyOps>> {
    let encoded =
        ml_dsa::EncodedVerifyingKey::<ml_dsa::MlDsa65>::try_from(public).map_err(|_| {
            Error::UnsupportedKey {
                reason: format!(
                    "an ML-DSA-65 public key is {ML_DSA_65_PUBLIC_LEN} bytes, not {}",
                    public.len()
                ),
            }
        })?;
    Ok(Arc::new(MlDsa65Public(Box::new(
        ml_dsa::VerifyingKey::decode(&encoded),
    ))))
}

impl MessageVerifyOps for MlDsa65Public {
    /// FIPS 204's ML-DSA.Verify with the empty context.
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(signature) = ml_dsa::Signature::<ml_dsa::MlDsa65>::try_from(signature) else {
            return false;
        };
        self.0.verify_with_context(message, &[], &signature)
    }
}
