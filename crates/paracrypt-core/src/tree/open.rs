//! Decrypting a tree: the manifest first, then every file it lists on the one schedule, each
//! checked against its entry before it takes its name; links and directory times last.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::chunks::{Plain, run_here};
use super::manifest::{EntryKind, FileEntry, Keying, MAX_MANIFEST, Manifest, TreeFormat};
use super::out::{Dest, Temp, finish_file, open_no_follow, set_times, symlink};
use super::path::shown;
use super::schedule::{self, FileWork, Planned};
use super::seal::{check_output, remove_made};
use super::{MANIFEST, Options, Summary, in_tree};
use crate::container::Secret;
use crate::engine::Job;
use crate::engine::io::PositionalReader;
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::recipe::Runner;
use crate::recipient::Identities;
use crate::request::{Driver, Kind, Request, Resolved, Signer};
use crate::sign::VerifyingKey;
use crate::sign::tree::{HASH_LEN, leaf, root};

/// Reads the manifest of the encrypted tree at `encrypted` with `request` (a decryption:
/// [`Request::decrypt`]) and checks it: its fields and paths, its signature when it has one,
/// and the signer the request requires, if any (an unsigned manifest, or one signed by another
/// key, is refused then).
pub fn read_manifest(runner: &Runner, request: &Request, encrypted: &Path) -> Result<Manifest> {
    let (secret, verify_with) = decryption(request)?;
    let at = encrypted.join(MANIFEST);
    let in_manifest = |e| in_tree(MANIFEST.as_bytes(), e);
    let file = open_no_follow(&at).map_err(|e| {
        let what = if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "{} has no manifest (is it an encrypted tree?)",
                encrypted.display()
            )
        } else {
            format!("cannot read {}", at.display())
        };
        Error::io(what, e)
    })?;
    let mut sealed = Vec::new();
    file.take(MAX_MANIFEST + 1)
        .read_to_end(&mut sealed)
        .map_err(|e| Error::io(format!("cannot read {}", at.display()), e))?;
    if sealed.len() as u64 > MAX_MANIFEST {
        return Err(in_manifest(Error::Manifest(
            "it is larger than 1 GiB".into(),
        )));
    }
    // The manifest is sealed without chunk signatures (its signature is inside it): it is
    // opened without a required signer, which is checked below against its signature.
    let open = Request::decrypt(secret.clone(), None)?;
    let quiet = Runner::new().provider(runner.chosen_provider());
    let plain = (|| {
        let resolved = open.resolve(&sealed, Driver::Whole)?;
        if resolved.in_order() {
            let mut out = Vec::new();
            resolved.stream(&quiet, &mut &sealed[..], &mut out)?;
            Ok(zeroize::Zeroizing::new(out))
        } else {
            Ok(zeroize::Zeroizing::new(
                quiet.vec(resolved.recipe(), &sealed)?,
            ))
        }
    })()
    .map_err(in_manifest)?;
    let manifest = Manifest::parse(&plain).map_err(in_manifest)?;
    if manifest.format == TreeFormat::Plain {
        return Err(in_manifest(Error::Manifest(
            "it is a plaintext tree's signed manifest, which no encrypted tree holds".into(),
        )));
    }
    check_signer(&manifest, verify_with.as_ref())?;
    // What no writer makes, and what would make every file cost a password's derivation.
    match (&manifest.keying, secret, manifest.format) {
        (Keying::Secret, Secret::Password(..), _) => Err(Error::Manifest(
            "it says its files are sealed with the password itself, which no tree writer does"
                .into(),
        )),
        (Keying::TreeKey(_), _, TreeFormat::Age | TreeFormat::ArmoredAge)
        | (Keying::TreeIdentity(_), _, TreeFormat::Container) => Err(Error::Manifest(
            "its tree key does not fit its file format".into(),
        )),
        _ => Ok(()),
    }
    .map_err(in_manifest)?;
    Ok(manifest)
}

