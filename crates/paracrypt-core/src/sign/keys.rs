//! Signing and verifying keys of every scheme, read from the files people have: PKCS#8 and
//! SPKI (PEM or DER, as `openssl genpkey` and `paracrypt keygen` write them), OpenSSH Ed25519
//! keys (`ssh-keygen -t ed25519`, unencrypted) and `ssh-ed25519 AAAA…` lines, and every RSA and
//! P-256 form [`pubkey::pem`](crate::pubkey::pem) reads, and ML-DSA-65 keys in PKCS#8 and SPKI
//! (RFC 9881: the private key as its 32-byte seed, or as seed and expanded key).
//!
//! A signature here always signs a short message (a [statement](super::statement) of about 60
//! bytes): Ed25519 and ML-DSA-65 sign it as it is (PureEdDSA, RFC 8032; FIPS 204's ML-DSA.Sign
//! with the empty context), ECDSA P-256 and RSA sign its
//! SHA-256 digest (so `openssl dgst -sha256 -verify` checks them), an ECDSA signature is stored
//! as `r ‖ s` (64 bytes, IEEE P1363) so that every signature of a scheme has one length, with
//! a low `s` (written so, and required when read: one form per signature).

use std::fmt;
use std::path::Path;

use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use p256::ecdsa::Signature as EcdsaSignature;
use rsa::pkcs1::{DecodeRsaPublicKey, EncodeRsaPublicKey};
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::provider::{KeyObject, MessageSignOps, MessageVerifyOps, Provider};
use crate::pubkey::ecdsa::{EcdsaPrivateKey, EcdsaPublicKey};
use crate::pubkey::pem::{self, KeyFile};
use crate::pubkey::rsa::{RsaPrivateKey, RsaPublicKey, RsaScheme};
use crate::pubkey::sha256;

/// A signature scheme, with the id a signature file names it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// Ed25519 (RFC 8032, PureEdDSA): deterministic, 64-byte signatures. The default.
    Ed25519,
    /// ECDSA over P-256 with SHA-256: randomised (aws-lc, OpenSSL) or RFC 6979 (RustCrypto),
    /// 64-byte `r ‖ s` signatures.
    EcdsaP256,
    /// RSASSA-PKCS1-v1_5 with SHA-256: deterministic, as long as the modulus.
    RsaPkcs1v15,
    /// RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt: randomised.
    RsaPss,
    /// ML-DSA-65 (FIPS 204, post-quantum): hedged (randomised), 3309-byte signatures, 1952-byte
    /// public keys.
    MlDsa65,
}

