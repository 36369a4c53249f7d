//! Writing an object: one multipart upload, its parts uploaded concurrently, the object made
//! only by the final complete request, and aborted on any failure.
//!
//! **Parts of a job of known length** are runs of whole chunks: part `i` of `n` is
//! [`ChunkPlan::block`]`(i, n)`, computed with the core's [`engine::run_to_buffer`] (part 0
//! also carries the job's output header in front), so a part's bytes are a function of the
//! header and its chunks, whoever computes them — one process, or the MPI rank that owns it.
//! `n` ([`part_count`]) gives every part at least [`MIN_PART`] bytes (S3 wants 5 MiB but for
//! the last) and at most [`MAX_PARTS`] parts, so parts grow past 8 MiB only for outputs over
//! 78 GiB (`output / 10,000`).
//!
//! **Streams of unknown length** ([`PartWriter`]) are cut into parts of [`MIN_PART`] bytes for
//! the first 1,000 parts, then twice that for each further 1,000 (so 10,000 parts reach past
//! S3's 5 TiB limit); the last part is what is left.
//!
//! **Memory**: at most [`Options::upload_concurrency`] parts are in flight, and one more is
//! being made: `(upload_concurrency + 1) × part size` (72 MiB at the default 8 and 8 MiB
//! parts), whatever the object's size up to 78 GiB. Uploads that share a [`Budget`] (a tree's
//! files) have at most its number of parts in flight among all of them.
//!
//! **Failure**: a part that fails (after object_store's retries) makes every later
//! [`Upload::put_part`] and [`Upload::complete`] fail; [`Upload::complete`] then aborts the
//! upload, and so does dropping an [`Upload`] that was not completed, so no parts are left
//! behind. An [`Aborter`] aborts from another thread (a signal handler's).
//!
//! [`Options::upload_concurrency`]: crate::Options::upload_concurrency

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::multipart::{MultipartStore, PartId};
use object_store::{MultipartId, PutPayload};
use paracrypt_core::ChunkError;
use paracrypt_core::engine::{self, Job, Source};
use paracrypt_core::plan::ChunkPlan;
use tokio::sync::Semaphore;

use crate::error::{Error, Kind};
use crate::object::Object;

/// The smallest part paracrypt uploads (8 MiB; S3 needs 5 MiB for every part but the last).
pub const MIN_PART: u64 = 8 << 20;

/// The most parts of one upload (S3's limit).
pub const MAX_PARTS: u64 = 10_000;

/// How many parts an upload of `plan`'s output has: every part holds at least [`MIN_PART`]
/// bytes of chunks (the last may hold less), and there are at most [`MAX_PARTS`].
///
/// ```
/// use paracrypt_core::plan::{ChunkLayout, ChunkPlan, Tail};
/// use paracrypt_store::part_count;
///
/// // 1 GiB in 1 MiB chunks sealed with a 16-byte tag: 128 parts of 8 chunks.
/// let layout = ChunkLayout::framed(0, 1 << 20, 64, (1 << 20) + 16, Tail::Fixed).unwrap();
/// let plan = ChunkPlan::new(layout, 1 << 30).unwrap();
/// assert_eq!(part_count(&plan), 128);
/// assert_eq!(plan.block(0, 128), 0..8);
/// // 1 TiB: 10,000 parts of 104 or 105 chunks.
/// assert_eq!(part_count(&ChunkPlan::new(layout, 1 << 40).unwrap()), 10_000);
/// ```
pub fn part_count(plan: &ChunkPlan) -> usize {
    let stride = plan.layout().output_chunk.max(1) as u64;
    let per_part = MIN_PART.div_ceil(stride).max(1);
    (plan.len() / per_part).clamp(1, MAX_PARTS) as usize
}

/// The size of stream part `index` ([`PartWriter`]): [`MIN_PART`], doubled every 1,000 parts.
pub fn stream_part_size(index: usize) -> usize {
    (MIN_PART as usize) << (index / 1000).min(10)
}

/// A failure while uploading a job: a chunk, or the store.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// A chunk failed (it was being read or transformed).
    #[error(transparent)]
    Chunk(#[from] ChunkError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
}

