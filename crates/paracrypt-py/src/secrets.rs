//! Keys, recipients and identities as Python objects, and how a call's `key=`, `password=`,
//! `recipients=` or `identities=` becomes the core's [`Secret`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use paracrypt_core::Error as CoreError;
use paracrypt_core::pubkey::rsa::RsaScheme;
use paracrypt_core::recipient;
use paracrypt_core::request::{self, Secret};
use paracrypt_core::sign::{SigningKey, VerifyingKey};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};
use zeroize::Zeroizing;

use crate::buffer::Bytes;
use crate::errors::{Failure, usage};

/// A 256-bit key for paracrypt's container (what `paracrypt keygen` writes to a key file).
///
/// ``Key.generate()`` draws a new one; ``Key.load(path)`` reads a key file; ``key.save(path)``
/// writes one (mode 0600, never over an existing file). The key's bytes are zeroized when it is
/// freed, and its repr never shows them. A key pickles (to hand it to Dask workers): the
/// pickle holds the key.
#[pyclass(module = "paracrypt", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct Key(pub request::Key);

#[pymethods]
impl Key {
    /// A new random key from the operating system's random number generator.
    #[staticmethod]
    fn generate() -> Self {
        Key(request::Key::generate())
    }

    /// The key whose 32 bytes are ``data`` (any bytes-like object).
    #[staticmethod]
    fn from_bytes(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let bytes = Bytes::get(data)?;
        let bytes: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
            Failure::Usage(format!("a key is 32 bytes, got {}", bytes.as_slice().len()))
        })?;
        Ok(Key(request::Key::from_bytes(bytes)))
    }

    /// The key in a key file's text (``#`` comment lines, then 64 hex digits).
    #[staticmethod]
    fn from_text(text: &str) -> PyResult<Self> {
        Ok(Key(request::Key::from_file_text(text).map_err(
            |e| match e {
                CoreError::KeyFile(reason) => Failure::Usage(format!("bad key file: {reason}")),
                other => other.into(),
            },
        )?))
    }

    /// Reads the key file at ``path`` (from ``paracrypt keygen`` or :meth:`Key.save`).
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Self> {
        Ok(Key(read_key_file(&path)?))
    }

    /// Writes the key file to ``path``: created with mode 0600; an existing file is never
    /// replaced (``IoError`` with ``errno.EEXIST``).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        paracrypt_core::keygen::write_new(&path, self.0.to_file_text().as_bytes())
            .map_err(Failure::from)?;
        Ok(())
    }

    /// The key file's text: what :meth:`Key.save` writes.
    fn to_text(&self) -> String {
        self.0.to_file_text()
    }

    /// The key's 32 bytes (as :meth:`Key.from_bytes` takes them): a secret, keep it as one.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.0.as_bytes())
    }

    fn __repr__(&self) -> &'static str {
        "Key(..)"
    }

    /// Pickles as ``Key.from_bytes(bytes)``: the pickle holds the key.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let from_bytes = py.get_type::<Key>().getattr("from_bytes")?;
        let bytes = PyBytes::new(py, self.0.as_bytes());
        PyTuple::new(py, [from_bytes, PyTuple::new(py, [bytes])?.into_any()])
    }
}

/// Reads a key file: a malformed one is a `UsageError` naming it.
pub fn read_key_file(path: &Path) -> Result<request::Key, Failure> {
    request::Key::read_file(path).map_err(|e| match e {
        CoreError::KeyFile(reason) => {
            Failure::Usage(format!("key file {}: {reason}", path.display()))
        }
        other => other.into(),
    })
}

/// Reads a signing or public key file ([`paracrypt_core::sign::read_key_file`]: at most 1 MiB,
/// zeroed after use).
pub fn read_sign_file(path: &Path) -> Result<Zeroizing<Vec<u8>>, Failure> {
    Ok(paracrypt_core::sign::read_key_file(path)?)
}

/// A key file the core cannot use is a `UsageError` naming it (as the CLI's).
fn key_error(path: &Path) -> impl FnOnce(CoreError) -> Failure + '_ {
    move |error| Failure::Usage(format!("{}: {error}", path.display()))
}

/// `sign=`: the signing key in the file at `path`, as `paracrypt encrypt --sign` reads it.
pub fn read_signing_key(path: &Path) -> Result<SigningKey, Failure> {
    Ok(SigningKey::read(path, RsaScheme::Pkcs1v15)?)
}