impl Scheme {
    /// Every scheme, in id order.
    pub const ALL: &'static [Scheme] = &[
        Scheme::Ed25519,
        Scheme::EcdsaP256,
        Scheme::RsaPkcs1v15,
        Scheme::RsaPss,
        Scheme::MlDsa65,
    ];

    /// The scheme's id in signature files and signed containers.
    pub fn id(self) -> u8 {
        match self {
            Scheme::Ed25519 => 1,
            Scheme::EcdsaP256 => 2,
            Scheme::RsaPkcs1v15 => 3,
            Scheme::RsaPss => 4,
            Scheme::MlDsa65 => 5,
        }
    }

    /// The scheme with id `id`.
    pub fn from_id(id: u8) -> Option<Self> {
        Scheme::ALL.iter().copied().find(|s| s.id() == id)
    }

    /// The scheme's name: `ed25519`, `ecdsa-p256`, `rsa-pkcs1v15`, `rsa-pss`, `ml-dsa-65`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Ed25519 => "ed25519",
            Scheme::EcdsaP256 => "ecdsa-p256",
            Scheme::RsaPkcs1v15 => "rsa-pkcs1v15",
            Scheme::RsaPss => "rsa-pss",
            Scheme::MlDsa65 => "ml-dsa-65",
        }
    }

    /// Whether the scheme signs the same statement with the same key into the same bytes
    /// (whichever provider and however many threads or ranks).
    pub fn is_deterministic(self) -> bool {
        matches!(self, Scheme::Ed25519 | Scheme::RsaPkcs1v15)
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The largest public key field a reader takes (a 16384-bit RSA key's PKCS#1 DER is about
/// 2 KB; an ML-DSA-87 key 2.6 KB).
pub const MAX_PUBLIC_KEY: usize = 4096;
/// The largest key file read (a 4096-bit RSA private key in PEM is about 3.3 KB; an
/// `authorized_keys` or minisign file, a line or two).
pub const MAX_KEY_FILE: u64 = 1 << 20;
/// The largest signature a reader takes (an RSA-16384 signature is 2 KB; ML-DSA-87's 4.6 KB).
pub const MAX_SIGNATURE: usize = 8192;
/// The length of an ML-DSA-65 signature (FIPS 204, Table 2).
pub const ML_DSA_65_SIGNATURE_LEN: usize = 3309;

/// A private key that signs.
#[derive(Clone)]
pub struct SigningKey {
    inner: Private,
}

#[derive(Clone)]
enum Private {
    Ed25519(Ed25519Private),
    Ecdsa(EcdsaPrivateKey),
    Rsa(std::sync::Arc<RsaPrivateKey>, RsaScheme),
    MlDsa65(MlDsaPrivate),
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("scheme", &self.scheme())
            .finish_non_exhaustive()
    }
}

/// A key file's problem, as a usage error naming nothing but the problem (the caller adds the
/// file's name).
fn key_error(error: crate::pubkey::Error) -> Error {
    Error::SignKey(error.to_string())
}

/// A PEM block's label, when `bytes` is PEM text.
fn pem_label(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    let start = text.find("-----BEGIN ")? + "-----BEGIN ".len();
    let end = text[start..].find("-----")?;
    Some(&text[start..start + end])
}

impl SigningKey {
    /// A new random Ed25519 key.
    pub fn generate_ed25519() -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rand::Rng::fill_bytes(&mut rand::rng(), &mut seed[..]);
        Self::ed25519_from_seed(&seed)
    }

    /// The Ed25519 key of the 32-byte seed `seed` (RFC 8032's private key).
    pub fn ed25519_from_seed(seed: &[u8; 32]) -> Self {
        SigningKey {
            inner: Private::Ed25519(Ed25519Private::new(seed, Provider::default())),
        }
    }

    /// A new random ML-DSA-65 key.
    pub fn generate_ml_dsa_65() -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rand::Rng::fill_bytes(&mut rand::rng(), &mut seed[..]);
        Self::ml_dsa_65_from_seed(&seed)
    }

    /// The ML-DSA-65 key of the 32-byte seed `seed` (FIPS 204's ξ, as RFC 9881's key files
    /// keep it).
    pub fn ml_dsa_65_from_seed(seed: &[u8; 32]) -> Self {
        SigningKey {
            inner: Private::MlDsa65(MlDsaPrivate::new(seed, Provider::default())),
        }
    }

    /// An ECDSA P-256 key.
    pub fn ecdsa(key: EcdsaPrivateKey) -> Self {
        SigningKey {
            inner: Private::Ecdsa(key),
        }
    }

    /// An RSA key that signs with `scheme`.
    pub fn rsa(key: RsaPrivateKey, scheme: RsaScheme) -> Self {
        SigningKey {
            inner: Private::Rsa(std::sync::Arc::new(key), scheme),
        }
    }

    /// Reads a private key from a key file's bytes: Ed25519 (PKCS#8, or an unencrypted
    /// OpenSSH private key), ML-DSA-65 (PKCS#8 with the seed), ECDSA P-256 or RSA (every form
    /// `openssl` writes). An RSA key signs with `rsa_scheme`.
    ///
    /// # Errors
    ///
    /// [`Error::SignKey`] for anything that is not such a key, saying what it is.
    pub fn from_key_file(bytes: &[u8], rsa_scheme: RsaScheme) -> Result<Self> {
        if pem_label(bytes) == Some("OPENSSH PRIVATE KEY") {
            return Self::from_openssh(bytes);
        }
        if let Some(key) = ed25519_pkcs8(bytes) {
            return Ok(Self::ed25519_from_seed(&Zeroizing::new(key.to_bytes())));
        }
        if let Some(seed) = ml_dsa_65_pkcs8(bytes) {
            return Ok(Self::ml_dsa_65_from_seed(&*seed?));
        }
        if ml_dsa_65_spki(bytes).is_some() {
            return Err(Error::SignKey(
                "an ML-DSA-65 public key (signing needs the private key)".into(),
            ));
        }
        if ssh_line(bytes).is_some() || ed25519_spki(bytes).is_some() {
            return Err(Error::SignKey(
                "an Ed25519 public key (signing needs the private key)".into(),
            ));
        }
        match pem::parse(bytes).map_err(key_error)? {
            KeyFile::EcPrivate(key) => {
                let scalar: Zeroizing<[u8; 32]> = Zeroizing::new(key.to_bytes().into());
                Ok(Self::ecdsa(
                    EcdsaPrivateKey::from_scalar_bytes(&scalar).map_err(key_error)?,
                ))
            }
            KeyFile::RsaPrivate(key) => Ok(Self::rsa(
                RsaPrivateKey::from_rsa(key).map_err(key_error)?,
                rsa_scheme,
            )),
            other => Err(Error::SignKey(format!(
                "{} is not a private key (signing needs the private key)",
                other.describe()
            ))),
        }
    }

    fn from_openssh(bytes: &[u8]) -> Result<Self> {
        let key = ssh_key::PrivateKey::from_openssh(bytes)
            .map_err(|e| Error::SignKey(format!("not an OpenSSH private key: {e}")))?;
        if key.is_encrypted() {
            return Err(Error::SignKey(
                "the OpenSSH private key is encrypted; paracrypt reads unencrypted keys \
                 (remove the passphrase with `ssh-keygen -p -f KEY`)"
                    .into(),
            ));
        }
        match key.key_data() {
            ssh_key::private::KeypairData::Ed25519(pair) => Ok(Self::ed25519_from_seed(
                &Zeroizing::new(pair.private.to_bytes()),
            )),
            other => Err(Error::SignKey(format!(
                "an OpenSSH {} key; paracrypt signs with OpenSSH Ed25519 keys (and RSA or \
                 P-256 keys in PEM)",
                other.algorithm().map(|a| a.to_string()).unwrap_or_default()
            ))),
        }
    }

    /// The scheme this key signs with.
    pub fn scheme(&self) -> Scheme {
        match &self.inner {
            Private::Ed25519(_) => Scheme::Ed25519,
            Private::Ecdsa(_) => Scheme::EcdsaP256,
            Private::Rsa(_, RsaScheme::Pkcs1v15) => Scheme::RsaPkcs1v15,
            Private::Rsa(_, RsaScheme::Pss) => Scheme::RsaPss,
            Private::MlDsa65(_) => Scheme::MlDsa65,
        }
    }

    /// The same key, its operations run by `provider` (every scheme is in the provider
    /// tables).
    ///
    /// # Errors
    ///
    /// [`Error::SignKey`] if the provider refuses the key (not seen).
    pub fn with_provider(self, provider: Provider) -> Result<Self> {
        let inner = match self.inner {
            Private::Ecdsa(key) => Private::Ecdsa(key.with_provider(provider)),
            Private::Rsa(key, scheme) => {
                let key = match std::sync::Arc::try_unwrap(key) {
                    Ok(key) => key,
                    Err(shared) => {
                        RsaPrivateKey::from_rsa(shared.as_rsa().clone()).map_err(key_error)?
                    }
                };
                let key = key.with_provider(provider).map_err(key_error)?;
                Private::Rsa(std::sync::Arc::new(key), scheme)
            }
            Private::Ed25519(key) => Private::Ed25519(Ed25519Private::new(&key.seed, provider)),
            Private::MlDsa65(key) => Private::MlDsa65(MlDsaPrivate::new(&key.seed, provider)),
        };
        Ok(SigningKey { inner })
    }

    /// The public key.
    pub fn verifying_key(&self) -> VerifyingKey {
        let inner = match &self.inner {
            Private::Ed25519(key) => Public::Ed25519(
                Ed25519Public::new(&key.public, key.backend.by)
                    .expect("a key's own public key is a point"),
            ),
            Private::Ecdsa(key) => Public::Ecdsa(key.public_key()),
            Private::Rsa(key, scheme) => Public::Rsa(key.public_key(), *scheme),
            Private::MlDsa65(key) => Public::MlDsa65(
                MlDsaPublic::new(&key.public, key.backend.by)
                    .expect("a key's own public key is 1952 bytes"),
            ),
        };
        VerifyingKey { inner }
    }

    /// Signs `message` (a statement): Ed25519 and ML-DSA-65 over the message, ECDSA and RSA
    /// over its SHA-256 digest.
    ///
    /// # Errors
    ///
    /// The provider's failure (RSA's re-check, say).
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        match &self.inner {
            Private::Ed25519(Ed25519Private { backend, .. })
            | Private::MlDsa65(MlDsaPrivate { backend, .. }) => backend
                .key
                .sign(message)
                .map_err(|e| Error::SignKey(e.to_string())),
            Private::Ecdsa(key) => {
                let der = key.sign_digest(&sha256(message));
                let signature = EcdsaSignature::from_der(&der).map_err(|_| Error::Provider {
                    what: "ECDSA signing gave no DER signature",
                })?;
                Ok(signature.to_bytes().to_vec())
            }
            Private::Rsa(key, scheme) => key
                .sign_digest(*scheme, &sha256(message))
                .map_err(|e| Error::SignKey(e.to_string())),
        }
    }

    /// The private key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as `openssl genpkey`
    /// writes it.
    ///
    /// # Errors
    ///
    /// [`Error::SignKey`] if encoding fails (it does not).
    pub fn to_pkcs8_pem(&self) -> Result<Zeroizing<String>> {
        match &self.inner {
            // PKCS#8 v1 (without the optional public key), as `openssl genpkey` writes it:
            // OpenSSL 3.0 does not read the v2 form.
            Private::Ed25519(key) => ed25519_dalek::pkcs8::KeypairBytes {
                secret_key: *key.seed,
                public_key: None,
            }
            .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .map_err(|e| Error::SignKey(format!("cannot encode the key: {e}"))),
            Private::Ecdsa(key) => key.to_pkcs8_pem().map_err(key_error),
            Private::Rsa(key, _) => key.to_pkcs8_pem().map_err(key_error),
            // RFC 9881's seed form (`[0] IMPLICIT OCTET STRING`), written by ml-dsa.
            Private::MlDsa65(key) => {
                use pkcs8::EncodePrivateKey;
                ml_dsa::SigningKey::<ml_dsa::MlDsa65>::from_seed(&ml_dsa::Seed::from(*key.seed))
                    .to_pkcs8_pem(pkcs8::LineEnding::LF)
                    .map_err(|e| Error::SignKey(format!("cannot encode the key: {e}")))
            }
        }
    }
}

