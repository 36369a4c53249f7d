//! The tree hash of a signed file (`docs/SIGNATURES.md`, *Tree hash*): a BLAKE3 digest of
//! each chunk (a leaf), a binary Merkle tree over the leaves, and the file digest that binds
//! the tree's root to the chunk size and the file's length.
//!
//! The leaves are computed on the chunk engine: [`TreeHash`] is a [`Recipe`] whose job turns
//! every chunk of the input into its 32-byte leaf ([`Tail::Digest`](crate::plan::Tail)), so
//! they run on every pool thread, on every driver (file, stream, memory, range, the `Write`
//! adapter) and, in `paracrypt-mpi`, on every rank; the job's output is the list of leaves,
//! the same bytes at any thread or rank count. The tree over the leaves is a few microseconds
//! per thousand chunks and runs where the leaves are gathered.
//!
//! ```
//! use paracrypt_core::plan::ChunkSize;
//! use paracrypt_core::sign::tree::{FileDigest, TreeHash};
//! use paracrypt_core::Runner;
//!
//! let data = vec![7u8; 10_000];
//! let recipe = TreeHash::new(ChunkSize::new(4096)?);
//! let leaves = Runner::new().vec(&recipe, &data)?;
//! assert_eq!(leaves.len(), 3 * 32);
//! let digest = FileDigest::from_leaves(recipe.chunk_size(), data.len() as u64, &leaves)?;
//! assert_eq!(digest, FileDigest::of_slice(recipe.chunk_size(), &data));
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

use std::io::BufRead;

use crate::engine::{ChunkCtx, ChunkTransform, Job, Transform};
use crate::error::{Error, Result};
use crate::plan::{ChunkLayout, ChunkSize};
use crate::provider::Provider;
use crate::recipe::Recipe;

/// The length of a leaf, an inner node and the file digest: 32 bytes (BLAKE3's default).
pub const HASH_LEN: usize = 32;

/// The first byte of a leaf's input.
const LEAF: u8 = 0x00;
/// The first byte of an inner node's input.
const NODE: u8 = 0x01;
/// The first byte of the file digest's input.
const ROOT: u8 = 0x02;

/// The most chunks a signed file may have (2^32: 4 PiB at the default 1 MiB chunks). A
/// signature file that claims more is refused before anything is read or allocated.
pub const MAX_CHUNKS: u64 = 1 << 32;

/// A leaf: `BLAKE3(0x00 ‖ index (8 bytes, big-endian) ‖ chunk)`.
pub fn leaf(index: u64, chunk: &[u8]) -> [u8; HASH_LEN] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&[LEAF]);
    hasher.update(&index.to_be_bytes());
    hasher.update(chunk);
    *hasher.finalize().as_bytes()
}

/// An inner node: `BLAKE3(0x01 ‖ left ‖ right)`.
fn node(left: &[u8; HASH_LEN], right: &[u8; HASH_LEN]) -> [u8; HASH_LEN] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&[NODE]);
    hasher.update(left);
    hasher.update(right);
    *hasher.finalize().as_bytes()
}

/// The root of the Merkle tree over `leaves` (at least one): the leaf itself for one leaf;
/// otherwise `node(root(first k), root(rest))` with `k` the largest power of two below the
/// count (the shape of RFC 9162's Merkle tree hash).
pub fn root(leaves: &[[u8; HASH_LEN]]) -> [u8; HASH_LEN] {
    assert!(!leaves.is_empty(), "a tree has at least one leaf");
    if leaves.len() == 1 {
        return leaves[0];
    }
    let below = leaves.len() - 1;
    let k = 1usize << (usize::BITS - 1 - below.leading_zeros());
    let (left, right) = leaves.split_at(k);
    // The two halves are independent: large trees (millions of chunks) use the pool.
    let (left, right) = if leaves.len() >= 1 << 14 {
        rayon::join(|| root(left), || root(right))
    } else {
        (root(left), root(right))
    };
    node(&left, &right)
}

/// The number of chunks of a file of `len` bytes in chunks of `chunk_size`: at least one (the
/// empty file is one empty chunk).
pub fn chunk_count(chunk_size: ChunkSize, len: u64) -> u64 {
    len.div_ceil(chunk_size.get() as u64).max(1)
}

