//! Checking an encrypted tree against its manifest without writing anything: every file the
//! manifest lists is present, is the encryption the manifest names (its header's hash) and
//! decrypts, every chunk authenticated, to the length and BLAKE3 tree-hash root the manifest
//! lists; and, for the whole tree, nothing is stored that the manifest does not list. Each
//! difference is one [`Change`]: a file added, removed, renamed (its encryption found under
//! another name) or changed.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;

use super::MANIFEST;
use super::io::{InputFile, Stored, TreeInput};
use super::manifest::{EntryKind, FileEntry, Manifest, TreeFormat};
use super::open::{Open, file_request, local, read_manifest_from, signer_of};
use super::path::{self, shown};
use super::schedule;
use super::walk::join;
use crate::error::{Error, Result};
use crate::recipe::Runner;
use crate::request::{Request, Signer};
use crate::sign::tree::HASH_LEN;

/// One difference between an encrypted tree and its manifest.
#[derive(Debug)]
pub enum Change {
    /// Something stored in the encrypted tree that the manifest does not list (its path in
    /// the encrypted tree, as stored).
    Added(Vec<u8>),
    /// A file of the manifest whose encrypted file is missing (its path in the tree).
    Removed(Vec<u8>),
    /// A file of the manifest whose encryption is stored under another name: `path` in the
    /// tree, `now_at` in the encrypted tree.
    Renamed {
        /// The file's path in the tree.
        path: Vec<u8>,
        /// Where its encrypted file is now, in the encrypted tree.
        now_at: Vec<u8>,
    },
    /// A file of the manifest whose encrypted file is not the one listed, or does not decrypt
    /// to the contents listed: why.
    Changed {
        /// The file's path in the tree.
        path: Vec<u8>,
        /// What differs (never naming the path again).
        why: Error,
    },
}

impl Change {
    /// Its stable name, as front ends write it in JSON (`docs/guide/trees.md`): `added`,
    /// `missing` (a file whose encrypted file is missing), `renamed` or `changed`.
    pub fn name(&self) -> &'static str {
        match self {
            Change::Added(_) => "added",
            Change::Removed(_) => "missing",
            Change::Renamed { .. } => "renamed",
            Change::Changed { .. } => "changed",
        }
    }

    /// The path it is about: the tree's path, or the stored path for an addition.
    pub fn path(&self) -> &[u8] {
        self.key()
    }

    /// The path the change is sorted by: the tree's path, or the stored path for an addition.
    fn key(&self) -> &[u8] {
        match self {
            Change::Added(path)
            | Change::Removed(path)
            | Change::Renamed { path, .. }
            | Change::Changed { path, .. } => path,
        }
    }
}

impl std::fmt::Display for Change {
    /// One line: `added: …`, `removed: …`, `renamed: …` or `changed: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Added(stored) => write!(
                f,
                "added: {} (in the encrypted tree, not in its manifest)",
                shown(stored)
            ),
            Change::Removed(path) => {
                write!(
                    f,
                    "removed: {} (its encrypted file is missing)",
                    shown(path)
                )
            }
            Change::Renamed { path, now_at } => write!(
                f,
                "renamed: {} (its encrypted file is now at {})",
                shown(path),
                shown(now_at)
            ),
            Change::Changed { path, why } => write!(
                f,
                "changed: {}: {}",
                shown(path),
                why.to_string().replace('\n', " ")
            ),
        }
    }
}

/// What [`verify`] found.
#[derive(Debug)]
pub struct Checked {
    /// The manifest, read and checked (its signature, and the signer required).
    pub manifest: Manifest,
    /// Every difference, sorted by path.
    pub changes: Vec<Change>,
    /// Files checked and found as listed.
    pub files: u64,
    /// Their paths in the tree, in the tree's order (a front end lists each: `verified …`).
    pub verified: Vec<Vec<u8>>,
    /// Their plaintext bytes.
    pub bytes: u64,
    /// Who signed the manifest (`required` when the caller asked for this signer).
    pub signer: Option<Signer>,
}

impl Checked {
    /// Whether every file checked is as the manifest lists it, nothing else is stored, and the
    /// manifest says the run that wrote it finished every file.
    pub fn is_intact(&self) -> bool {
        self.changes.is_empty() && self.manifest.complete
    }

