//! Reading key files in every form `openssl` writes, and telling the key types apart.
//!
//! | form | PEM label | written by |
//! |---|---|---|
//! | PKCS#8 private key (RSA or EC) | `PRIVATE KEY` | `openssl genpkey`, `openssl pkey`, paracrypt |
//! | SPKI public key (RSA or EC) | `PUBLIC KEY` | `openssl pkey -pubout`, paracrypt |
//! | PKCS#1 RSA private key | `RSA PRIVATE KEY` | `openssl genrsa -traditional`, `openssl rsa -traditional` |
//! | PKCS#1 RSA public key | `RSA PUBLIC KEY` | `openssl rsa -RSAPublicKey_out` |
//! | SEC1 EC private key | `EC PRIVATE KEY` (often after `EC PARAMETERS`) | `openssl ecparam -genkey`, `openssl ec` |
//!
//! The same structures are read as DER (`-outform DER`). Text around the PEM block (as
//! `openssl pkey -text` writes) and `EC PARAMETERS` blocks are skipped. Encrypted keys, keys of
//! other algorithms or curves, and certificates are refused with a message that says what the
//! file holds and, where there is one, the `openssl` command that gives a usable key.
//!
//! ```
//! use paracrypt_core::pubkey::pem::{KeyFile, parse};
//!
//! let key = paracrypt_core::pubkey::ecdsa::EcdsaPrivateKey::generate();
//! let pem = key.to_pkcs8_pem()?;
//! assert!(matches!(parse(pem.as_bytes())?, KeyFile::EcPrivate(_)));
//! assert!(parse(b"hello").is_err());
//! # Ok::<(), paracrypt_core::pubkey::Error>(())
//! ```

use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::der::Decode;
use rsa::pkcs8::der::asn1::ObjectIdentifier as Oid;
use rsa::pkcs8::der::pem;
use rsa::pkcs8::{PrivateKeyInfoRef, SubjectPublicKeyInfoRef};

use zeroize::Zeroizing;

use super::{Error, Result};

const RSA_ENCRYPTION: Oid = Oid::new_unwrap("1.2.840.113549.1.1.1");
const RSASSA_PSS: Oid = Oid::new_unwrap("1.2.840.113549.1.1.10");
const EC_PUBLIC_KEY: Oid = Oid::new_unwrap("1.2.840.10045.2.1");
const PRIME256V1: Oid = Oid::new_unwrap("1.2.840.10045.3.1.7");

/// A key read from a file: which kind it is, with the key itself.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum KeyFile {
    /// An RSA private key (PKCS#8 or PKCS#1).
    RsaPrivate(rsa::RsaPrivateKey),
    /// An RSA public key (SPKI or PKCS#1).
    RsaPublic(rsa::RsaPublicKey),
    /// A P-256 private key (PKCS#8 or SEC1).
    EcPrivate(p256::SecretKey),
    /// A P-256 public key (SPKI).
    EcPublic(p256::PublicKey),
}

impl KeyFile {
    /// What the file holds, for messages: `an RSA private key`, `an EC (P-256) public key`, ...
    pub fn describe(&self) -> &'static str {
        match self {
            KeyFile::RsaPrivate(_) => "an RSA private key",
            KeyFile::RsaPublic(_) => "an RSA public key",
            KeyFile::EcPrivate(_) => "an EC (P-256) private key",
            KeyFile::EcPublic(_) => "an EC (P-256) public key",
        }
    }

    fn wrong(self, expected: &'static str) -> Error {
        Error::WrongKeyType {
            expected,
            found: self.describe().to_owned(),
        }
    }

    /// The RSA private key, or [`Error::WrongKeyType`].
    pub fn into_rsa_private(self) -> Result<rsa::RsaPrivateKey> {
        match self {
            KeyFile::RsaPrivate(key) => Ok(key),
            other => Err(other.wrong("an RSA private key")),
        }
    }

    /// The RSA public key (taken from a private key too), or [`Error::WrongKeyType`].
    pub fn into_rsa_public(self) -> Result<rsa::RsaPublicKey> {
        match self {
            KeyFile::RsaPublic(key) => Ok(key),
            KeyFile::RsaPrivate(key) => Ok(key.to_public_key()),
            other => Err(other.wrong("an RSA public key")),
        }
    }

    /// The P-256 private key, or [`Error::WrongKeyType`].
    pub fn into_ec_private(self) -> Result<p256::SecretKey> {
        match self {
            KeyFile::EcPrivate(key) => Ok(key),
            other => Err(other.wrong("an EC (P-256) private key")),
        }
    }

    /// The P-256 public key (taken from a private key too), or [`Error::WrongKeyType`].
    pub fn into_ec_public(self) -> Result<p256::PublicKey> {
        match self {
            KeyFile::EcPublic(key) => Ok(key),
            KeyFile::EcPrivate(key) => Ok(key.public_key()),
            other => Err(other.wrong("an EC (P-256) public key")),
        }
    }
}

