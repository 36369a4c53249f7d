//! `--distributed`: a job across the ranks of an MPI job (`mpirun -n N paracrypt ...
//! --distributed`), through `paracrypt_mpi::distribute`, which owns the protocol.
//!
//! What is left here is the command line's part: the flags mapped to `paracrypt-mpi`'s options,
//! the checks every rank makes of its own arguments (agreed on before anything starts), rank
//! 0's output as the CLI makes it (a temporary file beside OUTPUT, renamed on commit; under
//! the messages transport one with no name at all where Linux allows it, `O_TMPFILE`, so that
//! even a killed rank 0 leaves nothing; under the shared-fs transport a named one, whose name
//! every rank learns before it exists, so that the ranks outliving a killed rank 0 remove it),
//! the report: an agreed failure is printed once, by
//! rank 0, and every rank exits with the same status; and what a stalled run does before the
//! watchdog aborts it: each rank prints one line saying what it waited for, and removes its
//! temporary files (rank 0's output; a worker of the shared-fs transport removes it too, in
//! case rank 0 is gone).
//!
//! Built without the `mpi` feature, `--distributed` is a usage error that says how to build
//! with MPI.

use std::process::ExitCode;

use anyhow::Result;
use paracrypt_core::provider::Provider;

use crate::flags::DistributedFlags;
use crate::spec::JobSpec;

/// Runs `spec` across the ranks of the MPI job this process belongs to, on `provider`.
pub fn run(flags: DistributedFlags, provider: Provider, spec: Result<JobSpec>) -> Result<ExitCode> {
    imp::run(flags, provider, spec)
}

/// `paracrypt sign --distributed`: the tree hash's leaves on every rank, signed by rank 0.
/// (Without MPI it is refused before any field is read.)
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub struct SignJob {
    /// The file to sign.
    pub input: std::path::PathBuf,
    /// Where the signature goes.
    pub output: std::path::PathBuf,
    /// `-f`.
    pub force: bool,
    /// `-j`.
    pub threads: crate::flags::ThreadsFlag,
    /// The tree's chunk size.
    pub chunk_size: paracrypt_core::plan::ChunkSize,
    /// Reads the signing key (rank 0 only).
    pub key: Box<dyn Fn() -> Result<paracrypt_core::sign::SigningKey> + Send>,
}

/// Signs across the ranks of the MPI job this process belongs to: every rank hashes its
/// chunks ([`TreeHash`](paracrypt_core::sign::tree::TreeHash) through `paracrypt_mpi::distribute`,
/// like any other job: the same leaves at any rank count), rank 0 gathers the leaves in a
/// temporary file beside the signature, signs and writes the signature.
pub fn sign(flags: DistributedFlags, provider: Provider, job: SignJob) -> Result<ExitCode> {
    imp::sign(flags, provider, job)
}

/// `encrypt --recursive --distributed` (and `decrypt`): one tree across the ranks of the MPI
/// job this process belongs to. Rank 0 plans the tree (the tree's secrets, the output's
/// directories: `paracrypt_core::tree::prepare` and `Prepared::plan`) from a walk of INPUT that
/// every rank shares: rank 0 lists its top (`paracrypt_core::tree::walk_top`) and hands out the
/// directories left, a few to a walk task, on the same farm, which a rank walks on its own pool
/// (`paracrypt_core::tree::walk_task`) and sends back; with `--update`, the walked files are
/// checked against the previous manifest on the same farm (`paracrypt_core::tree::check_task`:
/// encrypted headers read, with `--checksum` contents hashed, each file on one rank); then it
/// cuts the files into tasks, which it hands out
/// as MPI messages to whichever rank asks (`paracrypt_mpi::farm_tasks`), sealing tasks itself
/// too; every rank seals its tasks' files in place on the filesystem every rank sees
/// (`paracrypt_core::tree::seal_task`) and sends back each file's manifest entry; rank 0 writes
/// an incomplete manifest now and then as results come in (from which `--update` goes on after
/// an interrupt) and the manifest at the end. The other ranks never read the key file or
/// password: a task carries only the keys derived for its files.
///
/// `decrypt --recursive --distributed` is the same steps on the decrypting side: rank 0 reads
/// the manifest and checks OUTPUT (`paracrypt_core::tree::open_plan`), opens each file's header
/// as it cuts the tasks, every rank decrypts its tasks' files in place
/// (`paracrypt_core::tree::open_task`), and rank 0 makes the links and sets the directories'
/// modes and times at the end.
pub fn tree(
    flags: DistributedFlags,
    provider: Provider,
    spec: Result<JobSpec>,
    args: super::tree::TreeArgs,
) -> Result<ExitCode> {
    imp::tree(flags, provider, spec, args)
}

#[cfg(not(feature = "mpi"))]
mod imp {
    use super::*;
    use crate::exit::usage;

    const NOT_BUILT: &str = "--distributed needs paracrypt built with MPI support: \
        cargo build --release -p paracrypt-cli --features mpi \
        (needs Open MPI and libclang: apt-get install libopenmpi-dev openmpi-bin libclang-dev)";

    pub fn run(_: DistributedFlags, _: Provider, _: Result<JobSpec>) -> Result<ExitCode> {
        usage(NOT_BUILT)
    }

    pub fn sign(_: DistributedFlags, _: Provider, _: SignJob) -> Result<ExitCode> {
        usage(NOT_BUILT)
    }

    pub fn tree(
        _: DistributedFlags,
        _: Provider,
        _: Result<JobSpec>,
        _: crate::run::tree::TreeArgs,
    ) -> Result<ExitCode> {
        usage(NOT_BUILT)
    }
}

#[cfg(feature = "mpi")]
mod imp {
    use std::fs::File;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use paracrypt_mpi::{
        Cluster, Destination, Failure, Hooks, Input as MpiInput, NewOutput as MpiNewOutput,
        Options, Output as MpiOutput, RankLayout, Root, Schedule, Stall, Summary, Transport,
    };

    use super::*;
    use crate::exit::{self, say, usage, warn};
    use crate::flags::{ScheduleArg, TransportArg};
    use crate::interrupt::{hold_within, pending};
    #[cfg(feature = "s3")]
    use crate::io::remote::{RemoteInput, RemoteTarget};
    use crate::io::{Input, NewOutput, Output, OutputTarget};
    use paracrypt_core::request::{Driver, Request, Resolved};

