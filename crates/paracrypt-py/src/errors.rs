//! The core's errors as Python exceptions (`paracrypt/_errors.py` defines the classes), and
//! panics caught before they reach Python.

use std::any::Any;

use paracrypt_core::{Error as CoreError, ErrorKind, HeaderFault};
use pyo3::prelude::*;

/// `EEXIST` (on Linux, as on the BSDs and macOS): an output that exists.
const EEXIST: i32 = 17;

/// Why a call failed, before it becomes a Python exception (which needs the interpreter: the
/// work runs without it).
#[derive(Debug)]
pub enum Failure {
    /// The core's error.
    Core(CoreError),
    /// A request the binding refuses (an argument combination, a name), as `UsageError`.
    Usage(String),
    /// Reading or writing failed outside the core (the output's temporary file, its commit).
    Io(String, std::io::Error),
    /// A Rust panic, caught: a bug, reported as a `paracrypt.Error` instead of unwinding into
    /// Python.
    Panic(String),
    /// A Python exception raised by Python code the work called (a file object, a callback).
    Python(PyErr),
}

impl From<CoreError> for Failure {
    fn from(error: CoreError) -> Self {
        Failure::Core(error)
    }
}

impl From<paracrypt_core::ChunkError> for Failure {
    fn from(error: paracrypt_core::ChunkError) -> Self {
        Failure::Core(error.source)
    }
}

impl From<PyErr> for Failure {
    fn from(error: PyErr) -> Self {
        Failure::Python(error)
    }
}

/// A usage failure with `message`.
pub fn usage<T>(message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure::Usage(message.into()))
}

/// The message of a caught panic.
pub fn panic_message(payload: Box<dyn Any + Send>) -> Failure {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    Failure::Panic(format!("internal error (a bug in paracrypt): {message}"))
}

/// What failed under a tree's naming: a file of a tree fails with its cause's class, chunk and
/// OS error, its message naming the file.
fn cause(error: &CoreError) -> &CoreError {
    match error {
        CoreError::InTree { source, .. } => cause(source),
        error => error,
    }
}

/// The exception class of a core error: by its kind, refined by what failed.
fn class_of(error: &CoreError) -> &'static str {
    let error = cause(error);
    match error.kind() {
        ErrorKind::Usage => "UsageError",
        ErrorKind::Io => "IoError",
        ErrorKind::Internal => "ProviderError",
        ErrorKind::Signature => "SignatureError",
        ErrorKind::Data => match error {
            CoreError::WrongKey
            | CoreError::WrongSecretKind { .. }
            | CoreError::NoIdentityMatches { .. }
            | CoreError::PluginRefused { .. }
            | CoreError::BadPassword { .. }
            | CoreError::SaltedFile => "WrongKeyError",
            CoreError::ChunkAuth { .. } | CoreError::Header(HeaderFault::Mac) => {
                "AuthenticationError"
            }
            CoreError::TreeDiffers(_) => "TreeChangedError",
            CoreError::NotAContainer
            | CoreError::NotEncrypted
            | CoreError::OpensslFile
            | CoreError::UnknownFormat
            | CoreError::UnsupportedVersion(_)
            | CoreError::Header(_)
            | CoreError::Truncated { .. }
            | CoreError::TruncatedAfter { .. }
            | CoreError::TrailingData { .. }
            | CoreError::TruncatedAfterHeader
            | CoreError::AgeHeader(_)
            | CoreError::UnsupportedAgeVersion(_)
            | CoreError::Armor(_)
            | CoreError::EmptyLastChunk { .. }
            | CoreError::NotSalted
            | CoreError::TooShort { .. }
            | CoreError::PartialBlock { .. } => "FormatError",
            _ => "DataError",
        },
        // A kind this build does not know yet: the base class.
        _ => "Error",
    }
}

/// The chunk a core error names.
fn chunk_of(error: &CoreError) -> Option<u64> {
    match cause(error) {
        CoreError::ChunkAuth { index }
        | CoreError::Truncated { index }
        | CoreError::TruncatedAfter { index }
        | CoreError::TrailingData { index }
        | CoreError::EmptyLastChunk { index }
        | CoreError::ChunkSignature { index }
        | CoreError::ChunkMismatch { index, .. } => Some(*index),
        _ => None,
    }
}

