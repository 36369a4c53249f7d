//! The task farm: rank 0 hands out batches of chunks to whichever rank asks.
//!
//! Rank 0's main thread answers the workers' requests from a [`Dispenser`] (and, under the
//! messages transport, each batch's input is read and sent and the result that comes back
//! written: by threads of their own, at once, when MPI allows it), while a second thread of
//! rank 0 takes batches from the same dispenser and runs them on rank 0's own pool. A worker's
//! main thread talks to rank 0; a second thread runs the batches on the worker's pool, so the
//! next batch travels while the current one is transformed (the worker's side and rank 0's
//! wait for reports are [`conversation`]'s, shared with the task farm).

use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::batches::Batches;
use crate::cluster::{Cluster, poll};
use crate::conversation::{self, next_report};
use crate::protocol::{Assign, DEPTH, Report, TAG_ASSIGN};
use crate::schedule::{Dispenser, MAX_BATCH_BYTES, MAX_MESSAGE_BYTES};
use crate::{Schedule, Transport};

/// Results rank 0 holds for its writer under the messages transport, besides the one written.
const WRITE_QUEUE: usize = 2;

/// Rank 0 of a task farm: serves the workers while a second thread runs rank 0's own batches.
pub(crate) fn serve(cluster: &Cluster, batches: &Batches<'_>, schedule: Schedule) {
    let limit = match batches.transport {
        Transport::SharedFs => MAX_BATCH_BYTES,
        Transport::Messages => MAX_MESSAGE_BYTES,
    };
    let max_units = (limit / batches.unit_bytes()).max(1) as u64;
    let dispenser = Dispenser::new(schedule, batches.units(), cluster.size(), max_units);
    let threads = batches.pool.current_num_threads();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while let Some(batch) = dispenser.next(0, threads) {
                if let Some(chunk) = batches.run_files(batch) {
                    dispenser.fail(chunk);
                }
            }
        });
        if batches.transport == Transport::Messages && cluster.multiple() {
            serve_overlapped(cluster, batches, &dispenser);
        } else {
            serve_in_turn(cluster, batches, &dispenser);
        }
    });
}

/// What rank 0 does with a worker's returned batch: notes a failure, or (messages transport)
/// hands the result to `write`.
fn take_result(
    from: i32,
    report: &mut Report,
    batches: &Batches<'_>,
    dispenser: &Dispenser,
    write: impl FnOnce(Range<u64>, Vec<u8>),
) {
    let Some(batch) = report.batch.clone() else {
        return;
    };
    batches
        .progress
        .returned(from as usize, &batches.chunks(&batch));
    if let Some(unit) = report.failed {
        // The worker keeps its error for the agreement; stop what cannot matter.
        dispenser.fail(unit);
    } else if batches.transport == Transport::Messages && batches.parts.is_none() {
        write(batch, std::mem::take(&mut report.payload));
    }
}

/// Writes a returned batch's output at its place (rank 0, messages transport).
fn write_result(batches: &Batches<'_>, dispenser: &Dispenser, batch: Range<u64>, bytes: &[u8]) {
    let at = batches.plan.chunk(batch.start).output.start;
    let output = batches
        .files
        .and_then(|files| files.output)
        .expect("rank 0 has the output file");
    if let Err(e) = output.write_all_at(bytes, at) {
        let context = format!("writing chunks {}..{} at byte {at}", batch.start, batch.end);
        batches.outcome.fail_batch(&batch, context, e);
        dispenser.fail(batch.start);
    }
}

/// The answer to a worker's request: the batch and, under the messages transport, its input
/// (a batch that cannot be read fails and ends that worker's work).
fn answer(batches: &Batches<'_>, dispenser: &Dispenser, batch: Option<Range<u64>>) -> Assign {
    let mut assign = Assign {
        batch,
        payload: Vec::new(),
    };
    if let (Some(batch), Transport::Messages) = (&assign.batch, batches.transport) {
        match batches.read_batch(batch) {
            Ok(bytes) => assign.payload = bytes,
            Err(e) => {
                batches.outcome.fail_chunk(batches.chunks(batch).start, e);
                dispenser.fail(batch.start);
                assign.batch = None;
            }
        }
    }
    assign
}

