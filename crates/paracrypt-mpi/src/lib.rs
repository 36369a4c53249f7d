//! # paracrypt-mpi
//!
//! paracrypt's [`ChunkPlan`](paracrypt_core::plan::ChunkPlan) spread over the ranks of an MPI
//! job, started by the standard launcher (`mpirun`, `srun`). Every rank runs its chunks with the
//! core's engine in the caller's Rayon pool, so `N` ranks × `M` threads write exactly the bytes
//! one process writes: chunk `i` is the same bytes whoever transforms it.
//!
//! - [`Cluster`]: MPI started once per process, the rank and size, the effective layout, and
//!   collective agreement on failures ([`Cluster::agree`]) so that an error on any rank is
//!   reported once and every rank exits the same way.
//! - [`run`]: one plan over every rank, with a [`Schedule`] (contiguous blocks, or a task farm
//!   where rank 0 hands out batches on request) and a [`Transport`] (every rank reads and writes
//!   a shared filesystem in place, or only rank 0 touches files and chunks travel as messages).
//!
//! ```no_run
//! use paracrypt_core::raw::{Direction, RawCipher};
//! use paracrypt_mpi::{Cluster, Files, Options, Schedule, Transport};
//!
//! let cluster = Cluster::init()?;
//! let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
//! let cipher = RawCipher::new("aes-256-ctr".parse()?, &[7; 32], Some(&[9; 16]))?;
//! let input = std::fs::File::open("/shared/in.bin").unwrap();
//! let output = std::fs::OpenOptions::new().write(true).open("/shared/out.bin").unwrap();
//! let plan = cipher.plan(Direction::Encrypt, input.metadata().unwrap().len(), 1 << 20)?;
//! let mut transform = cipher.transform(Direction::Encrypt, 1 << 20);
//! let options = Options { schedule: Schedule::Static, transport: Transport::SharedFs, sync: false };
//! let files = Files { input: &input, output: &output };
//! let end = paracrypt_mpi::run(&cluster, &pool, &plan, transform.as_work(), options, Some(files))?;
//! if cluster.is_root() {
//!     output.set_len(end).unwrap();
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! This crate never prints: failures are typed values that the caller reports (the CLI prints
//! them on rank 0 only). Library internals log with the `log` crate.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cluster;
mod error;
mod protocol;
mod run;
mod schedule;
mod track;

pub use cluster::{Cluster, RankLayout};
pub use error::{Error, Failure, RankFailure, Result, WORK_FAILED};
pub use run::{Files, Options, run};

/// How chunks are assigned to ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Schedule {
    /// Each rank takes one contiguous block of chunks (`len / size` give or take one), decided
    /// up front. With [`Transport::SharedFs`] no message is exchanged until the end.
    #[default]
    Static,
    /// A task farm: rank 0 hands out batches of chunks to whichever rank asks (guided: large
    /// batches first, smaller towards the end), so a slow or busy rank takes less.
    Dynamic,
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "static" => Ok(Schedule::Static),
            "dynamic" => Ok(Schedule::Dynamic),
            _ => Err(format!("unknown schedule `{s}` (valid: static, dynamic)")),
        }
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Schedule::Static => "static",
            Schedule::Dynamic => "dynamic",
        })
    }
}

/// How chunk data reaches the ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Every rank reads its chunks from the input and writes its output ranges in place, with
    /// positional I/O on a filesystem all ranks see. No file data crosses MPI.
    #[default]
    SharedFs,
    /// Only rank 0 touches the files: it sends each batch's input to a worker and writes the
    /// results it gets back at their place. For storage only one node sees; rank 0's link and
    /// disk bound the speed-up.
    Messages,
}

impl std::str::FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "shared-fs" => Ok(Transport::SharedFs),
            "messages" => Ok(Transport::Messages),
            _ => Err(format!(
                "unknown transport `{s}` (valid: shared-fs, messages)"
            )),
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::SharedFs => "shared-fs",
            Transport::Messages => "messages",
        })
    }
}
