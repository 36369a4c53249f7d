//! The front door: what a caller asked for, and the first bytes of its input, become the one
//! job to run. Every front end — the CLI, the Python package, its Dask driver, `--distributed`
//! over MPI — asks here, so that what may be decrypted, signed or refused, and in which words,
//! is decided once.
//!
//! A [`Request`] is made from the caller's choices (the secret; for an encryption the
//! [`Sealing`]: format, armor, suite, chunk size, signing key; for a decryption the signer
//! required; for a raw cipher its key or password), and its constructors refuse combinations
//! no input can make sense of. [`Request::resolve`] then takes the input's first bytes (up to
//! [`HEAD_LEN`] of them) and how the job will be run ([`Driver`]) and returns the [`Resolved`]
//! job: the recipe, whether it runs in order (age's armor), and the refusals that depend on the
//! input, in this order: what is not an encrypted file at all, then a signer required of a file
//! that has no signature (before anything else about it, so that every front end and driver
//! refuses it alike), then a secret of the wrong kind, then what the driver cannot do.
//!
//! ```
//! use paracrypt_core::Runner;
//! use paracrypt_core::request::{Driver, Key, Request, Sealing, Secret};
//!
//! let key = Key::generate();
//! let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default())?;
//! let runner = Runner::new();
//! let sealed = runner.vec(seal.resolve(&[], Driver::Whole)?.recipe(), b"hello")?;
//!
//! let open = Request::decrypt(Secret::Key(key), None)?;
//! let job = open.resolve(&sealed, Driver::Whole)?;
//! assert_eq!(runner.vec(job.recipe(), &sealed)?, b"hello");
//!
//! // An age file, opened with a key: refused from its first bytes, before any work.
//! let refused = open.resolve(b"age-encryption.org/v1\n", Driver::Whole).unwrap_err();
//! assert!(refused.to_string().contains("not a key"));
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! Jobs run in parts on other processes (Dask tasks, [`share`]) are made again there from the
//! header and the job's shared key alone: the derived key material of one file, never the
//! caller's key file, password or identities.

mod ahead;
mod any;
mod resolved;
pub mod share;
mod verify;

use std::fs::File;
use std::sync::Arc;

use age::secrecy::SecretString;

pub use crate::container::{Key, Secret, Suite};
use crate::error::{Error, Result};
pub use crate::plan::ChunkSize;
use crate::raw::salted::{self as salted, PasswordCipher};
pub use crate::raw::salted::{DEFAULT_ITER, Digest, PasswordKdf};
pub use crate::raw::{Direction, Hazard, RawCipherName};
use crate::raw::{RawCipher, RawRecipe};
use crate::recipient::Recipients;
use crate::sign::{SigningKey, VerifyingKey};
use crate::{agefile, container};
pub use ahead::open_ahead;
pub use any::AnyDecryptor;
pub use resolved::{Resolved, Signer, Writer};
pub use verify::{Verified, is_encrypted};

/// How many of the input's first bytes [`Request::resolve`] looks at: enough to tell every
/// format apart, age's armor after the blank lines it may follow included.
pub const HEAD_LEN: usize = agefile::DETECT_LEN;

/// The file format an encryption writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// paracrypt's authenticated container (`docs/FORMAT.md`).
    #[default]
    Container,
    /// age v1 (ChaCha20-Poly1305 in 64 KiB chunks), to recipients or a passphrase.
    Age,
}

impl Format {
    /// The payload chunk the format fixes, whatever the writer chose: age's 64 KiB; `None` for
    /// the container, whose header says.
    pub const fn fixed_chunk(self) -> Option<usize> {
        match self {
            Format::Container => None,
            Format::Age => Some(crate::agefile::CHUNK_SIZE),
        }
    }
}