    pub fn run(
        flags: DistributedFlags,
        provider: Provider,
        spec: Result<JobSpec>,
    ) -> Result<ExitCode> {
        let cluster = Cluster::init()?.with_hooks(CliHooks::default());
        #[cfg(feature = "s3")]
        let cluster = cluster.with_remote(objects::Ranks);
        notes(
            &cluster,
            spec.as_ref().is_ok_and(|spec| spec.quiet),
            flags.verbose,
        );
        let start = Instant::now();
        match steps(&cluster, flags, provider, spec) {
            Ok((summary, layout)) => {
                if let Some(layout) = layout {
                    print_layout(&layout, flags, &summary, start);
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(paracrypt_mpi::Error::Rank(failure)) => Ok(agreed(&cluster, &failure)),
            Err(error) => Err(error.into()),
        }
    }

    /// An agreed failure, printed once (by rank 0), as every rank's exit status.
    fn agreed(cluster: &Cluster, failure: &paracrypt_mpi::RankFailure) -> ExitCode {
        if cluster.is_root() {
            let who = if cluster.size() > 1 {
                format!("rank {}: ", failure.rank)
            } else {
                String::new()
            };
            say!("paracrypt: error: {who}{}", failure.message);
        }
        ExitCode::from(exit::code_of(failure.kind))
    }

    pub fn tree(
        flags: DistributedFlags,
        provider: Provider,
        spec: Result<JobSpec>,
        args: crate::run::tree::TreeArgs,
    ) -> Result<ExitCode> {
        let cluster = Cluster::init()?.with_hooks(CliHooks::default());
        notes(
            &cluster,
            spec.as_ref().is_ok_and(|spec| spec.quiet),
            flags.verbose,
        );
        match tree::steps(&cluster, flags, provider, spec, args) {
            Ok(code) => Ok(ExitCode::from(code)),
            Err(paracrypt_mpi::Error::Rank(failure)) => Ok(agreed(&cluster, &failure)),
            Err(error) => Err(error.into()),
        }
    }

    pub fn sign(flags: DistributedFlags, provider: Provider, job: SignJob) -> Result<ExitCode> {
        let cluster = Cluster::init()?.with_hooks(CliHooks::default());
        notes(&cluster, false, flags.verbose);
        match sign_steps(&cluster, flags, provider, job) {
            Ok(signed) => signed.map(|()| ExitCode::SUCCESS),
            Err(paracrypt_mpi::Error::Rank(failure)) => Ok(agreed(&cluster, &failure)),
            Err(error) => Err(error.into()),
        }
    }

    /// Says once, on rank 0, when a host lost mid-run would hold `mpirun` for minutes after
    /// the watchdog ends the job (ranks on several hosts, Open MPI's keepalive at its default),
    /// and with which settings to bound that; with `--verbose`, when Open MPI's start here
    /// loaded drivers for adapters the host lacks, and which setting skips them.
    fn notes(cluster: &Cluster, quiet: bool, verbose: bool) {
        if !cluster.is_root() || quiet {
            return;
        }
        if let Some(note) = paracrypt_mpi::lost_host_note() {
            say!("paracrypt: note: {note}");
        }
        if verbose && let Some(note) = cluster.start_up_note() {
            say!("paracrypt: note: {note}");
        }
    }

    /// Rank 0's checked key and signature output.
    struct SignRoot {
        key: paracrypt_core::sign::SigningKey,
        target: OutputTarget,
        /// The free name chosen for the temporary file of leaves.
        leaves: PathBuf,
    }

    fn prepare_sign(job: &SignJob, root: bool) -> Result<(rayon::ThreadPool, Option<SignRoot>)> {
        let pool = job.threads.pool()?;
        if job.input == Path::new("-") || job.output == Path::new("-") {
            return usage("--distributed needs FILE and the signature to be files (not -)");
        }
        if !root {
            return Ok((pool, None));
        }
        let key = (job.key)()?;
        let input = Input::open(&job.input)?;
        if input.as_file().is_none() {
            return usage("--distributed needs FILE to be a regular file");
        }
        let policy = crate::io::OutputPolicy {
            force: job.force,
            binary: true,
            ..Default::default()
        };
        let target = OutputTarget::new(&job.output, &job.input, policy)?;
        let dir = match job.output.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let leaves = NewLeaves::choose(&dir)?;
        Ok((
            pool,
            Some(SignRoot {
                key,
                target,
                leaves,
            }),
        ))
    }

    fn sign_steps(
        cluster: &Cluster,
        flags: DistributedFlags,
        provider: Provider,
        job: SignJob,
    ) -> paracrypt_mpi::Result<Result<()>> {
        let local = prepare_sign(&job, cluster.is_root()).map_err(|e| failure(&e));
        let (pool, sign_root) = cluster.agree(local)?;
        let options = Options {
            provider,
            ..options(flags)
        };
        let recipe = paracrypt_core::sign::tree::TreeHash::new(job.chunk_size);
        // The leaves, kept by rank 0's output when it commits.
        let kept: std::sync::Arc<Mutex<Option<tempfile::NamedTempFile>>> = Default::default();
        let root = sign_root.as_ref().map(|root| Root {
            input: job.input.as_path().into(),
            output: Destination::File(Box::new(NewLeaves {
                path: root.leaves.clone(),
                kept: kept.clone(),
            })),
        });
        let summary = paracrypt_mpi::distribute(cluster, &pool, options, &recipe, root)?;
        let Some(SignRoot { key, target, .. }) = sign_root else {
            return Ok(Ok(()));
        };
        let signed = (|| -> Result<()> {
            use std::io::Write;
            use std::os::unix::fs::FileExt;
            let leaves_file = kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .expect("rank 0's output was committed");
            let mut leaves = vec![0u8; summary.output_len as usize];
            leaves_file
                .as_file()
                .read_exact_at(&mut leaves, 0)
                .map_err(|e| anyhow::anyhow!("reading the leaves back: {e}"))?;
            let signature = paracrypt_core::sign::Signature::sign_leaves(
                &key,
                job.chunk_size,
                summary.input_len,
                leaves,
            )?;
            let mut out = target.create()?;
            out.writer()
                .write_all(&signature.to_bytes())
                .map_err(|e| anyhow::anyhow!("writing the signature: {e}"))?;
            out.commit()
        })();
        // Rank 0 alone signs, after every rank's part succeeded: its failure is its own.
        Ok(signed)
    }

    /// Rank 0's output of a distributed signature before it exists: a free name beside the
    /// signature for the temporary file of leaves (every shared-fs rank learns it before the
    /// file is made, so that a rank 0 killed at any point leaves nothing).
    struct NewLeaves {
        path: PathBuf,
        kept: std::sync::Arc<Mutex<Option<tempfile::NamedTempFile>>>,
    }

    impl NewLeaves {
        /// A name free in `dir` now.
        fn choose(dir: &Path) -> Result<PathBuf> {
            let free = |path: &Path| match std::fs::symlink_metadata(path) {
                Ok(_) => Err(std::io::ErrorKind::AlreadyExists.into()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            };
            let chosen = tempfile::Builder::new()
                .prefix(".paracrypt-leaves-")
                .make_in(dir, free)
                .and_then(|chosen| chosen.keep().map_err(|e| e.error))
                .map_err(|e| {
                    anyhow::anyhow!("cannot create a temporary file in {}: {e}", dir.display())
                })?;
            Ok(chosen.1)
        }
    }

    impl<'a> MpiNewOutput<'a> for NewLeaves {
        fn path(&self) -> Option<&Path> {
            Some(&self.path)
        }

        fn create(self: Box<Self>) -> std::result::Result<Box<dyn MpiOutput + 'a>, Failure> {
            use std::os::unix::fs::OpenOptionsExt;
            let cannot = |e: std::io::Error| {
                Failure::new(
                    paracrypt_core::ErrorKind::Io,
                    format!(
                        "cannot create a temporary file in {}: {e}",
                        self.path.parent().unwrap_or(Path::new(".")).display()
                    ),
                )
            };
            // Created only if nothing is there (what another process made is never ours).
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&self.path)
                .map_err(cannot)?;
            let path = tempfile::TempPath::try_from_path(&self.path).map_err(cannot)?;
            Ok(Box::new(Leaves {
                file: tempfile::NamedTempFile::from_parts(file, path),
                kept: self.kept.clone(),
            }))
        }
    }

    /// Rank 0's output of a distributed signature: the leaves, in a temporary file beside
    /// the signature (named, so that shared-fs ranks write into it), kept on commit for the
    /// signing and removed when dropped.
    struct Leaves {
        file: tempfile::NamedTempFile,
        kept: std::sync::Arc<Mutex<Option<tempfile::NamedTempFile>>>,
    }

    impl MpiOutput for Leaves {
        fn file(&self) -> &File {
            self.file.as_file()
        }

        fn path(&self) -> Option<&Path> {
            Some(self.file.path())
        }

        fn commit(self: Box<Self>) -> std::result::Result<(), Failure> {
            *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(self.file);
            Ok(())
        }
    }

    /// What a rank checked and made before the run.
    struct RankSetup {
        spec: JobSpec,
        pool: rayon::ThreadPool,
        request: Request,
        resolved: Resolved,
        /// Rank 0's input object, its header read (`None`: a file, or not rank 0).
        #[cfg(feature = "s3")]
        input: Option<Box<RemoteInput>>,
        /// Rank 0's checked output, not yet created (under the shared-fs transport, with the
        /// name its temporary file will have).
        output: Option<RootOutput>,
    }

    /// Rank 0's checked output.
    enum RootOutput {
        /// A file.
        File(NewOutput),
        /// An object: every rank uploads its own parts.
        #[cfg(feature = "s3")]
        Object(RemoteTarget),
    }

    /// The agreed preparation, then the run. Returns the summary and, with `--verbose`, rank
    /// 0's view of the layout.
    fn steps(
        cluster: &Cluster,
        flags: DistributedFlags,
        provider: Provider,
        spec: Result<JobSpec>,
    ) -> paracrypt_mpi::Result<(Summary, Option<Vec<RankLayout>>)> {
        // Every rank checks its own arguments and reads the key; rank 0 also checks the output.
        // A failure anywhere is agreed on before anything starts.
        let options = Options {
            provider,
            ..options(flags)
        };
        let local = spec
            .and_then(|spec| prepare(spec, cluster.is_root(), options.transport))
            .map_err(|e| failure(&e));
        let RankSetup {
            spec,
            pool,
            request,
            resolved,
            #[cfg(feature = "s3")]
            input,
            output,
        } = cluster.agree(local)?;
        let options = Options {
            sync: spec.policy.sync,
            ..options
        };
        if cluster.is_root() {
            super::super::warn_all(&spec, &request);
            if resolved.is_serial() && cluster.size() > 1 && !spec.quiet {
                warn(
                    "this mode is serial (CBC encryption, RC4): rank 0 runs it alone while the \
                     other ranks wait",
                );
            }
        }
        let layout = if flags.verbose {
            cluster.layout(pool.current_num_threads())
        } else {
            None
        };
        #[cfg(feature = "s3")]
        let named = input.map(|remote| MpiInput::Named(Box::new(objects::RankInput(remote))));
        #[cfg(not(feature = "s3"))]
        let named: Option<MpiInput<'_>> = None;
        let root = output.map(|output| Root {
            input: named.unwrap_or(MpiInput::File(spec.input.as_path())),
            output: match output {
                RootOutput::File(output) => Destination::File(Box::new(NewTempOutput(output))),
                #[cfg(feature = "s3")]
                RootOutput::Object(target) => {
                    Destination::Parts(Box::new(objects::NewObject(target)))
                }
            },
        });
        let summary = paracrypt_mpi::distribute(cluster, &pool, options, resolved.recipe(), root)?;
        if cluster.is_root()
            && !spec.quiet
            && let Some(note) = super::super::signer_note(&resolved)
        {
            say!("paracrypt: {note}");
        }
        Ok((summary, layout))
    }

    /// The flags, as `paracrypt-mpi`'s options.
    fn options(flags: DistributedFlags) -> Options {
        Options {
            schedule: match flags.schedule {
                ScheduleArg::Static => Schedule::Static,
                ScheduleArg::Dynamic => Schedule::Dynamic,
            },
            transport: match flags.transport {
                TransportArg::SharedFs => Transport::SharedFs,
                TransportArg::Messages => Transport::Messages,
            },
            stall_timeout: (flags.stall_timeout > 0)
                .then(|| Duration::from_secs(flags.stall_timeout)),
            ..Options::default()
        }
    }

    /// What a rank does when its run must end abnormally.
    #[derive(Debug, Default)]
    struct CliHooks {
        /// Rank 0's output, which this rank writes into (shared-fs transport, ranks but 0).
        shared: Mutex<Option<PathBuf>>,
    }

    impl Hooks for CliHooks {
        fn writing_shared(&self, path: Option<&Path>) {
            let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            let mut pending = pending();
            if let Some(old) = shared.take() {
                pending.forget_file(&old);
            }
            if let Some(path) = path {
                pending.add_file(path);
                *shared = Some(path.to_path_buf());
            }
        }

        fn stalled(&self, stall: &Stall) -> i32 {
            // Held until MPI_Abort ends the process: nothing commits after this point. A commit
            // that holds it for more than a second is stuck itself, and left alone.
            let held = hold_within(Duration::from_secs(1));
            say!("paracrypt: error: {stall}; aborting the job (--stall-timeout)");
            if let Some(mut held) = held {
                held.clean_up();
                std::mem::forget(held);
            }
            i32::from(exit::STALLED)
        }
    }

    /// A rank's own checks: its pool, its arguments, its key; rank 0 also checks the input
    /// and the output (each a file every rank can open, or an object every rank reaches) and,
    /// under the shared-fs transport, chooses the output's temporary name.
    fn prepare(spec: JobSpec, root: bool, transport: Transport) -> Result<RankSetup> {
        let pool = spec.threads.pool()?;
        let not_files = || {
            usage("--distributed needs INPUT and OUTPUT to be files or objects (not - or a pipe)")
        };
        if spec.input == Path::new("-") || spec.output == Path::new("-") {
            return not_files();
        }
        if spec.operation.range().is_some() {
            return usage(
                "--range reads only a few chunks and runs on one process: drop --distributed",
            );
        }
        // On every rank, never from a prompt.
        let request = spec.operation.request(false)?;
        #[cfg(feature = "s3")]
        let mut remote_input = None;
        // Rank 0 resolves the job from the input's first bytes (every refusal the core makes
        // of a job run in parts, armor included); the others make theirs from the header it
        // sends.
        let (resolved, output) = if root {
            let mut input = Input::open(&spec.input)?;
            let (head, _) = super::super::head::read_head(&mut input)?;
            let resolved = request
                .resolve(&head, Driver::Distributed)
                .map_err(|e| super::super::hint(e, &spec, input.path()))?;
            let target = OutputTarget::new(&spec.output, input.path(), spec.policy)?;
            match input {
                Input::File { len: Some(_), .. } => {}
                #[cfg(feature = "s3")]
                Input::Remote(remote) => remote_input = Some(remote),
                _ => return not_files(),
            }
            let output = match target {
                OutputTarget::File(_) => {
                    RootOutput::File(target.new_output(transport == Transport::SharedFs)?)
                }
                #[cfg(feature = "s3")]
                OutputTarget::Remote(target) => RootOutput::Object(target),
                _ => return not_files(),
            };
            (resolved, Some(output))
        } else {
            (request.for_header()?, None)
        };
        Ok(RankSetup {
            spec,
            pool,
            request,
            resolved,
            #[cfg(feature = "s3")]
            input: remote_input,
            output,
        })
    }

    /// A local error, as a failure to agree on.
    fn failure(error: &anyhow::Error) -> Failure {
        Failure::new(exit::kind(error), exit::one_line(error))
    }

    /// Test builds only (`test-hooks`): set, rank 0 waits until it is killed once its output
    /// file exists, so that a fault test can kill it there
    /// (`distributed::a_rank_0_killed_once_its_output_exists_…`). No other build reads it.
    #[cfg(feature = "test-hooks")]
    const HOLD_ENV: &str = "PARACRYPT_TEST_HOLD_NEW_OUTPUT";

    /// Rank 0's output before it exists.
    struct NewTempOutput(NewOutput);

    impl<'a> MpiNewOutput<'a> for NewTempOutput {
        fn path(&self) -> Option<&Path> {
            self.0.path()
        }

        fn create(self: Box<Self>) -> std::result::Result<Box<dyn MpiOutput + 'a>, Failure> {
            let output = self.0.create().map_err(|e| failure(&e))?;
            #[cfg(feature = "test-hooks")]
            if std::env::var_os(HOLD_ENV).is_some() {
                loop {
                    std::thread::park();
                }
            }
            Ok(Box::new(TempOutput(output)))
        }
    }

