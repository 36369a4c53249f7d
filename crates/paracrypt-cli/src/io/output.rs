//! Where output goes, and how it gets there without losing anything. Outputs behave like
//! `cp`, `openssl enc -out` and `age -o`:
//!
//! - `-`, or a path that is this process's standard output (`-o /dev/stdout`): stdout.
//! - An existing character device, FIFO or socket (`-o /dev/null`): written *through*. The node
//!   is opened for writing (a socket is connected to), never created, truncated or replaced. A
//!   block device is written through only with `--force`.
//! - A regular file: written to a temporary file in the destination's directory, which becomes
//!   the destination only once everything succeeded (an atomic link or rename), so a failure or
//!   an interrupt never leaves a partial OUTPUT and an existing one stays intact. The temporary
//!   file has no name at all where Linux allows it (`O_TMPFILE`, linked into place on commit),
//!   so that even SIGKILL leaves nothing behind; elsewhere it is a hidden
//!   `.paracrypt-XXXXXX.tmp` that an interrupt removes (see [`crate::interrupt`]).
//! - A symbolic link: its target is written (created or atomically replaced, as above) and the
//!   link stays, as `cp` does.
//!
//! New files get mode `0666 & ~umask` (private keys `0600`); `--force` over an existing regular
//! file keeps its permission bits and, where the system permits, its owner and group.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{IsTerminal, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rustix::fs::{AtFlags, CWD, Mode, OFlags};
use tempfile::NamedTempFile;

use super::remote::{self, RemoteOutput, RemoteTarget};
use crate::exit::usage;
use crate::interrupt::pending;

/// Options that decide whether and how an output may be created.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutputPolicy {
    /// Replace an existing regular file (and write to an existing block device).
    pub force: bool,
    /// The output is binary (ciphertext): refuse to write it to a terminal.
    pub binary: bool,
    /// `fsync` a file output before it takes the destination's place.
    pub sync: bool,
    /// A private key: created with mode 0600 whatever it replaces.
    pub private: bool,
}

/// Where output goes, checked but not yet created.
#[derive(Debug)]
pub enum OutputTarget {
    /// Standard output.
    Stdout,
    /// An existing node that is not a regular file, written through.
    Through(PathBuf, OutputPolicy),
    /// A regular file, created through a temporary file.
    File(FileTarget),
    /// An object (`s3://bucket/key`), created by a multipart upload.
    Remote(RemoteTarget),
}

/// A regular file to create or replace.
#[derive(Debug)]
pub struct FileTarget {
    /// The path as the user gave it (for messages).
    shown: PathBuf,
    /// Where the file goes: `shown` with symbolic links followed.
    dest: PathBuf,
    /// The file it replaces (with `--force`), whose mode and owner the new one keeps.
    replaces: Option<Replaced>,
    policy: OutputPolicy,
}

/// What a replaced file passes on to the new one.
#[derive(Clone, Copy, Debug)]
struct Replaced {
    uid: u32,
    gid: u32,
    mode: u32,
}

/// A file's identity: device and inode.
type Id = (u64, u64);

fn id(meta: &Metadata) -> Id {
    (meta.dev(), meta.ino())
}

/// The identity of an open descriptor (stdin, stdout), if it is open.
fn fd_id(fd: impl AsFd) -> Option<(Id, rustix::fs::FileType)> {
    let stat = rustix::fs::fstat(fd).ok()?;
    Some((
        (stat.st_dev, stat.st_ino),
        rustix::fs::FileType::from_raw_mode(stat.st_mode),
    ))
}

/// Whether writing to a node that is also the input would read back our own output: regular
/// files and FIFOs (two opens of a character device or a socket are separate streams).
fn would_loop(kind: rustix::fs::FileType) -> bool {
    matches!(
        kind,
        rustix::fs::FileType::RegularFile | rustix::fs::FileType::Fifo
    )
}

/// The identity of the input: `-` is stdin. Found with `stat`, never by opening it (opening a
/// FIFO would wait for a writer and take its data).
fn input_id(input: &Path) -> Option<Id> {
    if input == Path::new("-") {
        fd_id(std::io::stdin()).map(|(id, _)| id)
    } else {
        std::fs::metadata(input).ok().map(|m| id(&m))
    }
}

