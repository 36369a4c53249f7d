//! `--update`'s checks in tasks, for a tree encrypted across processes (MPI ranks): which of
//! the walked files are unchanged since the tree's previous manifest, checked where the work
//! is, not by the coordinator alone.
//!
//! A file is unchanged when its size and modification time are the ones the previous manifest
//! lists (with [`Options::checksum`](super::Options::checksum): its size, and the BLAKE3 tree-hash
//! root of its contents), its encrypted file is still the one listed (its header's hash), and
//! its entry's chunk size is the one this run seals with. The tree hash's chunk is always that
//! one, the format's, never the manifest's: a manifest's `chunk_size = 16` would make the hash's
//! leaves twice the file.
//! The coordinator keeps, from the walk and the previous manifest alone (no file read), the
//! files whose size (and time) match: the candidates ([`Prepared::checks`](super::Prepared::checks)).
//! The reads (each candidate's encrypted header; with `checksum`, its whole plaintext) are
//! cut into tasks as a tree's files are ([`Plan::tasks`](super::Plan::tasks): small files
//! batched, a large one alone), which any process runs ([`check_task`]), sending back one bit
//! per file; the coordinator plans from the bits ([`Prepared::plan_checked`](super::Prepared::plan_checked)).
//! So `--update --checksum` across N processes reads each file once, on one of them, and keeps
//! the same files a local update keeps. A task that comes back unreadable keeps none of its
//! files: they are sealed again.

use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::io::TreeInput;
use super::manifest::{FileEntry, TreeFormat};
use super::out::open_no_follow;
use super::path::fault;
use super::seal::leaves_of;
use super::task::{Reader, put_bytes};
use super::walk::join;
use crate::error::Result;
use crate::plan::ChunkSize;
use crate::provider::Provider;
use crate::sign::tree::{HASH_LEN, root};

const CHECK_MAGIC: &[u8] = b"PARACRYPT-TREE-CHECK\x02";
const CHECKED_MAGIC: &[u8] = b"PARACRYPT-TREE-SAME\x01";

/// The fewest bytes a file of a check task takes: its path and stored name (a length and one
/// byte each), its size, its header's length and hash, its chunk size and root.
const MIN_FILE: usize = 9 + 9 + 8 + 4 + HASH_LEN + 4 + HASH_LEN;

/// One candidate of an update's checks: what is read to tell whether it is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Its walked entry (in the coordinator's walk).
    pub at: usize,
    /// Its path under the input.
    pub path: Vec<u8>,
    /// Its encrypted file's name under the output.
    pub stored: Vec<u8>,
    /// Its size now (the previous manifest's too).
    pub len: u64,
    /// The previous manifest's entry.
    pub file: FileEntry,
}

/// The `--update` checks of a tree's encryption, as the coordinator cut them into tasks, and
/// the answers that have come back (see the [module](self)).
pub struct Checks {
    pub(crate) input: PathBuf,
    pub(crate) output: PathBuf,
    pub(crate) format: TreeFormat,
    pub(crate) checksum: bool,
    /// The plaintext chunk the run seals with (the tree hash's).
    chunk: usize,
    /// How many entries the walk they were made from holds.
    pub(crate) walked: usize,
    pub(crate) candidates: Vec<Candidate>,
    tasks: Vec<Range<usize>>,
    /// By candidate: whether it is unchanged, once its task's answer is back.
    same: Vec<Option<bool>>,
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checks")
            .field("candidates", &self.candidates.len())
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

impl Checks {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        input: &Path,
        output: &Path,
        format: TreeFormat,
        checksum: bool,
        chunk: usize,
        walked: usize,
        candidates: Vec<Candidate>,
        at_least: usize,
    ) -> Checks {
        // What a check reads: the header alone, or the whole file too.
        let lens: Vec<u64> = candidates
            .iter()
            .map(|c| u64::from(c.file.header_len) + if checksum { c.len } else { 0 })
            .collect();
        Checks {
            input: input.to_path_buf(),
            output: output.to_path_buf(),
            format,
            checksum,
            chunk,
            walked,
            same: vec![None; candidates.len()],
            tasks: super::task::cut(&lens, at_least),
            candidates,
        }
    }

    /// How many check tasks there are.
    pub fn tasks(&self) -> usize {
        self.tasks.len()
    }

    /// How many files are checked, in all the tasks.
    pub fn files(&self) -> usize {
        self.candidates.len()
    }

    /// Check task `i`'s bytes, for [`check_task`] in any process.
    pub fn task(&self, i: usize) -> Vec<u8> {
        let mut out = CHECK_MAGIC.to_vec();
        put_bytes(&mut out, self.input.as_os_str().as_bytes());
        put_bytes(&mut out, self.output.as_os_str().as_bytes());
        out.push(format_byte(self.format));
        out.push(u8::from(self.checksum));
        out.extend_from_slice(&(self.chunk as u64).to_le_bytes());
        let files = &self.candidates[self.tasks[i].clone()];
        out.extend_from_slice(&(files.len() as u64).to_le_bytes());
        for c in files {
            put_bytes(&mut out, &c.path);
            put_bytes(&mut out, &c.stored);
            out.extend_from_slice(&c.len.to_le_bytes());
            out.extend_from_slice(&c.file.header_len.to_le_bytes());
            out.extend_from_slice(&c.file.header_hash);
            out.extend_from_slice(&c.file.chunk_size.to_le_bytes());
            out.extend_from_slice(&c.file.root);
        }
        out
    }

