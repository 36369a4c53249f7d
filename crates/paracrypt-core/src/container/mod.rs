//! The authenticated chunked container: paracrypt's own file format (`docs/FORMAT.md`).
//!
//! A file is a header followed by chunks. The header is [`HEADER_LEN`] (116) bytes with a key
//! file or a password (version 1); encrypted to recipients (version 2) it also holds their
//! recipient block, and signed (version 3) the signer's public key, so that [`header_len`]
//! reads its length from its first bytes. Each chunk is sealed on its own with a payload key
//! derived (HKDF-SHA256) from the key file's key, the password (through Argon2id) or the
//! recipients' random file key, and the header's random salt, and is bound to the chunk's index
//! and a last-chunk flag: the AEAD suites' nonce (the STREAM construction), the legacy suites'
//! MAC input. So every chunk can be sealed and opened on any core, in any order, and yet a
//! truncated, extended, reordered or spliced file fails to decrypt. The empty file is one empty
//! final chunk.
//!
//! ```
//! use paracrypt_core::container::{Decryptor, Encryptor, Key, Suite};
//! use paracrypt_core::plan::ChunkSize;
//! use paracrypt_core::Runner;
//!
//! let key = Key::generate();
//! let seal = Encryptor::new(key.clone())
//!     .suite(Suite::Aes256Gcm)
//!     .chunk_size(ChunkSize::new(64 * 1024)?);
//! let runner = Runner::new();
//! let sealed = runner.vec(&seal, b"hello, many cores")?;
//! let opened = runner.vec(&Decryptor::new(key), &sealed)?;
//! assert_eq!(opened, b"hello, many cores");
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! **Signed files** (version 3): [`Encryptor::sign`] adds a signature by the sender to every
//! chunk, checked before the chunk is opened; [`Decryptor::verify_with`] requires that signer.
//!
//! ```
//! use paracrypt_core::container::{Decryptor, Encryptor, Key};
//! use paracrypt_core::sign::SigningKey;
//! use paracrypt_core::{Error, Runner};
//!
//! let (key, me) = (Key::generate(), SigningKey::generate_ed25519());
//! let runner = Runner::new();
//! let sealed = runner.vec(&Encryptor::new(key.clone()).sign(me.clone()), b"from me")?;
//! let open = Decryptor::new(key.clone()).verify_with(me.verifying_key());
//! assert_eq!(runner.vec(&open, &sealed)?, b"from me");
//! let stranger = SigningKey::generate_ed25519().verifying_key();
//! let refused = runner.vec(&Decryptor::new(key).verify_with(stranger), &sealed);
//! assert!(matches!(refused, Err(Error::WrongSigner { .. })));
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! The encryptor and decryptor are [`Recipe`]s: a [`Runner`](crate::Runner) runs them on every driver (file to
//! file with parallel positional I/O, stream to stream, memory, a range, a `Write` adapter) in
//! the caller's Rayon pool, and `paracrypt-mpi` over MPI ranks.

mod chunk;
mod header;
mod secret;
mod signed;
mod suite;

use std::io::{BufRead, Read};

use header::Keys;
pub use header::{
    HEADER_LEN, HeaderInfo, Kdf, MAGIC, MAX_RECIPIENT_BLOCK, SALT_LEN, VERSION, VERSION_RECIPIENTS,
    VERSION_SIGNED, header_len,
};
pub use secret::{Argon2Params, Key, MAX_KEY_FILE, Secret};
pub use signed::{CHUNK_CONTEXT, CHUNK_STATEMENT_LEN, chunk_statement};
pub use suite::Suite;

use crate::engine::{Job, Transform};
use crate::error::{Error, Result};
use crate::plan::{ChunkLayout, ChunkSize, Tail};
use crate::provider::Provider;
use crate::raw::Direction;
use crate::recipe::Recipe;
use crate::sign::{SigningKey, VerifyingKey};
use std::sync::{Arc, Mutex};

/// Where chunks go when sealing (`Encrypt`: plaintext chunks of `chunk_size`, sealed chunks
/// after the header) or opening (`Decrypt`: the reverse). A signed file's chunks are each
/// `signature` bytes longer.
fn layout(
    suite: Suite,
    chunk_size: ChunkSize,
    direction: Direction,
    header: u64,
    signature: usize,
) -> ChunkLayout {
    let plain = chunk_size.get();
    let sealed = suite.sealed_chunk_len(plain) + signature;
    let tag = suite.tag_len() + signature;
    let layout = match (direction, suite.cbc_block()) {
        (Direction::Encrypt, Some(block)) => {
            let tail = Tail::Pad {
                block,
                overhead: tag,
            };
            ChunkLayout::framed(0, plain, header, sealed, tail)
        }
        (Direction::Encrypt, None) => ChunkLayout::framed(0, plain, header, sealed, Tail::Fixed),
        (Direction::Decrypt, Some(_)) => {
            let tail = Tail::Unpad { overhead: tag };
            ChunkLayout::framed(header, sealed, 0, plain, tail)
        }
        (Direction::Decrypt, None) => ChunkLayout::framed(header, sealed, 0, plain, Tail::Fixed),
    };
    layout.expect("a ChunkSize and a suite's framing make a valid layout")
}

/// Encrypts into the container format.
#[derive(Clone)]
pub struct Encryptor {
    secret: Secret,
    suite: Suite,
    chunk_size: ChunkSize,
    salt: Option<[u8; SALT_LEN]>,
    file_key: Option<[u8; 16]>,
    signer: Option<SigningKey>,
}

impl std::fmt::Debug for Encryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryptor")
            .field("suite", &self.suite)
            .field("chunk_size", &self.chunk_size)
            .field("signer", &self.signer.as_ref().map(SigningKey::scheme))
            .finish_non_exhaustive()
    }
}

