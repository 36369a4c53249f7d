//! Key files: paracrypt keys, PEM/DER RSA and EC keys, OpenSSH keys, age identities,
//! recipients files and recipient lines.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    paracrypt_fuzz::keys::parse_all(data);
});
