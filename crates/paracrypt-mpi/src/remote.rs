//! Inputs and outputs that are not files on a shared filesystem: an object in a store, which
//! rank 0 names and every rank reaches itself, so that a cluster needs no shared filesystem.
//!
//! This crate knows no store: its caller (the CLI, through `paracrypt-store`) implements these
//! traits. An input is a positional [`Source`] every rank opens by the name rank 0 gives it
//! ([`NamedInput::name`], [`Remote::open_input`]); an output is a set of [`Parts`] — a
//! multipart upload — that rank 0 creates ([`NewParts`]) and every rank joins
//! ([`Remote::join_parts`]). Part `i` of `n` ([`Parts::count`]) is the output of the chunks
//! [`ChunkPlan::block`]`(i, n)`, part 0 with the job's output header in front: the schedule
//! hands out parts rather than chunks, each rank stores the parts it computed, and rank 0
//! completes the output with every rank's part ids ([`RootParts::commit`]).

use std::io::BufRead;

use paracrypt_core::engine::{Job, Source};
use paracrypt_core::plan::ChunkPlan;

use crate::error::Failure;

/// Rank 0's input when it is not a file: an object.
pub trait NamedInput: Send + Sync {
    /// Its length in bytes.
    fn len(&self) -> u64;

    /// Whether it is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A reader from its first byte, for the job's header ([`Recipe::first_job`]).
    ///
    /// [`Recipe::first_job`]: paracrypt_core::Recipe::first_job
    fn header(&self) -> Box<dyn BufRead + '_>;

    /// Its bytes, read positionally.
    fn source(&self) -> &dyn Source;

    /// What the other ranks open it by ([`Remote::open_input`]): its name and the version
    /// rank 0 read, so that every rank reads the same bytes.
    fn name(&self) -> Vec<u8>;
}

/// An output made of parts that every rank stores itself (a multipart upload), as one rank
/// sees it.
pub trait Parts: Sync {
    /// How many parts `plan`'s output is cut into (a function of the plan: the same on every
    /// rank). Part `i` holds the chunks [`ChunkPlan::block`]`(i, count)`.
    fn count(&self, plan: &ChunkPlan) -> usize;

    /// Computes part `index` of `job`'s output from `source` (in the caller's Rayon pool) and
    /// stores it, possibly in the background. Returns where the output ends if the part holds
    /// the last chunk. A chunk's failure is a [`Failure`] naming the chunk.
    fn put(&self, job: &Job, source: &dyn Source, index: usize) -> Result<Option<u64>, Failure>;

    /// Waits until every part this rank stored is stored, and returns their ids by index
    /// (`None`: a part this rank did not store). Called once, before the ranks agree on the
    /// run, so that no part lands after an abort.
    fn finish(&self) -> Result<Vec<Option<String>>, Failure>;
}

/// Rank 0's output made of parts, once created.
pub trait RootParts: Parts {
    /// What the other ranks join it by ([`Remote::join_parts`]): its name and upload id.
    fn name(&self) -> Vec<u8>;

    /// Makes the output final from the ids of all `count` parts (by index, every rank's).
    /// Dropping it without committing must leave nothing behind (the upload aborted).
    fn commit(self: Box<Self>, count: usize, ids: Vec<Option<String>>) -> Result<(), Failure>;
}

/// Rank 0's output made of parts, before it exists.
pub trait NewParts<'a> {
    /// Creates it (the multipart upload), once rank 0's job is made.
    fn create(self: Box<Self>) -> Result<Box<dyn RootParts + 'a>, Failure>;
}

/// How a rank reaches what rank 0 names that is not a file (set with
/// [`Cluster::with_remote`](crate::Cluster::with_remote)).
pub trait Remote: Send + Sync {
    /// Opens the input rank 0 named `name` ([`NamedInput::name`]), `len` bytes long.
    fn open_input(&self, name: &[u8], len: u64) -> Result<Box<dyn Source + Send + Sync>, Failure>;

    /// Joins the output rank 0 created, named `name` ([`RootParts::name`]), to store some of
    /// its parts.
    fn join_parts(&self, name: &[u8]) -> Result<Box<dyn Parts + Send + Sync>, Failure>;
}

/// Part ids as they cross MPI: `(index, length, bytes)` for each part stored.
pub(crate) fn encode_ids(ids: &[Option<String>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (index, id) in ids.iter().enumerate() {
        if let Some(id) = id {
            out.extend_from_slice(&(index as u64).to_le_bytes());
            out.extend_from_slice(&(id.len() as u64).to_le_bytes());
            out.extend_from_slice(id.as_bytes());
        }
    }
    out
}

/// Adds the ids `bytes` carry ([`encode_ids`]) to `ids` (parts beyond `ids` are ignored).
pub(crate) fn decode_ids(mut bytes: &[u8], ids: &mut [Option<String>]) {
    let number = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as usize;
    while bytes.len() >= 16 {
        let (index, len) = (number(bytes), number(&bytes[8..]));
        let Some(id) = bytes.get(16..16 + len) else {
            return;
        };
        if let Some(slot) = ids.get_mut(index) {
            *slot = Some(String::from_utf8_lossy(id).into_owned());
        }
        bytes = &bytes[16 + len..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let mine = vec![None, Some("\"etag-1\"".to_string()), None, Some("x".into())];
        let mut all = vec![Some("zero".to_string()), None, None, None];
        decode_ids(&encode_ids(&mine), &mut all);
        assert_eq!(
            all,
            vec![
                Some("zero".into()),
                Some("\"etag-1\"".into()),
                None,
                Some("x".into())
            ]
        );
        decode_ids(&encode_ids(&[]), &mut all);
        assert_eq!(all[2], None);
    }
}
