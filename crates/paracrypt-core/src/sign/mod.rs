//! Signing large files on every core: a detached signature over a tree hash of the file's
//! chunks (`docs/SIGNATURES.md` specifies every byte).
//!
//! A file is cut into chunks (1 MiB by default); each chunk's BLAKE3 **leaf** is computed on the
//! chunk engine ([`tree::TreeHash`], a [`Recipe`](crate::Recipe): every pool thread, every
//! driver, every MPI rank), the leaves form a Merkle tree, and the **file digest** binds its
//! root to the chunk size and the file's length. A [`SigningKey`] (Ed25519 by default, ECDSA
//! P-256 or RSA) signs a short [statement] naming the scheme and the file digest.
//! The [`Signature`] file keeps the signer's public key, the signature and every leaf, so that
//! a verifier checks the whole file (on every core, naming the first altered chunk) or any
//! byte range alone (hashing only the chunks that cover it).
//!
//! ```
//! use paracrypt_core::plan::ChunkSize;
//! use paracrypt_core::sign::{Signature, SigningKey};
//! use paracrypt_core::Runner;
//!
//! let key = SigningKey::generate_ed25519();
//! let data = vec![42u8; 100_000];
//! let runner = Runner::new();
//! let signature = Signature::sign_slice(&runner, &key, ChunkSize::new(16 * 1024)?, &data)?;
//! let bytes = signature.to_bytes();
//!
//! let read = Signature::from_bytes(&bytes)?;
//! read.verify_slice(&runner, &key.verifying_key(), &data)?;
//! let mut altered = data.clone();
//! altered[40_000] ^= 1;
//! assert!(read.verify_slice(&runner, &key.verifying_key(), &altered).is_err());
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

pub mod keys;
pub mod minisign;
pub mod sshsig;
pub mod tree;

use std::fs::File;
use std::io::Read;
use std::ops::Range;

pub use keys::{MAX_KEY_FILE, Scheme, SigningKey, VerifyingKey, read_key_file};
use tree::{FileDigest, HASH_LEN, TreeHash, chunk_count};

use crate::error::{Error, Result};
use crate::plan::ChunkSize;
use crate::recipe::Runner;

/// The magic bytes a signature file starts with.
pub const MAGIC: &[u8; 12] = b"PARACRYPTSIG";
/// The signature file format version.
pub const VERSION: u8 = 1;
/// The hash id of the BLAKE3 tree ([`tree`]).
pub const HASH_BLAKE3_TREE: u8 = 1;
/// The most chunks a signature file may list (2^26: 64 TiB at 1 MiB chunks, 2 GiB of leaves);
/// a file claiming more is refused before its leaves are read.
pub const MAX_CHUNKS: u64 = 1 << 26;

/// The context string every file statement starts with.
pub const FILE_CONTEXT: &[u8] = b"paracrypt-signed-file-v1";

/// What is signed for a file: `"paracrypt-signed-file-v1" ‖ 0x00 ‖ scheme id ‖ file digest`
/// (58 bytes).
pub fn statement(scheme: Scheme, digest: &FileDigest) -> Vec<u8> {
    let mut statement = Vec::with_capacity(FILE_CONTEXT.len() + 2 + HASH_LEN);
    statement.extend_from_slice(FILE_CONTEXT);
    statement.push(0);
    statement.push(scheme.id());
    statement.extend_from_slice(&digest.digest);
    statement
}

/// A detached signature of a file: the signer's public key, the chunk size and length the
/// tree was made with, the signature of the [statement], and every leaf.
#[derive(Clone, Debug)]
pub struct Signature {
    /// The signer's public key (its scheme is the signature's).
    pub signer: VerifyingKey,
    /// The chunk size.
    pub chunk_size: ChunkSize,
    /// The signed file's length.
    pub len: u64,
    /// The signature of the statement.
    pub signature: Vec<u8>,
    /// The leaves, 32 bytes per chunk.
    pub leaves: Vec<u8>,
}

/// The fixed part of a signature file before the public key.
const FIXED_LEN: usize = 12 + 1 + 1 + 1 + 1 + 4 + 8 + 2;

