//! Walking a directory tree: every directory, regular file and symbolic link under a root,
//! with the metadata the manifest keeps, on every pool thread.
//!
//! Symbolic links are recorded (their target), never followed; anything else (a FIFO, a socket,
//! a device) is refused by name before any work starts. Each directory is listed once and its
//! handle closed before its subdirectories are walked, so a walk holds at most one directory
//! open per pool thread, whatever the tree's depth or width.
//!
//! **A walk in parts**, for a tree spread over processes (MPI ranks), after mpiFileUtils' walk:
//! the coordinator lists the top of the tree breadth-first, a level at a time, until it holds
//! at least as many pending directories as it was asked for or the tree is done
//! ([`walk_top`]), and cuts the pending directories (sorted by path) into at most as many walk
//! tasks as it was asked for, runs of consecutive directories of near-equal count
//! ([`WalkTop::task`]): a level of 200 directories is a handful of messages per process, not
//! 200. Any process walks a task's directories on its own pool ([`walk_task`]), sending back,
//! for each of them, its subtree's entries or the one refusal the walk met there, as the task's
//! part; the coordinator merges the parts into the finished [`Walk`] ([`WalkTop::finish`]) that
//! [`Prepared::plan`](super::Prepared::plan) plans from, the same as a walk in one process
//! gives. A part is read with every length and count checked against what is left, it must
//! name its task's directories in order, and every path in it must lie under the directory it
//! is given for: bytes over a wire neither reach outside the tree nor cost more memory than
//! they hold.

use std::ffi::OsStr;
use std::fs::{self, Metadata};
use std::ops::Range;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::path::{MAX_PATH, fault, shown};
use super::task::{Reader, put_bytes};
use crate::error::{Error, Result};

/// What a walked entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// A directory.
    Dir,
    /// A regular file: its length and inode, as the walk saw them (a file opened later is
    /// checked against them).
    File {
        /// Its length in bytes.
        len: u64,
        /// Its inode number.
        ino: u64,
    },
    /// A symbolic link and its target (the bytes `readlink` gives).
    Symlink(Vec<u8>),
}

/// One entry of a walked tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Walked {
    /// The path under the root, `/`-separated; empty for the root itself.
    pub path: Vec<u8>,
    /// What it is.
    pub found: Found,
    /// The permission bits (with set-user-ID, set-group-ID and sticky: `st_mode & 0o7777`).
    pub mode: u32,
    /// The modification time: seconds since the epoch and nanoseconds.
    pub mtime: (i64, u32),
}

/// Walks the tree under `root` (a directory, or a symbolic link to one) in the caller's pool
/// and returns every entry, the root first, sorted by path (byte order). A FIFO, socket or
/// device anywhere in it is refused with [`Error::SpecialFile`]; a directory that cannot be
/// listed fails naming it.
pub(crate) fn walk(root: &Path) -> Result<Vec<Walked>> {
    let mut entries = vec![top(root)?];
    entries.extend(walk_dir(root, &[], &|| {})?);
    entries.par_sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(entries)
}

/// The root's own entry, refusing a root that is not a directory.
fn top(root: &Path) -> Result<Walked> {
    let meta =
        fs::metadata(root).map_err(|e| Error::io(format!("cannot read {}", root.display()), e))?;
    if !meta.is_dir() {
        return Err(Error::Tree(format!(
            "{} is not a directory (a tree's input is a directory)",
            root.display()
        )));
    }
    Ok(Walked {
        path: Vec::new(),
        found: Found::Dir,
        mode: meta.mode() & 0o7777,
        mtime: mtime_of(&meta),
    })
}

/// The entries under the directory `rel` of `root` (not `rel` itself), its subdirectories
/// walked in parallel; `tick` is called once per directory listed.
fn walk_dir(root: &Path, rel: &[u8], tick: &(dyn Fn() + Sync)) -> Result<Vec<Walked>> {
    let mut here = list(root, rel)?;
    tick();
    let below: Vec<Vec<Walked>> = here
        .par_iter()
        .filter(|entry| entry.found == Found::Dir)
        .map(|entry| walk_dir(root, &entry.path, tick))
        .collect::<Result<_>>()?;
    here.extend(below.into_iter().flatten());
    Ok(here)
}

