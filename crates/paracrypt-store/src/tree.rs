//! Trees under a prefix (`s3://bucket/prefix/`): the prefix as a tree's output
//! ([`PrefixOutput`], a `paracrypt_core::tree::TreeOutput`: an encrypted tree, or the plaintext
//! tree a decryption writes) and as an encrypted tree's input ([`PrefixInput`], a
//! `TreeInput`), which the core's tree driver writes and reads as it does a local directory.
//! The core depends on no store: a front end plugs these in.
//!
//! **What a prefix may do** is decided here, once for every front end (the CLI, Python):
//! [`prefix_run`] checks a tree run with a prefix on either side (on the core's
//! `tree::check_in_store`) and opens the prefixes, [`prefix_rekey`] a rekey likewise (on the
//! core's `tree::check_rekey_from`), [`prefix_input`] opens an encrypted tree to verify or
//! show, and [`plain_input`] a plaintext tree to sign or check. Each refusal is the core's
//! error, in words; a front end adds its own options' names. A task of a plan with a prefix on
//! either side runs on any process through [`run_task`] ([`seal_task_from`],
//! [`open_task_from`]), which opens the prefix again with that process's credentials.
//!
//! **Listing**: a prefix is listed once (object_store paginates), at most [`MAX_OBJECTS`]
//! objects, each key at most [`MAX_KEY`] bytes; an input's files are then read with ranged
//! GETs ([`ObjectSource`]), each pinned to the ETag the listing gave, so that an object
//! replaced during the run fails instead of mixing two versions. An output prefix is only
//! asked whether it holds any object (the first page of a listing).
//!
//! **Writing**: each file is one object. One whose encrypted length is at most [`MIN_PART`]
//! is held in memory and written with one PUT at its commit (refused if the object exists,
//! without `force`); a larger one is a multipart upload whose parts ([`MIN_PART`] bytes, more
//! for a file past 78 GiB) are uploaded as the schedule's chunk runs fill them, the upload
//! completed at the commit and aborted when the file fails or the run is interrupted, so that
//! no object appears that was not finished. A file written in order (armored age) is held in
//! memory and PUT whole. There are no directories: modes, times and links are in the
//! manifest, which is written last. A decryption into a prefix writes each plaintext file as
//! one object in the same way, committed only once its contents are checked against the
//! manifest; what a prefix cannot hold is lost on the way (directories, modes, times) or named
//! as a failure (each symbolic link). Before it, now and then, the manifest of the files done so
//! far is PUT marked incomplete (a checkpoint, as in a directory), so that a prefix without a
//! manifest, or with an incomplete one, is an unfinished tree, which `--update` goes on from.
//!
//! **Updating** ([`PrefixOutput::updating`], `--update`): the prefix is listed once; the
//! previous manifest and the header of each file that may be kept are read pinned to that
//! listing; changed and new files are uploaded over their objects, then the objects of files
//! gone are deleted, then the new manifest is written, last. Until that last PUT the previous
//! manifest stands, or a checkpoint of this update (the files done so far, marked incomplete):
//! a run stopped at any point leaves a tree with some objects replaced or added that its
//! manifest does not list yet (which `verify` names as changed or added) or deleted (named as
//! missing), and the next update seals again every file whose object is not the one the
//! manifest lists.
//!
//! **Memory**: per file being written, at most its parts not yet complete (a small file: its
//! whole encrypted bytes; a large one, a part per thread writing into it and one more), plus
//! [`Options::upload_concurrency`](crate::Options) parts in flight among all the tree's
//! uploads (one [`Budget`]).

use std::collections::BTreeMap;
use std::io;
use std::path::Path as LocalPath;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::path::Path;
use object_store::{PutMode, PutOptions, PutPayload};
use paracrypt_core::engine::{Sink, Source};
use paracrypt_core::plan::ChunkPlan;
use paracrypt_core::tree::{InputFile, OutputFile, Stored, TreeInput, TreeOutput};

use crate::error::{Error, Kind};
use crate::object::{Meta, Object, Options};
use crate::source::ObjectSource;
use crate::upload::{Aborter, Budget, MAX_PARTS, MIN_PART, Upload};

/// The most objects a prefix's listing takes (a tree of ten million files).
pub const MAX_OBJECTS: usize = 10_000_000;

/// The longest key under a prefix (S3's limit on a whole key).
pub const MAX_KEY: usize = 1024;

/// A prefix of a store: `s3://bucket/prefix/`, the objects of a tree under it.
#[derive(Clone)]
pub struct Prefix {
    /// An object whose key is the prefix without its final `/`: the store, runtime and
    /// options every object of the tree shares.
    base: Object,
    /// The URL, ending with `/`.
    url: String,
}

impl std::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefix").field("url", &self.url).finish()
    }
}

/// What a listing says of one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its length.
    pub len: u64,
    /// Its ETag, which reads require.
    pub e_tag: Option<String>,
}

impl Prefix {
    /// The prefix `url` names (`s3://bucket/prefix/`, the final `/` optional; a bucket's top
    /// is not a tree's). No request is made yet.
    pub fn open(url: &str, options: Options) -> Result<Self, Error> {
        let trimmed = url.trim_end_matches('/');
        let base = Object::open(trimmed, options).map_err(|e| {
            Error::new(
                e.kind(),
                format!("{e} (a tree is under a prefix: s3://BUCKET/PREFIX/)"),
            )
        })?;
        Ok(Prefix {
            base,
            url: format!("{trimmed}/"),
        })
    }

    /// The URL, ending with `/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The object at `rel` (a tree's path, `/`-separated) under the prefix.
    pub fn object(&self, rel: &[u8]) -> Result<Object, Error> {
        let text = std::str::from_utf8(rel).map_err(|_| {
            Error::new(
                Kind::InvalidUrl,
                format!(
                    "{}{}: an object's key is UTF-8, this name is not",
                    self.url,
                    String::from_utf8_lossy(rel)
                ),
            )
        })?;
        let key = format!("{}/{text}", self.base.path.as_ref());
        if key.len() > MAX_KEY {
            return Err(Error::new(
                Kind::InvalidUrl,
                format!("{}{text}: a key is at most {MAX_KEY} bytes", self.url),
            ));
        }
        let path = Path::parse(&key).map_err(|e| {
            Error::new(
                Kind::InvalidUrl,
                format!("{}{text}: not a valid key: {e}", self.url),
            )
        })?;
        Ok(Object {
            url: format!("{}{text}", self.url),
            path,
            ..self.base.clone()
        })
    }

