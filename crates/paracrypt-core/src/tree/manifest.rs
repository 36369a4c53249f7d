//! The manifest of an encrypted tree (`docs/FORMAT.md`, *Trees*): every directory, file and
//! symbolic link of the tree, with what a decryption restores (mode, modification time, a
//! link's target) and what binds each encrypted file to its place (its plaintext's length and
//! BLAKE3 tree-hash root, the hash of its encrypted header), optionally signed as a whole.
//!
//! The manifest's bytes come from whoever wrote it: [`Manifest::parse`] checks every field
//! and every path before anything is created from them, allocates only as the bytes it reads
//! allow, and refuses a manifest whose entries are not in the one canonical order.

use std::collections::HashSet;

use rand::Rng;
use zeroize::Zeroizing;

use super::path::{self, shown};
use crate::error::{Error, Result};
use crate::request::Key;
use crate::sign::keys::MAX_SIGNATURE;
use crate::sign::tree::HASH_LEN;
use crate::sign::{Scheme, SigningKey, VerifyingKey};

/// The bytes a manifest's plaintext starts with.
pub const MAGIC: &[u8; 14] = b"PARACRYPT-TREE";
/// The manifest format's version.
pub const VERSION: u8 = 1;
/// The largest manifest read (its plaintext, and its encrypted file): 1 GiB, some ten million
/// entries.
pub const MAX_MANIFEST: u64 = 1 << 30;
/// The most entries a manifest may hold.
pub const MAX_ENTRIES: u64 = 1 << 26;
/// The context a tree's signature starts with.
pub const TREE_CONTEXT: &[u8] = b"paracrypt-signed-tree-v1";

/// Flag: the run that wrote the manifest finished every file.
const COMPLETE: u8 = 1;
/// Flag: files are stored under opaque names; the name key follows the header.
const HIDDEN: u8 = 2;
/// Flag: a signature block follows the entries.
const SIGNED: u8 = 4;

/// What a manifest lists, counted ([`Manifest::counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Directories (the tree's top included).
    pub directories: u64,
    /// Regular files.
    pub files: u64,
    /// The files' plaintext bytes.
    pub bytes: u64,
    /// Symbolic links.
    pub links: u64,
}

/// The format of every file of a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeFormat {
    /// paracrypt's container (`.pcr`).
    Container,
    /// Binary age files (`.age`).
    Age,
    /// Armored age files (`.age`).
    ArmoredAge,
    /// No encrypted files: the signed manifest of a plaintext tree (`sign --recursive`), each
    /// file listed at its own path, with no header (length and hash zero).
    Plain,
}

impl TreeFormat {
    /// The format's name, as `info --recursive` shows it (`paracrypt`, `age`,
    /// `age (armored)`).
    pub fn name(self) -> &'static str {
        match self {
            TreeFormat::Container => "paracrypt",
            TreeFormat::Age => "age",
            TreeFormat::ArmoredAge => "age (armored)",
            TreeFormat::Plain => "plaintext",
        }
    }

    /// The suffix of the tree's encrypted files.
    pub fn suffix(self) -> &'static str {
        match self {
            TreeFormat::Container => ".pcr",
            TreeFormat::Age | TreeFormat::ArmoredAge => ".age",
            TreeFormat::Plain => "",
        }
    }

    fn id(self) -> u8 {
        match self {
            TreeFormat::Container => 1,
            TreeFormat::Age => 2,
            TreeFormat::ArmoredAge => 3,
            TreeFormat::Plain => 0,
        }
    }

    fn from_id(id: u8) -> Option<Self> {
        Some(match id {
            1 => TreeFormat::Container,
            2 => TreeFormat::Age,
            3 => TreeFormat::ArmoredAge,
            0 => TreeFormat::Plain,
            _ => return None,
        })
    }
}

/// What the tree's files are sealed with.
#[derive(Clone)]
pub(crate) enum Keying {
    /// The tree's own secret: a key file, or recipients (each file to the same people).
    Secret,
    /// A random 256-bit key drawn for the tree (a tree encrypted with a password: one
    /// Argon2id for the manifest, none per file); files are containers of this key.
    TreeKey(Key),
    /// A random age X25519 identity drawn for the tree (an age tree encrypted with a
    /// passphrase: one scrypt for the manifest); files are age files to its recipient.
    TreeIdentity(Zeroizing<String>),
}

impl std::fmt::Debug for Keying {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Keying::Secret => "Keying::Secret",
            Keying::TreeKey(_) => "Keying::TreeKey(..)",
            Keying::TreeIdentity(_) => "Keying::TreeIdentity(..)",
        })
    }
}

