//! Failures, local and agreed.

use paracrypt_core::{ChunkError, ErrorKind};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure on this rank, before the ranks agree on which one to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The chunk that failed, when the failure is about one. Among all ranks' failures, the
    /// ones without a chunk (setup) come first, then the lowest chunk.
    pub chunk: Option<u64>,
    /// The one-line message to report.
    pub message: String,
    /// What kind of failure it is (the caller decides what each kind means, e.g. an exit code).
    pub kind: ErrorKind,
}

impl Failure {
    /// A failure about no particular chunk.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            chunk: None,
            message: message.into(),
            kind,
        }
    }

    /// The order in which failures are reported: setup first, then by chunk.
    pub(crate) fn key(&self) -> u64 {
        self.chunk
            .map_or(0, |c| c.saturating_add(1).min(u64::MAX - 1))
    }
}

impl From<&paracrypt_core::Error> for Failure {
    /// A core error about no particular chunk (making a job, say).
    fn from(error: &paracrypt_core::Error) -> Self {
        Failure::new(error.kind(), error.to_string())
    }
}

impl From<&ChunkError> for Failure {
    /// The engine's failure of one chunk.
    fn from(failed: &ChunkError) -> Self {
        Failure {
            chunk: Some(failed.index),
            message: failed.to_string(),
            kind: failed.kind(),
        }
    }
}

/// The failure every rank agreed to report: the first one in [`Failure`] order, from the lowest
/// rank that had it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankFailure {
    /// The rank where it happened.
    pub rank: usize,
    /// The chunk, when the failure is about one.
    pub chunk: Option<u64>,
    /// The failing rank's one-line message.
    pub message: String,
    /// The failing rank's kind of failure.
    pub kind: ErrorKind,
}

/// What can go wrong across ranks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// MPI could not be started (or was already started in this process).
    #[error("MPI could not be initialised (start under mpirun or srun, once per process)")]
    Init,
    /// A rank failed; every rank holds the same value.
    #[error("rank {}: {}", .0.rank, .0.message)]
    Rank(RankFailure),
}

impl Error {
    /// The agreed failure, if this is one.
    pub fn rank_failure(&self) -> Option<&RankFailure> {
        match self {
            Error::Rank(failure) => Some(failure),
            Error::Init => None,
        }
    }

    /// What kind of failure this is: the failing rank's, or [`ErrorKind::Io`] when MPI did not
    /// start.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Rank(failure) => failure.kind,
            Error::Init => ErrorKind::Io,
        }
    }
}

/// A kind as it crosses MPI.
pub(crate) fn kind_to_wire(kind: ErrorKind) -> u64 {
    match kind {
        ErrorKind::Usage => 0,
        ErrorKind::Io => 2,
        ErrorKind::Internal => 3,
        ErrorKind::Signature => 4,
        _ => 1,
    }
}

/// A kind back from MPI.
pub(crate) fn kind_from_wire(wire: u64) -> ErrorKind {
    match wire {
        0 => ErrorKind::Usage,
        2 => ErrorKind::Io,
        3 => ErrorKind::Internal,
        4 => ErrorKind::Signature,
        _ => ErrorKind::Data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_cross_the_wire() {
        for kind in [
            ErrorKind::Usage,
            ErrorKind::Data,
            ErrorKind::Io,
            ErrorKind::Internal,
            ErrorKind::Signature,
        ] {
            assert_eq!(kind_from_wire(kind_to_wire(kind)), kind);
        }
    }

    #[test]
    fn setup_failures_come_before_chunk_failures() {
        let setup = Failure::new(ErrorKind::Usage, "no key");
        let chunk = Failure::from(&ChunkError {
            index: 0,
            source: paracrypt_core::Error::ChunkAuth { index: 0 },
        });
        assert_eq!(chunk.chunk, Some(0));
        assert_eq!(chunk.kind, ErrorKind::Data);
        assert!(setup.key() < chunk.key());
    }
}
