//! Rekeying a tree: who can open an encrypted tree changes, and its payload bytes do not.
//!
//! What changes depends on how the tree's files are sealed (`docs/FORMAT.md`, *Rekeying a
//! tree*):
//!
//! - **To recipients**: each file wraps its own file key. Each file gets a new header wrapping
//!   the same file key for the new recipients only ([`crate::rekey::rekey_header`]), and every
//!   byte after it is copied as it is, on the one schedule (a large file in ranges, on every
//!   thread); the new manifest lists each file's new header length and hash and is sealed to
//!   the new recipients.
//! - **With a password**: the files are sealed with the tree key (or tree identity) the manifest
//!   carries, not with the password: they are copied byte for byte, and only the manifest is
//!   sealed again, with the new password.
//! - **With a key file**: the files are version 1 containers of the key, with no file key to
//!   re-wrap: refused, as one such file's rekey is ([`Error::CannotRekey`]).
//!
//! The new manifest keeps the tree id, the keying and the name key, has the next generation
//! and the old manifest's digest as its parent, as an update's does. A signed tree's files are
//! signed by its signer, which the new manifest must name too: it is rekeyed only with that
//! signing key, which signs the new manifest.
//!
//! Rekeying is not revocation (see [`crate::rekey`]): the file keys, the tree key and the
//! payloads do not change.
//!
//! The old tree is read through a [`TreeInput`] and the new one written through a
//! [`TreeOutput`], so a prefix in object storage is either ([`rekey_from`], [`rekey_to`]); a
//! local directory into a local directory copies each payload in the kernel
//! (`copy_file_range`, which shares extents where the filesystem can), anything else through
//! each thread's scratch buffer, in the same runs.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::io::{InputFile, InputReader, OutputFile, TreeInput, TreeOutput};
use super::manifest::{EntryKind, FileEntry, Keying, Manifest, TreeFormat};
use super::open::{local, read_manifest_from};
use super::out::{Out, Temp, finish_file, open_no_follow};
use super::path::shown;
use super::schedule::{self, FileWork, Planned};
use super::seal::{local_out, now, write_manifest};
use super::walk::join;
use super::{Action, MANIFEST, Options, Summary, in_tree, tell, tell_failed};
use crate::buffer::with_scratch;
use crate::error::{Error, Result};
use crate::recipe::Runner;
use crate::recipient::{Identities, Recipients};
use crate::request::Secret;
use crate::request::{Format, Kind, Request, Sealing};
use crate::sign::SigningKey;
use crate::sign::tree::HASH_LEN;

/// The bytes of an encrypted file copied by one step of the schedule.
const COPY_CHUNK: u64 = 1 << 20;

/// What a rekeyed tree is sealed with.
#[derive(Clone, Debug)]
pub struct RekeyTo {
    /// The new secret: recipients for a tree encrypted to recipients (every file's header
    /// rewrapped for them), a password for a tree encrypted with a password (its manifest
    /// sealed again).
    pub secret: Secret,
    /// A signed tree's signing key, the one that signed it: it signs the new manifest.
    pub sign: Option<SigningKey>,
}

/// Refuses, before any credential is asked for, what [`rekey`] refuses from the paths alone:
/// those [`super::check`] refuses, options a rekey takes no part in, and a tree encrypted with a
/// key file (seen from its manifest's header: no key is needed to tell).
pub fn check_rekey(input: &Path, output: &Path, options: &Options) -> Result<()> {
    rekey_options(options)?;
    super::seal::check(input, output, options)?;
    keyed_by_file(&local(input))
}

/// [`check_rekey`] of the encrypted tree `input`, a [`TreeInput`] a front end plugs in (a
/// prefix in object storage), into the local directory `output` (checked as
/// [`check_dest`](super::check_dest) checks it), or into an output plugged in (`None`: checked
/// by its own rules, [`TreeOutput::prepare`], when the rekey runs).
pub fn check_rekey_from(
    input: &dyn TreeInput,
    output: Option<&Path>,
    options: &Options,
) -> Result<()> {
    rekey_options(options)?;
    match output {
        Some(output) => super::seal::check_dest(output, options)?,
        None if options.dry_run => return Err(super::dry_run_refused()),
        None => {}
    }
    keyed_by_file(input)
}