impl OutputTarget {
    /// Checks `path` (`-` is stdout) against the input and the policy: refuses output that is
    /// the input, an existing regular file without `--force`, a directory, and binary output
    /// to a terminal.
    pub fn new(path: &Path, input: &Path, policy: OutputPolicy) -> Result<Self> {
        if remote::is_url(path) {
            return Ok(OutputTarget::Remote(RemoteTarget::new(
                path, input, policy, false,
            )?));
        }
        let input = if remote::is_url(input) {
            None
        } else {
            input_id(input)
        };
        let stdout = fd_id(std::io::stdout());
        if path == Path::new("-") {
            return Self::stdout(input, stdout, policy);
        }
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(OutputTarget::File(FileTarget {
                    shown: path.to_path_buf(),
                    dest: follow_links(path)?,
                    replaces: None,
                    policy,
                }));
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot write {}", path.display()));
            }
        };
        let kind = meta.file_type();
        if stdout.is_some_and(|(out, _)| out == id(&meta)) && !kind.is_dir() {
            // `-o /dev/stdout`, or the file stdout already is.
            return Self::stdout(input, stdout, policy);
        }
        let same = input == Some(id(&meta));
        if same && (kind.is_file() || kind.is_fifo()) {
            return usage(format!(
                "output {} is the input file; choose another output",
                path.display()
            ));
        }
        if kind.is_dir() {
            return usage(format!("output {} is a directory", path.display()));
        }
        if (kind.is_file() || kind.is_block_device()) && !policy.force {
            return Err(paracrypt_core::Error::OutputExists(path.display().to_string()).into());
        }
        if !kind.is_file() {
            return Ok(OutputTarget::Through(path.to_path_buf(), policy));
        }
        Ok(OutputTarget::File(FileTarget {
            shown: path.to_path_buf(),
            dest: follow_links(path)?,
            replaces: Some(Replaced {
                uid: meta.uid(),
                gid: meta.gid(),
                mode: meta.mode(),
            }),
            policy,
        }))
    }

    /// As [`OutputTarget::new`], but an output that is the input file itself is allowed: it is
    /// replaced (keeping its mode and, where permitted, owner) through a temporary file and an
    /// atomic rename once everything succeeded, as `paracrypt rekey -o INPUT INPUT` does. The
    /// input stays open, and intact until then.
    pub fn new_in_place(path: &Path, input: &Path, policy: OutputPolicy) -> Result<Self> {
        if remote::is_url(path) {
            return Ok(OutputTarget::Remote(RemoteTarget::new(
                path, input, policy, true,
            )?));
        }
        if path != Path::new("-")
            && !remote::is_url(input)
            && input != Path::new("-")
            && let (Ok(meta), Ok(input_meta)) = (std::fs::metadata(path), std::fs::metadata(input))
            && meta.is_file()
            && id(&meta) == id(&input_meta)
        {
            return Ok(OutputTarget::File(FileTarget {
                shown: path.to_path_buf(),
                dest: follow_links(path)?,
                replaces: Some(Replaced {
                    uid: meta.uid(),
                    gid: meta.gid(),
                    mode: meta.mode(),
                }),
                policy: OutputPolicy {
                    force: true,
                    ..policy
                },
            }));
        }
        Self::new(path, input, policy)
    }

    fn stdout(
        input: Option<Id>,
        stdout: Option<(Id, rustix::fs::FileType)>,
        policy: OutputPolicy,
    ) -> Result<Self> {
        if policy.binary && std::io::stdout().is_terminal() {
            return usage(
                "refusing to write binary output to a terminal (use -o FILE or redirect stdout)",
            );
        }
        if let Some((out, kind)) = stdout
            && input == Some(out)
            && would_loop(kind)
        {
            return usage("standard output is the input file; choose another output");
        }
        Ok(OutputTarget::Stdout)
    }

    /// Creates the output: the temporary file of a file target, with no name where the system
    /// allows it.
    pub fn create(self) -> Result<Output> {
        match self {
            OutputTarget::Stdout => {
                super::grow_pipe(std::io::stdout());
                Ok(Output::Stdout(std::io::stdout()))
            }
            OutputTarget::Through(path, policy) => Ok(Output::Through(through(&path, policy)?)),
            OutputTarget::Remote(target) => Ok(Output::Remote(target.create()?)),
            OutputTarget::File(target) => {
                let temp = target
                    .temp()
                    .with_context(|| format!("cannot create {}", target.shown.display()))?;
                Ok(Output::File(Staged {
                    temp: Some(temp),
                    target,
                }))
            }
        }
    }

    /// The output before it exists, to be made by [`NewOutput::create`]. With `named`, a file
    /// target's temporary file gets a name ([`NewOutput::path`]) chosen now, free in the
    /// destination's directory, so that other processes learn it before the file exists and
    /// can then open it, or remove it if this process dies (the ranks of a `--distributed` run
    /// under the shared-fs transport).
    #[cfg(feature = "mpi")]
    pub fn new_output(self, named: bool) -> Result<NewOutput> {
        let path = match (&self, named) {
            (OutputTarget::File(target), true) => Some(
                target
                    .free_name()
                    .with_context(|| format!("cannot create {}", target.shown.display()))?,
            ),
            _ => None,
        };
        Ok(NewOutput { target: self, path })
    }
}