    /// Rank 0's output: the CLI's temporary file beside OUTPUT.
    struct TempOutput(Output);

    impl MpiOutput for TempOutput {
        fn file(&self) -> &File {
            self.0.as_file().expect("a file target")
        }

        fn path(&self) -> Option<&Path> {
            self.0.temp_path()
        }

        fn commit(self: Box<Self>) -> std::result::Result<(), Failure> {
            self.0.commit().map_err(|e| failure(&e))
        }
    }

    fn print_layout(
        layout: &[RankLayout],
        flags: DistributedFlags,
        summary: &Summary,
        start: Instant,
    ) {
        let options = options(flags);
        say!(
            "paracrypt: distributed: {} ranks, schedule {}, transport {}, {} bytes in {} chunks",
            layout.len(),
            options.schedule,
            options.transport,
            summary.input_len,
            summary.chunks,
        );
        for rank in layout {
            say!(
                "paracrypt:   rank {} on {}: {} thread{} ({} core{} allowed)",
                rank.rank,
                rank.host,
                rank.threads,
                if rank.threads == 1 { "" } else { "s" },
                rank.cores,
                if rank.cores == 1 { "" } else { "s" },
            );
        }
        if layout.len() > 1 && layout.iter().all(|r| r.cores == 1) {
            say!(
                "paracrypt:   each rank is bound to one core (Open MPI's default): for threads \
                 inside ranks, run one rank per node with `mpirun --map-by ppr:1:node --bind-to \
                 none`, or `--bind-to none` with -j N"
            );
        }
        say!(
            "paracrypt: distributed: chunks in {:.3} s, {:.3} s from MPI start to rename",
            summary.chunk_time.as_secs_f64(),
            start.elapsed().as_secs_f64()
        );
    }