    /// Adds check task `i`'s answer, as [`check_task`] returned it. Returns how many files it
    /// checked; bytes that are not an answer of as many files are refused (its files are
    /// then sealed again).
    pub fn add(&mut self, i: usize, bytes: &[u8]) -> Result<usize> {
        let run = self.tasks.get(i).cloned().unwrap_or_default();
        let mut r = Reader::new(bytes, CHECKED_MAGIC, "a tree's check answer")?;
        let count = r.u64()?;
        if run.is_empty() || count != run.len() as u64 {
            return Err(r.bad());
        }
        let bits = r.take(run.len().div_ceil(8))?;
        r.end()?;
        for (n, at) in run.clone().enumerate() {
            self.same[at] = Some(bits[n / 8] & (1 << (n % 8)) != 0);
        }
        Ok(run.len())
    }

    /// Whether the candidate `n` was found unchanged: not when its task's answer never came.
    pub(crate) fn same(&self, n: usize) -> bool {
        self.same[n] == Some(true)
    }
}

fn format_byte(format: TreeFormat) -> u8 {
    match format {
        TreeFormat::Container => 0,
        TreeFormat::Age => 1,
        TreeFormat::ArmoredAge => 2,
        TreeFormat::Plain => 3,
    }
}

/// Where an update reads the encrypted files it may keep.
#[derive(Clone, Copy)]
pub(crate) enum Encrypted<'a> {
    /// A local directory, read in place.
    Local(&'a Path),
    /// What the output gives ([`TreeOutput::existing`](super::TreeOutput::existing): a prefix
    /// in object storage).
    Input(&'a dyn TreeInput),
}

/// Where and how an update checks its files: the trees, the previous manifest's format,
/// whether contents are compared, the plaintext chunk this run seals with, and what hashes
/// them.
pub(crate) struct Checking<'a> {
    pub input: super::io::Plaintexts<'a>,
    pub output: Encrypted<'a>,
    pub format: TreeFormat,
    pub checksum: bool,
    pub chunk: usize,
    pub provider: Provider,
}

impl Checking<'_> {
    /// Whether the file at `path` under the input (of `file.size` bytes now) is still the one
    /// `file` lists, its encrypted file at `stored` under the output still the one listed: the
    /// encrypted header's hash, and with `checksum` the plaintext's tree-hash root, hashed in
    /// this run's chunks. An entry of other chunks, or anything unreadable, is changed (sealed
    /// again).
    pub(crate) fn same(&self, path: &[u8], stored: &[u8], file: &FileEntry) -> bool {
        if file.chunk_size as usize != self.chunk {
            return false;
        }
        let header = match self.output {
            Encrypted::Local(output) => {
                let Ok(encrypted) = open_no_follow(&join(output, stored)) else {
                    return false;
                };
                super::verify::header_hash(&encrypted, file.header_len, self.format)
            }
            Encrypted::Input(output) => {
                let Ok(encrypted) = output.open(stored) else {
                    return false;
                };
                super::verify::input_header_hash(&*encrypted, file.header_len, self.format)
            }
        };
        if header != Some(file.header_hash) {
            return false;
        }
        if !self.checksum {
            return true;
        }
        let (chunk, provider) = (self.chunk, self.provider);
        let leaves = match self.input {
            super::io::Plaintexts::Local(input) => {
                let Ok(plain) = open_no_follow(&join(input, path)) else {
                    return false;
                };
                leaves_of(&plain, file.size, chunk, provider)
            }
            super::io::Plaintexts::Other(input) => {
                let Ok(plain) = input.open(path) else {
                    return false;
                };
                if plain.len() != file.size {
                    return false;
                }
                leaves_of(plain.source(), file.size, chunk, provider)
            }
        };
        leaves.is_ok_and(|leaves| root(&leaves) == file.root)
    }
}