impl std::str::FromStr for Format {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        match name {
            "paracrypt" | "container" => Ok(Format::Container),
            "age" => Ok(Format::Age),
            other => Err(Error::Request(format!(
                "unknown format `{}` (valid: paracrypt, age)",
                other.escape_debug()
            ))),
        }
    }
}

/// What an encryption writes, as the caller chose it: `None` is the format's default.
#[derive(Clone, Debug, Default)]
pub struct Sealing {
    /// The container (the default) or age.
    pub format: Format,
    /// age's ASCII armor (`age -a`).
    pub armor: bool,
    /// The container's suite (default AES-256-GCM).
    pub suite: Option<Suite>,
    /// The container's plaintext bytes per chunk (default 1 MiB).
    pub chunk_size: Option<ChunkSize>,
    /// Sign every chunk with this key (container version 3).
    pub sign: Option<SigningKey>,
}

impl Sealing {
    /// Refuses what no secret makes sense of: armor for the container, a suite, chunk size or
    /// signing key for age (age files are ChaCha20-Poly1305 in 64 KiB chunks, unsigned).
    /// [`Request::encrypt`] checks it; a front end may check it sooner, before it asks for a
    /// password.
    pub fn check(&self) -> Result<()> {
        match self.format {
            Format::Container if self.armor => {
                refuse("armor applies to age files, not paracrypt's container")
            }
            Format::Age if self.suite.is_some() || self.chunk_size.is_some() => refuse(
                "a suite and a chunk size apply to paracrypt's container (age files are \
                 ChaCha20-Poly1305 in 64 KiB chunks)",
            ),
            Format::Age if self.sign.is_some() => refuse(
                "signing applies to paracrypt's container (version 3): age files have no \
                 signatures",
            ),
            _ => Ok(()),
        }
    }
}

/// How a resolved job will be run: what its driver cannot do is refused before any output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The whole input, by any driver that can also run in order: file to file, a stream, into
    /// a new buffer (age's armor is read and written in order, as a stream).
    Whole,
    /// A byte range of the output, from only the chunks that cover it.
    Range,
    /// Into a buffer the caller sized from the plan, before any output exists.
    Buffer,
    /// In parts, on other processes (MPI ranks, Dask tasks).
    Distributed,
}

impl Driver {
    /// Why this driver cannot run age's armor (read and written in order, its size unknown
    /// until its end), or `None` when it can.
    pub(crate) fn refuses_armor(self) -> Option<&'static str> {
        match self {
            Driver::Whole => None,
            Driver::Range => Some(
                "a range needs a container or a binary age file: armor is read in order, from its \
                 start",
            ),
            Driver::Buffer => Some(
                "armor is read and written in order and its size is known only at its end: it \
                 cannot go into a buffer sized beforehand",
            ),
            Driver::Distributed => Some(
                "a job run in parts takes containers and binary age files: armor is read and \
                 written in order, on one process",
            ),
        }
    }
}

/// What a caller asks for: an encryption, a decryption or a raw cipher, with its secret and
/// options, checked (see the [module](self)).
#[derive(Clone, Debug)]
pub struct Request(Kind);

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// paracrypt's container or an age file.
    Encrypt {
        secret: Secret,
        format: Format,
        armor: bool,
        suite: Suite,
        chunk_size: ChunkSize,
        sign: Option<SigningKey>,
        /// Test builds only: a fixed salt.
        salt: Option<[u8; container::SALT_LEN]>,
    },
    /// A container or an age file, whichever the input is.
    Decrypt {
        secret: Secret,
        verify_with: Option<VerifyingKey>,
    },
    /// A raw cipher with its key and IV.
    Raw(RawRecipe),
    /// An `openssl enc` password file.
    Password {
        cipher: PasswordCipher,
        direction: Direction,
        chunk_size: ChunkSize,
    },
}

/// A refusal of the request as made (a usage error).
fn refuse<T>(why: impl Into<String>) -> Result<T> {
    Err(Error::Request(why.into()))
}

