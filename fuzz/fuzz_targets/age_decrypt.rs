//! Whole age files, binary and armored, opened with the CCTV vectors' identities (or their
//! passphrase) on every provider, in memory and as a stream.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    paracrypt_fuzz::age_files::open(data, data.len() as u8);
});
