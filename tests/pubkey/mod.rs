//! Public-key work: Wycheproof and RFC 6979 known answers, split paths equal to the unsplit
//! ones, parallel key generation, key files.

mod ecdsa;
mod keygen;
mod keys;
mod rsa;
mod wycheproof;

use std::sync::OnceLock;

use paracrypt::pubkey::rsa::RsaPrivateKey;

/// Runs `f` in a pool of `threads` threads.
pub fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// One RSA-2048 key shared by the tests of this binary (generation takes a while).
pub fn rsa2048() -> &'static RsaPrivateKey {
    static KEY: OnceLock<RsaPrivateKey> = OnceLock::new();
    KEY.get_or_init(|| with_threads(2, || RsaPrivateKey::generate(2048).unwrap()))
}

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect()
}