    /// One tree across the ranks (`encrypt` or `decrypt --recursive --distributed`): see
    /// [`super::tree`].
    mod tree {
        use std::ops::Range;
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::{Arc, Mutex};

        use paracrypt_core::Runner;
        use paracrypt_core::request::Driver;
        use paracrypt_core::tree::{
            self, Checks, Guard, OpenPlan, OpenTask, Opened, Plan, Prepared, Sealed, Summary, Task,
            TaskResult, Walk, WalkTop,
        };
        use paracrypt_mpi::{Cluster, Tasks, Ticker};
        use zeroize::Zeroizing;

        use super::{failure, options};
        use crate::exit::{say, usage};
        use crate::flags::{DistributedFlags, TransportArg};
        use crate::run::tree::TreeArgs;
        use crate::spec::{JobSpec, Operation};
        use anyhow::Result;
        use paracrypt_core::provider::Provider;

        /// Tasks per rank that rank 0 cuts a tree into at least (more where the tree has more
        /// batches of small files or large files), so that a rank that finishes early takes
        /// another while a slow one still works on its own.
        const TASKS_PER_RANK: usize = 4;

        /// Directories per rank that rank 0 lists the top of INPUT down to before it hands out
        /// the rest of the walk (more where the last level listed has more), cut into
        /// [`TASKS_PER_RANK`] walk tasks per rank of several directories each: a tree of fewer
        /// directories is walked by rank 0 alone.
        const WALK_DIRS_PER_RANK: usize = 8;

        /// What differs between a tree's encryption and its decryption across the ranks: rank
        /// 0's plan, its tasks and the results it adds up, and what a rank runs of a task. The
        /// rest ([`steps`]: the agreed checks, the farm, the report) is one for both.
        trait Kind {
            /// Rank 0's plan of the tree.
            type Plan: Send + Sync;
            /// What rank 0 has added up of the tasks' results.
            type Done: Send;
            /// Whether this kind encrypts (for the report's lines and hints).
            const ENCRYPTING: bool;

            /// Rank 0's plan before the walk of INPUT.
            type Prepared: Send;

            /// Rank 0: the secret read and the tree's plan begun, its paths made absolute (as
            /// the tasks name them to every rank); for a kind that walks INPUT, its top listed,
            /// the rest cut into walk tasks that `ranks` ranks share.
            fn prepare(
                runner: &Runner,
                spec: &JobSpec,
                options: &tree::Options,
                args: &TreeArgs,
                ranks: usize,
            ) -> Result<(Self::Prepared, Option<WalkTop>)>;

            /// Rank 0: an update's checks of the walked files (which are unchanged since the
            /// previous manifest), cut into at least `at_least` tasks where there are as many;
            /// none for a kind that does not update, or a run that is not an update of a tree
            /// already at OUTPUT.
            fn checks(prepared: &Self::Prepared, walk: &Walk, at_least: usize) -> Option<Checks> {
                let _ = (prepared, walk, at_least);
                None
            }

            /// Rank 0: the tree planned, from the finished walk of INPUT where it walks one
            /// (and an update's checks, their answers in, where it made them).
            fn plan(
                prepared: Self::Prepared,
                walk: Option<Walk>,
                checks: Option<Checks>,
            ) -> Result<Self::Plan>;

            /// The plan's files cut into at least `at_least` tasks (where it has as many).
            fn tasks(plan: &Self::Plan, at_least: usize) -> Vec<Range<usize>>;

            /// The bytes of the task of `files`, sent to the rank that runs it.
            fn task(
                plan: &Self::Plan,
                files: Range<usize>,
            ) -> paracrypt_core::Result<Zeroizing<Vec<u8>>>;

            /// Nothing added yet.
            fn nothing(plan: &Self::Plan) -> Self::Done;

            /// Adds one task's result.
            fn add(
                done: &mut Self::Done,
                plan: &Self::Plan,
                result: TaskResult,
            ) -> paracrypt_core::Result<()>;

            /// A task that gave back nothing: its files failed, each with `why`.
            fn lost(done: &mut Self::Done, plan: &Self::Plan, files: Range<usize>, why: &str);