/// An ML-DSA-65 private key: its seed and public key, and the provider's key object that
/// signs.
#[derive(Clone)]
struct MlDsaPrivate {
    seed: Zeroizing<[u8; 32]>,
    public: std::sync::Arc<[u8]>,
    backend: KeyObject<dyn MessageSignOps>,
}

impl MlDsaPrivate {
    fn new(seed: &[u8; 32], provider: Provider) -> Self {
        let (backend, public) = provider
            .ml_dsa_65_signer(seed)
            .expect("RustCrypto takes every seed");
        MlDsaPrivate {
            seed: Zeroizing::new(*seed),
            public: public.into(),
            backend,
        }
    }
}

/// An ML-DSA-65 public key and the provider's key object that verifies.
#[derive(Clone)]
struct MlDsaPublic {
    public: std::sync::Arc<[u8]>,
    backend: KeyObject<dyn MessageVerifyOps>,
}

impl MlDsaPublic {
    fn new(public: &[u8], provider: Provider) -> Result<Self> {
        Ok(MlDsaPublic {
            public: public.into(),
            backend: provider
                .ml_dsa_65_verifier(public)
                .map_err(|e| Error::SignKey(e.to_string()))?,
        })
    }
}

/// ML-DSA-65's object identifier (NIST CSOR, `id-ml-dsa-65`).
const ML_DSA_65_OID: pkcs8::ObjectIdentifier =
    pkcs8::ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.3.18");

