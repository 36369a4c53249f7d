//! A call's arguments resolved into what the core runs: a [`Spec`] names the format, the
//! secret and the options, and makes the core's recipe. Every driver (files, memory, streams,
//! ranges, Dask tasks) starts from one, so that every format runs on every driver.

use std::io::{Read, Write};
use std::sync::Arc;

use age::secrecy::SecretString;
use paracrypt_core::agefile::{self, AgeFormat};
use paracrypt_core::container::{Encryptor, SALT_LEN, Suite};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::raw::salted::{PasswordCipher, PasswordKdf};
use paracrypt_core::raw::{Direction, Hazard, RawCipher, RawCipherName};
use paracrypt_core::recipe::AnyDecryptor;
use paracrypt_core::recipient::Recipients;
use paracrypt_core::sign::{SigningKey, VerifyingKey};
use paracrypt_core::{Recipe, Runner};
use pyo3::prelude::*;
use zeroize::Zeroizing;

use crate::errors::{Failure, usage};
use crate::secrets::Credential;

/// The file format an encryption writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// paracrypt's container.
    Container,
    /// age v1; `armor`: ASCII armor.
    Age {
        /// ASCII armor (as `age -a`).
        armor: bool,
    },
}

impl Format {
    /// `format=` and `armor=`.
    pub fn new(format: &str, armor: bool) -> Result<Self, Failure> {
        match format {
            "paracrypt" | "container" if armor => usage("armor=True applies to format=\"age\""),
            "paracrypt" | "container" => Ok(Format::Container),
            "age" => Ok(Format::Age { armor }),
            other => usage(format!(
                "unknown format `{}` (valid: paracrypt, age)",
                other.escape_debug()
            )),
        }
    }
}

/// One job as a call describes it.
#[derive(Clone)]
pub enum Spec {
    /// `encrypt*`.
    Encrypt {
        /// Key, password or recipients.
        credential: Credential,
        /// Container or age.
        format: Format,
        /// The container's suite.
        suite: Suite,
        /// The container's chunk size.
        chunk_size: ChunkSize,
        /// Testing only: a fixed salt (the CLI's hidden `--fixed-salt`).
        salt: Option<[u8; SALT_LEN]>,
        /// `sign=`: sign every chunk with this key (container version 3).
        signer: Option<SigningKey>,
    },
    /// `decrypt*`: a container or an age file, whichever the input is.
    Decrypt {
        /// Key, password or identities.
        credential: Credential,
        /// `verify_with=`: the file must be a container signed by this key.
        expected: Option<VerifyingKey>,
    },
    /// `raw.encrypt*` / `raw.decrypt*` with a key and IV.
    Raw {
        /// The cipher, key, IV and padding.
        cipher: RawCipher,
        /// Which way.
        direction: Direction,
        /// Bytes per chunk.
        chunk_size: ChunkSize,
    },
    /// `raw.*` with a password: `openssl enc -pass` files (`Salted__`).
    RawPassword {
        /// The cipher.
        name: RawCipherName,
        /// The password.
        password: Zeroizing<String>,
        /// PBKDF2 or the legacy derivation.
        kdf: PasswordKdf,
        /// PKCS#7 padding.
        padding: bool,
        /// Which way.
        direction: Direction,
        /// Bytes per chunk.
        chunk_size: ChunkSize,
    },
}

/// A recipe made from a [`Spec`], with what runs in order around it: age's armor.
pub struct Built {
    recipe: Box<dyn Recipe>,
    armor: Option<Armor>,
}

enum Armor {
    Write(agefile::Encryptor),
    Read(agefile::Decryptor),
}

impl Spec {
    /// The warnings this job deserves (legacy algorithms, no integrity), for
    /// `paracrypt.LegacyWarning`.
    pub fn warnings(&self) -> Vec<String> {
        let raw = |name: RawCipherName| {
            let mut warnings: Vec<String> = name
                .hazards()
                .into_iter()
                .map(|hazard| match hazard {
                    Hazard::LegacyAlgorithm => format!(
                        "{name} is a legacy cipher (broken or deprecated); use it only for \
                         compatibility"
                    ),
                    Hazard::EcbMode => format!(
                        "{name} uses ECB mode, which shows patterns in the data; use it only \
                         for compatibility"
                    ),
                })
                .collect();
            warnings.push(
                "raw output has no integrity protection; paracrypt.encrypt authenticates every \
                 chunk"
                    .into(),
            );
            warnings
        };
        match self {
            Spec::Encrypt {
                suite,
                format: Format::Container,
                ..
            } if suite.is_legacy() => vec![format!(
                "{suite} is a legacy suite, kept for compatibility studies; prefer aes-256-gcm"
            )],
            Spec::Raw { cipher, .. } => raw(cipher.name()),
            Spec::RawPassword { name, kdf, .. } => {
                let mut warnings = raw(*name);
                if kdf.is_weak() {
                    warnings.push(
                        "without pbkdf2 the key comes from openssl's legacy EVP_BytesToKey, \
                         which is weak (one hash per password guess)"
                            .into(),
                    );
                }
                warnings
            }
            _ => Vec::new(),
        }
    }

