//! Decrypting whatever arrives: a container or an age file, told apart by its first bytes.

use std::io::BufRead;
use std::sync::Arc;

use age::secrecy::SecretString;

use crate::agefile::{self, AgeFormat};
use crate::container::{self, Secret};
use crate::engine::Job;
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::recipe::Recipe;
use crate::recipient::Identities;

/// What an age file needs that a key is not.
const AGE_NEEDS: &str = crate::error::NEEDS_AGE;

/// Decrypts a paracrypt container, or an age file when the secret can open one, whichever the
/// input turns out to be: the recipe of every decryption [`Request`](super::Request) resolves.
///
/// A key opens containers only; a password opens containers (Argon2id) and age files (as age's
/// passphrase, scrypt); identities open containers encrypted to recipients and age files. The
/// input's first bytes ([`agefile::DETECT_LEN`] of them suffice) choose the format: see
/// [`AnyDecryptor::pick`]. Armored age files are read in order, as a stream: pass them to
/// [`AnyDecryptor::age`]'s [`agefile::Decryptor::decrypt_armored`].
///
/// ```
/// use paracrypt_core::container::{Encryptor, Secret};
/// use paracrypt_core::request::AnyDecryptor;
/// use paracrypt_core::recipient::Recipients;
/// use paracrypt_core::{agefile, Runner};
///
/// let runner = Runner::new();
/// let password = || Secret::password("correct horse");
/// let container = runner.vec(&Encryptor::new(password()), b"a container")?;
/// let passphrase = Recipients::passphrase("correct horse".to_owned().into(), Some(10));
/// let age = runner.vec(&agefile::Encryptor::new(passphrase), b"an age file")?;
///
/// let open = AnyDecryptor::new(password());
/// assert_eq!(runner.vec(&open, &container)?, b"a container");
/// assert_eq!(runner.vec(&open, &age)?, b"an age file");
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
#[derive(Clone)]
pub struct AnyDecryptor {
    container: container::Decryptor,
    age: Option<agefile::Decryptor>,
}

impl std::fmt::Debug for AnyDecryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnyDecryptor")
            .field("age", &self.age.is_some())
            .finish_non_exhaustive()
    }
}

impl AnyDecryptor {
    /// A decryptor for `secret`: containers with it, and age files too when the secret is a
    /// password (age's passphrase) or identities.
    pub fn new(secret: impl Into<Secret>) -> Self {
        let secret = secret.into();
        let age = match &secret {
            Secret::Password(password, _) => Some(agefile::Decryptor::new(Identities::passphrase(
                SecretString::from(password.to_string()),
                None,
            ))),
            Secret::Identities(identities) => Some(agefile::Decryptor::new(Arc::clone(identities))),
            Secret::Key(_) | Secret::Recipients(_) => None,
        };
        AnyDecryptor {
            container: container::Decryptor::new(secret),
            age,
        }
    }

    /// Requires the input to be a container signed by `key` (see
    /// [`container::Decryptor::verify_with`]): an age file, which has no signature, fails with
    /// [`Error::Unsigned`].
    pub fn verify_with(mut self, key: crate::sign::VerifyingKey) -> Self {
        self.container = self.container.verify_with(key);
        self
    }

    /// Whether [`AnyDecryptor::verify_with`] requires a signer.
    pub fn expects_signer(&self) -> bool {
        self.container.expected_signer().is_some()
    }

    /// The signer of the last signed container opened (see [`container::Decryptor::signer`]).
    pub fn signer(&self) -> Option<crate::sign::VerifyingKey> {
        self.container.signer()
    }

    /// The age decryptor, when the secret can open age files: what reads armored ones
    /// ([`agefile::Decryptor::decrypt_armored`]).
    pub fn age(&self) -> Option<&agefile::Decryptor> {
        self.age.as_ref()
    }

    /// Refuses an input that starts with `head` (its first [`agefile::DETECT_LEN`] bytes, or
    /// all of it) before any work, in this order: neither a container (nor the start of one,
    /// which the container calls truncated) nor an age file ([`Error::NotEncrypted`]); an age
    /// file when a signer is required ([`Error::Unsigned`]: age files have no signatures); an
    /// age file with a key ([`Error::WrongSecretKind`]).
    pub fn check(&self, head: &[u8]) -> Result<()> {
        let magic = container::MAGIC;
        let container = head.starts_with(magic) || (!head.is_empty() && magic.starts_with(head));
        if agefile::detect(head).is_none() {
            return if container {
                Ok(())
            } else if head.starts_with(crate::raw::salted::MAGIC) {
                Err(Error::OpensslFile)
            } else {
                Err(Error::NotEncrypted)
            };
        }
        if let Some(expected) = self.container.expected_signer() {
            return Err(Error::Unsigned {
                expected: expected.fingerprint(),
            });
        }
        match self.age {
            Some(_) => Ok(()),
            None => Err(Error::WrongSecretKind { needs: AGE_NEEDS }),
        }
    }

    /// The recipe for an input that starts with `head` (its first [`agefile::DETECT_LEN`]
    /// bytes, or all of it): the age decryptor for a binary age file, the container's
    /// otherwise (which names what is wrong with an input that is no container). An age file
    /// when a signer is required fails with [`Error::Unsigned`], with a key with
    /// [`Error::WrongSecretKind`], and an armored one with [`Error::Armor`] (it is read as a
    /// stream, through [`AnyDecryptor::age`]).
    pub fn pick(&self, head: &[u8]) -> Result<&dyn Recipe> {
        let Some(format) = agefile::detect(head) else {
            return Ok(&self.container);
        };
        self.check(head)?;
        match (format, &self.age) {
            (AgeFormat::Binary, Some(age)) => Ok(age),
            _ => Err(Error::Armor(
                "armored age files are read in order, as a stream".into(),
            )),
        }
    }
}

/// The recipe [`AnyDecryptor::pick`] chooses from the input's first bytes (or from the header,
/// which starts the same way).
impl Recipe for AnyDecryptor {
    fn first_job(
        &self,
        input: &mut dyn BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let head = input
            .fill_buf()
            .map_err(|e| Error::io("reading the header", e))?;
        self.pick(head)?.first_job(input, input_len, provider)
    }

    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        self.pick(header)?
            .job_from_header(header, key, input_len, provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runner;
    use crate::container::{Encryptor, Key};
    use crate::recipient::Recipients;

    #[test]
    fn a_key_opens_containers_and_refuses_age_files() {
        let runner = Runner::new();
        let key = Key::generate();
        let sealed = runner.vec(&Encryptor::new(key.clone()), b"data").unwrap();
        let open = AnyDecryptor::new(key);
        assert!(open.age().is_none());
        assert_eq!(runner.vec(&open, &sealed).unwrap(), b"data");
        let passphrase = Recipients::passphrase("pw".to_owned().into(), Some(2));
        let age = runner
            .vec(&agefile::Encryptor::new(passphrase), b"data")
            .unwrap();
        assert!(matches!(
            runner.vec(&open, &age),
            Err(Error::WrongSecretKind { .. })
        ));
    }

    #[test]
    fn armor_and_strangers_are_named() {
        let open = AnyDecryptor::new(Secret::password("pw"));
        assert!(matches!(
            open.pick(b"-----BEGIN AGE ENCRYPTED FILE-----\n"),
            Err(Error::Armor(_))
        ));
        let runner = Runner::new();
        assert!(matches!(
            runner.vec(&open, b"hello, not a file"),
            Err(Error::NotAContainer)
        ));
    }
}
