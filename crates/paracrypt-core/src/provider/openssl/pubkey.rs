//! The OpenSSL provider's public-key work: RSA signing (PKCS#1 v1.5 and PSS), OAEP
//! decryption and PKCS#1 v1.5 verification, P-256 ECDSA, all through `EVP_PKEY_CTX`; the prime
//! search through `BN_generate_prime_ex`.
//!
//! Keys are read and written by the RustCrypto crates (one format layer for every provider);
//! OpenSSL's objects are built from the same key's DER. Each thread of the pool signs with
//! its own copy of the key ([`PerThread`]): nothing of the key object (its lock, its blinding
//! values, its reference count) is shared between two threads.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use openssl::bn::{BigNum, BigNumContext};
use openssl::ec::{EcGroup, EcKey, EcPoint};
use openssl::md::Md;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private, Public};
use openssl::pkey_ctx::PkeyCtx;
use openssl::rsa::Padding;
use openssl::sign::RsaPssSaltlen;
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey};
use rsa::traits::PublicKeyParts;

use crate::error::pubkey::{Error, Result};
use crate::provider::PerThread;
use crate::provider::public_key::{Digest, Parallelism};
use crate::provider::{
    EcdsaSignOps, EcdsaVerifyOps, MessageSignOps, MessageVerifyOps, RsaPrivateOps, RsaPublicOps,
};

/// The smallest RSA modulus this provider runs (as aws-lc); smaller keys stay on RustCrypto.
const MIN_RSA_BITS: usize = 2048;

fn rejected(e: openssl::error::ErrorStack) -> Error {
    Error::UnsupportedKey {
        reason: format!("OpenSSL rejects the key: {e}"),
    }
}

fn encode_failed(e: impl std::fmt::Display) -> Error {
    Error::format(format!("cannot encode the key: {e}"))
}

/// A private key, one `EVP_PKEY` per pool thread.
struct PrivateKey(PerThread<PKey<Private>>);

impl PrivateKey {
    fn from_pkcs8(der: &[u8]) -> Result<Self> {
        let der = zeroize::Zeroizing::new(der.to_vec());
        let first = PKey::private_key_from_der(&der).map_err(rejected)?;
        Ok(PrivateKey(PerThread::new(first, move || {
            PKey::private_key_from_der(&der).ok()
        })))
    }

    /// A context on this thread's copy of the key.
    fn ctx(&self) -> std::result::Result<PkeyCtx<Private>, openssl::error::ErrorStack> {
        PkeyCtx::new(self.0.get())
    }
}

// ---------------------------------------------------------------------------------------------
// RSA

/// The table's RSA private entry: OpenSSL's copy of `key`, or `None` below 2048 bits.
pub(super) fn rsa_private(key: &rsa::RsaPrivateKey) -> Result<Option<Arc<dyn RsaPrivateOps>>> {
    if (key.n().bits() as usize) < MIN_RSA_BITS {
        return Ok(None);
    }
    let der = key.to_pkcs8_der().map_err(encode_failed)?;
    Ok(Some(Arc::new(PrivateKey::from_pkcs8(der.as_bytes())?)))
}

impl RsaPrivateOps for PrivateKey {
    /// OpenSSL's own signature (`RSA_sign`-style: blinded, one thread).
    fn sign(&self, pss: bool, digest: &Digest) -> Result<Vec<u8>> {
        let sign = || {
            let mut ctx = self.ctx()?;
            ctx.sign_init()?;
            ctx.set_signature_md(Md::sha256())?;
            if pss {
                ctx.set_rsa_padding(Padding::PKCS1_PSS)?;
                ctx.set_rsa_pss_saltlen(RsaPssSaltlen::DIGEST_LENGTH)?;
                ctx.set_rsa_mgf1_md(Md::sha256())?;
            } else {
                ctx.set_rsa_padding(Padding::PKCS1)?;
            }
            let mut signature = Vec::new();
            ctx.sign_to_vec(digest, &mut signature)?;
            Ok::<_, openssl::error::ErrorStack>(signature)
        };
        sign().map_err(|_| Error::Provider {
            what: "RSA signing",
        })
    }

    /// OpenSSL's big numbers are not split here: its own path runs instead.
    fn sign_pkcs1v15_split(
        &self,
        _em: &[u8],
        _digest: &Digest,
        _parallelism: Parallelism,
    ) -> Option<Result<Vec<u8>>> {
        None
    }

    fn decrypt_oaep(&self, ciphertext: &[u8], label: &[u8]) -> Result<Vec<u8>> {
        let decrypt = || {
            let mut ctx = self.ctx()?;
            ctx.decrypt_init()?;
            ctx.set_rsa_padding(Padding::PKCS1_OAEP)?;
            ctx.set_rsa_oaep_md(Md::sha256())?;
            ctx.set_rsa_mgf1_md(Md::sha256())?;
            if !label.is_empty() {
                ctx.set_rsa_oaep_label(label)?;
            }
            let mut out = Vec::new();
            ctx.decrypt_to_vec(ciphertext, &mut out)?;
            Ok::<_, openssl::error::ErrorStack>(out)
        };
        decrypt().map_err(|_| Error::Decryption)
    }
}

/// A public key, one `EVP_PKEY` per pool thread.
struct PublicKey(PerThread<PKey<Public>>);

impl PublicKey {
    fn new(make: impl Fn() -> Option<PKey<Public>> + Send + Sync + 'static) -> Result<Self> {
        let first = make().ok_or_else(|| Error::UnsupportedKey {
            reason: "OpenSSL rejects the key".to_owned(),
        })?;
        Ok(PublicKey(PerThread::new(first, make)))
    }

