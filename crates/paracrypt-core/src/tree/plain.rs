//! Signing a plaintext tree, and checking a tree against such a signature: what a backup job
//! wants ("sign this dataset; later, check that nothing changed").
//!
//! [`sign`] walks a directory, hashes every file on the one schedule (the BLAKE3 tree hash of
//! [`crate::sign::tree`], in chunks of [`PLAIN_CHUNK`]) and returns a tree manifest of format
//! [`TreeFormat::Plain`], signed, written unencrypted beside the tree: every path, kind, mode,
//! time, size and root, no header (`docs/FORMAT.md`, *A plaintext tree's signature*).
//! [`verify_signed`] checks the signature, walks the tree again, hashes its files and names
//! every file added, removed, renamed or changed. Nothing hashed is written anywhere.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::chunks::{Plain, run_here};
use super::in_tree;
use super::io::{PlainInput, Plaintexts, Reading};
use super::manifest::{Entry, EntryKind, FileEntry, Keying, Manifest, TreeFormat};
use super::open::check_signer;
use super::out::open_no_follow;
use super::path::{self, shown};
use super::schedule::{self, FileWork, Planned};
use super::seal::now;
use super::walk::{Found, Walk, Walked, join, mtime_of, walk};
use crate::engine::{InputId, Job};
use crate::error::{Error, Result};
use crate::plan::ChunkSize;
use crate::provider::Provider;
use crate::recipe::Runner;
use crate::request::Signer;
use crate::sign::tree::{HASH_LEN, TreeHash, root};
use crate::sign::{SigningKey, VerifyingKey};

/// The chunk of a plaintext tree's hashes: 1 MiB, the container's default.
pub const PLAIN_CHUNK: u32 = 1 << 20;

/// A plaintext tree, signed: its manifest, and the bytes to write (the signature file).
#[derive(Debug)]
pub struct SignedTree {
    /// The manifest, as signed.
    pub manifest: Manifest,
    /// Its bytes: the signature file's contents.
    pub bytes: Vec<u8>,
}

/// Where the detached signature of the tree `tree` goes (`sign --recursive`, Python's
/// `sign_tree`): `sig` when given, else `DIR.psig` beside the tree (`DIR/` names DIR), and
/// never inside the tree it signs (`-` is standard output, nowhere). A prefix in object storage
/// (`prefix`: `tree` is its URL) has nothing beside it: its signature goes where `sig` says.
///
/// # Errors
/// [`Error::Request`] for a prefix without `sig`, or a signature inside the tree.
pub fn signature_path(tree: &Path, sig: Option<&Path>, prefix: bool) -> Result<PathBuf> {
    let inside = |sig: &Path| {
        Error::Request(format!(
            "the signature {} would be inside the tree {} it signs",
            sig.display(),
            tree.display()
        ))
    };
    if prefix {
        let Some(sig) = sig else {
            return Err(Error::Request(format!(
                "{}: a prefix's signature has no place beside it: name its file (-o SIG; \
                 Python: sig=)",
                tree.display()
            )));
        };
        let (tree, at) = (tree.to_string_lossy(), sig.to_string_lossy());
        if at.starts_with(&format!("{}/", tree.trim_end_matches('/'))) {
            return Err(inside(sig));
        }
        return Ok(sig.to_path_buf());
    }
    let dir = tree.components().as_path();
    let sig = match sig {
        Some(sig) => sig.to_path_buf(),
        None => {
            let mut name = dir.as_os_str().to_owned();
            name.push(".psig");
            PathBuf::from(name)
        }
    };
    if sig != Path::new("-") {
        let parent = match sig.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let (Ok(tree), Ok(parent)) = (std::fs::canonicalize(dir), std::fs::canonicalize(parent))
            && parent.starts_with(&tree)
        {
            return Err(inside(&sig));
        }
    }
    Ok(sig)
}

/// Signs the plaintext tree at `input` with `key`: every file hashed on every thread of the
/// caller's pool, one signature over the manifest of the whole tree. Nothing is written: the
/// caller writes [`SignedTree::bytes`] (the CLI: `DIR.psig`). A file that cannot be read, or
/// that changes while it is hashed, fails the whole signature (named).
pub fn sign(runner: &Runner, key: &SigningKey, input: &Path) -> Result<SignedTree> {
    sign_walked(runner, key, walk(input)?, Plaintexts::Local(input))
}