impl Signature {
    /// Signs a file of `len` bytes whose leaves (chunks of `chunk_size`) are `leaves`.
    ///
    /// # Errors
    ///
    /// [`Error::SignatureFile`] when the leaves do not fit the length; the key's failure.
    pub fn sign_leaves(
        key: &SigningKey,
        chunk_size: ChunkSize,
        len: u64,
        leaves: Vec<u8>,
    ) -> Result<Self> {
        let digest = FileDigest::from_leaves(chunk_size, len, &leaves)?;
        if chunk_count(chunk_size, len) > MAX_CHUNKS {
            return Err(Error::ChunkSize {
                size: chunk_size.get() as u64,
                reason: "makes more than 2^26 chunks of this file (choose a larger chunk size)",
            });
        }
        let signature = key.sign(&statement(key.scheme(), &digest))?;
        Ok(Signature {
            signer: key.verifying_key(),
            chunk_size,
            len,
            signature,
            leaves,
        })
    }

    /// Signs `data` in memory, its leaves computed on `runner`.
    ///
    /// # Errors
    ///
    /// As [`Signature::sign_leaves`].
    pub fn sign_slice(
        runner: &Runner,
        key: &SigningKey,
        chunk_size: ChunkSize,
        data: &[u8],
    ) -> Result<Self> {
        let leaves = runner.vec(&TreeHash::new(chunk_size), data)?;
        Self::sign_leaves(key, chunk_size, data.len() as u64, leaves)
    }

    /// Signs a file, its leaves computed with positional reads on every pool thread.
    ///
    /// # Errors
    ///
    /// Reading fails; as [`Signature::sign_leaves`].
    pub fn sign_file(
        runner: &Runner,
        key: &SigningKey,
        chunk_size: ChunkSize,
        file: &File,
    ) -> Result<Self> {
        let len = file_len(file)?;
        let leaves = runner.file_to_vec(&TreeHash::new(chunk_size), file, None)?;
        Self::sign_leaves(key, chunk_size, len, leaves)
    }

    /// Signs a stream, read through the runner's bounded window.
    ///
    /// # Errors
    ///
    /// Reading fails; as [`Signature::sign_leaves`].
    pub fn sign_stream(
        runner: &Runner,
        key: &SigningKey,
        chunk_size: ChunkSize,
        reader: &mut (dyn Read + Send),
    ) -> Result<Self> {
        let (leaves, len) = leaves_of_stream(runner, chunk_size, reader)?;
        Self::sign_leaves(key, chunk_size, len, leaves)
    }

    /// The scheme of the signature.
    pub fn scheme(&self) -> Scheme {
        self.signer.scheme()
    }

    /// The number of chunks.
    pub fn chunks(&self) -> u64 {
        chunk_count(self.chunk_size, self.len)
    }

    /// The signature file's bytes (`docs/SIGNATURES.md`, *Signature file*).
    pub fn to_bytes(&self) -> Vec<u8> {
        let key = self.signer.to_field();
        let mut out = Vec::with_capacity(FIXED_LEN + key.len() + 2 + self.signature.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.push(self.scheme().id());
        out.push(HASH_BLAKE3_TREE);
        out.push(0);
        out.extend_from_slice(&(self.chunk_size.get() as u32).to_be_bytes());
        out.extend_from_slice(&self.len.to_be_bytes());
        out.extend_from_slice(&(key.len() as u16).to_be_bytes());
        out.extend_from_slice(&key);
        out.extend_from_slice(&(self.signature.len() as u16).to_be_bytes());
        out.extend_from_slice(&self.signature);
        out.extend_from_slice(&self.leaves);
        out
    }

    /// The length a signature file has, from its first bytes (`head`, at least
    /// [`Signature::HEAD_LEN`] of them or the whole file): what a reader caps its read at.
    ///
    /// # Errors
    ///
    /// [`Error::SignatureFile`] when the head is not a signature file's or claims too much.
    pub fn file_len(head: &[u8]) -> Result<u64> {
        let fields = Fields::parse(head)?;
        Ok(fields.end())
    }

    /// How many bytes [`Signature::file_len`] needs to see: the fixed fields, the largest
    /// public key and the largest signature (an ML-DSA-65 file's key and signature are 5.3 KB).
    pub const HEAD_LEN: usize = FIXED_LEN + keys::MAX_PUBLIC_KEY + 2 + keys::MAX_SIGNATURE;

    /// Parses a signature file, checking every field and count before anything is allocated
    /// from it.
    ///
    /// # Errors
    ///
    /// [`Error::SignatureFile`], naming what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let fields = Fields::parse(bytes)?;
        if bytes.len() as u64 != fields.end() {
            return Err(Error::SignatureFile(format!(
                "{} bytes where the header announces {} ({} chunks)",
                bytes.len(),
                fields.end(),
                fields.chunks
            )));
        }
        let at = fields.leaves_at;
        Ok(Signature {
            signer: VerifyingKey::from_field(fields.scheme, fields.key)?,
            chunk_size: fields.chunk_size,
            len: fields.len,
            signature: fields.signature.to_vec(),
            leaves: bytes[at..].to_vec(),
        })
    }

