//! A tree's output: its directories, and each file written in a temporary file in its
//! directory that takes its name only once it is complete.
//!
//! The temporary file has no name at all where Linux allows it (`O_TMPFILE`, linked into place
//! by [`Dest::commit`]), so that even `SIGKILL` leaves nothing behind; elsewhere it is a hidden
//! `.paracrypt-XXXXXX.tmp` beside its destination that the caller's [`Guard`] creates (a
//! front end removes it on an interrupt: creating it inside the guard means no interrupt lands
//! between the file's creation and the front end learning of it) and that is removed when the
//! file fails.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, CWD, Mode, OFlags, Timespec, Timestamps};

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
    named: Option<PathBuf>,
    guard: Arc<dyn Guard>,
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(path) = self.named.take() {
            let _ = fs::remove_file(&path);
            self.guard.forget(&path);
        }
    }
}

impl Dest {
    /// `root/rel`.
    pub fn path(&self, rel: &[u8]) -> PathBuf {
        join(&self.root, rel)
    }

    /// Makes the directory `rel` (owner-only until [`set_times`] and the mode are applied at
    /// the end, so that files can be written into a directory that ends read-only). One that
    /// exists must be a directory, not a link to one: nothing is written through a link.
    /// Returns whether it was made.
    pub fn mkdir(&self, rel: &[u8]) -> io::Result<bool> {
        let path = self.path(rel);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                // Written into again (`--update`): writable by its owner until the end.
                let mode = meta.permissions().mode();
                if mode & 0o700 != 0o700 {
                    fs::set_permissions(&path, fs::Permissions::from_mode(mode | 0o700))?;
                }
                Ok(false)
            }
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "it exists and is not a directory",
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::DirBuilder::new().mode(0o700).create(&path)?;
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// A temporary file in the directory of `rel`.
    pub fn temp(&self, rel: &[u8]) -> io::Result<Temp> {
        let dir = self.path(super::path::parent(rel));
        if !self.named {
            let unnamed = rustix::fs::openat(
                CWD,
                &dir,
                OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            );
            match unnamed {
                Ok(fd) => {
                    return Ok(Temp {
                        file: File::from(fd),
                        named: None,
                        guard: Arc::clone(&self.guard),
                    });
                }
                // A filesystem without O_TMPFILE (EOPNOTSUPP), an older kernel (EISDIR): named.
                Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::ISDIR => {}
                Err(e) => return Err(e.into()),
            }
        }
        let (file, path) = self.named_in(&dir)?;
        Ok(Temp {
            file,
            named: Some(path),
            guard: Arc::clone(&self.guard),
        })
    }

    /// A new hidden file in `dir`, created through the guard (which removes it on an
    /// interrupt).
    fn named_in(&self, dir: &Path) -> io::Result<(File, PathBuf)> {
        loop {
            let path = dir.join(hidden_name());
            let mut file = None;
            let created = self.guard.create(&path, &mut || {
                file = Some(
                    OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .custom_flags(OFlags::CLOEXEC.bits() as i32)
                        .open(&path)?,
                );
                Ok(())
            });
            match (created, file) {
                (Ok(()), Some(file)) => return Ok((file, path)),
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
        let dest = self.path(rel);
        // Ours now: a named file is removed here if the commit fails.
        let named = temp.named.take();
        let result = match &named {
            // One rename: atomic, so an interrupt finds the file absent or complete (and the
            // interrupt handler, removing the temporary name, then finds nothing there).
            Some(path) => rename(path, &dest, replace),
            // One link, equally atomic, and no lock taken for it: a tree of many small files
            // commits on every thread at once.
            None => match link_unnamed(&temp.file, &dest) {
                // Replacing a file takes two steps (a hidden link, then a rename over the old
                // file): the guard holds interrupts off for them, so that no hidden link is
                // left between the two. Nothing in them calls the guard again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && replace => {
                    let mut result = Ok(());
                    self.guard
                        .commit(&mut || result = replace_unnamed(&temp.file, &dest));
                    result
                }
                result => result,
            },
        };
        if let Some(path) = named {
            if result.is_err() {
                let _ = fs::remove_file(&path);
            }
            self.guard.forget(&path);
        }
        result
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
        let at = self.path(rel);
        fs::set_permissions(&at, fs::Permissions::from_mode(mode))?;
        set_times(&at, mtime)
    }

    fn remove(&self, rel: &[u8]) -> io::Result<bool> {
        match fs::remove_file(self.path(rel)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn remove_made(&self, made: &[Vec<u8>], made_root: bool) {
        super::seal::remove_made(&self.root, made, made_root);
    }

    fn link(&self, rel: &[u8], target: &[u8], mtime: (i64, u32)) -> io::Result<()> {
        let at = self.path(rel);
        if self.replace && fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) {
            let _ = fs::remove_file(&at);
        }
        symlink(target, &at).and_then(|()| set_times(&at, mtime))
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

/// Renames the named temporary file `path` to `dest`, over a file there only when `replace`.
fn rename(path: &Path, dest: &Path, replace: bool) -> io::Result<()> {
    if replace {
        fs::rename(path, dest)
    } else {
        rustix::fs::renameat_with(CWD, path, CWD, dest, rustix::fs::RenameFlags::NOREPLACE)
            .map_err(io::Error::from)
    }
}

/// Links the unnamed `file` at `to` (which must not exist).
fn link_unnamed(file: &File, to: &Path) -> io::Result<()> {
    let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(CWD, proc.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW)
        .map_err(io::Error::from)
}

/// Puts the unnamed `file` in place of the file at `dest`: linked at a hidden name beside it,
/// then renamed over it (`linkat` cannot replace).
fn replace_unnamed(file: &File, dest: &Path) -> io::Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let hidden = loop {
        let hidden = dir.join(hidden_name());
        match link_unnamed(file, &hidden) {
            Ok(()) => break hidden,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    };
    let renamed = fs::rename(&hidden, dest);
    if renamed.is_err() {
        let _ = fs::remove_file(&hidden);
    }
    renamed
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

/// Sets the modification time of `path` itself (a directory, or a symbolic link: not what it
/// points to), leaving its access time.
pub(crate) fn set_times(path: &Path, mtime: (i64, u32)) -> io::Result<()> {
    let omit = Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_OMIT,
    };
    let times = Timestamps {
        last_access: omit,
        last_modification: Timespec {
            tv_sec: mtime.0,
            tv_nsec: mtime.1.into(),
        },
    };
    rustix::fs::utimensat(CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(())
}

/// Makes the symbolic link `path` → `target`.
pub(crate) fn symlink(target: &[u8], path: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(OsStr::from_bytes(target), path)
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
