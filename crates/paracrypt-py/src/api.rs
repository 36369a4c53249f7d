//! The module's functions: files, bytes and ranges, for the container, age files and raw
//! ciphers. Each turns its keyword arguments into the core's [`Request`] (every rule about what
//! may be encrypted, decrypted or refused is the core's: `paracrypt_core::request`) and hands it
//! to a driver. Docstrings here are what `help(paracrypt.encrypt)` shows;
//! `paracrypt/_paracrypt.pyi` gives their types.

use std::path::PathBuf;

use paracrypt_core::request::{
    DEFAULT_ITER, Digest, Direction, Format, PasswordKdf, RawCipherName, Request, Sealing, Suite,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zeroize::Zeroizing;

use crate::buffer::Bytes;
use crate::drive;
use crate::errors::{Failure, usage};
use crate::options::{Options, chunk_size};
use crate::secrets;
use crate::streams;

/// The request of an encryption from its keyword arguments.
#[allow(clippy::too_many_arguments)]
pub fn encrypt_request(
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
    format: &str,
    armor: bool,
    cipher: Option<&str>,
    chunk: Option<&Bound<'_, PyAny>>,
    sign: Option<PathBuf>,
) -> PyResult<Request> {
    let sealing = Sealing {
        format: format.parse::<Format>().map_err(Failure::from)?,
        armor,
        suite: cipher
            .map(str::parse::<Suite>)
            .transpose()
            .map_err(Failure::from)?,
        chunk_size: chunk.map(|chunk| chunk_size(Some(chunk))).transpose()?,
        sign: sign
            .map(|path| secrets::read_signing_key(&path))
            .transpose()?,
    };
    // Before the secret is read: what no secret makes sense of.
    sealing.check().map_err(Failure::from)?;
    let secret = secrets::to_encrypt(key, password, recipients)?;
    Ok(Request::encrypt(secret, sealing).map_err(Failure::from)?)
}

/// The request of a decryption from its keyword arguments.
pub fn decrypt_request(
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    verify_with: Option<PathBuf>,
) -> PyResult<Request> {
    let expected = verify_with
        .map(|path| secrets::read_verifying_key(&path))
        .transpose()?;
    let secret = secrets::to_decrypt(key, password, identities)?;
    Ok(Request::decrypt(secret, expected).map_err(Failure::from)?)
}

/// encrypt_file(
///     src: str | os.PathLike[str],
///     dst: str | os.PathLike[str],
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     recipients: Recipients | str | Iterable[str] | None = None,
///     format: 'paracrypt' | 'age' = 'paracrypt',
///     armor: bool = False,
///     cipher: 'aes-256-gcm' | 'aes-128-gcm' | 'chacha20-poly1305' | 'aes-256-ctr-hmac-sha256'
///         | 'des-ede3-cbc-hmac-sha256' | 'bf-cbc-hmac-sha256' | 'rc4-hmac-sha256' | None =
///         None,
///     chunk_size: int | str | None = None,
///     overwrite: bool = False,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
///     sign: str | os.PathLike[str] | None = None,
/// ) -> int
///
/// Encrypts the file ``src`` into ``dst`` on every core and returns the bytes written.
///
/// The secret is one of ``key=`` (a :class:`Key` or a key file's path), ``password=``
/// (Argon2id; age: scrypt) or ``recipients=`` (:class:`Recipients` or a list of ``age1pq1…``,
/// ``age1…``, ``ssh-ed25519 …``, ``ssh-rsa …`` strings). ``format="age"`` writes an age v1 file
/// (``armor=True``: ASCII armor) to recipients or a password; the default is paracrypt's
/// container, with ``cipher=`` (``"aes-256-gcm"``, ``"aes-128-gcm"``, ``"chacha20-poly1305"``,
/// legacy suites with a :class:`LegacyWarning`) and ``chunk_size=`` (bytes, or ``"1MiB"``).
///
/// ``dst`` is written to a temporary file beside it and takes its place only when everything
/// succeeded: on any error nothing is left at ``dst``. An existing ``dst`` is replaced only
/// with ``overwrite=True``. ``threads=`` (default: one per core) and ``provider=``
/// (``"aws-lc"``, ``"openssl"``, ``"rustcrypto"``; default: the fastest) choose who computes;
/// the bytes are the same either way. ``progress=`` is called with the input bytes taken in as
/// the work goes (``tqdm``'s ``update`` fits). The GIL is released while the work runs.
///
/// ``sign=`` (a signing key file's path: Ed25519, ECDSA, RSA or ML-DSA, as ``paracrypt
/// encrypt --sign`` takes) signs every chunk (container version 3; not with ``format="age"``).
#[pyfunction]
#[pyo3(signature = (src, dst, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = None, chunk_size = None, overwrite = false, threads = None, provider = None, progress = None, sign = None))]
#[allow(clippy::too_many_arguments)]
pub fn encrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
    format: &str,
    armor: bool,
    cipher: Option<&str>,
    chunk_size: Option<&Bound<'_, PyAny>>,
    overwrite: bool,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
    sign: Option<PathBuf>,
) -> PyResult<u64> {
    let request = encrypt_request(
        key, password, recipients, format, armor, cipher, chunk_size, sign,
    )?;
    let options = Options::new(threads, provider, progress)?;
    drive::file_to_file(py, &request, &src, &dst, overwrite, &options)
}

