//! RSA keys in PEM or DER as age recipients and identities, on paracrypt's own RSA code.
//!
//! The stanza is age's `ssh-rsa` stanza, byte for byte:
//!
//! ```text
//! -> ssh-rsa TAG
//! BODY
//! ```
//!
//! `TAG` is the first 4 bytes of SHA-256 over the key's SSH encoding (`string "ssh-rsa"`,
//! `mpint e`, `mpint n`, RFC 4253 §6.6), base64 without padding; `BODY` is the 16-byte file key
//! under RSA-OAEP with SHA-256 and MGF1-SHA-256 and the label `age-encryption.org/v1/ssh-rsa`.
//! So a key is the same recipient whether it is written as PEM, DER or an OpenSSH line, and
//! `age` reads what paracrypt writes for a PEM key when given the same key in OpenSSH form.

use std::collections::HashSet;

use age::{DecryptError, EncryptError};
use age_core::format::{FILE_KEY_BYTES, FileKey, Stanza};
use age_core::secrecy::ExposeSecret;
use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use rsa::traits::PublicKeyParts;
use sha2::{Digest, Sha256};

use crate::pubkey::rsa::{RsaPrivateKey, RsaPublicKey};

/// The stanza tag, as age's.
pub const SSH_RSA_TAG: &str = "ssh-rsa";
/// The OAEP label, as age's.
pub const SSH_RSA_OAEP_LABEL: &[u8] = b"age-encryption.org/v1/ssh-rsa";
/// The smallest key accepted (as age: shorter keys are refused).
pub const MIN_BITS: usize = 2048;

/// The key's SSH wire encoding (RFC 4253 §6.6).
pub fn ssh_encoding(key: &rsa::RsaPublicKey) -> Vec<u8> {
    let mut out = Vec::new();
    let mut string = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    string(SSH_RSA_TAG.as_bytes());
    string(&mpint(&key.e_bytes()));
    string(&mpint(&key.n_bytes()));
    out
}

/// A positive integer's SSH `mpint` body: no leading zeros, and one zero byte before a set
/// high bit.
fn mpint(magnitude: &[u8]) -> Vec<u8> {
    let trimmed = match magnitude.iter().position(|&b| b != 0) {
        Some(first) => &magnitude[first..],
        None => return Vec::new(),
    };
    let mut out = Vec::with_capacity(trimmed.len() + 1);
    if trimmed[0] & 0x80 != 0 {
        out.push(0);
    }
    out.extend_from_slice(trimmed);
    out
}

/// The stanza argument that names the key: base64 of SHA-256(SSH encoding)\[..4\].
fn tag(key: &rsa::RsaPublicKey) -> String {
    BASE64_STANDARD_NO_PAD.encode(&Sha256::digest(ssh_encoding(key))[..4])
}

/// An RSA public key as an age recipient.
#[derive(Clone, Debug)]
pub struct RsaRecipient {
    key: RsaPublicKey,
    tag: String,
}

impl RsaRecipient {
    /// The recipient for `key`, or why it cannot be one (shorter than 2048 bits).
    pub fn new(key: RsaPublicKey) -> Result<Self, String> {
        if key.bits() < MIN_BITS {
            return Err(format!(
                "a {}-bit RSA key is too short to encrypt to (at least {MIN_BITS} bits)",
                key.bits()
            ));
        }
        let tag = tag(key.as_rsa());
        Ok(RsaRecipient { key, tag })
    }
}

impl age::Recipient for RsaRecipient {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
    ) -> Result<(Vec<Stanza>, HashSet<String>), EncryptError> {
        let body = self
            .key
            .encrypt_oaep_with_label(file_key.expose_secret(), SSH_RSA_OAEP_LABEL)
            .map_err(|e| EncryptError::Io(std::io::Error::other(e.to_string())))?;
        let stanza = Stanza {
            tag: SSH_RSA_TAG.to_owned(),
            args: vec![self.tag.clone()],
            body,
        };
        Ok((vec![stanza], HashSet::new()))
    }
}

/// An RSA private key as an age identity.
pub struct RsaIdentity {
    key: RsaPrivateKey,
    tag: String,
}

impl std::fmt::Debug for RsaIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaIdentity")
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

impl RsaIdentity {
    /// The identity of `key`.
    pub fn new(key: RsaPrivateKey) -> Self {
        let tag = tag(key.public_key().as_rsa());
        RsaIdentity { key, tag }
    }
}

impl age::Identity for RsaIdentity {
    fn unwrap_stanza(&self, stanza: &Stanza) -> Option<Result<FileKey, DecryptError>> {
        if stanza.tag != SSH_RSA_TAG || stanza.args != [self.tag.as_str()] {
            return None;
        }
        let Ok(plain) = self
            .key
            .decrypt_oaep_with_label(&stanza.body, SSH_RSA_OAEP_LABEL)
        else {
            return Some(Err(DecryptError::DecryptionFailed));
        };
        Some(FileKey::try_init_with_mut(
            |key: &mut [u8; FILE_KEY_BYTES]| {
                if plain.len() == FILE_KEY_BYTES {
                    key.copy_from_slice(&plain);
                    Ok(())
                } else {
                    Err(DecryptError::DecryptionFailed)
                }
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use age::{Identity, Recipient};

    use super::*;

    #[test]
    fn mpints_are_minimal_and_positive() {
        assert_eq!(mpint(&[0, 0, 1, 0]), [1, 0]);
        assert_eq!(mpint(&[0x80, 1]), [0, 0x80, 1]);
        assert_eq!(mpint(&[0, 0]), Vec::<u8>::new());
    }

    #[test]
    fn wraps_and_unwraps_with_the_same_key_only() {
        let key = crate::pubkey::rsa::RsaPrivateKey::generate(2048).unwrap();
        let other = crate::pubkey::rsa::RsaPrivateKey::generate(2048).unwrap();
        let recipient = RsaRecipient::new(key.public_key()).unwrap();
        let file_key = FileKey::new(Box::new([3; 16]));
        let (stanzas, labels) = recipient.wrap_file_key(&file_key).unwrap();
        assert!(labels.is_empty());
        assert_eq!(stanzas[0].tag, "ssh-rsa");
        assert_eq!(stanzas[0].body.len(), 256);
        let unwrapped = RsaIdentity::new(key).unwrap_stanzas(&stanzas).unwrap();
        assert_eq!(unwrapped.unwrap().expose_secret(), &[3; 16]);
        assert!(RsaIdentity::new(other).unwrap_stanzas(&stanzas).is_none());
    }

    #[test]
    fn the_tag_is_age_s_for_the_same_key_in_openssh_form() {
        // An OpenSSH line carries the SSH encoding; age's ssh-rsa recipient tags it the same.
        let key = crate::pubkey::rsa::RsaPrivateKey::generate(2048).unwrap();
        let line = format!(
            "ssh-rsa {}",
            base64::prelude::BASE64_STANDARD.encode(ssh_encoding(key.public_key().as_rsa()))
        );
        let theirs: age::ssh::Recipient = line.parse().unwrap();
        let file_key = FileKey::new(Box::new([9; 16]));
        let (stanzas, _) = theirs.wrap_file_key(&file_key).unwrap();
        assert_eq!(stanzas[0].args, [tag(key.public_key().as_rsa())]);
        // And paracrypt's identity opens age's stanza.
        let unwrapped = RsaIdentity::new(key).unwrap_stanzas(&stanzas).unwrap();
        assert_eq!(unwrapped.unwrap().expose_secret(), &[9; 16]);
    }
}
