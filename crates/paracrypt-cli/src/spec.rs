//! What `raw`, `encrypt` and `decrypt` resolve their flags into: one [`JobSpec`], which the
//! local runner or the distributed one (module `run`) carries out. Every flag is checked and
//! turned into its value once, when the spec is made.

use std::path::PathBuf;

use anyhow::Result;
use paracrypt_core::container::{Decryptor, Encryptor, SALT_LEN, Suite};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::raw::{Direction, RawCipher};

use crate::flags::{FilesFlags, ThreadsFlag};
use crate::io::OutputPolicy;
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
    },
    /// `paracrypt decrypt`.
    Decrypt {
        /// Where the key or password comes from.
        secret: SecretArgs,
        /// `--range OFFSET:LENGTH`.
        range: Option<(u64, u64)>,
    },
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
    /// The container, encrypting.
    Encrypt(Encryptor),
    /// The container, decrypting (the range, if any).
    Decrypt(Decryptor, Option<(u64, u64)>),
}

impl Operation {
    /// Reads the key or password (`may_prompt`: on the terminal as a last resort): the
    /// operation, ready to run.
    pub fn keyed(&self, may_prompt: bool) -> Result<Keyed> {
        Ok(match self {
            Operation::Raw(raw) => Keyed::Raw(raw.clone()),
            Operation::Encrypt {
                suite,
                chunk_size,
                salt,
                secret,
            } => {
                let mut encryptor = Encryptor::new(secret.secret(true, may_prompt)?)
                    .suite(*suite)
                    .chunk_size(*chunk_size);
                if let Some(salt) = salt {
                    encryptor = encryptor.fixed_salt_for_tests(*salt);
                }
                Keyed::Encrypt(encryptor)
            }
            Operation::Decrypt { secret, range } => {
                Keyed::Decrypt(Decryptor::new(secret.secret(false, may_prompt)?), *range)
            }
        })
    }
}