impl Request {
    /// An encryption with `secret` (a key, a password, or recipients) as `sealing` says.
    ///
    /// Refused: identities (they decrypt; encrypt to their recipients), armor for the
    /// container, a suite, chunk size or signing key for age (age files are ChaCha20-Poly1305
    /// in 64 KiB chunks, unsigned), and a key for age (age encrypts to recipients or with a
    /// passphrase).
    pub fn encrypt(secret: Secret, sealing: Sealing) -> Result<Self> {
        if let Secret::Identities(_) = secret {
            return refuse(
                "identities decrypt: encrypt to their recipients (public keys), a key or a password",
            );
        }
        sealing.check()?;
        if sealing.format == Format::Age && matches!(secret, Secret::Key(_)) {
            return refuse("age files are encrypted to recipients or with a passphrase, not a key");
        }
        Ok(Request(Kind::Encrypt {
            secret,
            format: sealing.format,
            armor: sealing.armor,
            suite: sealing.suite.unwrap_or_default(),
            chunk_size: sealing.chunk_size.unwrap_or(ChunkSize::DEFAULT),
            sign: sealing.sign,
            salt: None,
        }))
    }

    /// A decryption of a container or an age file with `secret` (a key, a password, or
    /// identities), requiring a signature by `verify_with` when given.
    pub fn decrypt(secret: Secret, verify_with: Option<VerifyingKey>) -> Result<Self> {
        if let Secret::Recipients(_) = secret {
            return refuse("recipients (public keys) encrypt: decrypt with their identities");
        }
        Ok(Request(Kind::Decrypt {
            secret,
            verify_with,
        }))
    }

    /// A raw cipher, byte-compatible with `openssl enc -K KEY -iv IV` (`padding: false`:
    /// `-nopad`, ECB and CBC only).
    pub fn raw(
        direction: Direction,
        name: RawCipherName,
        key: &[u8],
        iv: Option<&[u8]>,
        padding: bool,
        chunk_size: ChunkSize,
    ) -> Result<Self> {
        check_padding(name, padding)?;
        let cipher = RawCipher::new(name, key, iv)?.with_padding(padding);
        Ok(Request(Kind::Raw(cipher.recipe(direction, chunk_size))))
    }

    /// An `openssl enc -pass` password file of `name` (`Salted__`), its key and IV from
    /// `password` through `kdf`. Writing one with the legacy derivation is refused (one hash
    /// per password guess): it is read, never written.
    pub fn raw_password(
        direction: Direction,
        name: RawCipherName,
        password: &[u8],
        kdf: PasswordKdf,
        padding: bool,
        chunk_size: ChunkSize,
    ) -> Result<Self> {
        if password.is_empty() {
            return refuse("the password is empty");
        }
        Self::check_password_file(direction, name, kdf, padding)?;
        Ok(Request(Kind::Password {
            cipher: PasswordCipher::new(name, password, kdf).with_padding(padding),
            direction,
            chunk_size,
        }))
    }

    /// Refuses the options of a password file that no password makes sense of: padding off
    /// for a mode that has none, PBKDF2 with no iteration, and writing with the legacy
    /// derivation. [`Request::raw_password`] checks them; a front end may sooner, before it
    /// asks for the password.
    pub fn check_password_file(
        direction: Direction,
        name: RawCipherName,
        kdf: PasswordKdf,
        padding: bool,
    ) -> Result<()> {
        check_padding(name, padding)?;
        if let PasswordKdf::Pbkdf2 { iter: 0, .. } = kdf {
            return refuse("PBKDF2 needs at least 1 iteration");
        }
        if kdf.is_weak() && direction == Direction::Encrypt {
            return refuse(
                "the legacy EVP_BytesToKey derivation (openssl enc without -pbkdf2) is weak: one \
                 hash per password guess; paracrypt reads such files but writes only PBKDF2 ones",
            );
        }
        Ok(())
    }