/// The entries of the directory `rel` of `root` alone (not below them).
fn list(root: &Path, rel: &[u8]) -> Result<Vec<Walked>> {
    let dir = join(root, rel);
    let cannot = |e| Error::io(format!("cannot list directory {}", dir.display()), e);
    // The listing is read whole and its handle closed before any subdirectory is opened.
    let listed: Vec<fs::DirEntry> = fs::read_dir(&dir)
        .map_err(cannot)?
        .collect::<std::io::Result<_>>()
        .map_err(cannot)?;
    let mut here = Vec::with_capacity(listed.len());
    for entry in listed {
        let path = child(rel, &entry.file_name());
        // `DirEntry::metadata` does not follow a symbolic link.
        let meta = entry
            .metadata()
            .map_err(|e| Error::io(format!("cannot read {}", join(root, &path).display()), e))?;
        let kind = meta.file_type();
        let found = if kind.is_dir() {
            Found::Dir
        } else if kind.is_file() {
            Found::File {
                len: meta.len(),
                ino: meta.ino(),
            }
        } else if kind.is_symlink() {
            let at = join(root, &path);
            let target = fs::read_link(&at)
                .map_err(|e| Error::io(format!("cannot read link {}", at.display()), e))?;
            Found::Symlink(target.into_os_string().into_vec())
        } else {
            let what = if kind.is_fifo() {
                "a FIFO"
            } else if kind.is_socket() {
                "a socket"
            } else if kind.is_char_device() {
                "a character device"
            } else if kind.is_block_device() {
                "a block device"
            } else {
                "of an unknown kind"
            };
            return Err(Error::SpecialFile {
                path: shown(&join(root, &path).into_os_string().into_vec()),
                what,
            });
        };
        here.push(Walked {
            path,
            found,
            mode: meta.mode() & 0o7777,
            mtime: mtime_of(&meta),
        });
    }
    Ok(here)
}

/// `rel/name` (`name` alone at the root).
fn child(rel: &[u8], name: &OsStr) -> Vec<u8> {
    let mut path = Vec::with_capacity(rel.len() + 1 + name.len());
    if !rel.is_empty() {
        path.extend_from_slice(rel);
        path.push(b'/');
    }
    path.extend_from_slice(name.as_bytes());
    path
}

/// `root/rel` on the filesystem.
pub(crate) fn join(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}

/// A file's modification time: seconds since the epoch and nanoseconds.
pub(crate) fn mtime_of(meta: &Metadata) -> (i64, u32) {
    (meta.mtime(), meta.mtime_nsec() as u32)
}

/// The first regular file of `entries` (a walk's, sorted by path) whose stored name, its path
/// and `suffix`, is the path of a directory of `entries` (a file `x` beside a directory
/// `x.pcr`), and that directory: the two cannot both be in the output under names kept. A link
/// is stored in the manifest alone, and a file's stored name ends in the suffix, so no other
/// entry clashes.
pub(crate) fn stored_over_dir<'w>(
    entries: &'w [Walked],
    suffix: &str,
) -> Option<(&'w [u8], &'w [u8])> {
    entries
        .iter()
        .filter(|w| w.found == Found::Dir)
        .find_map(|dir| {
            let name = dir.path.strip_suffix(suffix.as_bytes())?;
            let at = entries.binary_search_by(|w| w.path[..].cmp(name)).ok()?;
            matches!(entries[at].found, Found::File { .. }).then_some((name, &dir.path[..]))
        })
}

/// A finished walk of a tree's input: every entry, the root first, sorted by path. What
/// [`Prepared::plan`](super::Prepared::plan) plans a tree's encryption from: walked here
/// ([`Walk::here`]), or merged from the parts other processes walked ([`WalkTop::finish`]).
pub struct Walk {
    pub(crate) root: PathBuf,
    pub(crate) entries: Vec<Walked>,
}

impl std::fmt::Debug for Walk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walk")
            .field("root", &self.root)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl Walk {
    /// The tree under `root` walked in this process, on the caller's pool.
    pub fn here(root: &Path) -> Result<Walk> {
        Ok(Walk {
            root: root.to_path_buf(),
            entries: walk(root)?,
        })
    }

    /// The tree a front end plugs in (a prefix in object storage), as it lists itself: every
    /// path checked as a local walk's are (no `..`, no empty part), the root and every file's
    /// parent directories listed, no path twice.
    pub fn of(input: &dyn super::PlainInput) -> Result<Walk> {
        let mut entries: Vec<Walked> = input
            .walk()?
            .into_iter()
            .map(|e| Walked {
                found: match e.len {
                    Some(len) => Found::File { len, ino: 0 },
                    None => Found::Dir,
                },
                path: e.path,
                mode: e.mode & 0o7777,
                mtime: e.mtime,
            })
            .collect();
        entries.par_sort_unstable_by(|a, b| a.path.cmp(&b.path));
        let bad = |path: &[u8], why: &str| Err(Error::Tree(format!("{} {why}", input.shown(path))));
        if entries
            .first()
            .is_none_or(|w| !w.path.is_empty() || w.found != Found::Dir)
        {
            return bad(b"", "is not listed as a tree's top");
        }
        let mut dirs = std::collections::HashSet::new();
        for (at, w) in entries.iter().enumerate() {
            if at > 0 {
                if let Some(why) = fault(&w.path) {
                    return bad(&w.path, why);
                }
                if entries[at - 1].path == w.path {
                    return bad(&w.path, "is listed twice");
                }
                if !dirs.contains(super::path::parent(&w.path)) {
                    return bad(&w.path, "is in a directory the listing lacks");
                }
            }
            if w.found == Found::Dir {
                dirs.insert(&w.path[..]);
            }
        }
        Ok(Walk {
            root: input.root().to_path_buf(),
            entries,
        })
    }

    /// How many entries it holds (the root, directories, files and links).
    pub fn entries(&self) -> usize {
        self.entries.len()
    }
}

