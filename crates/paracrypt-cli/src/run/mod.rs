//! The runners that carry out a [`JobSpec`]: on this machine, or across the ranks of an MPI
//! job (`--distributed`).

pub mod distributed;
mod head;
pub mod local;

use std::process::ExitCode;

use anyhow::Result;
use paracrypt_core::provider::Provider;

use crate::flags::DistributedFlags;
use crate::spec::JobSpec;

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

/// Prints the spec's warnings (unless `-q`).
fn warn_all(spec: &JobSpec) {
    if !spec.quiet {
        for warning in &spec.warnings {
            crate::exit::warn(warning);
        }
    }
}
