//! The progress watchdog: a thread on every rank, for the whole of a distributed run, that
//! aborts the whole job when nothing moved for the stall timeout
//! ([`Options::stall_timeout`](crate::Options::stall_timeout)).
//!
//! Progress is what shows the run moving: a chunk written, a batch handed out, run or
//! returned, a message of the task farm sent or received, a step of the run begun. The
//! engine's threads count it with one relaxed atomic add per chunk; what a rank is doing (its
//! step, the batches it runs and, on rank 0 of a task farm, the batches each worker holds)
//! changes under a lock taken per batch or step, never per chunk.
//!
//! A rank that waits for the others (in an agreement, or while rank 0 runs a serial job alone)
//! sees no progress of its own, so the ranks tell each other theirs: with
//! `MPI_THREAD_MULTIPLE`, each watchdog sends a tiny heartbeat (its step and host) whenever its
//! rank moved since the last one, workers to rank 0 and rank 0 to every worker, so the
//! progress of any rank reaches every other one within two intervals. A worker relays nothing,
//! so heartbeats never keep each other alive. Without `MPI_THREAD_MULTIPLE` a rank watches its
//! own progress only.
//!
//! Rank 0 fires first: it knows which worker holds which batch, so its report says the most.
//! The other ranks fire [`GRACE`] later (plus one interval), so that they only report when
//! rank 0 could not (a link cut leaves a worker alone; rank 0 killed); otherwise `MPI_Abort`
//! from rank 0 reaches them first.
//!
//! When the watchdog fires, it builds a [`Stall`] (what this rank knew: its step, its chunks in
//! flight, which rank it waited for and what that rank held), hands it to the caller's
//! [`Hooks::stalled`] (which reports it and removes what the rank holds: this crate never
//! prints) and calls `MPI_Abort`, which ends every rank of the job. Rank 0 creates its output
//! only through [`Progress::creating`]: once the watchdog fired, nothing is created that the
//! hooks could not have removed, and a creation under way is waited for (up to a second) so
//! that the hooks see what it made.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mpi::point_to_point::MatchedReceiveVec as _;
use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::protocol::TAG_ALIVE;

/// How much later than rank 0 the other ranks' watchdogs fire (besides one interval).
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// What the caller does when a distributed run must end abnormally: this crate never prints
/// and never handles signals, so the caller reports and cleans up. Set with
/// [`Cluster::with_hooks`](crate::Cluster::with_hooks).
pub trait Hooks: Send + Sync {
    /// Under [`Transport::SharedFs`](crate::Transport::SharedFs), a rank other than 0 writes
    /// into rank 0's output at `path` (`Some`, before its first chunk) until its run ends
    /// (`None`). A rank that ends abnormally meanwhile (a signal from `mpirun` after rank 0
    /// died) should remove it: rank 0 may not be there to.
    fn writing_shared(&self, path: Option<&Path>) {
        let _ = path;
    }

    /// The watchdog found no progress for the stall timeout: report `stall` and remove what
    /// this rank holds (rank 0: its uncommitted output). Returns the error code of the
    /// `MPI_Abort` that follows (the status `mpirun` exits with). Called on the watchdog's
    /// thread; it never returns to the run.
    fn stalled(&self, stall: &Stall) -> i32;
}

/// What a rank knew when its watchdog fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    /// This rank.
    pub rank: usize,
    /// This rank's host, as MPI names it.
    pub host: String,
    /// How long nothing moved.
    pub idle: Duration,
    /// What this rank was doing.
    pub step: &'static str,
    /// The chunks this rank was transforming.
    pub running: Vec<Range<u64>>,
    /// The ranks this rank was waiting for, as far as it could tell.
    pub waiting_for: Vec<Peer>,
}

/// Another rank, as a stalled rank last knew it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its rank.
    pub rank: usize,
    /// Its host, when it was heard from.
    pub host: Option<String>,
    /// The chunks it held (rank 0 knows which batches each worker holds).
    pub chunks: Vec<Range<u64>>,
    /// How long since it was last heard from (`None`: never).
    pub silent: Option<Duration>,
}