    /// Reads a signature file from `reader`, refusing one longer than its header announces
    /// (so a hostile file cannot make the reader buffer without bound).
    ///
    /// # Errors
    ///
    /// Reading fails; as [`Signature::from_bytes`].
    pub fn read(reader: &mut dyn Read) -> Result<Self> {
        let mut head = Vec::new();
        reader
            .take(Self::HEAD_LEN as u64)
            .read_to_end(&mut head)
            .map_err(|e| Error::io("reading the signature", e))?;
        let end = Self::file_len(&head)?;
        let mut bytes = head;
        reader
            .take((end + 1).saturating_sub(bytes.len() as u64))
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("reading the signature", e))?;
        Self::from_bytes(&bytes)
    }

    /// Checks the signature itself: made by `expected` ([`Error::WrongSigner`] otherwise),
    /// over the statement of the listed leaves ([`Error::BadSignature`] otherwise). The leaves
    /// are then known to be the signer's, and data is checked against them.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn check_signer(&self, expected: &VerifyingKey) -> Result<()> {
        let Some(expected) = expected.for_scheme(self.scheme()) else {
            return Err(self.wrong_signer(expected));
        };
        if expected.to_field() != self.signer.to_field() {
            return Err(self.wrong_signer(&expected));
        }
        let digest = FileDigest::from_leaves(self.chunk_size, self.len, &self.leaves)?;
        if expected.verify(&statement(self.scheme(), &digest), &self.signature) {
            Ok(())
        } else {
            Err(Error::BadSignature)
        }
    }

    fn wrong_signer(&self, expected: &VerifyingKey) -> Error {
        Error::WrongSigner {
            signer: self.signer.fingerprint(),
            expected: expected.fingerprint(),
        }
    }

    /// Compares computed leaves of chunks `first..` with the signed ones; the lowest chunk
    /// that differs is the error.
    fn check_leaves(&self, first: u64, computed: &[u8]) -> Result<()> {
        let at = first as usize * HASH_LEN;
        let signed = &self.leaves[at..at + computed.len()];
        match signed
            .chunks_exact(HASH_LEN)
            .zip(computed.chunks_exact(HASH_LEN))
            .position(|(a, b)| a != b)
        {
            None => Ok(()),
            Some(i) => {
                let index = first + i as u64;
                let size = self.chunk_size.get() as u64;
                Err(Error::ChunkMismatch {
                    index,
                    start: index * size,
                    end: ((index + 1) * size).min(self.len),
                })
            }
        }
    }

    fn check_len(&self, actual: u64) -> Result<()> {
        if actual == self.len {
            Ok(())
        } else {
            Err(Error::SignedLength {
                signed: self.len,
                actual,
            })
        }
    }

    /// Verifies `data` in memory against this signature by `expected`.
    ///
    /// # Errors
    ///
    /// [`Error::WrongSigner`], [`Error::BadSignature`], [`Error::SignedLength`],
    /// [`Error::ChunkMismatch`].
    pub fn verify_slice(
        &self,
        runner: &Runner,
        expected: &VerifyingKey,
        data: &[u8],
    ) -> Result<()> {
        self.check_signer(expected)?;
        self.check_len(data.len() as u64)?;
        let leaves = runner.vec(&TreeHash::new(self.chunk_size), data)?;
        self.check_leaves(0, &leaves)
    }

    /// Verifies a whole file, its chunks hashed on every pool thread.
    ///
    /// # Errors
    ///
    /// As [`Signature::verify_slice`]; reading fails.
    pub fn verify_file(&self, runner: &Runner, expected: &VerifyingKey, file: &File) -> Result<()> {
        self.check_signer(expected)?;
        self.check_len(file_len(file)?)?;
        let leaves = runner.file_to_vec(&TreeHash::new(self.chunk_size), file, None)?;
        self.check_leaves(0, &leaves)
    }

    /// Verifies a stream.
    ///
    /// # Errors
    ///
    /// As [`Signature::verify_slice`]; reading fails.
    pub fn verify_stream(
        &self,
        runner: &Runner,
        expected: &VerifyingKey,
        reader: &mut (dyn Read + Send),
    ) -> Result<()> {
        self.check_signer(expected)?;
        let (leaves, len) = leaves_of_stream(runner, self.chunk_size, reader)?;
        self.check_len(len)?;
        self.check_leaves(0, &leaves)
    }

    /// Verifies only bytes `offset..offset + len` of a file: the chunks that cover them are
    /// hashed, and checked against the signed leaves. Returns the chunks checked.
    ///
    /// # Errors
    ///
    /// As [`Signature::verify_slice`]; [`Error::RangeOutOfBounds`] for a range that starts
    /// past the end.
    pub fn verify_range(
        &self,
        runner: &Runner,
        expected: &VerifyingKey,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<Range<u64>> {
        self.check_signer(expected)?;
        self.check_len(file_len(file)?)?;
        if offset > self.len {
            return Err(Error::RangeOutOfBounds {
                offset,
                len: self.len,
            });
        }
        let size = self.chunk_size.get() as u64;
        let end = offset.saturating_add(len).min(self.len);
        let first = (offset / size).min(self.chunks() - 1);
        let last = if end > offset {
            (end - 1) / size + 1
        } else {
            first + 1
        };
        let chunks = first..last.min(self.chunks());
        let leaves =
            runner.file_to_vec(&TreeHash::new(self.chunk_size), file, Some(chunks.clone()))?;
        self.check_leaves(first, &leaves)?;
        Ok(chunks)
    }
}