/// Opens ahead, in one session per plugin, the keys of the manifest and of every regular file
/// under the encrypted tree `input` ([`Request::open_ahead`]): the files are not known before
/// the manifest is open, so every file there is asked about (a file the manifest does not list
/// is never opened after). A tree that cannot be walked is left to the decryption to report.
pub(crate) fn open_ahead(request: &Request, input: &Path) {
    let Ok(found) = super::walk::walk(input) else {
        return;
    };
    let paths: Vec<_> = found
        .iter()
        .filter(|w| matches!(w.found, super::walk::Found::File { .. }))
        .map(|w| super::walk::join(input, &w.path))
        .collect();
    request.open_ahead(&paths);
}

/// The secret and required signer of a decryption request.
fn decryption(request: &Request) -> Result<(&Secret, &Option<VerifyingKey>)> {
    match request.kind() {
        Kind::Decrypt {
            secret,
            verify_with,
        } => Ok((secret, verify_with)),
        _ => Err(Error::Request(
            "a tree is decrypted with a decryption request (a key, a password or identities)"
                .into(),
        )),
    }
}

/// Refuses a manifest that is unsigned, or signed by another key, when `expected` is required.
pub(crate) fn check_signer(manifest: &Manifest, expected: Option<&VerifyingKey>) -> Result<()> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let Some(signer) = &manifest.signer else {
        return Err(Error::Unsigned {
            expected: expected.fingerprint(),
        });
    };
    match expected.for_scheme(signer.scheme()) {
        Some(key) if key.to_field() == signer.to_field() => Ok(()),
        _ => Err(Error::WrongSigner {
            signer: signer.fingerprint(),
            expected: expected.fingerprint(),
        }),
    }
}

/// The request that opens the tree's files: the caller's, or one of the key or identity the
/// manifest carries, with the same required signer.
pub(crate) fn file_request(request: &Request, manifest: &Manifest) -> Result<Request> {
    let (secret, verify_with) = decryption(request)?;
    let secret = match &manifest.keying {
        Keying::Secret => secret.clone(),
        Keying::TreeKey(key) => Secret::Key(key.clone()),
        Keying::TreeIdentity(text) => {
            let mut identities = Identities::new();
            identities.add_file("the tree's identity", text.as_bytes())?;
            Secret::Identities(Arc::new(identities))
        }
    };
    Request::decrypt(secret, verify_with.clone())
}

/// Who signed the manifest, as a decryption reports it.
pub(crate) fn signer_of(manifest: &Manifest, request: &Request) -> Option<Signer> {
    let required = matches!(
        request.kind(),
        Kind::Decrypt {
            verify_with: Some(_),
            ..
        }
    );
    manifest.signer.clone().map(|key| Signer { key, required })
}

/// Decrypts the encrypted tree at `input` into the directory `output` with `request` (a
/// decryption: [`Request::decrypt`]), on every thread of the caller's pool: the original tree,
/// with its directories, modes, modification times and symbolic links. See the
/// [module](super).
///
/// The manifest is read and checked first ([`read_manifest`]); `output` must then not exist
/// (its parent must), or be an empty directory, or [`Options::force`] must be set. Each
/// file's encrypted header is checked against its entry before any key is used on it (a file
/// swapped for another of the tree, or for another encryption of itself, fails there), each
/// chunk is authenticated, and its length and plaintext tree-hash root are checked before it
/// takes its name. A file that fails is reported in [`Summary::failures`] and the others go
/// on.
pub fn decrypt(
    runner: &Runner,
    request: &Request,
    input: &Path,
    output: &Path,
    options: &Options,
) -> Result<Summary> {
    if request.uses_plugins() {
        // One plugin session for the manifest and every file (a hardware key's PIN typed
        // once): the output is checked first, so that a refused output asks for nothing.
        super::seal::check(input, output, options)?;
        open_ahead(request, input);
    }
    let manifest = read_manifest(runner, request, input)?;
    let files_request = file_request(request, &manifest)?;
    let created_root = check_output(input, output, options.force)?;
    let dest = Dest {
        root: output.to_path_buf(),
        replace: options.force,
        named: options.named_temps,
        sync: options.sync,
        guard: Arc::clone(&options.guard),
    };
    let mut made = Vec::new();
    for entry in manifest.entries.iter().skip(1) {
        if entry.kind == EntryKind::Dir {
            match dest.mkdir(&entry.path) {
                Ok(true) => made.push(entry.path.clone()),
                Ok(false) => {}
                Err(e) => {
                    remove_made(output, &made, created_root);
                    return Err(in_tree(
                        &entry.path,
                        Error::io("cannot create the directory", e),
                    ));
                }
            }
        }
    }
    let work = Open::new(runner, &files_request, &manifest, input, Some(&dest));
    let ran = schedule::run(&work, &work.planned());
    let mut summary = work.summary(ran.not_started);
    summary.signer = signer_of(&manifest, request);
    summary.manifest_complete = manifest.complete;
    if summary.files == 0 && (!summary.failures.is_empty() || summary.not_started > 0) {
        remove_made(output, &made, created_root);
        return Ok(summary);
    }
    // Links, then every directory's mode and time, deepest first.
    for entry in &manifest.entries {
        if let EntryKind::Symlink(target) = &entry.kind {
            let at = dest.path(&entry.path);
            if options.force && std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) {
                let _ = std::fs::remove_file(&at);
            }
            if let Err(e) = symlink(target, &at).and_then(|()| set_times(&at, entry.mtime)) {
                summary
                    .failures
                    .push(in_tree(&entry.path, Error::io("cannot make the link", e)));
            }
        }
    }
    for entry in manifest.entries.iter().rev() {
        if entry.kind == EntryKind::Dir {
            let at = dest.path(&entry.path);
            let set = std::fs::set_permissions(
                &at,
                std::os::unix::fs::PermissionsExt::from_mode(entry.mode),
            )
            .and_then(|()| set_times(&at, entry.mtime));
            if let Err(e) = set {
                let what = format!("cannot set the mode and time of {}", at.display());
                summary.failures.push(Error::io(what, e));
            }
        }
    }
    Ok(summary)
}