/// [`sign`] of the plaintext tree `input`, a [`PlainInput`] a front end plugs in (a prefix in
/// object storage): listed once ([`Walk::of`]), each file read at the version listed.
pub fn sign_from(runner: &Runner, key: &SigningKey, input: &dyn PlainInput) -> Result<SignedTree> {
    sign_walked(
        runner,
        key,
        Walk::of(input)?.entries,
        Plaintexts::Other(input),
    )
}

fn sign_walked(
    runner: &Runner,
    key: &SigningKey,
    walked: Vec<Walked>,
    input: Plaintexts<'_>,
) -> Result<SignedTree> {
    let files: Vec<&Walked> = walked
        .iter()
        .filter(|w| matches!(w.found, Found::File { .. }))
        .collect();
    let work = Hash::new(runner, input, files);
    let ran = schedule::run(&work, &work.planned());
    let (done, failures) = work.into_done();
    if let Some(first) = failures.into_iter().next() {
        return Err(first);
    }
    debug_assert_eq!(ran.not_started, 0);
    let mut manifest = Manifest::new(TreeFormat::Plain, Keying::Secret, false);
    let mut done = done.into_iter();
    for w in &walked {
        let kind = match &w.found {
            Found::Dir => EntryKind::Dir,
            Found::Symlink(target) => EntryKind::Symlink(target.clone()),
            Found::File { .. } => EntryKind::File(done.next().flatten().ok_or_else(|| {
                in_tree(&w.path, Error::InputChanged("it was not hashed".into()))
            })?),
        };
        manifest.entries.push(Entry {
            path: w.path.clone(),
            mode: w.mode,
            mtime: w.mtime,
            kind,
        });
    }
    manifest.complete = true;
    manifest.written = now();
    let bytes = manifest.encode(Some(key))?.to_vec();
    Ok(SignedTree { manifest, bytes })
}

/// One difference between a plaintext tree and its signed manifest.
#[derive(Debug)]
pub enum PlainChange {
    /// In the tree, not in the manifest (a directory is named once, not with what it holds).
    Added(Vec<u8>),
    /// In the manifest, missing from the tree (a directory is named once).
    Removed(Vec<u8>),
    /// A file of the manifest missing at its path and found, with the same contents, at
    /// `now_at`, which the manifest does not list.
    Renamed {
        /// Its path in the manifest.
        path: Vec<u8>,
        /// Where it is now.
        now_at: Vec<u8>,
    },
    /// At its path, but not as signed: why.
    Changed {
        /// Its path.
        path: Vec<u8>,
        /// What differs.
        why: String,
    },
}

impl PlainChange {
    fn key(&self) -> &[u8] {
        match self {
            PlainChange::Added(path)
            | PlainChange::Removed(path)
            | PlainChange::Renamed { path, .. }
            | PlainChange::Changed { path, .. } => path,
        }
    }
}

impl std::fmt::Display for PlainChange {
    /// One line: `added: …`, `removed: …`, `renamed: …` or `changed: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlainChange::Added(path) => {
                write!(f, "added: {} (not in the signed manifest)", shown(path))
            }
            PlainChange::Removed(path) => {
                write!(
                    f,
                    "removed: {} (in the signed manifest, missing)",
                    shown(path)
                )
            }
            PlainChange::Renamed { path, now_at } => write!(
                f,
                "renamed: {} (the same contents are now at {})",
                shown(path),
                shown(now_at)
            ),
            PlainChange::Changed { path, why } => write!(f, "changed: {}: {why}", shown(path)),
        }
    }
}

/// What [`verify_signed`] found.
#[derive(Debug)]
pub struct SignedCheck {
    /// The manifest, its signature checked.
    pub manifest: Manifest,
    /// Every difference, sorted by path.
    pub changes: Vec<PlainChange>,
    /// Files hashed and found as signed.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Who signed it (`required` when the caller asked for this signer).
    pub signer: Signer,
}

impl SignedCheck {
    /// Why the tree is not as signed, in the words every front end says (`None` when it is).
    pub fn why_not_intact(&self) -> Option<String> {
        match self.changes.len() {
            0 => None,
            1 => Some("1 difference from its signed manifest".into()),
            n => Some(format!("{n} differences from its signed manifest")),
        }
    }
}