/// One entry of a manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The path in the tree (`/`-separated bytes; empty for the tree's top directory).
    pub path: Vec<u8>,
    /// The permission bits, set-user-ID, set-group-ID and sticky included.
    pub mode: u32,
    /// The modification time: seconds since the epoch, nanoseconds.
    pub mtime: (i64, u32),
    /// What it is.
    pub kind: EntryKind,
}

/// What an entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file, stored encrypted.
    File(FileEntry),
    /// A symbolic link and its target, restored as a link (never followed).
    Symlink(Vec<u8>),
}

/// What a manifest says of one regular file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// The plaintext's length.
    pub size: u64,
    /// The chunk size of its tree hash: the format's plaintext chunk.
    pub chunk_size: u32,
    /// The root of the BLAKE3 tree hash of its plaintext (`docs/SIGNATURES.md`, *Tree hash*).
    pub root: [u8; HASH_LEN],
    /// The length of its encrypted file's header.
    pub header_len: u32,
    /// The BLAKE3 hash of that header, which holds the file's fresh salt or file key and
    /// nonce: it names the one encryption of the file the tree holds.
    pub header_hash: [u8; HASH_LEN],
}

/// A tree's manifest, as written or as read and checked.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The format of every file.
    pub format: TreeFormat,
    pub(crate) keying: Keying,
    /// Random, drawn when the tree is first written, and kept by every update.
    pub tree_id: [u8; 16],
    /// 1 for a new tree, one more at each update.
    pub generation: u64,
    /// The [`Manifest::digest`] of the manifest this one updates (zeros for generation 1).
    pub parent: [u8; HASH_LEN],
    /// When it was written: seconds since the epoch.
    pub written: i64,
    /// Whether the run that wrote it finished every file.
    pub complete: bool,
    pub(crate) name_key: Option<[u8; 32]>,
    /// The entries, sorted by path (byte order): the top directory first.
    pub entries: Vec<Entry>,
    /// Who signed it: the signature was checked against this key.
    pub signer: Option<VerifyingKey>,
    /// The BLAKE3 hash of the manifest's body (everything but the signature block).
    pub digest: [u8; HASH_LEN],
}

impl Manifest {
    /// A new tree's manifest (generation 1, a fresh tree id), entries to come.
    pub(crate) fn new(format: TreeFormat, keying: Keying, hide_names: bool) -> Self {
        let mut tree_id = [0u8; 16];
        rand::rng().fill_bytes(&mut tree_id);
        let name_key = hide_names.then(|| {
            let mut key = [0u8; 32];
            rand::rng().fill_bytes(&mut key);
            key
        });
        Manifest {
            format,
            keying,
            tree_id,
            generation: 1,
            parent: [0; HASH_LEN],
            written: 0,
            complete: false,
            name_key,
            entries: Vec::new(),
            signer: None,
            digest: [0; HASH_LEN],
        }
    }

    /// Whether the tree's files are sealed with a key the manifest carries (a tree encrypted
    /// with a password: a random key, or for age a random X25519 identity), rather than with
    /// the tree's own secret (a key file, or recipients).
    pub fn carries_key(&self) -> bool {
        !matches!(self.keying, Keying::Secret)
    }

    /// Whether files are stored under opaque names.
    pub fn hides_names(&self) -> bool {
        self.name_key.is_some()
    }

    /// Where the encrypted file of `path` is stored under the encrypted tree's root.
    pub fn stored(&self, path: &[u8]) -> Vec<u8> {
        path::stored(path, self.format.suffix(), self.name_key.as_ref())
    }

