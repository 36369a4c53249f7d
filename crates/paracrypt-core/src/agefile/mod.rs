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
//! use paracrypt_core::Runner;
//!
//! let me = age::x25519::Identity::generate();
//! let mut recipients = Recipients::new();
//! recipients.add(&me.to_public().to_string(), "recipient 1")?;
//! let (runner, encryptor) = (Runner::new(), Encryptor::new(recipients));
//! let sealed = runner.vec(&encryptor, &[42; 200_000])?;
//! assert!(sealed.starts_with(b"age-encryption.org/v1\n"));
//!
//! let mut identities = Identities::new();
//! identities.add_file("me.key", me.to_string().expose_secret().as_bytes())?;
//! let decryptor = Decryptor::new(identities);
//! assert_eq!(runner.vec(&decryptor, &sealed)?, vec![42; 200_000]);
//!
//! // ASCII armor: a stream wrapper around the same recipe.
//! let mut armored = Vec::new();
//! encryptor.encrypt_armored(&runner, &mut &[42u8; 1000][..], &mut armored)?;
//! let mut plain = Vec::new();
//! decryptor.decrypt_armored(&runner, &mut &armored[..], &mut plain)?;
//! assert_eq!(plain, vec![42; 1000]);
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! [`Encryptor`] and [`Decryptor`] are [`Recipe`]s of the binary form, so a [`Runner`] runs
//! them on every driver (and `paracrypt-mpi` over MPI ranks): random access
//! ([`Runner::range`]) reads and opens only the chunks a byte range needs, as for paracrypt's
//! own container. Armor is read and written in order, as a stream:
//! [`Encryptor::encrypt_armored`] and [`Decryptor::decrypt_armored`] wrap the same recipe.

mod header;
mod info;
mod payload;

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;

use age_core::secrecy::ExposeSecret;

use age::armor::{ArmoredReadError, ArmoredReader, ArmoredWriter, Format};
use age_core::format::{FileKey, Stanza};
use rand::Rng;
use zeroize::Zeroizing;

pub use header::{Header, MAGIC, MAX_HEADER_LEN, NONCE_LEN};
pub use info::{AgeInfo, StanzaInfo, StanzaKind, plugin_tags};
pub(crate) use payload::CHUNK_SIZE;
use payload::SEALED_CHUNK_LEN;

use crate::engine::{Job, Transform};
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::raw::Direction;
use crate::recipe::{Recipe, Runner, StreamReader, StreamWriter};
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
    fixed: Option<([u8; 16], [u8; NONCE_LEN])>,
}

impl std::fmt::Debug for Encryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encryptor")
            .field("recipients", &self.recipients)
            .finish_non_exhaustive()
    }
}

impl Encryptor {
    /// An encryptor to `recipients` (or a passphrase: [`Recipients::passphrase`]).
    pub fn new(recipients: impl Into<Arc<Recipients>>) -> Self {
        Encryptor {
            recipients: recipients.into(),
            fixed: None,
        }
    }

    /// **Test builds only** (the `test-hooks` feature, which no default build enables). Uses
    /// this file key and payload nonce instead of fresh random ones, so that the payload can be
    /// compared with another writer's. Reusing them leaks the data.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn fixed_key_and_nonce_for_tests(mut self, key: [u8; 16], nonce: [u8; NONCE_LEN]) -> Self {
        self.fixed = Some((key, nonce));
        self
    }

    /// Encrypts a stream into ASCII armor (`-----BEGIN AGE ENCRYPTED FILE-----`): `runner`
    /// runs this recipe, in order, into age's armor writer. Returns the bytes of armor written.
    pub fn encrypt_armored(
        &self,
        runner: &Runner,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
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
        runner.stream(self, reader, &mut unflushed)?;
        unflushed
            .0
            .finish()
            .and_then(|w| w.flush())
            .map_err(|e| Error::io("writing the armor", e))?;
        Ok(counted.n)
    }
}

/// The binary form (armor: [`Encryptor::encrypt_armored`]). The payload's bytes are the same
/// whichever provider seals them.
impl Recipe for Encryptor {
    /// Draws the file key and nonce, wraps the key for every recipient and makes the header
    /// the job writes (header, then nonce).
    fn first_job(
        &self,
        _input: &mut dyn BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let (key, nonce) = self.fixed.unwrap_or_else(|| {
            let mut key = [0u8; 16];
            let mut nonce = [0u8; NONCE_LEN];
            rand::rng().fill_bytes(&mut key);
            rand::rng().fill_bytes(&mut nonce);
            (key, nonce)
        });
        let file_key = FileKey::new(Box::new(key));
        let header = Header::seal(self.recipients.wrap(&file_key)?, &file_key);
        let job = payload_job(Direction::Encrypt, &header, &nonce, &file_key, provider)?;
        // Only this process knows the fresh file key: others are given it with the header.
        let job = job.with_shared_key(file_key.expose_secret());
        job.planned_for(input_len)
    }

