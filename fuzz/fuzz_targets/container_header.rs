//! Container headers (versions 1 and 2) and their recipient blocks, without a key: as read,
//! then with the checksum mended so that the fields behind it are reached.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paracrypt_fuzz::container_files::{mend_checksum, parse_header};

fuzz_target!(|data: &[u8]| {
    parse_header(data);
    let mut mended = data.to_vec();
    mend_checksum(&mut mended);
    parse_header(&mended);
});
