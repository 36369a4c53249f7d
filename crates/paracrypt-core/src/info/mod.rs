//! What an encrypted file says about itself without a key (`paracrypt info`), for every format
//! paracrypt reads: a paracrypt container, an age file (binary or armored) and an `openssl enc`
//! password file. The formats are told apart by their first bytes, as `decrypt` does; each
//! format's own module reads its header ([`container::read_header`],
//! [`AgeInfo::read`](crate::agefile::AgeInfo::read),
//! [`SaltedInfo::read`](crate::raw::salted::SaltedInfo::read)), with the caps it always applies,
//! and what the file's length says about its chunks is a [`Sizes`].
//!
//! ```
//! use paracrypt_core::container::{Encryptor, Key};
//! use paracrypt_core::info::{FileInfo, read};
//! use paracrypt_core::Runner;
//!
//! let sealed = Runner::new().vec(&Encryptor::new(Key::generate()), b"some data")?;
//! match read(&mut &sealed[..], Some(sealed.len() as u64), true)? {
//!     FileInfo::Container { header, sizes } => {
//!         assert_eq!(header.suite.to_string(), "aes-256-gcm");
//!         assert_eq!(sizes.unwrap().plaintext, 9..=9);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert!(read(&mut &b"plain text"[..], Some(10), true).is_err());
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

use std::io::Read;

use serde_json::{Value, json};

use crate::agefile::{self, AgeFormat, AgeInfo, StanzaKind};
use crate::container::{self, HeaderInfo, Kdf, Suite};
use crate::error::{Error, Result};
use crate::plan::Sizes;
use crate::provider::Provider;
use crate::raw::salted::{self, SaltedInfo};

mod text;

/// What a file is and what it says about itself.
#[derive(Debug)]
#[non_exhaustive]
#[expect(
    clippy::large_enum_variant,
    reason = "one per `info` call, never in a collection: boxing the header buys nothing"
)]
pub enum FileInfo {
    /// A paracrypt container.
    Container {
        /// Its header's fields.
        header: HeaderInfo,
        /// What the file's length says about its chunks, when the length is known.
        sizes: Option<Sizes>,
    },
    /// An age file, binary or armored.
    Age(AgeInfo),
    /// An `openssl enc` password file (`Salted__`).
    Salted(SaltedInfo),
}

/// Reads what the file at the start of `input` says about itself: `len` is its length when
/// known (the chunks are then counted from it, nothing more read), and `decode_armor` lets an
/// armored age file be decoded to its end to count its chunks (see [`AgeInfo::read`]).
///
/// Fails with [`Error::UnknownFormat`] when the file is none of the formats, and as `decrypt`
/// would on a header it cannot read. A length that no writer makes is
/// [`Sizes::damage`], not an error.
pub fn read(input: &mut dyn Read, len: Option<u64>, decode_armor: bool) -> Result<FileInfo> {
    let mut start = Vec::with_capacity(agefile::DETECT_LEN);
    (&mut *input)
        .take(agefile::DETECT_LEN as u64)
        .read_to_end(&mut start)
        .map_err(|e| Error::io("reading the header", e))?;
    let mut whole = start.as_slice().chain(input);
    // A container shorter than its magic is the container's to call truncated.
    let magic = container::MAGIC;
    if start.starts_with(magic) || (!start.is_empty() && magic.starts_with(&start)) {
        let header = container::read_header(&mut whole)?;
        let sizes = len.map(|len| header.sizes(len));
        Ok(FileInfo::Container { header, sizes })
    } else if agefile::detect(&start).is_some() {
        Ok(FileInfo::Age(AgeInfo::read(&mut whole, len, decode_armor)?))
    } else if start.starts_with(salted::MAGIC) {
        Ok(FileInfo::Salted(SaltedInfo::read(&mut whole, len)?))
    } else {
        Err(Error::UnknownFormat)
    }
}

/// The version of [`FileInfo::json`]'s fields (docs/guide/files.md lists them): fields may be added
/// within a version, never renamed, removed or given another meaning.
pub const JSON_SCHEMA: u32 = 1;

impl FileInfo {
    /// What a length says is wrong with the file, if anything ([`Sizes::damage`]).
    pub fn damage(&self) -> Option<&Error> {
        self.sizes().and_then(|sizes| sizes.damage.as_ref())
    }

