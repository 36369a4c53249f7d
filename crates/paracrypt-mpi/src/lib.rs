//! # paracrypt-mpi
//!
//! paracrypt's [`Job`](paracrypt_core::engine::Job) spread over the ranks of an MPI job,
//! started by the standard launcher (`mpirun`, `srun`). Every rank runs its chunks with the
//! core's engine in the caller's Rayon pool, so `N` ranks × `M` threads write exactly the bytes
//! one process writes: chunk `i` is the same bytes whoever transforms it.
//!
//! - [`Cluster`]: MPI started once per process, the rank and size, the effective layout, and
//!   collective agreement on failures ([`Cluster::agree`]) so that an error on any rank is
//!   reported once and every rank returns the same way.
//! - [`distribute`]: a whole run of one job, from rank 0's input to its committed output: the
//!   job made on rank 0 from any format's [`Recipe`] (a header is made or read there) and
//!   again on every other rank from its header and, when needed, a key rank 0 sends, the files opened on every rank, the chunks spread with a
//!   [`Schedule`] (contiguous blocks, or a task farm where rank 0 hands out batches on request)
//!   and a [`Transport`] (every rank reads and writes a shared filesystem in place, or only
//!   rank 0 touches files and chunks travel as messages), and the commit of the output
//!   ([`Output`]) only once every rank succeeded.
//! - Inputs and outputs that are not files ([`Remote`]): an object every rank reads its own
//!   ranges of ([`NamedInput`]), and an output made of [`Parts`] — a multipart upload — that
//!   every rank stores its own parts of, the part being the unit of the schedule, completed by
//!   rank 0 with every rank's part ids. No shared filesystem, and no output through rank 0.
//! - [`farm_tasks`]: whole tasks rather than one job's chunks (a directory tree's runs of
//!   files), handed out by rank 0 to whichever rank asks, each task and its result as bytes
//!   the caller makes and reads, on the chunk farm's protocol and under the same watchdog.
//! - A progress watchdog on every rank ([`Options::stall_timeout`]): a run where nothing moves
//!   for that long (a rank stopped, a link cut) is aborted as a whole (`MPI_Abort`), after the
//!   caller's [`Hooks`] reported the [`Stall`] and removed what the rank held; and
//!   [`lost_host_note`], what to tell a user at start whose job spans hosts with Open MPI's
//!   keepalive at its default, under which a lost host holds `mpirun` for minutes after that;
//!   [`Cluster::start_up_note`], what to tell one whose ranks spent their start loading
//!   drivers for adapters the host does not have.
//!
//! ```no_run
//! use paracrypt_core::container::{Encryptor, Key};
//! use paracrypt_mpi::{Cluster, Options, Schedule, Transport};
//! # struct Temp;
//! # impl paracrypt_mpi::Output for Temp {
//! #     fn file(&self) -> &std::fs::File { unimplemented!() }
//! #     fn path(&self) -> Option<&std::path::Path> { unimplemented!() }
//! #     fn commit(self: Box<Self>) -> Result<(), paracrypt_mpi::Failure> { Ok(()) }
//! # }
//! # struct NewTemp;
//! # impl<'a> paracrypt_mpi::NewOutput<'a> for NewTemp {
//! #     fn path(&self) -> Option<&std::path::Path> { unimplemented!() }
//! #     fn create(self: Box<Self>) -> Result<Box<dyn paracrypt_mpi::Output + 'a>, paracrypt_mpi::Failure> {
//! #         Ok(Box::new(Temp))
//! #     }
//! # }
//!
//! let cluster = Cluster::init()?;
//! let pool = rayon::ThreadPoolBuilder::new().build()?;
//! let encryptor = Encryptor::new(Key::from_file_text(&std::fs::read_to_string("my.key")?)?);
//! let options = Options { schedule: Schedule::Dynamic, transport: Transport::SharedFs, ..Options::default() };
//! let root = cluster.is_root().then(|| paracrypt_mpi::Root {
//!     input: std::path::Path::new("/shared/big.tar").into(),
//!     output: paracrypt_mpi::Destination::File(Box::new(NewTemp)),
//! });
//! let summary = paracrypt_mpi::distribute(&cluster, &pool, options, &encryptor, root)?;
//! println!("{} chunks", summary.chunks);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! This crate never prints: failures are typed values ([`Error`], with an
//! [`ErrorKind`](paracrypt_core::ErrorKind)) that the caller reports (the CLI prints them on
//! rank 0 only and maps the kind to its exit status). It logs its steps with the `log` crate
//! (`debug`: each step and failure; `trace`: every batch rank 0 hands out).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod batches;
mod cluster;
mod conversation;
mod distribute;
mod error;
mod farm;
mod lost_host;
mod mca;
mod protocol;
mod remote;
mod run;
mod schedule;
mod start_up;
mod tasks;
mod watchdog;

use std::time::Duration;

pub use cluster::{Cluster, RankLayout};
pub use distribute::{Destination, Input, NewOutput, Output, Root, Summary, distribute};
pub use error::{Error, Failure, RankFailure, Result};
pub use lost_host::lost_host_note;
pub use paracrypt_core::Recipe;
use paracrypt_core::provider::Provider;
pub use remote::{NamedInput, NewParts, Parts, Remote, RootParts};
pub use tasks::{Tasks, Ticker, farm_tasks};
pub use watchdog::{Hooks, Peer, Stall};

/// [`Options::stall_timeout`]'s default: 30 s, so that a fault ends the job within a minute (docs/SCALING.md, *The bound*).
/// The CLI's `--stall-timeout` default is this value: its build fails when the two differ.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How [`distribute`] spreads the work, and what computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Which rank gets which chunks.
    pub schedule: Schedule,
    /// How chunk data reaches the ranks.
    pub transport: Transport,
    /// Under [`Transport::SharedFs`], every rank but 0 `fsync`s the output before reporting
    /// success, so that its data is durable (and, on NFS, on the server, with any write error
    /// reported) before rank 0 commits the output. Rank 0's own writes are its
    /// [`Output::commit`]'s to sync.
    pub sync: bool,
    /// The progress watchdog: when nothing moves on any rank for this long (no chunk written,
    /// no batch or message of the task farm, no step begun: a rank stopped or its link cut),
    /// the rank's watchdog reports the [`Stall`] through the cluster's [`Hooks`] and aborts the
    /// whole job with `MPI_Abort`. It watches the whole run, the final agreement and commit
    /// included. `None` (or zero) runs without one. It must exceed the longest step no rank
    /// reports progress in: one chunk, one batch's message over the slowest link, rank 0's key
    /// derivation (scrypt) and its commit (with `sync`, an `fsync` of the whole output).
    pub stall_timeout: Option<Duration>,
    /// The provider every rank computes the primitives with, handed to the recipe as each rank
    /// makes its job (the same bytes whichever provider runs).
    pub provider: Provider,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            schedule: Schedule::default(),
            transport: Transport::default(),
            sync: false,
            stall_timeout: Some(DEFAULT_STALL_TIMEOUT),
            provider: Provider::default(),
        }
    }
}

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
    /// positional I/O on a filesystem all ranks see (or on an object every rank reaches:
    /// [`Remote`]). No file data crosses MPI.
    #[default]
    SharedFs,
    /// Only rank 0 touches the files: it sends each batch's input to a worker and writes the
    /// results it gets back at their place. For storage only one node sees; rank 0's link and
    /// disk bound the speed-up. (An output made of [`Parts`] is stored by the worker itself:
    /// only the input travels.)
    Messages,
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::SharedFs => "shared-fs",
            Transport::Messages => "messages",
        })
    }
}
