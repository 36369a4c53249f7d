//! The library's typed errors: each variant says what failed and, where it helps, which chunk;
//! [`Error::kind`] sorts them into bad requests, bad data and failed I/O.
//!
//! The public-key work has its own error ([`pubkey::Error`], re-exported as
//! `paracrypt_core::pubkey::Error`). It is defined here, below both the public-key API and the
//! provider that computes it, so that neither module needs the other's types.

use std::io;

pub(crate) mod pubkey;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Error::WrongSecretKind`]'s words for a container sealed with a key file.
pub const NEEDS_KEY_FILE: &str = "a key file";
/// [`Error::WrongSecretKind`]'s words for a container sealed with a password.
pub const NEEDS_PASSWORD: &str = "a password";
/// [`Error::WrongSecretKind`]'s words for a file sealed to public keys.
pub const NEEDS_IDENTITY: &str = "public keys (decrypt it with an identity)";
/// [`Error::WrongSecretKind`]'s words for an age file given a key.
pub const NEEDS_AGE: &str = "age (decrypt it with an identity or its passphrase, not a key)";
/// [`Error::WrongSecretKind`]'s words for an age file sealed with a passphrase.
pub const NEEDS_PASSPHRASE: &str = "a passphrase";
/// [`Error::WrongSecretKind`]'s words for an age file sealed to recipients, given a passphrase.
pub const NEEDS_IDENTITY_NOT_PASSPHRASE: &str = "recipients' keys, not a passphrase";

/// Everything paracrypt's core can fail with.
///
/// Messages are one line, name the problem and, where there is a fixed set of valid choices,
/// list them. Where the problem is a common mistake (a secret of the wrong kind, a file given
/// where a list of them goes, an output that exists), the message ends with the way out, for
/// the command line and for Python in the same words, so that every front end says them alike
/// (the mistakes table, tests/mistakes/table.json, runs them through the CLI and Python).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A cipher or suite name that is not known. (Text the user typed is shown with control
    /// characters escaped, here and below: a message stays one line.)
    #[error("unknown cipher `{}` (valid: {valid})", .name.escape_debug())]
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
    #[error("{cipher} needs an IV of {expected} bytes")]
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
    /// A size or range that does not parse (`64KiB`, `OFFSET:LENGTH`).
    #[error("`{}` {reason}", .text.escape_debug())]
    Size {
        /// What was given.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
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
    /// The input is neither of the formats `decrypt` reads: it starts with neither a
    /// container's `PARACRYPT` nor an age header (binary or armored).
    #[error(
        "not a paracrypt or age file (it starts with neither PARACRYPT, age-encryption.org/ \
         nor -----BEGIN AGE ENCRYPTED FILE-----)"
    )]
    NotEncrypted,
    /// What `decrypt` was given is an `openssl enc` password file (`Salted__`), which is
    /// decrypted as one, with its cipher and password (`paracrypt raw`).
    #[error(
        "an `openssl enc` password file (it starts with Salted__), not a paracrypt or age file: \
         decrypt it as one, with its cipher and password (paracrypt raw -d -c CIPHER \
         --password-file FILE; Python: paracrypt.raw.decrypt(..., cipher=, password=))"
    )]
    OpensslFile,
    /// The input is none of the encrypted formats paracrypt reads (`paracrypt info`): neither a
    /// container, an age file, nor an `openssl enc` password file.
    #[error(
        "not an encrypted file paracrypt reads (it starts with neither PARACRYPT, \
         age-encryption.org/, -----BEGIN AGE ENCRYPTED FILE----- nor openssl's Salted__)"
    )]
    UnknownFormat,
    /// The container was written by a newer (or unknown) format version.
    #[error("unsupported paracrypt format version {0} (this build reads versions 1 to 3)")]
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
        /// What the file needs: one of the `NEEDS_*` words of this module (the format's words,
        /// as the container test vectors hold them; [`Error::text`] adds the way to give it).
        needs: &'static str,
    },
    /// A key file that cannot be read as one.
    #[error("bad key file: {0}")]
    KeyFile(String),
    /// The output exists and the caller did not ask to overwrite it: the words every front end
    /// says (its value is the output as shown: a path or a URL).
    #[error("output {0} already exists (use --force to overwrite; Python: overwrite=True)")]
    OutputExists(String),
    /// No secret was given and none can be asked for (no terminal): the ways to give one, on
    /// the command line and in Python.
    #[error(
        "no key given: use -k FILE, --password-file FILE, PARACRYPT_PASSWORD or {}, or run on a \
         terminal (Python: key=, password= or {})",
        if *.encrypting { "-r/-R" } else { "-i FILE" },
        if *.encrypting { "recipients=" } else { "identities=" }
    )]
    NoSecret {
        /// Whether the secret was to encrypt with (else to decrypt with).
        encrypting: bool,
    },
    /// Password stretching failed or its parameters are unusable.
    #[error("key derivation: {0}")]
    Kdf(String),
    /// A request the front door refuses as made: options that no input can make sense of
    /// together, or that the chosen driver cannot run (see [`crate::request`]).
    #[error("{0}")]
    Request(String),
    /// A raw cipher was given a key for an `openssl enc` password file (`Salted__`), whose key
    /// and IV openssl derives from a password and the file's salt.
    #[error(
        "the input starts with `Salted__`: `openssl enc` encrypted it with a password, from which \
         openssl derives the key and IV; decrypt it with that password, not a key"
    )]
    SaltedFile,
    /// A job was given another input than the one it was made for (its header, and so its
    /// keys and nonces, belong to that one).
    #[error("this is not the input the job was made for ({0}): make a new job for it")]
    OtherInput(String),
    /// The input changed while a job made for it ran: it grew, shrank or was rewritten.
    #[error("the input changed since the job was made: {0}")]
    InputChanged(String),
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
    /// A recipient (a public key to encrypt to) that cannot be used: where it was given, and
    /// what was expected instead.
    #[error("{at}: {reason}")]
    Recipient {
        /// Where: `recipient 2 (age1qyz…)`, `team.txt line 3`, `bob.pem`.
        at: String,
        /// What is wrong, and what was expected.
        reason: String,
    },
    /// An identity (a private key to decrypt with) that cannot be used.
    #[error("{at}: {reason}")]
    Identity {
        /// Where: the identity file, and the line when it has lines.
        at: String,
        /// What is wrong, and what was expected.
        reason: String,
    },
    /// The recipients cannot be combined in one file (a passphrase with public keys, or
    /// recipients whose kinds forbid each other).
    #[error("cannot encrypt to these recipients together: {0}")]
    IncompatibleRecipients(&'static str),
    /// The file cannot be rekeyed (its header has no file key to re-wrap, or its form is not
    /// one that rekeying copies as it is).
    #[error("cannot rekey this file: {0}")]
    CannotRekey(&'static str),
    /// None of the identities unwraps the file key.
    #[error(
        "no identity matches this file; it was encrypted to {recipients} recipient{}",
        if *recipients == 1 { "" } else { "s" }
    )]
    NoIdentityMatches {
        /// How many recipients the file names (greasing stanzas not counted).
        recipients: usize,
    },
    /// The file's recipient block or age header is malformed.
    #[error("invalid age header: {0}")]
    AgeHeader(String),
    /// An age plugin is missing, failed, stopped answering, broke the protocol, or said why it
    /// cannot wrap; `plugin` is its binary's name (`age-plugin-NAME`).
    #[error("{plugin}: {reason}")]
    Plugin {
        /// The plugin's binary, `age-plugin-NAME`.
        plugin: String,
        /// What happened, one line.
        reason: String,
    },
    /// A key management service (AWS KMS) could not wrap or unwrap a file key: access denied,
    /// the key disabled or not found (in this region), the server unreachable; `key` is the key
    /// as the recipient or the stanza names it.
    #[error("KMS key {key}: {reason}")]
    Kms {
        /// The key (an ARN, a key id or an alias).
        key: String,
        /// What happened, one line.
        reason: String,
    },
    /// An age plugin ran and answered, and its identity did not open the file: what it said
    /// about the identity or the file's stanza (a wrong PIN, a key that is not plugged in, a
    /// confirmation refused). A wrong key, as [`Error::WrongKey`] is.
    #[error("{plugin}: {reason}")]
    PluginRefused {
        /// The plugin's binary, `age-plugin-NAME`.
        plugin: String,
        /// What the plugin said, one line.
        reason: String,
    },
    /// An age file of another version than v1.
    #[error("unsupported age format version `{0}` (this build reads v1)")]
    UnsupportedAgeVersion(String),
    /// ASCII armor that is damaged.
    #[error("damaged armor: {0}")]
    Armor(String),
    /// A STREAM last chunk that is empty although chunks come before it (age forbids it).
    #[error("chunk {index} is an empty last chunk after data (not allowed)")]
    EmptyLastChunk {
        /// The chunk's index.
        index: u64,
    },
    /// The input is not an `openssl enc` password file.
    #[error("not a password-based openssl file (no Salted__ header)")]
    NotSalted,
    /// The password (or the derivation options) do not open an `openssl enc` password file.
    #[error("bad password or not a {kdf} file")]
    BadPassword {
        /// The derivation that was tried, as openssl's options: `-pbkdf2 (-iter 10000, -md
        /// sha256)` or `legacy (-md sha256)`.
        kdf: String,
    },
    /// An I/O error, with what was being done (the system's words, without Rust's
    /// `(os error N)`: [`io_text`]).
    #[error("{context}: {}", io_text(source))]
    Io {
        /// What paracrypt was doing, e.g. `reading chunk 3`.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A provider name that is not known, or not compiled into this build.
    #[error("unknown provider `{}` (valid: {valid}){note}", .name.escape_debug())]
    UnknownProvider {
        /// What the user asked for.
        name: String,
        /// The compiled providers, comma separated.
        valid: String,
        /// Why a known name is refused (not compiled), or empty.
        note: String,
    },
    /// The cryptographic provider failed internally (an allocation in aws-lc, say): not a
    /// problem with the input ([`ErrorKind::Internal`]).
    #[error("cryptographic provider failure: {what}")]
    Provider {
        /// Which call failed.
        what: &'static str,
    },
    /// A signing or verifying key that cannot be used (its file, its kind, its size).
    #[error("{0}")]
    SignKey(String),
    /// A signature file (or a signed container's signer block) that is not well formed: what
    /// is wrong with it.
    #[error("not a valid paracrypt signature: {0}")]
    SignatureFile(String),
    /// The signature does not verify: the data or the signature was altered, or another key
    /// made it.
    #[error("the signature does not verify (the file or its signature was altered)")]
    BadSignature,
    /// The data was signed by another key than the one given.
    #[error("signed by another key ({signer}), not by the given public key ({expected})")]
    WrongSigner {
        /// The signer's key, as [`VerifyingKey::fingerprint`](crate::sign::VerifyingKey::fingerprint) shows it.
        signer: String,
        /// The key given to verify with.
        expected: String,
    },
    /// A chunk's bytes are not the ones the signature covers.
    #[error("chunk {index} does not match the signature (bytes {start}..{end} were altered)")]
    ChunkMismatch {
        /// The chunk's index (the lowest that differs).
        index: u64,
        /// Its first byte in the file.
        start: u64,
        /// The byte after its last.
        end: u64,
    },
    /// The file's length is not the signed length.
    #[error(
        "the file is {actual} bytes long, the signature covers {signed} (truncated or extended)"
    )]
    SignedLength {
        /// The length the signature covers.
        signed: u64,
        /// The length of the file.
        actual: u64,
    },
    /// A signature was required and the file has none.
    #[error("the file is not signed (a signature by {expected} was required)")]
    Unsigned {
        /// The key whose signature was required.
        expected: String,
    },
    /// A signed container's chunk whose signature does not verify although its tag does:
    /// someone who holds the file key wrote it (a recipient's forgery), or its signature alone
    /// was altered.
    #[error(
        "chunk {index} is not signed by the file's signer (its signature was altered, or \
         someone who holds the file key rewrote it)"
    )]
    ChunkSignature {
        /// The chunk's index.
        index: u64,
    },
    /// A tree ([`crate::tree`]) that cannot be encrypted or decrypted as asked: an output inside
    /// its input, an output directory that already holds files, a name that clashes with the
    /// manifest's.
    #[error("{0}")]
    Tree(String),
    /// A tree that is not the one the caller knows of: an older generation of its manifest put
    /// back in place of the newer one, or another tree at the output this host recorded.
    #[error("{0}")]
    Rollback(String),
    /// Two entries of a tree that would take one name in its output (a file `x` and a directory
    /// `x.pcr`), where the names are kept.
    #[error("{0}")]
    TreeNameClash(String),
    /// A tree's output directory that already holds files, where writing into it was not
    /// asked for.
    #[error("the output directory {0} is not empty")]
    TreeOutputExists(String),
    /// A file of a tree that is not a regular file, a directory or a symbolic link: refused by
    /// name, before anything is written.
    #[error("{path}: {what}: a tree holds regular files, directories and symbolic links only")]
    SpecialFile {
        /// The file, as the walk found it (the input directory, then its path in the tree).
        path: String,
        /// What it is: `a FIFO`, `a socket`, `a character device`, `a block device`.
        what: &'static str,
    },
    /// A tree's manifest that is not well formed (after it decrypted: its author wrote it so,
    /// or it is not a manifest).
    #[error("not a valid tree manifest: {0}")]
    Manifest(String),
    /// A file of an encrypted tree that is not the one its manifest lists: another file's,
    /// an older version, or changed.
    #[error("{0}")]
    TreeMismatch(String),
    /// An encrypted tree refused whole because it is not as its manifest lists it (a file
    /// missing, swapped for another, or not the one an old manifest put back lists): each
    /// file's failure ([`Error::InTree`], naming it), in the tree's order. A rekey refuses such
    /// a tree rather than write a next generation that would no longer name them.
    #[error(
        "the tree is not as its manifest lists it, so nothing was rekeyed (a verification of \
         the tree names each difference): {}",
        differences(.0)
    )]
    TreeDiffers(Vec<Error>),
    /// The failure of one file of a tree, naming it (its path in the tree).
    #[error("{path}: {source}")]
    InTree {
        /// The file's path in the tree.
        path: String,
        /// What went wrong with it.
        #[source]
        source: Box<Error>,
    },
}

