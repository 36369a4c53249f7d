//! Exit codes and how errors map to them.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (also when stdout is closed early by the reader, e.g. `| head`) |
//! | 1 | the work failed: unreadable input, bad padding, authentication failure, I/O error |
//! | 2 | usage: bad arguments, unknown cipher, bad hex, wrong key or IV length, a malformed key file, refused output |
//! | 128 + N | killed by signal N (130 for Ctrl-C): nothing is left behind (see [`crate::interrupt`]) |

use std::process::ExitCode;

use paracrypt_core::Error as CoreError;

/// An error in how paracrypt was called (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Shorthand to fail with a usage error.
pub fn usage<T>(message: impl Into<String>) -> anyhow::Result<T> {
    Err(Usage(message.into()).into())
}

/// Whether a core error is about the arguments rather than the data.
fn is_usage(error: &CoreError) -> bool {
    matches!(
        error,
        CoreError::UnknownCipher { .. }
            | CoreError::KeyLength { .. }
            | CoreError::IvLength { .. }
            | CoreError::MissingIv { .. }
            | CoreError::UnexpectedIv { .. }
            | CoreError::ChunkSize { .. }
            | CoreError::KeyFile(_)
    )
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
    eprintln!("paracrypt: error: {}", one_line(error));
    ExitCode::from(code(error))
}

/// The exit status `error` maps to: 2 for a usage error, 1 otherwise.
pub fn code(error: &anyhow::Error) -> u8 {
    let usage = error.chain().any(|cause| {
        cause.is::<Usage>() || cause.downcast_ref::<CoreError>().is_some_and(is_usage)
    });
    if usage { 2 } else { 1 }
}

/// The error and its causes, joined by `: `, skipping a cause whose text the message already
/// ends with (our core errors print their source themselves).
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
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