impl Encryptor {
    /// An encryptor for `secret` with the default suite (AES-256-GCM) and chunk size (1 MiB).
    pub fn new(secret: impl Into<Secret>) -> Self {
        Encryptor {
            secret: secret.into(),
            suite: Suite::default(),
            chunk_size: ChunkSize::DEFAULT,
            salt: None,
            file_key: None,
            signer: None,
        }
    }

    /// Signs every chunk with `key`: the file is version 3, its header names the signer, and
    /// each chunk carries a signature that a reader checks before it opens the chunk
    /// (`docs/FORMAT.md`, "Version 3: signed files").
    pub fn sign(mut self, key: SigningKey) -> Self {
        self.signer = Some(key);
        self
    }

    /// Chooses the cipher suite.
    pub fn suite(mut self, suite: Suite) -> Self {
        self.suite = suite;
        self
    }

    /// Chooses the plaintext chunk size.
    pub fn chunk_size(mut self, chunk_size: ChunkSize) -> Self {
        self.chunk_size = chunk_size;
        self
    }

    /// **Test builds only** (the `test-hooks` feature, which no default build enables). Uses
    /// `salt` instead of a fresh random one, so that the output is reproducible. Reusing a salt
    /// with the same key reuses every chunk nonce: never outside tests.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn fixed_salt_for_tests(mut self, salt: [u8; SALT_LEN]) -> Self {
        self.salt = Some(salt);
        self
    }

    /// **Test builds only** (the `test-hooks` feature). Encrypting to recipients, uses
    /// `file_key` instead of a fresh random one (with [`Encryptor::fixed_salt_for_tests`] and
    /// recipients that wrap deterministically, the output is reproducible). Reusing a file key
    /// leaks the data: never outside tests.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn fixed_file_key_for_tests(mut self, file_key: [u8; 16]) -> Self {
        self.file_key = Some(file_key);
        self
    }
}

/// The chunks are sealed on the provider the caller names; the file's bytes are the same
/// whichever provider runs (the header's key schedule is not on the hot path and always runs on
/// RustCrypto).
impl Recipe for Encryptor {
    /// Derives the file's keys (a fresh salt each call) and makes the header the job writes.
    fn first_job(
        &self,
        _input: &mut dyn BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let public = self.signer.as_ref().map(SigningKey::verifying_key);
        let keys = Keys::seal(
            &self.secret,
            self.suite,
            self.chunk_size,
            self.salt,
            self.file_key,
            public.as_ref(),
        )?;
        let job = job(
            &keys,
            Direction::Encrypt,
            self.signer.as_ref(),
            input_len,
            provider,
        )?;
        // Other processes run this file's chunks with its derived keys, never the secret.
        Ok(job.with_shared_key(&keys.shared()))
    }

