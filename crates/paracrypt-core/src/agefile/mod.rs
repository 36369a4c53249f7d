//! age v1 files (`age-encryption.org/v1`), written and read on every core.
//!
//! An age file is a text header that wraps a random 16-byte file key for each recipient,
//! a 16-byte nonce, and the payload: STREAM over ChaCha20-Poly1305 in 64 KiB chunks, each
//! sealed under its own nonce (the chunk's counter and a last-chunk flag). age and rage seal
//! and open those chunks one after the other; here each chunk is a chunk of the
//! [engine](crate::engine), so every core takes chunks, and the bytes are age's: `age -d`
//! reads what [`Encryptor`] writes and [`Decryptor`] reads what `age -e` writes, binary or
//! ASCII-armored.
//!
//! Recipients and identities are [`crate::recipient`]'s (X25519, SSH, RSA, a passphrase).
//!
//! ```
//! use age::secrecy::ExposeSecret;
//! use paracrypt_core::agefile::{Decryptor, Encryptor};
//! use paracrypt_core::recipient::{Identities, Recipients};
//!
//! let me = age::x25519::Identity::generate();
//! let mut recipients = Recipients::new();
//! recipients.add(&me.to_public().to_string(), "recipient 1")?;
//! let sealed = Encryptor::new(recipients).encrypt_vec(&[42; 200_000])?;
//! assert!(sealed.starts_with(b"age-encryption.org/v1\n"));
//!
//! let mut identities = Identities::new();
//! identities.add_file("me.key", me.to_string().expose_secret().as_bytes())?;
//! assert_eq!(Decryptor::new(identities).decrypt_vec(&sealed)?, vec![42; 200_000]);
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! Random access ([`Decryptor::decrypt_range`]) reads and opens only the chunks a byte range
//! needs, as for paracrypt's own container; it needs the binary form (armor is read in order).
//!
//! [`Encryptor`] and [`Decryptor`] are [`Recipe`]s of the binary form, so a [`Runner`] runs
//! them on every driver (and `paracrypt-mpi` over MPI ranks); armor is a stream wrapper around
//! the same recipe, added by their `*_stream`, `*_file` and `*_vec` methods.

mod header;
mod payload;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use age_core::secrecy::ExposeSecret;

use age::armor::{ArmoredReadError, ArmoredReader, ArmoredWriter, Format};
use age_core::format::FileKey;
use rand::Rng;
use zeroize::Zeroizing;

pub use header::{Header, MAGIC, MAX_HEADER_LEN, NONCE_LEN};
use payload::SEALED_CHUNK_LEN;

use crate::engine::io::{PositionalReader, PositionalWriter};
use crate::engine::{Job, Transform};
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::raw::Direction;
use crate::recipe::{Recipe, Runner};
use crate::recipient::{Identities, Recipients};

/// How an armored age file begins.
pub(crate) const ARMOR_BEGIN: &[u8] = b"-----BEGIN AGE ENCRYPTED FILE-----";

/// The two forms of an age file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgeFormat {
    /// The binary file: header, nonce, sealed chunks.
    Binary,
    /// The same bytes in ASCII armor (base64 between BEGIN and END lines).
    Armored,
}

/// The most whitespace read before an armored file's BEGIN line (age's limit too): blank
/// lines there are allowed, and a file of nothing but whitespace is not read without bound.
pub(crate) const MAX_ARMOR_LEADING_WHITESPACE: usize = 1024;

/// How many bytes from an input's start [`detect`] needs to tell its format.
pub const DETECT_LEN: usize = MAX_ARMOR_LEADING_WHITESPACE + ARMOR_BEGIN.len();

/// Which form of age file `prefix` (the first bytes of an input, [`DETECT_LEN`] of them or
/// the whole input) begins, if any.
///
/// Armor may follow blank lines (whitespace, at most 1024 bytes); a first line that starts with `-----` is taken for armor, so that a damaged BEGIN
/// line is reported as damaged armor.
///
/// ```
/// use paracrypt_core::agefile::{AgeFormat, detect};
///
/// assert_eq!(detect(b"age-encryption.org/v1\n-> X25519"), Some(AgeFormat::Binary));
/// assert_eq!(detect(b"-----BEGIN AGE ENCRYPTED FILE-----\n"), Some(AgeFormat::Armored));
/// assert_eq!(detect(b"\n \r\n-----BEGIN AGE ENCRYPTED FILE-----\n"), Some(AgeFormat::Armored));
/// assert_eq!(detect(b"PARACRYPT\x01"), None);
/// ```
pub fn detect(prefix: &[u8]) -> Option<AgeFormat> {
    if prefix.starts_with(MAGIC) {
        Some(AgeFormat::Binary)
    } else if prefix[armor_start(prefix)?..].starts_with(b"-----") {
        Some(AgeFormat::Armored)
    } else {
        None
    }
}