/// Reads a key from the bytes of a key file: PEM (the first key block) or DER.
///
/// # Errors
///
/// [`Error::KeyFormat`] when the bytes hold no key; [`Error::UnsupportedKey`] for an encrypted
/// key, another algorithm or curve, or a certificate.
pub fn parse(bytes: &[u8]) -> Result<KeyFile> {
    if let Some(text) = pem_text(bytes) {
        return parse_pem(text);
    }
    parse_der(bytes)
}

/// The bytes as text, when they look like PEM.
fn pem_text(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    text.contains("-----BEGIN ").then_some(text)
}

fn parse_pem(text: &str) -> Result<KeyFile> {
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let block = &rest[start..];
        // The label is on the BEGIN line, in printable characters (RFC 7468).
        let begin_line = block.lines().next().unwrap_or(block);
        let label = begin_line["-----BEGIN ".len()..]
            .find("-----")
            .map(|end| &begin_line["-----BEGIN ".len()..][..end])
            .filter(|label| !label.chars().any(char::is_control))
            .ok_or_else(|| Error::format("unterminated PEM header"))?;
        let footer = format!("-----END {label}-----");
        let end = block
            .find(&footer)
            .ok_or_else(|| Error::format(format!("PEM block `{label}` has no END line")))?
            + footer.len();
        let pem_block = &block[..end];
        rest = &block[end..];
        if label == "EC PARAMETERS" {
            continue;
        }
        if pem_block.contains("Proc-Type: 4,ENCRYPTED") || label == "ENCRYPTED PRIVATE KEY" {
            return Err(Error::UnsupportedKey {
                reason: "the private key is encrypted; paracrypt reads unencrypted keys \
                         (decrypt it with `openssl pkey -in KEY -out PLAIN.pem`)"
                    .into(),
            });
        }
        return parse_block(label, pem_block);
    }
    Err(Error::format("no PEM key block found"))
}

fn parse_block(label: &str, block: &str) -> Result<KeyFile> {
    // A private key's DER: zeroed once parsed.
    let decode = || {
        pem::decode_vec(block.as_bytes())
            .map(|(_, der)| Zeroizing::new(der))
            .map_err(|e| Error::format(format!("bad PEM `{label}` block: {e}")))
    };
    match label {
        "PRIVATE KEY" => pkcs8_private(&decode()?),
        "PUBLIC KEY" => spki_public(&decode()?),
        "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_der(&decode()?)
            .map(KeyFile::RsaPrivate)
            .map_err(|e| Error::format(format!("bad PKCS#1 RSA private key: {e}"))),
        "RSA PUBLIC KEY" => rsa::RsaPublicKey::from_pkcs1_der(&decode()?)
            .map(KeyFile::RsaPublic)
            .map_err(|e| Error::format(format!("bad PKCS#1 RSA public key: {e}"))),
        "EC PRIVATE KEY" => sec1_private(&decode()?),
        "CERTIFICATE" | "TRUSTED CERTIFICATE" | "X509 CERTIFICATE" => Err(Error::UnsupportedKey {
            reason: "this is a certificate, not a key \
                     (extract its key with `openssl x509 -in CERT -pubkey -noout`)"
                .into(),
        }),
        other => Err(Error::UnsupportedKey {
            reason: format!("a PEM `{other}` block is not a key paracrypt reads"),
        }),
    }
}

fn parse_der(der: &[u8]) -> Result<KeyFile> {
    if PrivateKeyInfoRef::from_der(der).is_ok() {
        return pkcs8_private(der);
    }
    if SubjectPublicKeyInfoRef::from_der(der).is_ok() {
        return spki_public(der);
    }
    if let Ok(key) = rsa::RsaPrivateKey::from_pkcs1_der(der) {
        return Ok(KeyFile::RsaPrivate(key));
    }
    if let Ok(key) = rsa::RsaPublicKey::from_pkcs1_der(der) {
        return Ok(KeyFile::RsaPublic(key));
    }
    if sec1::EcPrivateKey::from_der(der).is_ok() {
        return sec1_private(der);
    }
    Err(Error::format(
        "neither PEM nor a DER key (PKCS#8, SPKI, PKCS#1 or SEC1)",
    ))
}