/// Refuses the options a rekey takes no part in.
fn rekey_options(options: &Options) -> Result<()> {
    if options.update || options.checksum || options.hide_names {
        return Err(Error::Request(
            "a rekey writes a new tree beside the old one, with the old one's names: it takes no \
             update, checksum or hide_names"
                .into(),
        ));
    }
    Ok(())
}

/// Refuses a tree encrypted with a key file, seen from its manifest's header (a manifest that
/// cannot be read is left to the manifest's read, which names what is wrong).
fn keyed_by_file(input: &dyn TreeInput) -> Result<()> {
    let Ok(file) = input.open(MANIFEST.as_bytes()) else {
        return Ok(());
    };
    let reader = InputReader {
        file: &*file,
        at: 0,
    };
    if crate::info::read(&mut std::io::BufReader::new(reader), None, false)
        .is_ok_and(|info| info.opened_by_key_file())
    {
        return Err(in_tree(
            MANIFEST.as_bytes(),
            Error::CannotRekey(
                "the tree is encrypted with a key file: its files are version 1 containers, \
                 whose key goes straight into the key schedule, with no file key to re-wrap; \
                 decrypt it and encrypt it again (to recipients, for a tree that can be rekeyed)",
            ),
        ));
    }
    Ok(())
}

/// Rekeys the encrypted tree at `input` into the directory `output`: its manifest opened with
/// `open` (a decryption: [`Request::decrypt`], with the old identities or password), the new
/// tree sealed as `to` says. See docs/FORMAT.md, *Rekeying a tree*. The old tree is not changed.
///
/// `output` must not exist (its parent must), or be an empty directory, or
/// [`Options::force`] must be set. Refused before anything is written: a tree encrypted with a
/// key file, a password tree given recipients or a recipient tree given a password (or a
/// passphrase as recipients), a recipient tree of armored age files (their payload's bytes
/// would shift), a signed tree without its signing key (or with another), and a signing key
/// for an unsigned tree (its files are not signed). Then, still before anything is written,
/// every stored file's header is checked against the manifest (a first pass on the caller's
/// pool, one file open per thread): a tree that is not as its manifest lists it (a file
/// missing, swapped for another, or not the one an old manifest put back lists) is refused
/// whole, [`Error::TreeDiffers`] naming every such file, and nothing at the output is made or
/// replaced: the new tree is the next generation of the tree, and one that left those files
/// out would no longer name them. A file that fails otherwise (unreadable, changed while it is
/// copied, or since the first pass) is reported in [`Summary::failures`] and left out of the
/// new manifest (marked incomplete), and the others go on; when no file could be rekeyed at
/// all, nothing is left at the output.
///
/// What the input holds that its manifest does not list (a file added beside the tree's, as
/// [`super::verify`] names it) is not carried into the new tree, whose manifest would not list
/// it either: it is named in [`Summary::left_behind`], and the rekey goes on.
pub fn rekey(
    runner: &Runner,
    open: &Request,
    to: &RekeyTo,
    input: &Path,
    output: &Path,
    options: &Options,
) -> Result<Summary> {
    check_rekey(input, output, options)?;
    let out = local_out(output, options);
    rekey_out(runner, open, to, &local(input), &out, options)
}

/// [`rekey`] of the encrypted tree `input`, a [`TreeInput`] a front end plugs in (a prefix in
/// object storage), into the local directory `output`: the same refusals and checks, every
/// file's header and payload read through the input at the version it listed. A request with
/// plugin identities opens each file's key as the file is rekeyed (the keys are opened ahead,
/// in one session, for a local input only).
pub fn rekey_from(
    runner: &Runner,
    open: &Request,
    to: &RekeyTo,
    input: &dyn TreeInput,
    output: &Path,
    options: &Options,
) -> Result<Summary> {
    check_rekey_from(input, Some(output), options)?;
    let out = local_out(output, options);
    rekey_out(runner, open, to, input, &out, options)
}