/// The opening of a tree's files (a decryption into `dest`, or a check into nothing), as the
/// schedule runs it.
pub(crate) struct Open<'a> {
    runner: &'a Runner,
    request: &'a Request,
    provider: Provider,
    input: &'a Path,
    dest: Option<&'a Dest>,
    manifest: &'a Manifest,
    /// The files, as `(path, entry)`.
    files: Vec<(&'a [u8], &'a FileEntry, u32)>,
    done: Mutex<Vec<bool>>,
    failures: Mutex<Vec<(usize, Error)>>,
}

/// A file being opened.
pub(crate) struct Opening {
    source: File,
    temp: Option<Temp>,
    /// The job; `None` for a file read in order (armor), which `resolved` runs as a stream.
    job: Option<Job>,
    resolved: Resolved,
    leaves: Mutex<Vec<[u8; HASH_LEN]>>,
    end: Mutex<Option<u64>>,
}

impl<'a> Open<'a> {
    pub(crate) fn new(
        runner: &'a Runner,
        request: &'a Request,
        manifest: &'a Manifest,
        input: &'a Path,
        dest: Option<&'a Dest>,
    ) -> Self {
        let files: Vec<_> = manifest
            .entries
            .iter()
            .filter_map(|e| match &e.kind {
                EntryKind::File(file) => Some((&e.path[..], file, e.mode)),
                _ => None,
            })
            .collect();
        Open {
            runner,
            request,
            provider: runner.chosen_provider(),
            input,
            dest,
            manifest,
            done: Mutex::new(vec![false; files.len()]),
            failures: Mutex::new(Vec::new()),
            files,
        }
    }

    /// The schedule's view of the files.
    ///
    /// A file's share is its size as the manifest lists it, but never more than its encrypted
    /// file holds (every format only adds bytes): a manifest that claims sizes no file has plans
    /// only the work the files on disk can give (and each such file then fails when it is
    /// opened), so that a hostile manifest stays cheap.
    pub(crate) fn planned(&self) -> Vec<Planned> {
        let in_order = self.manifest.format == TreeFormat::ArmoredAge;
        self.files
            .par_iter()
            .map(|(path, file, _)| {
                let stored = super::walk::join(self.input, &self.manifest.stored(path));
                let on_disk = std::fs::symlink_metadata(stored).map_or(0, |m| m.len());
                let bytes = file.size.min(on_disk);
                Planned {
                    bytes,
                    chunks: bytes.div_ceil(u64::from(file.chunk_size)).max(1),
                    chunk_size: file.chunk_size as usize,
                    in_order,
                }
            })
            .collect()
    }