/// An output before it exists: see [`OutputTarget::new_output`].
#[cfg(feature = "mpi")]
#[derive(Debug)]
pub struct NewOutput {
    target: OutputTarget,
    /// The temporary file's name, for a named one.
    path: Option<PathBuf>,
}

#[cfg(feature = "mpi")]
impl NewOutput {
    /// The name the temporary file will have, if it is to have one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Creates the output: a named temporary file at [`NewOutput::path`] (which fails if
    /// anything appeared there meanwhile), else as [`OutputTarget::create`] does.
    pub fn create(self) -> Result<Output> {
        match (self.target, self.path) {
            (OutputTarget::File(target), Some(path)) => {
                let temp = target
                    .named_temp_at(&path)
                    .and_then(|temp| target.adopt(temp))
                    .with_context(|| format!("cannot create {}", target.shown.display()))?;
                Ok(Output::File(Staged {
                    temp: Some(temp),
                    target,
                }))
            }
            (target, _) => target.create(),
        }
    }
}

/// Follows symbolic links from `path` to the path that is really written (which may not exist
/// yet: a link to a missing file creates that file, as the shell's `>` does).
fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut current = path.to_path_buf();
    // As the kernel, give up after 40 links.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                current = match current.parent() {
                    Some(dir) => dir.join(target),
                    None => target,
                };
            }
            _ => return Ok(current),
        }
    }
    usage(format!(
        "output {} is a loop of symbolic links",
        path.display()
    ))
}

/// Opens an existing non-regular node for writing, without creating or truncating it; refuses
/// binary output to a terminal (`-o /dev/tty`) as on stdout.
fn through(path: &Path, policy: OutputPolicy) -> Result<Through> {
    let cannot = || format!("cannot write {}", path.display());
    let meta = std::fs::metadata(path).with_context(cannot)?;
    if meta.file_type().is_socket() {
        return Ok(Through::Socket(
            UnixStream::connect(path).with_context(cannot)?,
        ));
    }
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(cannot)?;
    if policy.binary && file.is_terminal() {
        return usage(format!(
            "refusing to write binary output to the terminal {}",
            path.display()
        ));
    }
    super::grow_pipe(&file);
    Ok(Through::File(file))
}

