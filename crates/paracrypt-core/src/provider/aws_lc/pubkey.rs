//! The aws-lc provider's public-key work: aws-lc-rs's RSA and ECDSA for the one-thread
//! operations, and aws-lc's big numbers (through [`super::ffi`]) for what paracrypt
//! parallelises itself: the split RSA private operation and the prime search.
//!
//! Keys are still read, written and validated by the RustCrypto crates (one format layer for
//! both providers); the aws-lc objects are built from the same key's DER.

use aws_lc_rs::digest::{self, Digest as LcDigest};
use aws_lc_rs::rsa::{KeyPair, OaepPrivateDecryptingKey, PrivateDecryptingKey};
use aws_lc_rs::signature::{self, EcdsaKeyPair, ParsedPublicKey};
use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
use rsa::traits::{PrivateKeyParts, PublicKeyParts};

use std::sync::Arc;

use super::ffi::{self, Bignum, BnCtx, FfiError, MontCtx};
use crate::error::pubkey::{Error, Result};
use crate::provider::public_key::{Digest, Parallelism};
use crate::provider::{
    EcdsaSignOps, EcdsaVerifyOps, MessageSignOps, MessageVerifyOps, PerThread, RsaPrivateOps,
    RsaPublicOps,
};

impl From<FfiError> for Error {
    fn from(e: FfiError) -> Self {
        Error::Provider { what: e.0 }
    }
}

fn lc_digest(digest: &Digest) -> LcDigest {
    LcDigest::import_less_safe(digest, &digest::SHA256).expect("a SHA-256 digest is 32 bytes")
}

/// The smallest RSA modulus aws-lc-rs takes; smaller keys stay on RustCrypto.
const MIN_RSA_BITS: usize = 2048;

/// The table's RSA private entry: aws-lc's copy of `key`, or `None` below 2048 bits.
pub(super) fn rsa_private(key: &rsa::RsaPrivateKey) -> Result<Option<Arc<dyn RsaPrivateOps>>> {
    Ok(RsaKey::new(key)?.map(|k| Arc::new(k) as _))
}

/// The table's RSA public entry: aws-lc's parsed key, or `None` below 2048 bits.
pub(super) fn rsa_public(key: &rsa::RsaPublicKey) -> Result<Option<Arc<dyn RsaPublicOps>>> {
    let Some(first) = parsed_rsa_public(key)? else {
        return Ok(None);
    };
    let key = key.clone();
    let copies = PerThread::new(first, move || parsed_rsa_public(&key).ok().flatten());
    Ok(Some(Arc::new(RsaPublic(copies))))
}

/// aws-lc's RSA public key, one copy per pool thread.
struct RsaPublic(PerThread<ParsedPublicKey>);

impl RsaPublicOps for RsaPublic {
    fn verify_pkcs1v15(&self, digest: &Digest, signature: &[u8]) -> bool {
        self.0
            .get()
            .verify_digest_sig(&lc_digest(digest), signature)
            .is_ok()
    }
}

/// An RSA private key in aws-lc: its own signing (one thread) and the parts of the split.
struct RsaKey {
    /// One `RSA` object per pool thread: aws-lc's carries a lock and a blinding cache.
    pair: PerThread<KeyPair>,
    /// As `pair`, for OAEP decryption.
    oaep: PerThread<OaepPrivateDecryptingKey>,
    /// The public half, one per pool thread, which re-checks the split's signatures.
    public: PerThread<ParsedPublicKey>,
    /// `None` for unbalanced primes (the constant-time reductions need `p` and `q` of the same
    /// size): such a key signs on aws-lc's own path.
    split: Option<CrtSplit>,
}

