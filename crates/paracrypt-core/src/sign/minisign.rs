//! minisign signatures (Frank Denis's `minisign`, its prehashed `ED` form) with Ed25519 keys:
//! what `minisign -V` checks, and checking what `minisign -S` makes.
//!
//! A signature file is four lines: `untrusted comment: …`, the base64 of `"ED" ‖ key id (8
//! bytes) ‖ Ed25519(BLAKE2b-512(file))`, `trusted comment: …`, and the base64 of the *global
//! signature* `Ed25519(signature ‖ trusted comment)`. A public key file is two lines:
//! `untrusted comment: …` and the base64 of `"Ed" ‖ key id ‖ public key`. BLAKE2b-512 of the
//! whole file is a chain and runs on one core (see `docs/SIGNATURES.md`). The key id of a
//! paracrypt key is the first 8 bytes of `SHA-256(public key)`; minisign matches it between the
//! public key and the signature, and paracrypt checks the signatures, not the id.

use std::io::Read;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use blake2::Digest as _;

use super::keys::{Scheme, SigningKey, VerifyingKey};
use crate::error::{Error, Result};
use crate::pubkey::sha256;

/// The most bytes of a minisign signature or public key file a reader takes.
pub const MAX_FILE: usize = 64 * 1024;

/// The key id paracrypt gives an Ed25519 public key: the first 8 bytes of its SHA-256.
pub fn key_id(public: &[u8; 32]) -> [u8; 8] {
    sha256(public)[..8].try_into().expect("8 bytes")
}

/// How minisign shows a key id: the 8 bytes as a little-endian number, 16 hex digits.
fn show_id(id: &[u8; 8]) -> String {
    format!("{:016X}", u64::from_le_bytes(*id))
}

fn ed25519_of(key: &VerifyingKey) -> Result<[u8; 32]> {
    key.ed25519_bytes().ok_or_else(|| {
        Error::SignKey(format!(
            "minisign signatures are Ed25519, not {}",
            key.scheme()
        ))
    })
}

/// The minisign public key file of an Ed25519 key.
///
/// # Errors
///
/// [`Error::SignKey`] for another scheme.
pub fn public_key_file(key: &VerifyingKey) -> Result<String> {
    let public = ed25519_of(key)?;
    let id = key_id(&public);
    let mut blob = b"Ed".to_vec();
    blob.extend_from_slice(&id);
    blob.extend_from_slice(&public);
    Ok(format!(
        "untrusted comment: minisign public key {}\n{}\n",
        show_id(&id),
        BASE64_STANDARD.encode(blob)
    ))
}

/// The Ed25519 public key of a minisign public key file, if `bytes` is one.
pub fn parse_public_key(bytes: &[u8]) -> Option<[u8; 32]> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next()?;
    let encoded = if first.starts_with("untrusted comment:") {
        lines.next()?
    } else {
        first
    };
    let blob = BASE64_STANDARD.decode(encoded).ok()?;
    (blob.len() == 42 && &blob[..2] == b"Ed").then(|| blob[10..].try_into().expect("32 bytes"))
}

/// BLAKE2b-512 of everything `reader` yields, in 1 MiB reads.
fn blake2b(reader: &mut dyn Read) -> Result<[u8; 64]> {
    let mut hasher = blake2::Blake2b512::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(hasher.finalize().into()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading the input", e)),
        }
    }
}

