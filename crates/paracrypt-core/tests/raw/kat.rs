//! Known-answer tests: each vector names its published source, and runs without padding
//! through both directions at one and three threads. These tests do not run `openssl`; the
//! interop with `openssl enc` (padding included) is tested against the real binary in
//! `crates/paracrypt-cli/tests/cli/raw.rs`.

use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};

use super::{chunk_size, process, with_threads};

/// Encrypts `plaintext` without padding on 1 and 3 threads with a one-block chunk size (so every
/// block is its own chunk and the chunk seams are exercised), checks `ciphertext`, and decrypts.
#[track_caller]
fn check(name: &str, key: &str, iv: &str, plaintext: &str, ciphertext: &str) {
    let name: RawCipherName = name.parse().unwrap();
    let key = hex::decode(key).unwrap();
    let iv = hex::decode(iv).unwrap();
    let cipher = RawCipher::new(name, &key, (!iv.is_empty()).then_some(&iv[..]))
        .unwrap()
        .with_padding(false);
    let plaintext = hex::decode(plaintext).unwrap();
    let expected = hex::decode(ciphertext).unwrap();
    for threads in [1, 3] {
        for chunk in [16, 4096] {
            let mut buf = plaintext.clone();
            with_threads(threads, || {
                process(&cipher, Direction::Encrypt, &mut buf, chunk_size(chunk))
            })
            .unwrap();
            assert_eq!(
                hex::encode(&buf),
                hex::encode(&expected),
                "{name} encrypt, {threads} threads, chunk {chunk}"
            );
            with_threads(threads, || {
                process(&cipher, Direction::Decrypt, &mut buf, chunk_size(chunk))
            })
            .unwrap();
            assert_eq!(
                buf, plaintext,
                "{name} decrypt, {threads} threads, chunk {chunk}"
            );
        }
    }
}

// NIST SP 800-38A, Appendix F: the four-block plaintext shared by every AES example.
const SP800_38A_PT: &str = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
                            30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";
const AES128_KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
const AES192_KEY: &str = "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b";
const AES256_KEY: &str = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
const CBC_IV: &str = "000102030405060708090a0b0c0d0e0f";
const CTR_IV: &str = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

#[test]
fn sp800_38a_f1_ecb() {
    // F.1.1, F.1.3, F.1.5
    check(
        "aes-128-ecb",
        AES128_KEY,
        "",
        SP800_38A_PT,
        "3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf43b1cd7f598ece23881b00e3ed0306887b0c785e27e8ad3f8223207104725dd4",
    );
    check(
        "aes-192-ecb",
        AES192_KEY,
        "",
        SP800_38A_PT,
        "bd334f1d6e45f25ff712a214571fa5cc974104846d0ad3ad7734ecb3ecee4eefef7afd2270e2e60adce0ba2face6444e9a4b41ba738d6c72fb16691603c18e0e",
    );
    check(
        "aes-256-ecb",
        AES256_KEY,
        "",
        SP800_38A_PT,
        "f3eed1bdb5d2a03c064b5a7e3db181f8591ccb10d410ed26dc5ba74a31362870b6ed21b99ca6f4f9f153e7b1beafed1d23304b7a39f9f3ff067d8d8f9e24ecc7",
    );
}

#[test]
fn sp800_38a_f2_cbc() {
    // F.2.1, F.2.3, F.2.5
    check(
        "aes-128-cbc",
        AES128_KEY,
        CBC_IV,
        SP800_38A_PT,
        "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b273bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7",
    );
    check(
        "aes-192-cbc",
        AES192_KEY,
        CBC_IV,
        SP800_38A_PT,
        "4f021db243bc633d7178183a9fa071e8b4d9ada9ad7dedf4e5e738763f69145a571b242012fb7ae07fa9baac3df102e008b0e27988598881d920a9e64f5615cd",
    );
    check(
        "aes-256-cbc",
        AES256_KEY,
        CBC_IV,
        SP800_38A_PT,
        "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b",
    );
}

#[test]
fn sp800_38a_f5_ctr() {
    // F.5.1, F.5.3, F.5.5
    check(
        "aes-128-ctr",
        AES128_KEY,
        CTR_IV,
        SP800_38A_PT,
        "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee",
    );
    check(
        "aes-192-ctr",
        AES192_KEY,
        CTR_IV,
        SP800_38A_PT,
        "1abc932417521ca24f2b0459fe7e6e0b090339ec0aa6faefd5ccc2c6f4ce8e941e36b26bd1ebc670d1bd1d665620abf74f78a7f6d29809585a97daec58c6b050",
    );
    check(
        "aes-256-ctr",
        AES256_KEY,
        CTR_IV,
        SP800_38A_PT,
        "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c52b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6",
    );
}

#[test]
fn ctr_counter_carries_across_all_128_bits() {
    // The counter is one 128-bit big-endian integer, as in OpenSSL: from ff..ff it wraps to
    // 00..00. Keystream block 1 is therefore AES_k(0^128), which ECB gives us to compare.
    let key = hex::decode(AES128_KEY).unwrap();
    let ctr = RawCipher::new(RawCipherName::Aes128Ctr, &key, Some(&[0xff; 16])).unwrap();
    let mut stream = vec![0u8; 32];
    process(&ctr, Direction::Encrypt, &mut stream, chunk_size(16)).unwrap();
    let ecb = RawCipher::new(RawCipherName::Aes128Ecb, &key, None)
        .unwrap()
        .with_padding(false);
    let mut blocks = [[0xffu8; 16], [0u8; 16]].concat();
    process(&ecb, Direction::Encrypt, &mut blocks, chunk_size(16)).unwrap();
    assert_eq!(stream, blocks);
}