/// Where the first line that is not blank starts, when the blank lines before it are within
/// [`MAX_ARMOR_LEADING_WHITESPACE`].
fn armor_start(prefix: &[u8]) -> Option<usize> {
    let blank = prefix
        .iter()
        .take(MAX_ARMOR_LEADING_WHITESPACE + 1)
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    let start = prefix[..blank]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |n| n + 1);
    (start <= MAX_ARMOR_LEADING_WHITESPACE).then_some(start)
}

/// The armored file in `start` (its first bytes), from its BEGIN line: the blank lines before
/// it skipped, and the BEGIN line checked (age's armor reader would otherwise take a damaged
/// one for a binary file).
fn armor_from(start: &[u8]) -> Result<&[u8]> {
    let from = armor_start(start).unwrap_or(0);
    let rest = &start[from..];
    let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let line = rest[..line_end]
        .strip_suffix(b"\r")
        .unwrap_or(&rest[..line_end]);
    if line != ARMOR_BEGIN {
        return Err(Error::Armor(format!(
            "the first line is `{}`, not `{}`",
            String::from_utf8_lossy(&line[..line.len().min(40)]).escape_debug(),
            String::from_utf8_lossy(ARMOR_BEGIN)
        )));
    }
    Ok(rest)
}

/// Writes age files.
#[derive(Clone)]
pub struct Encryptor {
    recipients: Arc<Recipients>,
    armor: bool,
    runner: Runner,
    fixed: Option<([u8; 16], [u8; NONCE_LEN])>,
    provider: Provider,
}

