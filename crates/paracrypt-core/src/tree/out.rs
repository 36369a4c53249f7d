//! A tree's output: its directories, and each file written in a temporary file in its
//! directory that takes its name only once it is complete.
//!
//! The temporary file has no name at all where Linux allows it (`O_TMPFILE`, linked into place
//! by [`Dest::commit`]), so that even `SIGKILL` leaves nothing behind; elsewhere it is a hidden
//! `.paracrypt-XXXXXX.tmp` beside its destination that the caller's [`Guard`] creates (a
//! front end removes it on an interrupt: creating it inside the guard means no interrupt lands
//! between the file's creation and the front end learning of it) and that is removed when the
//! file fails.
//!
//! The output is untrusted storage: a directory of the tree may have been replaced by a
//! symbolic link to somewhere else since it was written. So nothing is done through a path
//! under the output: each operation opens the directory it works in from the output's root one
//! component at a time without following links, and creates, links, renames or
//! removes the one name in it. The root itself is the directory the caller named, links on its
//! way followed as they always were.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, ResolveFlags, Timespec, Timestamps};
use rustix::io::Errno;

use super::Guard;
use super::io::{OutputFile, TreeOutput};
use super::walk::join;

/// Where a tree's files go.
pub(crate) struct Dest {
    /// The output directory.
    pub root: PathBuf,
    /// Whether a file may replace one of the same name (`--force`, `--update`).
    pub replace: bool,
    /// Named temporary files only (a filesystem without `O_TMPFILE`, or a test).
    pub named: bool,
    /// `fsync` each file before it takes its name.
    pub sync: bool,
    pub guard: Arc<dyn Guard>,
}

/// Where a tree run writes: a local directory, or what a front end plugged in.
pub(crate) enum Out {
    /// A local directory.
    Local(Dest),
    /// What a front end plugged in (a prefix in object storage).
    Other(Arc<dyn TreeOutput>),
}

impl Out {
    pub fn get(&self) -> &dyn TreeOutput {
        match self {
            Out::Local(dest) => dest,
            Out::Other(out) => &**out,
        }
    }

    /// The local directory, when it is one.
    pub fn local(&self) -> Option<&Dest> {
        match self {
            Out::Local(dest) => Some(dest),
            Out::Other(_) => None,
        }
    }

    /// What [`Out::prepare`] checks, making nothing: a dry run's
    /// ([`Options::dry_run`](super::Options::dry_run)). An output plugged in is refused (its
    /// checks may write).
    pub fn check(&self, input: Option<&Path>, force: bool) -> crate::error::Result<()> {
        match self {
            Out::Local(dest) => super::seal::check_paths(input, &dest.root, force),
            Out::Other(_) => Err(super::dry_run_refused()),
        }
    }

    /// Checks the output before anything is written, and makes it if need be (see
    /// [`TreeOutput::prepare`]): a local directory against the local tree `input` it must not
    /// be inside of (or alone, for a tree read from elsewhere), an output plugged in by its own
    /// rules. Returns whether this made it.
    pub fn prepare(&self, input: Option<&Path>, force: bool) -> crate::error::Result<bool> {
        match (self, input) {
            (Out::Local(dest), Some(at)) => super::seal::check_output(at, &dest.root, force),
            (Out::Local(dest), None) => super::seal::check_output_remote(&dest.root, force),
            (Out::Other(other), at) => other.prepare(at.unwrap_or(Path::new("")), force),
        }
    }

    /// Where a process that runs a task of the run writes, whether its files replace those of
    /// the same names, and whether they are named temporary files and synced; `None` where
    /// the output is written by this process only.
    pub fn task_root(&self) -> Option<(PathBuf, bool, bool, bool)> {
        match self {
            Out::Local(dest) => Some((dest.root.clone(), dest.replace, dest.named, dest.sync)),
            Out::Other(other) => other
                .task_root()
                .map(|(root, replace)| (root, replace, false, false)),
        }
    }
}

