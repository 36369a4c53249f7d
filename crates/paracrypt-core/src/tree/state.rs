//! What the host that encrypts a tree keeps of it, beside the tree and out of reach of whoever
//! holds the output: the generation it last wrote there, and, for a tree encrypted to
//! recipients, that manifest's plaintext (`docs/guide/security.md`, *Trees on storage you
//! don't trust*).
//!
//! An update reads the tree already at its output, where others may write. What it reads is
//! held against this record: an older generation put back, or another tree put in its place,
//! is refused; and a tree encrypted to recipients, whose manifest anyone holding their public
//! keys could have written, is updated from the manifest recorded here, which needs no
//! identity (a backup host that cannot read its own backups). Losing the record costs one
//! full encryption of the tree, never data.
//!
//! One file per output (named by a hash of where the output is), under
//! `$PARACRYPT_STATE_DIR`, else `$XDG_STATE_HOME/paracrypt`, else `~/.local/state/paracrypt`,
//! authenticated with a key of the host's own kept beside it (`host.key`, owner-only), so that
//! a record altered, or copied in from another host, is refused rather than trusted.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;
use zeroize::Zeroizing;

use super::manifest::{MAX_MANIFEST, Manifest};
use crate::error::{Error, Result};
use crate::sign::tree::HASH_LEN;

/// The bytes a record starts with.
const MAGIC: &[u8; 21] = b"PARACRYPT-TREE-STATE\x01";
/// The host's key file, in the state directory.
const HOST_KEY: &str = "host.key";
/// The folder of the records, in the state directory.
const TREES: &str = "trees";

/// The state directory a front end gets by default: `$PARACRYPT_STATE_DIR`, else
/// `$XDG_STATE_HOME/paracrypt`, else `$HOME/.local/state/paracrypt`; `None` when none of them
/// is set (then nothing is recorded, and nothing is held against a record).
pub fn default_dir() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = set("PARACRYPT_STATE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = set("XDG_STATE_HOME") {
        return Some(PathBuf::from(dir).join("paracrypt"));
    }
    let home: OsString = set("HOME")?;
    Some(PathBuf::from(home).join(".local/state/paracrypt"))
}

/// One manifest as written at the output.
#[derive(Clone)]
pub(crate) struct Written {
    /// The tree's id and the manifest's generation and digest ([`Manifest::digest`]).
    pub tree_id: [u8; 16],
    pub generation: u64,
    pub digest: [u8; HASH_LEN],
    /// The BLAKE3 hash of the manifest's file as written (sealed): what identifies it at the
    /// output without opening it.
    pub sealed: [u8; HASH_LEN],
    /// The manifest's plaintext: kept for a tree encrypted to recipients only (it carries no
    /// key: the files are sealed to the recipients), so that an update needs no identity.
    pub plain: Option<Zeroizing<Vec<u8>>>,
}

impl Written {
    /// The record of `manifest` (just encoded into `plain`), sealed as `sealed`.
    pub fn of(manifest: &Manifest, sealed: &[u8], plain: Option<&[u8]>) -> Self {
        Written {
            tree_id: manifest.tree_id,
            generation: manifest.generation,
            digest: manifest.digest,
            sealed: *blake3::hash(sealed).as_bytes(),
            plain: plain.map(|p| Zeroizing::new(p.to_vec())),
        }
    }

    /// The manifest recorded, when its plaintext is.
    pub fn manifest(&self) -> Option<Result<Manifest>> {
        self.plain.as_ref().map(|plain| Manifest::parse(plain))
    }
}