/// Checks the plaintext tree at `input` against `signature` (what [`sign`] returned), on every
/// thread of the caller's pool, writing nothing: the signature first (and, with `expected`,
/// its signer: an unsigned or otherwise signed manifest is refused as a decryption refuses
/// it), then, with `only` empty, every entry of the tree and of the manifest (every file
/// hashed); otherwise only the files at those paths (each must be a regular file of the
/// manifest).
pub fn verify_signed(
    runner: &Runner,
    signature: &[u8],
    input: &Path,
    expected: Option<&VerifyingKey>,
    only: &[Vec<u8>],
) -> Result<SignedCheck> {
    verify_in(runner, signature, Plaintexts::Local(input), expected, only)
}

/// [`verify_signed`] of the plaintext tree `input`, a [`PlainInput`] a front end plugs in (a
/// prefix in object storage): listed once ([`Walk::of`]), each file read at the version
/// listed.
pub fn verify_signed_from(
    runner: &Runner,
    signature: &[u8],
    input: &dyn PlainInput,
    expected: Option<&VerifyingKey>,
    only: &[Vec<u8>],
) -> Result<SignedCheck> {
    verify_in(runner, signature, Plaintexts::Other(input), expected, only)
}

fn verify_in(
    runner: &Runner,
    signature: &[u8],
    input: Plaintexts<'_>,
    expected: Option<&VerifyingKey>,
    only: &[Vec<u8>],
) -> Result<SignedCheck> {
    let manifest = Manifest::parse(signature)?;
    if manifest.format != TreeFormat::Plain {
        return Err(Error::Manifest(
            "it is an encrypted tree's manifest, not a plaintext tree's signature".into(),
        ));
    }
    check_signer(&manifest, expected)?;
    let signer = Signer {
        key: manifest
            .signer
            .clone()
            .expect("a plaintext manifest is signed"),
        required: expected.is_some(),
    };
    let mut changes = Vec::new();
    // What is at each listed path now: what the walk found, or for `only`, that file alone.
    let walked: Vec<Walked> = if only.is_empty() {
        match input {
            Plaintexts::Local(input) => walk(input)?,
            Plaintexts::Other(input) => Walk::of(input)?.entries,
        }
    } else {
        let mut found = Vec::new();
        for wanted in only {
            match manifest.entry(wanted) {
                Some(Entry {
                    kind: EntryKind::File(_),
                    ..
                }) => {}
                _ => {
                    return Err(Error::Tree(format!(
                        "{}: not a regular file of the signed manifest",
                        shown(wanted)
                    )));
                }
            }
            if let Plaintexts::Local(input) = input
                && let Some(w) = stat(input, wanted)?
            {
                found.push(w);
            }
        }
        if let Plaintexts::Other(input) = input {
            // The listing is one request whatever is asked of it.
            let wanted: HashSet<&[u8]> = only.iter().map(|p| &p[..]).collect();
            found.extend(
                Walk::of(input)?
                    .entries
                    .into_iter()
                    .filter(|w| wanted.contains(&w.path[..])),
            );
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        found.dedup_by(|a, b| a.path == b.path);
        found
    };
    let now: HashMap<&[u8], &Walked> = walked.iter().map(|w| (&w.path[..], w)).collect();
    let listed: Vec<&Entry> = if only.is_empty() {
        manifest.entries.iter().collect()
    } else {
        let wanted: HashSet<&[u8]> = only.iter().map(|p| &p[..]).collect();
        manifest
            .entries
            .iter()
            .filter(|e| wanted.contains(&e.path[..]))
            .collect()
    };
    // Each listed entry against what is there; files of the same size are hashed below.
    let mut to_hash: Vec<(&Walked, Option<&FileEntry>)> = Vec::new();
    let mut missing: Vec<&Entry> = Vec::new();
    for entry in &listed {
        let Some(w) = now.get(&entry.path[..]) else {
            missing.push(entry);
            continue;
        };
        let why = match (&entry.kind, &w.found) {
            (EntryKind::Dir, Found::Dir) => None,
            (EntryKind::Symlink(then), Found::Symlink(target)) => (then != target).then(|| {
                format!(
                    "a link to {}, signed as a link to {}",
                    shown(target),
                    shown(then)
                )
            }),
            (EntryKind::File(file), Found::File { len, .. }) => {
                if *len == file.size {
                    to_hash.push((w, Some(file)));
                    None
                } else {
                    Some(format!("{len} bytes, signed as {}", file.size))
                }
            }
            (then, _) => Some(format!(
                "{}, signed as {}",
                kind_of(&w.found),
                match then {
                    EntryKind::Dir => "a directory",
                    EntryKind::File(_) => "a regular file",
                    EntryKind::Symlink(_) => "a symbolic link",
                }
            )),
        };
        if let Some(why) = why {
            changes.push(PlainChange::Changed {
                path: entry.path.clone(),
                why,
            });
        }
    }
    // What the manifest does not list (the whole tree only); a file of the size of a missing
    // one is hashed too, to be matched as renamed.
    let missing_sizes: HashSet<u64> = missing
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::File(file) => Some(file.size),
            _ => None,
        })
        .collect();
    let added: Vec<&Walked> = if only.is_empty() {
        walked
            .iter()
            .filter(|w| manifest.entry(&w.path).is_none())
            .collect()
    } else {
        Vec::new()
    };
    for w in &added {
        if let Found::File { len, .. } = w.found
            && missing_sizes.contains(&len)
        {
            to_hash.push((w, None));
        }
    }
    let work = Hash::new(runner, input, to_hash.iter().map(|(w, _)| *w).collect());
    schedule::run(&work, &work.planned());
    let (hashed, failures) = work.into_results();
    let (mut files, mut bytes) = (0, 0);
    let mut roots_added: HashMap<(u64, [u8; HASH_LEN]), &[u8]> = HashMap::new();
    for (((w, listed), hashed), failure) in to_hash.iter().zip(hashed).zip(failures) {
        match (listed, hashed, failure) {
            (Some(file), Some(now), _) if now.root == file.root => {
                files += 1;
                bytes += file.size;
            }
            (Some(_), Some(_), _) => changes.push(PlainChange::Changed {
                path: w.path.clone(),
                why: "its contents are not those signed".into(),
            }),
            (Some(_), None, failure) => changes.push(PlainChange::Changed {
                path: w.path.clone(),
                why: match failure {
                    Some(Error::InTree { source, .. }) => source.to_string(),
                    Some(e) => e.to_string(),
                    None => "it could not be read".into(),
                },
            }),
            (None, Some(now), _) => {
                roots_added.insert((now.size, now.root), &w.path);
            }
            (None, None, _) => {}
        }
    }
    let mut renamed_to: HashSet<&[u8]> = HashSet::new();
    let mut renamed: HashSet<&[u8]> = HashSet::new();
    for entry in &missing {
        if let EntryKind::File(file) = &entry.kind
            && let Some(now_at) = roots_added.get(&(file.size, file.root))
            && !renamed_to.contains(now_at)
        {
            changes.push(PlainChange::Renamed {
                path: entry.path.clone(),
                now_at: now_at.to_vec(),
            });
            renamed_to.insert(now_at);
            renamed.insert(&entry.path);
        }
    }
    // A directory added or removed is named once, not with what it holds.
    let missing_dirs: HashSet<&[u8]> = missing
        .iter()
        .filter(|e| e.kind == EntryKind::Dir)
        .map(|e| &e.path[..])
        .collect();
    let added_dirs: HashSet<&[u8]> = added
        .iter()
        .filter(|w| w.found == Found::Dir)
        .map(|w| &w.path[..])
        .collect();
    for entry in &missing {
        if !renamed.contains(&entry.path[..]) && !under(&entry.path, &missing_dirs) {
            changes.push(PlainChange::Removed(entry.path.clone()));
        }
    }
    for w in &added {
        if !renamed_to.contains(&w.path[..]) && !under(&w.path, &added_dirs) {
            changes.push(PlainChange::Added(w.path.clone()));
        }
    }
    changes.sort_by(|a, b| a.key().cmp(b.key()));
    Ok(SignedCheck {
        manifest,
        changes,
        files,
        bytes,
        signer,
    })
}