impl RsaKey {
    /// aws-lc's copy of `key`; `Ok(None)` when aws-lc does not take it (below 2048 bits).
    fn new(key: &rsa::RsaPrivateKey) -> Result<Option<Self>> {
        if (key.n().bits() as usize) < MIN_RSA_BITS || key.primes().len() != 2 {
            return Ok(None);
        }
        let der = key
            .to_pkcs1_der()
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))?;
        let rejected = |e: aws_lc_rs::error::KeyRejected| Error::UnsupportedKey {
            reason: format!("aws-lc rejects the key: {e}"),
        };
        let first = KeyPair::from_der(der.as_bytes()).map_err(rejected)?;
        let der = der.to_bytes();
        let pair = PerThread::new(first, move || KeyPair::from_der(&der).ok());
        let pkcs8 = rsa::pkcs8::EncodePrivateKey::to_pkcs8_der(key)
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))?
            .to_bytes();
        let oaep_key = move |der: &[u8]| {
            OaepPrivateDecryptingKey::new(PrivateDecryptingKey::from_pkcs8(der).map_err(rejected)?)
                .map_err(|_| Error::Provider {
                    what: "OaepPrivateDecryptingKey::new",
                })
        };
        let first = oaep_key(&pkcs8)?;
        let oaep = PerThread::new(first, move || oaep_key(&pkcs8).ok());
        let public_key = key.to_public_key();
        let first = parsed_rsa_public(&public_key)?.expect("checked size above");
        let public = PerThread::new(first, move || parsed_rsa_public(&public_key).ok().flatten());
        Ok(Some(RsaKey {
            pair,
            oaep,
            public,
            split: CrtSplit::new(key)?,
        }))
    }
}

impl RsaPrivateOps for RsaKey {
    /// aws-lc's own signature (`RSA_sign`-style: blinded, one thread; on AVX-512 IFMA CPUs
    /// both CRT halves in one fused call).
    fn sign(&self, pss: bool, digest: &Digest) -> Result<Vec<u8>> {
        let pair = self.pair.get();
        let mut signature = vec![0u8; pair.public_modulus_len()];
        let alg: &'static dyn signature::RsaEncoding = if pss {
            &signature::RSA_PSS_SHA256
        } else {
            &signature::RSA_PKCS1_SHA256
        };
        pair.sign_digest(alg, &lc_digest(digest), &mut signature)
            .map_err(|_| Error::Provider {
                what: "RSA signing",
            })?;
        Ok(signature)
    }

    /// PKCS#1 v1.5 through the split private operation, re-checked by aws-lc's verifier.
    /// `None` when this key does not split (unbalanced primes).
    fn sign_pkcs1v15_split(
        &self,
        em: &[u8],
        digest: &Digest,
        parallelism: Parallelism,
    ) -> Option<Result<Vec<u8>>> {
        let split = self.split.as_ref()?;
        Some((|| {
            let signature = split.private_op(em, parallelism)?;
            self.public
                .get()
                .verify_digest_sig(&lc_digest(digest), &signature)
                .map_err(|_| Error::FaultDetected)?;
            Ok(signature)
        })())
    }

    /// RSA-OAEP-SHA256 decryption (aws-lc's constant-time decoding).
    fn decrypt_oaep(&self, ciphertext: &[u8], label: &[u8]) -> Result<Vec<u8>> {
        let oaep = self.oaep.get();
        let mut out = vec![0u8; oaep.min_output_size()];
        let label = (!label.is_empty()).then_some(label);
        let len = oaep
            .decrypt(
                &aws_lc_rs::rsa::OAEP_SHA256_MGF1SHA256,
                ciphertext,
                &mut out,
                label,
            )
            .map_err(|_| Error::Decryption)?
            .len();
        out.truncate(len);
        Ok(out)
    }
}

/// aws-lc's parsed RSA public key for PKCS#1 v1.5 verification, or `None` below 2048 bits.
fn parsed_rsa_public(key: &rsa::RsaPublicKey) -> Result<Option<ParsedPublicKey>> {
    if (key.n().bits() as usize) < MIN_RSA_BITS {
        return Ok(None);
    }
    let der = key
        .to_pkcs1_der()
        .map_err(|e| Error::format(format!("cannot encode the key: {e}")))?;
    ParsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, der.as_bytes())
        .map(Some)
        .map_err(|e| Error::UnsupportedKey {
            reason: format!("aws-lc rejects the key: {e}"),
        })
}