    /// The entry of `path`, if there is one.
    pub fn entry(&self, path: &[u8]) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.path[..].cmp(path))
            .ok()
            .map(|at| &self.entries[at])
    }

    /// The regular files, with their entries.
    pub fn files(&self) -> impl Iterator<Item = (&Entry, &FileEntry)> {
        self.entries.iter().filter_map(|e| match &e.kind {
            EntryKind::File(file) => Some((e, file)),
            _ => None,
        })
    }

    /// How many directories, files (and their plaintext bytes) and links the manifest lists.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for entry in &self.entries {
            match &entry.kind {
                EntryKind::Dir => counts.directories += 1,
                EntryKind::File(file) => {
                    counts.files += 1;
                    counts.bytes += file.size;
                }
                EntryKind::Symlink(_) => counts.links += 1,
            }
        }
        counts
    }

    /// The manifest as one JSON object, what `info --recursive --json` prints and Python's
    /// `info_tree` returns (its fields are listed in docs/guide/trees.md); `tree` is how the
    /// encrypted tree is named. Paths that are not UTF-8 are shown lossily.
    pub fn json(&self, tree: &str) -> serde_json::Value {
        let counts = self.counts();
        let lossy = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let entries: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|entry| {
                let mut value = serde_json::json!({
                    "path": lossy(&entry.path),
                    "mode": format!("{:04o}", entry.mode),
                    "mtime": entry.mtime.0,
                    "mtime_nsec": entry.mtime.1,
                });
                let extra = match &entry.kind {
                    EntryKind::Dir => serde_json::json!({ "kind": "directory" }),
                    EntryKind::File(file) => serde_json::json!({
                        "kind": "file",
                        "size": file.size,
                        "chunk_size": file.chunk_size,
                        "blake3_tree_root": hex::encode(file.root),
                        "stored_as": lossy(&self.stored(&entry.path)),
                    }),
                    EntryKind::Symlink(target) => serde_json::json!({
                        "kind": "symlink",
                        "target": lossy(target),
                    }),
                };
                if let (Some(value), serde_json::Value::Object(extra)) =
                    (value.as_object_mut(), extra)
                {
                    value.extend(extra);
                }
                value
            })
            .collect();
        serde_json::json!({
            "tree": tree,
            "format": self.format.name(),
            "carries_key": self.carries_key(),
            "hidden_names": self.hides_names(),
            "signer": self.signer.as_ref().map(|key| key.fingerprint()),
            "tree_id": hex::encode(self.tree_id),
            "generation": self.generation,
            "parent": hex::encode(self.parent),
            "written": self.written,
            "complete": self.complete,
            "directories": counts.directories,
            "files": counts.files,
            "bytes": counts.bytes,
            "links": counts.links,
            "entries": entries,
        })
    }

    /// The manifest's plaintext, signed by `sign` when given (the body, then the signature
    /// block). Sets [`Manifest::digest`] and, when signed, [`Manifest::signer`].
    pub(crate) fn encode(&mut self, sign: Option<&SigningKey>) -> Result<Zeroizing<Vec<u8>>> {
        let mut out = Zeroizing::new(Vec::with_capacity(128 + self.entries.len() * 96));
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        let mut flags = 0;
        if self.complete {
            flags |= COMPLETE;
        }
        if self.name_key.is_some() {
            flags |= HIDDEN;
        }
        if sign.is_some() {
            flags |= SIGNED;
        }
        out.push(flags);
        out.push(self.format.id());
        match &self.keying {
            Keying::Secret => out.push(0),
            Keying::TreeKey(key) => {
                out.push(1);
                out.extend_from_slice(key.as_bytes());
            }
            Keying::TreeIdentity(identity) => {
                out.push(2);
                put_bytes16(&mut out, identity.as_bytes());
            }
        }
        out.extend_from_slice(&self.tree_id);
        out.extend_from_slice(&self.generation.to_be_bytes());
        out.extend_from_slice(&self.parent);
        out.extend_from_slice(&self.written.to_be_bytes());
        if let Some(key) = &self.name_key {
            out.extend_from_slice(key);
        }
        out.extend_from_slice(&(self.entries.len() as u64).to_be_bytes());
        for entry in &self.entries {
            let kind = match entry.kind {
                EntryKind::Dir => 1,
                EntryKind::File(_) => 2,
                EntryKind::Symlink(_) => 3,
            };
            out.push(kind);
            put_bytes16(&mut out, &entry.path);
            out.extend_from_slice(&entry.mode.to_be_bytes());
            out.extend_from_slice(&entry.mtime.0.to_be_bytes());
            out.extend_from_slice(&entry.mtime.1.to_be_bytes());
            match &entry.kind {
                EntryKind::Dir => {}
                EntryKind::File(file) => {
                    out.extend_from_slice(&file.size.to_be_bytes());
                    out.extend_from_slice(&file.chunk_size.to_be_bytes());
                    out.extend_from_slice(&file.root);
                    out.extend_from_slice(&file.header_len.to_be_bytes());
                    out.extend_from_slice(&file.header_hash);
                }
                EntryKind::Symlink(target) => put_bytes16(&mut out, target),
            }
        }
        self.digest = *blake3::hash(&out).as_bytes();
        if let Some(key) = sign {
            let public = key.verifying_key();
            let field = public.to_field();
            let signature = key.sign(&statement(key.scheme(), &field, &self.digest))?;
            out.push(key.scheme().id());
            put_bytes16(&mut out, &field);
            put_bytes16(&mut out, &signature);
            self.signer = Some(public);
        }
        Ok(out)
    }

    /// Reads and checks a manifest's plaintext: every field, every path (see
    /// [`super::path`]), the canonical order (sorted by path, no duplicates, the top
    /// directory first), every entry's parent a directory of the manifest, and the signature
    /// when there is one (against the key it names: [`Manifest::signer`] says which).
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        if bytes.len() as u64 > MAX_MANIFEST {
            return Err(bad("it is larger than 1 GiB"));
        }
        let mut r = Reader(bytes);
        if r.take(MAGIC.len(), "the magic bytes")? != MAGIC {
            return Err(bad("it does not start with PARACRYPT-TREE"));
        }
        let version = r.u8("the version")?;
        if version != VERSION {
            return Err(bad(format!(
                "version {version} (this build reads version {VERSION})"
            )));
        }
        let flags = r.u8("the flags")?;
        if flags & !(COMPLETE | HIDDEN | SIGNED) != 0 {
            return Err(bad(format!("unknown flags {flags:#04x}")));
        }
        let format = TreeFormat::from_id(r.u8("the format")?)
            .ok_or_else(|| bad("an unknown file format"))?;
        let plain = format == TreeFormat::Plain;
        if plain && flags & (SIGNED | HIDDEN) != SIGNED {
            return Err(bad(
                "a plaintext tree's manifest is signed and keeps its names",
            ));
        }
        let keying = match r.u8("the keying")? {
            0 => Keying::Secret,
            1 => {
                let key: [u8; 32] = r.array("the tree key")?;
                Keying::TreeKey(Key::from_bytes(key))
            }
            2 => {
                let text = r.bytes16("the tree identity")?;
                let text =
                    std::str::from_utf8(text).map_err(|_| bad("the tree identity is not text"))?;
                Keying::TreeIdentity(Zeroizing::new(text.to_owned()))
            }
            other => return Err(bad(format!("unknown keying {other}"))),
        };
        if plain && !matches!(keying, Keying::Secret) {
            return Err(bad("a plaintext tree's manifest carries a key"));
        }
        let tree_id = r.array("the tree id")?;
        let generation = r.u64("the generation")?;
        if generation == 0 {
            return Err(bad("generation 0"));
        }
        let parent = r.array("the parent")?;
        let written = i64::from_be_bytes(r.array("the time written")?);
        let name_key = if flags & HIDDEN != 0 {
            Some(r.array("the name key")?)
        } else {
            None
        };
        let count = r.u64("the entry count")?;
        if count > MAX_ENTRIES {
            return Err(bad(format!("{count} entries (at most 2^26)")));
        }
        // An entry takes at least 19 bytes: never reserve more than the bytes can hold.
        let mut entries = Vec::with_capacity((count as usize).min(r.0.len() / 19));
        let mut dirs: HashSet<&[u8]> = HashSet::new();
        for n in 0..count {
            let kind = r.u8("an entry")?;
            let path = r.bytes16("a path")?;
            if let Some(fault) = path::fault(path) {
                return Err(bad(format!(
                    "entry {n}: the path `{}` {fault}",
                    shown(path)
                )));
            }
            match entries.last() {
                None if !path.is_empty() => {
                    return Err(bad("the first entry is not the top directory"));
                }
                Some(Entry { path: last, .. }) if last[..] >= *path => {
                    return Err(bad(format!(
                        "entry {n} (`{}`) is out of order or repeated",
                        shown(path)
                    )));
                }
                Some(_) if !dirs.contains(path::parent(path)) => {
                    return Err(bad(format!(
                        "entry {n} (`{}`) is not in a directory of the tree",
                        shown(path)
                    )));
                }
                _ => {}
            }
            let mode = r.u32("a mode")?;
            if mode > 0o7777 {
                return Err(bad(format!("entry {n}: mode {mode:o}")));
            }
            let seconds = i64::from_be_bytes(r.array("a time")?);
            let nanos = r.u32("a time")?;
            if nanos >= 1_000_000_000 {
                return Err(bad(format!("entry {n}: {nanos} nanoseconds")));
            }
            let kind = match kind {
                1 => {
                    dirs.insert(path);
                    EntryKind::Dir
                }
                2 => EntryKind::File(FileEntry {
                    size: r.u64("a size")?,
                    chunk_size: r.u32("a chunk size")?,
                    root: r.array("a tree-hash root")?,
                    header_len: r.u32("a header length")?,
                    header_hash: r.array("a header hash")?,
                }),
                3 => EntryKind::Symlink(r.bytes16("a link's target")?.to_vec()),
                other => return Err(bad(format!("entry {n}: unknown kind {other}"))),
            };
            if path.is_empty() && kind != EntryKind::Dir {
                return Err(bad("the top of the tree is not a directory"));
            }
            if let EntryKind::File(file) = &kind
                && (file.chunk_size == 0 || file.chunk_size % 16 != 0)
            {
                return Err(bad(format!("entry {n}: chunk size {}", file.chunk_size)));
            }
            if let EntryKind::File(file) = &kind
                && plain
                && (file.header_len != 0 || file.header_hash != [0; HASH_LEN])
            {
                return Err(bad(format!(
                    "entry {n}: a header in a plaintext tree's manifest"
                )));
            }
            entries.push(Entry {
                path: path.to_vec(),
                mode,
                mtime: (seconds, nanos),
                kind,
            });
        }
        if entries.is_empty() {
            return Err(bad("it has no top directory"));
        }
        let body_len = bytes.len() - r.0.len();
        let digest = *blake3::hash(&bytes[..body_len]).as_bytes();
        let signer = if flags & SIGNED != 0 {
            let scheme = Scheme::from_id(r.u8("the signature's scheme")?)
                .ok_or_else(|| bad("an unknown signature scheme"))?;
            let field = r.bytes16("the signer's key")?;
            let public = VerifyingKey::from_field(scheme, field)
                .map_err(|e| bad(format!("the signer's key: {e}")))?;
            let signature = r.bytes16("the signature")?;
            if signature.len() > MAX_SIGNATURE
                || !public.verify(&statement(scheme, field, &digest), signature)
            {
                return Err(Error::BadSignature);
            }
            Some(public)
        } else {
            None
        };
        if !r.0.is_empty() {
            return Err(bad(format!("{} bytes after its end", r.0.len())));
        }
        Ok(Manifest {
            format,
            keying,
            tree_id,
            generation,
            parent,
            written,
            complete: flags & COMPLETE != 0,
            name_key,
            entries,
            signer,
            digest,
        })
    }
}