/// An instance of `paracrypt.<class>` with `message` (and, for `IoError`, the OS error number
/// first, as `OSError` takes it).
fn exception(
    py: Python<'_>,
    class: &str,
    message: String,
    errno: Option<i32>,
    chunk: Option<u64>,
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = py.import("paracrypt._errors")?.getattr(class)?;
        let value = match errno {
            Some(errno) => class.call1((errno, message.clone()))?,
            None => class.call1((message.clone(),))?,
        };
        if let Some(chunk) = chunk {
            value.setattr("chunk", chunk)?;
        }
        Ok(PyErr::from_value(value))
    })();
    made.unwrap_or_else(|e| e)
}

/// An instance of `paracrypt.<class>` with `message` and the attributes `attributes`.
pub fn exception_with(
    py: Python<'_>,
    class: &str,
    message: String,
    attributes: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    let error = exception(py, class, message, None, None);
    let value = error.value(py);
    for (name, attribute) in attributes {
        if let Err(e) = value.setattr(*name, attribute) {
            return e;
        }
    }
    error
}

/// The Python exception an I/O error carries: raised by a Python file object that the work
/// read or wrote ([`Failure::from_io`]).
fn python_cause(py: Python<'_>, error: &std::io::Error) -> Option<PyErr> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<PyErr>())
        .map(|e| e.clone_ref(py))
}

impl Failure {
    /// An error of a `Read` or `Write` adapter: the core's error or a Python file object's
    /// exception it carries, else `context` and the error.
    pub fn from_io(context: &str, error: std::io::Error) -> Self {
        if error
            .get_ref()
            .is_some_and(|inner| inner.is::<CoreError>() || inner.is::<PyErr>())
        {
            let inner = error.into_inner().expect("checked above");
            return match inner.downcast::<CoreError>() {
                Ok(core) => Failure::Core(*core),
                Err(other) => match other.downcast::<PyErr>() {
                    Ok(python) => Failure::Python(*python),
                    Err(other) => Failure::Io(context.into(), std::io::Error::other(other)),
                },
            };
        }
        Failure::Io(context.into(), error)
    }

    /// The Python exception.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Core(CoreError::Io { source, .. }) if python_cause(py, &source).is_some() => {
                python_cause(py, &source).expect("checked")
            }
            Failure::Io(_, error) if python_cause(py, &error).is_some() => {
                python_cause(py, &error).expect("checked")
            }
            // Each file named in `changes`, as `verify_tree` lists them.
            Failure::Core(CoreError::TreeDiffers(failures)) => {
                let changes: Vec<String> = failures.iter().map(ToString::to_string).collect();
                let message = CoreError::TreeDiffers(failures).to_string();
                match pyo3::types::PyList::new(py, &changes) {
                    Ok(list) => exception_with(
                        py,
                        "TreeChangedError",
                        message,
                        &[("changes", list.into_any())],
                    ),
                    Err(e) => e,
                }
            }
            Failure::Core(error) => {
                let errno = match cause(&error) {
                    CoreError::Io { source, .. } => source.raw_os_error(),
                    _ => None,
                };
                let class = class_of(&error);
                exception(py, class, error.text(), errno, chunk_of(&error))
            }
            Failure::Usage(message) => exception(py, "UsageError", message, None, None),
            Failure::Io(context, error) => {
                let errno = error
                    .raw_os_error()
                    .or((error.kind() == std::io::ErrorKind::AlreadyExists).then_some(EEXIST));
                let message = match error.raw_os_error() {
                    Some(_) => format!("{context}: {}", paracrypt_core::io_text(&error)),
                    None => context,
                };
                exception(py, "IoError", message, errno, None)
            }
            Failure::Panic(message) => exception(py, "Error", message, None, None),
            Failure::Python(error) => error,
        }
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> PyErr {
        Python::attach(|py| failure.into_pyerr(py))
    }
}
