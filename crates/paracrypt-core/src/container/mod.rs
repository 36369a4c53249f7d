//! The authenticated chunked container: paracrypt's own file format (`docs/FORMAT.md`).
//!
//! A file is a 116-byte header followed by chunks. Each chunk is sealed on its own with a key
//! derived (HKDF-SHA256) from the user's key or password and the header's random salt, and a
//! nonce made of the chunk's index and a last-chunk flag (the STREAM construction). So every
//! chunk can be sealed and opened on any core, in any order, and yet a truncated, extended,
//! reordered or spliced file fails to decrypt. The empty file is one empty final chunk.
//!
//! ```
//! use paracrypt_core::container::{Decryptor, Encryptor, Key, Suite};
//!
//! let key = Key::generate();
//! let sealed = Encryptor::new(key.clone())
//!     .suite(Suite::Aes256Gcm)
//!     .chunk_size(64 * 1024)
//!     .encrypt_vec(b"hello, many cores")?;
//! let opened = Decryptor::new(key).decrypt_vec(&sealed)?;
//! assert_eq!(opened, b"hello, many cores");
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! The same works file to file ([`Encryptor::encrypt_file`], parallel positional I/O), stream to
//! stream ([`Encryptor::encrypt_stream`], a bounded ordered window) and through a
//! [`StreamWriter`] that implements `Write`. Everything runs in the caller's Rayon pool.

mod chunk;
mod header;
mod secret;
mod stream_writer;
mod suite;

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

pub use chunk::RC4_DROP;
use header::Keys;
pub use header::{
    HEADER_LEN, HeaderInfo, Kdf, MAGIC, MIN_CHUNK_SIZE, SALT_LEN, VERSION, check_chunk_size,
};
pub use secret::{Argon2Params, Key, Secret};
pub use stream_writer::StreamWriter;
pub use suite::Suite;

use crate::engine::{self, ChunkTransform, SliceSink, SliceSource, Source, Work};
use crate::error::{Error, Result};
use crate::plan::{ChunkLayout, ChunkPlan, DEFAULT_CHUNK_SIZE, Tail};

/// A progress callback: called with the number of input bytes just taken in.
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// One file's prepared work: the header and, for the chunks, a plan and a transform. The local
/// engine and the MPI ranks both run a `Job`.
pub struct Job {
    /// The header bytes (written at the start when encrypting; read from it when decrypting).
    pub header: [u8; HEADER_LEN],
    /// The header's fields.
    pub info: HeaderInfo,
    /// Where every chunk goes.
    pub plan: ChunkPlan,
    transform: Box<dyn ChunkTransform + Send>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("info", &self.info)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl Job {
    /// The per-chunk transform, as engine work.
    pub fn work(&self) -> Work<'_> {
        Work::Parallel(&*self.transform)
    }

    /// The per-chunk transform.
    pub fn transform(&self) -> &dyn ChunkTransform {
        &*self.transform
    }
}

/// Where chunks go when sealing: plaintext chunks of `chunk_size`, sealed chunks after the
/// header.
pub fn seal_layout(suite: Suite, chunk_size: usize) -> Result<ChunkLayout> {
    check_chunk_size(chunk_size)?;
    let sealed = suite.sealed_chunk_len(chunk_size);
    let tail = match suite.cbc_block() {
        Some(block) => Tail::Pad {
            block,
            overhead: suite.tag_len(),
        },
        None => Tail::Fixed,
    };
    ChunkLayout::framed(0, chunk_size, HEADER_LEN as u64, sealed, tail)
}

/// Where chunks go when opening: the reverse of [`seal_layout`].
pub fn open_layout(suite: Suite, chunk_size: usize) -> Result<ChunkLayout> {
    check_chunk_size(chunk_size)?;
    let sealed = suite.sealed_chunk_len(chunk_size);
    let tail = match suite.cbc_block() {
        Some(_) => Tail::Unpad {
            overhead: suite.tag_len(),
        },
        None => Tail::Fixed,
    };
    ChunkLayout::framed(HEADER_LEN as u64, sealed, 0, chunk_size, tail)
}

/// Encrypts into the container format.
#[derive(Clone)]
pub struct Encryptor {
    secret: Secret,
    suite: Suite,
    chunk_size: usize,
    window: usize,
    salt: Option<[u8; SALT_LEN]>,
    progress: Option<Progress>,
}

impl std::fmt::Debug for Encryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryptor")
            .field("suite", &self.suite)
            .field("chunk_size", &self.chunk_size)
            .finish_non_exhaustive()
    }
}

impl Encryptor {
    /// An encryptor for `secret` with the default suite (AES-256-GCM) and chunk size (1 MiB).
    pub fn new(secret: impl Into<Secret>) -> Self {
        Encryptor {
            secret: secret.into(),
            suite: Suite::default(),
            chunk_size: DEFAULT_CHUNK_SIZE,
            window: 0,
            salt: None,
            progress: None,
        }
    }

