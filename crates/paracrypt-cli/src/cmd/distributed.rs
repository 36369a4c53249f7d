//! `--distributed`: `raw`, `encrypt` and `decrypt` across the ranks of an MPI job
//! (`mpirun -n N paracrypt ... --distributed`), through `paracrypt-mpi`.
//!
//! Every rank parses the same arguments and reads the key itself (no secret crosses MPI). Rank
//! 0 opens the input, checks and creates the output (a temporary file beside it), and makes or
//! reads the container header; it broadcasts the input's length, the header and both paths.
//! Each step ends with an agreement, so a failure anywhere is printed once, by rank 0, and every
//! rank exits with the same status. Rank 0 renames the output only after every rank succeeded.
//!
//! Built without the `mpi` feature, `--distributed` is a usage error that says how to build
//! with MPI.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::cmd::container::{DecryptArgs, EncryptArgs};
use crate::cmd::raw::RawArgs;

/// `--distributed` and its options, shared by `raw`, `encrypt` and `decrypt`.
#[derive(Clone, Debug, Args)]
#[command(next_help_heading = "Distributed (MPI)")]
pub struct DistributedArgs {
    /// Run across the ranks of an MPI job: `mpirun -n N paracrypt ... --distributed` (needs a
    /// build with `--features mpi`; INPUT and OUTPUT must be files).
    #[arg(long)]
    pub(crate) distributed: bool,
    /// Which rank gets which chunks: contiguous blocks, or batches rank 0 hands out on request.
    #[arg(long, value_enum, value_name = "SCHEDULE", default_value_t = ScheduleArg::Static, requires = "distributed")]
    pub(crate) schedule: ScheduleArg,
    /// How chunks reach the ranks: every rank reads and writes the files on a filesystem all
    /// ranks see, or only rank 0 touches files and chunks travel as MPI messages.
    #[arg(long, value_enum, value_name = "TRANSPORT", default_value_t = TransportArg::SharedFs, requires = "distributed")]
    pub(crate) transport: TransportArg,
    /// Print the effective layout (ranks, hosts, threads and cores per rank) on stderr.
    #[arg(long, requires = "distributed")]
    pub(crate) verbose: bool,
}

/// `--schedule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScheduleArg {
    /// Contiguous blocks of chunks, one per rank.
    Static,
    /// A task farm: rank 0 hands out batches to whichever rank asks.
    Dynamic,
}

/// `--transport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// Every rank reads and writes the files in place (no file data crosses MPI).
    SharedFs,
    /// Only rank 0 touches files; chunks travel as messages.
    Messages,
}

/// Runs `paracrypt raw --distributed`.
pub fn raw(args: RawArgs) -> Result<ExitCode> {
    imp::raw(args)
}

/// Runs `paracrypt encrypt --distributed`.
pub fn encrypt(args: EncryptArgs) -> Result<ExitCode> {
    imp::encrypt(args)
}

/// Runs `paracrypt decrypt --distributed`.
pub fn decrypt(args: DecryptArgs) -> Result<ExitCode> {
    imp::decrypt(args)
}

#[cfg(not(feature = "mpi"))]
mod imp {
    use super::*;
    use crate::exit::usage;

    const NOT_BUILT: &str = "--distributed needs paracrypt built with MPI support: \
        cargo build --release -p paracrypt-cli --features mpi \
        (needs Open MPI and libclang: apt-get install libopenmpi-dev openmpi-bin libclang-dev)";

    pub fn raw(_: RawArgs) -> Result<ExitCode> {
        usage(NOT_BUILT)
    }

    pub fn encrypt(_: EncryptArgs) -> Result<ExitCode> {
        usage(NOT_BUILT)
    }

    pub fn decrypt(_: DecryptArgs) -> Result<ExitCode> {
        usage(NOT_BUILT)
    }
}

#[cfg(feature = "mpi")]
mod imp {
    use std::fs::{File, OpenOptions};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileExt;
    use std::path::{Path, PathBuf};

    use anyhow::Context;
    use paracrypt_core::container::{
        Decryptor, Encryptor, HEADER_LEN, Job, Suite, check_chunk_size,
    };
    use paracrypt_core::engine::Work;
    use paracrypt_core::plan::ChunkPlan;
    use paracrypt_core::raw::{Direction, RawCipher, RawTransform};
    use paracrypt_mpi::{Cluster, Failure, Files, Options, Schedule, Transport};

    use super::*;
    use crate::cmd::container::{CommonArgs, fixed_salt, policy};
    use crate::cmd::secret::{PASSWORD_ENV, SecretArgs};
    use crate::cmd::{raw as raw_cmd, warn};
    use crate::exit::{self, usage};
    use crate::io::{Input, Output, OutputPolicy, OutputTarget, thread_pool};

