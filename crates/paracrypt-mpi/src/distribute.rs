//! A whole distributed run of one job: from rank 0's input to a committed output, or to one
//! agreed failure and no output.
//!
//! 1. Rank 0 opens the input and makes the job ([`Recipe::first_job`]: a header is made or read
//!    here, so a wrong key fails before any output); its output has a path ([`NewOutput`]) but
//!    does not exist yet.
//! 2. Rank 0 broadcasts the input's length, the job's header, its
//!    [shared key](paracrypt_core::engine::Job::shared_key) if it has one (the keys derived
//!    for this one file: never the key file, password or identities; see `docs/SCALING.md`),
//!    both paths, and which file a file input is ([`InputId`]: inode, length, modification and
//!    change times), which every rank that reads it checks when it opens it and again after its
//!    chunks, so that no rank reads a copy, another file, or one that changed meanwhile. Every
//!    rank zeroizes its copy of the key once its job is made.
//! 3. The other ranks make the same job from the header and the key
//!    ([`Recipe::job_from_header`]); under the shared-fs transport they learn the output's path
//!    ([`Hooks::writing_shared`]) *before* rank 0 creates the file, so that if rank 0 dies
//!    from then on (even by `SIGKILL`), the ranks `mpirun` then ends remove it. Once they all
//!    have, rank 0 creates the output ([`NewOutput::create`]) and writes the job's output
//!    header; then the others open the input and the output.
//! 4. Every rank runs its chunks.
//! 5. The ranks agree that their input is unchanged; rank 0 sets the output's length and
//!    commits it ([`Output::commit`]).
//!
//! The input may be an object rather than a file ([`Input::Named`]: every rank opens it by the
//! name rank 0 sends, through the cluster's [`Remote`](crate::Remote)), and the output a set of
//! parts every rank stores itself ([`Destination::Parts`]: a multipart upload, which rank 0
//! creates in step 3 and every rank joins by the name rank 0 then sends). The schedule then
//! hands out parts, each computed and stored by the rank that has it, every rank waits for its
//! parts before the ranks agree on the run, and in step 5 rank 0 gathers every rank's part ids
//! and commits with them ([`RootParts::commit`]).
//!
//! A [watchdog](crate::watchdog) watches every step on every rank: a run where nothing moves
//! for [`Options::stall_timeout`] is aborted as a whole.
//!
//! Each step ends with an agreement ([`Cluster::agree`]): when any rank fails, every rank
//! returns the same [`Error::Rank`](crate::Error::Rank) and rank 0 drops the output
//! uncommitted, so no output is left.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use paracrypt_core::engine::{InputId, Job, Source};
use paracrypt_core::{ErrorKind, Recipe};
use rayon::ThreadPool;
use zeroize::Zeroizing;

use crate::batches::{Files, PartsOut};
use crate::cluster::Cluster;
use crate::error::{Failure, Result};
use crate::remote::{NamedInput, NewParts, Parts, RootParts, decode_ids, encode_ids};
use crate::run::run;
use crate::watchdog::{Hooks, Progress, Step, Watchdog};
use crate::{Options, Transport};

/// Rank 0's output, as its caller manages it: for example a temporary file beside the
/// destination, renamed into place by [`Output::commit`] and removed when dropped uncommitted.
pub trait Output {
    /// The file the chunks are written into.
    fn file(&self) -> &File;

    /// Where the other ranks open [`Output::file`] for writing under [`Transport::SharedFs`];
    /// `None` for a file with no name (Linux's `O_TMPFILE`, which not even `SIGKILL` can leave
    /// behind), which only [`Transport::Messages`] can use.
    fn path(&self) -> Option<&Path>;

    /// Makes the output final, once every rank succeeded and its length is set. Dropping an
    /// output without committing it must leave nothing behind.
    fn commit(self: Box<Self>) -> std::result::Result<(), Failure>;
}

/// Rank 0's output before it exists: the path it will have, and how to create it.
///
/// Under [`Transport::SharedFs`] the other ranks learn the path before [`NewOutput::create`]
/// runs (their [`Hooks::writing_shared`]), so that no moment exists when the file is there and
/// only rank 0 knows its name: if rank 0 dies, even by `SIGKILL`, the ranks that outlive it
/// remove the file. The path must therefore be free when it is given, and `create` must fail
/// rather than open a file another process made there meanwhile (`O_EXCL`).
pub trait NewOutput<'a> {
    /// Where the other ranks open the output for writing under [`Transport::SharedFs`]; `None`
    /// for a file that will have no name (Linux's `O_TMPFILE`, which not even `SIGKILL` can
    /// leave behind), which only [`Transport::Messages`] can use.
    fn path(&self) -> Option<&Path>;

    /// Creates the output, at [`NewOutput::path`] when it has one (called once, after rank 0's
    /// job is made and, under the shared-fs transport, every rank knows the path).
    fn create(self: Box<Self>) -> std::result::Result<Box<dyn Output + 'a>, Failure>;
}

