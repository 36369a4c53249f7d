//! A key management service as a recipient: `awskms:KEY` wraps the file key with AWS KMS
//! (envelope encryption, as the AWS Encryption SDK, Tink and SOPS do).
//!
//! The core speaks no HTTP: a [`Kms`] client is given to [`Recipients`](super::Recipients) and
//! [`Identities`](super::Identities) by whoever builds them (`paracrypt_store::Kms`, on
//! object_store's signing and HTTP client, is the one the CLI and the Python package register;
//! a build without it refuses `awskms:` recipients with one line).
//!
//! The stanza is `-> awskms KEY` with KMS's ciphertext blob as its body: `KEY` is the key as
//! given (a key ARN, a key id, an alias `alias/NAME` or an alias ARN), which `decrypt` names
//! to KMS again, so a file says which key opens it. The file key is sent to KMS's `Encrypt`
//! with an encryption context that binds it to its header ([`CONTEXT_KEY`]: the digest of
//! [`header_digest`]); KMS's `Decrypt` gives it back only with the same context, so a stanza
//! moved into another header is refused by KMS itself (and, where the digest cannot tell two
//! headers apart, by the header's MAC, which only the right file key opens).

use std::fmt;

use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::{FILE_KEY_BYTES, FileKey, Stanza};
use crate::error::{Error, Result};

/// The stanza tag of a key wrapped by AWS KMS.
pub const STANZA_TAG: &str = "awskms";
/// How an AWS KMS recipient is written: `awskms:` and the key.
pub const PREFIX: &str = "awskms:";
/// The encryption context's one key; its value is the base64 of [`header_digest`].
pub const CONTEXT_KEY: &str = "paracrypt-header";
/// The longest key identifier KMS takes (an alias ARN included).
const MAX_KEY_ID: usize = 2048;

/// A key management service that wraps and unwraps file keys.
///
/// `key` is the key as the user named it; `context` the encryption context (pairs of UTF-8
/// strings) that KMS binds to the ciphertext. Errors are one line that says why (access
/// denied, key disabled, key not found in a region, server unreachable); the caller names
/// the key.
pub trait Kms: fmt::Debug + Send + Sync {
    /// Encrypts `plaintext` under `key` with `context`: KMS's ciphertext blob.
    fn encrypt(
        &self,
        key: &str,
        plaintext: &[u8],
        context: &[(&str, &str)],
    ) -> std::result::Result<Vec<u8>, String>;

    /// Decrypts a ciphertext blob made by [`Kms::encrypt`] under `key` with the same `context`.
    fn decrypt(
        &self,
        key: &str,
        ciphertext: &[u8],
        context: &[(&str, &str)],
    ) -> std::result::Result<Zeroizing<Vec<u8>>, String>;
}

/// One `awskms:KEY` recipient: the key, checked to be one KMS could name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) key: String,
}

impl Target {
    /// Parses `awskms:KEY`: the key, non-empty, printable ASCII without spaces (it becomes a
    /// stanza argument), at most 2048 bytes.
    pub(crate) fn parse(text: &str) -> std::result::Result<Self, String> {
        let key = text.strip_prefix(PREFIX).unwrap_or(text);
        valid_key(key)?;
        Ok(Target {
            key: key.to_owned(),
        })
    }
}

/// Why `key` cannot name a KMS key, if it cannot.
fn valid_key(key: &str) -> std::result::Result<(), String> {
    if key.is_empty() {
        return Err(
            "awskms: names no key (expected awskms:ARN, awskms:KEY-ID or \
                    awskms:alias/NAME)"
                .into(),
        );
    }
    if key.len() > MAX_KEY_ID || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "not a KMS key (a key ARN, key id or alias: printable ASCII without \
                    spaces, at most 2048 bytes)"
                .into(),
        );
    }
    Ok(())
}

