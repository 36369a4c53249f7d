//! The conversation of a farm, the same for batches of chunks ([`farm`](crate::farm)) and whole
//! tasks ([`tasks`](crate::tasks)): a worker asks rank 0 for work with [`Report`]s and gets it
//! as [`Assign`]s, [`DEPTH`] requests in flight so that its next piece of work travels while it
//! runs the current one; rank 0 takes the reports from whichever worker sends one. Every wait
//! polls and sleeps between polls (see [`Cluster`]).

use std::sync::mpsc;

use mpi::point_to_point::{MatchedReceiveVec, Source as _};
use mpi::traits::*;

use crate::cluster::{Backoff, Cluster};
use crate::protocol::{Assign, DEPTH, Report, TAG_ASSIGN, TAG_REPORT};
use crate::watchdog::Progress;

/// Rank 0: the next report from any worker, and who sent it.
pub(crate) fn next_report(cluster: &Cluster, progress: &Progress) -> (i32, Report) {
    let mut backoff = Backoff::new();
    loop {
        if let Some(probed) = cluster
            .world()
            .any_process()
            .immediate_matched_probe_with_tag(TAG_REPORT)
        {
            let (message, status) = probed.matched_receive_vec::<u8>();
            progress.tick();
            return (status.source_rank(), Report::decode(message));
        }
        backoff.snooze();
    }
}

/// A worker of a farm: this thread talks to rank 0 while a second one runs each piece of work
/// rank 0 sends (`run`: the batch in, its report out, whose `want` and `threads` this fills),
/// until rank 0 says there is no more and every report went back. `threads`: the worker's pool
/// size, which rank 0 sizes batches by.
pub(crate) fn work_for_root(
    cluster: &Cluster,
    progress: &Progress,
    threads: u64,
    run: &(dyn Fn(Assign) -> Report + Sync),
) {
    let (to_run, assigned) = mpsc::sync_channel::<Assign>(DEPTH);
    let (results, ran) = mpsc::channel::<Report>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for assign in assigned {
                if results.send(run(assign)).is_err() {
                    break;
                }
            }
        });
        let mut worker = Worker {
            cluster,
            progress,
            to_run,
            requested: 0,
            running: 0,
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
            if let Ok(mut report) = ran.try_recv() {
                backoff.reset();
                worker.running -= 1;
                report.want = !worker.finished;
                report.threads = threads;
                worker.send(report);
                continue;
            }
            if worker.receive() {
                backoff.reset();
                continue;
            }
            if worker.requested == 0 && worker.running == 0 {
                break;
            }
            backoff.snooze();
        }
        worker.send(Report {
            bye: true,
            ..Report::default()
        });
        // Dropping the sender ends the running thread.
        drop(worker);
    });
}

/// A worker's side of the conversation with rank 0.
struct Worker<'a> {
    cluster: &'a Cluster,
    progress: &'a Progress,
    to_run: mpsc::SyncSender<Assign>,
    /// Requests rank 0 has not answered yet.
    requested: usize,
    /// Work handed to the running thread and not yet reported.
    running: usize,
    /// Rank 0 said there is no more work.
    finished: bool,
}

impl Worker<'_> {
    /// Sends a report to rank 0. While it is in flight, keeps taking the work rank 0 sends: rank
    /// 0 may be sending some right now, and two large blocking sends facing each other would
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
                    Ok(_) => {
                        self.progress.tick();
                        break;
                    }
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
        self.progress.tick();
        self.requested -= 1;
        // The payload keeps the message's buffer: a caller whose work is secret zeroizes it
        // (all of its capacity) once used.
        let assign = Assign::decode(message);
        if assign.batch.is_none() {
            self.finished = true;
        } else {
            self.running += 1;
            // Never blocks: at most DEPTH pieces of work are requested or running at once.
            self.to_run
                .send(assign)
                .expect("the running thread runs until the sender is dropped");
        }
        true
    }
}