/// [`rekey_from`] into `output`, a [`TreeOutput`] a front end plugs in (a prefix in object
/// storage), checked by its own rules ([`TreeOutput::prepare`]) after the tree is: each new
/// file is written through the output and committed there only once it is whole (an upload
/// completed, or aborted when the file fails). An object store keeps no directories, modes or
/// times: the new manifest lists them, as the old one did.
pub fn rekey_to(
    runner: &Runner,
    open: &Request,
    to: &RekeyTo,
    input: &dyn TreeInput,
    output: Arc<dyn TreeOutput>,
    options: &Options,
) -> Result<Summary> {
    check_rekey_from(input, None, options)?;
    if options.dry_run {
        return Err(super::dry_run_refused());
    }
    rekey_out(runner, open, to, input, &Out::Other(output), options)
}

/// [`rekey`] from any input into any output, once the paths and options are checked.
fn rekey_out(
    runner: &Runner,
    open: &Request,
    to: &RekeyTo,
    input: &dyn TreeInput,
    out: &Out,
    options: &Options,
) -> Result<Summary> {
    if open.uses_plugins()
        && let Some(at) = input.local()
    {
        super::open::open_ahead(open, at);
    }
    let old = read_manifest_from(runner, open, input)?;
    let identities = plan_rekey(&old, open, to)?;
    let manifest_request = manifest_request(&old, input, to)?;
    let files = files_of(&old);
    // The first pass: nothing is written before the tree is known to be as listed.
    let payloads = check_stored(&old, input, &files).map_err(Error::TreeDiffers)?;
    let left_behind = super::verify::unlisted_once(input, &old)?;
    if options.dry_run {
        // What would be done, writing nothing: every file rekeyed.
        out.check(input.local(), options.force)?;
        let mut summary = Summary {
            left_behind,
            manifest_complete: old.complete,
            ..Summary::default()
        };
        for (_, path, file) in &files {
            summary.files += 1;
            summary.bytes += file.size;
            tell(options.on_file.as_ref(), path, Action::Rekeyed);
        }
        return Ok(summary);
    }
    let created_root = out.prepare(input.local(), options.force)?;
    let made = match make_dirs(out.get(), &old) {
        Ok(made) => made,
        Err(e) => {
            out.get().remove_made(&[], created_root);
            return Err(e);
        }
    };
    let work = Rekey {
        runner,
        manifest: &old,
        input,
        out,
        keys: identities,
        done: files.iter().map(|_| Mutex::new(None)).collect(),
        failures: Mutex::new(Vec::new()),
        files,
        payloads,
    };
    let ran = schedule::run(&work, &work.planned());
    let (done, failures) = work.into_done();
    for (at, (entry, new)) in old.entries.iter().zip(&done).enumerate() {
        match new {
            Some(_) => tell(options.on_file.as_ref(), &entry.path, Action::Rekeyed),
            None => {
                if let Ok(i) = failures.binary_search_by_key(&at, |(at, _)| *at) {
                    tell_failed(options.on_file.as_ref(), &entry.path, &failures[i].1);
                }
            }
        }
    }
    let mut summary = Summary {
        failures: failures.into_iter().map(|(_, e)| e).collect(),
        not_started: ran.not_started,
        left_behind,
        ..Summary::default()
    };
    let mut manifest = old.clone();
    manifest.entries.clear();
    for (entry, new) in old.entries.iter().zip(done) {
        match (&entry.kind, new) {
            (EntryKind::File(_), None) => {}
            (EntryKind::File(_), Some(file)) => {
                summary.files += 1;
                summary.bytes += file.size;
                manifest.entries.push(super::Entry {
                    kind: EntryKind::File(file),
                    ..entry.clone()
                });
            }
            _ => manifest.entries.push(entry.clone()),
        }
    }
    if summary.files == 0 && (!summary.failures.is_empty() || summary.not_started > 0) {
        out.get().remove_made(&made, created_root);
        return Ok(summary);
    }
    manifest.complete = old.complete && summary.failures.is_empty() && summary.not_started == 0;
    manifest.generation = old.generation + 1;
    manifest.parent = old.digest;
    manifest.written = now();
    manifest.signer = None;
    if let Err(e) = write_manifest(
        runner,
        &manifest_request,
        &mut manifest,
        to.sign.as_ref(),
        out.get(),
    ) {
        summary.failures.push(in_tree(MANIFEST.as_bytes(), e));
        return Ok(summary);
    }
    summary.manifest_complete = manifest.complete;
    // Signed with the key the caller gave, which had to be the tree's signer.
    summary.signer = manifest.signer.clone().map(|key| crate::request::Signer {
        key,
        required: true,
    });
    if !manifest.hides_names() {
        for entry in manifest.entries.iter().rev() {
            if entry.kind == EntryKind::Dir {
                let mode = (entry.mode & 0o777) | 0o700;
                if let Err(e) = out.get().finish_dir(&entry.path, mode, entry.mtime) {
                    let what = format!("cannot set the times of {}", out.get().shown(&entry.path));
                    summary.failures.push(Error::io(what, e));
                }
            }
        }
    }
    Ok(summary)
}