/// A file being written: no name until [`Dest::commit`], or a hidden one that is removed if
/// it is dropped first.
pub(crate) struct Temp {
    pub file: File,
    /// The directory it is in, and where it takes its name.
    dir: OwnedFd,
    /// A named temporary file's name in `dir`, and its path as the guard knows it.
    named: Option<(OsString, PathBuf)>,
    guard: Arc<dyn Guard>,
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some((name, path)) = self.named.take() {
            let _ = rustix::fs::unlinkat(&self.dir, name.as_os_str(), AtFlags::empty());
            self.guard.forget(&path);
        }
    }
}

/// A symbolic link found where the tree has a directory: refused, for nothing is written or
/// removed through a link (it may lead out of the output).
#[derive(Debug)]
pub(crate) struct ThroughLink(PathBuf);

impl std::fmt::Display for ThroughLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is a symbolic link: nothing is written or removed through a link",
            self.0.display()
        )
    }
}

impl std::error::Error for ThroughLink {}

impl ThroughLink {
    /// Whether `error` is this refusal.
    pub(crate) fn is(error: &io::Error) -> bool {
        error.get_ref().is_some_and(|e| e.is::<ThroughLink>())
    }
}

/// Set once `openat2` is found missing (a kernel before 5.6, or a sandbox that hides it), so
/// that each later open goes straight to the walk.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

impl Dest {
    /// `root/rel`.
    pub fn path(&self, rel: &[u8]) -> PathBuf {
        join(&self.root, rel)
    }

    /// The directory `rel` of the tree, opened with `flags` (`O_PATH` for a directory only
    /// worked in). The root is opened by the path the caller named; below it, no component may
    /// be a symbolic link ([`ThroughLink`]). Opened for each operation rather than once: no
    /// state is shared between the threads that commit at once, and the root is the one the
    /// caller named each time, as it was when every operation took a path.
    fn dir_with(&self, rel: &[u8], flags: OFlags) -> io::Result<OwnedFd> {
        let flags = flags | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if rel.is_empty() {
            return Ok(rustix::fs::openat(CWD, &self.root, flags, Mode::empty())?);
        }
        let root = rustix::fs::openat(
            CWD,
            &self.root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            // One call for the whole path where the kernel has it.
            let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
            match rustix::fs::openat2(&root, OsStr::from_bytes(rel), flags, Mode::empty(), resolve)
            {
                Ok(fd) => return Ok(fd),
                Err(e) if e == Errno::NOSYS => NO_OPENAT2.store(true, Ordering::Relaxed),
                // Any other failure is the walk's to name (which component is a link).
                Err(_) => {}
            }
        }
        self.walk(root, rel, flags)
    }

    /// [`Dest::dir_with`] a component at a time: each opened in the one before without
    /// following a link.
    fn walk(&self, mut at: OwnedFd, rel: &[u8], flags: OFlags) -> io::Result<OwnedFd> {
        let mut end = 0;
        for part in rel.split(|&b| b == b'/') {
            end += part.len();
            let how = if end == rel.len() {
                flags | OFlags::NOFOLLOW
            } else {
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
            };
            let name = OsStr::from_bytes(part);
            at = match rustix::fs::openat(&at, name, how, Mode::empty()) {
                Ok(fd) => fd,
                Err(e) if e == Errno::LOOP || e == Errno::NOTDIR => {
                    let link = rustix::fs::statat(&at, name, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
                    if link {
                        let path = self.path(&rel[..end]);
                        return Err(io::Error::other(ThroughLink(path)));
                    }
                    return Err(e.into());
                }
                Err(e) => return Err(e.into()),
            };
            end += 1;
        }
        Ok(at)
    }

    /// The directory `rel` is in, and `rel`'s name in it.
    fn dir_of<'r>(&self, rel: &'r [u8]) -> io::Result<(OwnedFd, &'r OsStr)> {
        let dir = self.dir_with(super::path::parent(rel), OFlags::PATH)?;
        Ok((dir, name(rel)))
    }

