//! RSA keys: generation, signing (PKCS#1 v1.5 and PSS over SHA-256), verification and
//! RSA-OAEP (SHA-256, MGF1-SHA-256), on top of the `rsa` crate.
//!
//! # Which signing path runs the split private operation
//!
//! The split CRT operation ([`crt`](super::crt)) is raw RSA; it may only be used where the
//! padding stays in well-reviewed crate code:
//!
//! - **PKCS#1 v1.5 signing: split.** The encoded message is fully determined by the digest
//!   (`00 01 FF…FF 00 ‖ DigestInfo ‖ H`, with the `DigestInfo` prefix taken from the `rsa`
//!   crate), has no randomness and no secret, and there is exactly one valid encoding. The
//!   signature from the split operation is then verified by the `rsa` crate's own PKCS#1 v1.5
//!   verifier, which recomputes `s^e mod n` and compares every byte of the encoding, before it
//!   leaves. So an encoding mistake or a fault can only make signing fail, never release a
//!   wrong signature, and the result is byte-identical to the crate's own signature (the tests
//!   check this on many random digests).
//! - **PSS signing: the crate's path.** EMSA-PSS encoding (random salt, MGF1) lives in private
//!   functions of the `rsa` crate; using the split would mean re-implementing it here, and a
//!   verifier cannot tell a good salt from a bad one. The crate's path is blinded, uses the
//!   same constant-time arithmetic and checks its own result.
//! - **OAEP decryption: the crate's path.** OAEP decoding must be constant-time to avoid
//!   Manger-style padding oracles; it too is private to the crate, and re-implementing it is
//!   exactly the risk the Marvin advisory is about (see [`pubkey`](super)).
//!
//! Under the aws-lc provider the same split runs on aws-lc's constant-time big numbers and is
//! re-checked by aws-lc's verifier; PSS signing and OAEP decryption are aws-lc's own, and
//! PKCS#1 v1.5 signing defaults to aws-lc's own path too ([`PrivateOp::preferred`]). PKCS#1
//! v1.5 signatures are byte-identical whichever provider and path made them.
//!
//! In a batch every thread is already busy with a signature of its own, so the second half of
//! each is rarely stolen and runs on the same thread: the split neither helps nor hurts there
//! (measured: a batch of 64 on two threads is 1.95× one thread), and it still helps when there
//! are fewer signatures than threads.

use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::sha2::Sha256;
use rsa::traits::PublicKeyParts;
use rsa::{Oaep, Pkcs1v15Sign, Pss};
use zeroize::Zeroizing;

use super::crt::{CrtKey, Parallelism};
use super::{Digest, Error, Result, Signer, Verifier, keygen, pem};
use crate::provider::{KeyObject, Provider, RsaPrivateOps, RsaPublicOps};

/// The RSA signature scheme; both hash with SHA-256.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RsaScheme {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (`openssl dgst -sha256 -sign`).
    #[default]
    Pkcs1v15,
    /// RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt; verification accepts any salt
    /// length (`openssl dgst -sha256 -sigopt rsa_padding_mode:pss`).
    Pss,
}

impl RsaScheme {
    /// The scheme's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RsaScheme::Pkcs1v15 => "pkcs1v15",
            RsaScheme::Pss => "pss",
        }
    }
}

impl std::fmt::Display for RsaScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RsaScheme {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "pkcs1v15" | "pkcs1" | "pkcs1-v1_5" => Ok(RsaScheme::Pkcs1v15),
            "pss" => Ok(RsaScheme::Pss),
            _ => Err(format!("unknown RSA scheme `{s}` (valid: pkcs1v15, pss)")),
        }
    }
}

/// Where the RSA private operation of a signature runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PrivateOp {
    /// paracrypt's split CRT operation with both halves under `rayon::join` (PKCS#1 v1.5;
    /// PSS falls back to [`PrivateOp::Crate`]).
    #[default]
    Split,
    /// The same operation with both halves on the calling thread.
    Serial,
    /// The provider's own one-thread signing path: the `rsa` crate's, or aws-lc's (which, on
    /// CPUs with AVX-512 IFMA, computes both CRT halves in one fused call).
    Crate,
}