fn pkcs8_private(der: &[u8]) -> Result<KeyFile> {
    let info = PrivateKeyInfoRef::from_der(der)
        .map_err(|e| Error::format(format!("bad PKCS#8 private key: {e}")))?;
    let (algorithm, parameters) = info
        .algorithm
        .oids()
        .map_err(|e| Error::format(format!("bad PKCS#8 algorithm: {e}")))?;
    match algorithm {
        RSA_ENCRYPTION | RSASSA_PSS => rsa::RsaPrivateKey::try_from(info)
            .map(KeyFile::RsaPrivate)
            .map_err(|e| Error::format(format!("bad RSA private key: {e}"))),
        EC_PUBLIC_KEY => {
            check_curve(parameters)?;
            p256::SecretKey::try_from(info)
                .map(KeyFile::EcPrivate)
                .map_err(|e| Error::format(format!("bad EC private key: {e}")))
        }
        other => Err(unsupported_algorithm(other, "private")),
    }
}

fn spki_public(der: &[u8]) -> Result<KeyFile> {
    let info = SubjectPublicKeyInfoRef::from_der(der)
        .map_err(|e| Error::format(format!("bad SPKI public key: {e}")))?;
    let (algorithm, parameters) = info
        .algorithm
        .oids()
        .map_err(|e| Error::format(format!("bad SPKI algorithm: {e}")))?;
    match algorithm {
        RSA_ENCRYPTION | RSASSA_PSS => rsa::RsaPublicKey::try_from(info)
            .map(KeyFile::RsaPublic)
            .map_err(|e| Error::format(format!("bad RSA public key: {e}"))),
        EC_PUBLIC_KEY => {
            check_curve(parameters)?;
            p256::PublicKey::try_from(info)
                .map(KeyFile::EcPublic)
                .map_err(|e| Error::format(format!("bad EC public key: {e}")))
        }
        other => Err(unsupported_algorithm(other, "public")),
    }
}

fn sec1_private(der: &[u8]) -> Result<KeyFile> {
    let key = sec1::EcPrivateKey::from_der(der)
        .map_err(|e| Error::format(format!("bad SEC1 EC private key: {e}")))?;
    if let Some(curve) = key.parameters.and_then(|p| p.named_curve()) {
        check_curve(Some(curve))?;
    }
    p256::SecretKey::from_sec1_der(der)
        .map(KeyFile::EcPrivate)
        .map_err(|e| Error::format(format!("bad SEC1 EC private key: {e}")))
}

/// Refuses EC keys on curves other than P-256, naming the curve.
fn check_curve(curve: Option<Oid>) -> Result<()> {
    match curve {
        Some(PRIME256V1) => Ok(()),
        Some(other) => Err(Error::UnsupportedKey {
            reason: format!(
                "an EC key on curve {}; paracrypt's ECDSA is P-256 (prime256v1) only",
                curve_name(other)
            ),
        }),
        None => Err(Error::format("EC key without a named curve")),
    }
}

fn curve_name(oid: Oid) -> String {
    match oid.to_string().as_str() {
        "1.3.132.0.34" => "secp384r1 (P-384)".into(),
        "1.3.132.0.35" => "secp521r1 (P-521)".into(),
        "1.3.132.0.10" => "secp256k1".into(),
        "1.2.840.10045.3.1.1" => "prime192v1 (P-192)".into(),
        "1.3.132.0.33" => "secp224r1 (P-224)".into(),
        other => other.to_owned(),
    }
}

fn unsupported_algorithm(oid: Oid, which: &str) -> Error {
    let name = match oid.to_string().as_str() {
        "1.3.101.112" => "Ed25519".to_owned(),
        "1.3.101.113" => "Ed448".to_owned(),
        "1.3.101.110" => "X25519".to_owned(),
        "1.3.101.111" => "X448".to_owned(),
        "1.2.840.10040.4.1" => "DSA".to_owned(),
        "1.2.840.113549.1.3.1" | "1.2.840.10046.2.1" => "DH".to_owned(),
        other => format!("algorithm {other}"),
    };
    Error::UnsupportedKey {
        reason: format!("a {which} key of type {name}; paracrypt handles RSA and ECDSA P-256 keys"),
    }
}