    /// Every object under the prefix, by its path under it: one listing, at most
    /// [`MAX_OBJECTS`] objects of keys at most [`MAX_KEY`] bytes.
    pub fn list(&self) -> Result<BTreeMap<Vec<u8>, Listed>, Error> {
        Ok(self
            .listing()?
            .into_iter()
            .map(|(rel, meta)| {
                let listed = Listed {
                    len: meta.size,
                    e_tag: meta.e_tag,
                };
                (rel, listed)
            })
            .collect())
    }

    /// [`Prefix::list`] with all that the listing says of each object.
    fn listing(&self) -> Result<BTreeMap<Vec<u8>, object_store::ObjectMeta>, Error> {
        let cannot =
            |e: &object_store::Error| Error::from_store(&format!("cannot list {}", self.url), e);
        let store = self.base.store.clone();
        let prefix = self.base.path.clone();
        let under = format!("{}/", prefix.as_ref());
        self.base.block_on(async move {
            let mut stream = store.list(Some(&prefix));
            let mut found = BTreeMap::new();
            while let Some(meta) = stream.next().await {
                let meta = meta.map_err(|e| cannot(&e))?;
                let key = meta.location.as_ref();
                let Some(rel) = key.strip_prefix(&under) else {
                    continue;
                };
                if key.len() > MAX_KEY || found.len() == MAX_OBJECTS {
                    return Err(Error::new(
                        Kind::Request,
                        format!(
                            "cannot list {}: more than {MAX_OBJECTS} objects, or a key longer \
                             than {MAX_KEY} bytes",
                            self.url
                        ),
                    ));
                }
                found.insert(rel.as_bytes().to_vec(), meta);
            }
            Ok(found)
        })
    }
}

impl Prefix {
    /// Whether any object is under the prefix: the first page of a listing, no more.
    pub fn holds_any(&self) -> Result<bool, Error> {
        let store = self.base.store.clone();
        let prefix = self.base.path.clone();
        self.base.block_on(async move {
            match store.list(Some(&prefix)).next().await {
                None => Ok(false),
                Some(Ok(_)) => Ok(true),
                Some(Err(e)) => Err(Error::from_store(&format!("cannot list {}", self.url), &e)),
            }
        })
    }
}

impl Object {
    /// Writes the whole object with one PUT; with `create`, refused if it exists (atomically,
    /// where the store can: S3's `If-None-Match: *`).
    pub(crate) fn put_whole(&self, data: Vec<u8>, create: bool) -> Result<(), Error> {
        let options = PutOptions {
            mode: if create {
                PutMode::Create
            } else {
                PutMode::Overwrite
            },
            ..PutOptions::default()
        };
        let payload = PutPayload::from(Bytes::from(data));
        match self.block_on(self.store.put_opts(&self.path, payload, options)) {
            Ok(_) => Ok(()),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Err(Error::new(
                Kind::AlreadyExists,
                paracrypt_core::Error::OutputExists(self.url.to_string()).to_string(),
            )),
            Err(e) => Err(self.write_error(&e)),
        }
    }
}

/// Told of each multipart upload a tree's output starts, so that a front end aborts it on an
/// interrupt: [`UploadWatch::start`] returns an id that [`UploadWatch::ended`] is given once
/// the upload is completed or aborted.
pub trait UploadWatch: Send + Sync {
    /// Runs `start`, which starts an upload and returns what aborts it from any thread (`None`
    /// if it could not start), and returns the upload's id. A front end holds its interrupt
    /// handler off while `start` runs, so that an interrupt finds the upload either not
    /// started or known to it.
    fn start(&self, start: &mut dyn FnMut() -> Option<Aborter>) -> Option<u64>;
    /// The upload of that id is completed or aborted.
    fn ended(&self, id: u64);
}

/// A prefix as a tree's output (see the [module](self)).
pub struct PrefixOutput {
    prefix: Prefix,
    force: bool,
    watch: Option<Arc<dyn UploadWatch>>,
    /// The parts in flight among all the tree's uploads: the upload concurrency.
    budget: Budget,
    /// An update's listing of the prefix: the tree already there.
    existing: Option<PrefixInput>,
}

impl PrefixOutput {
    /// The output `prefix`: with `force`, objects of the same names are replaced (and a
    /// prefix that holds objects is written into); `watch` is told of every multipart upload.
    pub fn new(prefix: Prefix, force: bool, watch: Option<Arc<dyn UploadWatch>>) -> Self {
        let budget = Budget::new(prefix.base.options.upload_concurrency);
        PrefixOutput {
            prefix,
            force,
            watch,
            budget,
            existing: None,
        }
    }

    /// The output `prefix` for an update of the encrypted tree there: listed now (one listing:
    /// see [`Prefix::list`]), so that the update reads the tree's manifest and the headers of
    /// the files it may keep pinned to that listing, and removes only objects it lists. Objects
    /// of the same names are replaced; `watch` is told of every multipart upload.
    pub fn updating(prefix: Prefix, watch: Option<Arc<dyn UploadWatch>>) -> Result<Self, Error> {
        let existing = PrefixInput::open(prefix.clone())?;
        Ok(PrefixOutput {
            existing: Some(existing),
            ..PrefixOutput::new(prefix, true, watch)
        })
    }
}

/// A store's error as the core's, for a tree's messages.
fn io_error(e: Error) -> io::Error {
    let kind = match e.kind() {
        Kind::AlreadyExists => io::ErrorKind::AlreadyExists,
        Kind::NotFound => io::ErrorKind::NotFound,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e.to_string())
}

impl TreeOutput for PrefixOutput {
    fn shown(&self, rel: &[u8]) -> String {
        format!("{}{}", self.prefix.url, String::from_utf8_lossy(rel))
    }

    fn prepare(&self, _input: &LocalPath, force: bool) -> paracrypt_core::Result<bool> {
        if !self.prefix.base.writable() {
            return Err(paracrypt_core::Error::Request(format!(
                "{}: this kind of URL is read-only",
                self.prefix.url
            )));
        }
        // Asked even with `force`: a missing bucket or a credential refused fails here, once.
        let holds = self
            .prefix
            .holds_any()
            .map_err(|e| paracrypt_core::Error::io("cannot write the tree", io_error(e)))?;
        if holds && !force {
            return Err(paracrypt_core::Error::TreeOutputExists(
                self.prefix.url.clone(),
            ));
        }
        Ok(false)
    }