/// Whether `at` is below one of `dirs`.
fn under(at: &[u8], dirs: &HashSet<&[u8]>) -> bool {
    let mut up = path::parent(at);
    while !up.is_empty() {
        if dirs.contains(up) {
            return true;
        }
        up = path::parent(up);
    }
    false
}

/// What a walked entry is, in words.
fn kind_of(found: &Found) -> &'static str {
    match found {
        Found::Dir => "a directory",
        Found::File { .. } => "a regular file",
        Found::Symlink(_) => "a symbolic link",
    }
}

/// The entry at `rel` under `root`, not following a link; `None` when there is none.
fn stat(root: &Path, rel: &[u8]) -> Result<Option<Walked>> {
    let at = join(root, rel);
    let meta = match std::fs::symlink_metadata(&at) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("cannot read {}", at.display()), e)),
    };
    let found = if meta.is_file() {
        Found::File {
            len: meta.len(),
            ino: meta.ino(),
        }
    } else if meta.is_dir() {
        Found::Dir
    } else if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&at)
            .map_err(|e| Error::io(format!("cannot read {}", at.display()), e))?;
        Found::Symlink(std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec())
    } else {
        return Err(Error::Tree(format!(
            "{}: not a regular file, a directory or a link",
            at.display()
        )));
    };
    Ok(Some(Walked {
        path: rel.to_vec(),
        found,
        mode: meta.mode() & 0o7777,
        mtime: mtime_of(&meta),
    }))
}