/// The DER of a key file: the PEM block labelled `label` decoded, or the bytes as they are
/// when they are no PEM text.
fn der_of(bytes: &[u8], label: &str) -> Option<Zeroizing<Vec<u8>>> {
    match std::str::from_utf8(bytes) {
        Ok(text) if text.contains("-----BEGIN ") => {
            let start = text.find("-----BEGIN ")?;
            let (found, der) = pkcs8::der::pem::decode_vec(text[start..].trim().as_bytes()).ok()?;
            (found == label).then_some(Zeroizing::new(der))
        }
        _ => Some(Zeroizing::new(bytes.to_vec())),
    }
}

/// The seed of an ML-DSA-65 PKCS#8 private key (PEM or DER): `None` when the file is no
/// ML-DSA-65 key, an error when it is one that cannot be used.
fn ml_dsa_65_pkcs8(bytes: &[u8]) -> Option<Result<Zeroizing<[u8; 32]>>> {
    let der = der_of(bytes, "PRIVATE KEY")?;
    let info = pkcs8::PrivateKeyInfoRef::try_from(der.as_slice()).ok()?;
    (info.algorithm.oid == ML_DSA_65_OID).then(|| ml_dsa_65_seed(info.private_key.as_bytes()))
}

/// The seed of RFC 9881's `ML-DSA-65-PrivateKey`: the `seed` form (`[0] IMPLICIT OCTET
/// STRING (SIZE (32))`), or the `both` form (`SEQUENCE { seed, expandedKey }`) whose expanded
/// key must be the seed's; the `expandedKey` form alone has no seed and is refused.
fn ml_dsa_65_seed(private: &[u8]) -> Result<Zeroizing<[u8; 32]>> {
    /// `SEQUENCE` of 4070 bytes, then `OCTET STRING` of 32.
    const BOTH: [u8; 6] = [0x30, 0x82, 0x0f, 0xe6, 0x04, 0x20];
    /// `OCTET STRING` of 4032 bytes: the expanded key.
    const EXPANDED: [u8; 4] = [0x04, 0x82, 0x0f, 0xc0];
    let mut seed = Zeroizing::new([0u8; 32]);
    if private.len() == 34 && private[..2] == [0x80, 0x20] {
        seed.copy_from_slice(&private[2..]);
        return Ok(seed);
    }
    if private.len() == BOTH.len() + 32 + EXPANDED.len() + 4032
        && private[..6] == BOTH
        && private[38..42] == EXPANDED
    {
        seed.copy_from_slice(&private[6..38]);
        let key = ml_dsa::SigningKey::<ml_dsa::MlDsa65>::from_seed(&ml_dsa::Seed::from(*seed));
        #[allow(deprecated)] // the expanded form is what is compared, not kept
        let expanded = Zeroizing::new(key.expanded_key().to_expanded());
        if expanded.as_slice() != &private[42..] {
            return Err(Error::SignKey(
                "the ML-DSA-65 private key's seed and expanded key disagree".into(),
            ));
        }
        return Ok(seed);
    }
    if private.starts_with(&EXPANDED) {
        return Err(Error::SignKey(
            "an ML-DSA-65 private key without its seed (the expanded form alone); paracrypt \
             reads keys that keep their seed (RFC 9881's seed or both forms, as `paracrypt \
             keygen --kind ml-dsa-65` and `openssl genpkey -algorithm ML-DSA-65` write them)"
                .into(),
        ));
    }
    Err(Error::SignKey(
        "an ML-DSA-65 private key in no form of RFC 9881".into(),
    ))
}

/// The raw public key of an ML-DSA-65 SPKI file (PEM or DER), if it is one.
fn ml_dsa_65_spki(bytes: &[u8]) -> Option<Vec<u8>> {
    let der = der_of(bytes, "PUBLIC KEY")?;
    let info = pkcs8::spki::SubjectPublicKeyInfoRef::try_from(der.as_slice()).ok()?;
    if info.algorithm.oid != ML_DSA_65_OID {
        return None;
    }
    info.subject_public_key.as_bytes().map(<[u8]>::to_vec)
}

/// An Ed25519 private key: its seed and public key, and the provider's key object that signs.
#[derive(Clone)]
struct Ed25519Private {
    seed: Zeroizing<[u8; 32]>,
    public: [u8; 32],
    backend: KeyObject<dyn MessageSignOps>,
}

impl Ed25519Private {
    fn new(seed: &[u8; 32], provider: Provider) -> Self {
        let public = ed25519_dalek::SigningKey::from_bytes(seed)
            .verifying_key()
            .to_bytes();
        Ed25519Private {
            seed: Zeroizing::new(*seed),
            public,
            backend: provider
                .ed25519_signer(seed)
                .expect("RustCrypto takes every seed"),
        }
    }
}

