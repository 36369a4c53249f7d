//! Raw `openssl enc` ciphers on every provider, in chunks, at any thread count: the same bytes
//! from each, equal to the one-shot reference, and decryption gives the input back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: paracrypt_fuzz::differential::Raw| {
    paracrypt_fuzz::differential::raw(&input);
});