// ---------------------------------------------------------------------------------------------
// The split private operation

/// One prime's half: the prime, its Montgomery parameters and `d mod (prime − 1)`.
struct Half {
    prime: Bignum,
    mont: MontCtx,
    d: Bignum,
}

/// The split RSA private operation on aws-lc's constant-time big numbers: the same blinding
/// and recombination as RustCrypto's [`CrtKey`](crate::provider::public_key::CrtKey) (the
/// docs of `paracrypt_core::pubkey::crt` tell how it works), with `BN_mod_exp_mont_consttime`
/// for the exponentiations, Montgomery reductions and multiplications (as aws-lc's own RSA
/// reduces), and aws-lc's blinded inversion.
struct CrtSplit {
    n: Bignum,
    e: Bignum,
    k: usize,
    p: Half,
    q: Half,
    /// `q⁻¹ mod p`.
    qinv: Bignum,
}

fn bignum(x: &crypto_bigint::BoxedUint) -> Result<Bignum> {
    // Fixed-width bytes (the value's precision, public), so exponents keep a fixed width.
    Ok(Bignum::from_be_bytes(&x.to_be_bytes())?)
}

impl CrtSplit {
    fn new(key: &rsa::RsaPrivateKey) -> Result<Option<Self>> {
        let (Some(dp), Some(dq), Some(qinv)) = (key.dp(), key.dq(), key.qinv()) else {
            return Ok(None);
        };
        let [p, q] = key.primes() else {
            return Ok(None);
        };
        if p.bits() != q.bits() {
            return Ok(None);
        }
        let mut ctx = BnCtx::new()?;
        let mut half = |prime: &crypto_bigint::BoxedUint, d: &crypto_bigint::BoxedUint| {
            let prime = bignum(prime)?;
            let mont = MontCtx::new_consttime(&prime, &mut ctx)?;
            Ok::<_, Error>(Half {
                prime,
                mont,
                d: bignum(d)?,
            })
        };
        let (p, q) = (half(p, dp)?, half(q, dq)?);
        Ok(Some(CrtSplit {
            n: bignum(key.n().as_ref())?,
            e: bignum(key.e())?,
            k: key.size(),
            p,
            q,
            qinv: bignum(&qinv.retrieve())?,
        }))
    }

    /// `em^d mod n` as `k` bytes, blinded, the two halves under `parallelism`.
    fn private_op(&self, em: &[u8], parallelism: Parallelism) -> Result<Vec<u8>> {
        let c = Bignum::from_be_bytes(em)?;
        loop {
            let r = ffi::rand_range(&self.n)?;
            let (mp, mq) =
                parallelism.join(|| self.half(&self.p, &c, &r), || self.half(&self.q, &c, &r));
            // `None` only when r shares a factor with n (probability about 2^-1023).
            if let (Some(mp), Some(mq)) = (mp?, mq?) {
                return self
                    .recombine(&mp, &mq)?
                    .to_be_bytes(self.k)
                    .map_err(Into::into);
            }
        }
    }

    /// `(c · r^e)^d_x · r⁻¹ mod x`; `None` if `r ≡ 0 (mod x)`.
    fn half(&self, half: &Half, c: &Bignum, r: &Bignum) -> Result<Option<Bignum>> {
        let mut ctx = BnCtx::new()?;
        let ctx = &mut ctx;
        let (m, mont) = (&half.prime, &half.mont);
        let c_x = ffi::mod_montgomery(c, mont, ctx)?;
        let r_x = ffi::mod_montgomery(r, mont, ctx)?;
        let Some(r_inv) = ffi::mod_inverse_blinded(&r_x, mont, ctx)? else {
            return Ok(None);
        };
        let r_e = ffi::mod_exp_consttime(&r_x, &self.e, m, mont, ctx)?;
        let blinded = ffi::mod_mul(&c_x, &r_e, mont, ctx)?;
        let y = ffi::mod_exp_consttime(&blinded, &half.d, m, mont, ctx)?;
        Ok(Some(ffi::mod_mul(&y, &r_inv, mont, ctx)?))
    }

