//! openssl `enc` password files (`Salted__`): the header, then decryption with the fuzz
//! password under the cipher, key derivation and chunking that the input's first five bytes
//! pick, on every provider. The rest of the input is the file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((choices, file)) = data.split_first_chunk::<5>() {
        let [cipher, kdf, nopad, chunk, threads] = *choices;
        paracrypt_fuzz::openssl::open_salted(cipher, kdf, nopad & 1 == 0, chunk, file, threads);
    }
});
