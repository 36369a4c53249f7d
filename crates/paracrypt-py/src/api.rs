//! The module's functions: files, bytes and ranges, for the container, age files and raw
//! ciphers. Docstrings here are what `help(paracrypt.encrypt)` shows; `paracrypt/_paracrypt.pyi`
//! gives their types.

use std::path::PathBuf;

use paracrypt_core::container::{SALT_LEN, Suite};
use paracrypt_core::raw::salted::{DEFAULT_ITER, Digest, PasswordKdf};
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zeroize::Zeroizing;

use crate::buffer::Bytes;
use crate::drive;
use crate::errors::Failure;
use crate::options::{Options, chunk_size};
use crate::recipes::{Format, Spec};
use crate::secrets;
use crate::streams;

/// The spec of an encryption from its keyword arguments.
#[allow(clippy::too_many_arguments)]
pub fn encrypt_spec(
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
    format: &str,
    armor: bool,
    cipher: &str,
    chunk: Option<&Bound<'_, PyAny>>,
    fixed_salt: Option<&Bound<'_, PyAny>>,
    sign: Option<PathBuf>,
) -> PyResult<Spec> {
    let format = Format::new(format, armor)?;
    if sign.is_some() && format != Format::Container {
        return Err(Failure::Usage(
            "sign= applies to paracrypt's container, not format=\"age\"".into(),
        )
        .into());
    }
    let signer = sign
        .map(|path| secrets::read_signing_key(&path))
        .transpose()?;
    let credential = secrets::to_encrypt(key, password, recipients)?;
    let suite: Suite = cipher.parse().map_err(Failure::from)?;
    if format != Format::Container && (cipher != "aes-256-gcm" || chunk.is_some()) {
        return Err(Failure::Usage(
            "cipher= and chunk_size= apply to format=\"paracrypt\" (age files are \
             ChaCha20-Poly1305 in 64 KiB chunks)"
                .into(),
        )
        .into());
    }
    let salt = match fixed_salt {
        None => None,
        Some(salt) => Some(
            <[u8; SALT_LEN]>::try_from(Bytes::get(salt)?.as_slice())
                .map_err(|_| Failure::Usage(format!("_fixed_salt needs {SALT_LEN} bytes")))?,
        ),
    };
    Ok(Spec::Encrypt {
        credential,
        format,
        suite,
        chunk_size: chunk_size(chunk)?,
        salt,
        signer,
    })
}

/// The spec of a decryption from its keyword arguments.
pub fn decrypt_spec(
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    verify_with: Option<PathBuf>,
) -> PyResult<Spec> {
    let expected = verify_with
        .map(|path| secrets::read_verifying_key(&path))
        .transpose()?;
    Ok(Spec::Decrypt {
        credential: secrets::to_decrypt(key, password, identities)?,
        expected,
    })
}

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
#[pyo3(signature = (src, dst, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = "aes-256-gcm", chunk_size = None, overwrite = false, threads = None, provider = None, progress = None, sign = None, _fixed_salt = None))]
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
    cipher: &str,
    chunk_size: Option<&Bound<'_, PyAny>>,
    overwrite: bool,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
    sign: Option<PathBuf>,
    _fixed_salt: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let spec = encrypt_spec(
        key,
        password,
        recipients,
        format,
        armor,
        cipher,
        chunk_size,
        _fixed_salt,
        sign,
    )?;
    let options = Options::new(threads, provider, progress)?;
    drive::file_to_file(py, &spec, &src, &dst, overwrite, &options)
}

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
    let spec = decrypt_spec(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, progress)?;
    drive::file_to_file(py, &spec, &src, &dst, overwrite, &options)
}