    /// Why the tree is not intact, in words every front end says (`None` when it is):
    /// `3 differences from its manifest`, `the run that wrote it did not finish every file (it
    /// is incomplete)`, or both, joined by `; `.
    pub fn why_not_intact(&self) -> Option<String> {
        if self.is_intact() {
            return None;
        }
        let mut why = match self.changes.len() {
            0 => String::new(),
            1 => "1 difference from its manifest".to_string(),
            n => format!("{n} differences from its manifest"),
        };
        if !self.manifest.complete {
            if !why.is_empty() {
                why.push_str("; ");
            }
            why.push_str("the run that wrote it did not finish every file (it is incomplete)");
        }
        Some(why)
    }
}

/// Checks the encrypted tree at `encrypted` against its manifest with `request` (a decryption:
/// [`Request::decrypt`]; its required signer, if any, is checked against the manifest's
/// signature first), on every thread of the caller's pool, writing nothing.
///
/// With `only` empty, every file of the manifest is checked and the encrypted tree is listed
/// for what the manifest does not name; otherwise only the files at those paths of the tree
/// are checked (a path that is not a regular file of the manifest is refused). A file whose
/// encryption is found under another name is reported [`Change::Renamed`] rather than removed
/// and added; a file whose encrypted file holds another file's encryption (a copy, or a swap)
/// is [`Change::Changed`] naming that file.
pub fn verify(
    runner: &Runner,
    request: &Request,
    encrypted: &Path,
    only: &[Vec<u8>],
) -> Result<Checked> {
    verify_from(runner, request, &local(encrypted), only)
}