/// Each file of `manifest`: its index in the manifest's entries, its path, its entry.
fn files_of(manifest: &Manifest) -> Vec<(usize, &[u8], &FileEntry)> {
    manifest
        .entries
        .iter()
        .enumerate()
        .filter_map(|(at, e)| match &e.kind {
            EntryKind::File(file) => Some((at, &e.path[..], file)),
            _ => None,
        })
        .collect()
}

/// The first pass, before anything is written: every file's stored header checked against
/// `manifest`, on the caller's pool (a header is a small read; one file open per thread at a
/// time). Returns each file's bytes after its header as they are now, or every file that is
/// not as the manifest lists it ([`Error::TreeMismatch`], naming it), in the tree's order. A
/// file that cannot be opened or read for another reason counts no bytes here: its rekey
/// names why.
fn check_stored(
    manifest: &Manifest,
    input: &dyn TreeInput,
    files: &[(usize, &[u8], &FileEntry)],
) -> std::result::Result<Vec<u64>, Vec<Error>> {
    let checked: Vec<std::result::Result<u64, Error>> = files
        .par_iter()
        .map(|&(_, path, entry)| {
            let stored = manifest.stored(path);
            let mismatch = |why: &str| {
                in_tree(
                    path,
                    Error::TreeMismatch(format!("its encrypted file {} {why}", shown(&stored))),
                )
            };
            let file = match input.open(&stored) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(mismatch("is missing"));
                }
                Err(_) => return Ok(0),
            };
            if !file.is_file() {
                return Err(mismatch("is not a regular file"));
            }
            let Some(payload) = file.len().checked_sub(u64::from(entry.header_len)) else {
                return Err(mismatch("is shorter than its header"));
            };
            match super::verify::input_header_hash(&*file, entry.header_len, manifest.format) {
                Some(hash) if hash == entry.header_hash => Ok(payload),
                // Read, and another header: another file's, or another encryption of this one
                // (an armored file is its header: one of another length is another file).
                Some(_) => Err(mismatch(NOT_LISTED)),
                None if manifest.format == TreeFormat::ArmoredAge && payload != 0 => {
                    Err(mismatch(NOT_LISTED))
                }
                // Not read: its rekey names why.
                None => Ok(payload),
            }
        })
        .collect();
    if checked.iter().all(std::result::Result::is_ok) {
        Ok(checked.into_iter().flatten().collect())
    } else {
        Err(checked
            .into_iter()
            .filter_map(std::result::Result::err)
            .collect())
    }
}

/// Why a stored file holding another header is not the one listed.
const NOT_LISTED: &str =
    "is not the one the manifest lists (another file's, or another encryption of this one)";