/// The failures of [`Error::TreeDiffers`], on one line.
fn differences(failures: &[Error]) -> String {
    failures
        .iter()
        .map(|e| e.to_string().replace('\n', " "))
        .collect::<Vec<_>>()
        .join("; ")
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

/// What kind of failure an [`Error`] is: what the caller asked for, the data, or the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request cannot be carried out as made: an unknown cipher, a key or IV of the wrong
    /// length, a malformed key file, an unusable chunk size. Nothing was read.
    Usage,
    /// The data is not what it should be: a wrong key or password, a chunk that fails
    /// authentication, bad padding, truncated or damaged input.
    Data,
    /// Reading or writing failed (or the system did: a cluster that cannot start).
    Io,
    /// A cryptographic provider (aws-lc, OpenSSL or RustCrypto: the backend computing the
    /// primitives) failed inside, e.g. it could not allocate, or refused a call paracrypt makes
    /// correctly. Neither the request nor the data is at fault, and nothing says the same call
    /// would fail again: a failure of the system, or a defect in paracrypt or the backend
    /// (report it when it repeats). [`Error::Provider`] is this kind.
    Internal,
    /// The data is not proven to come from the expected signer: a signature that does not
    /// verify, data signed by another key, or no signature where one was required.
    Signature,
}

impl Error {
    /// The message as front ends show it: the error's own words, then, for a common mistake
    /// whose words are the format's (a secret of the wrong kind: the container test vectors
    /// hold them as they are), the way out on the command line and in Python. The CLI and the
    /// Python package both show this, so they say the same words.
    pub fn text(&self) -> String {
        match self.way_out() {
            Some(way) => format!("{self}; {way}"),
            None => self.to_string(),
        }
    }