impl PrivateOp {
    /// The faster path for `provider`, by measurement (docs/guide/providers.md): the
    /// [`Split`](Self::Split) on RustCrypto; aws-lc's own path ([`Crate`](Self::Crate)) on
    /// aws-lc, whose one-thread signature (both halves by `BN_mod_exp_mont_consttime_x2`: one
    /// fused call on CPUs with AVX-512 IFMA, see [`has_avx512_ifma`]) beat the two-thread split
    /// built on its big numbers, which pays for a blinding inversion in each half.
    pub fn preferred(provider: Provider) -> Self {
        if provider.rsa_private_by() == Provider::RustCrypto {
            PrivateOp::Split
        } else {
            PrivateOp::Crate
        }
    }
}

/// Whether this CPU has AVX-512 IFMA (with the AVX-512 VL aws-lc's RSAZ code needs): there,
/// aws-lc computes both RSA CRT halves of a 2048/3072/4096-bit key in one fused call, which no
/// two-thread split can beat by much. `paracrypt bench` records it with its figures.
pub fn has_avx512_ifma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512ifma")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// An RSA private key, with the CRT parts the split private operation uses.
///
/// ```
/// use paracrypt_core::pubkey::rsa::{RsaPrivateKey, RsaScheme};
/// use paracrypt_core::pubkey::sha256;
///
/// let key = RsaPrivateKey::generate(2048)?;
/// let digest = sha256(b"hello");
/// let signature = key.sign_digest(RsaScheme::Pkcs1v15, &digest)?;
/// assert!(key.public_key().verify_digest(RsaScheme::Pkcs1v15, &digest, &signature));
/// # Ok::<(), paracrypt_core::pubkey::Error>(())
/// ```
pub struct RsaPrivateKey {
    key: rsa::RsaPrivateKey,
    crt: CrtKey,
    /// The backend's copy of the key, which runs every private operation.
    backend: KeyObject<dyn RsaPrivateOps>,
}

impl std::fmt::Debug for RsaPrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaPrivateKey")
            .field("bits", &self.bits())
            .field("provider", &self.provider())
            .finish_non_exhaustive()
    }
}

impl RsaPrivateKey {
    /// Generates a key of `bits` (2048, 3072 or 4096) with the parallel prime search of
    /// [`keygen`], on every thread of the current Rayon pool.
    ///
    /// # Errors
    ///
    /// [`Error::KeySize`] for another size.
    pub fn generate(bits: usize) -> Result<Self> {
        Self::generate_with(bits, Provider::default())
    }

    /// [`generate`](Self::generate) with the prime search, and then every operation of the
    /// key, on `provider`.
    ///
    /// # Errors
    ///
    /// [`Error::KeySize`] for another size.
    pub fn generate_with(bits: usize, provider: Provider) -> Result<Self> {
        Self::from_rsa_with(keygen::generate_rsa_with(bits, provider)?, provider)
    }

    /// Wraps a key of the `rsa` crate, run by the default provider.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedKey`] for a multi-prime key.
    pub fn from_rsa(key: rsa::RsaPrivateKey) -> Result<Self> {
        Self::from_rsa_with(key, Provider::default())
    }

    fn from_rsa_with(key: rsa::RsaPrivateKey, provider: Provider) -> Result<Self> {
        Ok(RsaPrivateKey {
            crt: CrtKey::new(&key)?,
            backend: provider.rsa_private(&key)?,
            key,
        })
    }

