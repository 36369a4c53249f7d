//! The task farm: rank 0 hands out batches of chunks to whichever rank asks.
//!
//! Rank 0's main thread answers the workers' requests from a [`Dispenser`] (and, under the
//! messages transport, reads each batch's input, sends it, and writes the result that comes
//! back), while a second thread of rank 0 takes batches from the same dispenser and runs them
//! on rank 0's own pool. A worker's main thread talks to rank 0; a second thread runs the
//! batches on the worker's pool, so the next batch travels while the current one is
//! transformed.

use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use mpi::point_to_point::{MatchedReceiveVec, Source as _};
use mpi::traits::*;

use crate::batches::Batches;
use crate::cluster::{Backoff, Cluster};
use crate::protocol::{Assign, DEPTH, Report, TAG_ASSIGN, TAG_REPORT};
use crate::schedule::{Dispenser, MAX_BATCH_BYTES};
use crate::{Schedule, Transport};

/// Rank 0 of a task farm: serves the workers on this thread while a second thread runs rank
/// 0's own batches.
pub(crate) fn serve(cluster: &Cluster, batches: &Batches<'_>, schedule: Schedule) {
    let max_chunks = (MAX_BATCH_BYTES / batches.plan.layout().max_buffer().max(1)).max(1) as u64;
    let dispenser = Dispenser::new(schedule, batches.plan.len(), cluster.size(), max_chunks);
    let threads = batches.pool.current_num_threads();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while let Some(batch) = dispenser.next(0, threads) {
                if let Some(chunk) = batches.run_files(batch) {
                    dispenser.fail(chunk);
                }
            }
        });
        let world = cluster.world();
        let mut byes = 0;
        let mut backoff = Backoff::new();
        while byes + 1 < cluster.size() {
            let Some(probed) = world
                .any_process()
                .immediate_matched_probe_with_tag(TAG_REPORT)
            else {
                backoff.snooze();
                continue;
            };
            backoff.reset();
            let (message, status) = probed.matched_receive_vec::<u8>();
            let from = status.source_rank();
            let report = Report::decode(message);
            if let Some(batch) = &report.batch {
                if let Some(chunk) = report.failed {
                    // The worker keeps its error for the agreement; stop what cannot matter.
                    dispenser.fail(chunk);
                } else if batches.transport == Transport::Messages {
                    let at = batches.plan.chunk(batch.start).output.start;
                    let files = batches.files.expect("rank 0 has the files");
                    if let Err(e) = files.output.write_all_at(&report.payload, at) {
                        let context =
                            format!("writing chunks {}..{} at byte {at}", batch.start, batch.end);
                        batches.outcome.fail_batch(batch, context, e);
                        dispenser.fail(batch.start);
                    }
                }
            }
            if report.want {
                let mut assign = Assign {
                    batch: dispenser.next(from as usize, report.threads as usize),
                    payload: Vec::new(),
                };
                log::trace!("rank 0: chunks {:?} to rank {from}", assign.batch);
                if let (Some(batch), Transport::Messages) = (&assign.batch, batches.transport) {
                    match batches.read_batch(batch) {
                        Ok(bytes) => assign.payload = bytes,
                        Err(e) => {
                            let context = format!("reading chunks {}..{}", batch.start, batch.end);
                            batches.outcome.fail_batch(batch, context, e);
                            dispenser.fail(batch.start);
                            assign.batch = None;
                        }
                    }
                }
                world
                    .process_at_rank(from)
                    .send_with_tag(&assign.encode()[..], TAG_ASSIGN);
            }
            if report.bye {
                byes += 1;
            }
        }
    });
}

/// A worker of a task farm: this thread talks to rank 0, a second one runs the batches.
pub(crate) fn work_for_root(cluster: &Cluster, batches: &Batches<'_>) {
    let threads = batches.pool.current_num_threads() as u64;
    let (to_compute, assigned) = mpsc::sync_channel::<Assign>(DEPTH);
    let (results, computed) = mpsc::channel::<Report>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for assign in assigned {
                if results.send(batches.compute(assign)).is_err() {
                    break;
                }
            }
        });
        let mut worker = Worker {
            cluster,
            to_compute,
            requested: 0,
            computing: 0,
            finished: false,
        };
        for _ in 0..DEPTH {
            worker.send(Report {
                want: true,
                threads,
                ..Report::default()
            });
        }
        let mut backoff = Backoff::new();
        loop {
            if let Ok(mut report) = computed.try_recv() {
                backoff.reset();
                worker.computing -= 1;
                report.want = !worker.finished;
                report.threads = threads;
                worker.send(report);
                continue;
            }
            if worker.receive() {
                backoff.reset();
                continue;
            }
            if worker.requested == 0 && worker.computing == 0 {
                break;
            }
            backoff.snooze();
        }
        worker.send(Report {
            bye: true,
            ..Report::default()
        });
        // Dropping the sender ends the compute thread.
        drop(worker);
    });
}

/// A worker's side of the conversation with rank 0.
struct Worker<'a> {
    cluster: &'a Cluster,
    to_compute: mpsc::SyncSender<Assign>,
    /// Requests rank 0 has not answered yet.
    requested: usize,
    /// Batches handed to the compute thread and not yet reported.
    computing: usize,
    /// Rank 0 said there is no more work.
    finished: bool,
}

impl Worker<'_> {
    /// Sends a report to rank 0. While it is in flight, keeps taking batches rank 0 sends: rank
    /// 0 may be sending one right now, and two large blocking sends facing each other would
    /// wait for ever.
    fn send(&mut self, report: Report) {
        if report.want {
            self.requested += 1;
        }
        let bytes = report.encode();
        let root = self.cluster.world().process_at_rank(0);
        mpi::request::scope(|scope| {
            let mut request = root.immediate_send_with_tag(scope, &bytes[..], TAG_REPORT);
            let mut backoff = Backoff::new();
            loop {
                match request.test() {
                    Ok(_) => break,
                    Err(pending) => request = pending,
                }
                if self.receive() {
                    backoff.reset();
                } else {
                    backoff.snooze();
                }
            }
        });
    }

    /// Takes one answer from rank 0 if one has arrived. Returns whether one had.
    fn receive(&mut self) -> bool {
        if self.requested == 0 {
            return false;
        }
        let root = self.cluster.world().process_at_rank(0);
        let Some(probed) = root.immediate_matched_probe_with_tag(TAG_ASSIGN) else {
            return false;
        };
        let (message, _) = probed.matched_receive_vec::<u8>();
        self.requested -= 1;
        let assign = Assign::decode(message);
        if assign.batch.is_none() {
            self.finished = true;
        } else {
            self.computing += 1;
            // Never blocks: at most DEPTH batches are requested or computing at once.
            self.to_compute
                .send(assign)
                .expect("the compute thread runs until the sender is dropped");
        }
        true
    }
}