    /// What was done, the failures in the tree's order.
    pub(crate) fn summary(self, not_started: u64) -> Summary {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut failures = self
            .failures
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        failures.sort_by_key(|(at, _)| *at);
        let mut summary = Summary {
            failures: failures.into_iter().map(|(_, e)| e).collect(),
            not_started,
            ..Summary::default()
        };
        for ((_, file, _), done) in self.files.iter().zip(done) {
            if done {
                summary.files += 1;
                summary.bytes += file.size;
            }
        }
        summary
    }

    /// What a check into nothing found: the files found as listed, their bytes, and each
    /// failure with the path of its file, in the tree's order.
    pub(crate) fn checked(self) -> (u64, u64, Vec<(Vec<u8>, Error)>) {
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut failures = self
            .failures
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        failures.sort_by_key(|(at, _)| *at);
        let (mut files, mut bytes) = (0, 0);
        for ((_, file, _), done) in self.files.iter().zip(done) {
            if done {
                files += 1;
                bytes += file.size;
            }
        }
        let failures = failures
            .into_iter()
            .map(|(at, e)| (self.files[at].0.to_vec(), e))
            .collect();
        (files, bytes, failures)
    }

    fn mismatch(&self, file: usize, why: impl std::fmt::Display) -> Error {
        let stored = self.manifest.stored(self.files[file].0);
        Error::TreeMismatch(format!("its encrypted file {} {why}", shown(&stored)))
    }
}

impl FileWork for Open<'_> {
    type Open = Opening;

    fn open(&self, file: usize) -> Result<Opening> {
        let (path, entry, _) = self.files[file];
        let stored = self.manifest.stored(path);
        let source = open_no_follow(&super::walk::join(self.input, &stored)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                self.mismatch(file, "is missing")
            } else {
                Error::io("cannot open its encrypted file", e)
            }
        })?;
        let meta = source
            .metadata()
            .map_err(|e| Error::io("cannot read its encrypted file's metadata", e))?;
        if !meta.is_file() {
            return Err(self.mismatch(file, "is not a regular file"));
        }
        let len = meta.len();
        let armored = self.manifest.format == TreeFormat::ArmoredAge;
        // The header is checked against the manifest before any key touches it: another file
        // of the tree, or another encryption of this one, stops here.
        let header_len = u64::from(entry.header_len);
        let hash = if armored {
            if len != header_len {
                return Err(self.mismatch(file, "is not the length the manifest lists"));
            }
            hash_file(&source)?
        } else {
            let mut header = vec![0u8; entry.header_len.min(1 << 20) as usize];
            if len < header_len || header.len() as u64 != header_len {
                return Err(self.mismatch(file, "is shorter than its header"));
            }
            source
                .read_exact_at(&mut header, 0)
                .map_err(|e| Error::io("reading its header", e))?;
            *blake3::hash(&header).as_bytes()
        };
        if hash != entry.header_hash {
            return Err(self.mismatch(
                file,
                "is not the one the manifest lists (another file's, or another encryption of \
                 this one)",
            ));
        }
        // Every format only adds bytes to the plaintext.
        if len < entry.size {
            return Err(self.mismatch(file, "is shorter than the size the manifest lists"));
        }
        let head = crate::request::head_of(&source)?;
        let resolved = self.request.resolve(&head, Driver::Whole)?;
        let job = if resolved.in_order() {
            None
        } else {
            let mut reader = BufReader::new(PositionalReader {
                file: &source,
                at: 0,
            });
            let job = resolved
                .recipe()
                .first_job(&mut reader, Some(len), self.provider)?;
            let layout = job.layout();
            let plan = job.planned();
            let chunks = entry.size.div_ceil(u64::from(entry.chunk_size)).max(1);
            if layout.payload_chunk() != entry.chunk_size as usize || plan.len() != chunks {
                return Err(self.mismatch(file, "is not the length the manifest lists"));
            }
            Some(job)
        };
        let temp = match self.dest {
            Some(dest) => Some(
                dest.temp(path)
                    .map_err(|e| Error::io("cannot create it in the output", e))?,
            ),
            None => None,
        };
        // One leaf a chunk of the job (whose plan, checked above, is the manifest's); a file
        // read in order computes its own.
        let leaves = job.as_ref().map_or(0, |job| job.planned().len());
        Ok(Opening {
            source,
            temp,
            job,
            resolved,
            leaves: Mutex::new(vec![[0; HASH_LEN]; leaves as usize]),
            end: Mutex::new(None),
        })
    }

    fn run(&self, file: usize, open: &Opening, chunks: Range<u64>) -> Result<()> {
        let Some(job) = &open.job else {
            return self.in_order(file, open);
        };
        let sink = open
            .temp
            .as_ref()
            .map(|t| &t.file as &dyn crate::engine::Sink);
        let ran = run_here(job, chunks.clone(), &open.source, sink, Plain::Output)?;
        let plan = job.planned();
        self.runner
            .advance(plan.chunk(chunks.end - 1).input.end - plan.chunk(chunks.start).input.start);
        let mut leaves = open.leaves.lock().unwrap_or_else(|e| e.into_inner());
        leaves[chunks.start as usize..chunks.end as usize].copy_from_slice(&ran.leaves);
        if let Some(end) = ran.end {
            *open.end.lock().unwrap_or_else(|e| e.into_inner()) = Some(end);
        }
        Ok(())
    }

    fn finish(&self, file: usize, open: Opening) -> Result<()> {
        let (path, entry, mode) = self.files[file];
        let end = open.end.into_inner().unwrap_or_else(|e| e.into_inner());
        if end != Some(entry.size) {
            return Err(self.mismatch(
                file,
                format!(
                    "decrypts to {} bytes where the manifest lists {}",
                    end.unwrap_or(0),
                    entry.size
                ),
            ));
        }
        let leaves = open.leaves.into_inner().unwrap_or_else(|e| e.into_inner());
        if root(&leaves) != entry.root {
            return Err(self.mismatch(file, "does not decrypt to the contents the manifest lists"));
        }
        if let (Some(dest), Some(temp)) = (self.dest, open.temp) {
            temp.file
                .set_len(entry.size)
                .map_err(|e| Error::io("setting its length", e))?;
            let entry_of = self.manifest.entry(path).expect("a file of the manifest");
            finish_file(&temp.file, mode, entry_of.mtime)
                .map_err(|e| Error::io("setting its mode and time", e))?;
            dest.commit(temp, path)
                .map_err(|e| Error::io("cannot give it its name", e))?;
        }
        self.done.lock().unwrap_or_else(|e| e.into_inner())[file] = true;
        Ok(())
    }

    fn failed(&self, file: usize, error: Error) {
        let error = in_tree(self.files[file].0, error);
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((file, error));
    }

    fn stops_all(&self, error: &Error) -> bool {
        self.dest.is_some() && super::stops_all(error)
    }
}

