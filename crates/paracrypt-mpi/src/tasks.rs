//! A farm of whole tasks, each a message: rank 0 hands out tasks to whichever rank asks, each
//! as the caller's bytes, and gets each one's result back as bytes; rank 0 runs tasks too, on a
//! second thread. What a task is belongs to the caller: the CLI farms out a directory tree's
//! tasks (`paracrypt_core::tree::Task`, each a run of files with the keys derived for them) and
//! gets back each file's manifest entry.
//!
//! It holds the chunk farm's conversation ([`conversation`], shared with
//! [`farm`](crate::farm)) with a task for a batch: the same two messages ([`Report`],
//! [`Assign`]), a task `i` being the batch `i..i+1` with its bytes as the payload one way and
//! its result's the other, [`DEPTH`](crate::protocol::DEPTH) requests in flight per worker so
//! that its next task travels while it runs the current one, the same polling waits, and the
//! same [watchdog](crate::watchdog), which the caller's task feeds through a [`Ticker`] while
//! it runs.
//!
//! A task's bytes may carry keys: every copy this module makes of them (the message sent, the
//! message received) is zeroized once used.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use mpi::traits::*;
use rayon::ThreadPool;
use zeroize::{Zeroize, Zeroizing};

use crate::Options;
use crate::cluster::Cluster;
use crate::conversation::{self, next_report};
use crate::protocol::{Assign, Report, TAG_ASSIGN};
use crate::watchdog::{Progress, Step, Watchdog};

/// Rank 0's side of a task farm.
pub struct Tasks<'a> {
    /// How many tasks there are (`0..count`).
    pub count: usize,
    /// Task `i`'s bytes, made when a rank is about to get it; `None` when it is not to run (the
    /// caller noted why). Called from rank 0's two threads.
    #[allow(clippy::type_complexity)]
    pub task: &'a (dyn Fn(usize) -> Option<Zeroizing<Vec<u8>>> + Sync),
    /// Task `i`'s result, from the rank that ran it (its number second), as the caller's run
    /// returned it there. Called from rank 0's two threads, once per task that ran.
    pub done: &'a (dyn Fn(usize, usize, Vec<u8>) + Sync),
}

/// Progress of a task under way, for the watchdog: a long task (a large file) ticks as it goes,
/// so that the run is not taken for stalled.
#[derive(Clone)]
pub struct Ticker(Arc<Progress>);

impl Ticker {
    /// Something moved.
    pub fn tick(&self) {
        self.0.tick();
    }
}

/// Runs a task farm over every rank of `cluster`: rank 0 (with `root`) hands out the tasks,
/// every rank runs those it gets with `run` (task bytes in, result bytes out) in `pool`
/// (`pool.install`), and rank 0 gets every result through [`Tasks::done`]. Returns once every
/// task ran and every rank said it has nothing left (rank 0 given no tasks hands out none), on
/// every rank together (a collective, so two farms may follow each other). Only
/// [`Options::stall_timeout`] and the
/// cluster's hooks are used of the options: the tasks are always handed out on request, and
/// their bytes always travel as messages (whatever they read or write is theirs).
pub fn farm_tasks(
    cluster: &Cluster,
    pool: &ThreadPool,
    options: Options,
    root: Option<Tasks<'_>>,
    run: &(dyn Fn(&[u8], &Ticker) -> Vec<u8> + Sync),
) {
    let progress = Arc::new(Progress::default());
    let _watchdog = Watchdog::start(
        cluster.rank(),
        cluster.size(),
        cluster.multiple(),
        options.stall_timeout,
        cluster.hooks().cloned(),
        progress.clone(),
    );
    let ticker = Ticker(progress.clone());
    progress.step(Step::Chunks);
    if cluster.is_root() {
        // Rank 0 without tasks hands out none: the workers are told so and return.
        let none = Tasks {
            count: 0,
            task: &|_| None,
            done: &|_, _, _| {},
        };
        serve(
            cluster,
            pool,
            &progress,
            &ticker,
            &root.unwrap_or(none),
            run,
        );
    } else {
        work(cluster, pool, &progress, &ticker, run);
    }
    progress.step(Step::Agreeing);
    // No rank leaves before rank 0 has every worker's last report: a worker that went on to
    // a next farm at once would otherwise ask this one's rank 0 for its tasks (the two farms'
    // messages have the same tags), and be told there are none.
    cluster.barrier();
}

/// The batch that stands for task `i`.
fn batch(i: usize) -> Range<u64> {
    i as u64..i as u64 + 1
}