/// An Ed25519 public key and the provider's key object that verifies.
#[derive(Clone)]
struct Ed25519Public {
    public: [u8; 32],
    backend: KeyObject<dyn MessageVerifyOps>,
}

impl Ed25519Public {
    fn new(public: &[u8; 32], provider: Provider) -> Result<Self> {
        Ok(Ed25519Public {
            public: *public,
            backend: provider
                .ed25519_verifier(public)
                .map_err(|e| Error::SignKey(e.to_string()))?,
        })
    }
}

/// The Ed25519 key of a PKCS#8 file (PEM or DER), if it is one.
fn ed25519_pkcs8(bytes: &[u8]) -> Option<ed25519_dalek::SigningKey> {
    match std::str::from_utf8(bytes) {
        Ok(text) if text.contains("-----BEGIN PRIVATE KEY-----") => {
            ed25519_dalek::SigningKey::from_pkcs8_pem(text).ok()
        }
        _ => ed25519_dalek::SigningKey::from_pkcs8_der(bytes).ok(),
    }
}

/// The Ed25519 key of an SPKI file (PEM or DER), if it is one.
fn ed25519_spki(bytes: &[u8]) -> Option<ed25519_dalek::VerifyingKey> {
    match std::str::from_utf8(bytes) {
        Ok(text) if text.contains("-----BEGIN PUBLIC KEY-----") => {
            ed25519_dalek::VerifyingKey::from_public_key_pem(text).ok()
        }
        _ => ed25519_dalek::VerifyingKey::from_public_key_der(bytes).ok(),
    }
}

/// A public key that verifies.
#[derive(Clone)]
pub struct VerifyingKey {
    inner: Public,
}

#[derive(Clone)]
enum Public {
    Ed25519(Ed25519Public),
    Ecdsa(EcdsaPublicKey),
    Rsa(RsaPublicKey, RsaScheme),
    MlDsa65(MlDsaPublic),
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.fingerprint())
    }
}

impl PartialEq for VerifyingKey {
    /// The same scheme and the same key.
    fn eq(&self, other: &Self) -> bool {
        self.scheme() == other.scheme() && self.to_field() == other.to_field()
    }
}

impl Eq for VerifyingKey {}

impl VerifyingKey {
    /// Reads a public key from a file's bytes: Ed25519 (SPKI PEM or DER, an `ssh-ed25519
    /// AAAA…` line, an `authorized_keys`-style file's first line, a minisign public key),
    /// ML-DSA-65 (SPKI), ECDSA P-256 or RSA (every form `openssl` writes); a private key gives
    /// its public half. An RSA key verifies `rsa_scheme` signatures.
    ///
    /// # Errors
    ///
    /// [`Error::SignKey`] for anything that is not such a key.
    pub fn from_key_file(bytes: &[u8], rsa_scheme: RsaScheme) -> Result<Self> {
        if let Some(line) = ssh_line(bytes) {
            let key = ssh_key::PublicKey::from_openssh(line)
                .map_err(|e| Error::SignKey(format!("not an OpenSSH public key: {e}")))?;
            return match key.key_data() {
                ssh_key::public::KeyData::Ed25519(public) => {
                    Self::from_field(Scheme::Ed25519, &public.0)
                        .map_err(|_| Error::SignKey("the Ed25519 public key is not a point".into()))
                }
                other => Err(Error::SignKey(format!(
                    "an OpenSSH {} key; paracrypt verifies OpenSSH Ed25519 keys (and RSA or \
                     P-256 keys in PEM)",
                    other.algorithm()
                ))),
            };
        }
        if let Some(public) = super::minisign::parse_public_key(bytes) {
            return Self::from_field(Scheme::Ed25519, &public)
                .map_err(|_| Error::SignKey("the minisign public key is not a point".into()));
        }
        if pem_label(bytes) == Some("OPENSSH PRIVATE KEY")
            || ed25519_pkcs8(bytes).is_some()
            || ml_dsa_65_pkcs8(bytes).is_some()
        {
            return Ok(SigningKey::from_key_file(bytes, rsa_scheme)?.verifying_key());
        }
        if let Some(public) = ml_dsa_65_spki(bytes) {
            return Self::from_field(Scheme::MlDsa65, &public)
                .map_err(|_| Error::SignKey("not an ML-DSA-65 public key".into()));
        }
        if let Some(key) = ed25519_spki(bytes) {
            return Self::from_field(Scheme::Ed25519, key.as_bytes())
                .map_err(|e| Error::SignKey(e.to_string()));
        }
        match pem::parse(bytes).map_err(key_error)? {
            KeyFile::EcPrivate(key) => Ok(VerifyingKey {
                inner: Public::Ecdsa(EcdsaPublicKey::from_verifying_key(
                    p256::ecdsa::VerifyingKey::from(key.public_key()),
                )),
            }),
            KeyFile::EcPublic(key) => Ok(VerifyingKey {
                inner: Public::Ecdsa(EcdsaPublicKey::from_verifying_key(
                    p256::ecdsa::VerifyingKey::from(key),
                )),
            }),
            KeyFile::RsaPrivate(key) => Ok(VerifyingKey {
                inner: Public::Rsa(
                    RsaPublicKey::from_rsa(key.to_public_key())
                        .with_provider(Provider::default())
                        .map_err(key_error)?,
                    rsa_scheme,
                ),
            }),
            KeyFile::RsaPublic(key) => Ok(VerifyingKey {
                inner: Public::Rsa(
                    RsaPublicKey::from_rsa(key)
                        .with_provider(Provider::default())
                        .map_err(key_error)?,
                    rsa_scheme,
                ),
            }),
        }
    }