    fn mkdir(&self, _rel: &[u8]) -> io::Result<bool> {
        Ok(false)
    }

    fn create(&self, rel: &[u8], len: u64) -> io::Result<Box<dyn OutputFile + '_>> {
        let object = self.prefix.object(rel).map_err(io_error)?;
        if len <= MIN_PART {
            return Ok(Box::new(WholeObject {
                object,
                create: !self.force,
                data: Mutex::new(vec![0; len as usize]),
                end: AtomicU64::new(len),
            }));
        }
        let create = || Upload::create(&object, self.force).map(|u| u.within(&self.budget));
        let (upload, watched) = match &self.watch {
            None => (create().map_err(io_error)?, None),
            Some(watch) => {
                let mut started = None;
                let id = watch.start(&mut || match create() {
                    Ok(upload) => {
                        let aborter = upload.aborter();
                        started = Some(Ok(upload));
                        Some(aborter)
                    }
                    Err(e) => {
                        started = Some(Err(e));
                        None
                    }
                });
                match (started, id) {
                    (Some(Ok(upload)), Some(id)) => (upload, Some((Arc::clone(watch), id))),
                    (Some(Err(e)), _) => return Err(io_error(e)),
                    _ => return Err(io::Error::other("the upload's watch did not start it")),
                }
            }
        };
        let part = MIN_PART.max(len.div_ceil(MAX_PARTS));
        let count = len.div_ceil(part) as usize;
        Ok(Box::new(Parts {
            upload: Some(upload),
            part,
            len,
            parts: (0..count).map(|_| Mutex::new(Part::default())).collect(),
            end: AtomicU64::new(len),
            watched,
        }))
    }

    fn put(&self, rel: &[u8], data: &[u8]) -> io::Result<()> {
        let object = self.prefix.object(rel).map_err(io_error)?;
        object.put_whole(data.to_vec(), false).map_err(io_error)
    }

    fn finish_dir(&self, _rel: &[u8], _mode: u32, _mtime: (i64, u32)) -> io::Result<()> {
        Ok(())
    }

    fn existing(&self) -> Option<&dyn TreeInput> {
        self.existing.as_ref().map(|e| e as &dyn TreeInput)
    }

    /// A prefix takes checkpoints as a directory does: the manifest of the files done so far,
    /// marked incomplete, PUT over the previous one now and then (one small PUT, which either
    /// replaces the object whole or leaves it as it was), so that a run stopped part way
    /// leaves a tree `--update` goes on from instead of one it does again from the start.
    fn checkpoints(&self) -> bool {
        true
    }

    /// The prefix's URL: a process that runs a task of the plan opens it again ([`run_task`]).
    fn task_root(&self) -> Option<(std::path::PathBuf, bool)> {
        Some((self.prefix.url.clone().into(), self.force))
    }

    /// Removes the object `rel` when the update's listing holds it (only an update removes).
    fn remove(&self, rel: &[u8]) -> io::Result<bool> {
        let Some(existing) = &self.existing else {
            return Err(io::Error::other("only an update removes objects"));
        };
        if !existing.listed.contains_key(rel) {
            return Ok(false);
        }
        let object = self.prefix.object(rel).map_err(io_error)?;
        object.delete().map_err(io_error)?;
        Ok(true)
    }

    fn remove_made(&self, _made: &[Vec<u8>], _made_root: bool) {}
}

/// A small file, in memory until its one PUT.
struct WholeObject {
    object: Object,
    create: bool,
    data: Mutex<Vec<u8>>,
    end: AtomicU64,
}

impl OutputFile for WholeObject {
    fn sink(&self) -> &dyn Sink {
        self
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        let mut held = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let (start, end) = (offset as usize, offset as usize + data.len());
        if held.len() < end {
            held.resize(end, 0);
        }
        held[start..end].copy_from_slice(data);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.end.store(len, Ordering::Relaxed);
        Ok(())
    }

    fn set_times(&self, _mode: u32, _mtime: (i64, u32)) -> io::Result<()> {
        Ok(())
    }

    fn commit(self: Box<Self>, _rel: &[u8]) -> io::Result<()> {
        let WholeObject {
            object,
            create,
            data,
            end,
        } = *self;
        let mut data = data.into_inner().unwrap_or_else(|e| e.into_inner());
        let end = end.into_inner() as usize;
        if end < data.len() {
            data.truncate(end);
        }
        object.put_whole(data, create).map_err(io_error)
    }
}

impl Sink for WholeObject {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> paracrypt_core::Result<()> {
        self.write_at(data, offset).map_err(|e| {
            paracrypt_core::Error::io(format!("writing chunk {index} at byte {offset}"), e)
        })
    }

    fn write_run(
        &self,
        plan: &ChunkPlan,
        chunks: std::ops::Range<u64>,
        data: &[u8],
    ) -> paracrypt_core::Result<()> {
        self.write_chunk(chunks.start, plan.chunk(chunks.start).output.start, data)
    }
}

/// One part of a large file: its bytes as they are written, until it is full and uploaded.
#[derive(Default)]
struct Part {
    data: Vec<u8>,
    filled: u64,
    sent: bool,
}

/// A large file: a multipart upload, each part uploaded once the runs written into it fill it.
struct Parts {
    /// `None` once completed.
    upload: Option<Upload>,
    /// Every part's length but the last's.
    part: u64,
    /// The length planned.
    len: u64,
    parts: Vec<Mutex<Part>>,
    /// Where the file ends (the planned length, or less once the last chunk says so).
    end: AtomicU64,
    watched: Option<(Arc<dyn UploadWatch>, u64)>,
}

impl Parts {
    fn upload(&self) -> &Upload {
        self.upload
            .as_ref()
            .expect("an upload until it is completed")
    }

    /// The bytes part `index` holds when the file ends at `end`.
    fn span(&self, index: usize, end: u64) -> std::ops::Range<u64> {
        let start = index as u64 * self.part;
        start.min(end)..(start + self.part).min(end)
    }
}

impl Drop for Parts {
    fn drop(&mut self) {
        // An upload not completed is aborted when it drops (its parts in flight first).
        drop(self.upload.take());
        if let Some((watch, id)) = &self.watched {
            watch.ended(*id);
        }
    }
}