    /// **Test builds only.** Encrypts under `salt` instead of a fresh random one (a container's
    /// 32 bytes, or a password file's 8), so that the output is reproducible. Reusing a salt
    /// with the same secret reuses the keystream: this exists only with the `test-hooks`
    /// feature, which no default build enables.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn with_fixed_salt_for_tests(mut self, fixed: &[u8]) -> Result<Self> {
        match &mut self.0 {
            Kind::Encrypt {
                format: Format::Container,
                salt,
                ..
            } => {
                *salt = Some(fixed.try_into().map_err(|_| {
                    Error::Request(format!("a fixed salt needs {} bytes", container::SALT_LEN))
                })?);
            }
            Kind::Password {
                cipher,
                direction: Direction::Encrypt,
                ..
            } => {
                let fixed: [u8; salted::SALT_LEN] = fixed.try_into().map_err(|_| {
                    Error::Request(format!("a fixed salt needs {} bytes", salted::SALT_LEN))
                })?;
                *cipher = cipher.clone().fixed_salt_for_tests(fixed);
            }
            _ => return refuse("a fixed salt applies to encryption (a file holds its salt)"),
        }
        Ok(self)
    }

    /// What was asked for, for the drivers that make several jobs of one request (a tree:
    /// [`crate::tree`]).
    pub(crate) fn kind(&self) -> &Kind {
        &self.0
    }

    /// Whether this request writes ciphertext (an encryption, either format or a raw cipher).
    pub fn encrypts(&self) -> bool {
        match &self.0 {
            Kind::Encrypt { .. } => true,
            Kind::Decrypt { .. } => false,
            Kind::Raw(raw) => raw.direction == Direction::Encrypt,
            Kind::Password { direction, .. } => *direction == Direction::Encrypt,
        }
    }

    /// The warnings this request deserves, one line each: legacy algorithms and modes, no
    /// integrity, a weak key derivation. Front ends show them (stderr, Python warnings).
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
                        "{name} uses ECB mode, which shows patterns in the data; use it only for \
                         compatibility"
                    ),
                })
                .collect();
            warnings.push(
                "raw output has no integrity protection; paracrypt's container authenticates \
                 every chunk"
                    .into(),
            );
            warnings
        };
        match &self.0 {
            Kind::Encrypt {
                format: Format::Container,
                suite,
                ..
            } if suite.is_legacy() => vec![format!(
                "{suite} is a legacy suite, kept for compatibility studies; prefer aes-256-gcm"
            )],
            Kind::Encrypt { .. } | Kind::Decrypt { .. } => Vec::new(),
            Kind::Raw(recipe) => raw(recipe.cipher.name()),
            Kind::Password { cipher, .. } => {
                let mut warnings = raw(cipher.name());
                if cipher.kdf().is_weak() {
                    warnings.push(
                        "without PBKDF2 the key comes from openssl's legacy EVP_BytesToKey, which \
                         is weak (one hash per password guess): re-encrypt the data with PBKDF2"
                            .into(),
                    );
                }
                warnings
            }
        }
    }

    /// The one job for an input whose first bytes are `head` (up to [`HEAD_LEN`] of them, or
    /// all of a shorter input; an encryption looks at none), run by `driver`. The refusals that
    /// depend on the input happen here, before any output: see the [module](self).
    pub fn resolve(&self, head: &[u8], driver: Driver) -> Result<Resolved> {
        let head = &head[..head.len().min(HEAD_LEN)];
        let resolved = match &self.0 {
            Kind::Encrypt {
                secret,
                format: Format::Container,
                suite,
                chunk_size,
                sign,
                salt: _salt,
                ..
            } => {
                let mut encryptor = container::Encryptor::new(secret.clone())
                    .suite(*suite)
                    .chunk_size(*chunk_size);
                #[cfg(any(test, feature = "test-hooks"))]
                if let Some(salt) = _salt {
                    encryptor = encryptor.fixed_salt_for_tests(*salt);
                }
                if let Some(key) = sign {
                    encryptor = encryptor.sign(key.clone());
                }
                Resolved::new(encryptor)
            }
            Kind::Encrypt {
                secret,
                format: Format::Age,
                armor,
                ..
            } => {
                let recipients = match secret {
                    Secret::Recipients(recipients) => Arc::clone(recipients),
                    Secret::Password(password, _) => Arc::new(Recipients::passphrase(
                        SecretString::from(password.to_string()),
                        None,
                    )),
                    Secret::Key(_) | Secret::Identities(_) => {
                        unreachable!("refused by Request::encrypt")
                    }
                };
                let encryptor = agefile::Encryptor::new(recipients);
                if *armor && let Some(why) = driver.refuses_armor() {
                    return refuse(why);
                }
                Resolved::age_writer(encryptor, *armor)
            }
            Kind::Decrypt {
                secret,
                verify_with,
            } => {
                let mut decryptor = AnyDecryptor::new(secret.clone());
                if let Some(key) = verify_with {
                    decryptor = decryptor.verify_with(key.clone());
                }
                // What is neither format, a file with no signature when one is required, a
                // secret that cannot open it: `pick` decides, in that order.
                decryptor.check(head)?;
                let armored = agefile::detect(head) == Some(agefile::AgeFormat::Armored);
                if armored && let Some(why) = driver.refuses_armor() {
                    return refuse(why);
                }
                Resolved::decryptor(decryptor, armored)
            }
            Kind::Raw(recipe) => {
                if recipe.direction == Direction::Decrypt && head.starts_with(salted::MAGIC) {
                    return Err(Error::SaltedFile);
                }
                Resolved::new(recipe.clone()).serial(!recipe.is_parallel())
            }
            Kind::Password {
                cipher,
                direction,
                chunk_size,
            } => {
                let serial = !cipher.name().runs_in_parallel(*direction);
                Resolved::new(cipher.clone().recipe(*direction, *chunk_size)).serial(serial)
            }
        };
        Ok(resolved)
    }

    /// The job as another process of a distributed run makes it from the header that the
    /// resolved job made (an MPI rank that is not rank 0): no input is looked at; the
    /// refusals that depend on the input were made where it was resolved, and what the header
    /// alone tells is checked again as the job is made from it
    /// ([`Recipe::job_from_header`](crate::Recipe::job_from_header)).
    pub fn for_header(&self) -> Result<Resolved> {
        match &self.0 {
            Kind::Decrypt {
                secret,
                verify_with,
            } => {
                let mut decryptor = AnyDecryptor::new(secret.clone());
                if let Some(key) = verify_with {
                    decryptor = decryptor.verify_with(key.clone());
                }
                Ok(Resolved::decryptor(decryptor, false))
            }
            _ => self.resolve(&[], Driver::Distributed),
        }
    }
}