/// The top of a tree listed by the coordinator of a walk in parts (see the
/// [module](self)): its entries so far, the directories still to walk cut into walk tasks,
/// and the parts that have come back.
pub struct WalkTop {
    root: PathBuf,
    entries: Vec<Walked>,
    /// The directories left to walk, sorted by path: none is inside another.
    pending: Vec<Vec<u8>>,
    /// The walk tasks: runs of `pending`, in order, none empty.
    tasks: Vec<Range<usize>>,
    /// By pending directory: its entries, or the refusal its walk met, once its part is back.
    parts: Vec<Option<Result<Vec<Walked>>>>,
    /// The directories listed here.
    listed: usize,
}

impl std::fmt::Debug for WalkTop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkTop")
            .field("listed", &self.listed)
            .field("pending", &self.pending.len())
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

/// Lists the top of the tree under `root` breadth-first in the caller's pool, a level at a
/// time (the root's entries, then its subdirectories' at once, and so on), until at least
/// `dirs` directories are pending or the tree is done (a small tree is walked here whole,
/// and has no walk task). A level's listing may leave more than `dirs` pending: every
/// subdirectory of the directories listed last. The pending directories are cut into at most
/// `tasks` walk tasks (at least one each), consecutive runs whose counts differ by one at
/// most. Refuses what [`Walk::here`] refuses at the top, in its words.
pub fn walk_top(root: &Path, dirs: usize, tasks: usize) -> Result<WalkTop> {
    let mut entries = vec![top(root)?];
    let mut level: Vec<Vec<u8>> = vec![Vec::new()];
    let mut listed = 0;
    loop {
        let below: Vec<Vec<Walked>> = level
            .par_iter()
            .map(|rel| list(root, rel))
            .collect::<Result<_>>()?;
        listed += level.len();
        level = below
            .iter()
            .flatten()
            .filter(|w| w.found == Found::Dir)
            .map(|w| w.path.clone())
            .collect();
        entries.extend(below.into_iter().flatten());
        if level.is_empty() || level.len() >= dirs {
            break;
        }
    }
    level.sort_unstable();
    Ok(WalkTop {
        root: root.to_path_buf(),
        entries,
        parts: level.iter().map(|_| None).collect(),
        tasks: runs(level.len(), tasks),
        pending: level,
        listed,
    })
}

/// `0..count` cut into `tasks` consecutive runs (fewer when `count` is smaller, none when it
/// is 0), the first `count % tasks` one longer than the others.
fn runs(count: usize, tasks: usize) -> Vec<Range<usize>> {
    let tasks = tasks.clamp(1, count.max(1));
    let (each, longer) = (count / tasks, count % tasks);
    let mut start = 0;
    (0..tasks)
        .map(|t| {
            let end = start + each + usize::from(t < longer);
            let run = start..end;
            start = end;
            run
        })
        .filter(|run| !run.is_empty())
        .collect()
}

impl WalkTop {
    /// How many walk tasks there are.
    pub fn tasks(&self) -> usize {
        self.tasks.len()
    }

    /// How many directories are left to walk, in all the walk tasks.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// How many directories were listed here (the root, and the levels below it listed
    /// before the rest was cut into tasks).
    pub fn listed(&self) -> usize {
        self.listed
    }

    /// Walk task `i`'s bytes (the root and the task's directories, for [`walk_task`] in any
    /// process).
    pub fn task(&self, i: usize) -> Vec<u8> {
        let dirs = &self.pending[self.tasks[i].clone()];
        let mut out = WALK_TASK_MAGIC.to_vec();
        put_bytes(&mut out, self.root.as_os_str().as_bytes());
        out.extend_from_slice(&(dirs.len() as u64).to_le_bytes());
        for dir in dirs {
            put_bytes(&mut out, dir);
        }
        out
    }