/// Runs a check task from its bytes ([`Checks::task`]) in the caller's pool, its files in
/// parallel, hashing with `provider` and calling `tick` once per file checked. Returns the
/// answer's bytes for [`Checks::add`]: one bit per file, set when it is unchanged. Bytes that
/// are not a check task are refused: every length and count is checked against what is left,
/// and every path and stored name must be a path in a tree.
pub fn check_task(bytes: &[u8], provider: Provider, tick: &(dyn Fn() + Sync)) -> Result<Vec<u8>> {
    let mut r = Reader::new(bytes, CHECK_MAGIC, "a tree's check task")?;
    let input = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
    let output = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
    let format = match r.u8()? {
        0 => TreeFormat::Container,
        1 => TreeFormat::Age,
        2 => TreeFormat::ArmoredAge,
        _ => return Err(r.bad()),
    };
    let checksum = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err(r.bad()),
    };
    let chunk = usize::try_from(r.u64()?)
        .ok()
        .filter(|&chunk| ChunkSize::new(chunk).is_ok())
        .ok_or_else(|| r.bad())?;
    let count = r.u64()?;
    if count > (r.rest.len() / MIN_FILE) as u64 {
        return Err(r.bad());
    }
    let mut files = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let path = r.bytes()?.to_vec();
        let stored = r.bytes()?.to_vec();
        if [&path, &stored]
            .iter()
            .any(|p| p.is_empty() || fault(p).is_some())
        {
            return Err(r.bad());
        }
        let len = r.u64()?;
        let header_len = r.u32()?;
        let header_hash = r.array()?;
        let chunk_size = r.u32()?;
        let root = r.array()?;
        let file = FileEntry {
            size: len,
            chunk_size,
            root,
            header_len,
            header_hash,
        };
        files.push((path, stored, file));
    }
    r.end()?;
    let checking = Checking {
        input: super::io::Plaintexts::Local(&input),
        output: Encrypted::Local(&output),
        format,
        checksum,
        chunk,
        provider,
    };
    let same: Vec<bool> = files
        .par_iter()
        .map(|(path, stored, file)| {
            let same = checking.same(path, stored, file);
            tick();
            same
        })
        .collect();
    let mut out = CHECKED_MAGIC.to_vec();
    out.extend_from_slice(&(same.len() as u64).to_le_bytes());
    let mut bits = vec![0u8; same.len().div_ceil(8)];
    for (n, _) in same.iter().enumerate().filter(|(_, same)| **same) {
        bits[n / 8] |= 1 << (n % 8);
    }
    out.extend_from_slice(&bits);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::sync::Arc;

    use super::*;
    use crate::container::{Key, Secret};
    use crate::recipe::Runner;
    use crate::request::{Request, Sealing};
    use crate::tree::manifest::EntryKind;
    use crate::tree::open::read_manifest;
    use crate::tree::out::Dest;
    use crate::tree::seal::write_manifest;
    use crate::tree::{NoGuard, Options};

    /// A previous manifest (written by someone with the secret) whose entry says `chunk_size =
    /// 16`, its root that of the file in 16-byte chunks: an update hashes in the chunks it seals
    /// with, never the entry's (whose leaves would take twice the file), and seals the file
    /// again, here and in a check task of another process.
    #[test]
    fn an_update_takes_no_chunk_size_from_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join("f"), vec![7u8; 100_000]).unwrap();
        let sealed = dir.path().join("sealed");
        let runner = Runner::new();
        let provider = runner.chosen_provider();
        let chunk = 64 << 10;
        let secret = Secret::Key(Key::generate());
        let sealing = Sealing {
            chunk_size: Some(ChunkSize::new(chunk).unwrap()),
            ..Sealing::default()
        };
        let seal = Request::encrypt(secret.clone(), sealing.clone()).unwrap();
        let open = Request::decrypt(secret.clone(), None).unwrap();
        let rewrite = Request::encrypt(
            secret,
            Sealing {
                chunk_size: None,
                ..sealing
            },
        )
        .unwrap();
        let dest = Dest {
            root: sealed.clone(),
            replace: true,
            named: false,
            sync: false,
            guard: Arc::new(NoGuard),
        };
        // The tree's manifest, its entry of `f` forged; returns that entry.
        let forge = || {
            let mut manifest = read_manifest(&runner, &open, &sealed).unwrap();
            let at = manifest.entries.iter().position(|e| e.path == b"f");
            let EntryKind::File(file) = &mut manifest.entries[at.unwrap()].kind else {
                panic!("f is a file")
            };
            assert_eq!(file.chunk_size as usize, chunk);
            file.chunk_size = 16;
            let source = File::open(plain.join("f")).unwrap();
            file.root = root(&leaves_of(&source, file.size, 16, provider).unwrap());
            let forged = file.clone();
            write_manifest(&runner, &rewrite, &mut manifest, None, &dest).unwrap();
            forged
        };
        super::super::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
        let forged = forge();

        // Another process's check of it: changed.
        let candidate = Candidate {
            at: 0,
            path: b"f".to_vec(),
            stored: b"f.pcr".to_vec(),
            len: forged.size,
            file: forged,
        };
        let format = TreeFormat::Container;
        let mut checks = Checks::new(&plain, &sealed, format, true, chunk, 1, vec![candidate], 1);
        let answer = check_task(&checks.task(0), provider, &|| {}).unwrap();
        assert_eq!(checks.add(0, &answer).unwrap(), 1);
        assert!(!checks.same(0));

        // Here, with and without `checksum`: sealed again, in the run's chunks (which `forge`
        // checks).
        for checksum in [true, false] {
            let options = Options {
                update: true,
                checksum,
                ..Options::default()
            };
            let done = super::super::encrypt(&runner, &seal, &plain, &sealed, &options).unwrap();
            assert_eq!((done.files, done.unchanged), (1, 0), "checksum {checksum}");
            forge();
        }
    }
}
