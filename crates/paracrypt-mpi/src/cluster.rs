//! MPI, started once, and the collective steps every rank takes together.
//!
//! Only the thread that called [`Cluster::init`] calls MPI, but for rank 0's sending threads
//! under the messages transport (when MPI gives `MPI_THREAD_MULTIPLE`): Rayon threads transform
//! chunks and do file I/O, never messages. Every wait on MPI here polls a
//! non-blocking request and sleeps between polls, because Open MPI's blocking calls spin a core
//! that, on a busy or oversubscribed node, the rank's own Rayon threads need.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::Threading;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::request::{Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::error::{Error, Failure, RankFailure, Result, kind_from_wire, kind_to_wire};
use crate::protocol::TAG_LAYOUT;
use crate::remote::Remote;
use crate::watchdog::Hooks;

/// One process of an MPI job: its rank in the world and the collective steps.
///
/// Dropping it finalises MPI: keep it until the work and its agreement are done.
pub struct Cluster {
    world: SimpleCommunicator,
    /// MPI took `MPI_THREAD_MULTIPLE`: threads other than the main one may send.
    multiple: bool,
    /// What the caller does about a stalled run.
    hooks: Option<Arc<dyn Hooks>>,
    /// How this rank reaches inputs and outputs that are not files.
    remote: Option<Arc<dyn Remote>>,
    /// How long `MPI_Init` took in this process.
    started_in: Duration,
    // Dropped last: finalises MPI.
    _universe: Universe,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

/// Where one rank runs and with how many threads (see [`Cluster::layout`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankLayout {
    /// The rank.
    pub rank: usize,
    /// The node's name as MPI gives it.
    pub host: String,
    /// The rank's Rayon threads.
    pub threads: usize,
    /// The cores the rank may run on (its CPU affinity, which `mpirun --bind-to` sets).
    pub cores: usize,
}

impl Cluster {
    /// Starts MPI, asking for `MPI_THREAD_MULTIPLE` (rank 0 of the messages transport sends
    /// from one thread per worker while its main thread receives; with less, it does both on
    /// one thread, in turn). Fails when MPI is already started in this process.
    pub fn init() -> Result<Self> {
        let start = Instant::now();
        let (universe, threading) =
            mpi::initialize_with_threading(Threading::Multiple).ok_or(Error::Init)?;
        let started_in = start.elapsed();
        let world = universe.world();
        log::debug!(
            "rank {} of {}: MPI started in {:.3} s ({threading:?} threading)",
            world.rank(),
            world.size(),
            started_in.as_secs_f64()
        );
        Ok(Cluster {
            world,
            multiple: threading == Threading::Multiple,
            hooks: None,
            remote: None,
            started_in,
            _universe: universe,
        })
    }

    /// Sets what this process does when a run must end abnormally: report a stall and remove
    /// what the rank holds ([`Hooks`]). Without hooks, a stalled run is aborted with error code
    /// 1 and nothing said.
    pub fn with_hooks(mut self, hooks: impl Hooks + 'static) -> Self {
        self.hooks = Some(Arc::new(hooks));
        self
    }

    pub(crate) fn hooks(&self) -> Option<&Arc<dyn Hooks>> {
        self.hooks.as_ref()
    }

    /// Sets how this process reaches the inputs and outputs rank 0 names that are not files
    /// (objects in a store: [`Remote`]). Without it, such a run fails on the ranks that need
    /// it.
    pub fn with_remote(mut self, remote: impl Remote + 'static) -> Self {
        self.remote = Some(Arc::new(remote));
        self
    }

    pub(crate) fn remote(&self) -> Option<&Arc<dyn Remote>> {
        self.remote.as_ref()
    }

    /// What to tell a user about this process's start, when Open MPI spent it loading drivers
    /// for adapters this host does not have and a setting would skip them (with that setting);
    /// `None` otherwise. A hint for a verbose run: it costs each rank about 0.1 s per driver.
    pub fn start_up_note(&self) -> Option<String> {
        crate::start_up::start_up_note(self.started_in)
    }

    /// This process's rank, from 0.
    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// Whether this is rank 0, the one that creates, renames and reports.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    pub(crate) fn world(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// Whether threads other than the one that started MPI may call it.
    pub(crate) fn multiple(&self) -> bool {
        self.multiple
    }