/// What this host recorded of the tree at one output: the last manifest it wrote there and,
/// while a manifest is being written, that one too (a run stopped between the two leaves
/// either at the output).
pub(crate) struct Record {
    /// The file it is kept in.
    path: PathBuf,
    /// The host's key.
    key: Zeroizing<[u8; 32]>,
    /// Where the output is, as [`TreeOutput::location`](super::TreeOutput::location) says.
    location: String,
    pub last: Option<Written>,
    pub pending: Option<Written>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("path", &self.path)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Record {
    /// The record of the output at `location` under the state directory `dir`, read when
    /// there is one (refused when it was altered, or is another output's), empty otherwise.
    /// Makes the directory and the host's key when missing.
    pub fn open(dir: &Path, location: &str) -> Result<Record> {
        Record::open_with(dir, location, true)
    }

    /// [`Record::open`] making nothing (a dry run): with no host key yet, a key drawn for this
    /// read alone and never stored stands in for the one [`Record::open`] would draw, so a
    /// record found there is refused as the real run refuses it (never checked under a key
    /// anyone could know); the record is never written.
    pub fn read(dir: &Path, location: &str) -> Result<Record> {
        Record::open_with(dir, location, false)
    }

    fn open_with(dir: &Path, location: &str, make: bool) -> Result<Record> {
        let failed = |what: &str, e: io::Error| {
            Error::io(format!("{what} {} (the tree state)", dir.display()), e)
        };
        if make {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir.join(TREES))
                .map_err(|e| failed("cannot make", e))?;
        }
        let key = match make {
            true => host_key(dir),
            false => match read_no_follow(&dir.join(HOST_KEY), 64) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    Ok(Zeroizing::new(rand::random::<[u8; 32]>()))
                }
                _ => host_key_read(dir),
            },
        }
        .map_err(|e| failed("cannot read the host key of", e))?;
        let name = blake3::derive_key("paracrypt tree state name v1", location.as_bytes());
        let path = dir.join(TREES).join(hex::encode(&name[..16]));
        let mut record = Record {
            path,
            key,
            location: location.to_owned(),
            last: None,
            pending: None,
        };
        let bytes = match read_no_follow(&record.path, MAX_MANIFEST * 2 + 4096) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(record),
            Err(e) => {
                return Err(Error::io(
                    format!("cannot read {}", record.path.display()),
                    e,
                ));
            }
        };
        let refused = |why: &str| {
            Error::Tree(format!(
                "{}: the record of the tree at {location} {why}: remove it to start the record \
                 anew (the next update then encrypts every file again)",
                record.path.display()
            ))
        };
        let Some(body_len) = bytes.len().checked_sub(HASH_LEN) else {
            return Err(refused("is too short"));
        };
        let mac = blake3::keyed_hash(&record.key, &bytes[..body_len]);
        if mac != <[u8; HASH_LEN]>::try_from(&bytes[body_len..]).expect("32 bytes") {
            return Err(refused(
                "was altered, or was written with another host's key",
            ));
        }
        let mut r = &bytes[..body_len];
        let parsed = (|| -> Option<(Vec<u8>, Option<Written>, Option<Written>)> {
            if take(&mut r, MAGIC.len())? != MAGIC {
                return None;
            }
            let at = take_bytes(&mut r)?.to_vec();
            let last = take_written(&mut r)?;
            let pending = take_written(&mut r)?;
            r.is_empty().then_some((at, last, pending))
        })();
        let Some((at, last, pending)) = parsed else {
            return Err(refused("is not a tree state"));
        };
        if at != location.as_bytes() {
            return Err(refused("describes another output"));
        }
        record.last = last;
        record.pending = pending;
        Ok(record)
    }

    /// The file the record is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The manifest at the output (its sealed file's hash `sealed`), when it is one this
    /// host wrote there.
    pub fn find(&self, sealed: &[u8; HASH_LEN]) -> Option<&Written> {
        [&self.pending, &self.last]
            .into_iter()
            .flatten()
            .find(|w| w.sealed == *sealed)
    }

    /// The tree this host last wrote a manifest of, and that manifest's generation (`None`: no
    /// record). Only a manifest known to be written counts: one recorded as being written may
    /// never have reached the output (a run stopped in between).
    pub fn newest(&self) -> Option<(&[u8; 16], u64)> {
        self.last.as_ref().map(|w| (&w.tree_id, w.generation))
    }

    /// Records `written` as being written (before it is), keeping the last one: a run stopped
    /// in between leaves at the output one of the two, and both are known.
    pub fn begin(&mut self, written: Written) -> Result<()> {
        self.pending = Some(written);
        self.save()
    }

    /// Records the pending manifest as written at the output.
    pub fn done(&mut self) -> Result<()> {
        if let Some(pending) = self.pending.take() {
            self.last = Some(pending);
        }
        self.save()
    }

    /// Writes the record: a new file renamed over the old, so that a crash leaves one whole.
    fn save(&self) -> Result<()> {
        let mut body = Zeroizing::new(Vec::new());
        body.extend_from_slice(MAGIC);
        put_bytes(&mut body, self.location.as_bytes());
        put_written(&mut body, self.last.as_ref());
        put_written(&mut body, self.pending.as_ref());
        let mac = blake3::keyed_hash(&self.key, &body);
        body.extend_from_slice(mac.as_bytes());
        write_new(&self.path, &body)
            .map_err(|e| Error::io(format!("cannot write {}", self.path.display()), e))
    }
}

