//! One chunk plan over every rank.
//!
//! Static + shared-fs is the plain case: each rank runs its block with the core's engine on
//! the shared files and nothing crosses MPI until the final agreement. Every other combination
//! is a task farm driven by rank 0: its main thread answers the workers' requests from a
//! [`Dispenser`] (and, under the messages transport, reads each batch's input, sends it, and
//! writes the result that comes back), while a second thread of rank 0 takes batches from the
//! same dispenser and runs them on rank 0's own pool. A worker's main thread talks to rank 0;
//! a second thread runs the batches on the worker's pool, so the next batch travels while the
//! current one is transformed.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use mpi::point_to_point::{MatchedReceiveVec, Source as _};
use mpi::traits::*;
use paracrypt_core::engine::{
    self, ChunkTransform, SerialTransform, Sink, SliceSink, Source, Work,
};
use paracrypt_core::plan::ChunkPlan;
use rayon::ThreadPool;

use crate::cluster::{Backoff, Cluster};
use crate::error::{Failure, Result, WORK_FAILED};
use crate::protocol::{Assign, DEPTH, Report, TAG_ASSIGN, TAG_REPORT};
use crate::schedule::{Dispenser, MAX_BATCH_BYTES, block};
use crate::track::{BatchSource, Outcome, Watch, Watched};
use crate::{Schedule, Transport};

/// The files a rank works on: the input, and the output it writes chunks into (already
/// created, by rank 0, where every rank that writes can open it).
#[derive(Clone, Copy, Debug)]
pub struct Files<'a> {
    /// The input, read with positional reads.
    pub input: &'a File,
    /// The output, written with positional writes.
    pub output: &'a File,
}

/// How [`run`] spreads the work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Which rank gets which chunks.
    pub schedule: Schedule,
    /// How chunk data reaches the ranks.
    pub transport: Transport,
    /// Under [`Transport::SharedFs`], every rank but 0 `fsync`s the output before reporting
    /// success, so that its data is durable (and, on NFS, on the server, with any write error
    /// reported) before rank 0 renames the file. Rank 0's own writes are the caller's to sync.
    pub sync: bool,
}

/// Runs every chunk of `plan` across the ranks of `cluster` (collective: every rank calls it
/// with the same plan and an equal transform) and returns the output's end, the same on every
/// rank.
///
/// Each rank transforms its chunks in `pool`. Rank 0 always needs `files`; the other ranks
/// need them under [`Transport::SharedFs`] and ignore them under [`Transport::Messages`].
/// Writing a header and setting the output's length are the caller's (rank 0's) job.
///
/// [`Work::Serial`] (CBC encryption, RC4) cannot be split: rank 0 runs every chunk alone, in
/// order, and the other ranks wait.
///
/// On failure every rank returns the same [`Error::Rank`](crate::Error::Rank), naming the rank
/// and the lowest failing chunk (the one a single process reports), with code
/// [`WORK_FAILED`]. The output then holds partial data: the caller removes it.
pub fn run(
    cluster: &Cluster,
    pool: &ThreadPool,
    plan: &ChunkPlan,
    work: Work<'_>,
    options: Options,
    files: Option<Files<'_>>,
) -> Result<u64> {
    let outcome = Outcome::default();
    let root = cluster.is_root();
    let shared = options.transport == Transport::SharedFs;
    let files = files.filter(|_| root || shared);
    if files.is_none() && (root || shared) {
        outcome.fail(Failure::new(
            format!(
                "rank {} was given no files to work on (the {} transport needs them)",
                cluster.rank(),
                options.transport
            ),
            WORK_FAILED,
        ));
    } else {
        match work {
            Work::Serial(transform) => {
                if let (true, Some(files)) = (root, files) {
                    serial(pool, plan, transform, files, &outcome);
                }
            }
            Work::Parallel(transform) => {
                let job = Job {
                    pool,
                    plan,
                    transform,
                    files,
                    transport: options.transport,
                    outcome: &outcome,
                };
                match (options.schedule, options.transport, root) {
                    (Schedule::Static, Transport::SharedFs, _) => {
                        let range = block(plan.len(), cluster.size(), cluster.rank());
                        job.run_batch(range);
                    }
                    (_, _, true) => serve(cluster, &job, options.schedule),
                    (_, _, false) => work_for_root(cluster, &job),
                }
            }
        }
        // Make this rank's writes durable before rank 0 renames the output (on NFS, data
        // written on one client is on the server, and its errors known, once synced).
        if let (false, true, true, Some(files)) = (root, shared, options.sync, files)
            && let Err(e) = files.output.sync_data()
        {
            outcome.fail(Failure::new(
                format!("syncing the output: {e}"),
                WORK_FAILED,
            ));
        }
    }
    let end = cluster.agree(outcome.into_result())?;
    Ok(cluster.all_max(end))
}

/// Everything a rank needs to run a batch.
struct Job<'a> {
    pool: &'a ThreadPool,
    plan: &'a ChunkPlan,
    transform: &'a dyn ChunkTransform,
    files: Option<Files<'a>>,
    transport: Transport,
    outcome: &'a Outcome,
}

