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
//! use paracrypt_core::plan::ChunkSize;
//!
//! let key = Key::generate();
//! let sealed = Encryptor::new(key.clone())
//!     .suite(Suite::Aes256Gcm)
//!     .chunk_size(ChunkSize::new(64 * 1024)?)
//!     .encrypt_vec(b"hello, many cores")?;
//! let opened = Decryptor::new(key).decrypt_vec(&sealed)?;
//! assert_eq!(opened, b"hello, many cores");
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! The same works file to file ([`Encryptor::encrypt_file`], parallel positional I/O), stream to
//! stream ([`Encryptor::encrypt_stream`], a bounded ordered window) and through a
//! [`StreamWriter`] that implements `Write`. Everything runs in the caller's Rayon pool. Each
//! of them makes a [`Job`] ([`Encryptor::job`], [`Decryptor::job`]) and runs it with one of the
//! drivers of the [`engine`].

mod chunk;
mod header;
mod secret;
mod stream_writer;
mod suite;

use std::fs::File;
use std::io::{Read, Write};
use std::sync::Arc;

pub use chunk::RC4_DROP;
use header::Keys;
pub use header::{
    HEADER_LEN, HeaderInfo, Kdf, MAGIC, MAX_RECIPIENT_BLOCK, SALT_LEN, VERSION, VERSION_RECIPIENTS,
    header_len,
};
pub use secret::{Argon2Params, Key, Secret};
pub use stream_writer::StreamWriter;
pub use suite::Suite;

use crate::engine::io::{Counting, PositionalReader, ProgressSource};
use crate::engine::{self, Job, Transform};
use crate::error::{Error, Result};
use crate::plan::{ChunkLayout, ChunkSize, Tail};
use crate::provider::Provider;
use crate::raw::Direction;

pub use crate::engine::io::Progress;

/// Where chunks go when sealing (`Encrypt`: plaintext chunks of `chunk_size`, sealed chunks
/// after the header) or opening (`Decrypt`: the reverse).
fn layout(suite: Suite, chunk_size: ChunkSize, direction: Direction, header: u64) -> ChunkLayout {
    let plain = chunk_size.get();
    let sealed = suite.sealed_chunk_len(plain);
    let layout = match (direction, suite.cbc_block()) {
        (Direction::Encrypt, Some(block)) => {
            let tail = Tail::Pad {
                block,
                overhead: suite.tag_len(),
            };
            ChunkLayout::framed(0, plain, header, sealed, tail)
        }
        (Direction::Encrypt, None) => ChunkLayout::framed(0, plain, header, sealed, Tail::Fixed),
        (Direction::Decrypt, Some(_)) => {
            let tail = Tail::Unpad {
                overhead: suite.tag_len(),
            };
            ChunkLayout::framed(header, sealed, 0, plain, tail)
        }
        (Direction::Decrypt, None) => ChunkLayout::framed(header, sealed, 0, plain, Tail::Fixed),
    };
    layout.expect("a ChunkSize and a suite's framing make a valid layout")
}

/// Encrypts into the container format.
#[derive(Clone)]
pub struct Encryptor {
    secret: Secret,
    suite: Suite,
    chunk_size: ChunkSize,
    window: usize,
    salt: Option<[u8; SALT_LEN]>,
    file_key: Option<[u8; 16]>,
    progress: Option<Progress>,
    provider: Provider,
}