/// The signing key in `bytes`, a key file's contents (`path` names it in an error).
pub fn signing_key(bytes: &[u8], path: &Path) -> Result<SigningKey, Failure> {
    SigningKey::from_key_file(bytes, RsaScheme::Pkcs1v15).map_err(key_error(path))
}

/// `verify_with=`: the public key in the file at `path`, as `paracrypt decrypt --verify-with`
/// reads it.
pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey, Failure> {
    Ok(VerifyingKey::read(path)?)
}

/// The people a file is encrypted to: ``age1pq1…`` (post-quantum), ``age1…`` (X25519),
/// ``age1tag1…`` and ``age1tagpq1…`` (hardware keys, opened by their age plugin), age plugins'
/// ``age1NAME1…``, ``ssh-ed25519 …`` and ``ssh-rsa …`` public keys, AWS KMS keys
/// ``awskms:ARN-OR-ALIAS`` (wrapped by KMS with the AWS settings of the environment, as
/// ``s3://`` in the CLI), and files of them (one a line, as age's ``-R``) or RSA public keys in
/// PEM or DER.
///
/// ``Recipients(["age1…", "ssh-ed25519 AAAA…"], files=["team.txt"])``; anywhere ``recipients=``
/// is taken, a list of recipient strings does as well.
#[pyclass(module = "paracrypt", frozen)]
pub struct Recipients {
    pub inner: Arc<recipient::Recipients>,
}

#[pymethods]
impl Recipients {
    /// Parses every recipient string and reads every file: a malformed one is a `UsageError`
    /// saying where it is and what was expected.
    #[new]
    #[pyo3(signature = (recipients = None, *, files = None))]
    fn new(
        recipients: Option<&Bound<'_, PyAny>>,
        files: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut inner = recipient::Recipients::new();
        #[cfg(feature = "kms")]
        inner.set_kms(paracrypt_store::Kms::from_env());
        if let Some(recipients) = recipients {
            for (n, text) in strings(recipients, "recipients")?.iter().enumerate() {
                inner
                    .add(text, format!("recipient {}", n + 1))
                    .map_err(Failure::from)?;
            }
        }
        if let Some(files) = files {
            for path in paths(files, "files")? {
                inner.add_path(&path).map_err(Failure::from)?;
            }
        }
        Ok(Recipients {
            inner: Arc::new(inner),
        })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("Recipients({} recipients)", self.inner.len())
    }
}

/// One identity file's bytes, kept so that identities can be handed to another process.
#[derive(Clone)]
struct Source {
    name: String,
    bytes: Arc<Zeroizing<Vec<u8>>>,
}

/// The private keys a file encrypted to recipients is opened with: ``AGE-SECRET-KEY-PQ-1…``
/// and ``AGE-SECRET-KEY-1…`` lines (``paracrypt keygen --kind pq|x25519``, ``age-keygen``), an
/// OpenSSH private key, or an RSA private key in PEM or DER.
///
/// ``Identities.load("me.key")`` reads identity files; ``Identities.from_text(text)`` parses
/// one held in memory. Anywhere ``identities=`` is taken, a path or a list of paths does as
/// well. Identities pickle (to hand them to Dask workers): the pickle holds the private keys.
/// ``Identities.kms()`` opens files encrypted to AWS KMS keys with the AWS credentials of the
/// environment; ``identities=[Identities.load("me.key"), Identities.kms()]`` mixes both.
#[pyclass(module = "paracrypt", frozen)]
#[derive(Clone)]
pub struct Identities {
    pub inner: Arc<recipient::Identities>,
    sources: Vec<Source>,
    /// Whether AWS KMS unwraps `awskms` stanzas.
    kms: bool,
}

impl Identities {
    fn from_sources(sources: Vec<Source>, kms: bool) -> Result<Self, Failure> {
        let mut inner = recipient::Identities::new();
        for source in &sources {
            inner.add_file(&source.name, &source.bytes)?;
        }
        if kms {
            #[cfg(feature = "kms")]
            inner.set_kms(paracrypt_store::Kms::from_env());
            #[cfg(not(feature = "kms"))]
            return Err(Failure::Usage(
                "Identities.kms: this build of paracrypt has no KMS client (the `kms` feature)"
                    .into(),
            ));
        }
        Ok(Identities {
            inner: Arc::new(inner),
            sources,
            kms,
        })
    }