impl Job<'_> {
    /// Runs `batch` on the rank's files. Returns the lowest failed chunk, if any.
    fn run_batch(&self, batch: Range<u64>) -> Option<u64> {
        let files = self.files.expect("a rank with files");
        self.run_on(batch, files.input, files.output)
    }

    fn run_on(&self, batch: Range<u64>, source: &dyn Source, sink: &dyn Sink) -> Option<u64> {
        if batch.is_empty() {
            return None;
        }
        let watch = Watch::new();
        let transform = Watched {
            inner: self.transform,
            watch: &watch,
        };
        let source = Watched {
            inner: source,
            watch: &watch,
        };
        let sink = Watched {
            inner: sink,
            watch: &watch,
        };
        let first = batch.start;
        let result = self
            .pool
            .install(|| engine::run(self.plan, Work::Parallel(&transform), batch, &source, &sink));
        match result {
            Ok(end) => {
                if let Some(end) = end {
                    self.outcome.end(end);
                }
                None
            }
            Err(error) => {
                let chunk = watch.failed().unwrap_or(first);
                self.outcome.fail(Failure::chunk(chunk, &error));
                Some(chunk)
            }
        }
    }

    /// Where a batch's input starts: its first chunk, less the context bytes before it.
    fn input_start(&self, batch: &Range<u64>) -> u64 {
        let context = if batch.start > 0 {
            self.transform.context_len() as u64
        } else {
            0
        };
        self.plan.chunk(batch.start).input.start - context
    }

    /// Reads a batch's input (rank 0, messages transport).
    fn read_batch(&self, batch: &Range<u64>) -> std::io::Result<Vec<u8>> {
        let files = self.files.expect("rank 0 has the files");
        let start = self.input_start(batch);
        let end = self.plan.chunk(batch.end - 1).input.end;
        let mut bytes = vec![0u8; (end - start) as usize];
        files.input.read_exact_at(&mut bytes, start)?;
        Ok(bytes)
    }

    /// Runs a batch a worker was given and says how it went.
    fn compute(&self, assign: Assign) -> Report {
        let batch = assign.batch.expect("only batches are computed");
        let mut report = Report {
            batch: Some(batch.clone()),
            ..Report::default()
        };
        match self.transport {
            Transport::SharedFs => report.failed = self.run_batch(batch),
            Transport::Messages => {
                let source = BatchSource {
                    base: self.input_start(&batch),
                    bytes: &assign.payload,
                };
                let base = self.plan.chunk(batch.start).output.start;
                let max_end = self.plan.chunk(batch.end - 1).output.end;
                let mut out = vec![0u8; (max_end - base) as usize];
                // The batch's own outcome first: only a batch that succeeded is sent back.
                let mine = Outcome::default();
                let failed = {
                    let sink = SliceSink::new(self.plan, batch.clone(), &mut out);
                    let job = Job {
                        outcome: &mine,
                        ..*self
                    };
                    job.run_on(batch, &source, &sink)
                };
                match mine.into_result() {
                    Ok(end) => {
                        if end > 0 {
                            out.truncate((end - base) as usize);
                            report.end = Some(end);
                            self.outcome.end(end);
                        }
                        report.payload = out;
                    }
                    Err(failure) => {
                        report.failed = failed;
                        self.outcome.fail(failure);
                    }
                }
            }
        }
        report
    }
}

/// Rank 0 alone runs a serial transform over the whole plan.
fn serial(
    pool: &ThreadPool,
    plan: &ChunkPlan,
    transform: &mut dyn SerialTransform,
    files: Files<'_>,
    outcome: &Outcome,
) {
    let watch = Watch::new();
    let source = Watched {
        inner: files.input as &dyn Source,
        watch: &watch,
    };
    let sink = Watched {
        inner: files.output as &dyn Sink,
        watch: &watch,
    };
    let result =
        pool.install(|| engine::run(plan, Work::Serial(transform), 0..plan.len(), &source, &sink));
    match result {
        Ok(Some(end)) => outcome.end(end),
        Ok(None) => {}
        Err(error) => {
            let failure = match watch.failed() {
                Some(chunk) => Failure::chunk(chunk, &error),
                None => Failure::new(error.to_string(), WORK_FAILED),
            };
            outcome.fail(failure);
        }
    }
}

/// Rank 0 of a task farm: serves the workers on this thread while a second thread runs rank
/// 0's own batches.
fn serve(cluster: &Cluster, job: &Job<'_>, schedule: Schedule) {
    let max_chunks = (MAX_BATCH_BYTES / job.plan.layout().max_buffer().max(1)).max(1) as u64;
    let dispenser = Dispenser::new(schedule, job.plan.len(), cluster.size(), max_chunks);
    let threads = job.pool.current_num_threads();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while let Some(batch) = dispenser.next(0, threads) {
                if let Some(chunk) = job.run_batch(batch) {
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
                } else if job.transport == Transport::Messages {
                    let at = job.plan.chunk(batch.start).output.start;
                    let files = job.files.expect("rank 0 has the files");
                    if let Err(e) = files.output.write_all_at(&report.payload, at) {
                        let error = paracrypt_core::Error::io(
                            format!("writing chunks {}..{} at byte {at}", batch.start, batch.end),
                            e,
                        );
                        job.outcome.fail(Failure::chunk(batch.start, &error));
                        dispenser.fail(batch.start);
                    }
                }
            }
            if report.want {
                let mut assign = Assign {
                    batch: dispenser.next(from as usize, report.threads as usize),
                    payload: Vec::new(),
                };
                if let (Some(batch), Transport::Messages) = (&assign.batch, job.transport) {
                    match job.read_batch(batch) {
                        Ok(bytes) => assign.payload = bytes,
                        Err(e) => {
                            let error = paracrypt_core::Error::io(
                                format!("reading chunks {}..{}", batch.start, batch.end),
                                e,
                            );
                            job.outcome.fail(Failure::chunk(batch.start, &error));
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
fn work_for_root(cluster: &Cluster, job: &Job<'_>) {
    let threads = job.pool.current_num_threads() as u64;
    let (to_compute, batches) = mpsc::sync_channel::<Assign>(DEPTH);
    let (results, computed) = mpsc::channel::<Report>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for assign in batches {
                if results.send(job.compute(assign)).is_err() {
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
