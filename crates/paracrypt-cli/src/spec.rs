//! What `raw`, `encrypt` and `decrypt` resolve their flags into: one [`JobSpec`], which the
//! local runner or the distributed one (module `run`) carries out. Every flag is checked and
//! turned into its value once, when the spec is made.

use std::path::PathBuf;

use anyhow::Result;
use std::sync::Arc;

use paracrypt_core::agefile;
use paracrypt_core::container::{Decryptor, Encryptor, SALT_LEN, Secret, Suite};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::salted::{PasswordCipher, PasswordKdf};
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};
use paracrypt_core::recipient::{Identities, Recipients};

use crate::exit::usage;
use crate::flags::{FilesFlags, ThreadsFlag};
use crate::io::OutputPolicy;
use crate::people::{IdentityFlags, RecipientFlags, passphrase};
use crate::progress::Show;
use crate::secret::SecretArgs;

/// One input to one output through the chunk engine, as the command line asks for it.
#[derive(Debug)]
pub struct JobSpec {
    /// What to do.
    pub operation: Operation,
    /// `-j`.
    pub threads: ThreadsFlag,
    /// INPUT (`-` is stdin).
    pub input: PathBuf,
    /// OUTPUT (`-` is stdout).
    pub output: PathBuf,
    /// `-f`, `--sync`, and whether the output is ciphertext.
    pub policy: OutputPolicy,
    /// When to draw a progress bar.
    pub progress: Show,
    /// `-q`: no warnings either.
    pub quiet: bool,
    /// Warnings about the choices made (legacy ciphers, a fixed salt), printed once.
    pub warnings: Vec<String>,
}

impl JobSpec {
    /// A spec for `operation` over `files`; `binary`: the output is ciphertext.
    pub fn new(
        operation: Operation,
        threads: ThreadsFlag,
        files: &FilesFlags,
        binary: bool,
    ) -> Self {
        JobSpec {
            operation,
            threads,
            input: files.input.clone(),
            output: files.output.clone(),
            policy: files.policy(binary),
            progress: Show::Never,
            quiet: false,
            warnings: Vec::new(),
        }
    }
}

/// What a job does.
#[derive(Clone, Debug)]
pub enum Operation {
    /// `paracrypt raw`.
    Raw(RawSpec),
    /// `paracrypt raw --password-file`: an `openssl enc` password file (`Salted__`).
    RawPassword(PasswordSpec),
    /// `paracrypt encrypt`: the key or password is read when the job runs (after the output
    /// was checked, so a prompt never precedes a refusal).
    Encrypt {
        /// The suite.
        suite: Suite,
        /// Plaintext bytes per chunk.
        chunk_size: ChunkSize,
        /// `--fixed-salt` (tests only).
        salt: Option<[u8; SALT_LEN]>,
        /// Where the key or password comes from.
        secret: SecretArgs,
        /// `-r` and `-R`: encrypt to these people instead.
        to: RecipientFlags,
        /// `--format age` (`Some(armor)`), or paracrypt's container (`None`).
        age: Option<bool>,
        /// `--provider`: who seals the chunks.
        provider: Provider,
    },
    /// `paracrypt decrypt` of a container or an age file (told apart by their first bytes).
    Decrypt {
        /// Where the key or password comes from.
        secret: SecretArgs,
        /// `-i`: identities, for files encrypted to recipients.
        identities: IdentityFlags,
        /// `--range OFFSET:LENGTH`.
        range: Option<(u64, u64)>,
        /// `--provider`: who opens the chunks.
        provider: Provider,
    },
}

/// A raw cipher keyed by a password, as `openssl enc -pass`: everything but the password.
#[derive(Clone, Debug)]
pub struct PasswordSpec {
    /// The cipher.
    pub name: RawCipherName,
    /// How the key and IV come from the password (`--pbkdf2`, `--iter`, `--md`).
    pub kdf: PasswordKdf,
    /// PKCS#7 padding (off with `--no-pad`).
    pub padding: bool,
    /// `--provider`.
    pub provider: Provider,
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// Bytes per chunk.
    pub chunk_size: ChunkSize,
    /// `--password-file`.
    pub secret: SecretArgs,
}

