//! What `raw`, `encrypt` and `decrypt` resolve their flags into: one [`JobSpec`], which the
//! local runner or the distributed one (module `run`) carries out. Every flag is checked and
//! turned into its value once, when the spec is made.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use paracrypt_core::agefile::{self, AgeFormat};
use paracrypt_core::container::{Encryptor, SALT_LEN, Secret, Suite};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::pubkey::rsa::RsaScheme;
use paracrypt_core::raw::salted::{PasswordCipher, PasswordKdf};
use paracrypt_core::raw::{Direction, RawCipherName, RawRecipe};
use paracrypt_core::recipe::AnyDecryptor;
use paracrypt_core::recipient::Recipients;
use paracrypt_core::sign::{SigningKey, VerifyingKey};
use paracrypt_core::{Recipe, Runner};

use crate::cmd::signatures::{key_error_core, read_key_file};
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
    Raw(RawRecipe),
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
        /// `--sign KEY` (with `--rsa-scheme`): sign every chunk with this key.
        sign: Option<(PathBuf, RsaScheme)>,
    },
    /// `paracrypt decrypt` of a container or an age file (told apart by their first bytes).
    Decrypt {
        /// Where the key or password comes from.
        secret: SecretArgs,
        /// `-i`: identities, for files encrypted to recipients.
        identities: IdentityFlags,
        /// `--range OFFSET:LENGTH`.
        range: Option<(u64, u64)>,
        /// `--verify-with PUBKEY`: the file must be signed by this key.
        verify_with: Option<PathBuf>,
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
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// Bytes per chunk.
    pub chunk_size: ChunkSize,
    /// `--password-file`.
    pub secret: SecretArgs,
    /// `--fixed-salt` (tests only): encrypt under this salt instead of a random one.
    pub salt: Option<[u8; paracrypt_core::raw::salted::SALT_LEN]>,
}

/// An operation with its key or password read: what a runner runs.
pub struct Keyed {
    /// The recipe of the job.
    recipe: Box<dyn Recipe>,
    /// age's ASCII armor, which is read and written in order: the age encryptor that writes
    /// it, or the age decryptor that reads it when the input turns out to be armored.
    armor: Option<Armor>,
    /// Whether the chunks run in order on one thread (CBC encryption, RC4).
    pub serial: bool,
    /// The progress bar's label.
    pub label: &'static str,
    /// What the input must not be, checked from its first bytes before any output exists.
    refuse: Refuse,
    /// The decryptor, which says who signed what it opened (a clone sharing its record).
    opened: Option<AnyDecryptor>,
}

impl std::fmt::Debug for Keyed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyed")
            .field("serial", &self.serial)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// age armor around a recipe's stream.
enum Armor {
    Write(agefile::Encryptor),
    Read(agefile::Decryptor),
}

/// The inputs a job refuses, by their first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refuse {
    Nothing,
    /// A raw cipher given a key refuses `openssl enc`'s password files.
    Salted(RawCipherName),
    /// A decryption refuses what is neither a container nor an age file, and age files too
    /// when it has no age identity or passphrase (`age: false`).
    Decrypt {
        age: bool,
    },
}

/// How many bytes of the input [`Keyed::check`] looks at: enough to find age armor after the
/// blank lines it may follow.
pub const HEAD_LEN: usize = agefile::DETECT_LEN;

impl Keyed {
    fn new(recipe: impl Recipe + 'static, label: &'static str) -> Self {
        Keyed {
            recipe: Box::new(recipe),
            armor: None,
            serial: false,
            label,
            refuse: Refuse::Nothing,
            opened: None,
        }
    }

    /// After a decryption that succeeded: who signed the file, when it was a signed container
    /// (every chunk was verified against that key, and with `--verify-with` it is the given
    /// key), as a line for stderr.
    pub fn signer_note(&self) -> Option<String> {
        let decryptor = self.opened.as_ref()?;
        let signer = decryptor.signer()?;
        Some(if decryptor.expects_signer() {
            format!(
                "good signature: every chunk is signed by {}",
                signer.fingerprint()
            )
        } else {
            format!(
                "every chunk is signed by {} (not checked against a key you trust: give it with \
                 --verify-with PUBKEY)",
                signer.fingerprint()
            )
        })
    }

    /// The recipe the runner runs.
    pub fn recipe(&self) -> &dyn Recipe {
        &*self.recipe
    }