/// decrypt_file(
///     src: str | os.PathLike[str],
///     dst: str | os.PathLike[str],
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     overwrite: bool = False,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
/// ) -> int
///
/// Decrypts the file ``src`` (a paracrypt container or an age file, binary or armored) into
/// ``dst`` on every core, every chunk verified; returns the bytes written.
///
/// The secret is one of ``key=``, ``password=`` or ``identities=`` (:class:`Identities`, an
/// identity file's path, or a list of them). A wrong key fails on the header
/// (:class:`WrongKeyError`), a damaged chunk names the lowest failing one
/// (:class:`AuthenticationError`), a cut file fails too (:class:`FormatError`); in every case
/// nothing is left at ``dst``. Options as :func:`encrypt_file`.
///
/// ``verify_with=`` (a public key file's path, as ``paracrypt decrypt --verify-with`` takes):
/// the file must be a container signed by that key, every chunk's signature checked before it
/// is opened; otherwise :class:`SignatureError` (another signer, an altered signature, an
/// unsigned or age file), nothing left at ``dst``.
#[pyfunction]
#[pyo3(signature = (src, dst, *, key = None, password = None, identities = None, verify_with = None, overwrite = false, threads = None, provider = None, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn decrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    verify_with: Option<PathBuf>,
    overwrite: bool,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<u64> {
    let request = decrypt_request(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, progress)?;
    drive::file_to_file(py, &request, &src, &dst, overwrite, &options)
}

/// encrypt(
///     data: Buffer,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     recipients: Recipients | str | Iterable[str] | None = None,
///     format: 'paracrypt' | 'age' = 'paracrypt',
///     armor: bool = False,
///     cipher: 'aes-256-gcm' | 'aes-128-gcm' | 'chacha20-poly1305' | 'aes-256-ctr-hmac-sha256'
///         | 'des-ede3-cbc-hmac-sha256' | 'bf-cbc-hmac-sha256' | 'rc4-hmac-sha256' | None =
///         None,
///     chunk_size: int | str | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     sign: str | os.PathLike[str] | None = None,
/// ) -> bytes
///
/// Encrypts ``data`` (any bytes-like object: bytes, bytearray, memoryview, a contiguous numpy
/// array — read in place, not copied) and returns the encrypted file's bytes. Options as
/// :func:`encrypt_file`.
#[pyfunction]
#[pyo3(signature = (data, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = None, chunk_size = None, threads = None, provider = None, sign = None))]
#[allow(clippy::too_many_arguments)]
pub fn encrypt<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    recipients: Option<&Bound<'py, PyAny>>,
    format: &str,
    armor: bool,
    cipher: Option<&str>,
    chunk_size: Option<&Bound<'py, PyAny>>,
    threads: Option<i64>,
    provider: Option<&str>,
    sign: Option<PathBuf>,
) -> PyResult<Bound<'py, PyBytes>> {
    let request = encrypt_request(
        key, password, recipients, format, armor, cipher, chunk_size, sign,
    )?;
    let options = Options::new(threads, provider, None)?;
    drive::memory(py, &request, data, &options)
}