/// What only rank 0 is given.
pub struct Root<'a> {
    /// The input. Rank 0 reads it; under [`Transport::SharedFs`] the other ranks open it
    /// too, by the absolute path (or the name) rank 0 sends them.
    pub input: Input<'a>,
    /// The output, created once rank 0's job is made (so a wrong key leaves nothing) and every
    /// rank knows its path.
    pub output: Destination<'a>,
}

/// Rank 0's input.
pub enum Input<'a> {
    /// A file.
    File(&'a Path),
    /// Something else every rank opens by name through its [`Remote`](crate::Remote): an object.
    Named(Box<dyn NamedInput + 'a>),
}

impl<'a> From<&'a Path> for Input<'a> {
    fn from(path: &'a Path) -> Self {
        Input::File(path)
    }
}

/// Rank 0's output.
pub enum Destination<'a> {
    /// A file, which every rank writes its chunks into (shared-fs transport) or rank 0 writes
    /// the chunks the others send back into (messages transport).
    File(Box<dyn NewOutput<'a> + 'a>),
    /// Parts that every rank stores itself (a multipart upload), whatever the transport: the
    /// schedule hands out parts, and only the input travels under the messages transport.
    Parts(Box<dyn NewParts<'a> + 'a>),
}

impl std::fmt::Debug for Root<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let input = match &self.input {
            Input::File(path) => path.display().to_string(),
            Input::Named(named) => String::from_utf8_lossy(&named.name()).into_owned(),
        };
        f.debug_struct("Root")
            .field("input", &input)
            .finish_non_exhaustive()
    }
}

/// What a distributed run did: the same on every rank but for the times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Input bytes.
    pub input_len: u64,
    /// Output bytes.
    pub output_len: u64,
    /// Chunks in the plan.
    pub chunks: u64,
    /// Whether the chunks ran on every rank (false: a serial job, which rank 0 ran alone).
    pub parallel: bool,
    /// This rank's time from the start of the chunks to their agreed end.
    pub chunk_time: Duration,
}