/// Rank 0's conversation on one thread: a report, then its answer, each in turn. Every
/// transport under `MPI_THREAD_FUNNELED`, and the shared-fs transport always (only a few numbers
/// cross then).
fn serve_in_turn(cluster: &Cluster, batches: &Batches<'_>, dispenser: &Dispenser) {
    let mut byes = 0;
    while byes + 1 < cluster.size() {
        let (from, mut report) = next_report(cluster, batches.progress);
        take_result(from, &mut report, batches, dispenser, |batch, bytes| {
            write_result(batches, dispenser, batch, &bytes)
        });
        if report.want {
            let batch = dispenser.next(from as usize, report.threads as usize);
            log::trace!("rank 0: chunks {batch:?} to rank {from}");
            if let Some(batch) = &batch {
                batches
                    .progress
                    .handed(from as usize, &batches.chunks(batch));
            }
            let assign = answer(batches, dispenser, batch);
            cluster
                .world()
                .process_at_rank(from)
                .send_with_tag(&assign.encode()[..], TAG_ASSIGN);
        }
        byes += usize::from(report.bye);
    }
}

/// Rank 0's conversation under the messages transport, with `MPI_THREAD_MULTIPLE`: the main
/// thread receives results and requests, one thread per worker reads and sends that worker's
/// batches, and one thread writes the results, all at once, so that rank 0's link carries
/// batches out and results in at the same time (full duplex) and the disk works meanwhile.
/// A worker has at most [`DEPTH`] batches requested at once, so each sending thread holds at
/// most one batch's input, and the writer at most [`WRITE_QUEUE`] results besides the one it
/// writes: rank 0 holds a bounded number of batches whatever the input's size.
fn serve_overlapped(cluster: &Cluster, batches: &Batches<'_>, dispenser: &Dispenser) {
    std::thread::scope(|scope| {
        let (to_write, results) = mpsc::sync_channel::<(Range<u64>, Vec<u8>)>(WRITE_QUEUE);
        scope.spawn(move || {
            for (batch, bytes) in results {
                write_result(batches, dispenser, batch, &bytes);
            }
        });
        let senders: Vec<mpsc::SyncSender<Option<Range<u64>>>> = (1..cluster.size())
            .map(|worker| {
                let (to_send, requests) = mpsc::sync_channel::<Option<Range<u64>>>(DEPTH);
                scope.spawn(move || {
                    let world = SimpleCommunicator::world();
                    let worker = world.process_at_rank(worker as i32);
                    for batch in requests {
                        let bytes = answer(batches, dispenser, batch).encode();
                        mpi::request::scope(|scope| {
                            poll(worker.immediate_send_with_tag(scope, &bytes[..], TAG_ASSIGN))
                        });
                        batches.progress.tick();
                    }
                });
                to_send
            })
            .collect();
        let mut byes = 0;
        while byes + 1 < cluster.size() {
            let (from, mut report) = next_report(cluster, batches.progress);
            take_result(from, &mut report, batches, dispenser, |batch, bytes| {
                to_write
                    .send((batch, bytes))
                    .expect("the writer runs until the sender is dropped")
            });
            if report.want {
                let batch = dispenser.next(from as usize, report.threads as usize);
                log::trace!("rank 0: chunks {batch:?} to rank {from}");
                if let Some(batch) = &batch {
                    batches
                        .progress
                        .handed(from as usize, &batches.chunks(batch));
                }
                // Never blocks for long: a worker has at most DEPTH requests open.
                senders[from as usize - 1]
                    .send(batch)
                    .expect("a sending thread runs until its sender is dropped");
            }
            byes += usize::from(report.bye);
        }
        // Dropping the senders ends the sending threads and the writer.
    });
}

/// A worker of a task farm: this thread talks to rank 0, a second one runs the batches.
pub(crate) fn work_for_root(cluster: &Cluster, batches: &Batches<'_>) {
    let threads = batches.pool.current_num_threads() as u64;
    conversation::work_for_root(cluster, batches.progress, threads, &|assign| {
        batches.compute(assign)
    });
}