    /// Makes the directory `rel` (owner-only until [`TreeOutput::finish_dir`] gives it its mode
    /// and time at the end, so that files can be written into a directory that ends read-only).
    /// One that exists must be a directory, not a link to one: nothing is written through a
    /// link. Returns whether it was made.
    pub fn mkdir(&self, rel: &[u8]) -> io::Result<bool> {
        let (dir, name) = self.dir_of(rel)?;
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o700)) {
            Ok(()) => Ok(true),
            Err(e) if e == Errno::EXIST => {
                let how = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let at = match rustix::fs::openat(&dir, name, how, Mode::empty()) {
                    Ok(at) => at,
                    Err(e) if e == Errno::LOOP || e == Errno::NOTDIR => {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            "it exists and is not a directory",
                        ));
                    }
                    Err(e) => return Err(e.into()),
                };
                // Written into again (`--update`): writable by its owner until the end.
                let mode = rustix::fs::fstat(&at)?.st_mode & 0o7777;
                if mode & 0o700 != 0o700 {
                    // `fchmod` takes no `O_PATH` descriptor, and one opened to read needs the
                    // read permission this may lack: the descriptor's own name in `/proc`
                    // (which glibc's `fchmodat(AT_SYMLINK_NOFOLLOW)` uses as well).
                    let proc = format!("/proc/self/fd/{}", at.as_raw_fd());
                    rustix::fs::chmod(proc.as_str(), Mode::from_raw_mode(mode | 0o700))?;
                }
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A temporary file in the directory of `rel`.
    pub fn temp(&self, rel: &[u8]) -> io::Result<Temp> {
        let parent = super::path::parent(rel);
        let dir = self.dir_with(parent, OFlags::PATH)?;
        if !self.named {
            let unnamed = rustix::fs::openat(
                &dir,
                ".",
                OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            );
            match unnamed {
                Ok(fd) => {
                    return Ok(Temp {
                        file: File::from(fd),
                        dir,
                        named: None,
                        guard: Arc::clone(&self.guard),
                    });
                }
                // A filesystem without O_TMPFILE (EOPNOTSUPP), an older kernel (EISDIR): named.
                Err(e) if e == Errno::OPNOTSUPP || e == Errno::ISDIR => {}
                Err(e) => return Err(e.into()),
            }
        }
        let (file, named) = self.named_in(&dir, &self.path(parent))?;
        Ok(Temp {
            file,
            dir,
            named: Some(named),
            guard: Arc::clone(&self.guard),
        })
    }

    /// A new hidden file in `dir` (whose path is `shown`), created through the guard (which
    /// removes it by its path on an interrupt).
    fn named_in(&self, dir: &OwnedFd, shown: &Path) -> io::Result<(File, (OsString, PathBuf))> {
        loop {
            let name = OsString::from(hidden_name());
            let path = shown.join(&name);
            let mut file = None;
            let created = self.guard.create(&path, &mut || {
                let how = OFlags::RDWR
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let fd =
                    rustix::fs::openat(dir, name.as_os_str(), how, Mode::from_raw_mode(0o600))?;
                file = Some(File::from(fd));
                Ok(())
            });
            match (created, file) {
                (Ok(()), Some(file)) => return Ok((file, (name, path))),
                (Err(e), _) if e.kind() == io::ErrorKind::AlreadyExists => {}
                (Err(e), _) => return Err(e),
                (Ok(()), None) => {
                    return Err(io::Error::other("the guard did not create the file"));
                }
            }
        }
    }

    /// Gives the finished `temp` the name `rel`: atomically, so that an interrupt (the guard
    /// holds it off for the time of the commit) finds the file either absent or complete. An
    /// existing file of that name is replaced only when [`Dest::replace`] allows it.
    pub fn commit(&self, temp: Temp, rel: &[u8]) -> io::Result<()> {
        self.commit_as(temp, rel, self.replace)
    }

    /// [`Dest::commit`], replacing a file of that name whatever [`Dest::replace`] says (the
    /// manifest, which a run writes last and whole).
    pub fn commit_replacing(&self, temp: Temp, rel: &[u8]) -> io::Result<()> {
        self.commit_as(temp, rel, true)
    }

    fn commit_as(&self, mut temp: Temp, rel: &[u8], replace: bool) -> io::Result<()> {
        if self.sync {
            temp.file.sync_all()?;
        }
        // In the directory the temporary file was made in ([`Dest::temp`] of the same `rel`),
        // not found again by its path.
        let (dir, dest) = (&temp.dir, name(rel));
        // Ours now: a named file is removed here if the commit fails.
        let named = temp.named.take();
        let result = match &named {
            // One rename: atomic, so an interrupt finds the file absent or complete (and the
            // interrupt handler, removing the temporary name, then finds nothing there).
            Some((name, _)) => rename(dir, name, dest, replace),
            // One link, equally atomic, and no lock taken for it: a tree of many small files
            // commits on every thread at once.
            None => match link_unnamed(&temp.file, dir, dest) {
                // Replacing a file takes two steps (a hidden link, then a rename over the old
                // file): the guard holds interrupts off for them, so that no hidden link is
                // left between the two. Nothing in them calls the guard again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && replace => {
                    let mut result = Ok(());
                    self.guard
                        .commit(&mut || result = replace_unnamed(&temp.file, dir, dest));
                    result
                }
                result => result,
            },
        };
        if let Some((name, path)) = named {
            if result.is_err() {
                let _ = rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::empty());
            }
            self.guard.forget(&path);
        }
        result
    }

    /// Removes the (empty) directory `rel`.
    pub fn remove_dir(&self, rel: &[u8]) -> io::Result<()> {
        let (dir, name) = self.dir_of(rel)?;
        Ok(rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR)?)
    }
}

