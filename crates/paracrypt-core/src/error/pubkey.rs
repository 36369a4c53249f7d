//! Errors of the public-key work: each variant says what failed, in one line.
//!
//! Re-exported as `paracrypt_core::pubkey::Error`; defined below both `pubkey` and `provider`
//! (whose public-key entries return it), so that the provider knows nothing above it.

use std::io;

/// `Result` with the public-key [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the public-key work can fail with.
///
/// A signature that does not verify is not an error: verification returns `false`. Messages are
/// one line; the CLI prints them as they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a key in any form paracrypt reads (PEM or DER: PKCS#8, SPKI, PKCS#1,
    /// SEC1).
    #[error("not a key: {reason}")]
    KeyFormat {
        /// What was wrong, e.g. `no PEM block found` or `bad PKCS#8 structure`.
        reason: String,
    },
    /// A well-formed key of another kind than the operation needs.
    #[error("wrong key type: expected {expected}, found {found}")]
    WrongKeyType {
        /// What the operation needs, e.g. `an RSA private key`.
        expected: &'static str,
        /// What the file holds, e.g. `an EC (P-256) public key`.
        found: String,
    },
    /// A key paracrypt understands but does not support (encrypted, another curve, a size).
    #[error("unsupported key: {reason}")]
    UnsupportedKey {
        /// Why, with what to do instead where there is something.
        reason: String,
    },
    /// An RSA size that key generation does not offer.
    #[error("unsupported RSA key size {bits} (valid: 2048, 3072, 4096)")]
    KeySize {
        /// The size that was asked for.
        bits: usize,
    },
    /// The message is longer than RSA-OAEP can carry with this key.
    #[error(
        "message of {len} bytes is too long for RSA-OAEP-SHA256 with a {bits}-bit key \
         (at most {max} bytes; encrypt a symmetric key, not the data)"
    )]
    MessageTooLong {
        /// The message length.
        len: usize,
        /// The most this key can encrypt.
        max: usize,
        /// The key size in bits.
        bits: usize,
    },
    /// RSA-OAEP decryption failed. Deliberately says no more (see the Marvin note in
    /// [`crate::pubkey`]).
    #[error("RSA-OAEP decryption failed (wrong key or damaged ciphertext)")]
    Decryption,
    /// The private-key result did not pass its public-key re-check: a fault (or a bug) was
    /// caught and nothing was released.
    #[error("the RSA private operation failed its public-key re-check; nothing was released")]
    FaultDetected,
    /// An RSA operation failed inside the `rsa` crate.
    #[error("RSA {what} failed: {source}")]
    Rsa {
        /// What paracrypt was doing, e.g. `PSS signing`.
        what: &'static str,
        /// The crate's error.
        #[source]
        source: rsa::Error,
    },
    /// The cryptographic provider failed internally (an allocation in aws-lc, say): not a
    /// problem with the key or the input.
    #[error("cryptographic provider failure: {what}")]
    Provider {
        /// Which call failed.
        what: &'static str,
    },
    /// An I/O error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What paracrypt was doing, e.g. `hashing data.bin`.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Wraps an `rsa` crate error with what was being done.
    pub(crate) fn rsa(what: &'static str) -> impl FnOnce(rsa::Error) -> Self {
        move |source| Error::Rsa { what, source }
    }

    /// A [`Error::KeyFormat`] with `reason`.
    pub(crate) fn format(reason: impl Into<String>) -> Self {
        Error::KeyFormat {
            reason: reason.into(),
        }
    }
}