    /// The key of `scheme` whose public key field (as a signature file stores it) is `field`:
    /// Ed25519's 32 bytes, P-256's uncompressed point (65 bytes), RSA's PKCS#1 DER, ML-DSA-65's
    /// 1952 bytes.
    ///
    /// # Errors
    ///
    /// [`Error::SignatureFile`] when the bytes are not such a key.
    pub fn from_field(scheme: Scheme, field: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::SignatureFile(format!("the public key is not {what}"));
        let inner = match scheme {
            Scheme::Ed25519 => {
                let bytes: [u8; 32] = field.try_into().map_err(|_| bad("an Ed25519 key"))?;
                Public::Ed25519(
                    Ed25519Public::new(&bytes, Provider::default())
                        .map_err(|_| bad("an Ed25519 key"))?,
                )
            }
            Scheme::EcdsaP256 => {
                let point = p256::ecdsa::VerifyingKey::from_sec1_bytes(field)
                    .map_err(|_| bad("a P-256 point"))?;
                Public::Ecdsa(EcdsaPublicKey::from_verifying_key(point))
            }
            Scheme::RsaPkcs1v15 | Scheme::RsaPss => {
                let key = rsa::RsaPublicKey::from_pkcs1_der(field)
                    .map_err(|_| bad("an RSA key (PKCS#1 DER)"))?;
                let scheme = if scheme == Scheme::RsaPss {
                    RsaScheme::Pss
                } else {
                    RsaScheme::Pkcs1v15
                };
                Public::Rsa(
                    RsaPublicKey::from_rsa(key)
                        .with_provider(Provider::default())
                        .map_err(|_| bad("an RSA key this build takes"))?,
                    scheme,
                )
            }
            Scheme::MlDsa65 => Public::MlDsa65(
                MlDsaPublic::new(field, Provider::default())
                    .map_err(|_| bad("an ML-DSA-65 key (1952 bytes)"))?,
            ),
        };
        Ok(VerifyingKey { inner })
    }

    /// The same key, verifying `scheme` signatures: an RSA key verifies PKCS#1 v1.5 or PSS as
    /// the signature says (any other scheme must be the key's own).
    pub fn for_scheme(&self, scheme: Scheme) -> Option<Self> {
        match (&self.inner, scheme) {
            (Public::Rsa(key, _), Scheme::RsaPkcs1v15) => Some(VerifyingKey {
                inner: Public::Rsa(key.clone(), RsaScheme::Pkcs1v15),
            }),
            (Public::Rsa(key, _), Scheme::RsaPss) => Some(VerifyingKey {
                inner: Public::Rsa(key.clone(), RsaScheme::Pss),
            }),
            _ if scheme == self.scheme() => Some(self.clone()),
            _ => None,
        }
    }

    /// The same key, verified by `provider` where the scheme is in the provider tables.
    ///
    /// # Errors
    ///
    /// [`Error::SignKey`] if the provider refuses the key (not seen).
    pub fn with_provider(self, provider: Provider) -> Result<Self> {
        let inner = match self.inner {
            Public::Ecdsa(key) => Public::Ecdsa(key.with_provider(provider)),
            Public::Rsa(key, scheme) => {
                Public::Rsa(key.with_provider(provider).map_err(key_error)?, scheme)
            }
            Public::Ed25519(key) => Public::Ed25519(
                Ed25519Public::new(&key.public, provider)
                    .map_err(|e| Error::SignKey(e.to_string()))?,
            ),
            Public::MlDsa65(key) => Public::MlDsa65(MlDsaPublic::new(&key.public, provider)?),
        };
        Ok(VerifyingKey { inner })
    }

    /// The scheme this key verifies.
    pub fn scheme(&self) -> Scheme {
        match &self.inner {
            Public::Ed25519(_) => Scheme::Ed25519,
            Public::Ecdsa(_) => Scheme::EcdsaP256,
            Public::Rsa(_, RsaScheme::Pkcs1v15) => Scheme::RsaPkcs1v15,
            Public::Rsa(_, RsaScheme::Pss) => Scheme::RsaPss,
            Public::MlDsa65(_) => Scheme::MlDsa65,
        }
    }

    /// The public key field a signature file stores: Ed25519's 32 bytes, P-256's
    /// uncompressed point (65 bytes), RSA's PKCS#1 DER, ML-DSA-65's 1952 bytes.
    pub fn to_field(&self) -> Vec<u8> {
        match &self.inner {
            Public::Ed25519(key) => key.public.to_vec(),
            Public::Ecdsa(key) => key.as_p256().to_sec1_point(false).as_bytes().to_vec(),
            Public::Rsa(key, _) => key
                .as_rsa()
                .to_pkcs1_der()
                .map(|der| der.as_bytes().to_vec())
                .unwrap_or_default(),
            Public::MlDsa65(key) => key.public.to_vec(),
        }
    }