/// The hashing of a tree's files, as the schedule runs it.
struct Hash<'a> {
    runner: &'a Runner,
    provider: Provider,
    input: Plaintexts<'a>,
    files: Vec<&'a Walked>,
    done: Vec<Mutex<Option<FileEntry>>>,
    failures: Mutex<Vec<(usize, Error)>>,
}

/// A file being hashed.
struct Hashing<'a> {
    source: Reading<'a>,
    job: Job,
    leaves: Mutex<Vec<[u8; HASH_LEN]>>,
}

impl<'a> Hash<'a> {
    fn new(runner: &'a Runner, input: Plaintexts<'a>, files: Vec<&'a Walked>) -> Self {
        Hash {
            runner,
            provider: runner.chosen_provider(),
            input,
            done: files.iter().map(|_| Mutex::new(None)).collect(),
            failures: Mutex::new(Vec::new()),
            files,
        }
    }

    fn planned(&self) -> Vec<Planned> {
        self.files
            .iter()
            .map(|w| {
                let bytes = len_of(w);
                Planned {
                    bytes,
                    chunks: bytes.div_ceil(u64::from(PLAIN_CHUNK)).max(1),
                    chunk_size: PLAIN_CHUNK as usize,
                    in_order: false,
                }
            })
            .collect()
    }

    /// Each file's entry (`None`: it failed), and the failures in the tree's order.
    fn into_done(self) -> (Vec<Option<FileEntry>>, Vec<Error>) {
        let (done, failures) = self.into_results();
        (done, failures.into_iter().flatten().collect())
    }

    /// Each file's entry, and each file's failure.
    fn into_results(self) -> (Vec<Option<FileEntry>>, Vec<Option<Error>>) {
        let done: Vec<Option<FileEntry>> = self
            .done
            .into_iter()
            .map(|d| d.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect();
        let mut failures: Vec<Option<Error>> = done.iter().map(|_| None).collect();
        for (at, error) in self
            .failures
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
        {
            failures[at] = Some(error);
        }
        (done, failures)
    }
}

/// The length the walk saw of a file.
fn len_of(w: &Walked) -> u64 {
    match w.found {
        Found::File { len, .. } => len,
        _ => 0,
    }
}

impl<'a> FileWork for Hash<'a> {
    type Open = Hashing<'a>;