/// One multipart upload in progress (see the [crate docs](crate)).
pub struct Upload {
    object: Object,
    store: Arc<dyn MultipartStore>,
    id: MultipartId,
    /// Part ids by index, as the part uploads finish.
    parts: Arc<Mutex<Vec<Option<PartId>>>>,
    /// The first failure of a part.
    failed: Arc<Mutex<Option<Error>>>,
    permits: Arc<Semaphore>,
    concurrency: usize,
    /// Shared with other uploads: the parts in flight among all of them.
    budget: Option<Budget>,
    /// Complete with `If-None-Match: *` (no `--force`).
    create: bool,
    /// Whether this process owns the upload (created it): only the owner aborts on drop.
    owner: bool,
    finished: bool,
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload")
            .field("object", &self.object.url)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Upload {
    /// Starts a multipart upload of `object`. Without `force`, an existing object is refused
    /// now (a HEAD request) and again when the upload completes, where the store can make
    /// that atomic (S3: `If-None-Match: *` on the complete request).
    pub fn create(object: &Object, force: bool) -> Result<Self, Error> {
        let store = object.multipart.clone().ok_or_else(|| {
            Error::new(
                Kind::Unsupported,
                format!("cannot write {}: this kind of URL is read-only", object.url),
            )
        })?;
        if !force && object.exists()? {
            return Err(exists(object));
        }
        let id = object
            .block_on(store.create_multipart(&object.path))
            .map_err(|e| object.write_error(&e))?;
        log::debug!("{}: multipart upload {id} created", object.url);
        Ok(Self::with_id(object, store, id, !force, true))
    }

    /// Joins the upload `id` that another process created (an MPI rank joining rank 0's), to
    /// upload some of its parts; [`Upload::part_ids`] gives what it uploaded, and only the
    /// creator completes or aborts.
    pub fn join(object: &Object, id: &str) -> Result<Self, Error> {
        let store = object.multipart.clone().ok_or_else(|| {
            Error::new(
                Kind::Unsupported,
                format!("cannot write {}: this kind of URL is read-only", object.url),
            )
        })?;
        Ok(Self::with_id(object, store, id.to_string(), false, false))
    }

    fn with_id(
        object: &Object,
        store: Arc<dyn MultipartStore>,
        id: MultipartId,
        create: bool,
        owner: bool,
    ) -> Self {
        let concurrency = object.options.upload_concurrency.max(1);
        Upload {
            object: object.clone(),
            store,
            id,
            parts: Arc::default(),
            failed: Arc::default(),
            permits: Arc::new(Semaphore::new(concurrency)),
            concurrency,
            budget: None,
            create,
            owner,
            finished: false,
        }
    }

    /// Counts this upload's parts in flight against `budget` too, which other uploads share.
    pub fn within(mut self, budget: &Budget) -> Self {
        self.budget = Some(budget.clone());
        self
    }

    /// The upload's id (what rank 0 sends the other ranks).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The object being written.
    pub fn object(&self) -> &Object {
        &self.object
    }

    /// A handle that aborts this upload from any thread.
    pub fn aborter(&self) -> Aborter {
        Aborter {
            object: self.object.clone(),
            store: self.store.clone(),
            id: self.id.clone(),
        }
    }

    /// Uploads part `index` (from 0) in the background, once fewer than the upload
    /// concurrency are in flight (waiting until then). Fails with the first failure of an
    /// earlier part.
    pub fn put_part(&self, index: usize, data: Vec<u8>) -> Result<(), Error> {
        self.check()?;
        let permit = self
            .object
            .block_on(self.permits.clone().acquire_owned())
            .expect("the semaphore is never closed");
        // The shared budget's after this upload's own, so that a shared permit is never held
        // while waiting on this upload's parts.
        let shared = self.budget.as_ref().map(|budget| {
            self.object
                .block_on(budget.0.clone().acquire_owned())
                .expect("the semaphore is never closed")
        });
        self.check()?;
        let store = self.store.clone();
        let path = self.object.path.clone();
        let id = self.id.clone();
        let parts = self.parts.clone();
        let failed = self.failed.clone();
        // Not the `Object`, which holds the runtime: a task holding its last reference would
        // drop the runtime on the runtime's own thread (tokio panics).
        let doing = format!("cannot write {}", self.object.url);
        let payload = PutPayload::from(Bytes::from(data));
        self.object.runtime.spawn(async move {
            let result = store.put_part(&path, &id, index, payload).await;
            match result {
                Ok(part) => {
                    let mut parts = parts.lock().unwrap_or_else(|e| e.into_inner());
                    if parts.len() <= index {
                        parts.resize(index + 1, None);
                    }
                    parts[index] = Some(part);
                }
                Err(e) => {
                    log::debug!("part {index} failed: {e}");
                    let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                    failed.get_or_insert_with(|| {
                        let e = Error::from_store(&doing, &e);
                        Error::new(e.kind(), format!("{e} (part {index})"))
                    });
                }
            }
            drop(shared);
            drop(permit);
        });
        Ok(())
    }

    /// The first failure of a part, if any.
    fn check(&self) -> Result<(), Error> {
        match &*self.failed.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(Error::new(e.kind(), e.to_string())),
            None => Ok(()),
        }
    }

