#![doc = include_str!("../README.md")]
//!
//! ## The facade crate
//!
//! This crate re-exports `paracrypt-core` (the chunk plan and engine, raw ciphers, the
//! authenticated container and parallel public-key work), so a dependency on `paracrypt` is all
//! a Rust project needs:
//!
//! ```
//! use paracrypt::plan::ChunkSize;
//! use paracrypt::raw::{Direction, RawCipher, RawCipherName};
//! use paracrypt::Runner;
//!
//! let cipher = RawCipher::new(RawCipherName::Aes256Ctr, &[7; 32], Some(&[0; 16]))?;
//! let recipe = cipher.recipe(Direction::Encrypt, ChunkSize::new(64 * 1024)?);
//! let sealed = Runner::new().vec(&recipe, &[0u8; 100_000])?;
//! # Ok::<(), paracrypt::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use paracrypt_core::*;

/// The user guide's Rust examples, compiled and run as doctests (`cargo test --doc -p
/// paracrypt`), so the guide cannot drift from the API.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../docs/guide/rust.md")]
    pub struct Rust;
    #[doc = include_str!("../docs/guide/pubkey.md")]
    pub struct Pubkey;
}