    /// The encryption under a `header` that another encryptor made (for example on MPI rank
    /// 0): the salt, suite and chunk size are the header's, so every process seals every chunk
    /// identically, and no new salt is drawn. `key` is that job's
    /// [shared key](crate::engine::Job::shared_key) (the file's derived keys: this encryptor's
    /// secret is then not used); without it the header is checked with this encryptor's secret
    /// like a decryptor checks it (a different secret fails with [`Error::WrongKey`]).
    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let keys = Keys::open(&self.secret, header, key)?;
        let public = self.signer.as_ref().map(SigningKey::verifying_key);
        if keys.info.signer != public {
            return Err(Error::SignKey(
                "the header names another signer than this encryptor's key".into(),
            ));
        }
        job(
            &keys,
            Direction::Encrypt,
            self.signer.as_ref(),
            input_len,
            provider,
        )
    }
}

/// Decrypts the container format.
#[derive(Clone)]
pub struct Decryptor {
    secret: Secret,
    verify_with: Option<VerifyingKey>,
    signer_seen: Arc<Mutex<Option<VerifyingKey>>>,
}

impl std::fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decryptor").finish_non_exhaustive()
    }
}

impl Decryptor {
    /// A decryptor for `secret` (the header says everything else).
    pub fn new(secret: impl Into<Secret>) -> Self {
        Decryptor {
            secret: secret.into(),
            verify_with: None,
            signer_seen: Arc::default(),
        }
    }

    /// Requires the file to be signed by `key`: an unsigned file fails with
    /// [`Error::Unsigned`], a file signed by another key with [`Error::WrongSigner`], before
    /// any chunk is read. Without it, a signed file's chunks are still verified, against the
    /// key its header names ([`Decryptor::signer`] says which).
    pub fn verify_with(mut self, key: VerifyingKey) -> Self {
        self.verify_with = Some(key);
        self
    }

    /// The key [`Decryptor::verify_with`] requires.
    pub fn expected_signer(&self) -> Option<&VerifyingKey> {
        self.verify_with.as_ref()
    }

    /// The signer named by the last header this decryptor (or a clone of it) opened with
    /// [`Recipe::first_job`], when that file was signed: every chunk it released was verified
    /// against this key.
    pub fn signer(&self) -> Option<VerifyingKey> {
        self.signer_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Checks the header's signer against the required one.
    fn check_signer(&self, keys: &Keys) -> Result<()> {
        let Some(expected) = &self.verify_with else {
            return Ok(());
        };
        let Some(signer) = &keys.info.signer else {
            return Err(Error::Unsigned {
                expected: expected.fingerprint(),
            });
        };
        match expected.for_scheme(signer.scheme()) {
            Some(expected) if expected.to_field() == signer.to_field() => Ok(()),
            _ => Err(Error::WrongSigner {
                signer: signer.fingerprint(),
                expected: expected.fingerprint(),
            }),
        }
    }
}

/// The decryption under `keys` of an input of `input_len` bytes, header included.
fn open_job(keys: &Keys, input_len: Option<u64>, provider: Provider) -> Result<Job> {
    if input_len == Some(keys.header.len() as u64) {
        return Err(Error::TruncatedAfterHeader);
    }
    job(keys, Direction::Decrypt, None, input_len, provider)
}

/// A file sealed on any provider opens on any.
impl Recipe for Decryptor {
    /// Reads and checks the header (a wrong key or password fails here; a stream that ends
    /// right after it fails as [`Error::TruncatedAfterHeader`]).
    fn first_job(
        &self,
        input: &mut dyn BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let header = read_header_bytes(&mut *input)?;
        let keys = Keys::open(&self.secret, &header, None)?;
        self.check_signer(&keys)?;
        *self.signer_seen.lock().unwrap_or_else(|e| e.into_inner()) = keys.info.signer.clone();
        // Other processes open this file's chunks with its derived keys: never the key file,
        // the password (Argon2id costs each of them again) or the identities.
        let job = open_job(&keys, input_len, provider)?.with_shared_key(&keys.shared());
        if input_len.is_none() {
            let rest = input
                .fill_buf()
                .map_err(|e| Error::io("reading chunk 0", e))?;
            if rest.is_empty() {
                return Err(Error::TruncatedAfterHeader);
            }
        }
        Ok(job)
    }