/// The local directory as a [`TreeOutput`]: each file a temporary file committed as
/// [`Dest::commit`] does.
impl TreeOutput for Dest {
    fn shown(&self, rel: &[u8]) -> String {
        self.path(rel).display().to_string()
    }

    fn location(&self) -> String {
        super::state::local_location(&self.root)
    }

    fn prepare(&self, input: &Path, force: bool) -> crate::error::Result<bool> {
        super::seal::check_output(input, &self.root, force)
    }

    fn mkdir(&self, rel: &[u8]) -> io::Result<bool> {
        Dest::mkdir(self, rel)
    }

    fn create(&self, rel: &[u8], _len: u64) -> io::Result<Box<dyn OutputFile + '_>> {
        Ok(Box::new(LocalFile {
            temp: self.temp(rel)?,
            dest: self,
        }))
    }

    fn put(&self, rel: &[u8], data: &[u8]) -> io::Result<()> {
        let temp = self.temp(rel)?;
        temp.file.write_all_at(data, 0)?;
        self.commit_replacing(temp, rel)
    }

    fn finish_dir(&self, rel: &[u8], mode: u32, mtime: (i64, u32)) -> io::Result<()> {
        // Opened to read (the owner may, until this), so that the mode and time are set on
        // the directory itself.
        let dir = self.dir_with(rel, OFlags::RDONLY)?;
        rustix::fs::fchmod(&dir, Mode::from_raw_mode(mode))?;
        Ok(rustix::fs::futimens(&dir, &timestamps(mtime))?)
    }

    fn remove(&self, rel: &[u8]) -> io::Result<bool> {
        // A file whose directory is gone as well is as absent as one that is gone alone.
        let removed = self
            .dir_of(rel)
            .and_then(|(dir, name)| Ok(rustix::fs::unlinkat(&dir, name, AtFlags::empty())?));
        match removed {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn remove_made(&self, made: &[Vec<u8>], made_root: bool) {
        for rel in made.iter().rev() {
            let _ = self.remove_dir(rel);
        }
        if made_root {
            let _ = fs::remove_dir(&self.root);
        }
    }

    fn link(&self, rel: &[u8], target: &[u8], mtime: (i64, u32)) -> io::Result<()> {
        let (dir, name) = self.dir_of(rel)?;
        if self.replace
            && rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) != FileType::Directory)
        {
            let _ = rustix::fs::unlinkat(&dir, name, AtFlags::empty());
        }
        rustix::fs::symlinkat(OsStr::from_bytes(target), &dir, name)?;
        let times = timestamps(mtime);
        Ok(rustix::fs::utimensat(
            &dir,
            name,
            &times,
            AtFlags::SYMLINK_NOFOLLOW,
        )?)
    }

    fn checkpoints(&self) -> bool {
        true
    }
}

/// A local file being written: its temporary file.
struct LocalFile<'a> {
    temp: Temp,
    dest: &'a Dest,
}

