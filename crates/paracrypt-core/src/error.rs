//! The library's typed errors: each variant says what failed and, where it helps, which chunk.

use std::io;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything paracrypt's core can fail with.
///
/// Messages are one line, name the problem and, where there is a fixed set of valid choices,
/// list them. The CLI prints them as they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A cipher or suite name that is not known.
    #[error("unknown cipher `{name}` (valid: {valid})")]
    UnknownCipher {
        /// What the user asked for.
        name: String,
        /// The accepted names, comma separated.
        valid: String,
    },
    /// A key of the wrong length for the chosen cipher.
    #[error("{cipher} needs a key of {expected}, got {got} bytes")]
    KeyLength {
        /// The cipher's name.
        cipher: &'static str,
        /// The accepted length(s), e.g. `32 bytes` or `4 to 56 bytes`.
        expected: &'static str,
        /// The length that was given.
        got: usize,
    },
    /// An IV of the wrong length for the chosen cipher.
    #[error("{cipher} needs an IV of {expected} bytes, got {got}")]
    IvLength {
        /// The cipher's name.
        cipher: &'static str,
        /// The required length.
        expected: usize,
        /// The length that was given.
        got: usize,
    },
    /// The chosen mode needs an IV and none was given.
    #[error("{cipher} needs an IV of {expected} bytes (--iv HEX)")]
    MissingIv {
        /// The cipher's name.
        cipher: &'static str,
        /// The required length.
        expected: usize,
    },
    /// An IV was given to a mode that has none (ECB, RC4).
    #[error("{cipher} takes no IV")]
    UnexpectedIv {
        /// The cipher's name.
        cipher: &'static str,
    },
    /// Padding was disabled and the input is not a whole number of blocks.
    #[error(
        "input of {len} bytes is not a whole number of {block_size}-byte blocks (padding is off)"
    )]
    PartialBlock {
        /// Input length in bytes.
        len: u64,
        /// The cipher's block size.
        block_size: usize,
    },
    /// The input is too short to be what it claims (a padded ciphertext needs one block).
    #[error("input of {len} bytes is too short: {what}")]
    TooShort {
        /// Input length in bytes.
        len: u64,
        /// What the input needed to hold.
        what: &'static str,
    },
    /// PKCS#7 padding did not check out after decryption: wrong key, wrong IV or damaged input.
    #[error("bad padding after decryption (wrong key or IV, or damaged input)")]
    BadPadding,
    /// An unusable chunk size.
    #[error("invalid chunk size {size}: {reason}")]
    ChunkSize {
        /// The size that was asked for.
        size: u64,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// The input ends inside a chunk's fixed framing (a tag or MAC).
    #[error("input truncated inside chunk {index}")]
    Truncated {
        /// The chunk whose framing is incomplete.
        index: u64,
    },
    /// The input does not start with the container's magic bytes.
    #[error("not a paracrypt file (no PARACRYPT header)")]
    NotAContainer,
    /// The container was written by a newer (or unknown) format version.
    #[error("unsupported paracrypt format version {0} (this build reads version 1)")]
    UnsupportedVersion(u8),
    /// The header is damaged or was altered.
    #[error("header damaged: {0}")]
    Header(HeaderFault),
    /// The key or password does not match the one the file was encrypted with.
    #[error("wrong key or password")]
    WrongKey,
    /// A password was given for a key-file container, or a key for a password container.
    #[error("this file was encrypted with {needs}")]
    WrongSecretKind {
        /// What the file needs: "a key file" or "a password".
        needs: &'static str,
    },
    /// A key file that cannot be read as one.
    #[error("bad key file: {0}")]
    KeyFile(String),
    /// Password stretching failed or its parameters are unusable.
    #[error("key derivation: {0}")]
    Kdf(String),
    /// A chunk did not authenticate: it was altered, moved or comes from another file.
    #[error("chunk {index} failed authentication (damaged, reordered or from another file)")]
    ChunkAuth {
        /// The chunk's index.
        index: u64,
    },
    /// The file ends at a chunk boundary before its last chunk.
    #[error("file truncated after chunk {index}")]
    TruncatedAfter {
        /// The last chunk that is present.
        index: u64,
    },
    /// Data follows the last chunk.
    #[error("trailing data after the last chunk (chunk {index})")]
    TrailingData {
        /// The real last chunk.
        index: u64,
    },
    /// The file holds a header and nothing else.
    #[error("file truncated after the header (no chunks)")]
    TruncatedAfterHeader,
    /// A byte range outside the plaintext.
    #[error("range starts at byte {offset}, beyond the end of the {len}-byte plaintext")]
    RangeOutOfBounds {
        /// The range's first byte.
        offset: u64,
        /// The plaintext length.
        len: u64,
    },
    /// An I/O error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What paracrypt was doing, e.g. `reading chunk 3`.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A provider name that is not known, or not compiled into this build.
    #[error("unknown provider `{name}` (valid: {valid}){note}")]
    UnknownProvider {
        /// What the user asked for.
        name: String,
        /// The compiled providers, comma separated.
        valid: String,
        /// Why a known name is refused (not compiled), or empty.
        note: String,
    },
    /// The cryptographic provider failed internally (an allocation in aws-lc, say): not a
    /// problem with the input.
    #[error("cryptographic provider failure: {what}")]
    Provider {
        /// Which call failed.
        what: &'static str,
    },
}

/// What is wrong with a container header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderFault {
    /// Shorter than a header.
    #[error("file shorter than a header")]
    Truncated,
    /// The checksum over the fields does not match: accidental damage.
    #[error("checksum mismatch")]
    Checksum,
    /// A field holds a value no writer produces.
    #[error("invalid {0}")]
    Field(&'static str),
    /// The fields are intact but the MAC does not match: the header was altered.
    #[error("authentication failed")]
    Mac,
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}