/// The policy: what the tree's keying allows `to` to be, and the signer it needs. Returns the
/// old identities and the new recipients when every file's header is rewrapped (a tree to
/// recipients), `None` when the files are copied as they are (a password tree).
fn plan_rekey(
    old: &Manifest,
    open: &Request,
    to: &RekeyTo,
) -> Result<Option<(Arc<Identities>, Arc<Recipients>)>> {
    match (&old.signer, &to.sign) {
        (Some(signer), None) => {
            return Err(Error::Request(format!(
                "the tree is signed by {}: its new manifest must be signed again, by that key \
                 (its files are signed by it)",
                signer.fingerprint()
            )));
        }
        (Some(signer), Some(key)) => {
            let field = key.verifying_key().to_field();
            if key.scheme() != signer.scheme() || field != signer.to_field() {
                return Err(Error::Request(format!(
                    "the tree is signed by {}, and its files too: its new manifest is signed by \
                     that key, not {}",
                    signer.fingerprint(),
                    key.verifying_key().fingerprint()
                )));
            }
        }
        (None, Some(_)) => {
            return Err(Error::Request(
                "the tree is not signed, nor are its files: a signature over its new manifest \
                 alone would not prove them; decrypt it and encrypt it again with a signing key"
                    .into(),
            ));
        }
        (None, None) => {}
    }
    match (&old.keying, &to.secret) {
        (Keying::Secret, Secret::Recipients(new)) if !new.is_passphrase() => {
            if old.format == TreeFormat::ArmoredAge {
                return Err(Error::CannotRekey(
                    "the tree's files are armored age files; rekeying copies each payload byte \
                     for byte, which needs the binary form (encrypt without armor)",
                ));
            }
            let Kind::Decrypt {
                secret: Secret::Identities(identities),
                ..
            } = open.kind()
            else {
                return Err(Error::Request(
                    "a tree encrypted to recipients is opened with an identity".into(),
                ));
            };
            Ok(Some((Arc::clone(identities), Arc::clone(new))))
        }
        (Keying::Secret, _) => Err(Error::Request(
            "the tree is encrypted to recipients: it is rekeyed to recipients (each file's key \
             rewrapped for them); to put it under a password, decrypt it and encrypt it again \
             with one"
                .into(),
        )),
        (Keying::TreeKey(_) | Keying::TreeIdentity(_), Secret::Password(..)) => Ok(None),
        (Keying::TreeKey(_) | Keying::TreeIdentity(_), _) => Err(Error::Request(
            "the tree is encrypted with a password (its files with a key its manifest carries): \
             it is rekeyed to a new password; to give it recipients, decrypt it and encrypt it \
             again to them"
                .into(),
        )),
    }
}

/// How the new manifest is sealed: the tree's format, armor and (a container) the old
/// manifest's suite, in the default chunks, to `to`'s secret.
fn manifest_request(old: &Manifest, input: &dyn TreeInput, to: &RekeyTo) -> Result<Request> {
    let (format, armor) = match old.format {
        TreeFormat::Container => (Format::Container, false),
        TreeFormat::Age => (Format::Age, false),
        TreeFormat::ArmoredAge => (Format::Age, true),
        TreeFormat::Plain => unreachable!("refused by read_manifest"),
    };
    let suite = if format == Format::Container {
        let cannot = |e| {
            let what = format!("cannot read {}", input.shown(MANIFEST.as_bytes()));
            Error::io(what, e)
        };
        let file = input.open(MANIFEST.as_bytes()).map_err(cannot)?;
        let mut reader = InputReader {
            file: &*file,
            at: 0,
        };
        crate::info::read(&mut reader, None, false)?.suite()
    } else {
        None
    };
    Request::encrypt(
        to.secret.clone(),
        Sealing {
            format,
            armor,
            suite,
            chunk_size: None,
            sign: None,
        },
    )
}