    /// Gathers every rank's host, threads and cores on rank 0 (collective). Returns them, in
    /// rank order, on rank 0 and `None` elsewhere.
    pub fn layout(&self, threads: usize) -> Option<Vec<RankLayout>> {
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mine = RankLayout {
            rank: self.rank(),
            host,
            threads,
            cores,
        };
        if !self.is_root() {
            let mut message = Vec::new();
            message.extend_from_slice(&(threads as u64).to_le_bytes());
            message.extend_from_slice(&(cores as u64).to_le_bytes());
            message.extend_from_slice(mine.host.as_bytes());
            self.world
                .process_at_rank(0)
                .send_with_tag(&message[..], TAG_LAYOUT);
            return None;
        }
        let mut all = vec![mine];
        for rank in 1..self.size() {
            let (message, _) = self
                .world
                .process_at_rank(rank as i32)
                .receive_vec_with_tag::<u8>(TAG_LAYOUT);
            let number = |at: usize| {
                u64::from_le_bytes(message[at..at + 8].try_into().expect("8 bytes")) as usize
            };
            all.push(RankLayout {
                rank,
                threads: number(0),
                cores: number(8),
                host: String::from_utf8_lossy(&message[16..]).into_owned(),
            });
        }
        Some(all)
    }

    /// Agrees on the outcome of a step every rank took (collective). When no rank failed, each
    /// gets its own value back. Otherwise every rank gets the same [`Error::Rank`]: the failure
    /// without a chunk, else with the lowest chunk, from the lowest rank that had it.
    pub fn agree<T>(&self, local: std::result::Result<T, Failure>) -> Result<T> {
        let key = match &local {
            Ok(_) => u64::MAX,
            Err(failure) => failure.key(),
        };
        let first = self.all_reduce(key, SystemOperation::min());
        if first == u64::MAX {
            return Ok(local.unwrap_or_else(|_| unreachable!("no rank failed")));
        }
        let candidate = if key == first {
            self.rank() as u64
        } else {
            u64::MAX
        };
        let rank = self.all_reduce(candidate, SystemOperation::min()) as usize;
        let (kind, message) = match &local {
            Err(failure) if rank == self.rank() => {
                (kind_to_wire(failure.kind), failure.message.clone())
            }
            _ => (0, String::new()),
        };
        let kind = kind_from_wire(self.broadcast_u64(rank, kind));
        let message = self.broadcast_bytes(rank, message.into_bytes());
        let failure = RankFailure {
            rank,
            chunk: (first > 0).then(|| first - 1),
            message: String::from_utf8_lossy(&message).into_owned(),
            kind,
        };
        log::debug!("rank {}: the ranks agree on {failure:?}", self.rank());
        Err(Error::Rank(failure))
    }

    /// The largest of every rank's `value` (collective).
    pub fn all_max(&self, value: u64) -> u64 {
        self.all_reduce(value, SystemOperation::max())
    }

    /// Rank `root`'s `bytes`, on every rank (collective; other ranks' `bytes` are ignored).
    pub fn broadcast_bytes(&self, root: usize, bytes: Vec<u8>) -> Vec<u8> {
        let len = self.broadcast_u64(root, bytes.len() as u64) as usize;
        let mut buf = if self.rank() == root {
            bytes
        } else {
            vec![0u8; len]
        };
        if len > 0 {
            let root = self.world.process_at_rank(root as i32);
            mpi::request::scope(|scope| {
                poll(root.immediate_broadcast_into(scope, &mut buf[..]));
            });
        }
        buf
    }

    /// Returns once every rank has called it (collective), waiting by polling.
    pub(crate) fn barrier(&self) {
        poll(self.world.immediate_barrier());
    }

    /// Rank `root`'s `value`, on every rank (collective).
    pub fn broadcast_u64(&self, root: usize, value: u64) -> u64 {
        let mut value = value;
        let root = self.world.process_at_rank(root as i32);
        mpi::request::scope(|scope| {
            poll(root.immediate_broadcast_into(scope, &mut value));
        });
        value
    }

    fn all_reduce(&self, value: u64, op: SystemOperation) -> u64 {
        let mut out = 0u64;
        mpi::request::scope(|scope| {
            poll(
                self.world
                    .immediate_all_reduce_into(scope, &value, &mut out, op),
            );
        });
        out
    }
}

/// Waits for `request` by testing it and sleeping between tests.
pub(crate) fn poll<'a, D: ?Sized, S: Scope<'a>>(mut request: Request<'a, D, S>) {
    let mut backoff = Backoff::new();
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => {
                request = pending;
                backoff.snooze();
            }
        }
    }
}

/// Sleeps a little longer each time nothing happened, up to a cap.
pub(crate) struct Backoff {
    wait: Duration,
}

impl Backoff {
    const MIN: Duration = Duration::from_micros(10);
    const MAX: Duration = Duration::from_micros(500);

    pub(crate) fn new() -> Self {
        Backoff { wait: Self::MIN }
    }

    /// Something happened: poll again soon.
    pub(crate) fn reset(&mut self) {
        self.wait = Self::MIN;
    }

    /// Nothing happened: sleep, then wait longer next time.
    pub(crate) fn snooze(&mut self) {
        std::thread::sleep(self.wait);
        self.wait = (self.wait * 2).min(Self::MAX);
    }
}