    /// Adds walk task `i`'s part, as [`walk_task`] returned it. Returns how many directories
    /// its walk listed; bytes that are not the part of that task's directories, in order, are
    /// refused (the caller may then call [`WalkTop::lost`]).
    pub fn add(&mut self, i: usize, bytes: &[u8]) -> Result<usize> {
        let parts = WalkPart::many_from_bytes(bytes)?;
        let run = self.tasks.get(i).cloned().unwrap_or_default();
        let dirs = &self.pending[run.clone()];
        if run.is_empty()
            || parts.len() != dirs.len()
            || parts.iter().zip(dirs).any(|(p, d)| &p.dir != d)
        {
            return Err(Error::Request(format!(
                "a walk part of {} is not the part of walk task {i}",
                parts
                    .first()
                    .map_or_else(|| "no directory".into(), |p| shown(&p.dir))
            )));
        }
        let listed = parts.iter().map(WalkPart::listed).sum();
        for (at, part) in run.zip(parts) {
            self.parts[at] = Some(part.found);
        }
        Ok(listed)
    }

    /// Walk task `i` came back with nothing readable (its process failed): the walk fails,
    /// naming its first directory and `why`.
    pub fn lost(&mut self, i: usize, why: &str) {
        for at in self.tasks[i].clone() {
            let dir = join(&self.root, &self.pending[at]);
            self.parts[at] = Some(Err(Error::Tree(format!(
                "cannot walk directory {}: {why}",
                dir.display()
            ))));
        }
    }

    /// The finished walk: the top's entries and every part's, sorted by path. The first
    /// refusal a part met (by its directory's path) is the walk's, in the words a walk in one
    /// process gives; a task that never came back fails naming its directory.
    pub fn finish(self) -> Result<Walk> {
        let mut entries = self.entries;
        for (dir, part) in self.pending.iter().zip(self.parts) {
            match part {
                Some(found) => entries.extend(found?),
                None => {
                    return Err(Error::Tree(format!(
                        "cannot walk directory {}: its walk task was never run",
                        join(&self.root, dir).display()
                    )));
                }
            }
        }
        // No two parts share an entry, nor a part the top's: each part holds only paths
        // strictly under its directory, and no pending directory is inside another.
        entries.par_sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok(Walk {
            root: self.root,
            entries,
        })
    }
}

/// Runs a walk task from its bytes ([`WalkTop::task`]) in the caller's pool: the subtree
/// under each of its directories walked as [`Walk::here`] walks it (the directories in
/// parallel), calling `tick` once per directory listed. Returns the part's bytes for
/// [`WalkTop::add`]: for each directory, its subtree's entries, or the refusal the walk met
/// there (a special file, a directory that cannot be listed), carried in the words and kind a
/// walk in one process gives. Bytes that are not a walk task are refused.
pub fn walk_task(bytes: &[u8], tick: &(dyn Fn() + Sync)) -> Result<Vec<u8>> {
    let mut r = Reader::new(bytes, WALK_TASK_MAGIC, "a tree's walk task")?;
    let root = PathBuf::from(std::ffi::OsString::from_vec(r.bytes()?.to_vec()));
    // Each directory takes its length's 8 bytes and one at least.
    let count = r.u64()?;
    if count == 0 || count > (r.rest.len() / 9) as u64 {
        return Err(r.bad());
    }
    let dirs: Vec<Vec<u8>> = (0..count)
        .map(|_| r.bytes().map(<[u8]>::to_vec))
        .collect::<Result<_>>()?;
    r.end()?;
    if dirs
        .iter()
        .any(|dir| dir.is_empty() || fault(dir).is_some())
    {
        return Err(r.bad());
    }
    let parts: Vec<WalkPart> = dirs
        .into_par_iter()
        .map(|dir| {
            let found = walk_dir(&root, &dir, tick);
            WalkPart { dir, found }
        })
        .collect();
    Ok(WalkPart::many_to_bytes(&parts))
}

const WALK_TASK_MAGIC: &[u8] = b"PARACRYPT-TREE-WALK\x02";
const WALK_PART_MAGIC: &[u8] = b"PARACRYPT-TREE-PART\x02";

/// The fewest bytes a directory's part takes in a walk task's part: its directory (a length
/// and one byte) and its kind.
const MIN_PART: usize = 8 + 1 + 1;

/// The fewest bytes an entry of a part takes (an empty path is refused): its count is
/// capped by what is left, so that a count read costs no more than the bytes that came.
const MIN_ENTRY: usize = 8 + 1 + 1 + 4 + 8 + 4;