    /// Chooses the cipher suite.
    pub fn suite(mut self, suite: Suite) -> Self {
        self.suite = suite;
        self
    }

    /// Chooses the plaintext chunk size (a multiple of 16 bytes, 16 B to 1 GiB).
    pub fn chunk_size(mut self, chunk_size: usize) -> Self {
        self.chunk_size = chunk_size;
        self
    }

    /// Chunks per wave when streaming (0, the default: one per pool thread). At most twice this
    /// many chunks are in memory.
    pub fn window(mut self, window: usize) -> Self {
        self.window = window;
        self
    }

    /// Calls `progress` with the input bytes taken in, as the work goes.
    pub fn progress(mut self, progress: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// **Testing only.** Uses `salt` instead of a fresh random one, so that the output is
    /// reproducible. Reusing a salt with the same key reuses every chunk nonce: never do this
    /// outside tests.
    #[doc(hidden)]
    pub fn fixed_salt_for_tests(mut self, salt: [u8; SALT_LEN]) -> Self {
        self.salt = Some(salt);
        self
    }

    fn keys(&self) -> Result<Keys> {
        Keys::seal(&self.secret, self.suite, self.chunk_size, self.salt)
    }

    /// Prepares the encryption of `plaintext_len` bytes: derives the file's keys (a fresh salt
    /// each call) and plans the chunks.
    pub fn job(&self, plaintext_len: u64) -> Result<Job> {
        let keys = self.keys()?;
        let plan = ChunkPlan::new(seal_layout(self.suite, self.chunk_size)?, plaintext_len)?;
        Ok(job(keys, plan, true))
    }

    /// Prepares the encryption of `plaintext_len` bytes under a `header` that another
    /// [`Encryptor::job`] with the same secret made (for example on MPI rank 0): the salt, suite
    /// and chunk size are the header's, so every process seals every chunk identically. The
    /// header is checked like a decryptor checks it (a different secret fails with
    /// [`Error::WrongKey`]); no new salt is drawn.
    ///
    /// ```
    /// use paracrypt_core::container::{Encryptor, Key};
    ///
    /// let encryptor = Encryptor::new(Key::generate()).chunk_size(4096);
    /// let first = encryptor.job(10_000)?;
    /// let again = encryptor.job_for_header(&first.header, 10_000)?;
    /// assert_eq!(again.header, first.header);
    /// assert_eq!(again.plan, first.plan);
    /// # Ok::<(), paracrypt_core::Error>(())
    /// ```
    pub fn job_for_header(&self, header: &[u8], plaintext_len: u64) -> Result<Job> {
        let keys = Keys::open(&self.secret, header)?;
        let plan = ChunkPlan::new(
            seal_layout(keys.info.suite, keys.info.chunk_size)?,
            plaintext_len,
        )?;
        Ok(job(keys, plan, true))
    }

    /// Encrypts `input` into `output` with positional I/O on every pool thread and sets
    /// `output`'s length. Returns the bytes written.
    pub fn encrypt_file(&self, input: &File, output: &File) -> Result<u64> {
        let len = file_len(input)?;
        let job = self.job(len)?;
        output
            .write_all_at(&job.header, 0)
            .map_err(|e| Error::io("writing the header", e))?;
        run_to_file(&job, input, output, self.progress.as_ref())
    }

    /// Encrypts a stream through a bounded ordered window. Returns the bytes written.
    pub fn encrypt_stream(
        &self,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let keys = self.keys()?;
        writer
            .write_all(&keys.header)
            .map_err(|e| Error::io("writing the header", e))?;
        let layout = seal_layout(self.suite, self.chunk_size)?;
        let seal = chunk::Seal(cipher_for(&keys));
        let mut reader = Counting::new(reader, self.progress.as_ref());
        let body = engine::stream::process_stream(
            &layout,
            Work::Parallel(&seal),
            &mut reader,
            writer,
            self.window,
        )?;
        Ok(HEADER_LEN as u64 + body)
    }

    /// Encrypts a buffer in memory.
    pub fn encrypt_vec(&self, plaintext: &[u8]) -> Result<Vec<u8>> {
        let job = self.job(plaintext.len() as u64)?;
        let mut out = vec![0u8; job.plan.output_len() as usize];
        out[..HEADER_LEN].copy_from_slice(&job.header);
        let end = {
            let sink = SliceSink::new(&job.plan, 0..job.plan.len(), &mut out[HEADER_LEN..]);
            engine::run(
                &job.plan,
                job.work(),
                0..job.plan.len(),
                &SliceSource(plaintext),
                &sink,
            )?
        };
        out.truncate(end.expect("the last chunk was run") as usize);
        Ok(out)
    }

    /// A `Write` adapter that encrypts everything written to it into `inner`. The header is
    /// written now; [`StreamWriter::finish`] must be called to seal the last chunk.
    pub fn writer<W: Write + Send>(&self, mut inner: W) -> Result<StreamWriter<W>> {
        let keys = self.keys()?;
        inner
            .write_all(&keys.header)
            .map_err(|e| Error::io("writing the header", e))?;
        let layout = seal_layout(self.suite, self.chunk_size)?;
        Ok(StreamWriter::new(
            inner,
            chunk::Seal(cipher_for(&keys)),
            layout,
            self.window,
        ))
    }
}

/// Decrypts the container format.
#[derive(Clone)]
pub struct Decryptor {
    secret: Secret,
    window: usize,
    progress: Option<Progress>,
}

impl std::fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decryptor").finish_non_exhaustive()
    }
}

