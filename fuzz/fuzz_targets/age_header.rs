//! age headers and recipient stanzas (as in a header, and as a container's recipient block).
#![no_main]

use libfuzzer_sys::fuzz_target;
use paracrypt_fuzz::age_files::{parse_header, parse_stanzas};

fuzz_target!(|data: &[u8]| {
    parse_header(data);
    parse_stanzas(data);
});
