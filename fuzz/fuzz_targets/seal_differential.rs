//! Containers and age files sealed on every provider: the same bytes from each, each opens
//! the others' at any thread count, encrypt → decrypt is the identity, and any single-byte
//! change or truncation is rejected.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: paracrypt_fuzz::differential::Sealing| {
    paracrypt_fuzz::differential::seal(&input);
});