/// Rank 0: answers the workers on this thread while a second one runs rank 0's own tasks.
///
/// The first round is dealt to every rank before a second task goes to any: rank 0 takes its
/// own first task at once, each worker's first request is answered once every worker has asked
/// (in rank order; a worker's further requests wait their turn), and only then does rank 0's
/// second thread take another. With at least as many tasks as ranks, every rank runs one
/// however late it joined the farm (under load, one rank can start a second after the others,
/// and a farm of a few tasks would have been run by the ranks that came first). It costs one
/// message from each worker, which asks as soon as it joins; rank 0 computes meanwhile.
fn serve(
    cluster: &Cluster,
    pool: &ThreadPool,
    progress: &Progress,
    ticker: &Ticker,
    tasks: &Tasks<'_>,
    run: &(dyn Fn(&[u8], &Ticker) -> Vec<u8> + Sync),
) {
    let next = AtomicUsize::new(0);
    // The next task to run, and its bytes.
    let take = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= tasks.count {
            return None;
        }
        if let Some(bytes) = (tasks.task)(i) {
            return Some((i, bytes));
        }
    };
    let take = &take;
    let own_first = take();
    // Dropped once the first round is dealt: rank 0's own thread waits for it before its second
    // task.
    let (dealt, first_round) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut task = own_first;
            let mut waited = false;
            while let Some((i, bytes)) = task {
                progress.start(&batch(i));
                let result = pool.install(|| run(&bytes, ticker));
                drop(bytes);
                progress.finish(&batch(i));
                (tasks.done)(i, 0, result);
                if !waited {
                    // Err once the sender is dropped: nothing is ever sent.
                    let _ = first_round.recv();
                    waited = true;
                }
                task = take();
            }
        });
        let world = cluster.world();
        // A task (or none left) to the worker `from`.
        let answer = |from: i32| {
            let mut assign = match take() {
                Some((i, mut bytes)) => {
                    log::trace!("rank 0: task {i} to rank {from}");
                    progress.handed(from as usize, &batch(i));
                    Assign {
                        batch: Some(batch(i)),
                        payload: std::mem::take(&mut *bytes),
                    }
                }
                None => Assign {
                    batch: None,
                    payload: Vec::new(),
                },
            };
            let message = Zeroizing::new(assign.encode());
            assign.payload.zeroize();
            world
                .process_at_rank(from)
                .send_with_tag(&message[..], TAG_ASSIGN);
            progress.tick();
        };
        // The requests held back until every worker has asked, in the order they came.
        let mut held: Vec<i32> = Vec::new();
        let mut asked = vec![false; cluster.size()];
        let mut waiting = cluster.size() - 1;
        let mut dealt = Some(dealt);
        let mut byes = 0;
        loop {
            if waiting == 0 && dealt.is_some() {
                // Every worker asked: one task each in rank order, then the rest as they came.
                let mut firsts: Vec<i32> = Vec::with_capacity(cluster.size() - 1);
                for from in std::mem::take(&mut held) {
                    if firsts.contains(&from) {
                        held.push(from);
                    } else {
                        firsts.push(from);
                    }
                }
                firsts.sort_unstable();
                for from in firsts.into_iter().chain(std::mem::take(&mut held)) {
                    answer(from);
                }
                drop(dealt.take());
            }
            if byes + 1 >= cluster.size() {
                break;
            }
            let (from, report) = next_report(cluster, progress);
            if let Some(done) = &report.batch {
                progress.returned(from as usize, done);
                (tasks.done)(done.start as usize, from as usize, report.payload);
            }
            if report.want {
                if dealt.is_some() {
                    if !std::mem::replace(&mut asked[from as usize], true) {
                        waiting -= 1;
                    }
                    held.push(from);
                } else {
                    answer(from);
                }
            }
            byes += usize::from(report.bye);
        }
    });
}

/// A worker: this thread talks to rank 0, a second one runs the tasks; each task's bytes are
/// zeroized once it ran.
fn work(
    cluster: &Cluster,
    pool: &ThreadPool,
    progress: &Progress,
    ticker: &Ticker,
    run: &(dyn Fn(&[u8], &Ticker) -> Vec<u8> + Sync),
) {
    let threads = pool.current_num_threads() as u64;
    conversation::work_for_root(cluster, progress, threads, &|assign| {
        let task = assign.batch.expect("only tasks are run");
        // The whole buffer the message came in, zeroized when dropped.
        let bytes = Zeroizing::new(assign.payload);
        progress.start(&task);
        let result = pool.install(|| run(&bytes, ticker));
        drop(bytes);
        progress.finish(&task);
        Report {
            batch: Some(task),
            payload: result,
            ..Report::default()
        }
    });
}