    /// Whether a key file opens it (a container of version 1, sealed with the key itself: no
    /// file key in it to re-wrap).
    pub fn opened_by_key_file(&self) -> bool {
        matches!(self, FileInfo::Container { header, .. } if header.kdf == Kdf::Key)
    }

    /// A container's suite.
    pub fn suite(&self) -> Option<Suite> {
        match self {
            FileInfo::Container { header, .. } => Some(header.suite),
            _ => None,
        }
    }

    /// [`FileInfo::damage`], owned: what to fail with once the fields are shown.
    pub fn into_damage(self) -> Option<Error> {
        match self {
            FileInfo::Container { sizes, .. } => sizes.and_then(|s| s.damage),
            FileInfo::Age(age) => age.sizes.and_then(|s| s.damage),
            FileInfo::Salted(_) => None,
        }
    }

    /// What the file's length says about its chunks, when known.
    pub fn sizes(&self) -> Option<&Sizes> {
        match self {
            FileInfo::Container { sizes, .. } => sizes.as_ref(),
            FileInfo::Age(age) => age.sizes.as_ref(),
            FileInfo::Salted(_) => None,
        }
    }

    /// The whole description as one JSON object, schema [`JSON_SCHEMA`]: what `paracrypt info
    /// --json` prints and Python's `paracrypt.info()` returns (docs/guide/files.md lists the fields).
    /// `file` names the file as the caller gave it, `size` is its length when known, and
    /// `provider` is who would compute a container's suite.
    pub fn json(&self, file: &str, size: Option<u64>, provider: Provider) -> Value {
        let mut value = self.format_json(provider);
        let object = value.as_object_mut().expect("an object");
        object.insert("schema".into(), Value::from(JSON_SCHEMA));
        object.insert("file".into(), Value::from(file));
        object.insert("size".into(), json!(size));
        object.insert(
            "damage".into(),
            json!(self.damage().map(ToString::to_string)),
        );
        value
    }

