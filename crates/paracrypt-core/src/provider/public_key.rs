//! What the public-key entries of the [table](super::Table) speak, defined here so that the
//! provider depends on nothing above it (as rustls's `crypto/` module): the digest every
//! signature signs, how a split operation runs, and the RustCrypto split RSA key. The
//! public-key API re-exports them (`paracrypt_core::pubkey::Digest`,
//! `paracrypt_core::pubkey::crt::{CrtKey, Parallelism}`,
//! `paracrypt_core::pubkey::ecdsa::EcdsaVerify`); their errors are the public-key
//! error of `crate::error`, below both.

pub use super::rustcrypto::crt::CrtKey;

/// A SHA-256 digest: what every signature here signs.
pub type Digest = [u8; 32];

/// How the two CRT halves run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Parallelism {
    /// Both halves under `rayon::join`: on two threads when the pool has them.
    #[default]
    Split,
    /// Both halves one after the other on the calling thread (the same code path).
    Serial,
}

impl Parallelism {
    /// Runs `a` and `b`, in parallel or one after the other.
    pub(crate) fn join<A, B, RA, RB>(self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        match self {
            Parallelism::Split => rayon::join(a, b),
            Parallelism::Serial => (a(), b()),
        }
    }
}

/// How a P-256 signature is verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcdsaVerify {
    /// p256's own verification: `u1·G + u2·Q` in one interleaved pass.
    Lincomb,
    /// `u1·G ‖ u2·Q` on two threads under `rayon::join`.
    Split,
}

impl EcdsaVerify {
    /// The faster path in the current Rayon pool: [`Split`](Self::Split) with two threads or
    /// more, [`Lincomb`](Self::Lincomb) on one (see docs/guide/performance.md).
    pub fn for_current_pool() -> Self {
        if rayon::current_num_threads() > 1 {
            EcdsaVerify::Split
        } else {
            EcdsaVerify::Lincomb
        }
    }
}