    /// How to give what [`Error::WrongSecretKind`] says the file needs.
    fn way_out(&self) -> Option<&'static str> {
        let needs = match self {
            Error::WrongSecretKind { needs } => needs,
            Error::InTree { source, .. } => return source.way_out(),
            _ => return None,
        };
        Some(match *needs {
            NEEDS_KEY_FILE => "give it with -k FILE (Python: key=)",
            NEEDS_PASSWORD | NEEDS_PASSPHRASE => {
                "give it with --password-file FILE or PARACRYPT_PASSWORD (Python: password=)"
            }
            NEEDS_IDENTITY | NEEDS_IDENTITY_NOT_PASSPHRASE => {
                "give an identity with -i FILE (Python: identities=)"
            }
            NEEDS_AGE => {
                "give an identity with -i FILE or the passphrase with --password-file FILE \
                 (Python: identities= or password=)"
            }
            _ => return None,
        })
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::UnknownCipher { .. }
            | Error::KeyLength { .. }
            | Error::IvLength { .. }
            | Error::MissingIv { .. }
            | Error::UnexpectedIv { .. }
            | Error::ChunkSize { .. }
            | Error::Size { .. }
            | Error::UnknownProvider { .. }
            | Error::KeyFile(_)
            | Error::OutputExists(_)
            | Error::NoSecret { .. }
            | Error::SignKey(_)
            | Error::Recipient { .. }
            | Error::Identity { .. }
            | Error::IncompatibleRecipients(_)
            | Error::Request(_)
            | Error::Tree(_)
            | Error::TreeOutputExists(_)
            | Error::TreeNameClash(_)
            | Error::SpecialFile { .. }
            | Error::OtherInput(_) => ErrorKind::Usage,
            Error::Io { .. } | Error::Plugin { .. } | Error::Kms { .. } => ErrorKind::Io,
            Error::PartialBlock { .. }
            | Error::TooShort { .. }
            | Error::BadPadding
            | Error::Truncated { .. }
            | Error::NotAContainer
            | Error::NotEncrypted
            | Error::OpensslFile
            | Error::UnknownFormat
            | Error::UnsupportedVersion(_)
            | Error::Header(_)
            | Error::WrongKey
            | Error::WrongSecretKind { .. }
            | Error::Kdf(_)
            | Error::ChunkAuth { .. }
            | Error::TruncatedAfter { .. }
            | Error::TrailingData { .. }
            | Error::TruncatedAfterHeader
            | Error::RangeOutOfBounds { .. }
            | Error::NoIdentityMatches { .. }
            | Error::PluginRefused { .. }
            | Error::CannotRekey(_)
            | Error::AgeHeader(_)
            | Error::UnsupportedAgeVersion(_)
            | Error::Armor(_)
            | Error::EmptyLastChunk { .. }
            | Error::NotSalted
            | Error::BadPassword { .. }
            | Error::SaltedFile
            | Error::InputChanged(_)
            | Error::Manifest(_)
            | Error::Rollback(_)
            | Error::TreeMismatch(_)
            | Error::TreeDiffers(_)
            | Error::SignatureFile(_) => ErrorKind::Data,
            Error::InTree { source, .. } => source.kind(),
            Error::Provider { .. } => ErrorKind::Internal,
            Error::BadSignature
            | Error::WrongSigner { .. }
            | Error::ChunkMismatch { .. }
            | Error::SignedLength { .. }
            | Error::Unsigned { .. }
            | Error::ChunkSignature { .. } => ErrorKind::Signature,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// The failure of one chunk: its index in the plan, and the error.
///
/// What the positional engine ([`engine::run`](crate::engine::run)) returns, so that a caller
/// spreading chunks over processes knows which chunk failed without parsing messages. It
/// displays as its error, and converts into it with `?`.
#[derive(Debug)]
pub struct ChunkError {
    /// The chunk's index: the lowest failing one of the run, whatever the thread count.
    pub index: u64,
    /// What went wrong.
    pub source: Error,
}

impl ChunkError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.source.kind()
    }
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}

