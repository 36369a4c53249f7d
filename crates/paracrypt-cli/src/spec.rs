//! What `raw`, `encrypt` and `decrypt` resolve their flags into: one [`JobSpec`], which the
//! local runner or the distributed one (module `run`) carries out. Every flag is checked and
//! turned into its value once, when the spec is made; the secret is read, and the core's
//! [`Request`] made (every policy decision is the core's: `paracrypt_core::request`), only when
//! the job runs, after the output was checked, so that a prompt never precedes a refusal.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use paracrypt_core::request::{
    ChunkSize, Direction, PasswordKdf, RawCipherName, Request, Sealing, Secret,
};

use crate::exit::usage;
use crate::flags::{FilesFlags, ThreadsFlag};
use crate::io::OutputPolicy;
use crate::people::{IdentityFlags, RecipientFlags};
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
    /// Warnings of the command line's own (a fixed salt, in test builds), printed once with
    /// the request's.
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

/// What a job does, with everything but its secret.
#[derive(Debug)]
pub enum Operation {
    /// `paracrypt raw -K`: the request, made from the flags (its key is a flag).
    Raw {
        /// The request.
        request: Request,
        /// Its cipher, for the hints of the command line.
        cipher: RawCipherName,
    },
    /// `paracrypt raw --password-file`: an `openssl enc` password file (`Salted__`).
    RawPassword(PasswordSpec),
    /// `paracrypt encrypt`.
    Encrypt {
        /// Format, armor, suite, chunk size and `--sign`'s key, checked.
        sealing: Sealing,
        /// Where the key or password comes from.
        secret: SecretArgs,
        /// `-r` and `-R`: encrypt to these people instead.
        to: RecipientFlags,
        /// `--fixed-salt` (test builds only).
        salt: Option<Vec<u8>>,
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
    /// `--fixed-salt` (test builds only).
    pub salt: Option<Vec<u8>>,
}

impl Operation {
    /// A decryption (`what`: what the command does with it, for the refusal: `decrypt`, `open
    /// a tree`): with the identities of -i, or with the key or password of `secret`, not both.
    pub fn decrypt(
        what: &str,
        secret: SecretArgs,
        identities: IdentityFlags,
        range: Option<(u64, u64)>,
        verify_with: Option<PathBuf>,
    ) -> Result<Operation> {
        if !identities.is_empty() && (secret.key_file.is_some() || secret.password_file.is_some()) {
            return usage(format!(
                "{what} with identities (-i) or with a key or password, not both"
            ));
        }
        Ok(Operation::Decrypt {
            secret,
            identities,
            range,
            verify_with,
        })
    }

    /// Reads the key, password, identities or signing key (`may_prompt`: a password on the
    /// terminal as a last resort) and makes the core's request.
    pub fn request(&self, may_prompt: bool) -> Result<Request> {
        let request = match self {
            Operation::Raw { request, .. } => return Ok(request.clone()),
            Operation::RawPassword(spec) => {
                let confirm = spec.direction == Direction::Encrypt;
                let password = spec.secret.password(confirm, may_prompt)?;
                let request = Request::raw_password(
                    spec.direction,
                    spec.name,
                    password.as_bytes(),
                    spec.kdf,
                    spec.padding,
                    spec.chunk_size,
                )?;
                with_salt(request, spec.salt.as_deref())?
            }
            Operation::Encrypt {
                sealing,
                secret,
                to,
                salt,
            } => {
                let secret = if to.is_empty() {
                    secret.secret(true, may_prompt)?
                } else {
                    Secret::Recipients(Arc::new(to.read()?))
                };
                with_salt(Request::encrypt(secret, sealing.clone())?, salt.as_deref())?
            }
            Operation::Decrypt {
                secret,
                identities,
                verify_with,
                ..
            } => {
                let expected = verify_with
                    .as_deref()
                    .map(paracrypt_core::sign::VerifyingKey::read)
                    .transpose()?;
                let secret = identities.or_else(|| secret.secret(false, may_prompt))?;
                Request::decrypt(secret, expected)?
            }
        };
        Ok(request)
    }

    /// `--range OFFSET:LENGTH`, when decrypting a range.
    pub fn range(&self) -> Option<(u64, u64)> {
        match self {
            Operation::Decrypt { range, .. } => *range,
            _ => None,
        }
    }

    /// The progress bar's label.
    pub fn label(&self) -> &'static str {
        match self {
            Operation::Encrypt { .. } => "encrypting",
            Operation::Decrypt { .. } => "decrypting",
            Operation::Raw { .. } | Operation::RawPassword(_) => "",
        }
    }
}

/// `--fixed-salt`: only a test build has it (the `test-hooks` feature; the flag does not
/// exist otherwise).
fn with_salt(request: Request, salt: Option<&[u8]>) -> Result<Request> {
    match salt {
        None => Ok(request),
        #[cfg(feature = "test-hooks")]
        Some(salt) => Ok(request.with_fixed_salt_for_tests(salt)?),
        #[cfg(not(feature = "test-hooks"))]
        Some(_) => unreachable!("--fixed-salt exists only in test builds"),
    }
}
