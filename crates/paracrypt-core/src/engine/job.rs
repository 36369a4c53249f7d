//! A job: everything the drivers need to run one input through a transform, as one value.

use std::sync::Mutex;

use rayon::prelude::*;

use zeroize::Zeroizing;

use super::{ChunkCtx, ChunkTransform, SerialTransform};
use crate::error::{ChunkError, Result};
use crate::plan::{ChunkLayout, ChunkPlan};

/// A transform together with how it may be scheduled: [`Transform::parallel`] or
/// [`Transform::serial`].
///
/// This is the one place where the two differ (as BLAKE3's `join` is for its hashing): every
/// driver — in memory, positional, stream, the `Write` adapter, and through them
/// `paracrypt-mpi`'s batches — runs its chunks through one private method that schedules them
/// on every pool thread for a parallel transform, or in order on the calling thread for a
/// serial one, whose lock is taken once per run.
pub struct Transform(Kind);

/// How a [`Transform`] holds its work: a serial one behind a lock, so that a job is shared by
/// reference.
pub(crate) enum Kind {
    Parallel(Box<dyn ChunkTransform + Send>),
    Serial(Mutex<Box<dyn SerialTransform>>),
}

/// A transform as a driver calls it, whichever its schedule: in place, or from the chunk's
/// input into its output slot.
pub(crate) enum Apply<'a> {
    Parallel(&'a (dyn ChunkTransform + Send + 'static)),
    Serial(&'a mut (dyn SerialTransform + 'static)),
}

impl Apply<'_> {
    /// Transforms `buf[..input_len]` in place ([`ChunkTransform::transform`]).
    pub(crate) fn in_place(
        &mut self,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        input_len: usize,
    ) -> Result<usize> {
        match self {
            Apply::Parallel(t) => t.transform(chunk, buf, input_len),
            Apply::Serial(t) => t.transform(chunk, buf, input_len),
        }
    }

    /// Transforms `input` into `output` ([`ChunkTransform::transform_to`]).
    pub(crate) fn apart(
        &mut self,
        chunk: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<usize> {
        match self {
            Apply::Parallel(t) => t.transform_to(chunk, input, output),
            Apply::Serial(t) => t.transform_to(chunk, input, output),
        }
    }
}

impl Transform {
    /// Chunks are independent and run in parallel (ECB, CTR, CBC decryption, the container).
    pub fn parallel(transform: impl ChunkTransform + Send + 'static) -> Self {
        Transform(Kind::Parallel(Box::new(transform)))
    }

    /// Chunks run in order on one thread (CBC encryption, RC4).
    pub fn serial(transform: impl SerialTransform + 'static) -> Self {
        Transform(Kind::Serial(Mutex::new(Box::new(transform))))
    }

    /// The parallel transform, or `self` back when it is serial.
    pub(crate) fn into_parallel(self) -> Result<Box<dyn ChunkTransform + Send>, Self> {
        match self.0 {
            Kind::Parallel(t) => Ok(t),
            serial => Err(Transform(serial)),
        }
    }