impl FileTarget {
    /// The directory the temporary file goes in: the destination's.
    fn dir(&self) -> &Path {
        match self.dest.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        }
    }

    /// The mode the temporary file is created with (the umask applies): a replaced file's mode
    /// is set once the owner is, so until then only the owner may read.
    fn create_mode(&self) -> u32 {
        if self.policy.private || self.replaces.is_some() {
            0o600
        } else {
            0o666
        }
    }

    fn temp(&self) -> std::io::Result<Temp> {
        let temp = if !unnamed_supported() {
            self.named_temp()?
        } else {
            match self.unnamed_temp() {
                Ok(file) => Temp::Unnamed(file),
                // A filesystem without O_TMPFILE (EOPNOTSUPP), an older kernel (EISDIR), …
                Err(_) => self.named_temp()?,
            }
        };
        self.adopt(temp)
    }

    /// Gives a new temporary file what it keeps of a file it replaces.
    fn adopt(&self, temp: Temp) -> std::io::Result<Temp> {
        if let (Some(old), false) = (self.replaces, self.policy.private) {
            let file = temp.file();
            // Keep the owner where we may (root), else at least the group; then the mode
            // (after chown, which may clear set-id bits).
            if std::os::unix::fs::fchown(file, Some(old.uid), Some(old.gid)).is_err() {
                let _ = std::os::unix::fs::fchown(file, None, Some(old.gid));
            }
            file.set_permissions(std::fs::Permissions::from_mode(old.mode & 0o777))
                .map_err(bare)?;
        }
        Ok(temp)
    }

    /// An `O_TMPFILE` file in the destination's directory: it has no name until commit.
    fn unnamed_temp(&self) -> std::io::Result<File> {
        let fd = rustix::fs::openat(
            CWD,
            self.dir(),
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(self.create_mode()),
        )?;
        Ok(File::from(fd))
    }

    /// A hidden temporary file beside the destination, removed if the process is interrupted.
    fn named_temp(&self) -> std::io::Result<Temp> {
        let mode = self.create_mode();
        let mut pending = pending();
        let temp = hidden_name()
            .make_in(self.dir(), |path| {
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .open(path)
            })
            .map_err(bare)?;
        pending.add_file(temp.path());
        Ok(Temp::Named(temp))
    }

    /// A hidden name beside the destination that nothing holds now (the file is not created).
    #[cfg(feature = "mpi")]
    fn free_name(&self) -> std::io::Result<PathBuf> {
        let free = |path: &Path| match std::fs::symlink_metadata(path) {
            Ok(_) => Err(std::io::ErrorKind::AlreadyExists.into()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        // `keep`: the name is only chosen, and nothing is removed when it is dropped.
        let chosen = hidden_name().make_in(self.dir(), free).map_err(bare)?;
        let ((), path) = chosen.keep().map_err(|e| bare(e.error))?;
        Ok(path)
    }

    /// The temporary file at `path` (from [`FileTarget::free_name`]): created only if nothing
    /// is there, and removed if the process is interrupted.
    #[cfg(feature = "mpi")]
    fn named_temp_at(&self, path: &Path) -> std::io::Result<Temp> {
        let path = tempfile::TempPath::try_from_path(path)?;
        let mut pending = pending();
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(self.create_mode())
            .open(&path);
        let file = match opened {
            Ok(file) => file,
            Err(e) => {
                // What is there is not ours: never removed.
                let _ = path.keep();
                return Err(bare(e));
            }
        };
        let temp = NamedTempFile::from_parts(file, path);
        pending.add_file(temp.path());
        Ok(Temp::Named(temp))
    }
}

/// The names temporary files get beside a destination.
fn hidden_name() -> tempfile::Builder<'static, 'static> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".paracrypt-").suffix(".tmp");
    builder
}

/// Set (to anything) to always use named temporary files, as filesystems without `O_TMPFILE`
/// get: lets tests reach that path.
pub const NO_TMPFILE_ENV: &str = "PARACRYPT_NO_TMPFILE";

/// Whether an `O_TMPFILE` file can be linked into place: through `/proc/self/fd`, the way that
/// needs no privilege.
fn unnamed_supported() -> bool {
    std::env::var_os(NO_TMPFILE_ENV).is_none() && Path::new("/proc/self/fd").is_dir()
}

/// The OS error alone: tempfile adds the temporary file's path to its errors, and that name
/// means nothing to the user.
fn bare(error: std::io::Error) -> std::io::Error {
    match error.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => error.kind().into(),
    }
}

/// An output being written. Dropping it without [`Output::commit`] leaves the destination as it
/// was and no temporary file.
#[derive(Debug)]
pub enum Output {
    /// Standard output.
    Stdout(std::io::Stdout),
    /// A device, FIFO or socket, written through.
    Through(Through),
    /// A regular file, staged in a temporary file.
    File(Staged),
    /// An object being uploaded.
    Remote(RemoteOutput),
}

/// An existing node written through.
#[derive(Debug)]
pub enum Through {
    /// A character or block device, or a FIFO.
    File(File),
    /// A Unix socket, connected to.
    Socket(UnixStream),
}

/// A regular file being written in a temporary file.
#[derive(Debug)]
pub struct Staged {
    /// `None` once committed.
    temp: Option<Temp>,
    target: FileTarget,
}

#[derive(Debug)]
enum Temp {
    /// `O_TMPFILE`: no name until it is linked into place.
    Unnamed(File),
    /// A hidden name beside the destination, registered for removal on an interrupt.
    Named(NamedTempFile),
}