impl Open<'_> {
    /// A file read in order (age's armor): the stream into the temporary file (or nowhere),
    /// the plaintext's leaves computed as it goes.
    fn in_order(&self, file: usize, open: &Opening) -> Result<()> {
        let (_, entry, _) = self.files[file];
        let mut reader = BufReader::new(PositionalReader {
            file: &open.source,
            at: 0,
        });
        let mut leaves = Leaves::new(entry.chunk_size as usize);
        let written = match &open.temp {
            Some(temp) => {
                let mut writer = Tee(std::io::BufWriter::new(&temp.file), &mut leaves);
                let n = open
                    .resolved
                    .stream(self.runner, &mut reader, &mut writer)?;
                writer.0.flush().map_err(|e| Error::io("writing it", e))?;
                n
            }
            None => open
                .resolved
                .stream(self.runner, &mut reader, &mut leaves)?,
        };
        *open.leaves.lock().unwrap_or_else(|e| e.into_inner()) = leaves.finish();
        *open.end.lock().unwrap_or_else(|e| e.into_inner()) = Some(written);
        Ok(())
    }
}

/// The BLAKE3 hash of a whole file, read in order.
fn hash_file(file: &File) -> Result<[u8; HASH_LEN]> {
    let mut hasher = blake3::Hasher::new();
    let mut reader = PositionalReader { file, at: 0 };
    std::io::copy(&mut reader, &mut hasher).map_err(|e| Error::io("reading it", e))?;
    Ok(*hasher.finalize().as_bytes())
}

/// A writer that computes the tree hash's leaves of what is written to it.
struct Leaves {
    chunk: usize,
    buf: Vec<u8>,
    leaves: Vec<[u8; HASH_LEN]>,
}