/// What a special file is, in the words [`Error::SpecialFile`] carries, by its number in a
/// part.
const SPECIAL: [&str; 5] = [
    "a FIFO",
    "a socket",
    "a character device",
    "a block device",
    "of an unknown kind",
];

/// One directory's result in a walk task's part: the directory, and the entries under it or
/// the refusal its walk met. It holds the subtree's whole listing, as a walk in one process
/// does: besides each entry's path and a link's target, about 40 bytes per entry as bytes and
/// 80 in memory.
#[derive(Debug)]
pub(crate) struct WalkPart {
    pub dir: Vec<u8>,
    pub found: Result<Vec<Walked>>,
}

impl WalkPart {
    /// How many directories its walk listed: its own and every one under it.
    fn listed(&self) -> usize {
        match &self.found {
            Ok(entries) => 1 + entries.iter().filter(|w| w.found == Found::Dir).count(),
            Err(_) => 0,
        }
    }

    /// A walk task's part: `parts`, one per directory of the task, for the coordinator.
    pub fn many_to_bytes(parts: &[WalkPart]) -> Vec<u8> {
        let mut out = WALK_PART_MAGIC.to_vec();
        out.extend_from_slice(&(parts.len() as u64).to_le_bytes());
        for part in parts {
            part.put(&mut out);
        }
        out
    }

    /// The parts of [`WalkPart::many_to_bytes`]'s bytes, each read as
    /// [`WalkPart::read`] reads it; their count is capped by what is left.
    pub fn many_from_bytes(bytes: &[u8]) -> Result<Vec<WalkPart>> {
        let mut r = Reader::new(bytes, WALK_PART_MAGIC, "a tree's walk part")?;
        let count = r.u64()?;
        if count > (r.rest.len() / MIN_PART) as u64 {
            return Err(r.bad());
        }
        let parts = (0..count)
            .map(|_| WalkPart::read(&mut r))
            .collect::<Result<_>>()?;
        r.end()?;
        Ok(parts)
    }

    /// This directory's part appended to `out`.
    fn put(&self, out: &mut Vec<u8>) {
        put_bytes(out, &self.dir);
        match &self.found {
            Ok(entries) => {
                out.push(0);
                out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
                for w in entries {
                    put_bytes(out, &w.path);
                    match &w.found {
                        Found::Dir => out.push(0),
                        Found::File { len, ino } => {
                            out.push(1);
                            out.extend_from_slice(&len.to_le_bytes());
                            out.extend_from_slice(&ino.to_le_bytes());
                        }
                        Found::Symlink(target) => {
                            out.push(2);
                            put_bytes(out, target);
                        }
                    }
                    out.extend_from_slice(&w.mode.to_le_bytes());
                    out.extend_from_slice(&w.mtime.0.to_le_bytes());
                    out.extend_from_slice(&w.mtime.1.to_le_bytes());
                }
            }
            // A walk's refusals, each with what makes its words and kind again.
            Err(Error::SpecialFile { path, what }) => {
                out.push(1);
                put_bytes(out, path.as_bytes());
                let at = SPECIAL.iter().position(|s| s == what).unwrap_or(4);
                out.push(at as u8);
            }
            Err(Error::Io { context, source }) => {
                out.push(2);
                put_bytes(out, context.as_bytes());
                match source.raw_os_error() {
                    Some(code) => {
                        out.push(0);
                        out.extend_from_slice(&code.to_le_bytes());
                    }
                    None => {
                        out.push(1);
                        put_bytes(out, source.to_string().as_bytes());
                    }
                }
            }
            Err(other) => {
                out.push(3);
                put_bytes(out, other.to_string().as_bytes());
            }
        }
    }

