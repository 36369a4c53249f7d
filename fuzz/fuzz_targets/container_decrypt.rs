//! Whole container files, opened with the test vectors' key, identities and password on every
//! provider, in memory and as a stream.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    paracrypt_fuzz::container_files::open(data, data.len() as u8);
});