/// The host's key under `dir`, which exists.
fn host_key_read(dir: &Path) -> io::Result<Zeroizing<[u8; 32]>> {
    let path = dir.join(HOST_KEY);
    let bytes = read_no_follow(&path, 64)?;
    <[u8; 32]>::try_from(&bytes[..])
        .map(Zeroizing::new)
        .map_err(|_| io::Error::other(format!("{} is not 32 bytes", path.display())))
}

/// The host's key under `dir`: read, or drawn and written when there is none (linked into
/// place whole, so that two runs starting at once agree on one).
fn host_key(dir: &Path) -> io::Result<Zeroizing<[u8; 32]>> {
    let path = dir.join(HOST_KEY);
    loop {
        match read_no_follow(&path, 64) {
            Ok(bytes) => {
                return <[u8; 32]>::try_from(&bytes[..])
                    .map(Zeroizing::new)
                    .map_err(|_| io::Error::other(format!("{} is not 32 bytes", path.display())));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut key = Zeroizing::new([0u8; 32]);
        rand::Rng::fill_bytes(&mut rand::rng(), &mut key[..]);
        let temp = dir.join(format!(".host-{:016x}.tmp", rand::random::<u64>()));
        create_new(&temp)?.write_all(&key[..])?;
        let linked = fs::hard_link(&temp, &path);
        let _ = fs::remove_file(&temp);
        match linked {
            Ok(()) => return Ok(key),
            // Another run linked its key first: read that one.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes `data` as the file `path`: a new owner-only file beside it, renamed over it.
fn write_new(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!(".state-{:016x}.tmp", rand::random::<u64>()));
    let written = create_new(&temp).and_then(|mut file| {
        file.write_all(data)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| fs::rename(&temp, path));
    if renamed.is_err() {
        let _ = fs::remove_file(&temp);
    }
    renamed
}

fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags((OFlags::NOFOLLOW | OFlags::CLOEXEC).bits() as i32)
        .open(path)
}

/// The file `path` (not through a link), refused past `cap` bytes.
fn read_no_follow(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK).bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::other(format!("{} is too large", path.display())));
    }
    Ok(bytes)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn put_written(out: &mut Vec<u8>, written: Option<&Written>) {
    let Some(w) = written else {
        out.push(0);
        return;
    };
    out.push(1);
    out.extend_from_slice(&w.tree_id);
    out.extend_from_slice(&w.generation.to_be_bytes());
    out.extend_from_slice(&w.digest);
    out.extend_from_slice(&w.sealed);
    match &w.plain {
        None => out.push(0),
        Some(plain) => {
            out.push(1);
            put_bytes(out, plain);
        }
    }
}

fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if r.len() < n {
        return None;
    }
    let (head, rest) = r.split_at(n);
    *r = rest;
    Some(head)
}

fn take_array<const N: usize>(r: &mut &[u8]) -> Option<[u8; N]> {
    take(r, N).map(|b| b.try_into().expect("N bytes"))
}

fn take_bytes<'a>(r: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = u64::from_be_bytes(take_array(r)?);
    take(r, usize::try_from(len).ok()?)
}

/// A recorded manifest; `Some(None)` where none is recorded, `None` for bytes that are not one.
fn take_written(r: &mut &[u8]) -> Option<Option<Written>> {
    match take(r, 1)?[0] {
        0 => return Some(None),
        1 => {}
        _ => return None,
    }
    let tree_id = take_array(r)?;
    let generation = u64::from_be_bytes(take_array(r)?);
    let digest = take_array(r)?;
    let sealed = take_array(r)?;
    let plain = match take(r, 1)?[0] {
        0 => None,
        1 => Some(Zeroizing::new(take_bytes(r)?.to_vec())),
        _ => return None,
    };
    Some(Some(Written {
        tree_id,
        generation,
        digest,
        sealed,
        plain,
    }))
}