    /// A directory's part read from `r`. Refused: a directory that is not a path in a tree,
    /// an entry whose path is not strictly under it, a link's target longer than a path, any
    /// length or count past what is left.
    fn read(r: &mut Reader) -> Result<WalkPart> {
        let dir = r.bytes()?.to_vec();
        if dir.is_empty() || fault(&dir).is_some() {
            return Err(r.bad());
        }
        let text = |r: &mut Reader| -> Result<String> {
            Ok(String::from_utf8_lossy(r.bytes()?).into_owned())
        };
        let found = match r.u8()? {
            0 => {
                let count = r.u64()?;
                if count > (r.rest.len() / MIN_ENTRY) as u64 {
                    return Err(r.bad());
                }
                let mut entries = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    let path = r.bytes()?.to_vec();
                    let under = path.len() > dir.len() + 1
                        && path.starts_with(&dir)
                        && path[dir.len()] == b'/';
                    if !under || fault(&path).is_some() {
                        return Err(r.bad());
                    }
                    let found = match r.u8()? {
                        0 => Found::Dir,
                        1 => Found::File {
                            len: r.u64()?,
                            ino: r.u64()?,
                        },
                        2 => {
                            let target = r.bytes()?;
                            if target.len() > MAX_PATH {
                                return Err(r.bad());
                            }
                            Found::Symlink(target.to_vec())
                        }
                        _ => return Err(r.bad()),
                    };
                    entries.push(Walked {
                        path,
                        found,
                        mode: r.u32()?,
                        mtime: (r.u64()? as i64, r.u32()?),
                    });
                }
                Ok(entries)
            }
            1 => {
                let path = text(r)?;
                let what = *SPECIAL.get(usize::from(r.u8()?)).ok_or_else(|| r.bad())?;
                Err(Error::SpecialFile { path, what })
            }
            2 => {
                let context = text(r)?;
                let source = match r.u8()? {
                    0 => std::io::Error::from_raw_os_error(r.u32()? as i32),
                    1 => std::io::Error::other(text(r)?),
                    _ => return Err(r.bad()),
                };
                Err(Error::Io { context, source })
            }
            3 => Err(Error::Tree(text(r)?)),
            _ => return Err(r.bad()),
        };
        Ok(WalkPart { dir, found })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plaintext tree plugged in, listing what it is given.
    struct Listed(Vec<super::super::PlainEntry>);