    /// Waits until every part uploaded so far is done; fails with the first failure.
    pub fn wait(&self) -> Result<(), Error> {
        let all = self
            .object
            .block_on(self.permits.acquire_many(self.concurrency as u32))
            .expect("the semaphore is never closed");
        drop(all);
        self.check()
    }

    /// Waits for every part and returns their ids by index (`None`: a part this process did
    /// not upload).
    pub fn part_ids(&self) -> Result<Vec<Option<String>>, Error> {
        self.wait()?;
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        Ok(parts
            .iter()
            .map(|part| part.as_ref().map(|p| p.content_id.clone()))
            .collect())
    }

    /// Waits for every part, then completes the upload with the parts `0..count` (the ids of
    /// parts others uploaded given in `others`, by index): the object appears now. On any
    /// failure the upload is aborted.
    pub fn complete(mut self, count: usize, others: &[Option<String>]) -> Result<(), Error> {
        let result = self.complete_inner(count, others);
        if result.is_ok() {
            self.finished = true;
        }
        result
    }

    fn complete_inner(&self, count: usize, others: &[Option<String>]) -> Result<(), Error> {
        self.wait()?;
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut ids = Vec::with_capacity(count);
        for index in 0..count {
            let mine = parts.get(index).cloned().flatten();
            let theirs = others.get(index).cloned().flatten();
            match mine.or(theirs.map(|content_id| PartId { content_id })) {
                Some(part) => ids.push(part),
                None => {
                    return Err(Error::new(
                        Kind::Request,
                        format!(
                            "cannot write {}: part {index} was never uploaded",
                            self.object.url
                        ),
                    ));
                }
            }
        }
        let store = match (&self.object.create_only, self.create) {
            (Some(create_only), true) => create_only.clone(),
            _ => self.store.clone(),
        };
        if self.create && self.object.create_only.is_none() && self.object.exists()? {
            // No conditional complete in this store: the second look is all there is.
            return Err(exists(&self.object));
        }
        self.object
            .block_on(store.complete_multipart(&self.object.path, &self.id, ids))
            .map_err(|e| self.object.write_error(&e))?;
        log::debug!(
            "{}: multipart upload {} completed",
            self.object.url,
            self.id
        );
        Ok(())
    }
}

/// The parts in flight allowed among the uploads that share it ([`Upload::within`]): a tree's
/// files, so that `--upload-concurrency` bounds the tree's parts in flight (and their memory),
/// not each file's.
#[derive(Clone, Debug)]
pub struct Budget(Arc<Semaphore>);

impl Budget {
    /// At most `parts` (at least one) parts in flight at once.
    pub fn new(parts: usize) -> Self {
        Budget(Arc::new(Semaphore::new(parts.max(1))))
    }
}

impl Upload {
    /// Aborts the upload once its parts in flight are done: its parts are deleted and no
    /// object is made. (Dropping an upload does the same, silently.)
    pub fn abort(mut self) -> Result<(), Error> {
        self.finished = true;
        let _ = self.wait();
        self.aborter().abort()
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.finished || !self.owner {
            return;
        }
        // Parts in flight first, so that none lands after the abort.
        let _ = self.wait();
        if let Err(e) = self.aborter().abort() {
            log::debug!("{e}");
        }
    }
}