impl std::fmt::Debug for Encryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryptor")
            .field("suite", &self.suite)
            .field("chunk_size", &self.chunk_size)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Encryptor {
    /// An encryptor for `secret` with the default suite (AES-256-GCM) and chunk size (1 MiB).
    pub fn new(secret: impl Into<Secret>) -> Self {
        Encryptor {
            secret: secret.into(),
            suite: Suite::default(),
            chunk_size: ChunkSize::DEFAULT,
            window: 0,
            salt: None,
            file_key: None,
            progress: None,
            provider: Provider::default(),
        }
    }

    /// Chooses the cipher suite.
    pub fn suite(mut self, suite: Suite) -> Self {
        self.suite = suite;
        self
    }

    /// Chooses the plaintext chunk size.
    pub fn chunk_size(mut self, chunk_size: ChunkSize) -> Self {
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

    /// Seals the chunks with `provider` (the default is the fastest compiled one). The file's
    /// bytes are the same whichever provider runs; the header's key schedule is not on the
    /// hot path and always runs on RustCrypto.
    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// The provider that seals the chunks.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// **Testing only.** Uses `salt` instead of a fresh random one, so that the output is
    /// reproducible. Reusing a salt with the same key reuses every chunk nonce: never do this
    /// outside tests.
    #[doc(hidden)]
    pub fn fixed_salt_for_tests(mut self, salt: [u8; SALT_LEN]) -> Self {
        self.salt = Some(salt);
        self
    }

    /// **Testing only.** Encrypting to recipients, uses `file_key` instead of a fresh random
    /// one (with [`Encryptor::fixed_salt_for_tests`] and recipients that wrap deterministically,
    /// the output is reproducible). Reusing a file key leaks the data: never outside tests.
    #[doc(hidden)]
    pub fn fixed_file_key_for_tests(mut self, file_key: [u8; 16]) -> Self {
        self.file_key = Some(file_key);
        self
    }

    fn keys(&self) -> Result<Keys> {
        Keys::seal(
            &self.secret,
            self.suite,
            self.chunk_size,
            self.salt,
            self.file_key,
        )
    }

    /// Prepares the encryption of `plaintext_len` bytes (`None`: a stream of unknown length):
    /// derives the file's keys (a fresh salt each call) and makes the header the job writes.
    pub fn job(&self, plaintext_len: Option<u64>) -> Result<Job> {
        job(
            self.keys()?,
            Direction::Encrypt,
            plaintext_len,
            self.provider,
        )
    }

    /// Prepares the encryption of `plaintext_len` bytes under a `header` that another
    /// [`Encryptor::job`] with the same secret made (for example on MPI rank 0): the salt, suite
    /// and chunk size are the header's, so every process seals every chunk identically. The
    /// header is checked like a decryptor checks it (a different secret fails with
    /// [`Error::WrongKey`]); no new salt is drawn.
    ///
    /// ```
    /// use paracrypt_core::container::{Encryptor, Key};
    /// use paracrypt_core::plan::ChunkSize;
    ///
    /// let encryptor = Encryptor::new(Key::generate()).chunk_size(ChunkSize::new(4096)?);
    /// let first = encryptor.job(Some(10_000))?;
    /// let again = encryptor.job_for_header(first.header(), Some(10_000))?;
    /// assert_eq!(again.header(), first.header());
    /// assert_eq!(again.plan(), first.plan());
    /// # Ok::<(), paracrypt_core::Error>(())
    /// ```
    pub fn job_for_header(&self, header: &[u8], plaintext_len: Option<u64>) -> Result<Job> {
        job(
            Keys::open(&self.secret, header)?,
            Direction::Encrypt,
            plaintext_len,
            self.provider,
        )
    }

    /// Encrypts `input` into `output` with positional I/O on every pool thread and sets
    /// `output`'s length. Returns the bytes written.
    pub fn encrypt_file(&self, input: &File, output: &File) -> Result<u64> {
        let job = self.job(Some(file_len(input)?))?;
        engine::run_file(&job, &ProgressSource::new(input, &self.progress), output)
    }

    /// Encrypts a stream through a bounded ordered window. Returns the bytes written.
    pub fn encrypt_stream(
        &self,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let job = self.job(None)?;
        let mut reader = Counting::new(reader, self.progress.as_ref());
        engine::stream::process_stream(&job, &mut reader, writer, self.window)
    }

    /// Encrypts a buffer in memory.
    pub fn encrypt_vec(&self, plaintext: &[u8]) -> Result<Vec<u8>> {
        let job = self.job(Some(plaintext.len() as u64))?;
        let mut sealed = Vec::new();
        engine::run_in_memory(&job, plaintext, &mut sealed)?;
        Ok(sealed)
    }

    /// A `Write` adapter that encrypts everything written to it into `inner`. The header is
    /// written now; [`StreamWriter::finish`] must be called to seal the last chunk.
    pub fn writer<W: Write + Send>(&self, mut inner: W) -> Result<StreamWriter<W>> {
        let job = self.job(None)?;
        inner
            .write_all(job.output_header())
            .map_err(|e| Error::io("writing the header", e))?;
        Ok(StreamWriter::new(inner, job, self.window))
    }
}

/// Decrypts the container format.
#[derive(Clone)]
pub struct Decryptor {
    secret: Secret,
    window: usize,
    progress: Option<Progress>,
    provider: Provider,
}

impl std::fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decryptor")
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Decryptor {
    /// A decryptor for `secret` (the header says everything else).
    pub fn new(secret: impl Into<Secret>) -> Self {
        Decryptor {
            secret: secret.into(),
            window: 0,
            progress: None,
            provider: Provider::default(),
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

    /// Opens the chunks with `provider` (the default is the fastest compiled one); a file
    /// sealed by either provider opens with either.
    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// The provider that opens the chunks.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Checks `header` (a wrong key or password fails here) and prepares the decryption of an
    /// input of `input_len` bytes, header included (`None`: a stream, read after the header).
    pub fn job(&self, header: &[u8], input_len: Option<u64>) -> Result<Job> {
        let keys = Keys::open(&self.secret, header)?;
        if input_len == Some(keys.header.len() as u64) {
            return Err(Error::TruncatedAfterHeader);
        }
        job(keys, Direction::Decrypt, input_len, self.provider)
    }

    /// [`Decryptor::job`] for a file: reads its header (with positional reads) and its length.
    pub fn file_job(&self, input: &File) -> Result<Job> {
        let header = read_header_bytes(PositionalReader { file: input, at: 0 })?;
        self.job(&header, Some(file_len(input)?))
    }

    /// Decrypts `input` into `output` on every pool thread and sets `output`'s length. Every
    /// chunk is verified; on any failure the error names the chunk. Returns the bytes written.
    pub fn decrypt_file(&self, input: &File, output: &File) -> Result<u64> {
        let job = self.file_job(input)?;
        engine::run_file(&job, &ProgressSource::new(input, &self.progress), output)
    }

    /// Decrypts a stream through a bounded ordered window. Only verified chunks are written, in
    /// order; on failure the chunks before the failing one have been written.
    pub fn decrypt_stream(
        &self,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let header = read_header_bytes(&mut *reader)?;
        let job = self.job(&header, None)?;
        let mut reader = Counting::new(reader, self.progress.as_ref());
        let mut first = [0u8; 1];
        let n = read_some(&mut reader, &mut first)?;
        if n == 0 {
            return Err(Error::TruncatedAfterHeader);
        }
        let mut reader = std::io::Cursor::new(first).chain(reader);
        engine::stream::process_stream(&job, &mut reader, writer, self.window)
    }

    /// Decrypts a buffer in memory.
    pub fn decrypt_vec(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        let job = self.job(sealed, Some(sealed.len() as u64))?;
        let mut plain = Vec::new();
        engine::run_in_memory(&job, sealed, &mut plain)?;
        Ok(plain)
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
        engine::run_range(
            &job,
            &ProgressSource::new(input, &self.progress),
            offset,
            len,
            writer,
        )
    }
}

/// Reads a container's header without a key (for `paracrypt info`).
pub fn read_header(reader: &mut dyn Read) -> Result<HeaderInfo> {
    HeaderInfo::parse(&read_header_bytes(reader)?)
}

/// The header's bytes from the start of `input`: [`HEADER_LEN`] of them, and in version 2 the
/// recipient block too, or all there are when the input is shorter (parsing then says what is
/// wrong).
fn read_header_bytes(mut input: impl Read) -> Result<Vec<u8>> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    let mut read_up_to = |header: &mut Vec<u8>, len: usize| {
        (&mut input)
            .take((len - header.len()) as u64)
            .read_to_end(header)
            .map_err(|e| Error::io("reading the header", e))
    };
    read_up_to(&mut header, HEADER_LEN)?;
    if let Ok(Some(len)) = header_len(&header)
        && len > header.len()
    {
        read_up_to(&mut header, len)?;
    }
    Ok(header)
}

/// The job of one file: a transform that seals or opens chunks under `keys` on `provider`, the
/// plan when the length is known, and the header.
fn job(
    keys: Keys,
    direction: Direction,
    input_len: Option<u64>,
    provider: Provider,
) -> Result<Job> {
    let suite = keys.info.suite;
    let cipher = chunk::chunk_cipher(suite, &keys.payload, keys.header_mac(), provider)?;
    let transform: Transform = match direction {
        Direction::Encrypt => Transform::Parallel(Box::new(chunk::Seal(cipher))),
        Direction::Decrypt => Transform::Parallel(Box::new(chunk::Open {
            cipher,
            tag_len: suite.tag_len(),
        })),
    };
    let header_len = keys.header.len() as u64;
    let job = Job::new(
        layout(suite, keys.info.chunk_size, direction, header_len),
        transform,
    )
    .with_header(keys.header);
    match input_len {
        Some(len) => job.with_input_len(len),
        None => Ok(job),
    }
}

fn file_len(file: &File) -> Result<u64> {
    Ok(file
        .metadata()
        .map_err(|e| Error::io("reading input metadata", e))?
        .len())
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