/// Encrypts ``data`` (any bytes-like object: bytes, bytearray, memoryview, a contiguous numpy
/// array — read in place, not copied) and returns the encrypted file's bytes. Options as
/// :func:`encrypt_file`.
#[pyfunction]
#[pyo3(signature = (data, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = "aes-256-gcm", chunk_size = None, threads = None, provider = None, sign = None, _fixed_salt = None))]
#[allow(clippy::too_many_arguments)]
pub fn encrypt<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    recipients: Option<&Bound<'py, PyAny>>,
    format: &str,
    armor: bool,
    cipher: &str,
    chunk_size: Option<&Bound<'py, PyAny>>,
    threads: Option<i64>,
    provider: Option<&str>,
    sign: Option<PathBuf>,
    _fixed_salt: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let spec = encrypt_spec(
        key,
        password,
        recipients,
        format,
        armor,
        cipher,
        chunk_size,
        _fixed_salt,
        sign,
    )?;
    let options = Options::new(threads, provider, None)?;
    drive::memory(py, &spec, data, &options)
}

/// Encrypts ``data`` as :func:`encrypt` does, into the start of ``out`` (a writable buffer the
/// caller keeps: a bytearray, memoryview, numpy array or mmap, at least the output's size, not
/// overlapping ``data``), without allocating; returns the bytes written. The output's size is
/// ``len(encrypt(data, ...))`` for the same options (the error for a short ``out`` names it).
/// Not for armor.
#[pyfunction]
#[pyo3(signature = (data, out, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = "aes-256-gcm", chunk_size = None, threads = None, provider = None, sign = None, _fixed_salt = None))]
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
    cipher: &str,
    chunk_size: Option<&Bound<'py, PyAny>>,
    threads: Option<i64>,
    provider: Option<&str>,
    sign: Option<PathBuf>,
    _fixed_salt: Option<&Bound<'py, PyAny>>,
) -> PyResult<u64> {
    let spec = encrypt_spec(
        key,
        password,
        recipients,
        format,
        armor,
        cipher,
        chunk_size,
        _fixed_salt,
        sign,
    )?;
    let options = Options::new(threads, provider, None)?;
    drive::memory_into(py, &spec, data, out, &options)
}

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
    let spec = decrypt_spec(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, None)?;
    drive::memory_into(py, &spec, data, out, &options)
}

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
    let spec = decrypt_spec(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, None)?;
    drive::memory(py, &spec, data, &options)
}

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
    let spec = decrypt_spec(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, progress)?;
    drive::range(py, &spec, &src, offset, length, &options)
}

/// The spec of a raw cipher from its keyword arguments.
#[allow(clippy::too_many_arguments)]
pub fn raw_spec(
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
) -> PyResult<Spec> {
    let name: RawCipherName = cipher.parse().map_err(Failure::from)?;
    let chunk_size = chunk_size(chunk)?;
    if !padding && !name.is_padded_mode() {
        return Err(Failure::Usage(format!(
            "padding=False applies to ECB and CBC only; {name} never pads"
        ))
        .into());
    }
    match (key, password) {
        (Some(key), None) => {
            let key = Zeroizing::new(Bytes::get(key)?.as_slice().to_vec());
            let iv = iv.map(Bytes::get).transpose()?;
            let cipher = RawCipher::new(name, &key, iv.as_ref().map(Bytes::as_slice))
                .map_err(Failure::from)?
                .with_padding(padding);
            Ok(Spec::Raw {
                cipher,
                direction,
                chunk_size,
            })
        }
        (None, Some(password)) => {
            if iv.is_some() {
                return Err(Failure::Usage(
                    "a password gives the key and IV (as openssl enc -pass): no iv=".into(),
                )
                .into());
            }
            if password.is_empty() {
                return Err(Failure::Usage("the password is empty".into()).into());
            }
            let md: Digest = md.parse().map_err(Failure::from)?;
            let kdf = if pbkdf2 {
                let iter = iterations.unwrap_or(DEFAULT_ITER);
                if iter == 0 {
                    return Err(Failure::Usage("iterations must be at least 1".into()).into());
                }
                PasswordKdf::Pbkdf2 { iter, md }
            } else {
                if iterations.is_some() {
                    return Err(Failure::Usage("iterations= applies to pbkdf2=True".into()).into());
                }
                PasswordKdf::Legacy { md }
            };
            if kdf.is_weak() && direction == Direction::Encrypt {
                return Err(Failure::Usage(
                    "pbkdf2=False would use openssl's legacy EVP_BytesToKey derivation, which is \
                     weak (one hash per password guess); paracrypt reads such files but writes \
                     only pbkdf2 ones"
                        .into(),
                )
                .into());
            }
            Ok(Spec::RawPassword {
                name,
                password: Zeroizing::new(password.to_owned()),
                kdf,
                padding,
                direction,
                chunk_size,
            })
        }
        (None, None) => Err(Failure::Usage("give key= (and iv=) or password=".into()).into()),
        (Some(_), Some(_)) => {
            Err(Failure::Usage("give key= (and iv=) or password=, not both".into()).into())
        }
    }
}