    fn open(&self, file: usize) -> Result<Hashing<'a>> {
        let w = self.files[file];
        let cannot_open = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::InputChanged("it was removed since the tree was listed".into())
            } else {
                Error::io("cannot open it", e)
            }
        };
        let Found::File { len, ino } = w.found else {
            unreachable!("only regular files are hashed")
        };
        let changed = || Error::InputChanged("it changed since the tree was listed".into());
        let source = match self.input {
            Plaintexts::Local(input) => {
                let source = open_no_follow(&join(input, &w.path)).map_err(cannot_open)?;
                let meta = source
                    .metadata()
                    .map_err(|e| Error::io("cannot read its metadata", e))?;
                if !meta.is_file() || meta.ino() != ino || meta.len() != len {
                    return Err(changed());
                }
                let id = InputId::of(&source)?;
                Reading::Local { file: source, id }
            }
            Plaintexts::Other(input) => {
                let source = input.open(&w.path).map_err(cannot_open)?;
                if source.len() != len {
                    return Err(changed());
                }
                Reading::Other(source)
            }
        };
        let recipe = TreeHash::new(ChunkSize::new(PLAIN_CHUNK as usize)?);
        let job = crate::Recipe::first_job(&recipe, &mut &[][..], Some(len), self.provider)?;
        let leaves = job.planned().len() as usize;
        Ok(Hashing {
            source,
            job,
            leaves: Mutex::new(vec![[0; HASH_LEN]; leaves]),
        })
    }

    fn run(&self, _file: usize, open: &Hashing<'a>, chunks: Range<u64>) -> Result<()> {
        let ran = run_here(
            &open.job,
            chunks.clone(),
            open.source.source(),
            None,
            Plain::Input,
        )?;
        let plan = open.job.planned();
        self.runner
            .advance(plan.chunk(chunks.end - 1).input.end - plan.chunk(chunks.start).input.start);
        let mut leaves = open.leaves.lock().unwrap_or_else(|e| e.into_inner());
        leaves[chunks.start as usize..chunks.end as usize].copy_from_slice(&ran.leaves);
        Ok(())
    }

    fn finish(&self, file: usize, open: Hashing<'a>) -> Result<()> {
        let w = self.files[file];
        if let Reading::Local { file, .. } = &open.source {
            let meta = file
                .metadata()
                .map_err(|e| Error::io("cannot read its metadata", e))?;
            if meta.len() != len_of(w) || mtime_of(&meta) != w.mtime {
                return Err(Error::InputChanged("it changed while it was hashed".into()));
            }
        }
        let leaves = open.leaves.into_inner().unwrap_or_else(|e| e.into_inner());
        *self.done[file].lock().unwrap_or_else(|e| e.into_inner()) = Some(FileEntry {
            size: len_of(w),
            chunk_size: PLAIN_CHUNK,
            root: root(&leaves),
            header_len: 0,
            header_hash: [0; HASH_LEN],
        });
        Ok(())
    }

    fn failed(&self, file: usize, error: Error) {
        let error = in_tree(&self.files[file].path, error);
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((file, error));
    }

    fn stops_all(&self, _error: &Error) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::request::{Key, Request, Sealing, Secret};
    use crate::tree::out::Dest;
    use crate::tree::seal::write_manifest;
    use crate::tree::{NoGuard, Options, read_manifest};

    /// A plaintext manifest must be signed, keep its names and list no header; an encrypted
    /// tree's manifest may not be a plaintext one (each refused as its author wrote it, signed).
    #[test]
    fn plaintext_and_encrypted_manifests_are_not_taken_for_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join("f"), b"contents").unwrap();
        let runner = Runner::new();
        let key = SigningKey::generate_ed25519();
        let signed = sign(&runner, &key, &plain).unwrap();
        assert!(Manifest::parse(&signed.bytes).is_ok());

        let mut unsigned = signed.manifest.clone();
        let bytes = unsigned.encode(None).unwrap();
        let err = Manifest::parse(&bytes).unwrap_err();
        assert!(err.to_string().contains("is signed"), "{err}");
        let mut with_header = signed.manifest.clone();
        let EntryKind::File(file) = &mut with_header.entries[1].kind else {
            panic!("f is a file")
        };
        file.header_len = 1;
        let bytes = with_header.encode(Some(&key)).unwrap();
        let err = Manifest::parse(&bytes).unwrap_err();
        assert!(err.to_string().contains("a header"), "{err}");

        // An encrypted tree whose manifest (sealed with its key) is a plaintext one.
        let secret = Secret::Key(Key::generate());
        let sealed = dir.path().join("sealed");
        let seal = Request::encrypt(secret.clone(), Sealing::default()).unwrap();
        crate::tree::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
        let dest = Dest {
            root: sealed.clone(),
            replace: true,
            named: false,
            sync: false,
            guard: Arc::new(NoGuard),
        };
        let mut posing = signed.manifest.clone();
        write_manifest(&runner, &seal, &mut posing, Some(&key), &dest).unwrap();
        let open = Request::decrypt(secret, None).unwrap();
        let err = read_manifest(&runner, &open, &sealed).unwrap_err();
        assert!(
            err.to_string().contains("plaintext tree's signed manifest"),
            "{err}"
        );
        // And an encrypted tree's manifest is not a plaintext tree's signature.
        let err = verify_signed(&runner, b"PARACRYPT-TREE", &plain, None, &[]).unwrap_err();
        assert!(matches!(err, Error::Manifest(_)), "{err}");
    }
}