    /// Garner: `m = m_q + q · (q⁻¹ · (m_p − m_q) mod p)`.
    fn recombine(&self, mp: &Bignum, mq: &Bignum) -> Result<Bignum> {
        let mut ctx = BnCtx::new()?;
        let mq_p = ffi::mod_montgomery(mq, &self.p.mont, &mut ctx)?;
        let diff = ffi::mod_sub(mp, &mq_p, &self.p.prime)?;
        let h = ffi::mod_mul(&diff, &self.qinv, &self.p.mont, &mut ctx)?;
        Ok(ffi::mul_add(&h, &self.q.prime, mq, &mut ctx)?)
    }
}

// ---------------------------------------------------------------------------------------------
// Prime search

/// One candidate prime of `bits` bits (two top bits set) from aws-lc's `BN_generate_prime_ex`,
/// or `None` once `stop` is set.
pub(super) fn prime(
    bits: u32,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Option<crypto_bigint::BoxedUint>> {
    let Some(p) = ffi::generate_prime(bits, stop)? else {
        return Ok(None);
    };
    let bytes = p.to_be_bytes(bits.div_ceil(8) as usize)?;
    Ok(Some(
        crypto_bigint::BoxedUint::from_be_slice(&bytes, bits).expect("the prime fits its size"),
    ))
}

// ---------------------------------------------------------------------------------------------
// ECDSA P-256

/// aws-lc's P-256 signing key (signatures are randomized, not RFC 6979: both kinds verify
/// everywhere).
struct EcdsaSigner(PerThread<EcdsaKeyPair>);

/// The table's ECDSA signing entry.
pub(super) fn ecdsa_signer(pkcs8_der: &[u8]) -> Result<Arc<dyn EcdsaSignOps>> {
    let parse = |der: &[u8]| {
        EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, der).map_err(|e| {
            Error::UnsupportedKey {
                reason: format!("aws-lc rejects the key: {e}"),
            }
        })
    };
    let first = parse(pkcs8_der)?;
    let der = zeroize::Zeroizing::new(pkcs8_der.to_vec());
    let copies = PerThread::new(first, move || parse(&der).ok());
    Ok(Arc::new(EcdsaSigner(copies)))
}

impl EcdsaSignOps for EcdsaSigner {
    /// The DER signature of `digest`.
    fn sign(&self, digest: &Digest) -> Result<Vec<u8>> {
        self.0
            .get()
            .sign_digest(&lc_digest(digest))
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| Error::Provider {
                what: "ECDSA signing",
            })
    }
}

/// The table's ECDSA verification entry: aws-lc's parsed P-256 public key (SEC1 point).
pub(super) fn ecdsa_verifier(sec1_point: &[u8]) -> Result<Arc<dyn EcdsaVerifyOps>> {
    let parse = |point: &[u8]| {
        ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, point).map_err(|e| {
            Error::UnsupportedKey {
                reason: format!("aws-lc rejects the key: {e}"),
            }
        })
    };
    let first = parse(sec1_point)?;
    let point = sec1_point.to_vec();
    let copies = PerThread::new(first, move || parse(&point).ok());
    Ok(Arc::new(EcdsaPublic(copies)))
}

/// aws-lc's P-256 public key, one copy per pool thread.
struct EcdsaPublic(PerThread<ParsedPublicKey>);

impl EcdsaVerifyOps for EcdsaPublic {
    fn verify(&self, digest: &Digest, signature: &[u8], _in_batch: bool) -> bool {
        self.0
            .get()
            .verify_digest_sig(&lc_digest(digest), signature)
            .is_ok()
    }
}