impl std::fmt::Display for Stall {
    /// One line: `rank 0 on h1: no progress for 5.0 s while running the chunks (chunks
    /// 10..12 in flight); waiting for rank 2 on h3 (chunks 40..48, silent for 5.2 s)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} on {}: no progress for {:.1} s while {}",
            self.rank,
            self.host,
            self.idle.as_secs_f64(),
            self.step
        )?;
        if !self.running.is_empty() {
            write!(f, " (chunks {} in flight)", ranges(&self.running))?;
        }
        if self.waiting_for.is_empty() {
            return f.write_str("; waiting for the other ranks");
        }
        f.write_str("; waiting for ")?;
        for (i, peer) in self.waiting_for.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "rank {}", peer.rank)?;
            if let Some(host) = &peer.host {
                write!(f, " on {host}")?;
            }
            let mut notes = Vec::new();
            if !peer.chunks.is_empty() {
                notes.push(format!("chunks {}", ranges(&peer.chunks)));
            }
            notes.push(match peer.silent {
                Some(silent) => format!("silent for {:.1} s", silent.as_secs_f64()),
                None => "never heard from".into(),
            });
            write!(f, " ({})", notes.join(", "))?;
        }
        Ok(())
    }
}

/// `a..b, c..d`, adjacent ranges merged.
fn ranges(list: &[Range<u64>]) -> String {
    let mut sorted = list.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::new();
    for range in sorted {
        match merged.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => merged.push(range),
        }
    }
    merged
        .iter()
        .map(|r| format!("{}..{}", r.start, r.end))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The steps of a run, as a rank reports them to the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Step {
    /// Making the job, opening the files, agreeing on them.
    #[default]
    Setup = 0,
    /// Running chunks (or, on a worker of a serial job, waiting for rank 0 to run them).
    Chunks = 1,
    /// Done with its chunks, agreeing with the others on how they went.
    Agreeing = 2,
    /// Rank 0 commits the output; the others wait to learn how that went.
    Committing = 3,
}

impl Step {
    const ALL: [Step; 4] = [Step::Setup, Step::Chunks, Step::Agreeing, Step::Committing];

    fn describe(self) -> &'static str {
        match self {
            Step::Setup => "setting up (the job, the files)",
            Step::Chunks => "running the chunks",
            Step::Agreeing => "agreeing on the chunks' outcome",
            Step::Committing => "committing the output",
        }
    }

    /// Whether a rank at this step has its part done and only waits for the others.
    fn waits(self) -> bool {
        self >= Step::Agreeing
    }
}

/// One rank's progress, shared by its run and its watchdog.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Events of this rank's own work.
    local: AtomicU64,
    state: Mutex<State>,
    /// Between creating what the hooks remove and the watchdog firing: [`IDLE`], [`CREATING`]
    /// or [`ABORTING`].
    fence: AtomicU8,
}

/// Neither creating nor aborting.
const IDLE: u8 = 0;
/// Rank 0 is creating its output.
const CREATING: u8 = 1;
/// The watchdog fired: nothing more is created.
const ABORTING: u8 = 2;

/// How long a firing watchdog waits for a creation under way to end.
const CREATION_WAIT: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct State {
    step: Step,
    running: Vec<Range<u64>>,
    /// Rank 0: the chunks each worker holds (handed out, not returned).
    held: BTreeMap<usize, Vec<Range<u64>>>,
}