impl OutputFile for LocalFile<'_> {
    fn sink(&self) -> &dyn crate::engine::Sink {
        &self.temp.file
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.temp.file.write_all_at(data, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.temp.file.set_len(len)
    }

    fn set_times(&self, mode: u32, mtime: (i64, u32)) -> io::Result<()> {
        finish_file(&self.temp.file, mode, mtime)
    }

    fn commit(self: Box<Self>, rel: &[u8]) -> io::Result<()> {
        let LocalFile { temp, dest } = *self;
        dest.commit(temp, rel)
    }
}

/// Renames the named temporary file `from` in `dir` to `to`, over a file there only when
/// `replace`.
fn rename(dir: &OwnedFd, from: &OsStr, to: &OsStr, replace: bool) -> io::Result<()> {
    if replace {
        rustix::fs::renameat(dir, from, dir, to)
    } else {
        rustix::fs::renameat_with(dir, from, dir, to, rustix::fs::RenameFlags::NOREPLACE)
    }
    .map_err(io::Error::from)
}

/// Links the unnamed `file` at `to` in `dir` (which must not exist there).
fn link_unnamed(file: &File, dir: &OwnedFd, to: &OsStr) -> io::Result<()> {
    let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(CWD, proc.as_str(), dir, to, AtFlags::SYMLINK_FOLLOW)
        .map_err(io::Error::from)
}

/// Puts the unnamed `file` in place of the file `dest` in `dir`: linked at a hidden name beside
/// it, then renamed over it (`linkat` cannot replace).
fn replace_unnamed(file: &File, dir: &OwnedFd, dest: &OsStr) -> io::Result<()> {
    let hidden = loop {
        let hidden = OsString::from(hidden_name());
        match link_unnamed(file, dir, &hidden) {
            Ok(()) => break hidden,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    };
    let renamed = rustix::fs::renameat(dir, &hidden, dir, dest);
    if renamed.is_err() {
        let _ = rustix::fs::unlinkat(dir, &hidden, AtFlags::empty());
    }
    Ok(renamed?)
}

/// The last component of `rel`: its name in its directory.
fn name(rel: &[u8]) -> &OsStr {
    let at = rel.iter().rposition(|&b| b == b'/').map_or(0, |at| at + 1);
    OsStr::from_bytes(&rel[at..])
}

/// A fresh hidden name for a temporary file.
fn hidden_name() -> String {
    format!(".paracrypt-{:016x}.tmp", rand::random::<u64>())
}

/// `(seconds, nanoseconds)` as a [`SystemTime`].
pub(crate) fn system_time((seconds, nanos): (i64, u32)) -> SystemTime {
    let at = if seconds >= 0 {
        UNIX_EPOCH + Duration::from_secs(seconds as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(seconds.unsigned_abs())
    };
    at + Duration::from_nanos(nanos.into())
}

/// Gives a finished file its mode and modification time (after its last write).
pub(crate) fn finish_file(file: &File, mode: u32, mtime: (i64, u32)) -> io::Result<()> {
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    file.set_modified(system_time(mtime))
}

/// A modification time to set, the access time left as it is.
fn timestamps(mtime: (i64, u32)) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: mtime.0,
            tv_nsec: mtime.1.into(),
        },
    }
}