/// [`verify`] of the encrypted tree `input`, a [`TreeInput`] a front end plugs in (a prefix
/// in object storage).
pub fn verify_from(
    runner: &Runner,
    request: &Request,
    input: &dyn TreeInput,
    only: &[Vec<u8>],
) -> Result<Checked> {
    let manifest = read_manifest_from(runner, request, input)?;
    let files_request = file_request(request, &manifest)?;
    let files: Vec<(&[u8], &FileEntry)> = manifest
        .files()
        .map(|(entry, file)| (&entry.path[..], file))
        .collect();
    let selected: Vec<usize> = if only.is_empty() {
        (0..files.len()).collect()
    } else {
        only.iter()
            .map(|wanted| {
                files
                    .binary_search_by(|(path, _)| path.cmp(&&wanted[..]))
                    .map_err(|_| {
                        Error::Tree(format!(
                            "{}: not a regular file of the tree's manifest",
                            shown(wanted)
                        ))
                    })
            })
            .collect::<Result<_>>()?
    };

    // Each selected file: missing, its listed encryption, or something else.
    let found: Vec<Found> = selected
        .par_iter()
        .map(|&at| {
            let stored = manifest.stored(files[at].0);
            match input.open(&stored) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Found::Missing,
                // Anything else fails in the check below, which names it.
                Err(_) => Found::Listed,
                Ok(file) => {
                    match input_header_hash(&*file, files[at].1.header_len, manifest.format) {
                        Some(hash) if hash == files[at].1.header_hash => Found::Listed,
                        _ => Found::Other,
                    }
                }
            }
        })
        .collect();

    let mut changes = Vec::new();
    let mut explained: HashSet<usize> = HashSet::new();
    if only.is_empty() {
        let added = unlisted(input, &manifest)?;
        // Whose encryption each unexplained stored file holds: a file stored under a name the
        // manifest does not list that holds the encryption of a file missing from its own name
        // was renamed; a file of the manifest whose name holds another's encryption (a copy, a
        // swap) is changed, naming whose.
        let by_header: HashMap<[u8; HASH_LEN], usize> = files
            .iter()
            .enumerate()
            .map(|(at, (_, file))| (file.header_hash, at))
            .collect();
        // The header lengths to try: an armored file's is its whole length (one lookup by its
        // size); other formats have a few (one per kind of recipients): the most common 16, so
        // that a manifest of many lengths cannot make this quadratic.
        let armored = manifest.format == TreeFormat::ArmoredAge;
        let all_lens: HashSet<u32> = files.iter().map(|(_, f)| f.header_len).collect();
        let lens: Vec<u32> = if armored {
            Vec::new()
        } else {
            let mut counted: HashMap<u32, usize> = HashMap::new();
            for (_, file) in &files {
                *counted.entry(file.header_len).or_default() += 1;
            }
            let mut counted: Vec<(usize, u32)> =
                counted.into_iter().map(|(len, n)| (n, len)).collect();
            counted.sort_unstable_by(|a, b| b.cmp(a));
            counted.into_iter().take(16).map(|(_, len)| len).collect()
        };
        let lost: HashSet<usize> = selected
            .iter()
            .zip(&found)
            .filter(|(_, f)| **f == Found::Missing)
            .map(|(&at, _)| at)
            .collect();
        let mut candidates: Vec<(Vec<u8>, Option<usize>)> = added
            .iter()
            .filter(|(_, kind)| *kind == Stored::File)
            .map(|(stored, _)| (stored.clone(), None))
            .collect();
        candidates.extend(
            selected
                .iter()
                .zip(&found)
                .filter(|(_, f)| **f == Found::Other)
                .map(|(&at, _)| (manifest.stored(files[at].0), Some(at))),
        );
        let holds: Vec<Option<usize>> = candidates
            .par_iter()
            .map(|(stored, _)| {
                let file = input.open(stored).ok()?;
                let size = u32::try_from(file.len()).unwrap_or(u32::MAX);
                let whole = [size];
                let lens = if armored {
                    if !all_lens.contains(&size) {
                        return None;
                    }
                    &whole[..]
                } else {
                    &lens[..]
                };
                lens.iter().find_map(|&len| {
                    input_header_hash(&*file, len, manifest.format)
                        .and_then(|h| by_header.get(&h).copied())
                })
            })
            .collect();
        let mut renamed_to: HashSet<Vec<u8>> = HashSet::new();
        for ((stored, own), holds) in candidates.iter().zip(holds) {
            let Some(other) = holds.filter(|other| Some(*other) != *own) else {
                continue;
            };
            if lost.contains(&other) && !explained.contains(&other) {
                changes.push(Change::Renamed {
                    path: files[other].0.to_vec(),
                    now_at: stored.clone(),
                });
                explained.insert(other);
                renamed_to.insert(stored.clone());
            }
            if let Some(own) = own {
                changes.push(Change::Changed {
                    path: files[*own].0.to_vec(),
                    why: Error::TreeMismatch(format!(
                        "its encrypted file {} holds the encryption of {}",
                        shown(stored),
                        shown(files[other].0)
                    )),
                });
                explained.insert(*own);
            }
        }
        // A directory added is named once, not with everything under it (what it holds was
        // still searched for renamed files above).
        let added_dirs = dirs_of(&added);
        let shown_added: Vec<Vec<u8>> = added
            .iter()
            .filter(|(stored, _)| !renamed_to.contains(stored) && !under(&added_dirs, stored))
            .map(|(stored, _)| stored.clone())
            .collect();
        changes.extend(shown_added.into_iter().map(Change::Added));
    }
    for (&at, found) in selected.iter().zip(&found) {
        if *found == Found::Missing && !explained.contains(&at) {
            changes.push(Change::Removed(files[at].0.to_vec()));
            explained.insert(at);
        }
    }

    // The files left are decrypted into nothing, every chunk authenticated, and their length
    // and root compared with the manifest's (a file whose header is not the listed one fails
    // there too, before any key is used on it).
    let mut checking = manifest.clone();
    let keep: HashSet<&[u8]> = selected
        .iter()
        .filter(|at| !explained.contains(at))
        .map(|&at| files[at].0)
        .collect();
    checking.entries.retain(|e| match e.kind {
        EntryKind::File(_) => keep.contains(&e.path[..]),
        _ => true,
    });
    let work = Open::new(runner, &files_request, &checking, input, None);
    schedule::run(&work, &work.planned());
    let (good, bytes, failures) = work.checked();
    changes.extend(failures.into_iter().map(|(path, why)| Change::Changed {
        path,
        why: match why {
            Error::InTree { source, .. } => *source,
            why => why,
        },
    }));
    changes.sort_by(|a, b| a.key().cmp(b.key()));
    let signer = signer_of(&manifest, request);
    Ok(Checked {
        manifest,
        changes,
        files: good.len() as u64,
        verified: good,
        bytes,
        signer,
    })
}

/// What a selected file's name holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// Nothing.
    Missing,
    /// A file whose header is the one listed (or that could not be read: the check names why).
    Listed,
    /// A file whose header is not the one listed.
    Other,
}

/// The BLAKE3 hash of the first `len` bytes of `file`, as the manifest names an encryption (an
/// armored file: the whole file, which must then be `len` bytes); `None` when it is shorter.
pub(super) fn header_hash(file: &File, len: u32, format: TreeFormat) -> Option<[u8; HASH_LEN]> {
    let size = file.metadata().ok()?.len();
    hash_head(size, |buf, at| file.read_exact_at(buf, at), len, format)
}

/// [`header_hash`] of a file of a [`TreeInput`].
pub(super) fn input_header_hash(
    file: &dyn InputFile,
    len: u32,
    format: TreeFormat,
) -> Option<[u8; HASH_LEN]> {
    hash_head(
        file.len(),
        |buf, at| file.read_exact_at(buf, at),
        len,
        format,
    )
}

