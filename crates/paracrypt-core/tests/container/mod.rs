//! The authenticated container: round trips, reproducibility, failures, vectors.

mod failures;
#[cfg(any(feature = "aws-lc", feature = "openssl"))]
mod providers;
mod recipients;
mod roundtrip;
mod signed;
mod testkit;
mod wycheproof_aead;

use paracrypt_core::container::{Key, SALT_LEN};

/// The key every container test uses.
pub fn key() -> Key {
    Key::from_bytes(*b"paracrypt test key, 32 bytes ok!")
}

/// The salt every reproducible test uses.
pub const SALT: [u8; SALT_LEN] = [0x5a; SALT_LEN];

pub use super::raw::{chunk_size, data, with_threads};

/// A temporary file holding `bytes`.
pub fn temp_with(bytes: &[u8]) -> std::fs::File {
    use std::io::Write;
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    file
}

/// Everything `file` holds, from its start.
pub fn read_back(mut file: std::fs::File) -> Vec<u8> {
    use std::io::{Read, Seek};
    let mut out = Vec::new();
    file.rewind().unwrap();
    file.read_to_end(&mut out).unwrap();
    out
}