/// Opens `path` for reading, refusing a symbolic link in its place (a file the walk found
/// regular and someone replaced since, or a stored file an attacker made a link). Without
/// waiting: a FIFO put in a file's place opens at once (and the caller, finding it is not a
/// regular file, refuses it) instead of blocking until something writes to it.
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK).bits() as i32)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO where a regular file was opens without a writer (it used to block the task for
    /// ever), and a link in a file's place is refused.
    #[test]
    fn nothing_put_in_a_files_place_blocks_or_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        let opened = open_no_follow(&fifo).unwrap();
        assert!(!opened.metadata().unwrap().is_file());
        fs::write(dir.path().join("file"), b"x").unwrap();
        std::os::unix::fs::symlink("file", dir.path().join("link")).unwrap();
        let refused = open_no_follow(&dir.path().join("link")).unwrap_err();
        assert_eq!(
            refused.raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
    }

    /// A link on the way to what an operation touches is refused, naming it, whether the
    /// directory is opened with `openat2` or (a kernel without it) a component at a time; a
    /// file on the way gets the system's error. Nothing is done where the link leads.
    #[test]
    fn nothing_is_done_through_a_link_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("out");
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("a/file"), b"").unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir_all(elsewhere.join("b")).unwrap();
        fs::create_dir(elsewhere.join("empty")).unwrap();
        fs::write(elsewhere.join("b/f"), b"x").unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("l")).unwrap();
        let before = listing(&elsewhere);
        let dest = Dest {
            root: root.clone(),
            replace: true,
            named: false,
            sync: false,
            guard: Arc::new(super::super::NoGuard),
        };
        let open_root = || {
            let how = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            rustix::fs::openat(CWD, &root, how, Mode::empty()).unwrap()
        };
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let refused = format!(
            "{} is a symbolic link: nothing is written or removed through a link",
            root.join("l").display()
        );
        let through = |result: io::Result<()>| {
            let e = result.unwrap_err();
            assert!(ThroughLink::is(&e), "{e}");
            assert_eq!(e.to_string(), refused);
        };
        dest.walk(open_root(), b"a/b", flags).unwrap();
        dest.dir_with(b"a/b", flags).unwrap();
        for rel in [&b"l"[..], b"l/b"] {
            through(dest.walk(open_root(), rel, flags).map(drop));
            through(dest.dir_with(rel, flags).map(drop));
        }
        let not_dir = dest.walk(open_root(), b"a/file/x", flags).unwrap_err();
        assert!(!ThroughLink::is(&not_dir));
        assert_eq!(
            not_dir.raw_os_error(),
            Some(rustix::io::Errno::NOTDIR.raw_os_error())
        );

        through(dest.remove(b"l/b/f").map(drop));
        through(dest.remove_dir(b"l/empty"));
        through(dest.mkdir(b"l/new").map(drop));
        through(dest.temp(b"l/g").map(drop));
        through(dest.link(b"l/m", b"target", (0, 0)));
        through(dest.finish_dir(b"l/b", 0o755, (0, 0)));
        through(dest.put(b"l/b/f", b"y"));
        assert_eq!(listing(&elsewhere), before);
        // The link itself, in a directory's place, is not one.
        let e = dest.mkdir(b"l").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);

        // A directory found again is made its owner's to write into, without reading it.
        fs::set_permissions(root.join("a/b"), fs::Permissions::from_mode(0o100)).unwrap();
        assert!(!dest.mkdir(b"a/b").unwrap());
        let mode = fs::metadata(root.join("a/b")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // A file whose directory is gone is not there to remove.
        assert!(!dest.remove(b"gone/f").unwrap());
    }

    /// Every path under `dir`, with each file's bytes and each directory's mode.
    fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
        let mut all = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                all.push((path.clone(), Vec::new(), meta.permissions().mode()));
                all.extend(listing(&path));
            } else {
                all.push((path.clone(), fs::read(&path).unwrap(), 0));
            }
        }
        all.sort();
        all
    }

    /// Records what its [`Guard::create`] saw: a front end holds its interrupt handler off for
    /// the call, so the file must be created inside it, not before or after.
    #[derive(Default)]
    struct Watching(std::sync::Mutex<Vec<(PathBuf, bool, bool)>>);

    impl Guard for Watching {
        fn create(
            &self,
            path: &Path,
            create: &mut dyn FnMut() -> io::Result<()>,
        ) -> io::Result<()> {
            let before = path.exists();
            let result = create();
            self.0
                .lock()
                .unwrap()
                .push((path.to_path_buf(), before, path.exists()));
            result
        }
    }

    /// A named temporary file comes to be inside the guard's `create` (an interrupt handler
    /// that looked before it finds none, one that looks after knows of it), and is gone once
    /// committed.
    #[test]
    fn a_named_temporary_file_is_created_inside_the_guard() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Arc::new(Watching::default());
        let dest = Dest {
            root: dir.path().to_path_buf(),
            replace: false,
            named: true,
            sync: false,
            guard: guard.clone(),
        };
        let temp = dest.temp(b"a").unwrap();
        temp.file.write_all_at(b"x", 0).unwrap();
        let seen = guard.0.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        let (path, before, after) = &seen[0];
        assert!(!before && *after, "{seen:?}");
        dest.commit(temp, b"a").unwrap();
        assert!(!path.exists());
        assert_eq!(fs::read(dir.path().join("a")).unwrap(), b"x");
    }
}