/// What a signature signs: `BLAKE3(0x02 ‖ chunk size (4 bytes) ‖ length (8 bytes) ‖ root)`,
/// binding the tree to the chunk size and the file's length (so neither can be changed under
/// a valid signature, and any range can be checked against it alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileDigest {
    /// The chunk size.
    pub chunk_size: ChunkSize,
    /// The file's length in bytes.
    pub len: u64,
    /// The digest.
    pub digest: [u8; HASH_LEN],
}

impl FileDigest {
    /// The digest of a file of `len` bytes whose leaves are `leaves` (32 bytes each, as many as
    /// the file has chunks).
    ///
    /// # Errors
    ///
    /// [`Error::SignatureFile`] when the number of leaves is not the file's chunk count.
    pub fn from_leaves(chunk_size: ChunkSize, len: u64, leaves: &[u8]) -> Result<Self> {
        let count = chunk_count(chunk_size, len);
        if leaves.len() as u64 != count * HASH_LEN as u64 {
            return Err(Error::SignatureFile(format!(
                "{} bytes of leaves for {count} chunks",
                leaves.len()
            )));
        }
        let leaves: Vec<[u8; HASH_LEN]> = leaves
            .chunks_exact(HASH_LEN)
            .map(|leaf| leaf.try_into().expect("32 bytes"))
            .collect();
        Ok(Self::from_root(chunk_size, len, &root(&leaves)))
    }

    /// The digest of a file of `len` bytes whose tree has root `root`.
    pub fn from_root(chunk_size: ChunkSize, len: u64, root: &[u8; HASH_LEN]) -> Self {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&[ROOT]);
        hasher.update(&(chunk_size.get() as u32).to_be_bytes());
        hasher.update(&len.to_be_bytes());
        hasher.update(root);
        FileDigest {
            chunk_size,
            len,
            digest: *hasher.finalize().as_bytes(),
        }
    }

    /// The digest of `data`, on the calling thread (the reference the engine's result is
    /// tested against).
    pub fn of_slice(chunk_size: ChunkSize, data: &[u8]) -> Self {
        let leaves: Vec<[u8; HASH_LEN]> = if data.is_empty() {
            vec![leaf(0, &[])]
        } else {
            data.chunks(chunk_size.get())
                .enumerate()
                .map(|(i, chunk)| leaf(i as u64, chunk))
                .collect()
        };
        Self::from_root(chunk_size, data.len() as u64, &root(&leaves))
    }
}

/// The recipe of a file's leaves: every chunk of `chunk_size` bytes becomes its 32-byte
/// [`leaf`], so the job's output is the list of leaves (`32 × chunks` bytes).
#[derive(Clone, Copy, Debug)]
pub struct TreeHash {
    chunk_size: ChunkSize,
}

impl TreeHash {
    /// Leaves of chunks of `chunk_size` bytes.
    pub fn new(chunk_size: ChunkSize) -> Self {
        TreeHash { chunk_size }
    }

    /// The chunk size.
    pub fn chunk_size(&self) -> ChunkSize {
        self.chunk_size
    }

    fn job(&self, input_len: Option<u64>) -> Result<Job> {
        let layout = ChunkLayout::digest(0, self.chunk_size.get(), HASH_LEN)?;
        Job::new(layout, Transform::parallel(Leaves)).planned_for(input_len)
    }
}

/// BLAKE3 is one implementation whichever provider is named (the `blake3` crate, with its
/// SIMD code chosen for the CPU at run time): the leaves are the same bytes everywhere.
impl Recipe for TreeHash {
    fn first_job(
        &self,
        _input: &mut dyn BufRead,
        input_len: Option<u64>,
        _provider: Provider,
    ) -> Result<Job> {
        self.job(input_len)
    }

    fn job_from_header(
        &self,
        _header: &[u8],
        _key: Option<&[u8]>,
        input_len: Option<u64>,
        _provider: Provider,
    ) -> Result<Job> {
        self.job(input_len)
    }
}