    /// The key as people compare it: `SCHEME SHA256:…` (the unpadded base64 of the SHA-256 of
    /// the public key field; for Ed25519, of the OpenSSH wire encoding, as `ssh-keygen -l`
    /// shows it).
    pub fn fingerprint(&self) -> String {
        let hashed = match &self.inner {
            Public::Ed25519(key) => sha256(&ssh_wire_ed25519(&key.public)),
            _ => sha256(&self.to_field()),
        };
        format!(
            "{} SHA256:{}",
            self.scheme(),
            BASE64_STANDARD_NO_PAD.encode(hashed)
        )
    }

    /// The key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`), as `openssl pkey -pubout` writes.
    ///
    /// # Errors
    ///
    /// [`Error::SignKey`] if encoding fails (it does not).
    pub fn to_spki_pem(&self) -> Result<String> {
        match &self.inner {
            Public::Ed25519(key) => ed25519_dalek::VerifyingKey::from_bytes(&key.public)
                .map_err(|e| Error::SignKey(format!("cannot encode the key: {e}")))?
                .to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
                .map_err(|e| Error::SignKey(format!("cannot encode the key: {e}"))),
            Public::Ecdsa(key) => key.to_spki_pem().map_err(key_error),
            Public::Rsa(key, _) => key.to_spki_pem().map_err(key_error),
            Public::MlDsa65(key) => {
                use pkcs8::EncodePublicKey;
                let encoded =
                    ml_dsa::EncodedVerifyingKey::<ml_dsa::MlDsa65>::try_from(&key.public[..])
                        .map_err(|_| Error::SignKey("an ML-DSA-65 key of another length".into()))?;
                ml_dsa::VerifyingKey::<ml_dsa::MlDsa65>::decode(&encoded)
                    .to_public_key_pem(pkcs8::LineEnding::LF)
                    .map_err(|e| Error::SignKey(format!("cannot encode the key: {e}")))
            }
        }
    }

    /// An Ed25519 key as an OpenSSH line (`ssh-ed25519 AAAA…`), or `None` for another scheme.
    pub fn to_openssh(&self) -> Option<String> {
        match &self.inner {
            Public::Ed25519(key) => Some(format!(
                "ssh-ed25519 {}",
                base64::prelude::BASE64_STANDARD.encode(ssh_wire_ed25519(&key.public))
            )),
            _ => None,
        }
    }

    /// The length of every signature this key makes: 64 bytes for Ed25519 and ECDSA P-256
    /// (`r ‖ s`), the modulus's for RSA, 3309 for ML-DSA-65. A signed container's chunks carry
    /// one each.
    pub fn signature_len(&self) -> usize {
        match &self.inner {
            Public::Ed25519(_) | Public::Ecdsa(_) => 64,
            Public::Rsa(key, _) => key.bits().div_ceil(8),
            Public::MlDsa65(_) => ML_DSA_65_SIGNATURE_LEN,
        }
    }

    /// The raw Ed25519 public key, or `None` for another scheme.
    pub fn ed25519_bytes(&self) -> Option<[u8; 32]> {
        match &self.inner {
            Public::Ed25519(key) => Some(key.public),
            _ => None,
        }
    }

    /// Whether `signature` is this key's signature of `message`. An ECDSA signature must have
    /// a low `s` (at most half the group order), as every signature paracrypt makes has: its
    /// other form `(r, n − s)` is refused.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match &self.inner {
            Public::Ed25519(Ed25519Public { backend, .. })
            | Public::MlDsa65(MlDsaPublic { backend, .. }) => {
                backend.key.verify(message, signature)
            }
            Public::Ecdsa(key) => {
                let Ok(signature) = EcdsaSignature::from_slice(signature) else {
                    return false;
                };
                // Strict: the low `s` only, the one form paracrypt writes. `(r, n − s)`
                // verifies too, so accepting it would let anyone change a signed file's bytes
                // (a chunk's signature) and keep it valid.
                if signature.normalize_s() != signature {
                    return false;
                }
                key.verify_digest(&sha256(message), signature.to_der().as_bytes())
            }
            Public::Rsa(key, scheme) => key.verify_digest(*scheme, &sha256(message), signature),
        }
    }
}

/// `string("ssh-ed25519") ‖ string(key)`: an Ed25519 key's OpenSSH wire encoding (RFC 8709).
pub(crate) fn ssh_wire_ed25519(key: &[u8; 32]) -> Vec<u8> {
    let mut wire = Vec::with_capacity(51);
    wire.extend_from_slice(&11u32.to_be_bytes());
    wire.extend_from_slice(b"ssh-ed25519");
    wire.extend_from_slice(&32u32.to_be_bytes());
    wire.extend_from_slice(key);
    wire
}