/// A raw cipher job: everything it needs but the data.
#[derive(Clone, Debug)]
pub struct RawSpec {
    /// The cipher, key, IV and padding.
    pub cipher: RawCipher,
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// Bytes per chunk.
    pub chunk_size: ChunkSize,
}

/// An operation with its key or password read: what a runner runs.
#[derive(Debug)]
pub enum Keyed {
    /// A raw cipher.
    Raw(RawSpec),
    /// A raw cipher keyed by a password.
    RawPassword(PasswordCipher, Direction, ChunkSize),
    /// The container, encrypting.
    Encrypt(Encryptor),
    /// An age file, encrypting.
    EncryptAge(agefile::Encryptor),
    /// Decrypting: the container, and the age reader when the secret can open age files (the
    /// input's first bytes choose); the range, if any.
    Decrypt(Decryptor, Option<agefile::Decryptor>, Option<(u64, u64)>),
}

impl Operation {
    /// Reads the key or password (`may_prompt`: on the terminal as a last resort): the
    /// operation, ready to run.
    pub fn keyed(&self, may_prompt: bool) -> Result<Keyed> {
        Ok(match self {
            Operation::Raw(raw) => Keyed::Raw(raw.clone()),
            Operation::RawPassword(spec) => {
                let confirm = spec.direction == Direction::Encrypt;
                let password = spec.secret.password(confirm, may_prompt)?;
                let cipher = PasswordCipher::new(spec.name, password.as_bytes(), spec.kdf)
                    .with_padding(spec.padding)
                    .with_provider(spec.provider);
                Keyed::RawPassword(cipher, spec.direction, spec.chunk_size)
            }
            Operation::Encrypt {
                suite,
                chunk_size,
                salt,
                secret,
                to,
                age,
                provider,
            } => {
                let secret = if to.is_empty() {
                    secret.secret(true, may_prompt)?
                } else {
                    Secret::from(to.read()?)
                };
                if let Some(armor) = age {
                    let recipients = match secret {
                        Secret::Recipients(recipients) => recipients,
                        Secret::Password(password, _) => {
                            Arc::new(Recipients::passphrase(passphrase(&password), None))
                        }
                        _ => return usage("--format age takes -r, -R or --passphrase"),
                    };
                    return Ok(Keyed::EncryptAge(
                        agefile::Encryptor::new(recipients)
                            .armor(*armor)
                            .with_provider(*provider),
                    ));
                }
                let mut encryptor = Encryptor::new(secret)
                    .suite(*suite)
                    .chunk_size(*chunk_size)
                    .with_provider(*provider);
                if let Some(salt) = salt {
                    encryptor = encryptor.fixed_salt_for_tests(*salt);
                }
                Keyed::Encrypt(encryptor)
            }
            Operation::Decrypt {
                secret,
                identities,
                range,
                provider,
            } => {
                let (container, age) = if identities.is_empty() {
                    let secret = secret.secret(false, may_prompt)?;
                    let age = match &secret {
                        Secret::Password(password, _) => Some(
                            agefile::Decryptor::new(Identities::passphrase(
                                passphrase(password),
                                None,
                            ))
                            .with_provider(*provider),
                        ),
                        _ => None,
                    };
                    (secret, age)
                } else {
                    let identities = Arc::new(identities.read()?);
                    let age = agefile::Decryptor::new(identities.clone()).with_provider(*provider);
                    (Secret::Identities(identities), Some(age))
                };
                let container = Decryptor::new(container).with_provider(*provider);
                Keyed::Decrypt(container, age, *range)
            }
        })
    }
}