impl std::fmt::Debug for Encryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryptor")
            .field("recipients", &self.recipients)
            .field("armor", &self.armor)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Encryptor {
    /// An encryptor to `recipients` (or a passphrase: [`Recipients::passphrase`]).
    pub fn new(recipients: impl Into<Arc<Recipients>>) -> Self {
        Encryptor {
            recipients: recipients.into(),
            armor: false,
            runner: Runner::new(),
            fixed: None,
            provider: Provider::default(),
        }
    }

    /// Writes ASCII armor (`-----BEGIN AGE ENCRYPTED FILE-----`) instead of binary. Armor
    /// is written in order, so [`Encryptor::encrypt_file`] streams it.
    pub fn armor(mut self, armor: bool) -> Self {
        self.armor = armor;
        self
    }

    /// Runs the convenience methods below with `runner`'s options (window, progress).
    pub fn runner(mut self, runner: Runner) -> Self {
        self.runner = runner;
        self
    }

    /// Seals the payload's chunks with `provider`'s ChaCha20-Poly1305 (the default is the
    /// fastest compiled one). The bytes are the same whichever provider runs.
    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// The provider that seals the payload.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// **Testing only.** Uses this file key and payload nonce instead of fresh random ones, so
    /// that the payload can be compared with another writer's. Reusing them leaks the data.
    #[doc(hidden)]
    pub fn fixed_key_and_nonce_for_tests(mut self, key: [u8; 16], nonce: [u8; NONCE_LEN]) -> Self {
        self.fixed = Some((key, nonce));
        self
    }

    /// Prepares the encryption of `plaintext_len` bytes (`None`: a stream): draws the file key
    /// and nonce, wraps the key for every recipient and makes the header the job writes
    /// (header, then nonce). The job writes binary age; armor is added around it by the
    /// stream drivers.
    pub fn job(&self, plaintext_len: Option<u64>) -> Result<Job> {
        let (key, nonce) = self.fixed.unwrap_or_else(|| {
            let mut key = [0u8; 16];
            let mut nonce = [0u8; NONCE_LEN];
            rand::rng().fill_bytes(&mut key);
            rand::rng().fill_bytes(&mut nonce);
            (key, nonce)
        });
        let file_key = FileKey::new(Box::new(key));
        let header = Header::seal(self.recipients.wrap(&file_key)?, &file_key);
        let job = payload_job(
            Direction::Encrypt,
            &header,
            &nonce,
            &file_key,
            self.provider,
        )?;
        // Only this process knows the fresh file key: others are given it with the header.
        let job = job.with_shared_key(file_key.expose_secret());
        job.planned_for(plaintext_len)
    }

    /// Encrypts `input` into `output` with positional I/O on every pool thread (armor: in
    /// order, sealing in parallel) and sets `output`'s length. Returns the bytes written.
    pub fn encrypt_file(&self, input: &File, output: &File) -> Result<u64> {
        if self.armor {
            return in_order(input, output, |r, w| self.encrypt_stream(r, w));
        }
        self.runner.file(self, input, output)
    }

    /// Encrypts a stream through a bounded ordered window. Returns the bytes written (of the
    /// armor, when armored).
    pub fn encrypt_stream(
        &self,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        if !self.armor {
            return self.runner.stream(self, reader, writer);
        }
        let mut counted = Counted {
            inner: writer,
            n: 0,
        };
        let armored = ArmoredWriter::wrap_output(&mut counted, Format::AsciiArmor)
            .map_err(|e| Error::io("writing the armor", e))?;
        // age 0.12's armor writer counts its buffered bytes twice when flushed before
        // `finish`, which breaks its 64-column lines: the stream's final flush must not reach
        // it.
        let mut unflushed = FlushOnFinish(armored);
        self.runner.stream(self, reader, &mut unflushed)?;
        unflushed
            .0
            .finish()
            .and_then(|w| w.flush())
            .map_err(|e| Error::io("writing the armor", e))?;
        Ok(counted.n)
    }

    /// Encrypts a buffer in memory.
    pub fn encrypt_vec(&self, plaintext: &[u8]) -> Result<Vec<u8>> {
        if self.armor {
            let mut sealed = Vec::new();
            self.encrypt_stream(&mut &plaintext[..], &mut sealed)?;
            return Ok(sealed);
        }
        self.runner.vec(self, plaintext)
    }
}

/// The binary form: armor is added around it by [`Encryptor`]'s stream methods.
impl Recipe for Encryptor {
    fn first_job(&self, _input: &mut dyn BufRead, input_len: Option<u64>) -> Result<Job> {
        self.job(input_len)
    }

    /// `key`: the file key of the job that wrote `header` (only that process drew it); the
    /// header's MAC is checked with it.
    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
    ) -> Result<Job> {
        let key = key.ok_or(Error::WrongSecretKind {
            needs: "the file key of the process that wrote the header",
        })?;
        let job = open_with_key(&mut &header[..], key, self.provider)?;
        job.planned_for(input_len)
    }
}

/// The job of the payload after `header` and `nonce`, under `file_key`.
fn payload_job(
    direction: Direction,
    header: &Header,
    nonce: &[u8; NONCE_LEN],
    file_key: &FileKey,
    provider: Provider,
) -> Result<Job> {
    let prefix = [header.as_bytes(), nonce].concat();
    let key = Zeroizing::new(header::payload_key(file_key, nonce));
    let transform = match direction {
        Direction::Encrypt => Transform::parallel(payload::seal(key, provider)?),
        Direction::Decrypt => Transform::parallel(payload::open(key, provider)?),
    };
    Ok(Job::new(payload::layout(direction, prefix.len() as u64), transform).with_header(prefix))
}

/// Reads the payload nonce after the header.
fn read_nonce(input: &mut dyn BufRead) -> Result<[u8; NONCE_LEN]> {
    let mut nonce = [0u8; NONCE_LEN];
    input.read_exact(&mut nonce).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::AgeHeader("the file ends inside the payload nonce".into())
        } else {
            Error::io("reading the payload nonce", e)
        }
    })?;
    Ok(nonce)
}