/// The fields of a signature file's header, checked.
struct Fields<'a> {
    scheme: Scheme,
    chunk_size: ChunkSize,
    len: u64,
    key: &'a [u8],
    signature: &'a [u8],
    leaves_at: usize,
    chunks: u64,
}

impl<'a> Fields<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Self> {
        let bad = |what: String| Error::SignatureFile(what);
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(bad("no PARACRYPTSIG header".into()));
        }
        let short = || bad("the file is shorter than its header".into());
        let fixed = bytes.get(..FIXED_LEN).ok_or_else(short)?;
        if fixed[12] != VERSION {
            return Err(bad(format!(
                "unsupported version {} (this build reads version 1)",
                fixed[12]
            )));
        }
        let scheme = Scheme::from_id(fixed[13])
            .ok_or_else(|| bad(format!("unknown signature scheme {}", fixed[13])))?;
        if fixed[14] != HASH_BLAKE3_TREE {
            return Err(bad(format!("unknown hash {}", fixed[14])));
        }
        if fixed[15] != 0 {
            return Err(bad("reserved byte is not zero".into()));
        }
        let chunk_size = u32::from_be_bytes(fixed[16..20].try_into().expect("4 bytes"));
        let chunk_size = ChunkSize::new(chunk_size as usize)
            .map_err(|_| bad(format!("invalid chunk size {chunk_size}")))?;
        let len = u64::from_be_bytes(fixed[20..28].try_into().expect("8 bytes"));
        let chunks = chunk_count(chunk_size, len);
        if chunks > MAX_CHUNKS {
            return Err(bad(format!(
                "{chunks} chunks (at most 2^26 are read: {len} bytes in chunks of {chunk_size})"
            )));
        }
        let key_len = u16::from_be_bytes(fixed[28..30].try_into().expect("2 bytes")) as usize;
        if key_len == 0 || key_len > keys::MAX_PUBLIC_KEY {
            return Err(bad(format!("public key of {key_len} bytes")));
        }
        let key = bytes
            .get(FIXED_LEN..FIXED_LEN + key_len)
            .ok_or_else(short)?;
        let at = FIXED_LEN + key_len;
        let sig_len = bytes.get(at..at + 2).ok_or_else(short)?;
        let sig_len = u16::from_be_bytes(sig_len.try_into().expect("2 bytes")) as usize;
        if sig_len == 0 || sig_len > keys::MAX_SIGNATURE {
            return Err(bad(format!("signature of {sig_len} bytes")));
        }
        let signature = bytes.get(at + 2..at + 2 + sig_len).ok_or_else(short)?;
        Ok(Fields {
            scheme,
            chunk_size,
            len,
            key,
            signature,
            leaves_at: at + 2 + sig_len,
            chunks,
        })
    }

    fn end(&self) -> u64 {
        self.leaves_at as u64 + self.chunks * HASH_LEN as u64
    }
}

