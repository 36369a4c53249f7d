//! Signature files (`paracrypt verify`): parsed three ways that agree, written back, verified.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    paracrypt_fuzz::signatures::parse(data);
});