            /// After each result: what is done so far written down where it is due (an
            /// encryption's incomplete manifest, from which `--update` goes on).
            fn checkpoint(done: &mut Self::Done, plan: &Self::Plan, runner: &Runner) {
                let _ = (done, plan, runner);
            }

            /// Rank 0, once every task is in: the tree finished (its manifest, or its links
            /// and directories).
            fn finish(plan: Self::Plan, runner: &Runner, done: Self::Done) -> Summary;

            /// Any rank: a task run from its bytes, telling `guard` of its temporary files;
            /// `None` when the bytes are not a task (rank 0 reports its files as lost).
            fn run(runner: &Runner, bytes: &[u8], guard: Arc<dyn Guard>) -> Option<TaskResult>;
        }

        /// `encrypt --recursive --distributed`.
        struct Seal;

        /// Rank 0's encryption before the walk: a local tree's plan begun, whose walk the
        /// ranks share, or the whole plan of a plaintext tree in a prefix (listed once).
        enum SealPrepared {
            Walking(Box<Prepared>),
            Listed(Box<Plan>),
        }

        impl Kind for Seal {
            type Plan = Plan;
            type Done = Sealed;
            type Prepared = SealPrepared;
            const ENCRYPTING: bool = true;

            fn prepare(
                runner: &Runner,
                spec: &JobSpec,
                options: &tree::Options,
                args: &TreeArgs,
                ranks: usize,
            ) -> Result<(SealPrepared, Option<WalkTop>)> {
                // A prefix at OUTPUT: checked (an update's, listed) before any prompt, as a
                // local run checks it; every rank uploads its tasks' files into it. A prefix at
                // INPUT: listed once, here; every rank reads its tasks' objects at the versions
                // listed.
                let (input, output) = absolute(spec)?;
                let prefix = crate::io::remote::prefix_run(true, &input, &output, options)
                    .map_err(hint::<Self>)?;
                let options = &crate::run::tree::with_update_identities(options.clone(), args)?;
                let request = spec.operation.request(false)?;
                crate::run::warn_all(spec, &request);
                let out = match prefix {
                    Some(crate::io::remote::PrefixRun::Encrypt(run)) if run.reads_prefix() => {
                        // Planned whole from the listing: no walk to share.
                        let plan = run
                            .plan(runner, &request, &input, &output, options)
                            .map_err(hint::<Self>)?;
                        return Ok((SealPrepared::Listed(Box::new(plan)), None));
                    }
                    Some(crate::io::remote::PrefixRun::Encrypt(run)) => run.output(),
                    Some(crate::io::remote::PrefixRun::Decrypt(_)) => {
                        unreachable!("an encryption's run")
                    }
                    None => None,
                };
                let prepared = match out {
                    Some(out) => tree::prepare_to(runner, &request, &input, out, options),
                    None => tree::prepare(runner, &request, &input, &output, options),
                }
                .map_err(hint::<Self>)?;
                // One rank walks the tree whole here, as a local run does.
                let dirs = if ranks > 1 {
                    ranks * WALK_DIRS_PER_RANK
                } else {
                    usize::MAX
                };
                let top =
                    tree::walk_top(&input, dirs, ranks * TASKS_PER_RANK).map_err(hint::<Self>)?;
                Ok((SealPrepared::Walking(Box::new(prepared)), Some(top)))
            }

            fn checks(prepared: &SealPrepared, walk: &Walk, at_least: usize) -> Option<Checks> {
                match prepared {
                    SealPrepared::Walking(prepared) => prepared.checks(walk, at_least),
                    // Checked by the plan, through the prefix.
                    SealPrepared::Listed(_) => None,
                }
            }

            fn plan(
                prepared: SealPrepared,
                walk: Option<Walk>,
                checks: Option<Checks>,
            ) -> Result<Plan> {
                let prepared = match prepared {
                    SealPrepared::Listed(plan) => return Ok(*plan),
                    SealPrepared::Walking(prepared) => *prepared,
                };
                let walk = walk.expect("a local tree's encryption walks it");
                match checks {
                    Some(checks) => prepared.plan_checked(walk, checks),
                    None => prepared.plan(walk),
                }
                .map_err(hint::<Self>)
            }

            fn tasks(plan: &Plan, at_least: usize) -> Vec<Range<usize>> {
                plan.tasks(at_least)
            }

            fn task(
                plan: &Plan,
                files: Range<usize>,
            ) -> paracrypt_core::Result<Zeroizing<Vec<u8>>> {
                plan.task(files).and_then(|task| task.to_bytes())
            }

            fn nothing(plan: &Plan) -> Sealed {
                Sealed::new(plan)
            }

            fn add(
                done: &mut Sealed,
                plan: &Plan,
                result: TaskResult,
            ) -> paracrypt_core::Result<()> {
                done.add(plan, result)
            }

            fn lost(done: &mut Sealed, plan: &Plan, files: Range<usize>, why: &str) {
                done.lost(plan, files, why);
            }

            fn checkpoint(done: &mut Sealed, plan: &Plan, runner: &Runner) {
                done.checkpoint(plan, runner);
            }

            fn finish(plan: Plan, runner: &Runner, done: Sealed) -> Summary {
                plan.finish(runner, done)
            }

            fn run(runner: &Runner, bytes: &[u8], guard: Arc<dyn Guard>) -> Option<TaskResult> {
                let task = Task::from_bytes(bytes).ok()?;
                if crate::io::remote::is_url(task.input())
                    || crate::io::remote::is_url(task.output())
                {
                    // A tree from or into a prefix: this rank reads the task's objects or
                    // uploads its files itself (its uploads aborted on an interrupt or the
                    // watchdog's abort).
                    return crate::io::remote::seal_task_from(runner, &task, guard);
                }
                Some(tree::seal_task_guarded(runner, &task, guard))
            }
        }

        /// `decrypt --recursive --distributed`.
        struct Open;

        impl Kind for Open {
            type Plan = OpenPlan;
            type Done = Opened;
            type Prepared = OpenPlan;
            const ENCRYPTING: bool = false;

            /// A decryption reads the manifest, not a walk of INPUT: its plan is whole here.
            /// A prefix at INPUT is checked and listed once, here, before any prompt, as a
            /// local run lists it; every rank reads its tasks' objects at the versions listed.
            fn prepare(
                runner: &Runner,
                spec: &JobSpec,
                options: &tree::Options,
                _: &TreeArgs,
                _: usize,
            ) -> Result<(OpenPlan, Option<WalkTop>)> {
                let (input, output) = absolute(spec)?;
                let prefix = crate::io::remote::prefix_run(false, &input, &output, options)
                    .map_err(hint::<Self>)?;
                let request = spec.operation.request(false)?;
                crate::run::warn_all(spec, &request);
                let plan = match prefix {
                    Some(crate::io::remote::PrefixRun::Decrypt(run)) => {
                        run.plan(runner, &request, &output, options, Driver::Distributed)
                    }
                    Some(crate::io::remote::PrefixRun::Encrypt(_)) => {
                        unreachable!("a decryption's run")
                    }
                    None => tree::open_plan(
                        runner,
                        &request,
                        &input,
                        &output,
                        options,
                        Driver::Distributed,
                    ),
                }
                .map_err(hint::<Self>)?;
                Ok((plan, None))
            }