/// A local output as a record names it: its absolute path, links resolved (its parent's,
/// when it is not made yet).
pub(crate) fn local_location(root: &Path) -> String {
    let at = fs::canonicalize(root)
        .or_else(|e| match (root.parent(), root.file_name()) {
            (Some(parent), Some(name)) => {
                let parent = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
                fs::canonicalize(parent).map(|p| p.join(name))
            }
            _ => Err(e),
        })
        .or_else(|_| std::path::absolute(root))
        .unwrap_or_else(|_| root.to_path_buf());
    String::from_utf8_lossy(at.as_os_str().as_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(generation: u64, plain: Option<&[u8]>) -> Written {
        Written {
            tree_id: [7; 16],
            generation,
            digest: [generation as u8; HASH_LEN],
            sealed: [generation as u8 + 100; HASH_LEN],
            plain: plain.map(|p| Zeroizing::new(p.to_vec())),
        }
    }

    #[test]
    fn a_record_reads_back_and_refuses_what_was_altered_or_moved() {
        let dir = tempfile::tempdir().unwrap();
        let mut record = Record::open(dir.path(), "/out").unwrap();
        assert!(record.last.is_none() && record.newest().is_none());
        record.begin(written(1, Some(b"plain"))).unwrap();
        record.done().unwrap();
        record.begin(written(2, None)).unwrap();

        let read = Record::open(dir.path(), "/out").unwrap();
        // Generation 2 is being written: it may not have reached the output.
        assert_eq!(read.newest(), Some((&[7; 16], 1)));
        let last = read.find(&[101; HASH_LEN]).unwrap();
        assert_eq!(last.plain.as_deref().map(|p| &p[..]), Some(&b"plain"[..]));
        assert!(read.find(&[102; HASH_LEN]).is_some());
        assert!(read.find(&[103; HASH_LEN]).is_none());

        // Another output's record put in this one's place.
        let other = Record::open(dir.path(), "/elsewhere").unwrap();
        fs::copy(&read.path, &other.path).unwrap();
        let err = Record::open(dir.path(), "/elsewhere").unwrap_err();
        assert!(
            err.to_string().contains("describes another output"),
            "{err}"
        );

        // One byte changed.
        let mut bytes = fs::read(&read.path).unwrap();
        bytes[30] ^= 1;
        fs::write(&read.path, &bytes).unwrap();
        let err = Record::open(dir.path(), "/out").unwrap_err();
        assert!(err.to_string().contains("was altered"), "{err}");

        // Another host's key.
        let mut fresh = Record::open(dir.path(), "/third").unwrap();
        fresh.begin(written(1, None)).unwrap();
        fs::remove_file(dir.path().join(HOST_KEY)).unwrap();
        let err = Record::open(dir.path(), "/third").unwrap_err();
        assert!(err.to_string().contains("another host's key"), "{err}");
    }

    /// A dry run's read with no host key refuses a record there, as the real run would: it
    /// never checks one under a key anyone could know (a record sealed under all zeros).
    #[test]
    fn a_dry_run_without_a_host_key_refuses_a_record_as_the_real_run_does() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path()).unwrap();
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.path().join(HOST_KEY))
            .unwrap()
            .write_all(&[0; 32])
            .unwrap();
        let mut forged = Record::open(dir.path(), "/out").unwrap();
        forged.begin(written(1, None)).unwrap();
        forged.done().unwrap();
        fs::remove_file(dir.path().join(HOST_KEY)).unwrap();
        let err = Record::read(dir.path(), "/out").unwrap_err();
        assert!(err.to_string().contains("another host's key"), "{err}");
        assert!(!dir.path().join(HOST_KEY).exists(), "a dry run made a key");
        // No record and no key: empty, and still nothing made.
        let empty = Record::read(dir.path(), "/elsewhere").unwrap();
        assert!(empty.newest().is_none());
        assert!(!dir.path().join(HOST_KEY).exists());
    }

    #[test]
    fn a_link_in_the_records_place_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let record = Record::open(dir.path(), "/out").unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::write(&elsewhere, b"x").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &record.path).unwrap();
        assert!(Record::open(dir.path(), "/out").is_err());
        assert_eq!(fs::read(&elsewhere).unwrap(), b"x");
    }
}