/// `padding: false` applies to the padded modes only.
fn check_padding(name: RawCipherName, padding: bool) -> Result<()> {
    if !padding && !name.is_padded_mode() {
        return refuse(format!(
            "turning padding off applies to ECB and CBC only; {name} never pads"
        ));
    }
    Ok(())
}

/// Opens the input file `path` for reading, as every front end does for one file: a directory
/// (or a socket) is refused in one line that says what to do with it, before anything is read.
///
/// # Errors
/// [`Error::Request`] (a usage error) for a directory or a socket; [`Error::Io`] (`cannot read
/// PATH`) when it cannot be opened.
pub fn open_input(path: &std::path::Path) -> Result<File> {
    use std::os::unix::fs::FileTypeExt;
    let cannot = |e| Error::io(format!("cannot read {}", path.display()), e);
    // A socket is named before it is opened (opening one fails, saying less).
    if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        return refuse(format!("{} is a socket, not a file", path.display()));
    }
    let file = File::open(path).map_err(cannot)?;
    if file.metadata().map_err(cannot)?.is_dir() {
        return refuse(format!(
            "{} is a directory: a directory is encrypted, decrypted and verified as a tree \
             (--recursive; Python: encrypt_tree, decrypt_tree, verify_tree)",
            path.display()
        ));
    }
    Ok(file)
}