    fn verify(&self, rsa_pkcs1: bool, digest: &Digest, signature: &[u8]) -> bool {
        let verify = || {
            let mut ctx = PkeyCtx::new(self.0.get())?;
            ctx.verify_init()?;
            ctx.set_signature_md(Md::sha256())?;
            if rsa_pkcs1 {
                ctx.set_rsa_padding(Padding::PKCS1)?;
            }
            ctx.verify(digest, signature)
        };
        verify().unwrap_or(false)
    }
}

/// The table's RSA public entry: OpenSSL's parsed key, or `None` below 2048 bits.
pub(super) fn rsa_public(key: &rsa::RsaPublicKey) -> Result<Option<Arc<dyn RsaPublicOps>>> {
    if (key.n().bits() as usize) < MIN_RSA_BITS {
        return Ok(None);
    }
    let der = key.to_public_key_der().map_err(encode_failed)?.into_vec();
    let key = PublicKey::new(move || PKey::public_key_from_der(&der).ok())?;
    Ok(Some(Arc::new(RsaPublic(key))))
}

struct RsaPublic(PublicKey);

impl RsaPublicOps for RsaPublic {
    fn verify_pkcs1v15(&self, digest: &Digest, signature: &[u8]) -> bool {
        self.0.verify(true, digest, signature)
    }
}

/// One random prime of `bits` bits (`BN_generate_prime_ex`: its two top bits set). OpenSSL's
/// search cannot be interrupted, so `stop` is only looked at before it starts.
pub(super) fn prime(bits: u32, stop: &AtomicBool) -> Result<Option<crypto_bigint::BoxedUint>> {
    if stop.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(None);
    }
    let failed = |_| Error::Provider {
        what: "BN_generate_prime_ex",
    };
    let mut p = BigNum::new().map_err(failed)?;
    p.generate_prime(bits as i32, false, None, None)
        .map_err(failed)?;
    let bytes = p.to_vec_padded(bits.div_ceil(8) as i32).map_err(failed)?;
    Ok(Some(
        crypto_bigint::BoxedUint::from_be_slice(&bytes, bits).expect("the prime fits its size"),
    ))
}

// ---------------------------------------------------------------------------------------------
// ECDSA P-256

/// The table's ECDSA signing entry.
pub(super) fn ecdsa_signer(pkcs8_der: &[u8]) -> Result<Arc<dyn EcdsaSignOps>> {
    Ok(Arc::new(PrivateKey::from_pkcs8(pkcs8_der)?))
}

impl EcdsaSignOps for PrivateKey {
    /// The DER signature of `digest` (a random nonce, as aws-lc).
    fn sign(&self, digest: &Digest) -> Result<Vec<u8>> {
        let sign = || {
            let mut ctx = self.ctx()?;
            ctx.sign_init()?;
            let mut signature = Vec::new();
            ctx.sign_to_vec(digest, &mut signature)?;
            Ok::<_, openssl::error::ErrorStack>(signature)
        };
        sign().map_err(|_| Error::Provider {
            what: "ECDSA signing",
        })
    }
}

/// The table's ECDSA verification entry: OpenSSL's P-256 public key (SEC1 point).
pub(super) fn ecdsa_verifier(sec1_point: &[u8]) -> Result<Arc<dyn EcdsaVerifyOps>> {
    let point = sec1_point.to_vec();
    let make = move || {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).ok()?;
        let mut ctx = BigNumContext::new().ok()?;
        let point = EcPoint::from_bytes(&group, &point, &mut ctx).ok()?;
        PKey::from_ec_key(EcKey::from_public_key(&group, &point).ok()?).ok()
    };
    Ok(Arc::new(EcdsaPublic(PublicKey::new(make)?)))
}

struct EcdsaPublic(PublicKey);

impl EcdsaVerifyOps for EcdsaPublic {
    fn verify(&self, digest: &Digest, signature: &[u8], _in_batch: bool) -> bool {
        self.0.verify(false, digest, signature)
    }
}

// ---------------------------------------------------------------------------------------------
// Ed25519

/// OpenSSL's Ed25519 key (an `EVP_PKEY`, shared: signing takes no lock on it).
struct Ed25519Key<T>(PKey<T>);

/// The table's Ed25519 signing entry: OpenSSL's key of the seed.
pub(super) fn ed25519_signer(seed: &[u8; 32]) -> Result<Arc<dyn MessageSignOps>> {
    let key =
        PKey::private_key_from_raw_bytes(seed, openssl::pkey::Id::ED25519).map_err(rejected)?;
    Ok(Arc::new(Ed25519Key(key)))
}

impl MessageSignOps for Ed25519Key<Private> {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        openssl::sign::Signer::new_without_digest(&self.0)
            .and_then(|mut signer| signer.sign_oneshot_to_vec(message))
            .map_err(|_| Error::Provider {
                what: "Ed25519 signing",
            })
    }
}

/// The table's Ed25519 verification entry.
pub(super) fn ed25519_verifier(public: &[u8; 32]) -> Result<Arc<dyn MessageVerifyOps>> {
    let key =
        PKey::public_key_from_raw_bytes(public, openssl::pkey::Id::ED25519).map_err(rejected)?;
    Ok(Arc::new(Ed25519Key(key)))
}

impl MessageVerifyOps for Ed25519Key<Public> {
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        openssl::sign::Verifier::new_without_digest(&self.0)
            .and_then(|mut verifier| verifier.verify_oneshot(signature, message))
            .unwrap_or(false)
    }
}