fn file_len(file: &File) -> Result<u64> {
    Ok(file
        .metadata()
        .map_err(|e| Error::io("reading input metadata", e))?
        .len())
}

/// A reader that counts the bytes it yields.
struct Counted<'r> {
    inner: &'r mut (dyn Read + Send),
    count: u64,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// The leaves of a stream and its length.
fn leaves_of_stream(
    runner: &Runner,
    chunk_size: ChunkSize,
    reader: &mut (dyn Read + Send),
) -> Result<(Vec<u8>, u64)> {
    let mut counted = Counted {
        inner: reader,
        count: 0,
    };
    let mut leaves = Vec::new();
    runner.stream(&TreeHash::new(chunk_size), &mut counted, &mut leaves)?;
    Ok((leaves, counted.count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(len: usize) -> (SigningKey, Vec<u8>, Signature) {
        let key = SigningKey::generate_ed25519();
        let data: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
        let sig = Signature::sign_slice(&Runner::new(), &key, ChunkSize::new(64).unwrap(), &data)
            .unwrap();
        (key, data, sig)
    }

    #[test]
    fn a_signature_file_round_trips_and_verifies() {
        for len in [0, 1, 64, 65, 1000] {
            let (key, data, sig) = signed(len);
            let read = Signature::from_bytes(&sig.to_bytes()).unwrap();
            assert_eq!(read.to_bytes(), sig.to_bytes());
            read.verify_slice(&Runner::new(), &key.verifying_key(), &data)
                .unwrap();
            let mut stream = &data[..];
            read.verify_stream(&Runner::new(), &key.verifying_key(), &mut stream)
                .unwrap();
        }
    }

    #[test]
    fn each_failure_has_its_error() {
        let (key, data, sig) = signed(1000);
        let runner = Runner::new();
        let public = key.verifying_key();
        let mut altered = data.clone();
        altered[700] ^= 0x80;
        assert!(matches!(
            sig.verify_slice(&runner, &public, &altered),
            Err(Error::ChunkMismatch {
                index: 10,
                start: 640,
                end: 704
            })
        ));
        assert!(matches!(
            sig.verify_slice(&runner, &public, &data[..999]),
            Err(Error::SignedLength {
                signed: 1000,
                actual: 999
            })
        ));
        let other = SigningKey::generate_ed25519().verifying_key();
        assert!(matches!(
            sig.verify_slice(&runner, &other, &data),
            Err(Error::WrongSigner { .. })
        ));
        let mut bytes = sig.to_bytes();
        let last = bytes.len() - 1;
        bytes[last] ^= 1; // a leaf
        let forged = Signature::from_bytes(&bytes).unwrap();
        assert!(matches!(
            forged.verify_slice(&runner, &public, &data),
            Err(Error::BadSignature)
        ));
    }

    #[test]
    fn counts_and_lengths_a_file_claims_are_capped() {
        let (_, _, sig) = signed(100);
        let bytes = sig.to_bytes();
        // Every truncation is refused, and so is one byte more.
        for cut in 0..bytes.len() {
            assert!(
                Signature::from_bytes(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Signature::from_bytes(&longer).is_err());
        // A length of 2^64 − 1 in 16-byte chunks is refused before anything is allocated.
        let mut huge = bytes.clone();
        huge[16..20].copy_from_slice(&16u32.to_be_bytes());
        huge[20..28].copy_from_slice(&u64::MAX.to_be_bytes());
        let err = Signature::from_bytes(&huge).unwrap_err().to_string();
        assert!(err.contains("at most 2^26"), "{err}");
        // A reader takes no more than the header announces.
        let mut stream = &longer[..];
        assert!(Signature::read(&mut stream).is_err());
        let mut stream = &bytes[..];
        assert!(Signature::read(&mut stream).is_ok());
    }
}