impl OutputFile for Parts {
    fn sink(&self) -> &dyn Sink {
        self
    }

    fn write_at(&self, mut data: &[u8], mut offset: u64) -> io::Result<()> {
        if offset + data.len() as u64 > self.len {
            return Err(io::Error::other(format!(
                "writing past the planned length of {} bytes",
                self.len
            )));
        }
        while !data.is_empty() {
            let index = (offset / self.part) as usize;
            let span = self.span(index, self.len);
            let n = (span.end - offset).min(data.len() as u64) as usize;
            let mut part = self.parts[index].lock().unwrap_or_else(|e| e.into_inner());
            if part.data.is_empty() {
                part.data = vec![0; (span.end - span.start) as usize];
            }
            let at = (offset - span.start) as usize;
            part.data[at..at + n].copy_from_slice(&data[..n]);
            part.filled += n as u64;
            if part.filled == span.end - span.start && !part.sent {
                part.sent = true;
                let bytes = std::mem::take(&mut part.data);
                drop(part);
                self.upload().put_part(index, bytes).map_err(io_error)?;
            }
            data = &data[n..];
            offset += n as u64;
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.end.store(len.min(self.len), Ordering::Relaxed);
        Ok(())
    }

    fn set_times(&self, _mode: u32, _mtime: (i64, u32)) -> io::Result<()> {
        Ok(())
    }

    fn commit(mut self: Box<Self>, _rel: &[u8]) -> io::Result<()> {
        let end = self.end.load(Ordering::Relaxed);
        let count = end.div_ceil(self.part).max(1) as usize;
        for index in 0..count {
            let span = self.span(index, end);
            let mut part = self.parts[index].lock().unwrap_or_else(|e| e.into_inner());
            if part.sent {
                continue;
            }
            if part.filled < span.end - span.start {
                return Err(io::Error::other(format!(
                    "part {index} was not written whole"
                )));
            }
            part.sent = true;
            let mut bytes = std::mem::take(&mut part.data);
            bytes.truncate((span.end - span.start) as usize);
            drop(part);
            self.upload().put_part(index, bytes).map_err(io_error)?;
        }
        let upload = self.upload.take().expect("an upload until it is completed");
        upload.complete(count, &[]).map_err(io_error)
    }
}

impl Sink for Parts {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> paracrypt_core::Result<()> {
        self.write_at(data, offset).map_err(|e| {
            paracrypt_core::Error::io(format!("writing chunk {index} at byte {offset}"), e)
        })
    }

    fn write_run(
        &self,
        plan: &ChunkPlan,
        chunks: std::ops::Range<u64>,
        data: &[u8],
    ) -> paracrypt_core::Result<()> {
        self.write_chunk(chunks.start, plan.chunk(chunks.start).output.start, data)
    }
}

/// A tree run with a prefix on one side, checked ([`prefix_run`]): an [`Encryption`] or a
/// [`Decryption`], which plans and runs it with the core's call that fits.
#[derive(Debug)]
pub enum PrefixRun {
    /// A plaintext tree encrypted, with a prefix on either side or both.
    Encrypt(Encryption),
    /// An encrypted tree decrypted, with a prefix on either side or both.
    Decrypt(Decryption),
}

/// An encryption of a tree with a prefix on one side or both, checked ([`prefix_run`]): a local
/// directory or the plaintext tree of a prefix (listed: [`PlainPrefix`]), encrypted into a
/// local directory or a prefix (checked: [`TreeOutput::prepare`]). Every front end plans and
/// runs it through [`Encryption::plan`] and [`Encryption::run`].
pub struct Encryption {
    plain: Option<Arc<PlainPrefix>>,
    /// `None`: the local directory the run names.
    output: Option<Arc<PrefixOutput>>,
}

impl std::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryption")
            .field("input", &self.plain.as_ref().map(|p| &p.prefix))
            .field("output", &self.output.as_ref().map(|out| &out.prefix))
            .finish()
    }
}

impl Encryption {
    /// Whether the plaintext tree is a prefix's (listed once, here): its plan is made whole by
    /// [`Encryption::plan`], from that listing, with no walk of a local directory in parts.
    pub fn reads_prefix(&self) -> bool {
        self.plain.is_some()
    }

    /// The output prefix, when the output is one: for a coordinator that walks a local tree in
    /// parts ([`prepare_to`](paracrypt_core::tree::prepare_to)).
    pub fn output(&self) -> Option<Arc<dyn TreeOutput>> {
        self.output
            .as_ref()
            .map(|out| Arc::clone(out) as Arc<dyn TreeOutput>)
    }

    /// The core's plan of the encryption from `input` (a local directory, unless the input is a
    /// prefix) into `output` (likewise): [`plan_to`](paracrypt_core::tree::plan_to),
    /// [`plan_from`](paracrypt_core::tree::plan_from) or
    /// [`plan_from_to`](paracrypt_core::tree::plan_from_to).
    pub fn plan(
        &self,
        runner: &paracrypt_core::Runner,
        request: &paracrypt_core::request::Request,
        input: &LocalPath,
        output: &LocalPath,
        options: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<paracrypt_core::tree::Plan> {
        use paracrypt_core::tree::{PlainInput, plan, plan_from, plan_from_to, plan_to};
        let plain = self
            .plain
            .as_ref()
            .map(|p| Arc::clone(p) as Arc<dyn PlainInput>);
        match (plain, self.output()) {
            (None, None) => plan(runner, request, input, output, options),
            (None, Some(out)) => plan_to(runner, request, input, out, options),
            (Some(plain), None) => plan_from(runner, request, plain, output, options),
            (Some(plain), Some(out)) => plan_from_to(runner, request, plain, out, options),
        }
    }

    /// The whole encryption in this process: [`Encryption::plan`], every file sealed here, the
    /// manifest written.
    pub fn run(
        &self,
        runner: &paracrypt_core::Runner,
        request: &paracrypt_core::request::Request,
        input: &LocalPath,
        output: &LocalPath,
        options: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<paracrypt_core::tree::Summary> {
        let plan = self.plan(runner, request, input, output, options)?;
        let sealed = plan.seal_here(runner);
        Ok(plan.finish(runner, sealed))
    }
}

/// A decryption of a tree with a prefix on one side or both, checked ([`prefix_run`]): the
/// encrypted tree of a prefix (listed) or of a local directory, decrypted into a local
/// directory or into a prefix (checked: [`TreeOutput::prepare`]). Every front end plans and
/// runs it through [`Decryption::plan`] and [`Decryption::run`], which choose the core's call.
pub struct Decryption {
    input: Arc<dyn TreeInput>,
    /// `None`: the local directory the run names.
    output: Option<Arc<PrefixOutput>>,
}

impl std::fmt::Debug for Decryption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decryption")
            .field("input", &self.input.shown(b""))
            .field("output", &self.output.as_ref().map(|out| &out.prefix))
            .finish()
    }
}