impl Progress {
    /// Runs `create` (rank 0 creating its output) unless the watchdog has fired, in which case
    /// `None`: what the hooks remove is never created after they ran.
    pub fn creating<T>(&self, create: impl FnOnce() -> T) -> Option<T> {
        self.fence
            .compare_exchange(IDLE, CREATING, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        let made = create();
        self.fence.store(IDLE, Ordering::Release);
        Some(made)
    }

    /// The watchdog fires: no creation starts from now on, and one under way is waited for,
    /// for [`CREATION_WAIT`] at most (a stuck file system does not hold the abort).
    fn aborting(&self) {
        let start = Instant::now();
        while self
            .fence
            .compare_exchange(IDLE, ABORTING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            if start.elapsed() >= CREATION_WAIT {
                self.fence.store(ABORTING, Ordering::Release);
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Something moved on this rank (a chunk, a message).
    pub fn tick(&self) {
        self.local.fetch_add(1, Ordering::Relaxed);
    }

    fn ticks(&self) -> u64 {
        self.local.load(Ordering::Relaxed)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This rank begins `step`.
    pub fn step(&self, step: Step) {
        self.state().step = step;
        self.tick();
    }

    /// This rank starts transforming `batch`.
    pub fn start(&self, batch: &Range<u64>) {
        self.state().running.push(batch.clone());
        self.tick();
    }

    /// This rank is done with `batch`.
    pub fn finish(&self, batch: &Range<u64>) {
        let mut state = self.state();
        if let Some(at) = state.running.iter().position(|r| r == batch) {
            state.running.swap_remove(at);
        }
        drop(state);
        self.tick();
    }

    /// Rank 0: `rank` now holds `batch`.
    pub fn handed(&self, rank: usize, batch: &Range<u64>) {
        self.state()
            .held
            .entry(rank)
            .or_default()
            .push(batch.clone());
        self.tick();
    }

    /// Rank 0: `rank` returned `batch`.
    pub fn returned(&self, rank: usize, batch: &Range<u64>) {
        let mut state = self.state();
        if let Some(held) = state.held.get_mut(&rank)
            && let Some(at) = held.iter().position(|r| r == batch)
        {
            held.swap_remove(at);
        }
        drop(state);
        self.tick();
    }
}

/// What a watchdog heard of another rank.
#[derive(Debug)]
struct Heard {
    host: String,
    step: Step,
    at: Instant,
}

/// A running watchdog; dropping it stops it.
pub(crate) struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching `progress`, unless `timeout` is `None` (then this does nothing).
    pub fn start(
        rank: usize,
        size: usize,
        multiple: bool,
        timeout: Option<Duration>,
        hooks: Option<Arc<dyn Hooks>>,
        progress: Arc<Progress>,
    ) -> Self {
        let Some(timeout) = timeout.filter(|t| !t.is_zero()) else {
            return Watchdog {
                stop: None,
                thread: None,
            };
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let watch = Watch {
            rank,
            size,
            heartbeats: multiple && size > 1,
            timeout,
            hooks,
            progress,
        };
        let thread = std::thread::Builder::new()
            .name("paracrypt-watchdog".into())
            .spawn(move || watch.run(&stopped))
            .ok();
        Watchdog {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The watchdog thread's view.
struct Watch {
    rank: usize,
    size: usize,
    heartbeats: bool,
    timeout: Duration,
    hooks: Option<Arc<dyn Hooks>>,
    progress: Arc<Progress>,
}

/// How often a watchdog looks (and sends heartbeats): a fifth of the timeout, from 10 ms to
/// 1 s.
fn interval(timeout: Duration) -> Duration {
    (timeout / 5).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// A heartbeat: the sender's step, then its host. One static buffer per step, so that a send
/// may outlive a run (a heartbeat to a rank that stopped reading is never waited for).
fn heartbeat(step: Step) -> &'static [u8] {
    static BEATS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let beats = BEATS.get_or_init(|| {
        let host = host();
        Step::ALL
            .iter()
            .map(|&step| {
                let mut beat = vec![step as u8];
                beat.extend_from_slice(host.as_bytes());
                beat
            })
            .collect()
    });
    &beats[step as usize]
}

/// This process's host, as MPI names it.
fn host() -> String {
    mpi::environment::processor_name().unwrap_or_else(|_| "?".into())
}

impl Watch {
    fn run(self, stopped: &mpsc::Receiver<()>) {
        let every = interval(self.timeout);
        let limit = if self.rank == 0 {
            self.timeout
        } else {
            self.timeout + every + GRACE
        };
        let world = SimpleCommunicator::world();
        let host = host();
        let mut heard: BTreeMap<usize, Heard> = BTreeMap::new();
        // One heartbeat in flight per peer at most.
        let mut sending: Vec<Option<Request<'static, [u8], StaticScope>>> =
            (0..self.size).map(|_| None).collect();
        let mut last_activity = Instant::now();
        let mut seen_local = u64::MAX;
        let mut seen_heard = 0u64;
        let mut heard_count = 0u64;
        // Until the run ends (its sender dropped) or the job is aborted.
        while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
            let local = self.progress.ticks();
            if self.heartbeats {
                while let Some(probed) = world
                    .any_process()
                    .immediate_matched_probe_with_tag(TAG_ALIVE)
                {
                    let (beat, status) = probed.matched_receive_vec::<u8>();
                    let step = Step::ALL
                        .get(beat.first().copied().unwrap_or(0) as usize)
                        .copied()
                        .unwrap_or_default();
                    let host = String::from_utf8_lossy(beat.get(1..).unwrap_or_default());
                    heard.insert(
                        status.source_rank() as usize,
                        Heard {
                            host: host.into_owned(),
                            step,
                            at: Instant::now(),
                        },
                    );
                    heard_count += 1;
                }
                // Rank 0 relays what it heard; a worker tells only its own progress.
                let moved = local != seen_local || (self.rank == 0 && heard_count != seen_heard);
                if moved {
                    let beat = heartbeat(self.progress.state().step);
                    let peers: Vec<usize> = if self.rank == 0 {
                        (1..self.size).collect()
                    } else {
                        vec![0]
                    };
                    for peer in peers {
                        let idle = match sending[peer].take() {
                            None => true,
                            Some(request) => match request.test() {
                                Ok(_) => true,
                                Err(pending) => {
                                    sending[peer] = Some(pending);
                                    false
                                }
                            },
                        };
                        if idle {
                            sending[peer] =
                                Some(world.process_at_rank(peer as i32).immediate_send_with_tag(
                                    StaticScope,
                                    beat,
                                    TAG_ALIVE,
                                ));
                        }
                    }
                }
            }
            if local != seen_local || heard_count != seen_heard {
                seen_local = local;
                seen_heard = heard_count;
                last_activity = Instant::now();
                continue;
            }
            let idle = last_activity.elapsed();
            if idle >= limit {
                let stall = self.stall(host, idle, &heard);
                log::debug!("stalled: {stall:?}");
                self.progress.aborting();
                let code = self.hooks.as_ref().map_or(1, |hooks| hooks.stalled(&stall));
                world.abort(code);
            }
        }
        // A heartbeat still on its way is never waited for: its buffer is static, and the
        // request is let go.
        for request in sending.into_iter().flatten() {
            std::mem::forget(request);
        }
    }

    /// What this rank can tell about the stall.
    fn stall(&self, host: String, idle: Duration, heard: &BTreeMap<usize, Heard>) -> Stall {
        let state = self.progress.state();
        let peers: Vec<usize> = if self.rank == 0 {
            (1..self.size).collect()
        } else {
            vec![0]
        };
        let waiting_for = peers
            .into_iter()
            .filter_map(|rank| {
                let chunks = state.held.get(&rank).cloned().unwrap_or_default();
                let last = heard.get(&rank);
                // A rank that said it is waiting too, and holds nothing, is not the one.
                if chunks.is_empty() && last.is_some_and(|h| h.step.waits()) {
                    return None;
                }
                Some(Peer {
                    rank,
                    host: last.map(|h| h.host.clone()),
                    chunks,
                    silent: last.map(|h| h.at.elapsed()),
                })
            })
            .collect();
        Stall {
            rank: self.rank,
            host,
            idle,
            step: state.step.describe(),
            running: state.running.clone(),
            waiting_for,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once the watchdog fired, rank 0 creates nothing its hooks could not have removed.
    #[test]
    fn nothing_is_created_once_the_watchdog_fired() {
        let progress = Progress::default();
        assert_eq!(progress.creating(|| 7), Some(7));
        progress.aborting();
        let mut ran = false;
        assert_eq!(progress.creating(|| ran = true), None);
        assert!(!ran);
    }

    #[test]
    fn a_stall_is_one_line_naming_ranks_hosts_and_chunks() {
        let stall = Stall {
            rank: 0,
            host: "h1".into(),
            idle: Duration::from_millis(5000),
            step: Step::Chunks.describe(),
            running: vec![12..14, 10..12],
            waiting_for: vec![
                Peer {
                    rank: 2,
                    host: Some("h3".into()),
                    chunks: vec![40..48, 56..60],
                    silent: Some(Duration::from_millis(5200)),
                },
                Peer {
                    rank: 3,
                    host: None,
                    chunks: Vec::new(),
                    silent: None,
                },
            ],
        };
        assert_eq!(
            stall.to_string(),
            "rank 0 on h1: no progress for 5.0 s while running the chunks (chunks 10..14 in \
             flight); waiting for rank 2 on h3 (chunks 40..48, 56..60, silent for 5.2 s), \
             rank 3 (never heard from)"
        );
        let alone = Stall {
            waiting_for: Vec::new(),
            running: Vec::new(),
            ..stall
        };
        assert!(
            alone
                .to_string()
                .ends_with("the chunks; waiting for the other ranks")
        );
    }

    #[test]
    fn batches_held_and_returned() {
        let progress = Progress::default();
        progress.handed(2, &(0..4));
        progress.handed(2, &(8..12));
        progress.returned(2, &(0..4));
        progress.start(&(4..8));
        progress.finish(&(4..8));
        let state = progress.state();
        assert_eq!(state.held[&2], vec![8..12]);
        assert!(state.running.is_empty());
        assert_eq!(progress.ticks(), 5);
    }
}
