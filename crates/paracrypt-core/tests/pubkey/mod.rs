//! Public-key work: Wycheproof and RFC 6979 known answers, split paths equal to the unsplit
//! ones, parallel key generation, key files.

mod ecdsa;
mod keygen;
mod keys;
mod providers;
mod rsa;
mod wycheproof;

use std::sync::OnceLock;

use paracrypt_core::pubkey::rsa::RsaPrivateKey;

pub use super::raw::{data, with_threads};

/// One RSA-2048 key shared by the tests of this binary (generation takes a while).
pub fn rsa2048() -> &'static RsaPrivateKey {
    static KEY: OnceLock<RsaPrivateKey> = OnceLock::new();
    KEY.get_or_init(|| with_threads(2, || RsaPrivateKey::generate(2048).unwrap()))
}