impl Temp {
    fn file(&self) -> &File {
        match self {
            Temp::Unnamed(file) => file,
            Temp::Named(temp) => temp.as_file(),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(Temp::Named(temp)) = self.temp.take() {
            let mut pending = pending();
            let path = temp.path().to_path_buf();
            drop(temp);
            pending.forget_file(&path);
        }
    }
}

impl Output {
    /// The file, for positional writes (only a staged regular file has one).
    pub fn as_file(&self) -> Option<&File> {
        match self {
            Output::File(staged) => staged.temp.as_ref().map(Temp::file),
            Output::Stdout(_) | Output::Through(_) | Output::Remote(_) => None,
        }
    }

    /// The object being uploaded, when the output is one.
    pub fn remote(&mut self) -> Option<&mut RemoteOutput> {
        match self {
            Output::Remote(remote) => Some(remote),
            _ => None,
        }
    }

    /// The temporary file's path, when it has one (see [`OutputTarget::new_output`]).
    #[cfg(feature = "mpi")]
    pub fn temp_path(&self) -> Option<&Path> {
        match self {
            Output::File(Staged {
                temp: Some(Temp::Named(temp)),
                ..
            }) => Some(temp.path()),
            _ => None,
        }
    }

    /// A sequential writer.
    pub fn writer(&mut self) -> Box<dyn Write + Send + '_> {
        match self {
            Output::Stdout(out) => Box::new(out),
            Output::Through(Through::File(file)) => Box::new(file),
            Output::Through(Through::Socket(socket)) => Box::new(socket),
            Output::File(staged) => {
                Box::new(staged.temp.as_ref().map(Temp::file).expect("not committed"))
            }
            Output::Remote(remote) => Box::new(remote),
        }
    }

    /// Finishes the output: flushes stdout, or puts the temporary file in the destination's
    /// place (after an `fsync` when asked for).
    pub fn commit(self) -> Result<()> {
        match self {
            Output::Stdout(mut out) => out.flush().context("writing to stdout"),
            Output::Through(_) => Ok(()),
            Output::File(staged) => staged.commit(),
            Output::Remote(remote) => remote.commit(),
        }
    }
}

impl Staged {
    fn commit(mut self) -> Result<()> {
        let target = &self.target;
        let shown = target.shown.display();
        let temp = self.temp.take().expect("committed once");
        if target.policy.sync {
            temp.file()
                .sync_all()
                .with_context(|| format!("writing {shown}"))?;
        }
        let exists = || {
            Err::<(), _>(anyhow::Error::from(paracrypt_core::Error::OutputExists(
                shown.to_string(),
            )))
        };
        // Held until the file is in place: an interrupt waits for the commit to end.
        let mut pending = pending();
        match temp {
            Temp::Unnamed(file) => {
                let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
                let link = |to: &Path| {
                    rustix::fs::linkat(CWD, proc.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW)
                        .map_err(std::io::Error::from)
                };
                if !target.policy.force {
                    return match link(&target.dest) {
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => exists(),
                        result => result.with_context(|| format!("cannot create {shown}")),
                    };
                }
                // linkat cannot replace a file: give it a hidden name, then rename that.
                let named = hidden_name()
                    .make_in(target.dir(), |path| link(path))
                    .map_err(bare)
                    .with_context(|| format!("cannot create {shown}"))?;
                pending.add_file(named.path());
                let path = named.path().to_path_buf();
                let renamed = named.persist(&target.dest);
                pending.forget_file(&path);
                renamed
                    .map(drop)
                    .map_err(|e| bare(e.error))
                    .with_context(|| format!("cannot create {shown}"))
            }
            Temp::Named(temp) => {
                let path = temp.path().to_path_buf();
                let persisted = if target.policy.force {
                    temp.persist(&target.dest)
                } else {
                    temp.persist_noclobber(&target.dest)
                };
                // On failure the temporary file comes back, and is removed when dropped here.
                let result = persisted.map(drop).map_err(|e| bare(e.error));
                pending.forget_file(&path);
                match result {
                    Err(e)
                        if e.kind() == std::io::ErrorKind::AlreadyExists
                            && !target.policy.force =>
                    {
                        exists()
                    }
                    result => result.with_context(|| format!("cannot create {shown}")),
                }
            }
        }
    }
}