    /// The identities of the files at `paths`.
    pub fn read(paths: &[PathBuf]) -> Result<Self, Failure> {
        let sources = paths
            .iter()
            .map(|path| {
                Ok(Source {
                    name: path.display().to_string(),
                    bytes: Arc::new(recipient::read_identity_file(path)?),
                })
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        Self::from_sources(sources, false)
    }

    /// These and `other`'s.
    fn join(mut self, other: &Identities) -> Result<Self, Failure> {
        self.sources.extend(other.sources.iter().cloned());
        Self::from_sources(self.sources, self.kms || other.kms)
    }
}

#[pymethods]
impl Identities {
    /// Reads the identity files at ``paths`` (each at most 16 MiB).
    #[staticmethod]
    #[pyo3(signature = (*paths))]
    fn load(paths: Vec<PathBuf>) -> PyResult<Self> {
        if paths.is_empty() {
            return Err(Failure::Usage("Identities.load needs at least one path".into()).into());
        }
        Ok(Self::read(&paths)?)
    }

    /// AWS KMS as an identity: files encrypted to ``awskms:`` keys are opened with the AWS
    /// credentials, region and endpoint of the environment (``AWS_ACCESS_KEY_ID``,
    /// ``AWS_REGION``, ``AWS_ENDPOINT_URL_KMS``…). Pass it in a list to mix it with key files.
    #[staticmethod]
    fn kms() -> PyResult<Self> {
        Ok(Self::from_sources(Vec::new(), true)?)
    }

    /// Parses an identity file held in memory (``str`` or bytes-like); ``name`` says where it
    /// came from in errors.
    #[staticmethod]
    #[pyo3(signature = (text, name = "identity"))]
    fn from_text(text: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        let bytes = if let Ok(text) = text.cast::<PyString>() {
            Zeroizing::new(text.to_cow()?.as_bytes().to_vec())
        } else {
            Zeroizing::new(Bytes::get(text)?.as_slice().to_vec())
        };
        Ok(Self::from_sources(
            vec![Source {
                name: name.to_owned(),
                bytes: Arc::new(bytes),
            }],
            false,
        )?)
    }

    /// The recipients (public keys) of these identities, as recipient strings: what
    /// ``age-keygen -y`` prints.
    fn recipients(&self) -> PyResult<Vec<String>> {
        let mut all = Vec::new();
        for source in &self.sources {
            all.extend(
                recipient::recipients_of(&source.name, &source.bytes).map_err(Failure::from)?,
            );
        }
        Ok(all)
    }

    /// Opens ahead, in one session per age plugin, the file keys of the files at ``paths``
    /// (a list) that these identities' plugins open: a hardware key is touched and its PIN
    /// typed once for them all. Each later decryption of one of these files with these same
    /// ``Identities`` (``decrypt_file``, ``decrypt``, a reader…) finds its key here and starts
    /// no plugin. Nothing is raised here (a file that cannot be read is skipped): each
    /// decryption raises its own error. What a plugin said is kept for these ``Identities``, a
    /// refusal too (a wrong PIN is not asked again for each file): to try again with another
    /// answer, load the identities again. Without plugin identities, it does nothing.
    fn open_ahead(&self, py: Python<'_>, paths: Vec<PathBuf>) {
        py.detach(|| request::open_ahead(&self.inner, &paths));
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("Identities({} identities)", self.inner.len())
    }

    /// Pickles as the identity files' names and bytes.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let rebuild = py.get_type::<Identities>().getattr("_from_pickle")?;
        let sources = PyList::empty(py);
        for source in &self.sources {
            sources.append((source.name.as_str(), PyBytes::new(py, &source.bytes)))?;
        }
        let kms = pyo3::types::PyBool::new(py, self.kms).to_owned().into_any();
        PyTuple::new(
            py,
            [
                rebuild,
                PyTuple::new(py, [sources.into_any(), kms])?.into_any(),
            ],
        )
    }

    #[staticmethod]
    #[pyo3(signature = (sources, kms = false))]
    fn _from_pickle(sources: Vec<(String, Vec<u8>)>, kms: bool) -> PyResult<Self> {
        Ok(Self::from_sources(
            sources
                .into_iter()
                .map(|(name, bytes)| Source {
                    name,
                    bytes: Arc::new(Zeroizing::new(bytes)),
                })
                .collect(),
            kms,
        )?)
    }
}

/// A list of strings (a lone `str` is one string, not its characters).
fn strings(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if let Ok(text) = value.extract::<String>() {
        return Ok(vec![text]);
    }
    value
        .try_iter()
        .and_then(|items| items.map(|item| item?.extract::<String>()).collect())
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a str or a list of str")))
}

/// A path or a list of paths.
fn paths(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<PathBuf>> {
    if let Ok(path) = value.extract::<PathBuf>() {
        return Ok(vec![path]);
    }
    value
        .try_iter()
        .and_then(|items| items.map(|item| item?.extract::<PathBuf>()).collect())
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a path or a list of paths")))
}

/// `key=`: a [`Key`], or the path of a key file.
fn key_of(value: &Bound<'_, PyAny>) -> PyResult<request::Key> {
    if let Ok(key) = value.cast::<Key>() {
        return Ok(key.get().0.clone());
    }
    if let Ok(path) = value.extract::<PathBuf>() {
        return Ok(read_key_file(&path)?);
    }
    let hint = if value.is_instance_of::<PyBytes>() || value.is_instance_of::<PyByteArray>() {
        " (for a key's 32 raw bytes: key=paracrypt.Key.from_bytes(data))"
    } else {
        ""
    };
    Err(PyTypeError::new_err(format!(
        "key must be a paracrypt.Key or the path of a key file{hint}"
    )))
}

/// `password=`: a non-empty `str`.
fn password_of(value: &Bound<'_, PyAny>) -> PyResult<Zeroizing<String>> {
    let password = Zeroizing::new(
        value
            .extract::<String>()
            .map_err(|_| PyTypeError::new_err("password must be a str"))?,
    );
    if password.is_empty() {
        return Err(Failure::Usage("the password is empty".into()).into());
    }
    Ok(password)
}

/// `recipients=`: [`Recipients`], or a list of recipient strings.
fn recipients_of(value: &Bound<'_, PyAny>) -> PyResult<Arc<recipient::Recipients>> {
    if let Ok(recipients) = value.cast::<Recipients>() {
        return Ok(Arc::clone(&recipients.get().inner));
    }
    Ok(Recipients::new(Some(value), None)?.inner)
}

/// `identities=`: [`Identities`], a path, or a list of both.
fn identities_of(value: &Bound<'_, PyAny>) -> PyResult<Identities> {
    if let Ok(identities) = value.cast::<Identities>() {
        return Ok(identities.get().clone());
    }
    if let Ok(path) = value.extract::<PathBuf>() {
        return Ok(Identities::read(&[path])?);
    }
    let mut all: Option<Identities> = None;
    let items = value.try_iter().map_err(|_| {
        PyTypeError::new_err("identities must be paracrypt.Identities, a path or a list of them")
    })?;
    for item in items {
        let one = identities_of(&item?)?;
        all = Some(match all {
            None => one,
            Some(all) => all.join(&one)?,
        });
    }
    all.ok_or_else(|| Failure::Usage("identities is empty".into()).into())
}

/// The secret of an encryption: exactly one of `key=`, `password=`, `recipients=`.
pub fn to_encrypt(
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
) -> PyResult<Secret> {
    Ok(match (key, password, recipients) {
        (Some(key), None, None) => Secret::Key(key_of(key)?),
        (None, Some(password), None) => Secret::password(password_of(password)?.as_str()),
        (None, None, Some(recipients)) => Secret::Recipients(recipients_of(recipients)?),
        (None, None, None) => {
            return Err(Failure::from(CoreError::NoSecret { encrypting: true }).into());
        }
        _ => return Ok(usage("give one of key=, password= and recipients=")?),
    })
}

/// The secret of a decryption: exactly one of `key=`, `password=`, `identities=`.
/// The identities of an ``identities=`` argument (a path, an :class:`Identities`, or a list of
/// them), as the core takes them.
pub fn identities_arg(
    value: &Bound<'_, PyAny>,
) -> PyResult<Arc<paracrypt_core::recipient::Identities>> {
    Ok(Arc::clone(&identities_of(value)?.inner))
}

pub fn to_decrypt(
    key: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
) -> PyResult<Secret> {
    Ok(match (key, password, identities) {
        (Some(key), None, None) => Secret::Key(key_of(key)?),
        (None, Some(password), None) => Secret::password(password_of(password)?.as_str()),
        (None, None, Some(identities)) => {
            Secret::Identities(Arc::clone(&identities_of(identities)?.inner))
        }
        (None, None, None) => {
            return Err(Failure::from(CoreError::NoSecret { encrypting: false }).into());
        }
        _ => return Ok(usage("give one of key=, password= and identities=")?),
    })
}