    /// `key`: the file key of the job that wrote `header` (only that process drew it); the
    /// header's MAC is checked with it.
    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let key = key.ok_or(Error::WrongSecretKind {
            needs: "the file key of the process that wrote the header",
        })?;
        let file_key = |_: &Header| shared_file_key(key);
        let (job, _) = read_job(&mut &header[..], file_key, Direction::Encrypt, provider)?;
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

/// Reads the header and nonce of a binary age file from `input` (exactly those bytes), gets
/// the file key (`file_key`: unwrapped with identities, or the one another process drew or
/// unwrapped) and checks the header's MAC with it: a wrong identity or an altered header fails
/// here, before any payload. Returns the job of the payload in `direction` (unplanned) and the
/// file key.
fn read_job(
    input: &mut dyn BufRead,
    file_key: impl FnOnce(&Header) -> Result<FileKey>,
    direction: Direction,
    provider: Provider,
) -> Result<(Job, FileKey)> {
    let header = Header::read(input)?;
    let file_key = file_key(&header)?;
    header.verify(&file_key)?;
    let nonce = read_nonce(input)?;
    let job = payload_job(direction, &header, &nonce, &file_key, provider)?;
    Ok((job, file_key))
}

/// A file key another process sent.
fn shared_file_key(key: &[u8]) -> Result<FileKey> {
    let key: [u8; 16] = key.try_into().map_err(|_| Error::WrongKey)?;
    Ok(FileKey::new(Box::new(key)))
}

/// Reads age files.
#[derive(Clone)]
pub struct Decryptor {
    identities: Arc<Identities>,
}

impl std::fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decryptor")
            .field("identities", &self.identities)
            .finish_non_exhaustive()
    }
}

impl Decryptor {
    /// A decryptor with `identities` (or a passphrase: [`Identities::passphrase`]).
    pub fn new(identities: impl Into<Arc<Identities>>) -> Self {
        Decryptor {
            identities: identities.into(),
        }
    }

    /// [`read_job`] with the file key unwrapped here, or `key`, the one another process
    /// unwrapped.
    fn open(
        &self,
        input: &mut dyn BufRead,
        key: Option<&[u8]>,
        provider: Provider,
    ) -> Result<(Job, FileKey)> {
        let file_key = |header: &Header| match key {
            Some(key) => shared_file_key(key),
            None => self.identities.unwrap(header.stanzas()),
        };
        read_job(input, file_key, Direction::Decrypt, provider)
    }

    /// Decrypts an ASCII-armored age file from a stream: `runner` runs this recipe, in order,
    /// behind age's armor reader (blank lines before the BEGIN line are skipped). Only
    /// verified chunks are written; on failure the chunks before the failing one have been
    /// written. Returns the bytes written.
    pub fn decrypt_armored(
        &self,
        runner: &Runner,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        let mut counted = runner.count(reader);
        let mut start = Vec::with_capacity(DETECT_LEN);
        (&mut counted)
            .take(DETECT_LEN as u64)
            .read_to_end(&mut start)
            .map_err(|e| Error::io("reading the age header", e))?;
        let start = armor_from(&start)?;
        let input = BufReader::with_capacity(SEALED_CHUNK_LEN, start.chain(&mut counted));
        let mut armored = ArmoredReader::new(input);
        runner
            .stream_buffered(self, &mut armored, writer)
            .map_err(armor_error)
    }
}

impl Decryptor {
    /// A `Read` adapter over an ASCII-armored age file in `inner` ([`Runner::reader`] behind
    /// age's armor reader; blank lines before the BEGIN line are skipped): reading it gives the
    /// plaintext, verified chunk by chunk. The header is read and checked here.
    pub fn armored_reader<'a>(
        &self,
        runner: &Runner,
        mut inner: impl Read + Send + 'a,
    ) -> Result<ArmoredStreamReader<'a>> {
        let mut start = Vec::with_capacity(DETECT_LEN);
        (&mut inner)
            .take(DETECT_LEN as u64)
            .read_to_end(&mut start)
            .map_err(|e| Error::io("reading the age header", e))?;
        let skip = start.len() - armor_from(&start)?.len();
        start.drain(..skip);
        let input: Box<dyn Read + Send + 'a> = Box::new(std::io::Cursor::new(start).chain(inner));
        let armored = ArmoredReader::new(BufReader::with_capacity(SEALED_CHUNK_LEN, input));
        let reader = runner.reader(self, armored).map_err(armor_error)?;
        Ok(ArmoredStreamReader(reader))
    }
}