    /// Emits [`Spec::warnings`] as `paracrypt.LegacyWarning`s.
    pub fn warn(&self, py: Python<'_>) -> PyResult<()> {
        let warnings = self.warnings();
        if warnings.is_empty() {
            return Ok(());
        }
        let category = py.import("paracrypt._errors")?.getattr("LegacyWarning")?;
        let warn = py.import("warnings")?.getattr("warn")?;
        for message in warnings {
            warn.call1((message, &category, 1))?;
        }
        Ok(())
    }

    /// The core's recipe, and the armor around it.
    pub fn build(&self) -> Result<Built, Failure> {
        Ok(match self {
            Spec::Encrypt {
                credential,
                format: Format::Container,
                suite,
                chunk_size,
                salt,
                signer,
            } => {
                let mut encryptor = Encryptor::new(credential.secret())
                    .suite(*suite)
                    .chunk_size(*chunk_size);
                if let Some(salt) = salt {
                    encryptor = encryptor.fixed_salt_for_tests(*salt);
                }
                if let Some(signer) = signer {
                    encryptor = encryptor.sign(signer.clone());
                }
                Built::new(encryptor)
            }
            Spec::Encrypt {
                credential,
                format: Format::Age { armor },
                ..
            } => {
                let recipients = match credential {
                    Credential::Recipients(recipients) => Arc::clone(recipients),
                    Credential::Password(password) => Arc::new(Recipients::passphrase(
                        SecretString::from(password.to_string()),
                        None,
                    )),
                    // Another process's age encryption needs only the file key it is given
                    // with the header, never the recipients (see `distributed`).
                    Credential::Identities(_) => Arc::new(Recipients::new()),
                    Credential::Key(_) => {
                        return usage(
                            "format=\"age\" encrypts to recipients= or with a password=, not a \
                             key",
                        );
                    }
                };
                let encryptor = agefile::Encryptor::new(recipients);
                Built {
                    armor: armor.then(|| Armor::Write(encryptor.clone())),
                    recipe: Box::new(encryptor),
                }
            }
            Spec::Decrypt {
                credential,
                expected,
            } => {
                let mut decryptor = AnyDecryptor::new(credential.secret());
                if let Some(expected) = expected {
                    decryptor = decryptor.verify_with(expected.clone());
                }
                Built {
                    armor: decryptor.age().cloned().map(Armor::Read),
                    recipe: Box::new(decryptor),
                }
            }
            Spec::Raw {
                cipher,
                direction,
                chunk_size,
            } => Built::new(cipher.recipe(*direction, *chunk_size)),
            Spec::RawPassword {
                name,
                password,
                kdf,
                padding,
                direction,
                chunk_size,
            } => Built::new(
                PasswordCipher::new(*name, password.as_bytes(), *kdf)
                    .with_padding(*padding)
                    .recipe(*direction, *chunk_size),
            ),
        })
    }
}

impl Built {
    fn new(recipe: impl Recipe + 'static) -> Self {
        Built {
            recipe: Box::new(recipe),
            armor: None,
        }
    }

    /// The recipe.
    pub fn recipe(&self) -> &dyn Recipe {
        &*self.recipe
    }

    /// The age encryptor that writes armor, when the job writes armored age.
    pub fn armor_writer(&self) -> Option<&agefile::Encryptor> {
        match &self.armor {
            Some(Armor::Write(age)) => Some(age),
            _ => None,
        }
    }

    /// The age decryptor that reads armor, when the job may read an age file.
    pub fn age_reader(&self) -> Option<&agefile::Decryptor> {
        match &self.armor {
            Some(Armor::Read(age)) => Some(age),
            _ => None,
        }
    }

    /// Whether the job must run in order as a stream: age armor, written, or read from an input
    /// that starts with `head`.
    pub fn in_order(&self, head: &[u8]) -> bool {
        match &self.armor {
            Some(Armor::Write(_)) => true,
            Some(Armor::Read(_)) => agefile::detect(head) == Some(AgeFormat::Armored),
            None => false,
        }
    }

    /// Runs the job as a stream, armor included when [`Built::in_order`].
    pub fn stream(
        &self,
        runner: &Runner,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
        in_order: bool,
    ) -> Result<u64, Failure> {
        Ok(match (&self.armor, in_order) {
            (Some(Armor::Write(age)), true) => age.encrypt_armored(runner, reader, writer)?,
            (Some(Armor::Read(age)), true) => age.decrypt_armored(runner, reader, writer)?,
            _ => runner.stream(self.recipe(), reader, writer)?,
        })
    }
}