/// What a header binds its KMS stanzas to: SHA-256 over a label, `bound` (what the format
/// gives of its header before the stanzas: a container's salt; nothing for an age file, whose
/// header has only its version line there) and every stanza that is not a KMS stanza, in
/// order and in age's encoding. KMS stanzas are left out so that each is computed before it
/// exists, and several KMS keys bind the same digest.
pub fn header_digest(bound: &[u8], stanzas: &[Stanza]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"paracrypt awskms v1\n");
    hash.update((bound.len() as u64).to_be_bytes());
    hash.update(bound);
    let others: Vec<Stanza> = stanzas
        .iter()
        .filter(|s| s.tag != STANZA_TAG)
        .map(|s| Stanza {
            tag: s.tag.clone(),
            args: s.args.clone(),
            body: s.body.clone(),
        })
        .collect();
    let mut encoded = Vec::new();
    super::write_stanzas(&others, &mut encoded);
    hash.update(&encoded);
    hash.finalize().into()
}

/// The encryption context of a header's digest.
fn context(digest: &[u8; 32]) -> String {
    BASE64_STANDARD_NO_PAD.encode(digest)
}

/// Wraps `file_key` for `target` with `kms`, bound to `digest`: its stanza.
pub(crate) fn wrap(
    kms: &dyn Kms,
    target: &Target,
    file_key: &FileKey,
    digest: &[u8; 32],
) -> Result<Stanza> {
    use age::secrecy::ExposeSecret;
    let value = context(digest);
    let blob = kms
        .encrypt(
            &target.key,
            file_key.expose_secret(),
            &[(CONTEXT_KEY, &value)],
        )
        .map_err(|reason| kms_error(&target.key, reason))?;
    Ok(Stanza {
        tag: STANZA_TAG.to_owned(),
        args: vec![target.key.clone()],
        body: blob,
    })
}

/// Unwraps the file key of a KMS stanza with `kms`: `None` if `stanza` is not one.
pub(crate) fn unwrap(kms: &dyn Kms, stanza: &Stanza, digest: &[u8; 32]) -> Option<Result<FileKey>> {
    if stanza.tag != STANZA_TAG {
        return None;
    }
    let [key] = stanza.args.as_slice() else {
        return Some(Err(Error::AgeHeader(
            "an awskms stanza must have one argument, the key".into(),
        )));
    };
    if let Err(reason) = valid_key(key) {
        return Some(Err(kms_error(key, reason)));
    }
    let value = context(digest);
    Some(
        kms.decrypt(key, &stanza.body, &[(CONTEXT_KEY, &value)])
            .map_err(|reason| kms_error(key, reason))
            .and_then(|plain| {
                let bytes: [u8; FILE_KEY_BYTES] = plain.as_slice().try_into().map_err(|_| {
                    kms_error(
                        key,
                        format!(
                            "KMS gave {} bytes where a {FILE_KEY_BYTES}-byte file key was \
                                 wrapped",
                            plain.len()
                        ),
                    )
                })?;
                Ok(FileKey::new(Box::new(bytes)))
            }),
    )
}

/// The keys a header's KMS stanzas name, in order (what `info` shows).
pub fn keys_of(stanzas: &[Stanza]) -> Vec<String> {
    stanzas
        .iter()
        .filter(|s| s.tag == STANZA_TAG)
        .filter_map(|s| s.args.first().cloned())
        .collect()
}

/// A KMS failure naming the key.
pub(crate) fn kms_error(key: &str, reason: impl Into<String>) -> Error {
    Error::Kms {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipient::Recipients;

    #[test]
    fn a_kms_recipient_needs_a_client_and_a_key() {
        let mut recipients = Recipients::new();
        let e = recipients
            .add("awskms:alias/backups", "recipient 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a KMS client"), "{e}");
        assert_eq!(
            Target::parse("awskms:alias/backups").unwrap().key,
            "alias/backups"
        );
        for bad in ["awskms:", "awskms:alias/a b", "awskms:é"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_digest_binds_the_other_stanzas_and_the_salt_not_kms_stanzas() {
        let stanza = |tag: &str, arg: &str| Stanza {
            tag: tag.into(),
            args: vec![arg.into()],
            body: vec![1, 2, 3],
        };
        let x = || stanza("X25519", "AAAA");
        let kms = stanza(STANZA_TAG, "alias/k");
        let base = header_digest(b"salt", &[x()]);
        assert_eq!(header_digest(b"salt", &[x(), kms]), base);
        assert_ne!(header_digest(b"other", &[x()]), base);
        assert_ne!(header_digest(b"salt", &[stanza("X25519", "BBBB")]), base);
        assert_ne!(header_digest(b"salt", &[]), base);
    }
}
