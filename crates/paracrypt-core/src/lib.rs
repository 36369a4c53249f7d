//! # paracrypt-core
//!
//! The chunked-parallel engine behind paracrypt: large data is cut into independent chunks by a
//! [`ChunkPlan`](plan::ChunkPlan) and every chunk is encrypted, decrypted or authenticated on its
//! own, in the caller's Rayon thread pool. The output depends only on the plan, never on the
//! number of threads (or, in `paracrypt-mpi`, of ranks).
//!
//! - [`plan`]: the chunk plan, the one description of the work.
//! - [`engine`]: drivers that run a per-chunk transform in memory, file to file (positional I/O)
//!   and stream to stream (a bounded, ordered window).
//! - [`raw`]: AES, DES, 3DES, Blowfish and RC4 in ECB/CBC/CTR, byte-compatible with
//!   `openssl enc`.
//! - [`provider`]: who computes the primitives: one table per backend (aws-lc, the system
//!   OpenSSL, RustCrypto), by default the fastest backend per primitive on this CPU.
//! - [`pubkey`]: RSA key generation with a parallel prime search, RSA signing with the private
//!   operation split mod p ‖ mod q, ECDSA P-256, batch sign/verify, openssl-compatible keys.
//! - [`recipient`]: encrypting to people: age recipients and identities (X25519, SSH, RSA, a
//!   passphrase), through the `age` crate.
//! - [`agefile`]: age v1 files, binary and armored, sealed and opened on every core.
//! - [`info`]: what an encrypted file says about itself without a key, for every format.
//! - [`sign`]: detached signatures of large files over a tree hash of their chunks, hashed on
//!   every core (Ed25519, ECDSA P-256, RSA), verifiable whole or by range.
//! - [`size`]: byte sizes and ranges as people write them (`64KiB`, `OFFSET:LENGTH`).
//! - [`recipe`]: what every format is to the engine ([`Recipe`]), and the one [`Runner`] that
//!   runs any of them file to file, stream to stream, in memory, over a range or as a `Write`
//!   adapter.
//! - [`request`]: the front door every front end calls: what a caller asked for and the
//!   input's first bytes become the one job to run, with every refusal decided there.
//! - [`tree`]: whole directory trees: every file on one schedule, one encrypted (and
//!   optionally signed) manifest at the output's top.
//!
//! This crate never prints and never builds a thread pool: wrap calls in
//! `rayon::ThreadPool::install` to choose the thread count.
// `unsafe` is denied everywhere but in `provider::ffi`, the one module that calls aws-lc
// directly (each block there has a `// SAFETY:` note).
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod agefile;
mod buffer;
pub mod container;
pub mod engine;
mod error;
pub mod info;
pub mod keygen;
pub mod plan;
pub mod provider;
pub mod pubkey;
pub mod raw;
pub mod recipe;
pub mod recipient;
pub mod rekey;
pub mod request;
pub mod secret_file;
pub mod sign;
pub mod size;
mod stream;
pub mod tree;

pub use error::{ChunkError, Error, ErrorKind, HeaderFault, Result, io_text};
pub use recipe::{Recipe, Runner, StreamReader, StreamWriter};