/// What a tree's signature signs: `"paracrypt-signed-tree-v1" ‖ 0x00 ‖ scheme id ‖
/// BLAKE3(the signer's public key field) ‖ BLAKE3(the manifest's body)`. The signer's key is
/// in it so that no other key verifies the same signature (ECDSA and RSA signatures do not bind
/// their key: `docs/FORMAT.md`, *Trees*).
pub fn statement(scheme: Scheme, signer: &[u8], digest: &[u8; HASH_LEN]) -> Vec<u8> {
    [
        TREE_CONTEXT,
        &[0, scheme.id()],
        blake3::hash(signer).as_bytes(),
        digest,
    ]
    .concat()
}

fn bad(why: impl Into<String>) -> Error {
    Error::Manifest(why.into())
}

/// A length (2 bytes) and the bytes.
fn put_bytes16(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u16::try_from(bytes.len()).expect("paths, targets and keys fit 64 KiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Reads a manifest's fields front to back.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(bad(format!("it ends inside {what}")));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    fn bytes16(&mut self, what: &str) -> Result<&'a [u8]> {
        let len = u16::from_be_bytes(self.array(what)?);
        self.take(len.into(), what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut m = Manifest::new(
            TreeFormat::Container,
            Keying::TreeKey(Key::generate()),
            false,
        );
        m.complete = true;
        m.written = 1_700_000_000;
        let dir = |path: &[u8]| Entry {
            path: path.to_vec(),
            mode: 0o755,
            mtime: (1, 2),
            kind: EntryKind::Dir,
        };
        m.entries = vec![
            dir(b""),
            dir(b"a"),
            Entry {
                path: b"a/f".to_vec(),
                mode: 0o644,
                mtime: (-5, 999_999_999),
                kind: EntryKind::File(FileEntry {
                    size: 10,
                    chunk_size: 1 << 20,
                    root: [3; 32],
                    header_len: 84,
                    header_hash: [4; 32],
                }),
            },
            Entry {
                path: b"l".to_vec(),
                mode: 0o777,
                mtime: (0, 0),
                kind: EntryKind::Symlink(b"a/f".to_vec()),
            },
        ];
        m
    }

    #[test]
    fn a_manifest_reads_back_as_written_signed_or_not() {
        let mut m = sample();
        let bytes = m.encode(None).unwrap();
        let read = Manifest::parse(&bytes).unwrap();
        assert_eq!(read.entries, m.entries);
        assert_eq!(read.digest, m.digest);
        assert!(read.complete && read.signer.is_none());
        assert!(matches!(read.keying, Keying::TreeKey(_)));

        let key = SigningKey::generate_ed25519();
        let signed = m.encode(Some(&key)).unwrap();
        let read = Manifest::parse(&signed).unwrap();
        assert_eq!(
            read.signer.unwrap().to_field(),
            key.verifying_key().to_field()
        );
        // The body says it is signed: the flag cannot be dropped with the signature.
        assert_eq!(read.digest, m.digest);
        assert_ne!(read.digest, *blake3::hash(&bytes).as_bytes());
    }

    #[test]
    fn a_signed_manifest_altered_anywhere_is_refused() {
        let mut m = sample();
        let signed = m.encode(Some(&SigningKey::generate_ed25519())).unwrap();
        for at in [20, 100, signed.len() - 200, signed.len() - 1] {
            let mut altered = signed.to_vec();
            altered[at] ^= 1;
            assert!(Manifest::parse(&altered).is_err(), "byte {at}");
        }
        // Its signature block removed: the flag still says signed, and it ends too soon.
        let body_len = signed.len() - 1 - 2 - 32 - 2 - 64;
        assert!(Manifest::parse(&signed[..body_len]).is_err());
    }

    /// The signature covers the signer's key: it verifies over the statement naming that key,
    /// and the statement for any other key is another message.
    #[test]
    fn the_signature_names_its_signer() {
        let mut m = sample();
        let key = SigningKey::generate_ed25519();
        let signed = m.encode(Some(&key)).unwrap();
        let field = key.verifying_key().to_field();
        let signature = &signed[signed.len() - 64..];
        let named = statement(key.scheme(), &field, &m.digest);
        assert!(key.verifying_key().verify(&named, signature));
        let other = SigningKey::generate_ed25519().verifying_key().to_field();
        assert_ne!(statement(key.scheme(), &other, &m.digest), named);
        assert_eq!(&named[..TREE_CONTEXT.len()], TREE_CONTEXT);
        assert_eq!(named.len(), TREE_CONTEXT.len() + 2 + 32 + 32);
    }

    #[test]
    fn hostile_entries_are_refused() {
        let reject = |edit: &dyn Fn(&mut Manifest), needle: &str| {
            let mut m = sample();
            edit(&mut m);
            let bytes = m.encode(None).unwrap();
            let err = Manifest::parse(&bytes).unwrap_err().to_string();
            assert!(err.contains(needle), "{err}");
        };
        reject(&|m| m.entries.swap(2, 3), "out of order");
        reject(&|m| m.entries.swap(1, 2), "not in a directory");
        reject(&|m| m.entries[2].path = b"../x".to_vec(), "`.` or `..`");
        reject(&|m| m.entries[3].path = b"/etc".to_vec(), "absolute");
        reject(
            &|m| m.entries[2].path = b"b/f".to_vec(),
            "not in a directory",
        );
        reject(
            &|m| {
                m.entries[3].path = b"l/x".to_vec();
            },
            "not in a directory",
        );
        reject(&|m| m.entries.remove(0).path.clear(), "top directory");
        reject(&|m| m.entries[1].mode = 0o10000, "mode");
        reject(
            &|m| {
                m.entries.push(m.entries[3].clone());
            },
            "repeated",
        );
        let mut m = sample();
        let mut bytes = m.encode(None).unwrap().to_vec();
        bytes.push(0);
        assert!(
            Manifest::parse(&bytes)
                .unwrap_err()
                .to_string()
                .contains("after its end")
        );
        bytes.truncate(40);
        assert!(
            Manifest::parse(&bytes)
                .unwrap_err()
                .to_string()
                .contains("ends inside")
        );
        // A count far beyond the bytes allocates nothing before it fails.
        let mut m = sample();
        m.entries.truncate(1);
        let mut bytes = m.encode(None).unwrap().to_vec();
        let count_at = bytes.len() - (1 + 2 + 4 + 8 + 4) - 8;
        bytes[count_at..count_at + 8].copy_from_slice(&MAX_ENTRIES.to_be_bytes());
        assert!(
            Manifest::parse(&bytes)
                .unwrap_err()
                .to_string()
                .contains("ends inside")
        );
    }
}