/// encrypt_into(
///     data: Buffer,
///     out: Buffer,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     recipients: Recipients | str | Iterable[str] | None = None,
///     format: 'paracrypt' | 'age' = 'paracrypt',
///     armor: bool = False,
///     cipher: 'aes-256-gcm' | 'aes-128-gcm' | 'chacha20-poly1305' | 'aes-256-ctr-hmac-sha256'
///         | 'des-ede3-cbc-hmac-sha256' | 'bf-cbc-hmac-sha256' | 'rc4-hmac-sha256' | None =
///         None,
///     chunk_size: int | str | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     sign: str | os.PathLike[str] | None = None,
/// ) -> int
///
/// Encrypts ``data`` as :func:`encrypt` does, into the start of ``out`` (a writable buffer the
/// caller keeps: a bytearray, memoryview, numpy array or mmap, at least the output's size, not
/// overlapping ``data``), without allocating; returns the bytes written. The output's size is
/// ``len(encrypt(data, ...))`` for the same options (the error for a short ``out`` names it).
/// Not for armor.
#[pyfunction]
#[pyo3(signature = (data, out, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = None, chunk_size = None, threads = None, provider = None, sign = None))]
#[allow(clippy::too_many_arguments)]
pub fn encrypt_into<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    recipients: Option<&Bound<'py, PyAny>>,
    format: &str,
    armor: bool,
    cipher: Option<&str>,
    chunk_size: Option<&Bound<'py, PyAny>>,
    threads: Option<i64>,
    provider: Option<&str>,
    sign: Option<PathBuf>,
) -> PyResult<u64> {
    let request = encrypt_request(
        key, password, recipients, format, armor, cipher, chunk_size, sign,
    )?;
    let options = Options::new(threads, provider, None)?;
    drive::memory_into(py, &request, data, out, &options)
}

/// decrypt_into(
///     data: Buffer,
///     out: Buffer,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
/// ) -> int
///
/// Decrypts ``data`` as :func:`decrypt` does, into the start of ``out`` (a writable buffer the
/// caller keeps, not overlapping ``data``, at least the bound the header gives: the
/// ciphertext's length is always enough), without allocating; returns the plaintext's length.
/// On an error the bytes of ``out`` are unspecified. Not for armor.
#[pyfunction]
#[pyo3(signature = (data, out, *, key = None, password = None, identities = None, verify_with = None, threads = None, provider = None))]
#[allow(clippy::too_many_arguments)]
pub fn decrypt_into<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    identities: Option<&Bound<'py, PyAny>>,
    verify_with: Option<PathBuf>,
    threads: Option<i64>,
    provider: Option<&str>,
) -> PyResult<u64> {
    let request = decrypt_request(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, None)?;
    drive::memory_into(py, &request, data, out, &options)
}

/// decrypt(
///     data: Buffer,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
/// ) -> bytes
///
/// Decrypts ``data`` (a paracrypt container or an age file, any bytes-like object) and returns
/// the plaintext, every chunk verified. Options as :func:`decrypt_file`.
#[pyfunction]
#[pyo3(signature = (data, *, key = None, password = None, identities = None, verify_with = None, threads = None, provider = None))]
#[allow(clippy::too_many_arguments)]
pub fn decrypt<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    identities: Option<&Bound<'py, PyAny>>,
    verify_with: Option<PathBuf>,
    threads: Option<i64>,
    provider: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let request = decrypt_request(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, None)?;
    drive::memory(py, &request, data, &options)
}

/// decrypt_range(
///     src: str | os.PathLike[str],
///     offset: int,
///     length: int,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
/// ) -> bytes
///
/// Decrypts plaintext bytes ``offset`` to ``offset + length`` of the file ``src`` (a container
/// or a binary age file), reading and verifying only the chunks that cover them (and the last
/// chunk when the range reaches the end, so a cut file fails here too). Returns fewer bytes
/// when the plaintext ends first.
#[pyfunction]
#[pyo3(signature = (src, offset, length, *, key = None, password = None, identities = None, verify_with = None, threads = None, provider = None, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn decrypt_range<'py>(
    py: Python<'py>,
    src: PathBuf,
    offset: u64,
    length: u64,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    identities: Option<&Bound<'py, PyAny>>,
    verify_with: Option<PathBuf>,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let request = decrypt_request(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, progress)?;
    drive::range(py, &request, &src, offset, length, &options)
}