impl Decryptor {
    /// A decryptor for `secret` (the header says everything else).
    pub fn new(secret: impl Into<Secret>) -> Self {
        Decryptor {
            secret: secret.into(),
            window: 0,
            progress: None,
        }
    }

    /// Chunks per wave when streaming (0, the default: one per pool thread).
    pub fn window(mut self, window: usize) -> Self {
        self.window = window;
        self
    }

    /// Calls `progress` with the input bytes taken in, as the work goes.
    pub fn progress(mut self, progress: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Checks `header` (a wrong key or password fails here) and plans the chunks of an input of
    /// `input_len` bytes, header included.
    pub fn job(&self, header: &[u8], input_len: u64) -> Result<Job> {
        let keys = Keys::open(&self.secret, header)?;
        if input_len == HEADER_LEN as u64 {
            return Err(Error::TruncatedAfterHeader);
        }
        let plan = ChunkPlan::new(
            open_layout(keys.info.suite, keys.info.chunk_size)?,
            input_len,
        )?;
        Ok(job(keys, plan, false))
    }

    fn file_job(&self, input: &File) -> Result<Job> {
        let len = file_len(input)?;
        let mut header = vec![0u8; (len as usize).min(HEADER_LEN)];
        input
            .read_exact_at(&mut header, 0)
            .map_err(|e| Error::io("reading the header", e))?;
        self.job(&header, len)
    }

    /// Decrypts `input` into `output` on every pool thread and sets `output`'s length. Every
    /// chunk is verified; on any failure the error names the chunk. Returns the bytes written.
    pub fn decrypt_file(&self, input: &File, output: &File) -> Result<u64> {
        let job = self.file_job(input)?;
        run_to_file(&job, input, output, self.progress.as_ref())
    }

    /// Decrypts a stream through a bounded ordered window. Only verified chunks are written, in
    /// order; on failure the chunks before the failing one have been written.
    pub fn decrypt_stream(
        &self,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let mut header = Vec::with_capacity(HEADER_LEN);
        (&mut *reader)
            .take(HEADER_LEN as u64)
            .read_to_end(&mut header)
            .map_err(|e| Error::io("reading the header", e))?;
        let keys = Keys::open(&self.secret, &header)?;
        let layout = open_layout(keys.info.suite, keys.info.chunk_size)?;
        let open = open_for(&keys);
        let mut reader = Counting::new(reader, self.progress.as_ref());
        let mut first = [0u8; 1];
        let n = read_some(&mut reader, &mut first)?;
        if n == 0 {
            return Err(Error::TruncatedAfterHeader);
        }
        let mut reader = std::io::Cursor::new(first).chain(reader);
        engine::stream::process_stream(
            &layout,
            Work::Parallel(&open),
            &mut reader,
            writer,
            self.window,
        )
    }

    /// Decrypts a buffer in memory.
    pub fn decrypt_vec(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        let header = &sealed[..sealed.len().min(HEADER_LEN)];
        let job = self.job(header, sealed.len() as u64)?;
        let mut out = vec![0u8; job.plan.output_len() as usize];
        let end = {
            let sink = SliceSink::new(&job.plan, 0..job.plan.len(), &mut out);
            engine::run(
                &job.plan,
                job.work(),
                0..job.plan.len(),
                &SliceSource(sealed),
                &sink,
            )?
        };
        out.truncate(end.expect("the last chunk was run") as usize);
        Ok(out)
    }

    /// Decrypts and verifies only the chunks that cover plaintext bytes
    /// `offset..offset + len` and writes those bytes (fewer when the plaintext ends first).
    /// A range that reaches the end of the plaintext also verifies the last chunk, so a
    /// truncated file fails here as it does everywhere else. Returns the bytes written.
    pub fn decrypt_range(
        &self,
        input: &File,
        offset: u64,
        len: u64,
        writer: &mut dyn Write,
    ) -> Result<u64> {
        let job = self.file_job(input)?;
        let plan = &job.plan;
        let upper = plan.output_len();
        if offset > upper {
            return Err(Error::RangeOutOfBounds { offset, len: upper });
        }
        if len == 0 {
            return Ok(0);
        }
        let wanted_end = offset.saturating_add(len);
        let end = wanted_end.min(upper);
        let mut chunks = plan.chunks_covering_output(offset..end);
        if wanted_end >= upper {
            // The last chunk's flag is what shows the file ends there, and it may cover no
            // plaintext at all (the empty file's chunk, or one cut inside its tag).
            chunks.end = plan.len();
        }
        // Bounded memory: at most two chunks per pool thread are decrypted at a time.
        let batch = 2 * rayon::current_num_threads() as u64;
        let mut written = 0;
        let mut first = chunks.start;
        while first < chunks.end {
            let last = (first + batch).min(chunks.end);
            let base = plan.chunk(first).output.start;
            let batch_end = plan.chunk(last - 1).output.end;
            let mut buf = vec![0u8; (batch_end - base) as usize];
            let real_end = {
                let sink = SliceSink::new(plan, first..last, &mut buf);
                engine::run(plan, job.work(), first..last, input, &sink)?
            };
            // The last chunk's exact length is known once it is open (CBC padding).
            let stop = real_end.map_or(end, |real| end.min(real)).min(batch_end);
            if let Some(real) = real_end.filter(|&real| offset > real) {
                return Err(Error::RangeOutOfBounds { offset, len: real });
            }
            let from = offset.max(base);
            if stop > from {
                let part = &buf[(from - base) as usize..(stop - base) as usize];
                writer
                    .write_all(part)
                    .map_err(|e| Error::io("writing output", e))?;
                written += part.len() as u64;
            }
            first = last;
        }
        Ok(written)
    }
}

/// Reads a container's header without a key (for `paracrypt info`).
pub fn read_header(reader: &mut dyn Read) -> Result<HeaderInfo> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    reader
        .take(HEADER_LEN as u64)
        .read_to_end(&mut header)
        .map_err(|e| Error::io("reading the header", e))?;
    HeaderInfo::parse(&header)
}