impl Leaves {
    fn new(chunk: usize) -> Self {
        Leaves {
            chunk,
            buf: Vec::with_capacity(chunk),
            leaves: Vec::new(),
        }
    }

    fn finish(mut self) -> Vec<[u8; HASH_LEN]> {
        if !self.buf.is_empty() || self.leaves.is_empty() {
            self.leaves.push(leaf(self.leaves.len() as u64, &self.buf));
        }
        self.leaves
    }
}

impl Write for Leaves {
    fn write(&mut self, mut data: &[u8]) -> std::io::Result<usize> {
        let n = data.len();
        while !data.is_empty() {
            if self.buf.len() == self.chunk {
                let index = self.leaves.len() as u64;
                self.leaves.push(leaf(index, &self.buf));
                self.buf.clear();
            }
            let take = (self.chunk - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes to a writer and to the leaves.
struct Tee<'a, W: Write>(W, &'a mut Leaves);

impl<W: Write> Write for Tee<'_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(data)?;
        self.1.write_all(&data[..n])?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Sealing;
    use crate::tree::NoGuard;
    use crate::tree::seal::write_manifest;

    /// A manifest (written by someone with the secret) that claims a file of 2^60 bytes plans
    /// only what the file on disk holds, and the file fails, named, without the run
    /// allocating for the claim: in the container and in armored age (read in order).
    #[test]
    fn a_manifest_claiming_sizes_no_file_has_stays_cheap() {
        let identity = age::x25519::Identity::generate();
        let mut recipients = crate::recipient::Recipients::new();
        recipients
            .add(&identity.to_public().to_string(), "test")
            .unwrap();
        let mut identities = Identities::new();
        use age::secrecy::ExposeSecret;
        identities
            .add_file("test", identity.to_string().expose_secret().as_bytes())
            .unwrap();
        let cases = [
            (
                Secret::Key(crate::container::Key::generate()),
                Sealing::default(),
                None,
            ),
            (
                Secret::Recipients(Arc::new(recipients)),
                Sealing {
                    format: crate::request::Format::Age,
                    armor: true,
                    ..Sealing::default()
                },
                Some(Secret::Identities(Arc::new(identities))),
            ),
        ];
        for (secret, sealing, opener) in cases {
            let dir = tempfile::tempdir().unwrap();
            let plain = dir.path().join("plain");
            std::fs::create_dir(&plain).unwrap();
            std::fs::write(plain.join("f"), vec![7u8; 100]).unwrap();
            std::fs::write(plain.join("g"), vec![8u8; 100]).unwrap();
            let sealed = dir.path().join("sealed");
            let runner = Runner::new();
            let seal = Request::encrypt(secret.clone(), sealing.clone()).unwrap();
            super::super::encrypt(&runner, &seal, &plain, &sealed, &Options::default()).unwrap();
            let open = Request::decrypt(opener.unwrap_or(secret.clone()), None).unwrap();
            let mut manifest = read_manifest(&runner, &open, &sealed).unwrap();
            let at = manifest
                .entries
                .iter()
                .position(|e| e.path == b"f")
                .unwrap();
            let EntryKind::File(file) = &mut manifest.entries[at].kind else {
                panic!("f is a file")
            };
            file.size = 1 << 60;
            let dest = Dest {
                root: sealed.clone(),
                replace: true,
                named: false,
                sync: false,
                guard: Arc::new(NoGuard),
            };
            let rewrite = Request::encrypt(
                secret,
                Sealing {
                    sign: None,
                    chunk_size: None,
                    ..sealing
                },
            )
            .unwrap();
            write_manifest(&runner, &rewrite, &mut manifest, None, &dest).unwrap();

            let back = dir.path().join("back");
            let done = decrypt(&runner, &open, &sealed, &back, &Options::default()).unwrap();
            assert_eq!(done.files, 1);
            assert_eq!(done.failures.len(), 1);
            let failure = done.failures[0].to_string();
            assert!(
                failure.starts_with("f: ") && failure.contains("shorter than the size"),
                "{failure}"
            );
            assert_eq!(std::fs::read(back.join("g")).unwrap(), vec![8u8; 100]);
        }
    }
}
