//! # paracrypt-bench
//!
//! paracrypt's benchmarks, kept out of the library they measure: the workloads (raw ciphers,
//! container suites, age files, public-key batches), timing them in pools of each thread count,
//! the report (a text table in the layout of the papers' tables, and JSON), the speed-up plot
//! (SVG) and the comparison with the `openssl` binary. `paracrypt bench` and the criterion
//! benches (`benches/`) run these same definitions. Everything here is built on
//! `paracrypt-core`'s public API.
//!
//! - [`symmetric`]: raw ciphers, container suites (to a key or to an X25519 recipient) and age
//!   files, in memory and file to file.
//! - [`pubkey`]: RSA key generation and signatures, P-256 verification, one or in batches.
//! - [`measure`]: medians of repeated runs, interleaved across thread counts.
//! - [`report`], [`plot`]: the table, JSON and SVG.
//! - [`openssl`]: the same work through `openssl enc`, `openssl speed` and `openssl genpkey`.
//!
//! Like the core, this crate never prints and builds no pool but the ones it measures in.
//!
//! ```
//! use paracrypt_bench::symmetric::Symmetric;
//! use paracrypt_core::plan::ChunkSize;
//!
//! let workload = Symmetric::from_name("age/x25519/encrypt").unwrap();
//! let mut prepared = workload.prepare(100_000, ChunkSize::new(16 * 1024)?)?;
//! prepared.run_in_memory()?;
//! # Ok::<(), paracrypt_bench::Error>(())
//! ```
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod measure;
pub mod openssl;
pub mod plot;
pub mod pubkey;
pub mod report;
pub mod symmetric;

use std::path::PathBuf;

/// What can go wrong while benchmarking.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The library failed on a symmetric workload (not expected: a bug, or I/O).
    #[error(transparent)]
    Core(#[from] paracrypt_core::Error),
    /// The library failed on a public-key workload (not expected).
    #[error(transparent)]
    PublicKey(#[from] paracrypt_core::pubkey::Error),
    /// Preparing a workload failed.
    #[error("preparing {workload} on {provider}: {source}")]
    Prepare {
        /// The workload's name.
        workload: String,
        /// The provider it was to run on.
        provider: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// A file of the benchmark could not be written or read.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done (`writing`, `reading`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A thread pool could not be started.
    #[error("cannot start the thread pool: {0}")]
    Pool(#[from] rayon::ThreadPoolBuildError),
    /// The plot could not be drawn.
    #[error("drawing the plot: {0}")]
    Plot(String),
    /// An algorithm list names nothing known, or nothing at all (a usage error).
    #[error("{0}")]
    UnknownAlgorithm(String),
}

impl Error {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            what,
            path: path.into(),
            source,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