impl Decryption {
    /// The core's [`open_plan_from`](paracrypt_core::tree::open_plan_from) into the local
    /// directory `output`, or [`open_plan_to`](paracrypt_core::tree::open_plan_to) into the
    /// prefix this run checked.
    pub fn plan(
        &self,
        runner: &paracrypt_core::Runner,
        request: &paracrypt_core::request::Request,
        output: &LocalPath,
        options: &paracrypt_core::tree::Options,
        driver: paracrypt_core::request::Driver,
    ) -> paracrypt_core::Result<paracrypt_core::tree::OpenPlan> {
        let input = Arc::clone(&self.input);
        match &self.output {
            None => paracrypt_core::tree::open_plan_from(
                runner, request, input, output, options, driver,
            ),
            Some(out) => {
                let out: Arc<dyn TreeOutput> = out.clone();
                paracrypt_core::tree::open_plan_to(runner, request, input, out, options, driver)
            }
        }
    }

    /// The whole decryption in this process: [`Decryption::plan`], every file opened here,
    /// then the plan's finish.
    pub fn run(
        &self,
        runner: &paracrypt_core::Runner,
        request: &paracrypt_core::request::Request,
        output: &LocalPath,
        options: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<paracrypt_core::tree::Summary> {
        let plan = self.plan(
            runner,
            request,
            output,
            options,
            paracrypt_core::request::Driver::Whole,
        )?;
        let opened = plan.open_here(runner);
        Ok(plan.finish(opened))
    }
}

/// `path` as the URL of a prefix, when it is one ([`is_url`](crate::is_url)).
fn url_of(path: &LocalPath) -> Option<&str> {
    path.to_str().filter(|text| crate::is_url(text))
}

/// A store's error as the core's: a URL or setting refused is a usage error
/// ([`paracrypt_core::Error::Request`]), anything else an I/O error of `doing`.
fn core_error(doing: &str, e: Error) -> paracrypt_core::Error {
    match e.core_kind() {
        paracrypt_core::ErrorKind::Usage => paracrypt_core::Error::Request(e.to_string()),
        _ => paracrypt_core::Error::io(doing, io_error(e)),
    }
}

/// Checks the tree run from `input` to `output` when either is a prefix in object storage
/// (`s3://bucket/prefix/`) and opens that prefix; `None` when both are local. What a prefix may
/// do is decided here and in the core ([`check_in_store`](paracrypt_core::tree::check_in_store):
/// a local directory encrypted into a prefix, or an update of the encrypted tree in a prefix;
/// an encrypted tree, local or in a prefix, decrypted into a local directory or a prefix), the
/// same for every front end; each refusal comes before any secret is read. A prefix written
/// into is asked whether it holds objects (refused without `tree_options.force` or `update`:
/// [`paracrypt_core::Error::TreeOutputExists`]); an update's, and a decryption's input, is
/// listed. Two prefixes of one run must not overlap. `watch` is told of every multipart upload.
pub fn prefix_run(
    encrypting: bool,
    input: &LocalPath,
    output: &LocalPath,
    tree_options: &paracrypt_core::tree::Options,
    options: Options,
    watch: Option<Arc<dyn UploadWatch>>,
) -> paracrypt_core::Result<Option<PrefixRun>> {
    let (input_url, output_url) = (url_of(input), url_of(output));
    if input_url.is_none() && output_url.is_none() {
        return Ok(None);
    }
    paracrypt_core::tree::check_in_store(
        encrypting,
        (input, input_url.is_some()),
        (output, output_url.is_some()),
        tree_options,
    )?;
    let force = tree_options.force || tree_options.update;
    if let (Some(from), Some(to)) = (input_url, output_url) {
        overlap(from, to)?;
    }
    match (encrypting, input_url, output_url) {
        (true, input_url, output_url) => {
            let output = match output_url {
                None => {
                    paracrypt_core::tree::check_dest(output, tree_options)?;
                    None
                }
                Some(url) => {
                    let prefix = Prefix::open(url, options)
                        .map_err(|e| core_error("cannot open the tree", e))?;
                    let out = if tree_options.update {
                        PrefixOutput::updating(prefix, watch.clone())
                            .map_err(|e| core_error("cannot read the tree", e))?
                    } else {
                        PrefixOutput::new(prefix, force, watch.clone())
                    };
                    out.prepare(input, force)?;
                    Some(Arc::new(out))
                }
            };
            let plain = match input_url {
                None => None,
                Some(url) => Some(Arc::new(plain_input(url, options)?)),
            };
            Ok(Some(PrefixRun::Encrypt(Encryption { plain, output })))
        }
        (false, input_url, output_url) => {
            let output = match output_url {
                None => None,
                Some(url) => {
                    let prefix = Prefix::open(url, options)
                        .map_err(|e| core_error("cannot open the tree", e))?;
                    let out = PrefixOutput::new(prefix, tree_options.force, watch);
                    out.prepare(input, tree_options.force)?;
                    Some(Arc::new(out))
                }
            };
            let input: Arc<dyn TreeInput> = match input_url {
                Some(url) => Arc::new(prefix_input(url, options)?),
                None => Arc::new(paracrypt_core::tree::LocalInput {
                    root: input.to_path_buf(),
                }),
            };
            Ok(Some(PrefixRun::Decrypt(Decryption { input, output })))
        }
    }
}

/// A rekey of an encrypted tree with a prefix on one side or both, checked ([`prefix_rekey`]):
/// the encrypted tree of a prefix (listed) or of a local directory, rekeyed into a new tree in
/// a local directory or a prefix (checked: [`TreeOutput::prepare`]). Every front end runs it
/// through [`Rekeying::run`], which chooses the core's call.
pub struct Rekeying {
    input: Arc<dyn TreeInput>,
    /// `None`: the local directory the run names.
    output: Option<Arc<PrefixOutput>>,
}

impl std::fmt::Debug for Rekeying {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rekeying")
            .field("input", &self.input.shown(b""))
            .field("output", &self.output.as_ref().map(|out| &out.prefix))
            .finish()
    }
}