    /// Runs `f` with the transform as the calling thread calls it, for a driver that runs its
    /// own chunks on one thread (a tree's task: [`crate::tree`]). A serial transform is locked
    /// for the call and must still see its chunks in order.
    pub(crate) fn here<R>(&self, f: impl FnOnce(&mut Apply<'_>) -> R) -> R {
        match &self.0 {
            Kind::Parallel(t) => f(&mut Apply::Parallel(&**t)),
            Kind::Serial(t) => {
                let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
                f(&mut Apply::Serial(&mut **t))
            }
        }
    }

    /// Whether the chunks may run on more than one thread.
    pub(crate) fn is_parallel(&self) -> bool {
        matches!(self.0, Kind::Parallel(_))
    }

    /// How many input bytes just before each chunk the transform needs.
    pub(crate) fn context_len(&self) -> usize {
        match &self.0 {
            Kind::Parallel(t) => t.context_len(),
            Kind::Serial(_) => 0,
        }
    }

    /// How many workers [`Transform::each`] may keep busy: every pool thread, or one.
    pub(crate) fn workers(&self) -> usize {
        match self.0 {
            Kind::Parallel(_) => rayon::current_num_threads(),
            Kind::Serial(_) => 1,
        }
    }

    /// Runs `f` on every item, handing it the transform to call on its chunks. Parallel work
    /// runs the items on any pool thread, in any order, all of them, and the error of the
    /// lowest failing chunk wins; serial work runs them in order on the calling thread, the
    /// transform locked once for the whole run, and stops at the first failure (later chunks
    /// depend on the state it left). Returns the one `Some` an item gave (the last chunk's
    /// end), if any.
    pub(crate) fn each<I, T, R>(
        &self,
        items: I,
        f: impl Fn(&mut Apply<'_>, T) -> Result<Option<R>, ChunkError> + Sync,
    ) -> Result<Option<R>, ChunkError>
    where
        I: IntoParallelIterator<Item = T> + IntoIterator<Item = T>,
        T: Send,
        R: Send,
    {
        match &self.0 {
            Kind::Parallel(t) => items
                .into_par_iter()
                .map(|item| f(&mut Apply::Parallel(&**t), item))
                .reduce(|| Ok(None), lowest_error),
            Kind::Serial(t) => {
                let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
                let mut apply = Apply::Serial(&mut **t);
                let mut end = None;
                for item in items {
                    end = end.or(f(&mut apply, item)?);
                }
                Ok(end)
            }
        }
    }
}

impl std::fmt::Debug for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Kind::Parallel(_) => "Transform::parallel",
            Kind::Serial(_) => "Transform::serial",
        })
    }
}

/// Combines two chunk results: the error of the lowest chunk wins, else the one `Some`.
pub(crate) fn lowest_error<T>(
    a: Result<Option<T>, ChunkError>,
    b: Result<Option<T>, ChunkError>,
) -> Result<Option<T>, ChunkError> {
    match (a, b) {
        (Err(x), Err(y)) => Err(if x.index <= y.index { x } else { y }),
        (Err(x), Ok(_)) | (Ok(_), Err(x)) => Err(x),
        (Ok(x), Ok(y)) => Ok(x.or(y)),
    }
}

/// One input's work: where every chunk goes (the layout and, once the input's length is known,
/// the plan), the transform that runs on each chunk, and the header bytes outside the chunks.
///
/// Every format's [`Recipe`](crate::Recipe) makes one; every driver (in memory, file to file,
/// stream to stream, and `paracrypt-mpi`'s ranks) runs one. A job can be run more than once,
/// and shared between threads: a serial transform starts over at chunk 0.
///
/// ```
/// use paracrypt_core::engine::{self, Job};
/// use paracrypt_core::plan::ChunkSize;
/// use paracrypt_core::provider::Provider;
/// use paracrypt_core::raw::{Direction, RawCipher};
/// use paracrypt_core::Recipe;
///
/// let cipher = RawCipher::new("aes-128-ctr".parse()?, &[1; 16], Some(&[2; 16]))?;
/// let recipe = cipher.recipe(Direction::Encrypt, ChunkSize::new(4096)?);
/// let job: Job = recipe.first_job(&mut &[][..], Some(10_000), Provider::default())?;
/// assert_eq!(job.plan().map(|plan| plan.len()), Some(3));
/// assert!(job.is_parallel() && job.header().is_empty());
///
/// let mut out = Vec::new();
/// engine::run_in_memory(&job, &[0u8; 10_000], &mut out)?;
/// assert_eq!(out.len(), 10_000);
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
pub struct Job {
    layout: ChunkLayout,
    plan: Option<ChunkPlan>,
    transform: Transform,
    header: Box<[u8]>,
    shared_key: Option<Zeroizing<Box<[u8]>>>,
}

impl Job {
    /// A job of `transform` over chunks laid out by `layout`, for input of unknown length (a
    /// stream) and without a header. See [`Job::with_input_len`] and [`Job::with_header`].
    pub fn new(layout: ChunkLayout, transform: Transform) -> Self {
        Job {
            layout,
            plan: None,
            transform,
            header: Box::default(),
            shared_key: None,
        }
    }

