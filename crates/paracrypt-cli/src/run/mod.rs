//! The runners that carry out a [`JobSpec`]: on this machine, or across the ranks of an MPI
//! job (`--distributed`).

pub mod distributed;
mod head;
pub mod local;

use std::process::ExitCode;

use std::path::Path;

use anyhow::Result;
use paracrypt_core::provider::Provider;
use paracrypt_core::request::{Request, Resolved};

use crate::flags::DistributedFlags;
use crate::spec::{JobSpec, Operation};

/// Runs `spec` locally, or across MPI ranks when `--distributed` was given, computing on
/// `provider` (`--provider`). A distributed run takes the spec's resolution even when it
/// failed: every rank resolves its own flags, and a failure on any of them must be agreed on,
/// then reported once.
pub fn job(
    distributed: DistributedFlags,
    provider: Provider,
    spec: Result<JobSpec>,
) -> Result<ExitCode> {
    if distributed.distributed {
        distributed::run(distributed, provider, spec)
    } else {
        local::run(spec?, provider)
    }
}

/// Prints the request's warnings and the spec's own (unless `-q`).
fn warn_all(spec: &JobSpec, request: &Request) {
    if !spec.quiet {
        for warning in request.warnings().iter().chain(&spec.warnings) {
            crate::exit::warn(warning);
        }
    }
}

/// A refusal of the core's request, with the command line's flags where they help: a key given
/// for an `openssl enc` password file says how to give the password.
fn hint(error: paracrypt_core::Error, spec: &JobSpec, input: &Path) -> anyhow::Error {
    match (&error, &spec.operation) {
        (paracrypt_core::Error::SaltedFile, Operation::Raw { cipher, .. }) => {
            let file = match input {
                path if path == Path::new("-") => "FILE".to_string(),
                path => path.display().to_string(),
            };
            crate::exit::Hinted {
                error,
                hint: format!(
                    "`paracrypt raw -d -c {cipher} --password-file PASSWORD_FILE --pbkdf2 {file}` \
                     (with the --iter and --md it was encrypted with; without --pbkdf2 for a file \
                     from `openssl enc` without -pbkdf2)"
                ),
            }
            .into()
        }
        _ => error.into(),
    }
}

/// After a decryption that succeeded: who signed the file, when it was a signed container, as
/// a line for stderr.
fn signer_note(resolved: &Resolved) -> Option<String> {
    let signer = resolved.signer()?;
    Some(if signer.required {
        signer.note()
    } else {
        format!(
            "every chunk is signed by {} (not checked against a key you trust: give it with \
             --verify-with PUBKEY)",
            signer.key.fingerprint()
        )
    })
}