/// [`header_hash`] of a file of `size` bytes read by `read`.
fn hash_head(
    size: u64,
    read: impl Fn(&mut [u8], u64) -> std::io::Result<()>,
    len: u32,
    format: TreeFormat,
) -> Option<[u8; HASH_LEN]> {
    if size < u64::from(len) || (format == TreeFormat::ArmoredAge && size != u64::from(len)) {
        return None;
    }
    let mut hasher = blake3::Hasher::new();
    let mut at = 0u64;
    let mut buf = vec![0u8; (len as usize).min(1 << 16)];
    while at < u64::from(len) {
        let n = (u64::from(len) - at).min(buf.len() as u64) as usize;
        read(&mut buf[..n], at).ok()?;
        hasher.update(&buf[..n]);
        at += n as u64;
    }
    Some(*hasher.finalize().as_bytes())
}

/// Everything stored under `encrypted` that the manifest does not name (as [`Change::Added`]
/// names it: a directory once, not what it holds), by stored path in order: what a rekey does
/// not carry into the new tree.
pub(super) fn unlisted_once(
    encrypted: &dyn TreeInput,
    manifest: &Manifest,
) -> Result<Vec<Vec<u8>>> {
    let added = unlisted(encrypted, manifest)?;
    let dirs = dirs_of(&added);
    Ok(added
        .iter()
        .filter(|(stored, _)| !under(&dirs, stored))
        .map(|(stored, _)| stored.clone())
        .collect())
}

/// The directories of `found`.
fn dirs_of(found: &[(Vec<u8>, Stored)]) -> HashSet<&[u8]> {
    found
        .iter()
        .filter(|(_, kind)| *kind == Stored::Dir)
        .map(|(stored, _)| &stored[..])
        .collect()
}

/// Whether `stored` is inside one of `dirs`.
fn under(dirs: &HashSet<&[u8]>, stored: &[u8]) -> bool {
    let mut at = path::parent(stored);
    while !at.is_empty() {
        if dirs.contains(at) {
            return true;
        }
        at = path::parent(at);
    }
    false
}

/// Everything stored under `encrypted` that the manifest does not name, as `(stored path,
/// what it is)`: not the manifest itself, not a file the manifest lists at
/// its stored name, not a directory the tree's stored names need.
fn unlisted(input: &dyn TreeInput, manifest: &Manifest) -> Result<Vec<(Vec<u8>, Stored)>> {
    let mut expected: HashSet<Vec<u8>> = manifest
        .files()
        .map(|(entry, _)| manifest.stored(&entry.path))
        .collect();
    let dirs: Vec<Vec<u8>> = if manifest.hides_names() {
        expected
            .iter()
            .map(|stored| path::parent(stored).to_vec())
            .collect()
    } else {
        manifest
            .entries
            .iter()
            .filter(|e| e.kind == EntryKind::Dir)
            .map(|e| e.path.clone())
            .collect()
    };
    expected.extend(dirs);
    expected.insert(MANIFEST.as_bytes().to_vec());
    let mut found = input.list()?;
    found.retain(|(stored, _)| !expected.contains(stored));
    found.par_sort_unstable();
    Ok(found)
}

/// Every entry under the directory `rel` of `root`, as `(path, what it is)`, links not followed, subdirectories listed in parallel.
pub(super) fn list(root: &Path, rel: &[u8]) -> Result<Vec<(Vec<u8>, Stored)>> {
    let dir = join(root, rel);
    let cannot = |e| Error::io(format!("cannot list directory {}", dir.display()), e);
    let listed: Vec<std::fs::DirEntry> = std::fs::read_dir(&dir)
        .map_err(cannot)?
        .collect::<std::io::Result<_>>()
        .map_err(cannot)?;
    let mut here = Vec::with_capacity(listed.len());
    let mut dirs = Vec::new();
    for entry in listed {
        let name = entry.file_name();
        let path = if rel.is_empty() {
            name.as_bytes().to_vec()
        } else {
            [rel, b"/", name.as_bytes()].concat()
        };
        let kind = entry.file_type().map_err(cannot)?;
        if kind.is_dir() {
            dirs.push(path.clone());
        }
        let stored = if kind.is_file() {
            Stored::File
        } else if kind.is_dir() {
            Stored::Dir
        } else {
            Stored::Other
        };
        here.push((path, stored));
    }
    let below: Vec<Vec<(Vec<u8>, Stored)>> = dirs
        .par_iter()
        .map(|d| list(root, d))
        .collect::<Result<_>>()?;
    here.extend(below.into_iter().flatten());
    Ok(here)
}