impl Rekeying {
    /// The whole rekey in this process: the core's
    /// [`rekey_from`](paracrypt_core::tree::rekey_from) into the local directory `output`, or
    /// [`rekey_to`](paracrypt_core::tree::rekey_to) into the prefix this run checked; the
    /// manifest opened with `open`, the new tree sealed as `to` says.
    pub fn run(
        &self,
        runner: &paracrypt_core::Runner,
        open: &paracrypt_core::request::Request,
        to: &paracrypt_core::tree::RekeyTo,
        output: &LocalPath,
        options: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<paracrypt_core::tree::Summary> {
        use paracrypt_core::tree::{rekey_from, rekey_to};
        match &self.output {
            None => rekey_from(runner, open, to, &*self.input, output, options),
            Some(out) => {
                let out: Arc<dyn TreeOutput> = out.clone();
                rekey_to(runner, open, to, &*self.input, out, options)
            }
        }
    }
}

/// Checks the rekey of the encrypted tree at `input` into the new tree at `output` when either
/// is a prefix in object storage and opens it; `None` when both are local (the core's
/// [`check_rekey`](paracrypt_core::tree::check_rekey) and
/// [`rekey`](paracrypt_core::tree::rekey) then). Refused here, before any secret is read, for
/// every front end: what the core's
/// [`check_rekey_from`](paracrypt_core::tree::check_rekey_from) refuses (the options a rekey
/// takes no part in, a local output that holds files without `tree_options.force`, a tree
/// encrypted with a key file, seen from its manifest's header), an output prefix that holds
/// objects without `tree_options.force`, and two prefixes that overlap. An input prefix is
/// listed once: every file is read at the version listed. `watch` is told of every multipart
/// upload.
pub fn prefix_rekey(
    input: &LocalPath,
    output: &LocalPath,
    tree_options: &paracrypt_core::tree::Options,
    options: Options,
    watch: Option<Arc<dyn UploadWatch>>,
) -> paracrypt_core::Result<Option<Rekeying>> {
    let (input_url, output_url) = (url_of(input), url_of(output));
    if input_url.is_none() && output_url.is_none() {
        return Ok(None);
    }
    if let (Some(from), Some(to)) = (input_url, output_url) {
        overlap(from, to)?;
    }
    let input: Arc<dyn TreeInput> = match input_url {
        Some(url) => Arc::new(prefix_input(url, options)?),
        None => Arc::new(paracrypt_core::tree::LocalInput {
            root: input.to_path_buf(),
        }),
    };
    let local_output = output_url.is_none().then_some(output);
    paracrypt_core::tree::check_rekey_from(&*input, local_output, tree_options)?;
    let output = match output_url {
        None => None,
        Some(url) => {
            let prefix =
                Prefix::open(url, options).map_err(|e| core_error("cannot open the tree", e))?;
            let out = PrefixOutput::new(prefix, tree_options.force, watch);
            let local_input = input.local().unwrap_or(LocalPath::new(""));
            out.prepare(local_input, tree_options.force)?;
            Some(Arc::new(out))
        }
    };
    Ok(Some(Rekeying { input, output }))
}

/// Refuses a run from the prefix `from` into the prefix `to` when either is, or lies inside,
/// the other (as a local output inside its input is refused): the run would write into the tree
/// it reads.
fn overlap(from: &str, to: &str) -> paracrypt_core::Result<()> {
    let (from, to) = (
        format!("{}/", from.trim_end_matches('/')),
        format!("{}/", to.trim_end_matches('/')),
    );
    if from.starts_with(&to) || to.starts_with(&from) {
        return Err(paracrypt_core::Error::Request(format!(
            "{to} and {from} overlap: a tree is not written into the prefix it is read from, \
             nor around it"
        )));
    }
    Ok(())
}

/// Runs a task of a tree's encryption or decryption from its bytes, as
/// [`paracrypt_core::tree::run_task`] does, on the caller's pool; a task of an encryption with a
/// prefix on either side is run by [`seal_task_from`] with `options` and `watch`, a task of a
/// decryption likewise by [`open_task_from`].
pub fn run_task(
    runner: &paracrypt_core::Runner,
    bytes: &[u8],
    options: Options,
    watch: Option<Arc<dyn UploadWatch>>,
) -> paracrypt_core::Result<paracrypt_core::tree::TaskResult> {
    if let Ok(task) = paracrypt_core::tree::OpenTask::from_bytes(bytes) {
        if url_of(task.input()).is_none() && url_of(task.output()).is_none() {
            return Ok(paracrypt_core::tree::open_task(runner, &task));
        }
        return open_task_from(
            runner,
            &task,
            options,
            Arc::new(paracrypt_core::tree::NoGuard),
            watch,
        );
    }
    // Bytes that are no task are the core's to refuse.
    let Ok(task) = paracrypt_core::tree::Task::from_bytes(bytes) else {
        return paracrypt_core::tree::run_task(runner, bytes);
    };
    if url_of(task.input()).is_none() && url_of(task.output()).is_none() {
        return Ok(paracrypt_core::tree::seal_task(runner, &task));
    }
    seal_task_from(
        runner,
        &task,
        options,
        Arc::new(paracrypt_core::tree::NoGuard),
        watch,
    )
}

/// Runs `task`, of an encryption with a prefix on either side (a plan into a prefix:
/// [`paracrypt_core::tree::plan_to`] or [`prepare_to`](paracrypt_core::tree::prepare_to) with a
/// [`PrefixOutput`]; a plan of a plaintext tree in a prefix:
/// [`plan_from`](paracrypt_core::tree::plan_from) or
/// [`plan_from_to`](paracrypt_core::tree::plan_from_to) with a [`PlainPrefix`]: an
/// [`Encryption`]'s plan), on the caller's pool. A prefix is opened here with `options` and
/// this process's credentials (the environment's `AWS_*`). The input prefix is not listed
/// again: each object is read at the length and ETag the plan listed (one replaced since
/// fails, by name). Each file is written into the local output the task names, telling `guard`
/// of its temporary files, or uploaded into the output prefix (objects of the same names
/// replaced where the plan does), `watch` told of every multipart upload, each completed or
/// aborted before this returns (a process killed meanwhile leaves its open uploads to the
/// bucket's lifecycle rule). A task with neither side a prefix is refused.
pub fn seal_task_from(
    runner: &paracrypt_core::Runner,
    task: &paracrypt_core::tree::Task,
    options: Options,
    guard: Arc<dyn paracrypt_core::tree::Guard>,
    watch: Option<Arc<dyn UploadWatch>>,
) -> paracrypt_core::Result<paracrypt_core::tree::TaskResult> {
    use paracrypt_core::tree::{seal_task_from, seal_task_from_to, seal_task_to};
    let (input_url, output_url) = (url_of(task.input()), url_of(task.output()));
    let input = match input_url {
        Some(url) => {
            let prefix =
                Prefix::open(url, options).map_err(|e| core_error("cannot open the tree", e))?;
            Some(PlainPrefix::pinned(prefix, task.listed()))
        }
        None => None,
    };
    let output = match output_url {
        Some(url) => {
            let prefix =
                Prefix::open(url, options).map_err(|e| core_error("cannot open the tree", e))?;
            Some(PrefixOutput::new(prefix, task.replaces(), watch))
        }
        None => None,
    };
    Ok(match (&input, &output) {
        (Some(input), Some(out)) => seal_task_from_to(runner, task, input, out),
        (Some(input), None) => seal_task_from(runner, task, input, guard),
        (None, Some(out)) => seal_task_to(runner, task, out),
        (None, None) => {
            return Err(paracrypt_core::Error::Request(format!(
                "{} into {}: a task here reads or writes a prefix in object storage",
                task.input().display(),
                task.output().display()
            )));
        }
    })
}

/// Runs `task`, of a decryption with a prefix on either side
/// ([`paracrypt_core::tree::open_plan_from`] with a [`PrefixInput`], or
/// [`open_plan_to`](paracrypt_core::tree::open_plan_to) with a [`PrefixOutput`]: a
/// [`Decryption`]'s plan), on the caller's pool. A prefix is opened here with `options` and this
/// process's credentials (the environment's `AWS_*`). The input prefix is not listed again:
/// each object is read at the length and ETag the plan listed (one replaced since fails, by
/// name). Each file is decrypted into the local output the task names, telling `guard` of its
/// temporary files, or uploaded into the output prefix (objects of the same names replaced
/// where the plan does), `watch` told of every multipart upload, each completed or aborted
/// before this returns. A task with neither side a prefix is refused.
pub fn open_task_from(
    runner: &paracrypt_core::Runner,
    task: &paracrypt_core::tree::OpenTask,
    options: Options,
    guard: Arc<dyn paracrypt_core::tree::Guard>,
    watch: Option<Arc<dyn UploadWatch>>,
) -> paracrypt_core::Result<paracrypt_core::tree::TaskResult> {
    let (input_url, output_url) = (url_of(task.input()), url_of(task.output()));
    if input_url.is_none() && output_url.is_none() {
        return Err(paracrypt_core::Error::Request(format!(
            "{} into {}: a task here reads or writes a prefix in object storage",
            task.input().display(),
            task.output().display()
        )));
    }
    let input: Box<dyn TreeInput> = match input_url {
        Some(url) => {
            let prefix =
                Prefix::open(url, options).map_err(|e| core_error("cannot open the tree", e))?;
            let listed = task
                .listed()
                .map(|(rel, len, e_tag)| {
                    let e_tag = e_tag.map(str::to_owned);
                    (rel.to_vec(), Listed { len, e_tag })
                })
                .collect();
            Box::new(PrefixInput { prefix, listed })
        }
        None => Box::new(paracrypt_core::tree::LocalInput {
            root: task.input().to_path_buf(),
        }),
    };
    Ok(match output_url {
        None => paracrypt_core::tree::open_task_from(runner, task, &*input, guard),
        Some(url) => {
            let prefix =
                Prefix::open(url, options).map_err(|e| core_error("cannot open the tree", e))?;
            let out = PrefixOutput::new(prefix, task.replaces(), watch);
            paracrypt_core::tree::open_task_to(runner, task, &*input, &out)
        }
    })
}

/// The encrypted tree under the prefix `url`, listed, to verify or show
/// ([`verify_from`](paracrypt_core::tree::verify_from),
/// [`read_manifest_from`](paracrypt_core::tree::read_manifest_from)) or decrypt.
pub fn prefix_input(url: &str, options: Options) -> paracrypt_core::Result<PrefixInput> {
    let prefix = Prefix::open(url, options).map_err(|e| core_error("cannot open the tree", e))?;
    PrefixInput::open(prefix).map_err(|e| core_error("cannot read the tree", e))
}

/// The plaintext tree under the prefix `url`, listed, to encrypt, sign or check against its
/// signature ([`PlainPrefix`]).
pub fn plain_input(url: &str, options: Options) -> paracrypt_core::Result<PlainPrefix> {
    let prefix = Prefix::open(url, options).map_err(|e| core_error("cannot open the tree", e))?;
    PlainPrefix::open(prefix).map_err(|e| core_error("cannot read the tree", e))
}

/// A prefix as an encrypted tree's input (see the [module](self)): listed once when opened.
pub struct PrefixInput {
    prefix: Prefix,
    listed: BTreeMap<Vec<u8>, Listed>,
}

impl PrefixInput {
    /// Lists `prefix` (one listing: see [`Prefix::list`]).
    pub fn open(prefix: Prefix) -> Result<Self, Error> {
        let listed = prefix.list()?;
        Ok(PrefixInput { prefix, listed })
    }