/// Makes the new tree's directories: the tree's own, or with hidden names those the opaque
/// names are spread over. Returns those it made, parents first.
fn make_dirs(out: &dyn TreeOutput, manifest: &Manifest) -> Result<Vec<Vec<u8>>> {
    let dirs: Vec<Vec<u8>> = if manifest.hides_names() {
        let mut fans: Vec<Vec<u8>> = manifest
            .files()
            .map(|(entry, _)| super::path::parent(&manifest.stored(&entry.path)).to_vec())
            .collect();
        fans.sort_unstable();
        fans.dedup();
        fans
    } else {
        manifest
            .entries
            .iter()
            .filter(|e| e.kind == EntryKind::Dir && !e.path.is_empty())
            .map(|e| e.path.clone())
            .collect()
    };
    let mut made = Vec::new();
    for dir in dirs {
        match out.mkdir(&dir) {
            Ok(true) => made.push(dir),
            Ok(false) => {}
            Err(e) => {
                out.remove_made(&made, false);
                let what = format!("cannot create directory {}", out.shown(&dir));
                return Err(Error::io(what, e));
            }
        }
    }
    Ok(made)
}

/// The rekeying of a tree's files, as the schedule runs it.
struct Rekey<'a> {
    runner: &'a Runner,
    manifest: &'a Manifest,
    input: &'a dyn TreeInput,
    out: &'a Out,
    /// The old identities and the new recipients; `None`: files copied as they are.
    keys: Option<(Arc<Identities>, Arc<Recipients>)>,
    /// Each file: its index in the manifest's entries, its path, its entry.
    files: Vec<(usize, &'a [u8], &'a FileEntry)>,
    /// Each file's bytes after its header, as the first pass found them ([`check_stored`]).
    payloads: Vec<u64>,
    done: Vec<Mutex<Option<FileEntry>>>,
    failures: Mutex<Vec<(usize, Error)>>,
}

/// A file being rekeyed.
struct Rekeying<'a> {
    source: Stored<'a>,
    /// The stored file's length when it was opened.
    len: u64,
    target: Target<'a>,
    /// Where the payload starts in the source, and in the new file.
    from: u64,
    to: u64,
    /// The new header's length and hash.
    header: (u32, [u8; HASH_LEN]),
}

/// An encrypted file read: a local file (copied in the kernel into a local file), or a file
/// of an input plugged in.
enum Stored<'a> {
    Local(File),
    Other(Box<dyn InputFile + 'a>),
}

impl Stored<'_> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        match self {
            Stored::Local(file) => file.read_exact_at(buf, offset),
            Stored::Other(file) => file.read_exact_at(buf, offset),
        }
    }
}

/// A new encrypted file being written: a local temporary file, or a file of an output plugged
/// in.
enum Target<'a> {
    Local(Temp),
    Other(Box<dyn OutputFile + 'a>),
}

impl Target<'_> {
    fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
        match self {
            Target::Local(temp) => temp.file.write_all_at(data, offset),
            Target::Other(file) => file.write_at(data, offset),
        }
    }
}

impl<'a> Rekey<'a> {
    /// The schedule's view: each file's bytes after its header, in copy steps.
    fn planned(&self) -> Vec<Planned> {
        self.payloads
            .iter()
            .map(|&bytes| Planned {
                bytes,
                chunks: bytes.div_ceil(COPY_CHUNK).max(1),
                chunk_size: COPY_CHUNK as usize,
                in_order: false,
            })
            .collect()
    }

    /// Each entry's new file entry (by the manifest's entries; `None` for what is not a file
    /// or failed), and the failures in the tree's order, each with its entry's index.
    fn into_done(self) -> (Vec<Option<FileEntry>>, Vec<(usize, Error)>) {
        let mut by_entry = vec![None; self.manifest.entries.len()];
        for ((at, _, _), done) in self.files.iter().zip(self.done) {
            by_entry[*at] = done.into_inner().unwrap_or_else(|e| e.into_inner());
        }
        let mut failures = self
            .failures
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        failures.sort_by_key(|(at, _)| *at);
        let failures = failures
            .into_iter()
            .map(|(at, e)| (self.files[at].0, e))
            .collect();
        (by_entry, failures)
    }