    impl super::super::PlainInput for Listed {
        fn root(&self) -> &Path {
            Path::new("s3://b/p/")
        }
        fn shown(&self, rel: &[u8]) -> String {
            format!("s3://b/p/{}", String::from_utf8_lossy(rel))
        }
        fn walk(&self) -> Result<Vec<super::super::PlainEntry>> {
            Ok(self.0.clone())
        }
        fn open(&self, _: &[u8]) -> std::io::Result<Box<dyn super::super::InputFile + '_>> {
            Err(std::io::ErrorKind::NotFound.into())
        }
    }

    #[test]
    fn a_plugged_in_listing_is_checked_as_a_walk() {
        let entry = |path: &str, len: Option<u64>| super::super::PlainEntry {
            path: path.as_bytes().to_vec(),
            len,
            mode: 0o644,
            mtime: (1, 2),
        };
        let walk = Walk::of(&Listed(vec![
            entry("d/f", Some(3)),
            entry("", None),
            entry("d", None),
        ]))
        .unwrap();
        let paths: Vec<&[u8]> = walk.entries.iter().map(|w| &w.path[..]).collect();
        assert_eq!(paths, [&b""[..], b"d", b"d/f"]);
        assert_eq!(walk.entries[2].found, Found::File { len: 3, ino: 0 });
        for (entries, why) in [
            (
                vec![entry("f", Some(1))],
                "s3://b/p/ is not listed as a tree's top",
            ),
            (
                vec![entry("", None), entry("d/f", Some(1))],
                "s3://b/p/d/f is in a directory the listing lacks",
            ),
            (
                vec![entry("", None), entry("f", Some(1)), entry("f", None)],
                "s3://b/p/f is listed twice",
            ),
            (
                vec![entry("", None), entry("../f", Some(1))],
                "s3://b/p/../f has a `.` or `..` component",
            ),
        ] {
            let refused = Walk::of(&Listed(entries)).unwrap_err().to_string();
            assert!(refused.contains(why), "{refused}");
        }
    }

    #[test]
    fn a_tree_is_listed_sorted_with_links_recorded_and_special_files_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("a/b/c"), b"ccc").unwrap();
        fs::write(root.join("a-b"), b"").unwrap();
        std::os::unix::fs::symlink("a/b/c", root.join("link")).unwrap();
        std::os::unix::fs::symlink("/nowhere", root.join("a/dangling")).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let walked = pool.install(|| walk(root)).unwrap();
        let paths: Vec<&[u8]> = walked.iter().map(|w| &w.path[..]).collect();
        assert_eq!(
            paths,
            [
                &b""[..],
                b"a",
                b"a-b",
                b"a/b",
                b"a/b/c",
                b"a/dangling",
                b"link"
            ]
        );
        assert_eq!(
            walked[4].found,
            Found::File {
                len: 3,
                ino: fs::metadata(root.join("a/b/c")).unwrap().ino()
            }
        );
        assert_eq!(walked[5].found, Found::Symlink(b"/nowhere".to_vec()));

        let fifo = root.join("a/b/pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let refused = walk(root).unwrap_err();
            assert!(matches!(refused, Error::SpecialFile { what: "a FIFO", .. }));
            assert!(refused.to_string().contains("a/b/pipe"), "{refused}");
        }
        assert!(matches!(walk(&root.join("a-b")), Err(Error::Tree(_))));
    }

    /// A tree of `dirs` directories, each with two subdirectories, a few files and a link.
    fn wide_tree(root: &Path, dirs: usize) {
        for d in 0..dirs {
            let sub = root.join(format!("d{d}/e"));
            fs::create_dir_all(&sub).unwrap();
            fs::create_dir(root.join(format!("d{d}/h"))).unwrap();
            fs::write(sub.join("f"), vec![1; d]).unwrap();
            fs::write(root.join(format!("d{d}/g")), b"g").unwrap();
            std::os::unix::fs::symlink("e/f", root.join(format!("d{d}/link"))).unwrap();
        }
        fs::write(root.join("top"), b"top").unwrap();
    }

    /// Runs every walk task of `top` as another process would (from its bytes) and merges.
    fn run_parts(mut top: WalkTop) -> Result<Walk> {
        for i in 0..top.tasks() {
            let part = walk_task(&top.task(i), &|| {}).unwrap();
            top.add(i, &part).unwrap();
        }
        top.finish()
    }

    #[test]
    fn a_walk_in_parts_is_the_walk_in_one_process_and_a_small_tree_has_no_task() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        wide_tree(root, 12);
        let whole = walk(root).unwrap();
        // The root listed here, its 12 directories left as 5 tasks: 3, 3, 2, 2 and 2 of them.
        let top = walk_top(root, 8, 5).unwrap();
        assert_eq!((top.listed(), top.pending(), top.tasks()), (1, 12, 5));
        assert_eq!(
            top.tasks,
            [0..3, 3..6, 6..8, 8..10, 10..12],
            "consecutive runs of near-equal count"
        );
        assert_eq!(run_parts(top).unwrap().entries, whole);
        // No more tasks than directories: one each.
        let top = walk_top(root, 8, 100).unwrap();
        assert_eq!((top.pending(), top.tasks()), (12, 12));
        assert_eq!(run_parts(top).unwrap().entries, whole);
        // Asked for more directories than a level holds: the next level is listed too; one
        // task may hold them all.
        let top = walk_top(root, 13, 1).unwrap();
        assert_eq!((top.listed(), top.pending(), top.tasks()), (13, 24, 1));
        assert_eq!(run_parts(top).unwrap().entries, whole);
        // A small tree is walked whole at the top.
        let top = walk_top(root, 1000, 8).unwrap();
        assert_eq!((top.listed(), top.tasks()), (37, 0));
        assert_eq!(top.finish().unwrap().entries, whole);
        assert!(matches!(
            walk_top(&root.join("top"), 8, 8),
            Err(Error::Tree(_))
        ));
        assert!(runs(0, 4).is_empty());
        assert_eq!(runs(7, 0).len(), 1, "no task asked for is one task");
        assert_eq!(runs(7, 0)[0], 0..7);
    }

    #[test]
    fn a_walk_part_round_trips_its_entries_and_refusals_in_the_same_words() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        wide_tree(root, 3);
        let parts = [b"d0", b"d1"].map(|dir| WalkPart {
            dir: dir.to_vec(),
            found: walk_dir(root, dir, &|| {}),
        });
        let back = WalkPart::many_from_bytes(&WalkPart::many_to_bytes(&parts)).unwrap();
        assert_eq!(back.len(), 2);
        let [part0, part] = parts;
        let mut back = back.into_iter();
        let (back0, back) = (back.next().unwrap(), back.next().unwrap());
        assert_eq!((&back0.dir[..], &back.dir[..]), (&b"d0"[..], &b"d1"[..]));
        assert_eq!(back0.found.unwrap(), part0.found.unwrap());
        let (sent, got) = (part.found.unwrap(), back.found.unwrap());
        assert_eq!(got.len(), 5);
        assert_eq!(got, sent);
        assert!(
            got.iter()
                .any(|w| w.found == Found::Symlink(b"e/f".to_vec()))
        );

        let refusals = [
            Error::SpecialFile {
                path: "/in/d1/pipe".into(),
                what: "a FIFO",
            },
            Error::io(
                "cannot list directory /in/d1/e",
                std::io::Error::from_raw_os_error(13),
            ),
            Error::io("cannot read /in/d1/x", std::io::Error::other("gone")),
        ];
        for refusal in refusals {
            let words = refusal.to_string();
            let kind = refusal.kind();
            let part = WalkPart {
                dir: b"d1".to_vec(),
                found: Err(refusal),
            };
            let bytes = WalkPart::many_to_bytes(&[part]);
            let back = WalkPart::many_from_bytes(&bytes).unwrap().remove(0).found;
            let back = back.unwrap_err();
            assert_eq!((back.to_string(), back.kind()), (words, kind));
        }
    }

    #[test]
    fn a_walk_part_outside_its_directory_or_past_its_bytes_is_refused() {
        let entry = |path: &[u8]| Walked {
            path: path.to_vec(),
            found: Found::File { len: 1, ino: 2 },
            mode: 0o644,
            mtime: (0, 0),
        };
        let one = |dir: &[u8], paths: &[&[u8]]| WalkPart {
            dir: dir.to_vec(),
            found: Ok(paths.iter().map(|p| entry(p)).collect()),
        };
        // A task's part of one directory, then `paths` given for the second of two.
        let part = |dir: &[u8], paths: &[&[u8]]| WalkPart::many_to_bytes(&[one(dir, paths)]);
        let second = |dir: &[u8], paths: &[&[u8]]| {
            WalkPart::many_to_bytes(&[one(b"z", &[b"z/y"]), one(dir, paths)])
        };
        let refused = |bytes: &[u8]| {
            let err = WalkPart::many_from_bytes(bytes).unwrap_err();
            assert!(err.to_string().contains("not a tree's walk part"), "{err}");
        };
        assert!(WalkPart::many_from_bytes(&part(b"a/b", &[b"a/b/c", b"a/b/c/d"])).is_ok());
        assert!(WalkPart::many_from_bytes(&second(b"a/b", &[b"a/b/c"])).is_ok());
        for (dir, path) in [
            (&b"a"[..], &b"b"[..]),
            (b"a", b"a"),
            (b"a", b"ab/c"),
            (b"a", b"a/../../etc/passwd"),
            (b"a", b"/a/b"),
            (b"a", b"a//b"),
            (b"../a", b"../a/b"),
            (b"/etc", b"/etc/passwd"),
            (b"", b"a"),
        ] {
            refused(&part(dir, &[path]));
            refused(&second(dir, &[path]));
        }
        // A path under the task's other directory is not under this one.
        refused(&second(b"a", &[b"z/x"]));
        // A count past what is left is refused before anything is allocated for it; so is a
        // length past the end, or a link's target longer than a path.
        let good = part(b"a", &[b"a/b"]);
        let count_at = WALK_PART_MAGIC.len() + 8 + 8 + 1 + 1;
        for count_at in [WALK_PART_MAGIC.len(), count_at] {
            let mut huge = good.clone();
            huge[count_at..count_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            refused(&huge);
        }
        refused(&good[..good.len() - 1]);
        let long_link = WalkPart {
            dir: b"a".to_vec(),
            found: Ok(vec![Walked {
                found: Found::Symlink(vec![b'x'; MAX_PATH + 1]),
                ..entry(b"a/l")
            }]),
        };
        refused(&WalkPart::many_to_bytes(&[long_link]));
        // A walk task for a directory outside the tree is refused, and so is a part of
        // another task's directory.
        let dir = tempfile::tempdir().unwrap();
        wide_tree(dir.path(), 4);
        let mut top = walk_top(dir.path(), 2, 2).unwrap();
        assert_eq!((top.pending(), top.tasks()), (4, 2));
        let task = |dirs: &[&str], count: u64| {
            let mut task = WALK_TASK_MAGIC.to_vec();
            put_bytes(&mut task, dir.path().as_os_str().as_bytes());
            task.extend_from_slice(&count.to_le_bytes());
            for d in dirs {
                put_bytes(&mut task, d.as_bytes());
            }
            task
        };
        assert!(walk_task(&task(&["d0"], 1), &|| {}).is_ok());
        assert!(walk_task(&task(&["d0", "../.."], 2), &|| {}).is_err());
        assert!(walk_task(&task(&[], 0), &|| {}).is_err());
        assert!(walk_task(&task(&["d0"], u64::MAX), &|| {}).is_err());
        let other = walk_task(&top.task(1), &|| {}).unwrap();
        assert!(top.add(0, &other).is_err());
        // A part of some of the task's directories only, or of them out of order.
        let [d0, d1] = [b"d0", b"d1"].map(|d| WalkPart {
            dir: d.to_vec(),
            found: walk_dir(dir.path(), d, &|| {}),
        });
        assert!(top.add(0, &WalkPart::many_to_bytes(&[d1])).is_err());
        let d1 = WalkPart {
            dir: b"d1".to_vec(),
            found: walk_dir(dir.path(), b"d1", &|| {}),
        };
        assert!(top.add(0, &WalkPart::many_to_bytes(&[d1, d0])).is_err());
        top.lost(0, "its rank died");
        assert_eq!(top.add(1, &other).unwrap(), 6, "d2, d3 and their e and h");
        let lost = top.finish().unwrap_err().to_string();
        assert!(lost.contains("d0: its rank died"), "{lost}");
    }
}