/// verify_file(
///     src: str | os.PathLike[str],
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     offset: int | None = None,
///     length: int | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
/// ) -> int
///
/// Checks the encrypted file ``src`` (a container or an age file, binary or armored) with the
/// secret that decrypts it, writing nothing: every chunk is decrypted into nothing and
/// authenticated, and the file's end checked (a cut file fails); with ``offset`` and
/// ``length``, only the chunks that cover those plaintext bytes. Returns the plaintext bytes
/// checked. Raises what :func:`decrypt_file` raises: ``DataError`` for a damaged chunk (named),
/// a cut file or a wrong secret, ``SignatureError`` for a signer other than ``verify_with``.
#[pyfunction]
#[pyo3(signature = (src, *, key = None, password = None, identities = None, verify_with = None, offset = None, length = None, threads = None, provider = None, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn verify_file(
    py: Python<'_>,
    src: PathBuf,
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    verify_with: Option<PathBuf>,
    offset: Option<u64>,
    length: Option<u64>,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<u64> {
    let range = match (offset, length) {
        (None, None) => None,
        (Some(offset), Some(length)) => Some((offset, length)),
        _ => return Ok(usage("offset= and length= are given together")?),
    };
    let request = decrypt_request(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, progress)?;
    options.run(py, || {
        Ok(request.verify_file(&options.runner(), &src, range)?.bytes)
    })
}

/// The request of a raw cipher from its keyword arguments.
#[allow(clippy::too_many_arguments)]
pub fn raw_request(
    direction: Direction,
    cipher: &str,
    key: Option<&Bound<'_, PyAny>>,
    iv: Option<&Bound<'_, PyAny>>,
    password: Option<&str>,
    pbkdf2: bool,
    iterations: Option<u32>,
    md: &str,
    padding: bool,
    chunk: Option<&Bound<'_, PyAny>>,
) -> PyResult<Request> {
    let name: RawCipherName = cipher.parse().map_err(Failure::from)?;
    let chunk_size = chunk_size(chunk)?;
    let request = match (key, password) {
        (Some(key), None) => {
            let key = Zeroizing::new(Bytes::get(key)?.as_slice().to_vec());
            let iv = iv.map(Bytes::get).transpose()?;
            let iv = iv.as_ref().map(Bytes::as_slice);
            Request::raw(direction, name, &key, iv, padding, chunk_size)
        }
        (None, Some(password)) => {
            if iv.is_some() {
                return Ok(usage(
                    "a password gives the key and IV (as openssl enc -pass): no iv=",
                )?);
            }
            let md: Digest = md.parse().map_err(Failure::from)?;
            let kdf = match (pbkdf2, iterations) {
                (true, iter) => PasswordKdf::Pbkdf2 {
                    iter: iter.unwrap_or(DEFAULT_ITER),
                    md,
                },
                (false, None) => PasswordKdf::Legacy { md },
                (false, Some(_)) => return Ok(usage("iterations= applies to pbkdf2=True")?),
            };
            let password = Zeroizing::new(password.to_owned());
            Request::raw_password(
                direction,
                name,
                password.as_bytes(),
                kdf,
                padding,
                chunk_size,
            )
        }
        (None, None) => return Ok(usage("give key= (and iv=) or password=")?),
        (Some(_), Some(_)) => return Ok(usage("give key= (and iv=) or password=, not both")?),
    };
    Ok(request.map_err(Failure::from)?)
}