/// The armor's base64 decoded from the input, behind the buffering the chunk reader wants.
type Unarmored<'a> = ArmoredReader<BufReader<BufReader<Box<dyn Read + Send + 'a>>>>;

/// What [`Decryptor::armored_reader`] returns: a [`StreamReader`] whose errors name damaged
/// armor as [`Error::Armor`].
pub struct ArmoredStreamReader<'a>(StreamReader<Unarmored<'a>>);

impl std::fmt::Debug for ArmoredStreamReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ArmoredStreamReader").finish_non_exhaustive()
    }
}

impl Read for ArmoredStreamReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            if StreamReader::<std::io::Empty>::error_of(&e).is_none() {
                return e;
            }
            match e.into_inner().map(|inner| inner.downcast::<Error>()) {
                Some(Ok(error)) => std::io::Error::other(armor_error(*error)),
                Some(Err(other)) => std::io::Error::other(other),
                None => std::io::Error::other("reading the armor"),
            }
        })
    }
}

impl Encryptor {
    /// A `Write` adapter that encrypts what is written to it into ASCII armor in `inner`
    /// ([`Runner::writer`] into age's armor writer). [`ArmoredStreamWriter::finish`] must be
    /// called: it writes the last chunk and the armor's END line.
    pub fn armored_writer<W: Write + Send>(
        &self,
        runner: &Runner,
        inner: W,
    ) -> Result<ArmoredStreamWriter<W>> {
        let armored = ArmoredWriter::wrap_output(inner, Format::AsciiArmor)
            .map_err(|e| Error::io("writing the armor", e))?;
        // age 0.12's armor writer counts its buffered bytes twice when flushed before
        // `finish`: the stream writer's flush must not reach it.
        Ok(ArmoredStreamWriter(
            runner.writer(self, FlushOnFinish(armored))?,
        ))
    }
}

/// What [`Encryptor::armored_writer`] returns. **Call [`ArmoredStreamWriter::finish`]**.
pub struct ArmoredStreamWriter<W: Write>(StreamWriter<FlushOnFinish<ArmoredWriter<W>>>);

impl<W: Write> std::fmt::Debug for ArmoredStreamWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ArmoredStreamWriter").finish_non_exhaustive()
    }
}

impl<W: Write> Write for ArmoredStreamWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W: Write> ArmoredStreamWriter<W> {
    /// Writes the last chunk and the armor's END line, and returns the inner writer.
    pub fn finish(self) -> std::io::Result<W> {
        let mut inner = self.0.finish()?.0.finish()?;
        inner.flush()?;
        Ok(inner)
    }
}

/// The binary form (armor: [`Decryptor::decrypt_armored`]). A file sealed by any age writer
/// opens on any provider.
impl Recipe for Decryptor {
    /// Reads the header and nonce. The file key is the job's shared key: what other processes
    /// open the payload with.
    fn first_job(
        &self,
        input: &mut dyn BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let (job, file_key) = self.open(input, None, provider)?;
        // Other processes open the payload with the file key alone: never the identities, nor
        // a passphrase (scrypt costs each of them again).
        job.with_shared_key(file_key.expose_secret())
            .planned_for(input_len)
    }

    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let (job, _) = self.open(&mut &header[..], key, provider)?;
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

/// The stanzas of the age file (binary or armored) whose first bytes are `start`, `rest`
/// following them: what its identities are asked to open, read without opening it.
pub(crate) fn stanzas_of(start: &[u8], rest: &mut dyn Read) -> Result<Vec<Stanza>> {
    let header = match detect(start) {
        Some(AgeFormat::Binary) => Header::read(&mut BufReader::new(start.chain(rest)))?,
        Some(AgeFormat::Armored) => {
            let begin = armor_from(start)?;
            let mut armored = ArmoredReader::new(BufReader::new(begin.chain(rest)));
            Header::read(&mut BufReader::new(&mut armored)).map_err(armor_error)?
        }
        None => return Err(Error::AgeHeader("not an age file".into())),
    };
    Ok(header
        .stanzas()
        .iter()
        .map(|s| Stanza {
            tag: s.tag.clone(),
            args: s.args.clone(),
            body: s.body.clone(),
        })
        .collect())
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