    /// The same key, its operations run by `provider`. aws-lc takes RSA keys of 2048 bits and
    /// more: a smaller key stays on RustCrypto (see [`provider`](Self::provider)).
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedKey`] if aws-lc refuses a key the `rsa` crate accepted (not seen).
    pub fn with_provider(self, provider: Provider) -> Result<Self> {
        let backend = provider.rsa_private(&self.key)?;
        Ok(RsaPrivateKey { backend, ..self })
    }

    /// The provider that runs this key's operations.
    pub fn provider(&self) -> Provider {
        self.backend.by
    }

    /// Reads the key from a key file's bytes (PEM or DER, PKCS#8 or PKCS#1).
    ///
    /// # Errors
    ///
    /// See [`pem::parse`]; [`Error::WrongKeyType`] for any other kind of key.
    pub fn from_key_file(bytes: &[u8]) -> Result<Self> {
        Self::from_rsa(pem::parse(bytes)?.into_rsa_private()?)
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as `openssl genpkey` writes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if encoding fails (it does not for keys paracrypt reads).
    pub fn to_pkcs8_pem(&self) -> Result<Zeroizing<String>> {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))
    }

    /// The public key.
    pub fn public_key(&self) -> RsaPublicKey {
        RsaPublicKey::from_rsa(self.key.to_public_key())
            .with_provider(self.provider())
            .expect("aws-lc took the private key, so it takes its public half")
    }

    /// The modulus size in bits.
    pub fn bits(&self) -> usize {
        self.key.n().bits() as usize
    }

    /// The `rsa` crate's key.
    pub fn as_rsa(&self) -> &rsa::RsaPrivateKey {
        &self.key
    }

    /// The CRT parts for the raw split operation.
    pub fn crt(&self) -> &CrtKey {
        &self.crt
    }

    /// Signs a SHA-256 digest: PKCS#1 v1.5 on the [preferred](PrivateOp::preferred) path
    /// (the split private operation on RustCrypto, aws-lc's own on aws-lc), PSS on the
    /// provider's own path (see the [module docs](self)).
    ///
    /// # Errors
    ///
    /// [`Error::FaultDetected`] if the signature fails its re-check; [`Error::Rsa`] if the
    /// crate fails; [`Error::Provider`] if aws-lc fails.
    pub fn sign_digest(&self, scheme: RsaScheme, digest: &Digest) -> Result<Vec<u8>> {
        self.sign_digest_with(scheme, digest, PrivateOp::preferred(self.provider()))
    }

    /// [`sign_digest`](Self::sign_digest) with a chosen private-operation path: all three give
    /// the same PKCS#1 v1.5 signature (benchmarks compare them).
    ///
    /// # Errors
    ///
    /// As [`sign_digest`](Self::sign_digest).
    pub fn sign_digest_with(
        &self,
        scheme: RsaScheme,
        digest: &Digest,
        op: PrivateOp,
    ) -> Result<Vec<u8>> {
        let backend = &self.backend.key;
        let parallelism = match op {
            PrivateOp::Split => Parallelism::Split,
            PrivateOp::Serial => Parallelism::Serial,
            PrivateOp::Crate => return backend.sign(scheme == RsaScheme::Pss, digest),
        };
        if scheme == RsaScheme::Pkcs1v15
            && let Some(signature) =
                backend.sign_pkcs1v15_split(&self.emsa_pkcs1_v15(digest), digest, parallelism)
        {
            return signature;
        }
        backend.sign(scheme == RsaScheme::Pss, digest)
    }

    /// The PKCS#1 v1.5 encoding of `digest` (with the `rsa` crate's SHA-256 `DigestInfo`).
    fn emsa_pkcs1_v15(&self, digest: &Digest) -> Vec<u8> {
        emsa_pkcs1_v15(
            &Pkcs1v15Sign::new::<Sha256>().prefix,
            digest,
            self.key.size(),
        )
    }

    /// Decrypts RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) on the `rsa` crate's blinded path.
    ///
    /// # Errors
    ///
    /// [`Error::Decryption`], saying nothing more, for any failure.
    pub fn decrypt_oaep(&self, ciphertext: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        self.decrypt_oaep_with_label(ciphertext, &[])
    }

    /// [`decrypt_oaep`](Self::decrypt_oaep) with an OAEP label.
    ///
    /// # Errors
    ///
    /// [`Error::Decryption`], saying nothing more, for any failure.
    pub fn decrypt_oaep_with_label(
        &self,
        ciphertext: &[u8],
        label: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>> {
        self.backend
            .key
            .decrypt_oaep(ciphertext, label)
            .map(Zeroizing::new)
    }

    /// A [`Signer`] for `scheme`, for [`batch`](super::batch).
    pub fn signer(&self, scheme: RsaScheme) -> RsaSigner<'_> {
        RsaSigner { key: self, scheme }
    }
}

/// An RSA private key with a chosen scheme: a [`Signer`].
#[derive(Debug, Clone, Copy)]
pub struct RsaSigner<'a> {
    key: &'a RsaPrivateKey,
    scheme: RsaScheme,
}

impl Signer for RsaSigner<'_> {
    fn sign_digest(&self, digest: &Digest) -> Result<Vec<u8>> {
        self.key.sign_digest(self.scheme, digest)
    }
}

/// An RSA public key.
#[derive(Clone)]
pub struct RsaPublicKey {
    key: rsa::RsaPublicKey,
    /// The backend's copy of the key, which verifies PKCS#1 v1.5 signatures.
    backend: KeyObject<dyn RsaPublicOps>,
}

impl std::fmt::Debug for RsaPublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaPublicKey")
            .field("key", &self.key)
            .field("provider", &self.provider())
            .finish()
    }
}

impl PartialEq for RsaPublicKey {
    /// Keys are equal when their numbers are, whichever provider runs them.
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for RsaPublicKey {}

impl RsaPublicKey {
    /// Wraps a key of the `rsa` crate, run by RustCrypto (see
    /// [`with_provider`](Self::with_provider)).
    pub fn from_rsa(key: rsa::RsaPublicKey) -> Self {
        let backend = Provider::RustCrypto
            .rsa_public(&key)
            .expect("RustCrypto takes every key of the rsa crate");
        RsaPublicKey { key, backend }
    }

    /// The same key, PKCS#1 v1.5 verification run by `provider` (PSS verification, which
    /// accepts any salt length, and OAEP encryption stay on the `rsa` crate). aws-lc takes
    /// keys of 2048 bits and more: a smaller key stays on RustCrypto.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedKey`] if aws-lc refuses a key the `rsa` crate accepted (not seen).
    pub fn with_provider(self, provider: Provider) -> Result<Self> {
        let backend = provider.rsa_public(&self.key)?;
        Ok(RsaPublicKey { backend, ..self })
    }

    /// The provider that verifies PKCS#1 v1.5 signatures with this key.
    pub fn provider(&self) -> Provider {
        self.backend.by
    }

    /// Reads the key from a key file's bytes: a public key (SPKI or PKCS#1), or the public
    /// half of a private key.
    ///
    /// # Errors
    ///
    /// See [`pem::parse`]; [`Error::WrongKeyType`] for any other kind of key.
    pub fn from_key_file(bytes: &[u8]) -> Result<Self> {
        RsaPublicKey::from_rsa(pem::parse(bytes)?.into_rsa_public()?)
            .with_provider(Provider::default())
    }

    /// The key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`), as `openssl pkey -pubout` writes.
    ///
    /// # Errors
    ///
    /// [`Error::KeyFormat`] if encoding fails (it does not for keys paracrypt reads).
    pub fn to_spki_pem(&self) -> Result<String> {
        self.key
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| Error::format(format!("cannot encode the key: {e}")))
    }

    /// The modulus size in bits.
    pub fn bits(&self) -> usize {
        self.key.n().bits() as usize
    }

    /// The `rsa` crate's key.
    pub fn as_rsa(&self) -> &rsa::RsaPublicKey {
        &self.key
    }

    /// Whether `signature` is a valid `scheme` signature of the SHA-256 `digest`.
    ///
    /// PSS signatures of any salt length are accepted, as `openssl dgst -verify` does by
    /// default (`rsa_pss_saltlen:auto`): OpenSSL 3.0 signs with the largest salt, paracrypt
    /// with a 32-byte one. Use [`verify_pss_digest`](Self::verify_pss_digest) to require one.
    pub fn verify_digest(&self, scheme: RsaScheme, digest: &Digest, signature: &[u8]) -> bool {
        match scheme {
            RsaScheme::Pkcs1v15 => self.backend.key.verify_pkcs1v15(digest, signature),
            RsaScheme::Pss => self.verify_pss_digest(digest, signature, None),
        }
    }

    /// Whether `signature` is a valid PSS (SHA-256, MGF1-SHA-256) signature of `digest` with a
    /// salt of `salt_len` bytes, or of any length for `None`.
    pub fn verify_pss_digest(
        &self,
        digest: &Digest,
        signature: &[u8],
        salt_len: Option<usize>,
    ) -> bool {
        let pss = Pss::<Sha256> {
            salt_len,
            ..Pss::new()
        };
        self.key.verify(pss, digest, signature).is_ok()
    }

    /// The longest message RSA-OAEP-SHA256 can encrypt with this key: `k − 2·32 − 2` bytes.
    pub fn max_oaep_len(&self) -> usize {
        self.key.size().saturating_sub(2 * 32 + 2)
    }

    /// Encrypts `message` with RSA-OAEP (SHA-256, MGF1-SHA-256, empty label), as
    /// `openssl pkeyutl -encrypt -pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha256
    /// -pkeyopt rsa_mgf1_md:sha256`.
    ///
    /// # Errors
    ///
    /// [`Error::MessageTooLong`] past [`max_oaep_len`](Self::max_oaep_len).
    pub fn encrypt_oaep(&self, message: &[u8]) -> Result<Vec<u8>> {
        self.encrypt_oaep_with_label(message, &[])
    }

    /// [`encrypt_oaep`](Self::encrypt_oaep) with an OAEP label.
    ///
    /// # Errors
    ///
    /// [`Error::MessageTooLong`] past [`max_oaep_len`](Self::max_oaep_len).
    pub fn encrypt_oaep_with_label(&self, message: &[u8], label: &[u8]) -> Result<Vec<u8>> {
        let max = self.max_oaep_len();
        if message.len() > max {
            return Err(Error::MessageTooLong {
                len: message.len(),
                max,
                bits: self.bits(),
            });
        }
        self.key
            .encrypt(
                &mut rand::rng(),
                Oaep::<Sha256>::new_with_label(label.to_vec()),
                message,
            )
            .map_err(Error::rsa("OAEP encryption"))
    }

    /// A [`Verifier`] for `scheme`, for [`batch`](super::batch).
    pub fn verifier(&self, scheme: RsaScheme) -> RsaVerifier<'_> {
        RsaVerifier { key: self, scheme }
    }
}