    /// A file found other than the first pass found it: changed since (not a refusal of the
    /// tree, which was as listed when it was checked; the file is left out).
    fn changed(&self, file: usize, why: &str) -> Error {
        let stored = self.manifest.stored(self.files[file].1);
        Error::InputChanged(format!(
            "its encrypted file {} changed since the tree was checked: it {why}",
            shown(&stored)
        ))
    }

    /// Opens the stored file `stored` (of the file `file`): its length, and whether it is a
    /// regular file.
    fn open_stored(&self, file: usize, stored: &[u8]) -> Result<(Stored<'a>, u64, bool)> {
        let missing = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::NotFound {
                self.changed(file, "is missing")
            } else {
                Error::io("cannot open its encrypted file", e)
            }
        };
        match self.input.local() {
            Some(root) => {
                let source = open_no_follow(&join(root, stored)).map_err(missing)?;
                let meta = source
                    .metadata()
                    .map_err(|e| Error::io("cannot read its encrypted file's metadata", e))?;
                Ok((Stored::Local(source), meta.len(), meta.is_file()))
            }
            None => {
                let source = self.input.open(stored).map_err(missing)?;
                let (len, is_file) = (source.len(), source.is_file());
                Ok((Stored::Other(source), len, is_file))
            }
        }
    }
}

impl<'a> FileWork for Rekey<'a> {
    type Open = Rekeying<'a>;

    fn open(&self, file: usize) -> Result<Rekeying<'a>> {
        let (_, path, entry) = self.files[file];
        let stored = self.manifest.stored(path);
        let (source, len, is_file) = self.open_stored(file, &stored)?;
        if !is_file {
            return Err(self.changed(file, "is not a regular file"));
        }
        if len.checked_sub(u64::from(entry.header_len)) != Some(self.payloads[file])
            && len >= u64::from(entry.header_len)
        {
            return Err(Error::InputChanged(
                "its encrypted file changed since the tree was checked".into(),
            ));
        }
        // The header is checked against the manifest again before any key touches it, as a
        // decryption does: a file swapped since the first pass is not rekeyed.
        if len < u64::from(entry.header_len) {
            return Err(self.changed(file, "is shorter than its header"));
        }
        if entry.header_len > 1 << 20 {
            return Err(Error::CannotRekey(
                "its header is over 1 MiB (an armored file is all header), more than a rekey \
                 reads",
            ));
        }
        let mut header = vec![0u8; entry.header_len as usize];
        source
            .read_exact_at(&mut header, 0)
            .map_err(|e| Error::io("reading its header", e))?;
        if *blake3::hash(&header).as_bytes() != entry.header_hash {
            return Err(self.changed(file, NOT_LISTED));
        }
        let new_header = match &self.keys {
            None => header,
            Some((old, new)) => {
                // The format's header, then what the manifest's header also covers (age's
                // payload nonce), as it is.
                let mut rest = &header[..];
                let mut rekeyed =
                    crate::rekey::rekey_header(&mut rest, Arc::clone(old), Arc::clone(new))?;
                rekeyed.extend_from_slice(rest);
                rekeyed
            }
        };
        let header_len = u32::try_from(new_header.len())
            .map_err(|_| Error::TreeMismatch("its new header is too long".into()))?;
        let new_len = new_header.len() as u64 + self.payloads[file];
        let cannot = |e| Error::io("cannot create its new encrypted file", e);
        let target = match self.out {
            Out::Local(dest) => Target::Local(dest.temp(&stored).map_err(cannot)?),
            Out::Other(out) => Target::Other(out.create(&stored, new_len).map_err(cannot)?),
        };
        target
            .write_all_at(&new_header, 0)
            .map_err(|e| Error::io("writing its header", e))?;
        Ok(Rekeying {
            source,
            len,
            target,
            from: u64::from(entry.header_len),
            to: new_header.len() as u64,
            header: (header_len, *blake3::hash(&new_header).as_bytes()),
        })
    }

    fn run(&self, _file: usize, open: &Rekeying<'a>, chunks: Range<u64>) -> Result<()> {
        let payload = open.len - open.from;
        let start = (chunks.start * COPY_CHUNK).min(payload);
        let end = (chunks.end * COPY_CHUNK).min(payload);
        let (from, to, len) = (open.from + start, open.to + start, end - start);
        match (&open.source, &open.target) {
            (Stored::Local(source), Target::Local(temp)) => {
                copy_range(source, from, &temp.file, to, len)
            }
            (source, target) => copy_through(
                |buf, at| source.read_exact_at(buf, at),
                from,
                |data, at| target.write_all_at(data, at),
                to,
                len,
            ),
        }
        .map_err(|e| Error::io("copying its payload", e))?;
        self.runner.advance(len);
        Ok(())
    }

    fn finish(&self, file: usize, open: Rekeying<'a>) -> Result<()> {
        let (at, path, entry) = self.files[file];
        if let Stored::Local(source) = &open.source {
            let now = source
                .metadata()
                .map_err(|e| Error::io("cannot read its encrypted file's metadata", e))?;
            if now.len() != open.len {
                return Err(Error::InputChanged(
                    "its encrypted file changed while it was rekeyed".into(),
                ));
            }
        }
        // An object is read at the version the input listed: one replaced since fails when it
        // is read.
        let listed = &self.manifest.entries[at];
        let (mode, mtime) = ((listed.mode & 0o777) | 0o600, listed.mtime);
        let stored = self.manifest.stored(path);
        let named = |e| Error::io("cannot give its encrypted file its name", e);
        match (open.target, self.out) {
            (Target::Local(temp), Out::Local(dest)) => {
                if !self.manifest.hides_names() {
                    finish_file(&temp.file, mode, mtime)
                        .map_err(|e| Error::io("setting its mode and time", e))?;
                }
                dest.commit(temp, &stored).map_err(named)?;
            }
            (Target::Other(new), _) => {
                if !self.manifest.hides_names() {
                    new.set_times(mode, mtime)
                        .map_err(|e| Error::io("setting its mode and time", e))?;
                }
                new.commit(&stored).map_err(named)?;
            }
            (Target::Local(_), Out::Other(_)) => unreachable!("a local file into a local output"),
        }
        let (header_len, header_hash) = open.header;
        *self.done[file].lock().unwrap_or_else(|e| e.into_inner()) = Some(FileEntry {
            header_len,
            header_hash,
            ..entry.clone()
        });
        Ok(())
    }

    fn failed(&self, file: usize, error: Error) {
        let error = in_tree(self.files[file].1, error);
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((file, error));
    }

    fn stops_all(&self, error: &Error) -> bool {
        super::stops_all(error)
    }
}

