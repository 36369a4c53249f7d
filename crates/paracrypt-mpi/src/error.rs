//! Failures, local and agreed.

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The code [`run`](crate::run) gives the failures it finds (a chunk that failed, an I/O
/// error): "the work failed", as opposed to a usage error the caller may code otherwise.
pub const WORK_FAILED: i32 = 1;

/// A failure on this rank, before the ranks agree on which one to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The chunk that failed, when the failure is about one. Among all ranks' failures, the
    /// ones without a chunk (setup) come first, then the lowest chunk.
    pub chunk: Option<u64>,
    /// The one-line message to report.
    pub message: String,
    /// A code chosen by the caller (the CLI uses its exit status), carried to every rank.
    pub code: i32,
}

impl Failure {
    /// A failure about no particular chunk.
    pub fn new(message: impl Into<String>, code: i32) -> Self {
        Failure {
            chunk: None,
            message: message.into(),
            code,
        }
    }

    /// A failure of chunk `chunk` found by the engine.
    pub(crate) fn chunk(chunk: u64, error: &paracrypt_core::Error) -> Self {
        Failure {
            chunk: Some(chunk),
            message: error.to_string(),
            code: WORK_FAILED,
        }
    }

    /// The order in which failures are reported: setup first, then by chunk.
    pub(crate) fn key(&self) -> u64 {
        self.chunk
            .map_or(0, |c| c.saturating_add(1).min(u64::MAX - 1))
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
    /// The failing rank's code (see [`Failure::code`]).
    pub code: i32,
}

/// What can go wrong across ranks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// MPI could not be started (or was already started in this process).
    #[error("MPI could not be initialised (start paracrypt with mpirun or srun, once per process)")]
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
}