/// Signs everything `reader` yields: the `.minisig` file's text, with the trusted comment
/// `trusted` (minisign's own is `timestamp:SECONDS\tfile:NAME\thashed`).
///
/// # Errors
///
/// [`Error::SignKey`] for a key that is not Ed25519 or a comment with a line break; reading
/// fails.
pub fn sign(key: &SigningKey, trusted: &str, reader: &mut dyn Read) -> Result<String> {
    let public = ed25519_of(&key.verifying_key())?;
    if trusted.contains(['\n', '\r']) {
        return Err(Error::SignKey("a trusted comment is one line".into()));
    }
    let signature = key.sign(&blake2b(reader)?)?;
    let mut global = signature.clone();
    global.extend_from_slice(trusted.as_bytes());
    let global = key.sign(&global)?;
    let id = key_id(&public);
    let mut blob = b"ED".to_vec();
    blob.extend_from_slice(&id);
    blob.extend_from_slice(&signature);
    Ok(format!(
        "untrusted comment: signature from paracrypt secret key {}\n{}\ntrusted comment: {trusted}\n{}\n",
        show_id(&id),
        BASE64_STANDARD.encode(blob),
        BASE64_STANDARD.encode(global)
    ))
}

/// Verifies the minisign signature `text` of everything `reader` yields, made by `expected`
/// (an Ed25519 key); returns the trusted comment.
///
/// # Errors
///
/// [`Error::SignatureFile`] for a malformed file or a legacy (`Ed`, not prehashed) signature;
/// [`Error::BadSignature`] when the signature or the global signature does not verify;
/// reading fails.
pub fn verify(text: &[u8], expected: &VerifyingKey, reader: &mut dyn Read) -> Result<String> {
    let bad = |what: &str| Error::SignatureFile(format!("not a minisign signature: {what}"));
    if text.len() > MAX_FILE {
        return Err(bad("larger than 64 KiB"));
    }
    let public = ed25519_of(expected)?;
    let text = std::str::from_utf8(text).map_err(|_| bad("not text"))?;
    let lines: Vec<&str> = text.lines().collect();
    let [untrusted, blob, trusted, global, rest @ ..] = &lines[..] else {
        return Err(bad("fewer than four lines"));
    };
    if !untrusted.starts_with("untrusted comment:") || rest.iter().any(|l| !l.is_empty()) {
        return Err(bad(
            "no untrusted comment first, or lines after the global signature",
        ));
    }
    let trusted = trusted
        .strip_prefix("trusted comment: ")
        .ok_or_else(|| bad("no trusted comment on the third line"))?;
    let blob = BASE64_STANDARD
        .decode(blob.trim())
        .map_err(|_| bad("the signature line is not base64"))?;
    let global = BASE64_STANDARD
        .decode(global.trim())
        .map_err(|_| bad("the global signature is not base64"))?;
    if blob.len() != 74 || global.len() != 64 {
        return Err(bad("wrong signature lengths"));
    }
    match &blob[..2] {
        b"ED" => {}
        b"Ed" => {
            return Err(bad(
                "a legacy signature of the whole file (`minisign -S -l`); sign with the \
                 default, prehashed form",
            ));
        }
        _ => return Err(bad("unknown algorithm")),
    }
    let key = VerifyingKey::from_field(Scheme::Ed25519, &public)?;
    let signature = &blob[10..];
    if !key.verify(&blake2b(reader)?, signature) {
        return Err(Error::BadSignature);
    }
    let mut signed = signature.to_vec();
    signed.extend_from_slice(trusted.as_bytes());
    if !key.verify(&signed, &global) {
        return Err(Error::BadSignature);
    }
    Ok(trusted.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minisign_signature_round_trips_and_fails_when_altered() {
        let key = SigningKey::generate_ed25519();
        let public = key.verifying_key();
        let text = sign(&key, "file:x", &mut &b"data"[..]).unwrap();
        assert_eq!(
            verify(text.as_bytes(), &public, &mut &b"data"[..]).unwrap(),
            "file:x"
        );
        assert!(matches!(
            verify(text.as_bytes(), &public, &mut &b"datA"[..]),
            Err(Error::BadSignature)
        ));
        let forged = text.replace("file:x", "file:y");
        assert!(matches!(
            verify(forged.as_bytes(), &public, &mut &b"data"[..]),
            Err(Error::BadSignature)
        ));
        let file = public_key_file(&public).unwrap();
        assert_eq!(parse_public_key(file.as_bytes()), public.ed25519_bytes());
    }
}