/// The encryption job of a header and nonce another process wrote, under the file key it
/// drew: the header's MAC must check with that key.
fn open_with_key(input: &mut dyn BufRead, key: &[u8], provider: Provider) -> Result<Job> {
    let key: [u8; 16] = key.try_into().map_err(|_| Error::WrongKey)?;
    let file_key = FileKey::new(Box::new(key));
    let header = Header::read(input)?;
    header.verify(&file_key)?;
    let nonce = read_nonce(input)?;
    payload_job(Direction::Encrypt, &header, &nonce, &file_key, provider)
}

/// Reads age files.
#[derive(Clone)]
pub struct Decryptor {
    identities: Arc<Identities>,
    runner: Runner,
    provider: Provider,
}

impl std::fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decryptor")
            .field("identities", &self.identities)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl Decryptor {
    /// A decryptor with `identities` (or a passphrase: [`Identities::passphrase`]).
    pub fn new(identities: impl Into<Arc<Identities>>) -> Self {
        Decryptor {
            identities: identities.into(),
            runner: Runner::new(),
            provider: Provider::default(),
        }
    }

    /// Runs the convenience methods below with `runner`'s options (window, progress).
    pub fn runner(mut self, runner: Runner) -> Self {
        self.runner = runner;
        self
    }

    /// Opens the payload's chunks with `provider`'s ChaCha20-Poly1305 (the default is the
    /// fastest compiled one); a file sealed by any age writer opens with either provider.
    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// The provider that opens the payload.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Reads the header and nonce of a binary age file from `input` (exactly those bytes),
    /// unwraps the file key (or takes `key`, the one another process unwrapped) and checks
    /// the header's MAC: a wrong identity or an altered header fails here, before any payload.
    /// Returns the job (unplanned) and the file key.
    fn open(&self, input: &mut dyn BufRead, key: Option<&[u8]>) -> Result<(Job, FileKey)> {
        let header = Header::read(input)?;
        let file_key = match key.map(<[u8; 16]>::try_from) {
            Some(Ok(key)) => FileKey::new(Box::new(key)),
            Some(Err(_)) => return Err(Error::WrongKey),
            None => self.identities.unwrap(header.stanzas())?,
        };
        header.verify(&file_key)?;
        let nonce = read_nonce(input)?;
        let job = payload_job(
            Direction::Decrypt,
            &header,
            &nonce,
            &file_key,
            self.provider,
        )?;
        Ok((job, file_key))
    }

    /// Prepares the decryption of a binary age file of `input_len` bytes (`None`: a stream)
    /// whose first bytes are `start` (at least its header and nonce; more is ignored).
    pub fn job(&self, start: &[u8], input_len: Option<u64>) -> Result<Job> {
        self.first_job(&mut &start[..], input_len)
    }

    /// Decrypts `input` into `output` and sets `output`'s length: binary files with
    /// positional I/O on every pool thread, armored ones in order (opening chunks in
    /// parallel). Every chunk is verified; a failure names the chunk. Returns the bytes
    /// written.
    pub fn decrypt_file(&self, input: &File, output: &File) -> Result<u64> {
        let mut start = [0u8; DETECT_LEN];
        let n = read_prefix(input, &mut start)?;
        if detect(&start[..n]) == Some(AgeFormat::Armored) {
            return in_order(input, output, |r, w| self.decrypt_stream(r, w));
        }
        self.runner.file(self, input, output)
    }

    /// Decrypts a stream, binary or armored, through a bounded ordered window. Only verified
    /// chunks are written, in order; on failure the chunks before the failing one have been
    /// written.
    pub fn decrypt_stream(
        &self,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let mut counted = self.runner.count(reader);
        let mut start = Vec::with_capacity(DETECT_LEN);
        (&mut counted)
            .take(DETECT_LEN as u64)
            .read_to_end(&mut start)
            .map_err(|e| Error::io("reading the age header", e))?;
        if detect(&start) != Some(AgeFormat::Armored) {
            let mut input =
                BufReader::with_capacity(SEALED_CHUNK_LEN, (&start[..]).chain(&mut counted));
            return self.runner.stream_buffered(self, &mut input, writer);
        }
        let start = armor_from(&start)?;
        let input = BufReader::with_capacity(SEALED_CHUNK_LEN, start.chain(&mut counted));
        let mut armored = ArmoredReader::new(input);
        self.runner
            .stream_buffered(self, &mut armored, writer)
            .map_err(armor_error)
    }

    /// Decrypts a buffer in memory, binary or armored.
    pub fn decrypt_vec(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        if detect(sealed) == Some(AgeFormat::Armored) {
            let mut plain = Vec::new();
            self.decrypt_stream(&mut &sealed[..], &mut plain)?;
            return Ok(plain);
        }
        self.runner.vec(self, sealed)
    }

    /// Decrypts and verifies only the chunks that cover plaintext bytes
    /// `offset..offset + len` of a binary age file and writes those bytes (fewer when the
    /// plaintext ends first); see [`Runner::range`]. Returns the bytes written.
    pub fn decrypt_range(
        &self,
        input: &File,
        offset: u64,
        len: u64,
        writer: &mut dyn Write,
    ) -> Result<u64> {
        self.runner.range(self, input, offset, len, writer)
    }
}