    /// Refuses an input whose first bytes (`head`, up to [`HEAD_LEN`] of them) this job cannot
    /// read, saying how to read it.
    pub fn check(&self, head: &[u8], input: &std::path::Path) -> Result<()> {
        match self.refuse {
            Refuse::Salted(cipher) if head.starts_with(paracrypt_core::raw::salted::MAGIC) => {
                refuse_salted(input, cipher)
            }
            Refuse::Decrypt { age } => {
                // A container shorter than its magic is the container's to call truncated.
                let magic = paracrypt_core::container::MAGIC;
                let container =
                    head.starts_with(magic) || (!head.is_empty() && magic.starts_with(head));
                let signer_required = self.opened.as_ref().is_some_and(|d| d.expects_signer());
                match agefile::detect(head) {
                    None if !container => Err(paracrypt_core::Error::NotEncrypted.into()),
                    // An age file has no signature: --verify-with refuses it as unsigned.
                    Some(_) if signer_required => Err(self
                        .opened
                        .as_ref()
                        .and_then(|d| d.pick(head).err())
                        .map_or_else(|| anyhow::anyhow!("the file is not signed"), Into::into)),
                    Some(_) if !age => crate::exit::usage(
                        "this is an age file: decrypt it with an identity (-i FILE) or its \
                         passphrase, not a key file",
                    ),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Whether this job must run in order as a stream: age armor, written, or read from an
    /// input that starts with `head`.
    pub fn in_order(&self, head: &[u8]) -> bool {
        match &self.armor {
            Some(Armor::Write(_)) => true,
            Some(Armor::Read(_)) => agefile::detect(head) == Some(AgeFormat::Armored),
            None => false,
        }
    }

    /// Runs a job that [`Keyed::in_order`] says streams: the age front door puts the armor
    /// around the same recipe.
    pub fn run_in_order(
        &self,
        runner: &Runner,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> paracrypt_core::Result<u64> {
        match &self.armor {
            Some(Armor::Write(age)) => age.encrypt_armored(runner, reader, writer),
            Some(Armor::Read(age)) => age.decrypt_armored(runner, reader, writer),
            None => runner.stream(self.recipe(), reader, writer),
        }
    }
}

/// Refuses an input that `openssl enc` encrypted with a password, and says how to read it.
fn refuse_salted(input: &std::path::Path, cipher: RawCipherName) -> Result<()> {
    let (what, file) = match input {
        path if path == std::path::Path::new("-") => ("the input".to_string(), "FILE".to_string()),
        path => (path.display().to_string(), path.display().to_string()),
    };
    anyhow::bail!(
        "{what} starts with `Salted__`: `openssl enc` encrypted it with a password, from which \
         openssl derives the key and IV; give paracrypt the password instead of -K: \
         `paracrypt raw -d -c {cipher} --password-file PASSWORD_FILE --pbkdf2 {file}` (with the \
         --iter and --md it was encrypted with; without --pbkdf2 for a file from `openssl enc` \
         without -pbkdf2)"
    )
}

impl Operation {
    /// Reads the key or password (`may_prompt`: on the terminal as a last resort): the
    /// operation, ready to run.
    pub fn keyed(&self, may_prompt: bool) -> Result<Keyed> {
        Ok(match self {
            Operation::Raw(raw) => Keyed {
                serial: !raw.is_parallel(),
                refuse: match raw.direction {
                    Direction::Decrypt => Refuse::Salted(raw.cipher.name()),
                    Direction::Encrypt => Refuse::Nothing,
                },
                ..Keyed::new(raw.clone(), "")
            },
            Operation::RawPassword(spec) => {
                let confirm = spec.direction == Direction::Encrypt;
                let password = spec.secret.password(confirm, may_prompt)?;
                let mut cipher = PasswordCipher::new(spec.name, password.as_bytes(), spec.kdf)
                    .with_padding(spec.padding);
                if let Some(salt) = spec.salt {
                    cipher = cipher.fixed_salt_for_tests(salt);
                }
                Keyed {
                    serial: !spec.name.runs_in_parallel(spec.direction),
                    ..Keyed::new(cipher.recipe(spec.direction, spec.chunk_size), "")
                }
            }
            Operation::Encrypt {
                suite,
                chunk_size,
                salt,
                secret,
                to,
                age,
                sign,
            } => {
                let signer = sign
                    .as_ref()
                    .map(|(path, scheme)| -> Result<SigningKey> {
                        SigningKey::from_key_file(&read_key_file(path)?, *scheme)
                            .map_err(key_error_core(path))
                    })
                    .transpose()?;
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
                    if signer.is_some() {
                        return usage("--sign applies to paracrypt's container, not --format age");
                    }
                    let encryptor = agefile::Encryptor::new(recipients);
                    return Ok(Keyed {
                        armor: armor.then(|| Armor::Write(encryptor.clone())),
                        ..Keyed::new(encryptor, "encrypting")
                    });
                }
                let mut encryptor = Encryptor::new(secret).suite(*suite).chunk_size(*chunk_size);
                if let Some(salt) = salt {
                    encryptor = encryptor.fixed_salt_for_tests(*salt);
                }
                if let Some(signer) = signer {
                    encryptor = encryptor.sign(signer);
                }
                Keyed::new(encryptor, "encrypting")
            }
            Operation::Decrypt {
                secret,
                identities,
                verify_with,
                ..
            } => {
                let expected = verify_with
                    .as_ref()
                    .map(|path| -> Result<VerifyingKey> {
                        VerifyingKey::from_key_file(&read_key_file(path)?, RsaScheme::Pkcs1v15)
                            .map_err(key_error_core(path))
                    })
                    .transpose()?;
                let secret = if identities.is_empty() {
                    secret.secret(false, may_prompt)?
                } else {
                    Secret::Identities(Arc::new(identities.read()?))
                };
                let mut decryptor = AnyDecryptor::new(secret);
                if let Some(expected) = expected {
                    decryptor = decryptor.verify_with(expected);
                }
                let age = decryptor.age().cloned();
                Keyed {
                    armor: age.clone().map(Armor::Read),
                    refuse: Refuse::Decrypt { age: age.is_some() },
                    opened: Some(decryptor.clone()),
                    ..Keyed::new(decryptor, "decrypting")
                }
            }
        })
    }

    /// `--range OFFSET:LENGTH`, when decrypting a range.
    pub fn range(&self) -> Option<(u64, u64)> {
        match self {
            Operation::Decrypt { range, .. } => *range,
            _ => None,
        }
    }
}