            fn plan(plan: OpenPlan, _: Option<Walk>, _: Option<Checks>) -> Result<OpenPlan> {
                Ok(plan)
            }

            fn tasks(plan: &OpenPlan, at_least: usize) -> Vec<Range<usize>> {
                plan.tasks(at_least)
            }

            fn task(
                plan: &OpenPlan,
                files: Range<usize>,
            ) -> paracrypt_core::Result<Zeroizing<Vec<u8>>> {
                plan.task(files).map(|task| task.to_bytes())
            }

            fn nothing(plan: &OpenPlan) -> Opened {
                Opened::new(plan)
            }

            fn add(
                done: &mut Opened,
                plan: &OpenPlan,
                result: TaskResult,
            ) -> paracrypt_core::Result<()> {
                done.add(plan, result)
            }

            fn lost(done: &mut Opened, plan: &OpenPlan, files: Range<usize>, why: &str) {
                done.lost(plan, files, why);
            }

            fn finish(plan: OpenPlan, _: &Runner, done: Opened) -> Summary {
                plan.finish(done)
            }

            fn run(runner: &Runner, bytes: &[u8], guard: Arc<dyn Guard>) -> Option<TaskResult> {
                let task = OpenTask::from_bytes(bytes).ok()?;
                if crate::io::remote::is_url(task.input())
                    || crate::io::remote::is_url(task.output())
                {
                    // A tree from or into a prefix: this rank reads or writes the task's
                    // objects itself.
                    return crate::io::remote::open_task_from(runner, &task, guard);
                }
                Some(tree::open_task_guarded(runner, &task, guard))
            }
        }

        /// The agreed checks, rank 0's plan, the tasks on every rank, rank 0's finish
        /// (`encrypt --recursive` or `decrypt --recursive`, as `spec` says). Returns every
        /// rank's exit status: rank 0's, sent to the others.
        pub fn steps(
            cluster: &Cluster,
            flags: DistributedFlags,
            provider: Provider,
            spec: Result<JobSpec>,
            args: TreeArgs,
        ) -> paracrypt_mpi::Result<u8> {
            let encrypting = matches!(
                spec.as_ref().map(|spec| &spec.operation),
                Ok(Operation::Encrypt { .. })
            );
            if encrypting {
                steps_of::<Seal>(cluster, flags, provider, spec, args)
            } else {
                steps_of::<Open>(cluster, flags, provider, spec, args)
            }
        }

        fn steps_of<K: Kind>(
            cluster: &Cluster,
            flags: DistributedFlags,
            provider: Provider,
            spec: Result<JobSpec>,
            args: TreeArgs,
        ) -> paracrypt_mpi::Result<u8> {
            let mpi_options = paracrypt_mpi::Options {
                provider,
                ..options(flags)
            };
            // 1. Every rank checks its own arguments; a refusal anywhere is agreed on.
            let local = spec
                .and_then(|spec| {
                    refusals(&spec, flags)?;
                    if args.report.dry_run {
                        return usage(
                            "--dry-run says what one process would do: drop --distributed",
                        );
                    }
                    let options = crate::run::tree::tree_options(&spec, &args)?;
                    let pool = spec.threads.pool()?;
                    Ok((spec, options, pool))
                })
                .map_err(|e| failure(&e));
            let (spec, options, pool) = cluster.agree(local)?;
            // 2. Rank 0 alone reads the secret, begins the plan and lists the top of INPUT;
            //    every refusal of a local run is made there or in 4, before anything is
            //    written, in the order a local run makes them.
            let runner = Runner::new().provider(provider);
            let ranks = cluster.size();
            let local = if cluster.is_root() {
                // A prefix at INPUT or OUTPUT is checked by the store, in `prepare`.
                let in_store = |path: &std::path::Path| crate::io::remote::is_url(path);
                let checked = if in_store(&spec.input) || in_store(&spec.output) {
                    Ok(())
                } else {
                    tree::check(&spec.input, &spec.output, &options)
                };
                checked
                    .map_err(hint::<K>)
                    .and_then(|()| {
                        pool.install(|| K::prepare(&runner, &spec, &options, &args, ranks))
                    })
                    .map(Some)
                    .map_err(|e| failure(&e))
            } else {
                Ok(None)
            };
            let (prepared, top) = match cluster.agree(local)? {
                Some((prepared, top)) => (Some(prepared), top),
                None => (None, None),
            };
            // 3. The rest of INPUT's walk, its directories handed out to every rank.
            let walk = walk_across(cluster, &pool, mpi_options, top, flags.verbose);
            // 4. An update's checks of the walked files (their encrypted headers; with
            //    --checksum their contents too), handed out to every rank: no rank reads the
            //    whole tree alone. Every rank takes part when this is an update.
            let checks = match (&prepared, &walk) {
                (Some(prepared), Some(Ok(walk))) => {
                    K::checks(prepared, walk, ranks * TASKS_PER_RANK)
                }
                _ => None,
            };
            let checks = if args.update {
                check_across(cluster, &pool, mpi_options, checks, flags.verbose)
            } else {
                checks
            };
            // 5. Rank 0 plans the tree from the walk.
            let local = match prepared {
                Some(prepared) => walk
                    .transpose()
                    .map_err(hint::<K>)
                    .and_then(|walk| pool.install(|| K::plan(prepared, walk, checks)))
                    .map(Some)
                    .map_err(|e| failure(&e)),
                None => Ok(None),
            };
            let plan = cluster.agree(local)?;
            // 6. The tasks, on every rank.
            let cut: Vec<Range<usize>> = plan
                .as_ref()
                .map(|plan| K::tasks(plan, cluster.size() * TASKS_PER_RANK))
                .unwrap_or_default();
            let done = plan.as_ref().map(|plan| Mutex::new(K::nothing(plan)));
            let run = |bytes: &[u8], ticker: &Ticker| -> Vec<u8> {
                let ticker = ticker.clone();
                let runner = Runner::new()
                    .provider(provider)
                    .progress(move |_| ticker.tick());
                // The interrupt handler removes the named temporary files of a rank that
                // `mpirun` ends (a filesystem without `O_TMPFILE`, as NFS).
                let guard = Arc::new(crate::run::tree::Interrupts);
                // An empty result: rank 0 reports the task's files as lost.
                K::run(&runner, bytes, guard).map_or_else(Vec::new, |result| result.to_bytes())
            };
            let root = match (&plan, &done) {
                (Some(plan), Some(done)) => Some((plan, done)),
                _ => None,
            };
            let make = |i: usize| {
                let (plan, done) = root?;
                let files = cut[i].clone();
                match K::task(plan, files.clone()) {
                    Ok(bytes) => Some(bytes),
                    Err(e) => {
                        K::lost(&mut lock(done), plan, files, &e.to_string());
                        None
                    }
                }
            };
            let by_rank: Vec<AtomicU64> = (0..cluster.size()).map(|_| AtomicU64::new(0)).collect();
            let add = |i: usize, rank: usize, bytes: Vec<u8>| {
                let Some((plan, done)) = root else { return };
                by_rank[rank].fetch_add(1, Ordering::Relaxed);
                let files = cut[i].clone();
                let mut done = lock(done);
                let added = TaskResult::from_bytes(&bytes)
                    .and_then(|result| K::add(&mut done, plan, result));
                if added.is_err() {
                    K::lost(
                        &mut done,
                        plan,
                        files,
                        "the rank that ran it could not read its task",
                    );
                }
                K::checkpoint(&mut done, plan, &runner);
            };
            let tasks = root.map(|_| Tasks {
                count: cut.len(),
                task: &make,
                done: &add,
            });
            paracrypt_mpi::farm_tasks(cluster, &pool, mpi_options, tasks, &run);
            if flags.verbose && cluster.is_root() {
                let counts: Vec<String> = by_rank
                    .iter()
                    .enumerate()
                    .map(|(rank, n)| format!("rank {rank}: {}", n.load(Ordering::Relaxed)))
                    .collect();
                say!(
                    "paracrypt: distributed: {} ranks, {} tasks ({})",
                    cluster.size(),
                    cut.len(),
                    counts.join(", ")
                );
            }
            // 7. Rank 0 finishes the tree and reports; every rank exits with its status.
            let code = match (plan, done) {
                (Some(plan), Some(done)) => {
                    let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
                    let summary = pool.install(|| K::finish(plan, &runner, done));
                    let operation = if K::ENCRYPTING { "encrypt" } else { "decrypt" };
                    args.report
                        .summary(&summary, operation, args.update, spec.quiet);
                    crate::run::tree::report(&summary, K::ENCRYPTING, spec.quiet)
                }
                _ => 0,
            };
            Ok(cluster.broadcast_u64(0, u64::from(code)) as u8)
        }

