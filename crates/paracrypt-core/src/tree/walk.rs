//! Walking a directory tree: every directory, regular file and symbolic link under a root,
//! with the metadata the manifest keeps, on every pool thread.
//!
//! Symbolic links are recorded (their target), never followed; anything else (a FIFO, a socket,
//! a device) is refused by name before any work starts. Each directory is listed once and its
//! handle closed before its subdirectories are walked, so a walk holds at most one directory
//! open per pool thread, whatever the tree's depth or width.

use std::ffi::OsStr;
use std::fs::{self, Metadata};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::path::shown;
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
#[derive(Clone, Debug)]
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
    let meta =
        fs::metadata(root).map_err(|e| Error::io(format!("cannot read {}", root.display()), e))?;
    if !meta.is_dir() {
        return Err(Error::Tree(format!(
            "{} is not a directory (a tree's input is a directory)",
            root.display()
        )));
    }
    let top = Walked {
        path: Vec::new(),
        found: Found::Dir,
        mode: meta.mode() & 0o7777,
        mtime: mtime_of(&meta),
    };
    let mut entries = vec![top];
    entries.extend(walk_dir(root, &[])?);
    entries.par_sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(entries)
}

/// The entries under the directory `rel` of `root` (not `rel` itself), its subdirectories
/// walked in parallel.
fn walk_dir(root: &Path, rel: &[u8]) -> Result<Vec<Walked>> {
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
    let below: Vec<Vec<Walked>> = here
        .par_iter()
        .filter(|entry| entry.found == Found::Dir)
        .map(|entry| walk_dir(root, &entry.path))
        .collect::<Result<_>>()?;
    here.extend(below.into_iter().flatten());
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
