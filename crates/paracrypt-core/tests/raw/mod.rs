//! Raw ciphers: known answers, parallel equals serial on every driver, input checks.

mod kat;
mod large;
mod parallel;
mod providers;
mod salted;
mod validation;

use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};
use paracrypt_core::{Recipe, engine};

/// A cipher with a fixed key (its smallest accepted length, at least 16 bytes) and IV.
pub fn cipher(name: RawCipherName) -> RawCipher {
    let (min, max) = name.algorithm().key_lengths();
    let len = if min == max { min } else { 16 };
    let key: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37) ^ 0x5c).collect();
    let iv: Vec<u8> = (0..name.iv_len() as u8).map(|i| 0xf0 ^ i).collect();
    RawCipher::new(name, &key, (!iv.is_empty()).then_some(&iv[..])).unwrap()
}

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u32) -> Vec<u8> {
    let mut x = 0x9e37_79b9u32 ^ seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// A chunk size the test knows to be valid.
pub fn chunk_size(bytes: usize) -> ChunkSize {
    ChunkSize::new(bytes).unwrap()
}

/// Runs `cipher` in `direction` over `data` in place (the engine's in-place driver), in chunks
/// of `chunk_size`, on the default provider, in the current pool.
pub fn process(
    cipher: &RawCipher,
    direction: Direction,
    data: &mut Vec<u8>,
    chunk_size: ChunkSize,
) -> paracrypt_core::Result<()> {
    process_on(cipher, direction, data, chunk_size, Provider::default())
}

/// [`process`] on `provider`.
pub fn process_on(
    cipher: &RawCipher,
    direction: Direction,
    data: &mut Vec<u8>,
    chunk_size: ChunkSize,
    provider: Provider,
) -> paracrypt_core::Result<()> {
    let recipe = cipher.recipe(direction, chunk_size);
    let job = recipe.first_job(&mut &[][..], Some(data.len() as u64), provider)?;
    Ok(engine::process_in_place(&job, data)?)
}

/// Runs `f` in a pool of `threads` threads.
pub fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Whether the external `tool` is installed (`tool ARG` runs). Outside CI a missing tool skips
/// the test that needs it, which says so; in CI it fails the test (scripts/test.sh installs
/// them).
pub fn have(tool: &str, arg: &str) -> bool {
    let found = std::process::Command::new(tool).arg(arg).output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is required in CI (scripts/test.sh installs it)"
        );
        eprintln!("{tool} not found: skipping");
    }
    found
}