/// Arguments of every raw function, by direction.
macro_rules! raw_functions {
    ($memory:ident, $file:ident, $direction:expr, $what:literal) => {
        #[doc = concat!(
            include_str!(concat!("typed/", stringify!($memory), ".txt")), "\n",
            $what, " ``data`` with a raw ``openssl enc`` cipher and returns the result: ",
            "``cipher=`` by its OpenSSL name (``\"aes-256-ctr\"``, ``\"aes-128-cbc\"``, …), ",
            "``key=`` and ``iv=`` as bytes, or ``password=`` for openssl's ``Salted__`` password ",
            "files (PBKDF2, ``iterations=``, ``md=``). Byte-identical to ``openssl enc``; no ",
            "integrity protection (prefer :func:`paracrypt.encrypt`)."
        )]
        #[pyfunction]
        #[pyo3(signature = (data, *, cipher, key = None, iv = None, password = None, pbkdf2 = true, iterations = None, md = "sha256", padding = true, chunk_size = None, threads = None, provider = None))]
        #[allow(clippy::too_many_arguments)]
        pub fn $memory<'py>(
            py: Python<'py>,
            data: &Bound<'py, PyAny>,
            cipher: &str,
            key: Option<&Bound<'py, PyAny>>,
            iv: Option<&Bound<'py, PyAny>>,
            password: Option<&str>,
            pbkdf2: bool,
            iterations: Option<u32>,
            md: &str,
            padding: bool,
            chunk_size: Option<&Bound<'py, PyAny>>,
            threads: Option<i64>,
            provider: Option<&str>,
        ) -> PyResult<Bound<'py, PyBytes>> {
            let request = raw_request(
                $direction, cipher, key, iv, password, pbkdf2, iterations, md, padding,
                chunk_size,
            )?;
            let options = Options::new(threads, provider, None)?;
            drive::memory(py, &request, data, &options)
        }

        #[doc = concat!(
            include_str!(concat!("typed/", stringify!($file), ".txt")), "\n",
            $what, " the file ``src`` into ``dst`` with a raw ``openssl enc`` cipher (arguments ",
            "as the in-memory function; ``dst`` as :func:`paracrypt.encrypt_file`)."
        )]
        #[pyfunction]
        #[pyo3(signature = (src, dst, *, cipher, key = None, iv = None, password = None, pbkdf2 = true, iterations = None, md = "sha256", padding = true, chunk_size = None, overwrite = false, threads = None, provider = None, progress = None))]
        #[allow(clippy::too_many_arguments)]
        pub fn $file(
            py: Python<'_>,
            src: PathBuf,
            dst: PathBuf,
            cipher: &str,
            key: Option<&Bound<'_, PyAny>>,
            iv: Option<&Bound<'_, PyAny>>,
            password: Option<&str>,
            pbkdf2: bool,
            iterations: Option<u32>,
            md: &str,
            padding: bool,
            chunk_size: Option<&Bound<'_, PyAny>>,
            overwrite: bool,
            threads: Option<i64>,
            provider: Option<&str>,
            progress: Option<Py<PyAny>>,
        ) -> PyResult<u64> {
            let request = raw_request(
                $direction, cipher, key, iv, password, pbkdf2, iterations, md, padding,
                chunk_size,
            )?;
            let options = Options::new(threads, provider, progress)?;
            drive::file_to_file(py, &request, &src, &dst, overwrite, &options)
        }
    };
}

raw_functions!(
    raw_encrypt,
    raw_encrypt_file,
    Direction::Encrypt,
    "Encrypts"
);
raw_functions!(
    raw_decrypt,
    raw_decrypt_file,
    Direction::Decrypt,
    "Decrypts"
);

/// Wraps a compiled stream in its Python file object (`paracrypt/_streams.py`).
fn wrap<'py>(
    py: Python<'py>,
    class: &str,
    inner: impl IntoPyObject<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    py.import("paracrypt._streams")?
        .getattr(class)?
        .call1((inner,))
}