/// The first [`HEAD_LEN`] bytes of `file` (fewer when it is shorter), read at offset 0 with its
/// cursor left alone: what [`Request::resolve`] looks at.
pub fn head_of(file: &File) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut head = vec![0u8; HEAD_LEN];
    let mut filled = 0;
    while filled < head.len() {
        match file.read_at(&mut head[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading the header", e)),
        }
    }
    head.truncate(filled);
    Ok(head)
}

#[cfg(test)]
mod tests {
    //! The front door's refusals, each at the door itself (the CLI's and Python's tests run the
    //! same rows through their own doors: tests/refusals/table.json).
    use super::*;
    use crate::recipient::{Identities, IdentityKind, generate_identity};
    use crate::{ErrorKind, Runner};

    fn refused<T: std::fmt::Debug>(made: Result<T>, words: &str) {
        match made {
            Ok(made) => panic!("not refused ({words}): {made:?}"),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Usage, "{e}");
                assert!(e.to_string().contains(words), "{e}");
            }
        }
    }

    /// An age identity and its recipients, as a caller makes them.
    fn people() -> (Arc<Recipients>, Arc<Identities>) {
        let (identity, recipient) = generate_identity(IdentityKind::X25519);
        let mut recipients = Recipients::new();
        recipients.add(&recipient, "recipient 1").unwrap();
        let mut identities = Identities::new();
        identities.add_file("me.key", identity.as_bytes()).unwrap();
        (Arc::new(recipients), Arc::new(identities))
    }

    fn age() -> Sealing {
        Sealing {
            format: Format::Age,
            ..Sealing::default()
        }
    }

    #[test]
    fn an_encryption_refuses_what_no_secret_makes_sense_of() {
        let (recipients, identities) = people();
        let key = || Secret::Key(Key::generate());
        refused(
            Request::encrypt(Secret::Identities(identities), Sealing::default()),
            "identities decrypt",
        );
        refused(Request::encrypt(key(), age()), "not a key");
        let armored = Sealing {
            armor: true,
            ..Sealing::default()
        };
        refused(
            Request::encrypt(key(), armored),
            "armor applies to age files",
        );
        let suite = Sealing {
            suite: Some(Suite::ChaCha20Poly1305),
            ..age()
        };
        refused(
            Request::encrypt(Secret::Recipients(recipients.clone()), suite),
            "a suite and a chunk size apply to paracrypt's container",
        );
        let chunk = Sealing {
            chunk_size: Some(ChunkSize::DEFAULT),
            ..age()
        };
        refused(
            Request::encrypt(Secret::Recipients(recipients.clone()), chunk),
            "chunk size",
        );
        let signed = Sealing {
            sign: Some(SigningKey::generate_ed25519()),
            ..age()
        };
        refused(
            Request::encrypt(Secret::Recipients(recipients.clone()), signed),
            "age files have no signatures",
        );
        // What is allowed is a request that encrypts.
        let fine = Request::encrypt(Secret::Recipients(recipients), age()).unwrap();
        assert!(fine.encrypts());
        assert!(fine.warnings().is_empty());
    }

    #[test]
    fn a_decryption_refuses_recipients_and_resolves_by_the_first_bytes() {
        let (recipients, identities) = people();
        refused(
            Request::decrypt(Secret::Recipients(recipients.clone()), None),
            "recipients (public keys) encrypt",
        );
        let request = Request::decrypt(Secret::Identities(identities), None).unwrap();
        assert!(!request.encrypts());
        // Neither format: named as such, a data error.
        let e = request.resolve(b"plain text", Driver::Whole).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Data, "{e}");
        assert!(
            e.to_string().starts_with("not a paracrypt or age file"),
            "{e}"
        );
        // Armor is read in order: every driver that needs positions refuses it, before output.
        let mut armored = Vec::new();
        agefile::Encryptor::new(recipients)
            .encrypt_armored(&Runner::new(), &mut &b"hello"[..], &mut armored)
            .unwrap();
        assert!(request.resolve(&armored, Driver::Whole).is_ok());
        for (driver, words) in [
            (
                Driver::Range,
                "a range needs a container or a binary age file",
            ),
            (Driver::Buffer, "cannot go into a buffer sized beforehand"),
            (Driver::Distributed, "a job run in parts takes containers"),
        ] {
            refused(request.resolve(&armored, driver), words);
        }
        // A signer required of an age file, which cannot carry one.
        let signer = SigningKey::generate_ed25519().verifying_key();
        let (_, identities) = people();
        let strict = Request::decrypt(Secret::Identities(identities), Some(signer)).unwrap();
        let e = strict.resolve(&armored, Driver::Whole).unwrap_err();
        assert_ne!(e.kind(), ErrorKind::Io, "{e}");
    }

    #[test]
    fn raw_ciphers_and_password_files_refuse_what_openssl_would_not_make() {
        let ctr: RawCipherName = "aes-256-ctr".parse().unwrap();
        let ecb: RawCipherName = "aes-128-ecb".parse().unwrap();
        let chunk = ChunkSize::DEFAULT;
        refused(
            Request::raw(
                Direction::Encrypt,
                ctr,
                &[0; 32],
                Some(&[0; 16]),
                false,
                chunk,
            ),
            "turning padding off applies to ECB and CBC only",
        );
        let pbkdf2 = |iter| PasswordKdf::Pbkdf2 {
            iter,
            md: Digest::Sha256,
        };
        let legacy = PasswordKdf::Legacy { md: Digest::Sha256 };
        refused(
            Request::raw_password(Direction::Encrypt, ecb, b"", pbkdf2(1), true, chunk),
            "the password is empty",
        );
        refused(
            Request::raw_password(Direction::Encrypt, ecb, b"pw", pbkdf2(0), true, chunk),
            "PBKDF2 needs at least 1 iteration",
        );
        refused(
            Request::raw_password(Direction::Encrypt, ecb, b"pw", legacy, true, chunk),
            "paracrypt reads such files but writes only PBKDF2 ones",
        );
        // Read, with every warning it deserves: ECB, no integrity, the weak derivation.
        let read = Request::raw_password(Direction::Decrypt, ecb, b"pw", legacy, true, chunk);
        let warnings = read.unwrap().warnings();
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("uses ECB mode"), "{warnings:?}");
        assert!(warnings[2].contains("EVP_BytesToKey"), "{warnings:?}");
        // A raw decryption of a password file is pointed at the password file's reader.
        let raw = Request::raw(
            Direction::Decrypt,
            ctr,
            &[0; 32],
            Some(&[0; 16]),
            true,
            chunk,
        );
        let e = raw
            .unwrap()
            .resolve(b"Salted__12345678", Driver::Whole)
            .unwrap_err();
        assert!(matches!(e, Error::SaltedFile), "{e}");
    }

    #[test]
    fn a_legacy_suite_warns_and_a_fixed_salt_is_for_encryption_only() {
        let legacy = Sealing {
            suite: Some(Suite::DesEde3CbcHmacSha256),
            ..Sealing::default()
        };
        let request = Request::encrypt(Secret::Key(Key::generate()), legacy).unwrap();
        assert_eq!(request.warnings().len(), 1);
        let decrypt = Request::decrypt(Secret::Key(Key::generate()), None).unwrap();
        refused(
            decrypt.with_fixed_salt_for_tests(&[0; 32]),
            "a fixed salt applies to encryption",
        );
    }
}