    /// What a rank runs, once the plan is known.
    enum Task {
        Raw {
            direction: Direction,
            cipher: RawCipher,
            chunk_size: usize,
        },
        Encrypt(Encryptor),
        Decrypt(Decryptor),
    }

    /// A plan with its transform.
    enum Prepared {
        Raw(ChunkPlan, RawTransform),
        Container(Job),
    }

    impl Prepared {
        fn plan(&self) -> &ChunkPlan {
            match self {
                Prepared::Raw(plan, _) => plan,
                Prepared::Container(job) => &job.plan,
            }
        }

        fn work(&mut self) -> Work<'_> {
            match self {
                Prepared::Raw(_, transform) => transform.as_work(),
                Prepared::Container(job) => job.work(),
            }
        }
    }

    impl Task {
        /// The plan for an input of `len` bytes. On rank 0 (`header` empty) this makes the
        /// container header (encrypt) or reads it (decrypt); elsewhere it uses rank 0's.
        fn prepare(&self, len: u64, header: &[u8], input: Option<&File>) -> Result<Prepared> {
            Ok(match self {
                Task::Raw {
                    direction,
                    cipher,
                    chunk_size,
                } => Prepared::Raw(
                    cipher.plan(*direction, len, *chunk_size)?,
                    cipher.transform(*direction, *chunk_size),
                ),
                Task::Encrypt(encryptor) if header.is_empty() => {
                    Prepared::Container(encryptor.job(len)?)
                }
                Task::Encrypt(encryptor) => {
                    Prepared::Container(encryptor.job_for_header(header, len)?)
                }
                Task::Decrypt(decryptor) => {
                    let mut own = Vec::new();
                    let header = match input {
                        Some(input) if header.is_empty() => {
                            own.resize((len as usize).min(HEADER_LEN), 0);
                            input
                                .read_exact_at(&mut own, 0)
                                .context("reading the header")?;
                            &own[..]
                        }
                        _ => header,
                    };
                    Prepared::Container(decryptor.job(header, len)?)
                }
            })
        }
    }

    /// The arguments every distributed command shares.
    struct Common<'a> {
        dist: &'a DistributedArgs,
        input: &'a Path,
        output: &'a Path,
        threads: Option<usize>,
        policy: OutputPolicy,
        quiet: bool,
    }

    pub fn raw(args: RawArgs) -> Result<ExitCode> {
        let common = Common {
            dist: &args.distributed,
            input: &args.input,
            output: &args.output,
            threads: args.threads,
            policy: OutputPolicy {
                force: args.force,
                binary: args.encrypt,
                sync: args.sync,
                private: false,
            },
            quiet: false,
        };
        run(&common, |root| {
            let (direction, cipher) = raw_cmd::cipher(&args)?;
            if root {
                raw_cmd::warn_hazards(cipher.name());
            }
            Ok(Task::Raw {
                direction,
                cipher,
                chunk_size: args.chunk_size,
            })
        })
    }

    pub fn encrypt(args: EncryptArgs) -> Result<ExitCode> {
        let common = common(&args.common, true);
        run(&common, |root| {
            let suite: Suite = args.cipher.parse()?;
            check_chunk_size(args.chunk_size)?;
            let salt = fixed_salt(&args)?;
            if root && !args.common.quiet {
                if salt.is_some() {
                    warn(
                        "--fixed-salt makes the output reproducible and reuses nonces: for tests only",
                    );
                }
                if suite.is_legacy() {
                    warn(format!(
                        "{suite} is a legacy suite, kept for compatibility studies; prefer aes-256-gcm"
                    ));
                }
            }
            let mut encryptor = Encryptor::new(secret(&args.common.secret)?)
                .suite(suite)
                .chunk_size(args.chunk_size);
            if let Some(salt) = salt {
                encryptor = encryptor.fixed_salt_for_tests(salt);
            }
            Ok(Task::Encrypt(encryptor))
        })
    }

    pub fn decrypt(args: DecryptArgs) -> Result<ExitCode> {
        let common = common(&args.common, false);
        run(&common, |_| {
            if args.range.is_some() {
                return usage(
                    "--range reads only a few chunks and runs on one process: drop --distributed",
                );
            }
            Ok(Task::Decrypt(Decryptor::new(secret(&args.common.secret)?)))
        })
    }

    fn common(args: &CommonArgs, binary: bool) -> Common<'_> {
        Common {
            dist: &args.distributed,
            input: &args.input,
            output: &args.output,
            threads: args.threads,
            policy: policy(args, binary),
            quiet: args.quiet,
        }
    }

    /// The key or password, never from a prompt: only rank 0 has a terminal, and the secret is
    /// not sent over MPI.
    fn secret(args: &SecretArgs) -> Result<paracrypt_core::container::Secret> {
        if args.key_file.is_none()
            && args.password_file.is_none()
            && std::env::var_os(PASSWORD_ENV).is_none()
        {
            return usage(format!(
                "--distributed cannot prompt for a password: use --key-file FILE, --password-file \
                 FILE or {PASSWORD_ENV} (pass it to every rank with mpirun -x {PASSWORD_ENV})"
            ));
        }
        args.secret(false)
    }

    /// A local error, as a failure to agree on.
    fn failure(error: anyhow::Error) -> Failure {
        Failure::new(exit::one_line(&error), exit::code(&error).into())
    }

    /// Starts MPI, runs the steps, and turns an agreed failure into one message (on rank 0)
    /// and the same exit status on every rank.
    fn run(common: &Common<'_>, task: impl FnOnce(bool) -> Result<Task>) -> Result<ExitCode> {
        let cluster = Cluster::init()?;
        let start = std::time::Instant::now();
        match steps(&cluster, common, task) {
            Ok(chunks) => {
                if common.dist.verbose && cluster.is_root() {
                    eprintln!(
                        "paracrypt: distributed: chunks in {:.3} s, {:.3} s from MPI start to rename",
                        chunks.as_secs_f64(),
                        start.elapsed().as_secs_f64()
                    );
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(paracrypt_mpi::Error::Rank(failure)) => {
                if cluster.is_root() {
                    let who = if cluster.size() > 1 {
                        format!("rank {}: ", failure.rank)
                    } else {
                        String::new()
                    };
                    eprintln!("paracrypt: error: {who}{}", failure.message);
                }
                Ok(ExitCode::from(u8::try_from(failure.code).unwrap_or(1)))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// What another rank sets up: its plan, and the files under the shared-fs transport.
    type RankSetup = (Prepared, Option<(File, File)>);

    /// What rank 0 sets up before the others can start.
    struct RootSetup {
        input: Input,
        output: Output,
        prepared: Prepared,
    }

    fn steps(
        cluster: &Cluster,
        common: &Common<'_>,
        task: impl FnOnce(bool) -> Result<Task>,
    ) -> paracrypt_mpi::Result<std::time::Duration> {
        let root = cluster.is_root();
        let options = Options {
            schedule: match common.dist.schedule {
                ScheduleArg::Static => Schedule::Static,
                ScheduleArg::Dynamic => Schedule::Dynamic,
            },
            transport: match common.dist.transport {
                TransportArg::SharedFs => Transport::SharedFs,
                TransportArg::Messages => Transport::Messages,
            },
            sync: common.policy.sync,
        };

        // 1. Every rank checks its arguments and reads the key; rank 0 also opens the input,
        //    creates the output and prepares the plan (making the container header).
        let local = (|| -> Result<(Task, rayon::ThreadPool, Option<RootSetup>)> {
            let pool = thread_pool(common.threads)?;
            let task = task(root)?;
            let setup = if root {
                Some(root_setup(common, &task)?)
            } else {
                None
            };
            Ok((task, pool, setup))
        })();
        let (task, pool, mut setup) = cluster.agree(local.map_err(failure))?;

        // 2. Rank 0 tells the others what they cannot see for themselves.
        let (len, header, input_path, temp_path) = match &setup {
            Some(s) => (
                s.input.len().unwrap_or(0),
                container_header(&s.prepared),
                absolute(s.input.path()),
                absolute(temp_path(&s.output)),
            ),
            None => (0, Vec::new(), Vec::new(), Vec::new()),
        };
        let len = cluster.broadcast_u64(0, len);
        let header = cluster.broadcast_bytes(0, header);
        let input_path = PathBuf::from(std::ffi::OsStr::from_bytes(
            &cluster.broadcast_bytes(0, input_path),
        ));
        let temp_path = PathBuf::from(std::ffi::OsStr::from_bytes(
            &cluster.broadcast_bytes(0, temp_path),
        ));

        // 3. The other ranks derive the same plan and keys, and open the files they need.
        let shared = options.transport == Transport::SharedFs;
        let local = (|| -> Result<Option<RankSetup>> {
            if root {
                return Ok(None);
            }
            let prepared = task.prepare(len, &header, None)?;
            let files = if shared {
                Some(open_shared(&input_path, &temp_path, len)?)
            } else {
                None
            };
            Ok(Some((prepared, files)))
        })();
        let mine = cluster.agree(local.map_err(failure))?;

        if common.dist.verbose {
            print_layout(cluster, &pool, options, &setup, len);
        }

        // 4. The chunks, on every rank.
        let chunks = std::time::Instant::now();
        let end = match (setup.as_mut(), mine) {
            (Some(s), _) => {
                if !s.prepared.work().is_parallel() && cluster.size() > 1 && !common.quiet {
                    warn(
                        "this mode is serial (CBC encryption, RC4): rank 0 runs it alone while the \
                         other ranks wait",
                    );
                }
                let files = Files {
                    input: s.input.as_file().expect("checked in root_setup"),
                    output: s.output.as_file().expect("checked in root_setup"),
                };
                let plan = s.prepared.plan().clone();
                let work = s.prepared.work();
                paracrypt_mpi::run(cluster, &pool, &plan, work, options, Some(files))?
            }
            (None, Some((mut prepared, files))) => {
                let files = files
                    .as_ref()
                    .map(|(input, output)| Files { input, output });
                let plan = prepared.plan().clone();
                paracrypt_mpi::run(cluster, &pool, &plan, prepared.work(), options, files)?
            }
            (None, None) => unreachable!("every rank but 0 prepared its plan"),
        };
        let chunks = chunks.elapsed();

        // 5. Rank 0 cuts the output to its length and renames it into place; the others learn
        //    whether that worked, so every rank exits the same way.
        let local = match setup {
            Some(s) => (|| -> Result<()> {
                let file = s.output.as_file().expect("checked in root_setup");
                file.set_len(end).context("setting the output's length")?;
                s.output.commit()
            })(),
            None => Ok(()),
        };
        cluster.agree(local.map_err(failure))?;
        Ok(chunks)
    }

    fn root_setup(common: &Common<'_>, task: &Task) -> Result<RootSetup> {
        let not_files =
            || usage("--distributed needs INPUT and OUTPUT to be files (not - or a pipe)");
        if common.input == Path::new("-") || common.output == Path::new("-") {
            return not_files();
        }
        let mut input = Input::open(common.input)?;
        if let Task::Raw {
            direction: Direction::Decrypt,
            cipher,
            ..
        } = task
        {
            raw_cmd::refuse_salted(&mut input, cipher.name())?;
        }
        let target = OutputTarget::new(common.output, input.path(), common.policy)?;
        let Some(file) = input.as_file().filter(|_| target.is_file()) else {
            return not_files();
        };
        let len = input.len().unwrap_or(0);
        let prepared = task.prepare(len, &[], Some(file))?;
        let output = target.create_named()?;
        if let (Task::Encrypt(_), Prepared::Container(job)) = (task, &prepared) {
            let out = output.as_file().expect("a file target");
            out.write_all_at(&job.header, 0)
                .context("writing the header")?;
        }
        Ok(RootSetup {
            input,
            output,
            prepared,
        })
    }

    /// The header the other ranks need (empty for raw ciphers).
    fn container_header(prepared: &Prepared) -> Vec<u8> {
        match prepared {
            Prepared::Container(job) => job.header.to_vec(),
            Prepared::Raw(..) => Vec::new(),
        }
    }

    fn temp_path(output: &Output) -> &Path {
        output.temp_path().unwrap_or(Path::new("-"))
    }

    fn absolute(path: &Path) -> Vec<u8> {
        std::path::absolute(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .into_os_string()
            .as_bytes()
            .to_vec()
    }

    /// Opens the input and rank 0's temporary output on a filesystem every rank should see.
    fn open_shared(input: &Path, temp: &Path, len: u64) -> Result<(File, File)> {
        let hint = "is it on a filesystem every rank sees? Else use --transport messages";
        let input_file = File::open(input)
            .with_context(|| format!("cannot read {} ({hint})", input.display()))?;
        let seen = input_file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if seen != len {
            anyhow::bail!(
                "{} is {seen} bytes here but {len} bytes on rank 0 ({hint})",
                input.display()
            );
        }
        let output = OpenOptions::new().write(true).open(temp).with_context(|| {
            let dir = temp.parent().unwrap_or(Path::new("/"));
            format!(
                "cannot open the output being written in {} ({hint})",
                dir.display()
            )
        })?;
        Ok((input_file, output))
    }

    fn print_layout(
        cluster: &Cluster,
        pool: &rayon::ThreadPool,
        options: Options,
        setup: &Option<RootSetup>,
        len: u64,
    ) {
        let Some(layout) = cluster.layout(pool.current_num_threads()) else {
            return;
        };
        let chunks = setup.as_ref().map_or(0, |s| s.prepared.plan().len());
        eprintln!(
            "paracrypt: distributed: {} ranks, schedule {}, transport {}, {len} bytes in {chunks} chunks",
            layout.len(),
            options.schedule,
            options.transport,
        );
        for rank in &layout {
            eprintln!(
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
            eprintln!(
                "paracrypt:   each rank is bound to one core (Open MPI's default): for threads \
                 inside ranks, run one rank per node with `mpirun --map-by ppr:1:node --bind-to \
                 none`, or `--bind-to none` with -j N"
            );
        }
    }
}