fn cipher_for(keys: &Keys) -> Box<dyn chunk::ChunkCipher> {
    chunk::chunk_cipher(
        keys.info.suite,
        &keys.payload,
        keys.header_mac(),
        keys.info.chunk_size,
    )
}

fn open_for(keys: &Keys) -> chunk::Open {
    chunk::Open {
        cipher: cipher_for(keys),
        chunk_size: keys.info.chunk_size,
        tag_len: keys.info.suite.tag_len(),
    }
}

fn job(keys: Keys, plan: ChunkPlan, seal: bool) -> Job {
    let transform: Box<dyn ChunkTransform + Send> = if seal {
        Box::new(chunk::Seal(cipher_for(&keys)))
    } else {
        Box::new(open_for(&keys))
    };
    Job {
        header: keys.header,
        info: keys.info,
        plan,
        transform,
    }
}

fn file_len(file: &File) -> Result<u64> {
    Ok(file
        .metadata()
        .map_err(|e| Error::io("reading input metadata", e))?
        .len())
}

/// Runs every chunk of `job` from `input` to `output` and cuts `output` to the real length.
fn run_to_file(job: &Job, input: &File, output: &File, progress: Option<&Progress>) -> Result<u64> {
    let source = ProgressSource {
        inner: input,
        progress,
    };
    let end = engine::run(&job.plan, job.work(), 0..job.plan.len(), &source, output)?
        .expect("the whole plan includes its last chunk");
    output
        .set_len(end)
        .map_err(|e| Error::io("setting the output length", e))?;
    Ok(end)
}

/// A source that reports the bytes read.
struct ProgressSource<'a> {
    inner: &'a dyn Source,
    progress: Option<&'a Progress>,
}

impl Source for ProgressSource<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_chunk(index, offset, buf)?;
        if let Some(progress) = self.progress {
            progress(buf.len() as u64);
        }
        Ok(())
    }
}

/// A reader that reports the bytes read.
struct Counting<'a, 'r> {
    inner: &'r mut (dyn Read + Send),
    progress: Option<&'a Progress>,
}

impl<'a, 'r> Counting<'a, 'r> {
    fn new(inner: &'r mut (dyn Read + Send), progress: Option<&'a Progress>) -> Self {
        Counting { inner, progress }
    }
}

impl Read for Counting<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(progress) = self.progress {
            progress(n as u64);
        }
        Ok(n)
    }
}

fn read_some(reader: &mut dyn Read, buf: &mut [u8]) -> Result<usize> {
    loop {
        match reader.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading chunk 0", e)),
        }
    }
}