/// Runs one job across the ranks of `cluster`, from rank 0's input to its output: every rank
/// calls it (collective) with an equal `recipe` and its own `pool`; rank 0 gives `root`, the
/// others `None`. Returns the same [`Summary`] on every rank once rank 0 committed the output.
///
/// When anything fails on any rank — the input, the job (a wrong key), a chunk, the output's
/// commit — every rank returns the same [`Error::Rank`](crate::Error::Rank), naming the rank,
/// and for a chunk the lowest failing one (the one a single process reports); rank 0's output
/// is dropped uncommitted.
///
/// ```no_run
/// use std::path::Path;
/// use paracrypt_core::plan::ChunkSize;
/// use paracrypt_core::raw::{Direction, RawCipher, RawRecipe};
/// use paracrypt_mpi::{Cluster, Destination, Failure, NewOutput, Options, Output, Root};
///
/// /// The output file itself (a real caller writes a temporary file and renames it).
/// struct Plain(std::fs::File, &'static Path);
///
/// impl Output for Plain {
///     fn file(&self) -> &std::fs::File { &self.0 }
///     fn path(&self) -> Option<&Path> { Some(self.1) }
///     fn commit(self: Box<Self>) -> Result<(), Failure> { Ok(()) }
/// }
///
/// /// The output before it exists: its path.
/// struct New(&'static Path);
///
/// impl<'a> NewOutput<'a> for New {
///     fn path(&self) -> Option<&Path> { Some(self.0) }
///     fn create(self: Box<Self>) -> Result<Box<dyn Output + 'a>, Failure> {
///         let file = std::fs::File::create_new(self.0).map_err(|e| {
///             Failure::new(paracrypt_core::ErrorKind::Io, e.to_string())
///         })?;
///         Ok(Box::new(Plain(file, self.0)))
///     }
/// }
///
/// let cluster = Cluster::init()?;
/// let pool = rayon::ThreadPoolBuilder::new().build()?; // the caller owns the pool
/// let recipe = RawRecipe {
///     cipher: RawCipher::new("aes-256-ctr".parse()?, &[7; 32], Some(&[9; 16]))?,
///     direction: Direction::Encrypt,
///     chunk_size: ChunkSize::new(1 << 20)?,
/// };
/// let root = cluster.is_root().then(|| Root {
///     input: Path::new("/shared/in.bin").into(),
///     output: Destination::File(Box::new(New(Path::new("/shared/out.bin")))),
/// });
/// let summary = paracrypt_mpi::distribute(&cluster, &pool, Options::default(), &recipe, root)?;
/// assert_eq!(summary.output_len, summary.input_len);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn distribute(
    cluster: &Cluster,
    pool: &ThreadPool,
    options: Options,
    recipe: &dyn Recipe,
    root: Option<Root<'_>>,
) -> Result<Summary> {
    let rank = cluster.rank();
    let shared = options.transport == Transport::SharedFs;
    let progress = Arc::new(Progress::default());
    let _watchdog = Watchdog::start(
        rank,
        cluster.size(),
        cluster.multiple(),
        options.stall_timeout,
        cluster.hooks().cloned(),
        progress.clone(),
    );

    // 1. Rank 0: the input, the job, the output's path (the file does not exist yet).
    let local = match (cluster.is_root(), root) {
        (true, Some(root)) => root_setup(root, recipe, options).map(Some),
        (true, None) => Err(Failure::new(
            ErrorKind::Usage,
            "rank 0 was given no input and output",
        )),
        (false, _) => Ok(None),
    };
    let mut setup = cluster.agree(local)?;

    // 2. What the other ranks cannot see for themselves. A shared key is never empty: an
    //    empty one is none.
    let (len, kinds, header, key, input_name, input_id, output_path) = match &setup {
        Some(s) => (
            s.input_len,
            s.kinds(),
            s.job.header().to_vec(),
            Zeroizing::new(s.job.shared_key().unwrap_or_default().to_vec()),
            match &s.input {
                RootInput::File(_, path) => absolute(path),
                RootInput::Named(named) => named.name(),
            },
            s.input_id
                .map(|id| id.to_bytes().to_vec())
                .unwrap_or_default(),
            match &s.new_output {
                Some(Destination::File(output)) => output.path().map(absolute).unwrap_or_default(),
                _ => Vec::new(),
            },
        ),
        None => (
            0,
            0,
            Vec::new(),
            Zeroizing::default(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        ),
    };
    let len = cluster.broadcast_u64(0, len);
    let kinds = cluster.broadcast_u64(0, kinds);
    let (named_input, parts_output) = (kinds & NAMED_INPUT != 0, kinds & PARTS_OUTPUT != 0);
    let header = cluster.broadcast_bytes(0, header);
    let key = Zeroizing::new(cluster.broadcast_bytes(0, key.to_vec()));
    let input_name = cluster.broadcast_bytes(0, input_name);
    // Which file the input is (a file's inode, length, modification and change times): every
    // rank that reads it checks its own before and after its chunks, so that no rank reads
    // another file or one that changed meanwhile.
    let input_id = InputId::from_bytes(&cluster.broadcast_bytes(0, input_id));
    let output_path = path_from(cluster.broadcast_bytes(0, output_path));
    let _writing = (shared && setup.is_none() && !output_path.as_os_str().is_empty())
        .then(|| WritingShared::new(cluster.hooks(), &output_path));

    // 3. The other ranks make the same job; under the shared-fs transport they have learned
    //    the output's path (just above), and once they all agree rank 0 creates the file and
    //    writes the header into it: no moment exists when the file is there and only rank 0
    //    knows its name. (An output made of parts is created the same way; the other ranks
    //    learn its name, the upload's, once it exists.) Then they open the files.
    let local = if setup.is_some() {
        Ok(None)
    } else {
        let key = (!key.is_empty()).then_some(&key[..]);
        recipe
            .job_from_header(&header, key, Some(len), options.provider)
            .map(Some)
            .map_err(|e| Failure::from(&e))
    };
    drop(key);
    let job = cluster.agree(local)?;
    let local = match setup.as_mut() {
        Some(s) => progress.creating(|| s.create_output()).unwrap_or_else(|| {
            Err(Failure::new(
                ErrorKind::Io,
                "the watchdog fired before the output was created",
            ))
        }),
        None => Ok(()),
    };
    cluster.agree(local)?;
    let parts_name = match (&setup, parts_output) {
        (Some(s), true) => s.parts().map(|p| p.name()).unwrap_or_default(),
        _ => Vec::new(),
    };
    let parts_name = if parts_output {
        cluster.broadcast_bytes(0, parts_name)
    } else {
        Vec::new()
    };
    let local = match &job {
        Some(_) => open_others(
            cluster,
            shared,
            (named_input, &input_name, len, input_id),
            (!parts_output).then_some(output_path.as_path()),
            parts_output.then_some(&parts_name[..]),
        )
        .map(Some),
        None => Ok(None),
    };
    let opened = cluster.agree(local)?;
    let other = job.map(|job| (job, opened.expect("opened with the job")));

    // 4. The chunks, on every rank.
    progress.step(Step::Chunks);
    let start = Instant::now();
    let (job, (end, ids), parts) = match (&setup, &other) {
        (Some(s), _) => {
            let parts = s.parts().map(|p| PartsOut {
                parts: p as &dyn Parts,
                count: p.count(s.job.plan().expect("a distributed job has a plan")) as u64,
            });
            let files = Files {
                input: s.input.source(),
                output: s.output_file(),
            };
            let done = run(
                cluster,
                pool,
                &s.job,
                options,
                Some(files),
                parts,
                &progress,
            )?;
            (&s.job, done, parts)
        }
        (None, Some((job, opened))) => {
            let plan = job.plan().expect("a distributed job has a plan");
            let parts = opened.parts.as_deref().map(|p| PartsOut {
                parts: p as &dyn Parts,
                count: p.count(plan) as u64,
            });
            let files = opened.input.as_deref().map(|input| Files {
                input: input as &dyn Source,
                output: opened.output.as_ref(),
            });
            let done = run(cluster, pool, job, options, files, parts, &progress)?;
            (job, done, parts)
        }
        (None, None) => unreachable!("every rank but 0 made its job"),
    };
    // Every chunk was read from the input the job was made for, unchanged.
    let reread = match (&setup, &other) {
        (Some(s), _) => s.check_input(),
        (None, Some((_, opened))) => opened.check_input(input_id),
        (None, None) => Ok(()),
    };
    cluster.agree(reread)?;
    let chunk_time = start.elapsed();
    let plan = job.plan().expect("a distributed job has a plan");
    let summary = Summary {
        input_len: len,
        output_len: end,
        chunks: plan.len(),
        parallel: job.is_parallel(),
        chunk_time,
    };
    log::debug!("rank {rank}: chunks done: {summary:?}");

    // 5. Rank 0 cuts the output to its length and commits it (an output made of parts: with
    //    every rank's part ids, gathered first); every rank learns whether that worked, so that
    //    all return alike.
    progress.step(Step::Committing);
    let mut all_ids = Vec::new();
    if let Some(parts) = parts {
        all_ids = vec![None; parts.count as usize];
        decode_ids(&encode_ids(&ids), &mut all_ids);
        for from in 1..cluster.size() {
            let mine = if from == rank {
                encode_ids(&ids)
            } else {
                Vec::new()
            };
            let theirs = cluster.broadcast_bytes(from, mine);
            if cluster.is_root() {
                decode_ids(&theirs, &mut all_ids);
            }
        }
    }
    let local = match setup.take().and_then(|s| s.output) {
        Some(Created::File(output)) => output
            .file()
            .set_len(end)
            .map_err(|e| Failure::new(ErrorKind::Io, format!("setting the output's length: {e}")))
            .and_then(|()| output.commit()),
        Some(Created::Parts(parts)) => parts.commit(all_ids.len(), all_ids),
        None => Ok(()),
    };
    cluster.agree(local)?;
    drop(other);
    Ok(summary)
}

/// [`RootSetup::kinds`]: the input is named, not a file.
const NAMED_INPUT: u64 = 1;
/// [`RootSetup::kinds`]: the output is made of parts.
const PARTS_OUTPUT: u64 = 2;

/// Rank 0's input, open.
enum RootInput<'a> {
    File(File, PathBuf),
    Named(Box<dyn NamedInput + 'a>),
}

impl RootInput<'_> {
    fn source(&self) -> &dyn Source {
        match self {
            RootInput::File(file, _) => file,
            RootInput::Named(named) => named.source(),
        }
    }
}

