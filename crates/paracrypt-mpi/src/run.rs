//! The chunks of one job over every rank.
//!
//! Static + shared-fs is the plain case: each rank runs its block with the core's engine on
//! the shared files and nothing crosses MPI until the final agreement. Every other combination
//! is a task farm driven by rank 0 ([`farm`](crate::farm)). A serial job runs on rank 0 alone.

use paracrypt_core::ErrorKind;
use paracrypt_core::engine::Job;
use rayon::ThreadPool;

use crate::batches::{Batches, Files, Outcome};
use crate::cluster::Cluster;
use crate::error::{Failure, Result};
use crate::farm;
use crate::watchdog::{Progress, Step};
use crate::{Options, Schedule, Transport};

/// Runs every chunk of `job` across the ranks of `cluster` (collective: every rank calls it
/// with an equal job) and returns the output's end, the same on every rank.
///
/// Each rank transforms its chunks in `pool`. Rank 0 always needs `files`; the other ranks
/// need them under [`Transport::SharedFs`] and ignore them under [`Transport::Messages`].
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
    progress: &Progress,
) -> Result<u64> {
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
            transport: options.transport,
            outcome: &outcome,
            progress,
        };
        match (job.is_parallel(), options.schedule, options.transport, root) {
            (false, _, _, true) => {
                batches.run_files(0..plan.len());
            }
            (false, _, _, false) => {}
            (true, Schedule::Static, Transport::SharedFs, _) => {
                if root {
                    // What each worker holds, for the watchdog's report.
                    for rank in 1..cluster.size() {
                        progress.handed(rank, &plan.block(rank, cluster.size()));
                    }
                }
                let range = plan.block(cluster.rank(), cluster.size());
                log::debug!("rank {}: chunks {range:?}", cluster.rank());
                batches.run_files(range);
            }
            (true, _, _, true) => farm::serve(cluster, &batches, options.schedule),
            (true, _, _, false) => farm::work_for_root(cluster, &batches),
        }
        // Make this rank's writes durable before rank 0 renames the output (on NFS, data
        // written on one client is on the server, and its errors known, once synced).
        if let (false, true, true, Some(files)) = (root, shared, options.sync, files)
            && let Err(e) = files.output.sync_data()
        {
            outcome.fail(Failure::new(
                ErrorKind::Io,
                format!("syncing the output: {e}"),
            ));
        }
    }
    progress.step(Step::Agreeing);
    let end = cluster.agree(outcome.into_result())?;
    Ok(cluster.all_max(end))
}