impl std::error::Error for ChunkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.source)
    }
}

impl From<ChunkError> for Error {
    fn from(failed: ChunkError) -> Error {
        failed.source
    }
}

/// An I/O error in the system's words (`No such file or directory`), without the ` (os error
/// 2)` Rust's `Display` adds: every front end shows errors so (the number is the exception's
/// `errno` in Python).
pub fn io_text(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secret of the wrong kind keeps the format's words (the test vectors hold them) and
    /// shows the way out after them, inside a tree's naming too; other errors show their words.
    #[test]
    fn the_way_out_follows_the_format_s_words() {
        let wrong = Error::WrongSecretKind {
            needs: NEEDS_KEY_FILE,
        };
        assert_eq!(wrong.to_string(), "this file was encrypted with a key file");
        assert_eq!(
            wrong.text(),
            "this file was encrypted with a key file; give it with -k FILE (Python: key=)"
        );
        let in_tree = Error::InTree {
            path: "a/b".into(),
            source: Box::new(Error::WrongSecretKind {
                needs: NEEDS_IDENTITY,
            }),
        };
        assert!(
            in_tree
                .text()
                .ends_with("; give an identity with -i FILE (Python: identities=)"),
            "{}",
            in_tree.text()
        );
        assert_eq!(Error::WrongKey.text(), Error::WrongKey.to_string());
        for needs in [
            NEEDS_PASSWORD,
            NEEDS_PASSPHRASE,
            NEEDS_AGE,
            NEEDS_IDENTITY_NOT_PASSPHRASE,
        ] {
            assert!(Error::WrongSecretKind { needs }.text().contains("; give "));
        }
    }

    #[test]
    fn kinds() {
        let usage = Error::ChunkSize {
            size: 3,
            reason: "must be a multiple of 16 bytes",
        };
        assert_eq!(usage.kind(), ErrorKind::Usage);
        assert_eq!(Error::WrongKey.kind(), ErrorKind::Data);
        assert_eq!(Error::ChunkAuth { index: 3 }.kind(), ErrorKind::Data);
        let io = Error::io("reading chunk 2", io::ErrorKind::UnexpectedEof.into());
        assert_eq!(io.kind(), ErrorKind::Io);
        // A backend's own failure is neither the request's nor the data's.
        let internal = Error::Provider {
            what: "EVP_CIPHER_CTX_new",
        };
        assert_eq!(internal.kind(), ErrorKind::Internal);
    }

    /// Found by the `cli_args` fuzz target: an unknown provider name was bad data (exit 1),
    /// while every other name that does not parse is a bad request.
    #[test]
    fn names_and_sizes_that_do_not_parse_are_usage_errors() {
        use crate::container::Suite;
        use crate::provider::Provider;
        use crate::raw::{RawCipherName, salted::Digest};
        for text in ["", "nope", "aes-256-gcmx"] {
            let kinds = [
                text.parse::<Provider>().unwrap_err().kind(),
                text.parse::<Suite>().unwrap_err().kind(),
                text.parse::<RawCipherName>().unwrap_err().kind(),
                text.parse::<Digest>().unwrap_err().kind(),
                crate::size::parse_size(text).unwrap_err().kind(),
                crate::size::parse_range(text).unwrap_err().kind(),
            ];
            assert_eq!(kinds, [ErrorKind::Usage; 6], "{text:?}");
        }
        // What was typed is quoted with its control characters escaped: one line.
        let typed = "aes\n256";
        let messages = [
            typed.parse::<Provider>().unwrap_err().to_string(),
            typed.parse::<Suite>().unwrap_err().to_string(),
            crate::size::parse_size(typed).unwrap_err().to_string(),
        ];
        for message in messages {
            assert!(message.contains("`aes\\n256`"), "{message}");
        }
    }

    #[test]
    fn a_chunk_error_reads_as_its_error() {
        let failed = ChunkError {
            index: 7,
            source: Error::ChunkAuth { index: 7 },
        };
        assert_eq!(
            failed.to_string(),
            Error::ChunkAuth { index: 7 }.to_string()
        );
        assert_eq!(failed.kind(), ErrorKind::Data);
        assert!(matches!(Error::from(failed), Error::ChunkAuth { index: 7 }));
    }
}