// ---------------------------------------------------------------------------------------------
// Ed25519

/// aws-lc's Ed25519 key pair.
struct Ed25519Signer(signature::Ed25519KeyPair);

/// The table's Ed25519 signing entry: aws-lc's key pair of the seed.
pub(super) fn ed25519_signer(seed: &[u8; 32]) -> Result<Arc<dyn MessageSignOps>> {
    let pair = signature::Ed25519KeyPair::from_seed_unchecked(seed).map_err(|e| {
        Error::UnsupportedKey {
            reason: format!("aws-lc rejects the key: {e}"),
        }
    })?;
    Ok(Arc::new(Ed25519Signer(pair)))
}

impl MessageSignOps for Ed25519Signer {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        Ok(self.0.sign(message).as_ref().to_vec())
    }
}

/// aws-lc's Ed25519 public key.
struct Ed25519Public(ParsedPublicKey);

/// The table's Ed25519 verification entry.
pub(super) fn ed25519_verifier(public: &[u8; 32]) -> Result<Arc<dyn MessageVerifyOps>> {
    let key =
        ParsedPublicKey::new(&signature::ED25519, public).map_err(|e| Error::UnsupportedKey {
            reason: format!("aws-lc rejects the key: {e}"),
        })?;
    Ok(Arc::new(Ed25519Public(key)))
}

impl MessageVerifyOps for Ed25519Public {
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        self.0.verify_sig(message, signature).is_ok()
    }
}

// ---------------------------------------------------------------------------------------------
// ML-DSA-65

/// aws-lc's ML-DSA-65 key pair.
struct MlDsa65Signer(signature::PqdsaKeyPair);

/// The table's ML-DSA-65 signing entry: aws-lc's key pair of the seed and its public key.
pub(super) fn ml_dsa_65_signer(seed: &[u8; 32]) -> Result<(Arc<dyn MessageSignOps>, Vec<u8>)> {
    let pair =
        signature::PqdsaKeyPair::from_seed(&signature::ML_DSA_65_SIGNING, seed).map_err(|e| {
            Error::UnsupportedKey {
                reason: format!("aws-lc rejects the key: {e}"),
            }
        })?;
    let public = signature::KeyPair::public_key(&pair).as_ref().to_vec();
    Ok((Arc::new(MlDsa65Signer(pair)), public))
}

impl MessageSignOps for MlDsa65Signer {
    /// aws-lc's ML-DSA.Sign: hedged (fresh random bytes in every signature), empty context.
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        let mut out = vec![0u8; signature::ML_DSA_65_SIGNING.signature_len()];
        let len = self
            .0
            .sign(message, &mut out)
            .map_err(|_| Error::Provider {
                what: "ML-DSA-65 signing",
            })?;
        out.truncate(len);
        Ok(out)
    }
}

/// aws-lc's ML-DSA-65 public key.
struct MlDsa65Public(ParsedPublicKey);

/// The table's ML-DSA-65 verification entry: the raw 1952-byte key only (aws-lc would also
/// take an SPKI document).
pub(super) fn ml_dsa_65_verifier(public: &[u8]) -> Result<Arc<dyn MessageVerifyOps>> {
    if public.len() != signature::ML_DSA_65_SIGNING.public_key_len() {
        return Err(Error::UnsupportedKey {
            reason: format!(
                "an ML-DSA-65 public key is 1952 bytes, not {}",
                public.len()
            ),
        });
    }
    let key =
        ParsedPublicKey::new(&signature::ML_DSA_65, public).map_err(|e| Error::UnsupportedKey {
            reason: format!("aws-lc rejects the key: {e}"),
        })?;
    Ok(Arc::new(MlDsa65Public(key)))
}

impl MessageVerifyOps for MlDsa65Public {
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        self.0.verify_sig(message, signature).is_ok()
    }
}
