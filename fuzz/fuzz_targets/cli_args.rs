//! Command-line arguments the library parses: sizes, `--range`, chunk sizes and names.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        paracrypt_fuzz::args::parse_all(text);
    }
});