/// The first OpenSSH public key line of `bytes` (`ssh-… AAAA…`), skipping blank lines and `#`
/// comments, when the file is one.
fn ssh_line(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))?;
    (line.starts_with("ssh-") || line.starts_with("ecdsa-sha2-")).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ed25519_keys_round_trip_through_their_files() {
        let key = SigningKey::generate_ed25519();
        let pem = key.to_pkcs8_pem().unwrap();
        let again = SigningKey::from_key_file(pem.as_bytes(), RsaScheme::Pkcs1v15).unwrap();
        let public = key.verifying_key();
        assert_eq!(again.verifying_key(), public);
        let spki = public.to_spki_pem().unwrap();
        let line = public.to_openssh().unwrap();
        for file in [spki.as_bytes(), line.as_bytes(), pem.as_bytes()] {
            let read = VerifyingKey::from_key_file(file, RsaScheme::Pkcs1v15).unwrap();
            assert_eq!(read, public);
        }
        let signature = key.sign(b"statement").unwrap();
        assert!(public.verify(b"statement", &signature));
        assert!(!public.verify(b"statemenT", &signature));
        assert_eq!(
            VerifyingKey::from_field(Scheme::Ed25519, &public.to_field()).unwrap(),
            public
        );
    }

    #[test]
    fn rfc_8032_test_1() {
        // RFC 8032 §7.1, TEST 1: the empty message.
        let seed = hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .unwrap();
        let key = SigningKey::ed25519_from_seed(&seed.try_into().unwrap());
        assert_eq!(
            hex::encode(key.verifying_key().to_field()),
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
        assert_eq!(
            hex::encode(key.sign(b"").unwrap()),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
             5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
    }

    #[test]
    fn ecdsa_and_rsa_keys_sign_and_verify() {
        let ecdsa = SigningKey::ecdsa(EcdsaPrivateKey::generate());
        let signature = ecdsa.sign(b"m").unwrap();
        assert_eq!(signature.len(), 64);
        assert!(ecdsa.verifying_key().verify(b"m", &signature));
        assert!(!ecdsa.verifying_key().verify(b"n", &signature));
        let field = ecdsa.verifying_key().to_field();
        assert_eq!(
            VerifyingKey::from_field(Scheme::EcdsaP256, &field).unwrap(),
            ecdsa.verifying_key()
        );
    }
}

/// The bytes of the key file at `path`, in a buffer zeroed after use (and every buffer they were
/// read through: [`crate::secret_file`]): what every front end reads a signing key, a public key
/// or an RSA/ECDSA key with. A file larger than [`MAX_KEY_FILE`] is refused unread, naming it.
///
/// # Errors
/// [`Error::Io`] (`cannot read key PATH`) when it cannot be read; [`Error::SignKey`] when it is
/// too large.
pub fn read_key_file(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    let bytes = crate::secret_file::read(path, MAX_KEY_FILE)
        .map_err(|e| Error::io(format!("cannot read key {}", path.display()), e))?;
    if bytes.len() as u64 > MAX_KEY_FILE {
        return Err(Error::SignKey(format!(
            "{}: not a key: larger than 1 MiB",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Why the key file at `path` is not the key asked for: [`Error::SignKey`] naming it.
fn not_a_key(path: &Path) -> impl FnOnce(Error) -> Error + '_ {
    move |error| Error::SignKey(format!("{}: {error}", path.display()))
}

impl SigningKey {
    /// The private key in the key file at `path` ([`read_key_file`],
    /// [`SigningKey::from_key_file`]): `--sign KEY`, `sign -k KEY`, Python's `sign=`. An RSA
    /// key signs with `rsa_scheme`.
    ///
    /// # Errors
    /// As [`read_key_file`]; [`Error::SignKey`] naming the file when it holds no such key.
    pub fn read(path: &Path, rsa_scheme: RsaScheme) -> Result<Self> {
        Self::from_key_file(&read_key_file(path)?, rsa_scheme).map_err(not_a_key(path))
    }
}

impl VerifyingKey {
    /// The public key in the key file at `path` ([`read_key_file`],
    /// [`VerifyingKey::from_key_file`]; a private key gives its public half): `--verify-with`,
    /// `verify --public`, Python's `verify_with=`. An RSA key verifies PKCS#1 v1.5 signatures, the
    /// default every signer writes.
    ///
    /// # Errors
    /// As [`read_key_file`]; [`Error::SignKey`] naming the file when it holds no such key.
    pub fn read(path: &Path) -> Result<Self> {
        Self::from_key_file(&read_key_file(path)?, RsaScheme::Pkcs1v15).map_err(not_a_key(path))
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;

    /// Every front end reads key files here: a key, a file that is none (named, a usage
    /// error), one too large (refused unread), one that is not there (an I/O error).
    #[test]
    fn a_key_file_is_read_or_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let key = SigningKey::generate_ed25519();
        std::fs::write(d.join("k.pem"), key.to_pkcs8_pem().unwrap().as_bytes()).unwrap();
        let public = VerifyingKey::read(&d.join("k.pem")).unwrap();
        assert_eq!(public.fingerprint(), key.verifying_key().fingerprint());
        SigningKey::read(&d.join("k.pem"), RsaScheme::Pkcs1v15).unwrap();
        std::fs::write(d.join("pw.txt"), b"hunter2\n").unwrap();
        let e = VerifyingKey::read(&d.join("pw.txt")).unwrap_err();
        assert!(matches!(e, Error::SignKey(_)), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("{}: ", d.join("pw.txt").display()))
        );
        std::fs::write(d.join("big"), vec![b'a'; (MAX_KEY_FILE + 1) as usize]).unwrap();
        let e = SigningKey::read(&d.join("big"), RsaScheme::Pkcs1v15).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: not a key: larger than 1 MiB", d.join("big").display())
        );
        let e = VerifyingKey::read(&d.join("none")).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }
}