    /// Whether the prefix holds no object.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }
}

impl TreeInput for PrefixInput {
    fn shown(&self, rel: &[u8]) -> String {
        format!("{}{}", self.prefix.url, String::from_utf8_lossy(rel))
    }

    fn open(&self, rel: &[u8]) -> io::Result<Box<dyn InputFile + '_>> {
        let Some(listed) = self.listed.get(rel) else {
            return Err(io::ErrorKind::NotFound.into());
        };
        let object = self.prefix.object(rel).map_err(io_error)?;
        let meta = Meta {
            len: listed.len,
            e_tag: listed.e_tag.clone(),
        };
        Ok(Box::new(ObjectFile(ObjectSource::new(&object, meta))))
    }

    fn len(&self, rel: &[u8]) -> u64 {
        self.listed.get(rel).map_or(0, |l| l.len)
    }

    fn task_root(&self) -> Option<std::path::PathBuf> {
        Some(self.prefix.url.clone().into())
    }

    fn version(&self, rel: &[u8]) -> Option<String> {
        self.listed.get(rel).and_then(|l| l.e_tag.clone())
    }

    fn list(&self) -> paracrypt_core::Result<Vec<(Vec<u8>, Stored)>> {
        Ok(self
            .listed
            .keys()
            .map(|rel| (rel.clone(), Stored::File))
            .collect())
    }
}