    /// Plans the job for an input of `input_len` bytes (the whole input, header included), as
    /// positional work needs. Fails when the input is shorter than the layout's offset.
    pub fn with_input_len(mut self, input_len: u64) -> Result<Self> {
        self.plan = Some(ChunkPlan::new(self.layout, input_len)?);
        Ok(self)
    }

    /// [`Job::with_input_len`] when the input's length is known; `None` (a stream) leaves the
    /// job unplanned.
    pub(crate) fn planned_for(self, input_len: Option<u64>) -> Result<Self> {
        match input_len {
            Some(len) => self.with_input_len(len),
            None => Ok(self),
        }
    }

    /// Sets the header: the bytes before the first chunk, in the output (when the layout's
    /// output offset is their length: a header the job writes) or in the input (a header it
    /// was made from).
    ///
    /// # Panics
    /// If `header` fills neither offset.
    pub fn with_header(mut self, header: impl Into<Box<[u8]>>) -> Self {
        let header = header.into();
        let len = header.len() as u64;
        assert!(
            len == self.layout.output_offset || len == self.layout.input_offset,
            "a {len}-byte header fills neither the input's nor the output's offset"
        );
        self.header = header;
        self
    }

    /// Sets the key another process needs, besides the header, to make the same job
    /// ([`Recipe::job_from_header`](crate::Recipe::job_from_header)): a fresh file key that only
    /// this process drew (encrypting to recipients), or one that is dear to derive again (an
    /// scrypt passphrase). It is zeroized when the job is dropped.
    pub fn with_shared_key(mut self, key: &[u8]) -> Self {
        self.shared_key = Some(Zeroizing::new(key.into()));
        self
    }

    /// The key set by [`Job::with_shared_key`]: what `paracrypt-mpi`'s rank 0 sends the other
    /// ranks with the header, when the header alone does not let them make the same job
    /// cheaply.
    pub fn shared_key(&self) -> Option<&[u8]> {
        self.shared_key.as_deref().map(|key| &key[..])
    }

    /// Where every chunk goes, whatever the input's length.
    pub fn layout(&self) -> &ChunkLayout {
        &self.layout
    }

    /// The plan, when the job was made for an input of known length.
    pub fn plan(&self) -> Option<&ChunkPlan> {
        self.plan.as_ref()
    }

    /// The plan of a positional driver.
    ///
    /// # Panics
    /// If the job was made without the input's length.
    pub(crate) fn planned(&self) -> &ChunkPlan {
        self.plan
            .as_ref()
            .expect("positional work needs a job made with the input's length")
    }

    /// The header (empty for a raw cipher): what `paracrypt-mpi`'s rank 0 sends the other ranks
    /// so that they make the same job.
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// The bytes the output starts with, before its first chunk: the header when the job
    /// writes one (sealing), nothing otherwise.
    pub fn output_header(&self) -> &[u8] {
        if self.header.len() as u64 == self.layout.output_offset {
            &self.header
        } else {
            &[]
        }
    }

    /// Whether the chunks may run on more than one thread.
    pub fn is_parallel(&self) -> bool {
        self.transform.is_parallel()
    }

    /// How many input bytes just before each chunk the transform needs.
    pub fn context_len(&self) -> usize {
        self.transform.context_len()
    }

    /// Transforms one chunk in `buf` at the position `chunk` gives, as a driver would (a driver
    /// takes the position from the plan). For tools and tests that make or check single chunks;
    /// a serial transform sees the chunks in the order they are given.
    pub fn transform_chunk(
        &self,
        chunk: &ChunkCtx<'_>,
        buf: &mut [u8],
        input_len: usize,
    ) -> Result<usize> {
        let failed = |source| ChunkError {
            index: chunk.index,
            source,
        };
        let len = self
            .transform
            .each(Some(buf), |t, buf| {
                t.in_place(chunk, buf, input_len).map(Some).map_err(failed)
            })
            .map_err(|e| e.source)?;
        Ok(len.expect("one chunk was transformed"))
    }

    /// The transform, to run through [`Transform::each`].
    pub(crate) fn transform(&self) -> &Transform {
        &self.transform
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("layout", &self.layout)
            .field("plan", &self.plan)
            .field("parallel", &self.is_parallel())
            .field("header", &self.header.len())
            .field("shared_key", &self.shared_key.is_some())
            .finish()
    }
}