    /// `key`: the [shared key](crate::engine::Job::shared_key) of the job rank 0 made (the
    /// file's derived keys); without it the header is opened with this decryptor's secret.
    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let keys = Keys::open(&self.secret, header, key)?;
        self.check_signer(&keys)?;
        open_job(&keys, input_len, provider)
    }
}

/// A new header for the version 2 container whose header is `header` (see
/// [`crate::rekey`]).
pub(crate) fn rekey(
    header: &[u8],
    old: std::sync::Arc<crate::recipient::Identities>,
    new: std::sync::Arc<crate::recipient::Recipients>,
) -> Result<Vec<u8>> {
    Keys::rekey(header, old, new)
}

/// Reads a container's header without a key (for `paracrypt info`).
pub fn read_header(reader: &mut dyn Read) -> Result<HeaderInfo> {
    HeaderInfo::parse(&read_header_bytes(reader)?)
}

/// The header's bytes from the start of `input`: [`HEADER_LEN`] of them, and in versions 2
/// and 3 the recipient and signer blocks too, or all there are when the input is shorter
/// (parsing then says what is wrong).
pub(crate) fn read_header_bytes(mut input: impl Read) -> Result<Vec<u8>> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    let mut read_up_to = |header: &mut Vec<u8>, len: usize| {
        (&mut input)
            .take((len - header.len()) as u64)
            .read_to_end(header)
            .map_err(|e| Error::io("reading the header", e))
    };
    read_up_to(&mut header, HEADER_LEN)?;
    // A version 3 header's length is known in two steps (its recipient block, then its
    // signer's key): each length read is capped by its field's limit.
    while let Ok(Some(len)) = header_len(&header)
        && len > header.len()
    {
        let before = header.len();
        read_up_to(&mut header, len)?;
        if header.len() == before {
            break;
        }
    }
    Ok(header)
}

/// The job of one file: a transform that seals (with `signer`'s key, for a signed file) or
/// opens (`signer: None`) chunks under `keys` on `provider`, the plan when the length is known,
/// and the header.
fn job(
    keys: &Keys,
    direction: Direction,
    signer: Option<&SigningKey>,
    input_len: Option<u64>,
    provider: Provider,
) -> Result<Job> {
    let suite = keys.info.suite;
    let mut cipher = chunk::chunk_cipher(suite, &keys.payload, keys.header_mac(), provider)?;
    let signature = keys.info.signature_len();
    if let Some(public) = &keys.info.signer {
        cipher = Box::new(signed::SignedChunks {
            inner: cipher,
            binding: keys.header_mac().try_into().expect("32 bytes"),
            sign: signer
                .cloned()
                .map(|k| k.with_provider(provider))
                .transpose()?,
            verify: public.clone().with_provider(provider)?,
            key_hash: signed::key_hash(public),
        });
    }
    let transform: Transform = match direction {
        Direction::Encrypt => Transform::parallel(chunk::Seal(cipher)),
        Direction::Decrypt => Transform::parallel(chunk::Open {
            cipher,
            tag_len: suite.tag_len() + signature,
            empty_last: |index| Error::ChunkAuth { index },
            search_end: true,
            search_cost: if signature > 0 { SIGNED_SEARCH_COST } else { 0 },
        }),
    };
    let header_len = keys.header.len() as u64;
    let job = Job::new(
        layout(
            suite,
            keys.info.chunk_size,
            direction,
            header_len,
            signature,
        ),
        transform,
    )
    .with_header(keys.header.clone());
    job.planned_for(input_len)
}

/// What one try of the search for an early end costs in a signed file beside the bytes it
/// hashes and opens, counted against the search's budget: a signature check is worth about
/// this many bytes of AES-GCM.
const SIGNED_SEARCH_COST: usize = 128 << 10;