    /// The fields of this file's format.
    fn format_json(&self, provider: Provider) -> Value {
        let plaintext =
            |sizes: &Sizes| json!({ "min": sizes.plaintext.start(), "max": sizes.plaintext.end() });
        match self {
            FileInfo::Container { header, sizes } => {
                let secret = match header.kdf {
                    Kdf::Key => json!({ "kind": "key" }),
                    Kdf::Argon2id(p) => json!({
                        "kind": "password",
                        "kdf": "argon2id",
                        "m_cost_kib": p.m_cost,
                        "t_cost": p.t_cost,
                        "p_cost": p.p_cost,
                    }),
                    Kdf::Recipients => json!({
                        "kind": "recipients",
                        "recipients": header.recipients,
                        "plugin_stanzas": agefile::plugin_tags(
                            header.stanza_tags.iter().map(String::as_str)
                        ),
                        "kms_keys": header.kms_keys,
                        "rekeyed": header.binding.is_some(),
                    }),
                };
                json!({
                    "format": "paracrypt",
                    "version": header.version,
                    "suite": header.suite.to_string(),
                    "legacy": header.suite.is_legacy(),
                    "chunk_size": header.chunk_size.get(),
                    "secret": secret,
                    "salt": hex::encode(header.salt),
                    "signer": header.signer.as_ref().map(|signer| json!({
                        "scheme": signer.scheme().name(),
                        "fingerprint": signer.fingerprint(),
                        "public_key": hex::encode(signer.to_field()),
                        "signature_len": signer.signature_len(),
                    })),
                    "header_len": header.len,
                    "provider": header.suite.primitives(provider),
                    "chunks": sizes.as_ref().map(|s| s.chunks),
                    "plaintext": sizes.as_ref().map(plaintext),
                })
            }
            FileInfo::Age(age) => {
                let stanzas: Vec<Value> = age
                    .stanzas
                    .iter()
                    .map(|stanza| {
                        let kind = match stanza.kind {
                            StanzaKind::X25519 => "x25519",
                            StanzaKind::PostQuantum => "mlkem768x25519",
                            StanzaKind::Passphrase { .. } => "scrypt",
                            StanzaKind::SshEd25519 => "ssh-ed25519",
                            StanzaKind::SshRsa => "ssh-rsa",
                            StanzaKind::Grease => "grease",
                            StanzaKind::AwsKms => "awskms",
                            StanzaKind::P256Tag => "p256tag",
                            StanzaKind::MlKem768P256Tag => "mlkem768p256tag",
                            _ => "other",
                        };
                        match stanza.kind {
                            StanzaKind::Passphrase { log_n } => {
                                json!({ "tag": stanza.tag, "kind": kind, "log_n": log_n })
                            }
                            StanzaKind::AwsKms => {
                                json!({ "tag": stanza.tag, "kind": kind, "key": stanza.kms_key })
                            }
                            _ => json!({ "tag": stanza.tag, "kind": kind }),
                        }
                    })
                    .collect();
                json!({
                    "format": "age",
                    "armored": age.format == AgeFormat::Armored,
                    "header_len": age.header_len,
                    "stanzas": stanzas,
                    "recipients": age.recipients(),
                    "plugin_stanzas": age.plugin_tags(),
                    "kms_keys": age.kms_keys(),
                    "post_quantum": age.post_quantum(),
                    "passphrase": age.passphrase().is_some(),
                    "scrypt_log_n": age.passphrase().flatten(),
                    "work_factor_refused": age.work_factor_refused(),
                    "provider": Suite::ChaCha20Poly1305.primitives(provider),
                    "payload": age.sizes.as_ref().map(|s| s.payload),
                    "chunks": age.sizes.as_ref().map(|s| s.chunks),
                    "plaintext": age.sizes.as_ref().map(plaintext),
                })
            }
            FileInfo::Salted(salted) => json!({
                "format": "openssl-salted",
                "salt": hex::encode(salted.salt),
                "cipher": null,
                "kdf": null,
                "ciphertext": salted.ciphertext_len,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runner;
    use crate::container::{Encryptor, Key, Suite};
    use crate::plan::ChunkSize;

    fn read_all(file: &[u8]) -> Result<FileInfo> {
        read(&mut &file[..], Some(file.len() as u64), true)
    }

    #[test]
    fn every_format_is_told_apart_by_its_first_bytes() {
        let container = Runner::new()
            .vec(&Encryptor::new(Key::generate()), &[1; 5000])
            .unwrap();
        assert!(matches!(
            read_all(&container).unwrap(),
            FileInfo::Container { sizes: Some(ref s), .. } if s.plaintext == (5000..=5000)
        ));
        let salted = [&salted::MAGIC[..], &[7; 8], &[0; 48]].concat();
        match read_all(&salted).unwrap() {
            FileInfo::Salted(info) => {
                assert_eq!(info.salt, [7; 8]);
                assert_eq!(info.ciphertext_len, Some(48));
            }
            other => panic!("{other:?}"),
        }
        // A stream: no lengths.
        match read(&mut &salted[..], None, true).unwrap() {
            FileInfo::Salted(info) => assert_eq!(info.ciphertext_len, None),
            other => panic!("{other:?}"),
        }
        for file in [&b""[..], b"plain text", b"Salted", b"\n\n\nhello"] {
            assert!(
                matches!(read_all(file), Err(Error::UnknownFormat)),
                "{file:?}"
            );
        }
        // Cut inside a header: as the format's reader says it.
        assert!(matches!(read_all(b"PARA"), Err(Error::NotAContainer)));
        assert!(matches!(
            read_all(b"Salted__\x01\x02"),
            Err(Error::Header(crate::HeaderFault::Truncated))
        ));
    }

    #[test]
    fn a_cbc_container_gives_its_plaintext_within_a_block() {
        let chunk = ChunkSize::new(4096).unwrap();
        let encryptor = Encryptor::new(Key::generate())
            .suite(Suite::DesEde3CbcHmacSha256)
            .chunk_size(chunk);
        for len in [0, 1, 4095, 4096, 10_000] {
            let sealed = Runner::new().vec(&encryptor, &vec![3; len]).unwrap();
            let FileInfo::Container { sizes, .. } = read_all(&sealed).unwrap() else {
                panic!("a container");
            };
            let sizes = sizes.unwrap();
            assert!(sizes.damage.is_none());
            assert!(sizes.plaintext.contains(&(len as u64)), "{len}: {sizes:?}");
            assert_eq!(sizes.plaintext.end() - sizes.plaintext.start(), 7);
        }
    }
}