#[test]
fn fips81_des() {
    // FIPS PUB 81, Appendix B (ECB) and C (CBC): "Now is the time for all ".
    let pt = hex::encode("Now is the time for all ");
    check(
        "des-ecb",
        "0123456789abcdef",
        "",
        &pt,
        "3fa40e8a984d48156a271787ab8883f9893d51ec4b563b53",
    );
    check(
        "des-cbc",
        "0123456789abcdef",
        "1234567890abcdef",
        &pt,
        "e5c7cdde872bf27c43e934008c389c0f683788499a7c05f6",
    );
}

#[test]
fn sp800_67_tdes() {
    // NIST SP 800-67 Rev. 1, Appendix B: three-key TDEA in ECB mode ("qufck" is in the source).
    check(
        "des-ede3",
        "0123456789abcdef23456789abcdef01456789abcdef0123",
        "",
        &hex::encode("The qufck brown fox jump"),
        "a826fd8ce53b855fcce21c8112256fe668d5c05dd9b6b900",
    );
}

#[test]
fn libdes_tdes_cbc() {
    // Eric Young's libdes `destest.c` three-key CBC vector, as OpenSSL carries it in
    // test/recipes/30-test_evp_data/evpciph_des3_common.txt ("DES EDE3 CBC tests (from
    // destest)"): "7654321 Now is the time for " and four zero bytes.
    check(
        "des-ede3-cbc",
        "0123456789abcdeff1e0d3c2b5a49786fedcba9876543210",
        "fedcba9876543210",
        "37363534333231204e6f77206973207468652074696d6520666f722000000000",
        "3fe301c962ac01d02213763c1cbd4cdc799657c064ecf5d41c673812cfde9675",
    );
}

#[test]
fn schneier_blowfish() {
    // Schneier's Blowfish test vectors (Eric Young's set, schneier.com/code/vectors.txt):
    // ECB rows, and the CBC example over "7654321 Now is the time for " plus four zero bytes.
    check(
        "bf-ecb",
        "0000000000000000",
        "",
        "0000000000000000",
        "4ef997456198dd78",
    );
    check(
        "bf-ecb",
        "ffffffffffffffff",
        "",
        "ffffffffffffffff",
        "51866fd5b85ecb8a",
    );
    check(
        "bf-ecb",
        "3000000000000000",
        "",
        "1000000000000001",
        "7d856f9a613063f2",
    );
    check(
        "bf-cbc",
        "0123456789abcdeff0e1d2c3b4a59687",
        "fedcba9876543210",
        "37363534333231204e6f77206973207468652074696d6520666f722000000000",
        "6b77b4d63006dee605b156e27403979358deb9e7154616d959f1652bd5ff92cc",
    );
}

#[test]
fn rfc6229_rc4() {
    // RFC 6229, section 2: keystream at offsets 0 and 16 for the 40- and 128-bit keys
    // (encrypting zeros yields the keystream).
    let zeros = "00".repeat(32);
    check(
        "rc4",
        "0102030405",
        "",
        &zeros,
        "b2396305f03dc027ccc3524a0a1118a86982944f18fc82d589c403a47a0d0919",
    );
    check(
        "rc4",
        "0102030405060708090a0b0c0d0e0f10",
        "",
        &zeros,
        "9ac7cc9a609d1ef7b2932899cde41b975248c4959014126a6e8a84f11d1a9e1c",
    );
}

#[test]
fn rfc6229_rc4_far_offset() {
    // RFC 6229: 40-bit key 0102030405, keystream at offset 4096.
    let mut buf = vec![0u8; 4096 + 16];
    let cipher = RawCipher::new(
        RawCipherName::Rc4,
        &hex::decode("0102030405").unwrap(),
        None,
    )
    .unwrap();
    process(&cipher, Direction::Encrypt, &mut buf, chunk_size(1024)).unwrap();
    assert_eq!(
        hex::encode(&buf[4096..]),
        "ff25b58995996707e51fbdf08b34d875"
    );
}

#[test]
fn pkcs7_padding_fills_the_block_with_its_length() {
    // PKCS #7 padding (RFC 5652, section 6.3): "abc" gains thirteen bytes of 0x0d, so padded
    // encryption equals unpadded encryption of the padded block.
    let cipher = RawCipher::new(
        RawCipherName::Aes128Ecb,
        &hex::decode(AES128_KEY).unwrap(),
        None,
    )
    .unwrap();
    let mut buf = b"abc".to_vec();
    process(&cipher, Direction::Encrypt, &mut buf, chunk_size(16)).unwrap();
    let raw = RawCipher::new(
        RawCipherName::Aes128Ecb,
        &hex::decode(AES128_KEY).unwrap(),
        None,
    )
    .unwrap()
    .with_padding(false);
    let mut padded = b"abc\x0d\x0d\x0d\x0d\x0d\x0d\x0d\x0d\x0d\x0d\x0d\x0d\x0d".to_vec();
    process(&raw, Direction::Encrypt, &mut padded, chunk_size(16)).unwrap();
    assert_eq!(buf, padded);
    // A whole block of input gains a whole block of padding.
    let mut aligned = vec![7u8; 32];
    process(&cipher, Direction::Encrypt, &mut aligned, chunk_size(16)).unwrap();
    assert_eq!(aligned.len(), 48);
}