/// A prefix as a plaintext tree to encrypt (a `paracrypt_core::tree::PlainInput`): listed once
/// when opened; each object is a file at its key's path under the prefix (mode 644, its time
/// the object's `Last-Modified`), read with ranged GETs pinned to the listing's ETag, so that
/// an object replaced during the run fails by name instead of mixing two versions. The
/// directories are those the keys name (mode 755, the time of the newest object under each);
/// an empty object whose key is a directory's (a console's "folder", `dir/`) is that
/// directory. An empty folder with no object under it reads as an empty file of its name: the
/// listing gives `dir/` as `dir`, and nothing tells the two apart.
pub struct PlainPrefix {
    prefix: Prefix,
    root: std::path::PathBuf,
    listed: BTreeMap<Vec<u8>, (Listed, (i64, u32))>,
}

/// A file's mode in a tree read from a prefix, which keeps none.
const PLAIN_FILE_MODE: u32 = 0o644;
/// A directory's.
const PLAIN_DIR_MODE: u32 = 0o755;

impl PlainPrefix {
    /// Lists `prefix` (one listing: see [`Prefix::list`]).
    pub fn open(prefix: Prefix) -> Result<Self, Error> {
        let listed = prefix
            .listing()?
            .into_iter()
            .map(|(rel, meta)| {
                let modified = meta.last_modified;
                let mtime = (
                    modified.timestamp(),
                    modified.timestamp_subsec_nanos().min(999_999_999),
                );
                let listed = Listed {
                    len: meta.size,
                    e_tag: meta.e_tag,
                };
                (rel, (listed, mtime))
            })
            .collect();
        Ok(PlainPrefix {
            root: prefix.url.clone().into(),
            prefix,
            listed,
        })
    }

    /// `prefix` as a task of a plan from it carries it ([`Task::listed`]: each file's path,
    /// length, time and the ETag listed), without listing it again: each object is read at that
    /// version.
    ///
    /// [`Task::listed`]: paracrypt_core::tree::Task::listed
    pub fn pinned<'a>(
        prefix: Prefix,
        files: impl IntoIterator<Item = (paracrypt_core::tree::PlainEntry, Option<&'a str>)>,
    ) -> Self {
        let listed = files
            .into_iter()
            .map(|(entry, e_tag)| {
                let listed = Listed {
                    len: entry.len.unwrap_or(0),
                    e_tag: e_tag.map(str::to_owned),
                };
                (entry.path, (listed, entry.mtime))
            })
            .collect();
        PlainPrefix {
            root: prefix.url.clone().into(),
            prefix,
            listed,
        }
    }
}

impl paracrypt_core::tree::PlainInput for PlainPrefix {
    fn root(&self) -> &LocalPath {
        &self.root
    }

    fn shown(&self, rel: &[u8]) -> String {
        format!("{}{}", self.prefix.url, String::from_utf8_lossy(rel))
    }

    fn walk(&self) -> paracrypt_core::Result<Vec<paracrypt_core::tree::PlainEntry>> {
        use paracrypt_core::tree::PlainEntry;
        // Every directory a key names, with the newest time under it.
        let mut dirs: BTreeMap<&[u8], (i64, u32)> = BTreeMap::new();
        dirs.insert(b"", (0, 0));
        for (rel, (_, mtime)) in &self.listed {
            let mut at = &rel[..];
            while let Some(slash) = at.iter().rposition(|&b| b == b'/') {
                at = &at[..slash];
                let newest = dirs.entry(at).or_insert(*mtime);
                *newest = (*newest).max(*mtime);
            }
            let top = dirs.entry(b"").or_insert(*mtime);
            *top = (*top).max(*mtime);
        }
        let mut entries = Vec::with_capacity(self.listed.len() + dirs.len());
        for (rel, (listed, mtime)) in &self.listed {
            if dirs.contains_key(&rel[..]) {
                // A folder marker is its directory; anything else there is two things at once.
                if listed.len == 0 {
                    continue;
                }
                return Err(paracrypt_core::Error::Tree(format!(
                    "{} is an object and a directory of other objects: it cannot be a file of a \
                     tree",
                    self.shown(rel)
                )));
            }
            entries.push(PlainEntry {
                path: rel.clone(),
                len: Some(listed.len),
                mode: PLAIN_FILE_MODE,
                mtime: *mtime,
            });
        }
        entries.extend(dirs.into_iter().map(|(rel, mtime)| PlainEntry {
            path: rel.to_vec(),
            len: None,
            mode: PLAIN_DIR_MODE,
            mtime,
        }));
        Ok(entries)
    }

    fn open(&self, rel: &[u8]) -> io::Result<Box<dyn InputFile + '_>> {
        let Some((listed, _)) = self.listed.get(rel) else {
            return Err(io::ErrorKind::NotFound.into());
        };
        let object = self.prefix.object(rel).map_err(io_error)?;
        let meta = Meta {
            len: listed.len,
            e_tag: listed.e_tag.clone(),
        };
        Ok(Box::new(ObjectFile(ObjectSource::new(&object, meta))))
    }

    fn version(&self, rel: &[u8]) -> Option<String> {
        self.listed.get(rel)?.0.e_tag.clone()
    }

    /// The prefix's URL: a process that runs a task of the plan opens it again
    /// ([`run_task`], [`seal_task_from`]), each object at the version the task carries.
    fn task_root(&self) -> Option<std::path::PathBuf> {
        Some(self.root.clone())
    }
}

/// An object of an input prefix, read with ranged GETs.
struct ObjectFile(ObjectSource);

impl InputFile for ObjectFile {
    fn source(&self) -> &dyn Source {
        &self.0
    }

    fn len(&self) -> u64 {
        self.0.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let len = self.0.len();
        if offset >= len {
            return Ok(0);
        }
        let n = (len - offset).min(buf.len() as u64) as usize;
        self.0
            .read_chunk(0, offset, &mut buf[..n])
            .map_err(io::Error::other)?;
        Ok(n)
    }
}