        /// The walk of INPUT across the ranks, from the top rank 0 listed (`top`, on rank 0;
        /// none for a kind that does not walk): the directories left, a few to a task on the
        /// farm, walked by whichever rank takes them on its own pool and sent back as a part, merged
        /// by rank 0 into the finished walk it returns (every other rank returns `None`). With
        /// `verbose`, rank 0 says how many directories each rank listed.
        fn walk_across(
            cluster: &Cluster,
            pool: &rayon::ThreadPool,
            mpi_options: paracrypt_mpi::Options,
            top: Option<WalkTop>,
            verbose: bool,
        ) -> Option<paracrypt_core::Result<Walk>> {
            let top_listed = top.as_ref().map(WalkTop::listed);
            let count = top.as_ref().map_or(0, WalkTop::tasks);
            let pending = top.as_ref().map_or(0, WalkTop::pending);
            let top = top.map(Mutex::new);
            let listed: Vec<AtomicU64> = (0..cluster.size()).map(|_| AtomicU64::new(0)).collect();
            let run = |bytes: &[u8], ticker: &Ticker| -> Vec<u8> {
                // An empty part: rank 0 reports the directory as not walked.
                tree::walk_task(bytes, &|| ticker.tick()).unwrap_or_default()
            };
            let task = |i: usize| {
                let top = top.as_ref()?;
                Some(Zeroizing::new(lock(top).task(i)))
            };
            let done = |i: usize, rank: usize, bytes: Vec<u8>| {
                let Some(top) = &top else { return };
                let mut top = lock(top);
                match top.add(i, &bytes) {
                    Ok(dirs) => {
                        listed[rank].fetch_add(dirs as u64, Ordering::Relaxed);
                    }
                    Err(_) => top.lost(i, "the rank that walked it sent back no walk part"),
                }
            };
            let tasks = top.as_ref().map(|_| Tasks {
                count,
                task: &task,
                done: &done,
            });
            paracrypt_mpi::farm_tasks(cluster, pool, mpi_options, tasks, &run);
            let top = top?.into_inner().unwrap_or_else(|e| e.into_inner());
            if verbose {
                listed[0].fetch_add(top_listed.unwrap_or(0) as u64, Ordering::Relaxed);
                let counts: Vec<String> = listed
                    .iter()
                    .enumerate()
                    .map(|(rank, n)| format!("rank {rank}: {}", n.load(Ordering::Relaxed)))
                    .collect();
                say!(
                    "paracrypt: distributed: walk: {} ranks, {count} walk tasks of {pending} \
                     directories, directories listed by rank ({})",
                    cluster.size(),
                    counts.join(", ")
                );
            }
            Some(pool.install(|| top.finish()))
        }

        /// An update's checks across the ranks (`checks`, on rank 0; none where there are
        /// none to make): each task of files is checked by whichever rank takes it on its own
        /// pool (`paracrypt_core::tree::check_task`: the encrypted headers read, with
        /// `--checksum` the files hashed), its answer (a bit per file) added by rank 0, which
        /// returns the checks answered (every other rank returns `None`). With `verbose`, rank 0
        /// says how many files each rank checked.
        fn check_across(
            cluster: &Cluster,
            pool: &rayon::ThreadPool,
            mpi_options: paracrypt_mpi::Options,
            checks: Option<Checks>,
            verbose: bool,
        ) -> Option<Checks> {
            let count = checks.as_ref().map_or(0, Checks::tasks);
            let files = checks.as_ref().map_or(0, Checks::files);
            let checks = checks.map(Mutex::new);
            let checked: Vec<AtomicU64> = (0..cluster.size()).map(|_| AtomicU64::new(0)).collect();
            let provider = mpi_options.provider;
            let run = |bytes: &[u8], ticker: &Ticker| -> Vec<u8> {
                // An empty answer: rank 0 seals the task's files again.
                tree::check_task(bytes, provider, &|| ticker.tick()).unwrap_or_default()
            };
            let task = |i: usize| {
                let checks = checks.as_ref()?;
                Some(Zeroizing::new(lock(checks).task(i)))
            };
            let done = |i: usize, rank: usize, bytes: Vec<u8>| {
                let Some(checks) = &checks else { return };
                // An answer that does not read leaves its files to be sealed again.
                if let Ok(files) = lock(checks).add(i, &bytes) {
                    checked[rank].fetch_add(files as u64, Ordering::Relaxed);
                }
            };
            let tasks = checks.as_ref().map(|_| Tasks {
                count,
                task: &task,
                done: &done,
            });
            paracrypt_mpi::farm_tasks(cluster, pool, mpi_options, tasks, &run);
            let checks = checks?.into_inner().unwrap_or_else(|e| e.into_inner());
            if verbose {
                let counts: Vec<String> = checked
                    .iter()
                    .enumerate()
                    .map(|(rank, n)| format!("rank {rank}: {}", n.load(Ordering::Relaxed)))
                    .collect();
                say!(
                    "paracrypt: distributed: update: {} ranks, {count} check tasks of {files} \
                     files, files checked by rank ({})",
                    cluster.size(),
                    counts.join(", ")
                );
            }
            Some(checks)
        }

        fn lock<T>(done: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
            done.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// A core refusal with the command line's flags where they help.
        fn hint<K: Kind>(error: paracrypt_core::Error) -> anyhow::Error {
            crate::run::tree::hint(error, K::ENCRYPTING)
        }

        /// INPUT and OUTPUT made absolute, as the tasks name them to every rank.
        fn absolute(spec: &JobSpec) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
            // A prefix's URL is every rank's as it is.
            let absolute = |path: &std::path::Path| {
                if crate::io::remote::is_url(path) {
                    return Ok(path.to_path_buf());
                }
                std::path::absolute(path)
                    .map_err(|e| anyhow::anyhow!("cannot make {} absolute: {e}", path.display()))
            };
            Ok((absolute(&spec.input)?, absolute(&spec.output)?))
        }

