//! The chunks of one job over every rank.
//!
//! Static + shared-fs is the plain case: each rank runs its block with the core's engine on
//! the shared files and nothing crosses MPI until the final agreement. Every other combination
//! is a task farm driven by rank 0 ([`farm`](crate::farm)). A serial job runs on rank 0 alone.

use paracrypt_core::ErrorKind;
use paracrypt_core::engine::Job;
use paracrypt_core::plan::share;
use rayon::ThreadPool;

use crate::batches::{Batches, Files, Outcome, PartsOut};
use crate::cluster::Cluster;
use crate::error::{Failure, Result};
use crate::farm;
use crate::watchdog::{Progress, Step};
use crate::{Options, Schedule, Transport};

/// Runs every chunk of `job` across the ranks of `cluster` (collective: every rank calls it
/// with an equal job) and returns the output's end, the same on every rank, and, for an output
/// made of `parts`, the ids of the parts this rank stored.
///
/// Each rank transforms its chunks in `pool`. Rank 0 always needs `files`; the other ranks
/// need them under [`Transport::SharedFs`] and ignore them under [`Transport::Messages`].
/// With `parts`, the units of work are parts (each one computed and stored by the rank that
/// has it), and every rank waits for its stored parts before the ranks agree.
/// A serial job (CBC encryption, RC4) cannot be split: rank 0 runs every chunk alone, in
/// order, and the other ranks wait.
///
/// On failure every rank returns the same [`Error::Rank`](crate::Error::Rank), naming the rank
/// and the lowest failing chunk (the one a single process reports). The output then holds
/// partial data: the caller removes it.
pub(crate) fn run(
    cluster: &Cluster,
    pool: &ThreadPool,
    job: &Job,
    options: Options,
    files: Option<Files<'_>>,
    parts: Option<PartsOut<'_>>,
    progress: &Progress,
) -> Result<(u64, Vec<Option<String>>)> {
    let plan = job.plan().expect("a distributed job has a plan");
    let outcome = Outcome::default();
    let root = cluster.is_root();
    let shared = options.transport == Transport::SharedFs;
    let files = files.filter(|_| root || shared);
    if files.is_none() && (root || shared) {
        outcome.fail(Failure::new(
            ErrorKind::Io,
            format!(
                "rank {} was given no files to work on (the {} transport needs them)",
                cluster.rank(),
                options.transport
            ),
        ));
    } else {
        let batches = Batches {
            pool,
            job,
            plan,
            files,
            parts,
            transport: options.transport,
            outcome: &outcome,
            progress,
        };
        match (job.is_parallel(), options.schedule, options.transport, root) {
            (false, _, _, true) => {
                batches.run_files(0..batches.units());
            }
            (false, _, _, false) => {}
            (true, Schedule::Static, Transport::SharedFs, _) => {
                let share_of = |rank| share(batches.units(), rank, cluster.size());
                if root {
                    // What each worker holds, for the watchdog's report.
                    for rank in 1..cluster.size() {
                        progress.handed(rank, &batches.chunks(&share_of(rank)));
                    }
                }
                let range = share_of(cluster.rank());
                log::debug!(
                    "rank {}: chunks {:?}",
                    cluster.rank(),
                    batches.chunks(&range)
                );
                batches.run_files(range);
            }
            (true, _, _, true) => farm::serve(cluster, &batches, options.schedule),
            (true, _, _, false) => farm::work_for_root(cluster, &batches),
        }
        // Make this rank's writes durable before rank 0 renames the output (on NFS, data
        // written on one client is on the server, and its errors known, once synced).
        if let (false, true, true, Some(output)) =
            (root, shared, options.sync, files.and_then(|f| f.output))
            && let Err(e) = output.sync_data()
        {
            outcome.fail(Failure::new(
                ErrorKind::Io,
                format!("syncing the output: {e}"),
            ));
        }
    }
    // Every part this rank stored is stored (or failed) before the ranks agree: no part lands
    // after the output is given up.
    let ids = match parts.map(|p| p.parts.finish()) {
        Some(Ok(ids)) => ids,
        Some(Err(failure)) => {
            outcome.fail(failure);
            Vec::new()
        }
        None => Vec::new(),
    };
    progress.step(Step::Agreeing);
    let end = cluster.agree(outcome.into_result())?;
    Ok((cluster.all_max(end), ids))
}