/// Rank 0's output, created.
enum Created<'a> {
    File(Box<dyn Output + 'a>),
    Parts(Box<dyn RootParts + 'a>),
}

/// What rank 0 sets up before the others can start.
struct RootSetup<'a> {
    input: RootInput<'a>,
    /// A file input as it was when the job was made.
    input_id: Option<InputId>,
    input_len: u64,
    job: Job,
    /// The output until it is created ...
    new_output: Option<Destination<'a>>,
    /// ... and once it is.
    output: Option<Created<'a>>,
}

impl<'a> RootSetup<'a> {
    /// What kinds of input and output the other ranks open ([`NAMED_INPUT`],
    /// [`PARTS_OUTPUT`]).
    fn kinds(&self) -> u64 {
        let named = matches!(self.input, RootInput::Named(_));
        let parts = matches!(self.new_output, Some(Destination::Parts(_)));
        (u64::from(named) * NAMED_INPUT) | (u64::from(parts) * PARTS_OUTPUT)
    }

    /// Creates the output and writes the job's output header into it (an output made of
    /// parts carries it in part 0).
    fn create_output(&mut self) -> std::result::Result<(), Failure> {
        let new = self.new_output.take().expect("the output is created once");
        self.output = Some(match new {
            Destination::File(new) => {
                let output = new.create()?;
                output
                    .file()
                    .write_all_at(self.job.output_header(), 0)
                    .map_err(|e| Failure::new(ErrorKind::Io, format!("writing the header: {e}")))?;
                Created::File(output)
            }
            Destination::Parts(new) => Created::Parts(new.create()?),
        });
        Ok(())
    }

