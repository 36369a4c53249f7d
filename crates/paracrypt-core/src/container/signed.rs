//! Signed chunks (container version 3, `docs/FORMAT.md` "Version 3: signed files"): every
//! sealed chunk carries a signature by the file's signer of
//!
//! ```text
//! "paracrypt-signed-chunk-v1" ‖ 0x00 ‖ scheme ‖ SHA-256(public key field) (32) ‖ binding (32)
//!     ‖ i (8) ‖ last (1) ‖ leaf(i, sealed chunk)
//! ```
//!
//! so that a reader checks each chunk on its own, before it opens it, on any core or rank. It
//! is a [`ChunkCipher`] around the suite's: the engine, the layouts and every driver stay as
//! they are (a chunk is only longer by the signature).

use zeroize::Zeroize;

use super::chunk::ChunkCipher;
use crate::buffer::with_scratch;
use crate::engine::ChunkCtx;
use crate::error::{Error, Result};
use crate::sign::tree::leaf;
use crate::sign::{Scheme, SigningKey, VerifyingKey};

/// The domain separation string of a chunk statement.
pub const CHUNK_CONTEXT: &[u8] = b"paracrypt-signed-chunk-v1";

/// The length of a chunk statement.
pub const CHUNK_STATEMENT_LEN: usize = 25 + 2 + 32 + 32 + 8 + 1 + 32;

/// The statement a signed container's chunk `index` signs: what `docs/FORMAT.md` specifies,
/// 132 bytes. `signer` is the signer's public key: the statement names it (by the SHA-256 of
/// its public key field), so that no other key can be made to verify the same signatures.
pub fn chunk_statement(
    signer: &VerifyingKey,
    binding: &[u8; 32],
    index: u64,
    last: bool,
    sealed: &[u8],
) -> [u8; CHUNK_STATEMENT_LEN] {
    statement_of(
        signer.scheme(),
        &key_hash(signer),
        binding,
        index,
        last,
        sealed,
    )
}

/// The SHA-256 of `key`'s public key field, as a chunk statement names it.
pub(crate) fn key_hash(key: &VerifyingKey) -> [u8; 32] {
    crate::pubkey::sha256(&key.to_field())
}

fn statement_of(
    scheme: Scheme,
    key_hash: &[u8; 32],
    binding: &[u8; 32],
    index: u64,
    last: bool,
    sealed: &[u8],
) -> [u8; CHUNK_STATEMENT_LEN] {
    let mut statement = [0u8; CHUNK_STATEMENT_LEN];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        statement[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(CHUNK_CONTEXT);
    put(&[0, scheme.id()]);
    put(key_hash);
    put(binding);
    put(&index.to_be_bytes());
    put(&[u8::from(last)]);
    put(&leaf(index, sealed));
    statement
}

/// A suite's chunk cipher with a signature after every sealed chunk: made by `sign` when
/// sealing, checked with `verify` before anything is opened.
pub(crate) struct SignedChunks {
    /// The suite's chunk cipher.
    pub inner: Box<dyn ChunkCipher>,
    /// The chunk binding (the header MAC the chunks are sealed under).
    pub binding: [u8; 32],
    /// The signer's key, when sealing.
    pub sign: Option<SigningKey>,
    /// The signer's public key (the header's).
    pub verify: VerifyingKey,
    /// [`key_hash`] of `verify`.
    pub key_hash: [u8; 32],
}

impl SignedChunks {
    fn sig_len(&self) -> usize {
        self.verify.signature_len()
    }

    fn statement(&self, chunk: &ChunkCtx<'_>, sealed: &[u8]) -> [u8; CHUNK_STATEMENT_LEN] {
        let scheme = self.verify.scheme();
        let (index, last) = (chunk.index, chunk.is_last);
        statement_of(scheme, &self.key_hash, &self.binding, index, last, sealed)
    }

    /// Signs the sealed chunk `buf[..sealed]` and appends the signature; the chunk's length.
    fn append_signature(
        &self,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        sealed: usize,
    ) -> Result<usize> {
        let key = self.sign.as_ref().ok_or(Error::Provider {
            what: "sealing a signed chunk without the signing key",
        })?;
        let signature = key.sign(&self.statement(chunk, &buf[..sealed]))?;
        let len = self.sig_len();
        if signature.len() != len {
            return Err(Error::Provider {
                what: "a signature of another length than the key's",
            });
        }
        buf[sealed..sealed + len].copy_from_slice(&signature);
        Ok(sealed + len)
    }

    /// The verdict on a chunk whose signature failed, `sealed` its sealed part: opened only to
    /// tell a forgery (the tag holds: [`Error::ChunkSignature`]) from damage (`None`), in a
    /// scratch buffer wiped afterwards, so that none of an unproven chunk's plaintext is ever
    /// written where a caller can see it, not even for a moment.
    fn refuse(&self, chunk: &ChunkCtx<'_>, sealed: &[u8]) -> Result<Option<usize>> {
        with_scratch(sealed.len(), |scratch| {
            scratch.copy_from_slice(sealed);
            let opened = self.inner.open(chunk, scratch, sealed.len());
            scratch.zeroize();
            match opened? {
                Some(_) => Err(Error::ChunkSignature { index: chunk.index }),
                None => Ok(None),
            }
        })
    }

    /// Whether the chunk `sealed ‖ signature` (`input`) is signed: the sealed part's length
    /// when it is, `Err(len)` with it when not, `None` when it is shorter than a signature.
    fn check(&self, chunk: &ChunkCtx<'_>, input: &[u8]) -> Option<Result<usize, usize>> {
        let sealed = input.len().checked_sub(self.sig_len())?;
        let statement = self.statement(chunk, &input[..sealed]);
        Some(if self.verify.verify(&statement, &input[sealed..]) {
            Ok(sealed)
        } else {
            Err(sealed)
        })
    }
}

/// A chunk whose signature fails is refused before it is opened where the caller sees it: as
/// damaged (`None`, which the caller diagnoses like any chunk that fails) when the suite's tag
/// fails too, as [`Error::ChunkSignature`] when the tag holds (someone who has the file key
/// wrote it: a forgery, or a signature altered alone); see [`SignedChunks::refuse`].
impl ChunkCipher for SignedChunks {
    fn seal(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        let sealed = self.inner.seal(chunk, buf, len)?;
        self.append_signature(chunk, buf, sealed)
    }

    fn open(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<Option<usize>> {
        match self.check(chunk, &buf[..len]) {
            None => Ok(None),
            Some(Ok(sealed)) => self.inner.open(chunk, buf, sealed),
            Some(Err(sealed)) => self.refuse(chunk, &buf[..sealed]),
        }
    }

    fn seal_to(&self, chunk: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        let sealed = self.inner.seal_to(chunk, input, output)?;
        self.append_signature(chunk, output, sealed)
    }

    fn open_to(
        &self,
        chunk: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Option<usize>> {
        match self.check(chunk, input) {
            None => Ok(None),
            Some(Ok(sealed)) => self.inner.open_to(chunk, &input[..sealed], output),
            Some(Err(sealed)) => self.refuse(chunk, &input[..sealed]),
        }
    }
}