/// The transform: a chunk in, its leaf out.
struct Leaves;

impl ChunkTransform for Leaves {
    fn transform(&self, chunk: &ChunkCtx<'_>, buf: &mut [u8], input_len: usize) -> Result<usize> {
        let hash = leaf(chunk.index, &buf[..input_len]);
        buf[..HASH_LEN].copy_from_slice(&hash);
        Ok(HASH_LEN)
    }

    fn transform_to(&self, chunk: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        output[..HASH_LEN].copy_from_slice(&leaf(chunk.index, input));
        Ok(HASH_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runner;

    fn leaves_of(chunk: usize, data: &[u8], threads: usize) -> Vec<u8> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let recipe = TreeHash::new(ChunkSize::new(chunk).unwrap());
        pool.install(|| Runner::new().vec(&recipe, data).unwrap())
    }

    #[test]
    fn the_engine_gives_the_serial_leaves_at_every_boundary_and_thread_count() {
        // 16 bytes: a chunk shorter than its leaf.
        for (chunk, len) in [0, 1, 63, 64, 65, 128, 129, 64 * 7 + 1]
            .into_iter()
            .flat_map(|len| [(64, len), (16, len)])
        {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let size = ChunkSize::new(chunk).unwrap();
            let expected = FileDigest::of_slice(size, &data);
            for threads in [1, 3] {
                let leaves = leaves_of(chunk, &data, threads);
                assert_eq!(leaves.len() as u64, chunk_count(size, len as u64) * 32);
                let got = FileDigest::from_leaves(size, len as u64, &leaves).unwrap();
                assert_eq!(got, expected, "len {len}, {threads} threads");
            }
        }
    }

    #[test]
    fn streams_and_the_write_adapter_give_the_same_leaves() {
        use std::io::Write;
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let recipe = TreeHash::new(ChunkSize::new(256).unwrap());
        let runner = Runner::new().window(3);
        let in_memory = runner.vec(&recipe, &data).unwrap();
        let mut streamed = Vec::new();
        runner
            .stream(&recipe, &mut &data[..], &mut streamed)
            .unwrap();
        assert_eq!(streamed, in_memory);
        let mut writer = runner.writer(&recipe, Vec::new()).unwrap();
        writer.write_all(&data).unwrap();
        assert_eq!(writer.finish().unwrap(), in_memory);
        let mut empty = Vec::new();
        runner.stream(&recipe, &mut &[][..], &mut empty).unwrap();
        assert_eq!(empty, leaf(0, &[]));
    }

    #[test]
    fn the_tree_has_rfc_9162_shape_and_separated_domains() {
        let l: Vec<[u8; 32]> = (0..5u8).map(|i| leaf(u64::from(i), &[i])).collect();
        // 5 leaves: node(node(node(0,1), node(2,3)), 4).
        let expected = node(&node(&node(&l[0], &l[1]), &node(&l[2], &l[3])), &l[4]);
        assert_eq!(root(&l), expected);
        assert_eq!(root(&l[..3]), node(&node(&l[0], &l[1]), &l[2]));
        // A leaf is never a node of the same bytes, nor a node the file digest.
        let mut both = [0u8; 64];
        both[..32].copy_from_slice(&l[0]);
        both[32..].copy_from_slice(&l[1]);
        assert_ne!(leaf(0, &both), node(&l[0], &l[1]));
        // Length and chunk size are bound.
        let size = ChunkSize::new(16).unwrap();
        let other = ChunkSize::new(32).unwrap();
        let a = FileDigest::from_root(size, 10, &l[0]);
        assert_ne!(a, FileDigest::from_root(size, 11, &l[0]));
        assert_ne!(a.digest, FileDigest::from_root(other, 10, &l[0]).digest);
    }

    #[test]
    fn a_wrong_number_of_leaves_is_refused() {
        let size = ChunkSize::new(16).unwrap();
        assert!(FileDigest::from_leaves(size, 33, &[0; 64]).is_err());
        assert!(FileDigest::from_leaves(size, 33, &[0; 96]).is_ok());
        assert!(FileDigest::from_leaves(size, 0, &[0; 32]).is_ok());
    }
}