/// The object `object` exists (and `--force` was not given).
fn exists(object: &Object) -> Error {
    Error::new(
        Kind::AlreadyExists,
        paracrypt_core::Error::OutputExists(object.url.to_string()).to_string(),
    )
}

/// Aborts a multipart upload from any thread ([`Upload::aborter`]).
#[derive(Clone)]
pub struct Aborter {
    object: Object,
    store: Arc<dyn MultipartStore>,
    id: MultipartId,
}

impl std::fmt::Debug for Aborter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aborter")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Aborter {
    /// Aborts the upload: its parts are deleted and no object is made. Waits at most 10 s.
    pub fn abort(&self) -> Result<(), Error> {
        let store = self.store.clone();
        let path = self.object.path.clone();
        let id = self.id.clone();
        let abort = self.object.block_on(async move {
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                store.abort_multipart(&path, &id),
            )
            .await
        });
        match abort {
            Ok(Ok(())) => {
                log::debug!("{}: multipart upload {} aborted", self.object.url, self.id);
                Ok(())
            }
            Ok(Err(e)) => Err(self.object.write_error(&e)),
            _ => Err(Error::new(
                Kind::Request,
                format!(
                    "cannot abort the upload of {} (upload id {}): no answer in 10 s",
                    self.object.url, self.id
                ),
            )),
        }
    }
}

/// Uploads parts `parts` of `job`'s output (of [`part_count`] parts in all), each computed
/// with [`engine::run_to_buffer`] from `source` in the caller's pool: part 0 with the job's
/// output header in front. Returns where the output ends if the last part was among them.
/// The caller completes the upload.
///
/// # Panics
/// If the job has no plan (its input's length was not known).
pub fn upload_parts(
    job: &Job,
    source: &dyn Source,
    upload: &Upload,
    parts: Range<usize>,
) -> Result<Option<u64>, UploadError> {
    let plan = job
        .plan()
        .expect("uploading parts needs the input's length");
    let count = part_count(plan);
    let mut end = None;
    for index in parts {
        let chunks = plan.block(index, count);
        let mut data = Vec::new();
        end = end.or(engine::run_to_buffer(job, chunks, source, &mut data)?);
        if index == 0 && !job.output_header().is_empty() {
            let mut whole = Vec::with_capacity(job.output_header().len() + data.len());
            whole.extend_from_slice(job.output_header());
            whole.extend_from_slice(&data);
            data = whole;
        }
        upload.put_part(index, data)?;
    }
    Ok(end)
}

/// A `Write` adapter that cuts what is written into parts of an upload it owns
/// ([`stream_part_size`]), uploading each as it fills; [`PartWriter::finish`] uploads the last
/// one and completes the upload. Dropped unfinished, the upload is aborted.
#[derive(Debug)]
pub struct PartWriter {
    upload: Upload,
    buf: Vec<u8>,
    next: usize,
}

impl PartWriter {
    /// A writer into `upload`'s parts from part 0.
    pub fn new(upload: Upload) -> Self {
        PartWriter {
            upload,
            buf: Vec::new(),
            next: 0,
        }
    }

    /// The upload (to upload parts of a known plan with [`upload_parts`] instead of writing).
    pub fn upload(&self) -> &Upload {
        &self.upload
    }

    /// The upload, with whatever was written and not yet uploaded dropped.
    pub fn into_upload(self) -> Upload {
        self.upload
    }

    /// Uploads what is left as the last part and completes the upload: the object appears.
    pub fn finish(mut self) -> Result<(), Error> {
        if !self.buf.is_empty() || self.next == 0 {
            let data = std::mem::take(&mut self.buf);
            self.upload.put_part(self.next, data)?;
            self.next += 1;
        }
        self.upload.complete(self.next, &[])
    }
}

impl std::io::Write for PartWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let size = stream_part_size(self.next);
        let n = data.len().min(size - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == size {
            let part = std::mem::take(&mut self.buf);
            self.upload
                .put_part(self.next, part)
                .map_err(std::io::Error::other)?;
            self.next += 1;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