/// An RSA public key with a chosen scheme: a [`Verifier`].
#[derive(Debug, Clone, Copy)]
pub struct RsaVerifier<'a> {
    key: &'a RsaPublicKey,
    scheme: RsaScheme,
}

impl Verifier for RsaVerifier<'_> {
    fn verify_digest(&self, digest: &Digest, signature: &[u8]) -> bool {
        self.key.verify_digest(self.scheme, digest, signature)
    }
}

/// EMSA-PKCS1-v1_5 (RFC 8017 §9.2): `00 01 FF…FF 00 ‖ prefix ‖ digest`, `k` bytes.
fn emsa_pkcs1_v15(prefix: &[u8], digest: &[u8], k: usize) -> Vec<u8> {
    let t_len = prefix.len() + digest.len();
    // RFC 8017 requires k ≥ tLen + 11; every key the crate accepts (≥ 1024 bits) has it.
    assert!(
        k >= t_len + 11,
        "RSA modulus too short for PKCS#1 v1.5 with SHA-256"
    );
    let mut em = vec![0xff; k];
    em[0] = 0x00;
    em[1] = 0x01;
    em[k - t_len - 1] = 0x00;
    em[k - t_len..k - digest.len()].copy_from_slice(prefix);
    em[k - digest.len()..].copy_from_slice(digest);
    em
}
