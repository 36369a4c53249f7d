//! Errors and warnings on stderr, and the exit codes errors map to. The libraries sort their
//! errors into kinds ([`ErrorKind`]); only here do kinds become exit codes.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (also when stdout is closed early by the reader, e.g. `| head`) |
//! | 1 | the work failed: unreadable input, bad padding, authentication failure, I/O error |
//! | 2 | usage: bad arguments, unknown cipher, bad hex, wrong key or IV length, a malformed key file, refused output |
//! | 3 | `--distributed`: nothing progressed for `--stall-timeout` seconds; the job was aborted (`mpirun`'s status) |
//! | 4 | internal: a cryptographic provider (aws-lc, OpenSSL, RustCrypto) failed inside, e.g. could not allocate ([`ErrorKind::Internal`]); neither the request nor the data is at fault |
//! | 5 | a signature check failed: the data is not proven to come from the expected signer (altered data or signature, another signer, or no signature where one was required) |
//! | 6 | `--recursive`: the tree was done in part: the files named on stderr failed (or were not started), every other file is complete |
//! | 128 + N | killed by signal N (130 for Ctrl-C): nothing is left behind (see [`crate::interrupt`]) |

use std::process::ExitCode;

use paracrypt_core::ErrorKind;

/// An error in how paracrypt was called (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A core error with the command line's hint after it (how to do it with its flags).
#[derive(Debug, thiserror::Error)]
#[error("{error}: {hint}")]
pub struct Hinted {
    /// The core's error, whose kind is this error's.
    pub error: paracrypt_core::Error,
    /// What to run instead.
    pub hint: String,
}

/// The status a `--distributed` job stalled for `--stall-timeout` is aborted with (through
/// `MPI_Abort`, so it is the status `mpirun` exits with).
#[cfg(feature = "mpi")]
pub const STALLED: u8 = 3;

/// Shorthand to fail with a usage error.
pub fn usage<T>(message: impl Into<String>) -> anyhow::Result<T> {
    Err(Usage(message.into()).into())
}

/// What kind of failure `error` is: a usage error when any of its causes is one (ours, or a
/// library's), an I/O error when any cause is about I/O, an internal one when a provider
/// failed inside, else a failure of the data.
pub fn kind(error: &anyhow::Error) -> ErrorKind {
    let kinds: Vec<ErrorKind> = error
        .chain()
        .filter_map(|cause| {
            if cause.is::<Usage>() {
                Some(ErrorKind::Usage)
            } else if let Some(core) = cause.downcast_ref::<paracrypt_core::Error>() {
                Some(core.kind())
            } else if let Some(hinted) = cause.downcast_ref::<Hinted>() {
                Some(hinted.error.kind())
            } else if let Some(chunk) = cause.downcast_ref::<paracrypt_core::ChunkError>() {
                Some(chunk.kind())
            } else if let Some(pubkey) = cause.downcast_ref::<paracrypt_core::pubkey::Error>() {
                // The public-key work's errors have no kind of their own; its provider's
                // failure is the core's.
                matches!(pubkey, paracrypt_core::pubkey::Error::Provider { .. })
                    .then_some(ErrorKind::Internal)
            } else if cause.is::<std::io::Error>() {
                Some(ErrorKind::Io)
            } else {
                mpi_kind(cause).or_else(|| store_kind(cause))
            }
        })
        .collect();
    [
        ErrorKind::Usage,
        ErrorKind::Io,
        ErrorKind::Internal,
        ErrorKind::Signature,
    ]
    .into_iter()
    .find(|kind| kinds.contains(kind))
    .unwrap_or(ErrorKind::Data)
}

#[cfg(feature = "mpi")]
fn mpi_kind(cause: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    cause
        .downcast_ref::<paracrypt_mpi::Error>()
        .map(|e| e.kind())
}

#[cfg(not(feature = "mpi"))]
fn mpi_kind(_: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    None
}

#[cfg(feature = "s3")]
fn store_kind(cause: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    cause
        .downcast_ref::<paracrypt_store::Error>()
        .map(|e| e.core_kind())
}

#[cfg(not(feature = "s3"))]
fn store_kind(_: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    None
}

/// The status a provider's own failure exits with ([`ErrorKind::Internal`]).
pub const INTERNAL: u8 = 4;

/// The status of a failed signature check: the data is not proven to come from the signer.
pub const NOT_SIGNED: u8 = 5;

/// The status of a tree done in part (`--recursive`): some files failed, every other file is
/// complete. A tree of which nothing was done exits with its failure's own status.
pub const PARTIAL: u8 = 6;

/// The exit status of a kind of failure: 2 for a usage error, 4 for an internal one, 5 for a
/// failed signature check, 1 otherwise.
pub fn code_of(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Usage => 2,
        ErrorKind::Internal => INTERNAL,
        ErrorKind::Signature => NOT_SIGNED,
        _ => 1,
    }
}

/// Prints one line on stderr, as `eprintln!` does but in one `write`: `eprintln!` writes each
/// piece of its format apart, and under `mpirun` (every rank's stderr forwarded through a pipe)
/// or beside another writer to the same stderr, another process's output can land inside the
/// line. A line under `PIPE_BUF` (4 KiB) written at once reaches a pipe whole. A stderr that
/// cannot be written is no reason to fail (or to panic, as `eprintln!` does).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::exit::say_line(::std::format_args!($($arg)*))
    };
}
pub(crate) use say;

/// What [`say!`] runs.
pub(crate) fn say_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut line = args.to_string();
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Prints a warning line on stderr.
pub fn warn(message: impl std::fmt::Display) {
    say!("paracrypt: warning: {message}");
}

/// Prints `error` on one line to stderr and returns its exit code.
pub fn report(error: &anyhow::Error) -> ExitCode {
    let broken_pipe = error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    crate::interrupt::pending().clear_bar();
    say!("paracrypt: error: {}", one_line(error));
    ExitCode::from(code(error))
}

/// The exit status `error` maps to (see [`code_of`]).
pub fn code(error: &anyhow::Error) -> u8 {
    code_of(kind(error))
}

/// The error and its causes, joined by `: `, skipping a cause whose text the message already
/// ends with (our core errors print their source themselves).
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            paracrypt_core::io_text(io)
        } else if let Some(core) = cause.downcast_ref::<paracrypt_core::Error>() {
            core.text()
        } else {
            cause.to_string()
        };
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind has its own status; a provider's failure is not bad data (1), wherever it
    /// comes from and whatever context wraps it.
    #[test]
    fn every_kind_has_its_status() {
        let core = |e: paracrypt_core::Error| anyhow::Error::from(e).context("decrypting x");
        assert_eq!(code(&core(paracrypt_core::Error::WrongKey)), 1);
        assert_eq!(code(&usage::<()>("bad").unwrap_err()), 2);
        let provider = paracrypt_core::Error::Provider {
            what: "EVP_CIPHER_CTX_new",
        };
        assert_eq!(kind(&core(provider)), ErrorKind::Internal);
        let provider = paracrypt_core::Error::Provider { what: "x" };
        assert_eq!(code(&core(provider)), 4);
        let chunk = paracrypt_core::ChunkError {
            index: 3,
            source: paracrypt_core::Error::Provider { what: "x" },
        };
        assert_eq!(code(&anyhow::Error::from(chunk)), 4);
        let pubkey = paracrypt_core::pubkey::Error::Provider { what: "signing" };
        assert_eq!(code(&anyhow::Error::from(pubkey)), 4);
        let io = paracrypt_core::Error::io("writing", std::io::Error::other("disk full"));
        assert_eq!(code(&core(io)), 1);
    }
}