        /// What a tree across ranks does not do, refused on every rank before anything is
        /// read: its files are read and written in place (no messages transport), and an
        /// armored age file is written in order by one process (such a tree is not cut into
        /// tasks; an armored tree to decrypt is refused by rank 0, which reads its manifest).
        fn refusals(spec: &JobSpec, flags: DistributedFlags) -> Result<()> {
            if flags.transport == TransportArg::Messages {
                return usage(
                    "--recursive --distributed reads and writes the trees in place, on a \
                     filesystem every rank sees: drop --transport messages",
                );
            }
            match &spec.operation {
                Operation::Encrypt { sealing, .. } if sealing.armor => usage(
                    "an armored age file is written in order by one process, so an armored \
                     tree is not spread over ranks: drop --distributed (or --armor)",
                ),
                Operation::Encrypt { .. } | Operation::Decrypt { .. } => Ok(()),
                _ => usage("--recursive --distributed encrypts or decrypts a tree"),
            }
        }
    }

    /// Objects across the ranks (`s3://…` INPUT or OUTPUT): rank 0's input object, which every
    /// rank opens by its URL and ETag and reads its own ranges of; the output object, one
    /// multipart upload that rank 0 creates, every rank joins by its upload id and uploads the
    /// parts it computes (`paracrypt_store::upload_parts`, as one process does), and rank 0
    /// completes with every rank's part ids. Every rank that joined the upload registers its
    /// abort with the interrupt handler, so that a signal or a stalled run on any rank aborts
    /// it, even when rank 0 is gone.
    #[cfg(feature = "s3")]
    mod objects {
        use std::io::BufRead;
        use std::path::Path;

        use paracrypt_core::engine::{Job, Source};
        use paracrypt_core::plan::ChunkPlan;
        use paracrypt_mpi::{Failure, NamedInput, NewParts, Parts, Remote, RootParts};
        use paracrypt_store::{Meta, ObjectSource, Upload, UploadError};

        use super::failure;
        use crate::interrupt::pending;
        use crate::io::remote::{RemoteInput, RemoteOutput, RemoteTarget, open_object};

        /// A URL and a word after it (an ETag, an upload id), as a name rank 0 sends.
        fn name(url: &str, word: &str) -> Vec<u8> {
            format!("{url}\n{word}").into_bytes()
        }

        /// The URL and the word of a [`name`].
        fn unname(name: &[u8]) -> Result<(&str, &str), Failure> {
            std::str::from_utf8(name)
                .ok()
                .and_then(|name| name.rsplit_once('\n'))
                .ok_or_else(|| {
                    Failure::new(
                        paracrypt_core::ErrorKind::Internal,
                        "a bad name from rank 0",
                    )
                })
        }

        /// Rank 0's input object.
        pub struct RankInput(pub Box<RemoteInput>);

        impl NamedInput for RankInput {
            fn len(&self) -> u64 {
                self.0.len()
            }

            fn header(&self) -> Box<dyn BufRead + '_> {
                Box::new(self.0.header())
            }

            fn source(&self) -> &dyn Source {
                self.0.source()
            }

            fn name(&self) -> Vec<u8> {
                let meta = self.0.source().meta();
                name(
                    self.0.source().object().url(),
                    meta.e_tag.as_deref().unwrap_or_default(),
                )
            }
        }

        /// Part `index` of `job`'s output from `source`, uploaded as one process does.
        fn put(
            upload: &Upload,
            job: &Job,
            source: &dyn Source,
            index: usize,
        ) -> Result<Option<u64>, Failure> {
            paracrypt_store::upload_parts(job, source, upload, index..index + 1).map_err(
                |e| match e {
                    UploadError::Chunk(e) => Failure::from(&e),
                    UploadError::Store(e) => Failure::new(e.core_kind(), e.to_string()),
                },
            )
        }

        fn finish(upload: &Upload) -> Result<Vec<Option<String>>, Failure> {
            upload
                .part_ids()
                .map_err(|e| Failure::new(e.core_kind(), e.to_string()))
        }

        /// Rank 0's output object before the upload exists.
        pub struct NewObject(pub RemoteTarget);

        impl<'a> NewParts<'a> for NewObject {
            fn create(self: Box<Self>) -> Result<Box<dyn RootParts + 'a>, Failure> {
                let output = self.0.create().map_err(|e| failure(&e))?;
                Ok(Box::new(RootObject(output)))
            }
        }

        /// Rank 0's output object: the upload it created (aborted if dropped uncommitted).
        struct RootObject(RemoteOutput);

        impl Parts for RootObject {
            fn count(&self, plan: &ChunkPlan) -> usize {
                paracrypt_store::part_count(plan)
            }

            fn put(
                &self,
                job: &Job,
                source: &dyn Source,
                index: usize,
            ) -> Result<Option<u64>, Failure> {
                put(self.0.upload(), job, source, index)
            }

            fn finish(&self) -> Result<Vec<Option<String>>, Failure> {
                finish(self.0.upload())
            }
        }

        impl RootParts for RootObject {
            fn name(&self) -> Vec<u8> {
                let upload = self.0.upload();
                name(upload.object().url(), upload.id())
            }

            fn commit(
                self: Box<Self>,
                count: usize,
                ids: Vec<Option<String>>,
            ) -> Result<(), Failure> {
                self.0.commit_parts(count, &ids).map_err(|e| failure(&e))
            }
        }

        /// Another rank's share of rank 0's upload.
        struct Joined {
            upload: Upload,
            /// Its abort, registered with the interrupt handler.
            registration: u64,
        }

        impl Parts for Joined {
            fn count(&self, plan: &ChunkPlan) -> usize {
                paracrypt_store::part_count(plan)
            }

            fn put(
                &self,
                job: &Job,
                source: &dyn Source,
                index: usize,
            ) -> Result<Option<u64>, Failure> {
                put(&self.upload, job, source, index)
            }

            fn finish(&self) -> Result<Vec<Option<String>>, Failure> {
                finish(&self.upload)
            }
        }

        impl Drop for Joined {
            fn drop(&mut self) {
                pending().forget_abort(self.registration);
            }
        }

        /// How every rank reaches rank 0's objects.
        pub struct Ranks;

        impl Remote for Ranks {
            fn open_input(
                &self,
                name: &[u8],
                len: u64,
            ) -> Result<Box<dyn Source + Send + Sync>, Failure> {
                let (url, e_tag) = unname(name)?;
                let object = open_object(Path::new(url)).map_err(|e| failure(&e))?;
                let meta = Meta {
                    len,
                    e_tag: (!e_tag.is_empty()).then(|| e_tag.to_string()),
                };
                Ok(Box::new(ObjectSource::new(&object, meta)))
            }

            fn join_parts(&self, name: &[u8]) -> Result<Box<dyn Parts + Send + Sync>, Failure> {
                let (url, id) = unname(name)?;
                let object = open_object(Path::new(url)).map_err(|e| failure(&e))?;
                let upload = Upload::join(&object, id)
                    .map_err(|e| Failure::new(e.core_kind(), e.to_string()))?;
                let aborter = upload.aborter();
                let registration = pending().add_abort(Box::new(move || {
                    let _ = aborter.abort();
                }));
                Ok(Box::new(Joined {
                    upload,
                    registration,
                }))
            }
        }
    }
}