    /// Checks that a file input is still what the job was made for.
    fn check_input(&self) -> std::result::Result<(), Failure> {
        match (&self.input, self.input_id) {
            (RootInput::File(file, _), Some(id)) => id.check(file).map_err(|e| Failure::from(&e)),
            _ => Ok(()),
        }
    }

    /// The output file, once created (none for an output made of parts).
    fn output_file(&self) -> Option<&File> {
        match self.output.as_ref().expect("the output was created") {
            Created::File(output) => Some(output.file()),
            Created::Parts(_) => None,
        }
    }

    /// The output made of parts, once created.
    fn parts(&self) -> Option<&(dyn RootParts + 'a)> {
        match self.output.as_ref()? {
            Created::Parts(parts) => Some(&**parts),
            Created::File(_) => None,
        }
    }
}

fn root_setup<'a>(
    root: Root<'a>,
    recipe: &dyn Recipe,
    options: Options,
) -> std::result::Result<RootSetup<'a>, Failure> {
    let (input, input_id, input_len, job) = match root.input {
        Input::File(path) => {
            let input = File::open(path).map_err(|e| {
                Failure::new(
                    ErrorKind::Io,
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            let metadata = input.metadata().map_err(|e| {
                Failure::new(
                    ErrorKind::Io,
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            if !metadata.is_file() {
                return Err(Failure::new(
                    ErrorKind::Usage,
                    format!(
                        "{} is not a regular file (every rank reads its chunks with positional \
                         reads)",
                        path.display()
                    ),
                ));
            }
            let id = InputId::of(&input).map_err(|e| Failure::from(&e))?;
            let input_len = id.len();
            let job = recipe
                .first_job(
                    &mut std::io::BufReader::new(&input),
                    Some(input_len),
                    options.provider,
                )
                .map_err(|e| Failure::from(&e))?;
            let input = RootInput::File(input, path.to_path_buf());
            (input, Some(id), input_len, job)
        }
        Input::Named(named) => {
            let input_len = named.len();
            let job = recipe
                .first_job(&mut named.header(), Some(input_len), options.provider)
                .map_err(|e| Failure::from(&e))?;
            (RootInput::Named(named), None, input_len, job)
        }
    };
    if let Destination::File(output) = &root.output
        && options.transport == Transport::SharedFs
        && output.path().is_none()
    {
        return Err(Failure::new(
            ErrorKind::Usage,
            "the output has no name the other ranks could open: the shared-fs transport \
             needs a named output file",
        ));
    }
    log::debug!(
        "rank 0: {} bytes in {} chunks",
        input_len,
        job.plan().map_or(0, |plan| plan.len())
    );
    Ok(RootSetup {
        input,
        input_id,
        input_len,
        job,
        new_output: Some(root.output),
        output: None,
    })
}

/// What a rank other than 0 opened: the input (shared-fs transport), the output file
/// (shared-fs transport, a file output), the output made of parts (joined whatever the
/// transport).
struct Opened {
    input: Option<Box<dyn Source + Send + Sync>>,
    /// The input file, when it is one, to check once its chunks are read.
    input_file: Option<File>,
    output: Option<File>,
    parts: Option<Box<dyn Parts + Send + Sync>>,
}

/// Opens, on a rank other than 0, what it reads and writes itself: under the shared-fs
/// transport the input (`(named, name, len)`: a file by its path, or through the cluster's
/// [`Remote`]) and the output file at `output`; an output made of parts (`parts`: its name)
/// under either transport.
fn open_others(
    cluster: &Cluster,
    shared: bool,
    (named, name, len, id): (bool, &[u8], u64, Option<InputId>),
    output: Option<&Path>,
    parts: Option<&[u8]>,
) -> std::result::Result<Opened, Failure> {
    let remote = || {
        cluster.remote().ok_or_else(|| {
            Failure::new(
                ErrorKind::Usage,
                format!(
                    "rank {} cannot reach the input or output rank 0 named (no Remote set)",
                    cluster.rank()
                ),
            )
        })
    };
    let mut input_file = None;
    let input: Option<Box<dyn Source + Send + Sync>> = match (shared, named) {
        (false, _) => None,
        (true, true) => Some(remote()?.open_input(name, len)?),
        (true, false) => {
            let file = open_shared_input(&path_from(name.to_vec()), len, id)?;
            input_file = file.try_clone().ok();
            Some(Box::new(file))
        }
    };
    let output = match (shared, output) {
        (true, Some(path)) => Some(open_shared_output(path)?),
        _ => None,
    };
    let parts = match parts {
        Some(name) => Some(remote()?.join_parts(name)?),
        None => None,
    };
    Ok(Opened {
        input,
        input_file,
        output,
        parts,
    })
}

impl Opened {
    /// Checks that a file input is still what rank 0 made the job for.
    fn check_input(&self, id: Option<InputId>) -> std::result::Result<(), Failure> {
        match (&self.input_file, id) {
            (Some(file), Some(id)) => id.check(file).map_err(|e| Failure::from(&e)),
            _ => Ok(()),
        }
    }
}

/// A rank other than 0 writing into rank 0's output under the shared-fs transport, as its
/// caller's [`Hooks`] learn it (to remove the output if the process is ended meanwhile).
struct WritingShared<'a>(Option<&'a Arc<dyn Hooks>>);

impl<'a> WritingShared<'a> {
    fn new(hooks: Option<&'a Arc<dyn Hooks>>, path: &Path) -> Self {
        if let Some(hooks) = hooks {
            hooks.writing_shared(Some(path));
        }
        WritingShared(hooks)
    }
}

impl Drop for WritingShared<'_> {
    fn drop(&mut self) {
        if let Some(hooks) = self.0 {
            hooks.writing_shared(None);
        }
    }
}

/// What to check when a file of a shared filesystem cannot be opened.
const SHARED_HINT: &str = "is it on a filesystem every rank sees? Else use the messages transport";

/// Opens the input on a filesystem every rank should see: the file rank 0 made the job for
/// (`id`), not a copy of it.
fn open_shared_input(
    input: &Path,
    len: u64,
    id: Option<InputId>,
) -> std::result::Result<File, Failure> {
    let failure =
        |message: String| Failure::new(ErrorKind::Io, format!("{message} ({SHARED_HINT})"));
    let input_file =
        File::open(input).map_err(|e| failure(format!("cannot read {}: {e}", input.display())))?;
    let seen = input_file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if seen != len {
        return Err(failure(format!(
            "{} is {seen} bytes here but {len} bytes on rank 0",
            input.display()
        )));
    }
    if let Some(id) = id {
        id.check(&input_file).map_err(|e| {
            failure(format!(
                "{}: {e}; every rank must read the very file rank 0 reads",
                input.display()
            ))
        })?;
    }
    Ok(input_file)
}

/// Opens rank 0's output on a filesystem every rank should see.
fn open_shared_output(output: &Path) -> std::result::Result<File, Failure> {
    OpenOptions::new().write(true).open(output).map_err(|e| {
        let dir = output.parent().unwrap_or(Path::new("/"));
        Failure::new(
            ErrorKind::Io,
            format!(
                "cannot open the output being written in {}: {e} ({SHARED_HINT})",
                dir.display()
            ),
        )
    })
}

fn absolute(path: &Path) -> Vec<u8> {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .into_os_string()
        .as_bytes()
        .to_vec()
}

fn path_from(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(&bytes))
}