/// Arguments of every raw function, by direction.
macro_rules! raw_functions {
    ($memory:ident, $file:ident, $direction:expr, $what:literal) => {
        #[doc = concat!(
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
            let spec = raw_spec(
                $direction, cipher, key, iv, password, pbkdf2, iterations, md, padding,
                chunk_size,
            )?;
            let options = Options::new(threads, provider, None)?;
            drive::memory(py, &spec, data, &options)
        }

        #[doc = concat!(
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
            let spec = raw_spec(
                $direction, cipher, key, iv, password, pbkdf2, iterations, md, padding,
                chunk_size,
            )?;
            let options = Options::new(threads, provider, progress)?;
            drive::file_to_file(py, &spec, &src, &dst, overwrite, &options)
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

/// A writable file object that encrypts what is written to it into ``fileobj`` (any object
/// with ``write``): the header is written now, the chunks as they fill, on every core.
///
/// **Close it** (``close()``, or leave a ``with`` block without an exception): the last chunk
/// is written then. A writer that is not closed — left by an exception, or garbage collected —
/// leaves a file that fails to decrypt as truncated, never one that looks complete.
/// ``fileobj`` itself is not closed. Secrets and options as :func:`encrypt_file`.
#[pyfunction]
#[pyo3(signature = (fileobj, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = "aes-256-gcm", chunk_size = None, threads = None, provider = None, progress = None, sign = None, _fixed_salt = None))]
#[allow(clippy::too_many_arguments)]
pub fn encryptor<'py>(
    py: Python<'py>,
    fileobj: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    recipients: Option<&Bound<'py, PyAny>>,
    format: &str,
    armor: bool,
    cipher: &str,
    chunk_size: Option<&Bound<'py, PyAny>>,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
    sign: Option<PathBuf>,
    _fixed_salt: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let spec = encrypt_spec(
        key,
        password,
        recipients,
        format,
        armor,
        cipher,
        chunk_size,
        _fixed_salt,
        sign,
    )?;
    let options = Options::new(threads, provider, progress)?;
    let inner = streams::encryptor(py, &spec, fileobj, &options)?;
    wrap(py, "EncryptingWriter", inner)
}

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
    let spec = decrypt_spec(key, password, identities, verify_with)?;
    let options = Options::new(threads, provider, progress)?;
    let inner = streams::decryptor(py, &spec, fileobj, &options)?;
    wrap(py, "DecryptingReader", inner)
}

/// Raw streams, by direction.
macro_rules! raw_streams {
    ($name:ident, $direction:expr, $class:literal, $make:path, $what:literal) => {
        #[doc = concat!(
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
            let spec = raw_spec(
                $direction, cipher, key, iv, password, pbkdf2, iterations, md, padding,
                chunk_size,
            )?;
            let options = Options::new(threads, provider, progress)?;
            let inner = $make(py, &spec, fileobj, &options)?;
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