/// Copies `len` bytes of `source` at `from` to `dest` at `to`: in the kernel
/// (`copy_file_range`, which shares extents where the filesystem can), else through this
/// thread's scratch buffer.
fn copy_range(source: &File, from: u64, dest: &File, to: u64, len: u64) -> std::io::Result<()> {
    let (mut from, mut to, mut left) = (from, to, len);
    while left > 0 {
        let want = left.min(1 << 30) as usize;
        match rustix::fs::copy_file_range(source, Some(&mut from), dest, Some(&mut to), want) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the file ended early",
                ));
            }
            Ok(n) => left -= n as u64,
            Err(_) => {
                let read = |buf: &mut [u8], at| source.read_exact_at(buf, at);
                return copy_through(read, from, |data, at| dest.write_all_at(data, at), to, left);
            }
        }
    }
    Ok(())
}

/// Copies `len` bytes read by `read` at `from` to `write` at `to`, through this thread's
/// scratch buffer.
fn copy_through(
    read: impl Fn(&mut [u8], u64) -> std::io::Result<()>,
    from: u64,
    write: impl Fn(&[u8], u64) -> std::io::Result<()>,
    to: u64,
    len: u64,
) -> std::io::Result<()> {
    let step = len.min(COPY_CHUNK) as usize;
    with_scratch(step, |buf| {
        let mut done = 0;
        while done < len {
            let n = (len - done).min(step as u64) as usize;
            read(&mut buf[..n], from + done)?;
            write(&buf[..n], to + done)?;
            done += n as u64;
        }
        Ok(())
    })
}