/// The binary form: armor is taken off around it by [`Decryptor`]'s stream methods.
impl Recipe for Decryptor {
    /// Reads the header and nonce. A passphrase's file key (scrypt: about a second and 64 MiB
    /// or more to unwrap) is the job's shared key, for other processes to take instead.
    fn first_job(&self, input: &mut dyn BufRead, input_len: Option<u64>) -> Result<Job> {
        let (job, file_key) = self.open(input, None)?;
        let job = if self.identities.is_passphrase() {
            job.with_shared_key(file_key.expose_secret())
        } else {
            job
        };
        job.planned_for(input_len)
    }

    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
    ) -> Result<Job> {
        let (job, _) = self.open(&mut &header[..], key)?;
        job.planned_for(input_len)
    }
}

/// Reads the header of a binary age file from `input` (exactly those bytes: the payload nonce
/// and the payload follow), unwraps the file key with `old` and checks the header's MAC, then
/// returns a new header that wraps the same file key for `new` only, MACed as the age
/// specification says (HMAC under `HKDF(file key, "header")`). The nonce and the payload stay
/// valid as they are: their key derives from the file key and the nonce alone.
pub(crate) fn rekey_header(
    input: &mut dyn BufRead,
    old: &Identities,
    new: &Recipients,
) -> Result<Vec<u8>> {
    let header = Header::read(input)?;
    let file_key = old.unwrap(header.stanzas())?;
    header.verify(&file_key)?;
    Ok(Header::seal(new.wrap(&file_key)?, &file_key)
        .as_bytes()
        .to_vec())
}

/// Runs `stream` from the start of `input` into `output`, emptied first, in order (armor is
/// read and written front to back); positional I/O leaves both files' cursors alone.
fn in_order(
    input: &File,
    output: &File,
    stream: impl FnOnce(&mut (dyn Read + Send), &mut (dyn Write + Send)) -> Result<u64>,
) -> Result<u64> {
    output
        .set_len(0)
        .map_err(|e| Error::io("truncating the output", e))?;
    let mut reader = PositionalReader { file: input, at: 0 };
    let mut writer = PositionalWriter {
        file: output,
        at: 0,
    };
    stream(&mut reader, &mut writer)
}

/// An I/O error that carries damaged armor, as [`Error::Armor`]; anything else unchanged.
fn armor_error(error: Error) -> Error {
    match error {
        Error::Io { source, .. }
            if source
                .get_ref()
                .is_some_and(|inner| inner.is::<ArmoredReadError>()) =>
        {
            let inner = source
                .get_ref()
                .and_then(|e| e.downcast_ref::<ArmoredReadError>());
            Error::Armor(match inner {
                Some(ArmoredReadError::Base64(_)) => "invalid base64 in the armor".into(),
                _ => source.to_string(),
            })
        }
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            Error::Armor("the armor ends early (no END line)".into())
        }
        // The armor reader reads lines of text: a byte that is not UTF-8 fails there.
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::InvalidData => {
            Error::Armor(format!("not ASCII text ({source})"))
        }
        other => other,
    }
}

/// Reads up to `buf.len()` bytes from the start of `file`; the count.
fn read_prefix(file: &File, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading the input", e)),
        }
    }
    Ok(n)
}

/// A writer whose `flush` does nothing: the armor writer is flushed by its `finish`.
struct FlushOnFinish<W>(W);

impl<W: Write> Write for FlushOnFinish<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A writer that counts the bytes through it.
struct Counted<'a> {
    inner: &'a mut (dyn Write + Send),
    n: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