/// encryptor(
///     fileobj: object,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     recipients: Recipients | str | Iterable[str] | None = None,
///     format: 'paracrypt' | 'age' = 'paracrypt',
///     armor: bool = False,
///     cipher: 'aes-256-gcm' | 'aes-128-gcm' | 'chacha20-poly1305' | 'aes-256-ctr-hmac-sha256'
///         | 'des-ede3-cbc-hmac-sha256' | 'bf-cbc-hmac-sha256' | 'rc4-hmac-sha256' | None =
///         None,
///     chunk_size: int | str | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
///     sign: str | os.PathLike[str] | None = None,
/// ) -> EncryptingWriter
///
/// A writable file object that encrypts what is written to it into ``fileobj`` (any object
/// with ``write``): the header is written now, the chunks as they fill, on every core.
///
/// **Close it** (``close()``, or leave a ``with`` block without an exception): the last chunk
/// is written then. A writer that is not closed — left by an exception, or garbage collected —
/// leaves a file that fails to decrypt as truncated, never one that looks complete.
/// ``fileobj`` itself is not closed. Secrets and options as :func:`encrypt_file`.
#[pyfunction]
#[pyo3(signature = (fileobj, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = None, chunk_size = None, threads = None, provider = None, progress = None, sign = None))]
#[allow(clippy::too_many_arguments)]
pub fn encryptor<'py>(
    py: Python<'py>,
    fileobj: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    recipients: Option<&Bound<'py, PyAny>>,
    format: &str,
    armor: bool,
    cipher: Option<&str>,
    chunk_size: Option<&Bound<'py, PyAny>>,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
    sign: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let request = encrypt_request(
        key, password, recipients, format, armor, cipher, chunk_size, sign,
    )?;
    let options = Options::new(threads, provider, progress)?;
    let inner = streams::encryptor(py, &request, fileobj, &options)?;
    wrap(py, "EncryptingWriter", inner)
}

/// decryptor(
///     fileobj: object,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
/// ) -> DecryptingReader
///
/// A readable file object that decrypts ``fileobj`` (any object with ``read``: a container or
/// an age file, binary or armored) as it is read, every chunk verified before it is handed out.
/// The header is read and checked now (a wrong key fails here); a damaged chunk fails the read
/// that reaches it, after every byte before it. Wrap it in ``io.BufferedReader`` for small
/// reads. Secrets and options as :func:`decrypt_file`.
#[pyfunction]
#[pyo3(signature = (fileobj, *, key = None, password = None, identities = None, verify_with = None, threads = None, provider = None, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn decryptor<'py>(
    py: Python<'py>,
    fileobj: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    identities: Option<&Bound<'py, PyAny>>,
    verify_with: Option<PathBuf>,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let request = decrypt_request(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, progress)?;
    let inner = streams::decryptor(py, &request, fileobj, &options)?;
    wrap(py, "DecryptingReader", inner)
}

/// Raw streams, by direction.
macro_rules! raw_streams {
    ($name:ident, $direction:expr, $class:literal, $make:path, $what:literal) => {
        #[doc = concat!(
            include_str!(concat!("typed/", stringify!($name), ".txt")), "\n",
            "A file object that ", $what, " with a raw ``openssl enc`` cipher (arguments as ",
            ":func:`paracrypt.raw.encrypt`; the stream as :func:`paracrypt.", $class, "`)."
        )]
        #[pyfunction]
        #[pyo3(signature = (fileobj, *, cipher, key = None, iv = None, password = None, pbkdf2 = true, iterations = None, md = "sha256", padding = true, chunk_size = None, threads = None, provider = None, progress = None))]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<'py>(
            py: Python<'py>,
            fileobj: &Bound<'py, PyAny>,
            cipher: &str,
            key: Option<&Bound<'py, PyAny>>,
            iv: Option<&Bound<'py, PyAny>>,
            password: Option<&str>,
            pbkdf2: bool,
            iterations: Option<u32>,
            md: &str,
            padding: bool,
            chunk_size: Option<&Bound<'py, PyAny>>,
            threads: Option<i64>,
            provider: Option<&str>,
            progress: Option<Py<PyAny>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let request = raw_request(
                $direction, cipher, key, iv, password, pbkdf2, iterations, md, padding,
                chunk_size,
            )?;
            let options = Options::new(threads, provider, progress)?;
            let inner = $make(py, &request, fileobj, &options)?;
            wrap(
                py,
                if $class == "encryptor" { "EncryptingWriter" } else { "DecryptingReader" },
                inner,
            )
        }
    };
}

raw_streams!(
    raw_encryptor,
    Direction::Encrypt,
    "encryptor",
    streams::encryptor,
    "encrypts what is written to it into ``fileobj``"
);
raw_streams!(
    raw_decryptor,
    Direction::Decrypt,
    "decryptor",
    streams::decryptor,
    "decrypts ``fileobj`` as it is read"
);
