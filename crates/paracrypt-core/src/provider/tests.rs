//! Every primitive through every compiled provider: the published vectors pass through each,
//! and (with aws-lc compiled) both give the same bytes on random keys, IVs, offsets and
//! lengths.

use rand::Rng;

use super::*;

fn h(s: &str) -> Vec<u8> {
    hex::decode(s.replace(' ', "")).expect("hex in a test")
}

#[cfg_attr(not(any(feature = "aws-lc", feature = "openssl")), allow(dead_code))]
fn random_bytes(len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rng().fill_bytes(&mut v);
    v
}

#[cfg_attr(not(any(feature = "aws-lc", feature = "openssl")), allow(dead_code))]
fn random_below(n: u64) -> u64 {
    let mut b = [0u8; 8];
    rand::rng().fill_bytes(&mut b);
    u64::from_le_bytes(b) % n
}

// ---- Published vectors, through each provider -----------------------------------------------

/// (algorithm, key, plaintext block, ciphertext block).
const ECB_VECTORS: &[(BlockAlg, &str, &str, &str)] = &[
    // FIPS 197, Appendix C.1, C.2, C.3.
    (
        BlockAlg::Aes,
        "000102030405060708090a0b0c0d0e0f",
        "00112233445566778899aabbccddeeff",
        "69c4e0d86a7b0430d8cdb78070b4c55a",
    ),
    (
        BlockAlg::Aes,
        "000102030405060708090a0b0c0d0e0f1011121314151617",
        "00112233445566778899aabbccddeeff",
        "dda97ca4864cdfe06eaf70a0ec0d7191",
    ),
    (
        BlockAlg::Aes,
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "00112233445566778899aabbccddeeff",
        "8ea2b7ca516745bfeafc49904b496089",
    ),
    // The classic DES example (FIPS 81's key, "Now is t").
    (
        BlockAlg::Des,
        "0123456789abcdef",
        "4e6f772069732074",
        "3fa40e8a984d4815",
    ),
    // NIST SP 800-67 Rev. 1, Appendix B: "The quick brown fox jump".
    (
        BlockAlg::TripleDes,
        "0123456789abcdef23456789abcdef01456789abcdef0123",
        "5468652071756663 6b2062726f776e20 666f78206a756d70",
        "a826fd8ce53b855f cce21c8112256fe6 68d5c05dd9b6b900",
    ),
    // Eric Young's Blowfish vectors (the first and second).
    (
        BlockAlg::Blowfish,
        "0000000000000000",
        "0000000000000000",
        "4ef997456198dd78",
    ),
    (
        BlockAlg::Blowfish,
        "ffffffffffffffff",
        "ffffffffffffffff",
        "51866fd5b85ecb8a",
    ),
];

#[test]
fn ecb_vectors_pass_through_every_provider() {
    for &provider in Provider::ALL {
        for (alg, key, pt, ct) in ECB_VECTORS {
            let cipher = provider.block_cipher(*alg, &h(key)).expect("valid key");
            let block = if *alg == BlockAlg::Aes { 16 } else { 8 };
            assert_eq!(cipher.block_size(), block);
            let mut data = h(pt);
            cipher.ecb(true, &mut data).unwrap();
            assert_eq!(
                hex::encode(&data),
                ct.replace(' ', ""),
                "{provider} {alg:?}"
            );
            cipher.ecb(false, &mut data).unwrap();
            assert_eq!(data, h(pt), "{provider} {alg:?}");
        }
    }
}

#[test]
fn cbc_vector_passes_through_every_provider() {
    // NIST SP 800-38A, F.2.1 / F.2.2 (CBC-AES128), the first two blocks.
    let key = h("2b7e151628aed2a6abf7158809cf4f3c");
    let iv = h("000102030405060708090a0b0c0d0e0f");
    let pt = h("6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51");
    let ct = "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2";
    for &provider in Provider::ALL {
        let cipher = provider.block_cipher(BlockAlg::Aes, &key).unwrap();
        let mut data = pt.clone();
        let mut chain = iv.clone();
        cipher.cbc_encrypt(&mut chain, &mut data).unwrap();
        assert_eq!(hex::encode(&data), ct, "{provider}");
        assert_eq!(
            chain,
            data[16..],
            "{provider}: the chain ends on the last block"
        );
        cipher.cbc_decrypt(&iv, &mut data).unwrap();
        assert_eq!(data, pt, "{provider}");
    }
}

#[test]
fn ctr_vector_passes_through_every_provider() {
    // NIST SP 800-38A, F.5.1 (CTR-AES128.Encrypt), the first two blocks.
    let key = h("2b7e151628aed2a6abf7158809cf4f3c");
    let iv: [u8; 16] = h("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff").try_into().unwrap();
    let pt = h("6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51");
    let ct = "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff";
    for &provider in Provider::ALL {
        let ctr = provider.aes_ctr(&key).unwrap();
        let mut data = pt.clone();
        ctr.apply_keystream(&iv, 0, &mut data).unwrap();
        assert_eq!(hex::encode(&data), ct, "{provider}");
        // The second block alone, from its offset (its counter carries out of the last byte).
        let mut second = pt[16..].to_vec();
        ctr.apply_keystream(&iv, 16, &mut second).unwrap();
        assert_eq!(hex::encode(&second), &ct[32..], "{provider}");
    }
}

#[test]
fn rc4_vector_passes_through_every_provider() {
    // RFC 6229, 40-bit key 0x0102030405: keystream at offsets 0 and 16.
    for &provider in Provider::ALL {
        let mut rc4 = provider.rc4(&h("0102030405")).unwrap();
        let mut data = [0u8; 32];
        rc4.apply_keystream(&mut data);
        assert_eq!(
            hex::encode(data),
            "b2396305f03dc027ccc3524a0a1118a86982944f18fc82d589c403a47a0d0919",
            "{provider}"
        );
    }
}

#[test]
fn aead_vectors_pass_through_every_provider() {
    // The GCM specification's test case 4 (AES-128, with AAD), and RFC 8439 §2.8.2.
    let gcm_pt = h(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
                    1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
    );
    let chacha_pt = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip \
                      for the future, sunscreen would be it."
        .to_vec();
    let cases = [
        (
            AeadAlg::Aes128Gcm,
            h("feffe9928665731c6d6a8f9467308308"),
            h("cafebabefacedbaddecaf888"),
            h("feedfacedeadbeeffeedfacedeadbeefabaddad2"),
            gcm_pt,
            "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e\
             21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
            "5bc94fbc3221a5db94fae95ae7121a47",
        ),
        (
            AeadAlg::ChaCha20Poly1305,
            h("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"),
            h("070000004041424344454647"),
            h("50515253c0c1c2c3c4c5c6c7"),
            chacha_pt,
            "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6\
             3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36\
             92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc\
             3ff4def08e4b7a9de576d26586cec64b6116",
            "1ae10b594f09e26a7e902ecbd0600691",
        ),
    ];
    for &provider in Provider::ALL {
        for (alg, key, nonce, aad, pt, ct, tag) in &cases {
            let aead = provider.aead(*alg, key).unwrap();
            let nonce: [u8; 12] = nonce[..].try_into().unwrap();
            let mut data = pt.clone();
            let got = aead.seal(&nonce, aad, &mut data).unwrap();
            assert_eq!(
                hex::encode(&data),
                ct.replace(' ', ""),
                "{provider} {alg:?}"
            );
            assert_eq!(hex::encode(got), *tag, "{provider} {alg:?}");
            // A wrong tag fails and leaves the ciphertext exactly as it was.
            let mut bad = got;
            bad[0] ^= 1;
            assert!(
                !aead.open(&nonce, aad, &mut data, &bad).unwrap(),
                "{provider}"
            );
            assert_eq!(hex::encode(&data), ct.replace(' ', ""), "{provider}");
            assert!(
                aead.open(&nonce, aad, &mut data, &got).unwrap(),
                "{provider}"
            );
            assert_eq!(&data, pt, "{provider} {alg:?}");
        }
    }
}

#[test]
fn hmac_and_hkdf_vectors_pass_through_every_provider() {
    for &provider in Provider::ALL {
        // RFC 4231, test case 2, in two parts.
        let mac = provider.hmac_sha256(b"Jefe");
        let tag = mac.mac(&[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            hex::encode(tag),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            "{provider}"
        );
        assert!(mac.verify(&[b"what do ya want for nothing?"], &tag));
        assert!(!mac.verify(&[b"what do ya want for nothing!"], &tag));
        assert!(!mac.verify(&[b"what do ya want for nothing?"], &tag[..31]));
        // RFC 5869, A.1 (Expand only, from its PRK).
        let mut okm = [0u8; 42];
        provider.hkdf_sha256_expand(
            &h("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"),
            &[&h("f0f1f2f3f4"), &h("f5f6f7f8f9")],
            &mut okm,
        );
        assert_eq!(
            hex::encode(okm),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf\
             34007208d5b887185865",
            "{provider}"
        );
    }
}

#[test]
fn wrong_key_lengths_are_refused_by_every_provider() {
    for &provider in Provider::ALL {
        assert!(provider.block_cipher(BlockAlg::Aes, &[0; 15]).is_none());
        assert!(provider.block_cipher(BlockAlg::Des, &[0; 16]).is_none());
        assert!(
            provider
                .block_cipher(BlockAlg::TripleDes, &[0; 16])
                .is_none()
        );
        assert!(provider.block_cipher(BlockAlg::Blowfish, &[0; 3]).is_none());
        assert!(
            provider
                .block_cipher(BlockAlg::Blowfish, &[0; 57])
                .is_none()
        );
        assert!(provider.aes_ctr(&[0; 20]).is_none());
        assert!(provider.rc4(&[]).is_none());
        assert!(provider.rc4(&[0; 257]).is_none());
        assert!(provider.aead(AeadAlg::Aes256Gcm, &[0; 16]).is_none());
    }
}

#[test]
fn provider_names_parse_and_print() {
    for &provider in Provider::ALL {
        assert_eq!(provider.as_str().parse::<Provider>().unwrap(), provider);
    }
    assert_eq!(
        "RustCrypto".parse::<Provider>().unwrap(),
        Provider::RustCrypto
    );
    let err = "boringssl".parse::<Provider>().unwrap_err().to_string();
    assert!(err.contains("unknown provider `boringssl`"), "{err}");
    #[cfg(feature = "openssl")]
    assert_eq!("OpenSSL".parse::<Provider>().unwrap(), Provider::OpenSsl);
    #[cfg(not(feature = "openssl"))]
    {
        let err = "openssl".parse::<Provider>().unwrap_err().to_string();
        assert!(err.contains("not compiled into this build"), "{err}");
    }
    assert!(err.contains("rustcrypto"), "{err}");
    assert_eq!(Provider::default(), Provider::Fastest);
    assert_eq!("fastest".parse::<Provider>().unwrap(), Provider::Fastest);
    assert!(!Provider::ALL.contains(&Provider::Fastest));
    #[cfg(feature = "aws-lc")]
    assert_eq!(Provider::ALL[0], Provider::AwsLc);
    #[cfg(not(feature = "aws-lc"))]
    {
        let err = "aws-lc".parse::<Provider>().unwrap_err().to_string();
        assert!(err.contains("not compiled into this build"), "{err}");
    }
}

#[test]
fn the_fastest_table_follows_the_rule() {
    use fastest::{Cpu, backends};
    let first = Provider::ALL[0];
    // The default table is the rule's on this CPU.
    assert_eq!(Provider::Fastest.primitives(), backends(Cpu::detect()));
    // What the first backend's own table names (RustCrypto's Blowfish for aws-lc)...
    let own = first.primitives();
    // ...but ChaCha20-Poly1305 on OpenSSL when it is compiled and the CPU has AVX-512.
    #[cfg(feature = "openssl")]
    let chacha_avx512 = Provider::OpenSsl;
    #[cfg(not(feature = "openssl"))]
    let chacha_avx512 = first;
    for avx512 in [false, true] {
        for ((primitive, by), &(name, own_by)) in backends(Cpu { avx512 }).into_iter().zip(&own) {
            assert_eq!(primitive, name);
            let expected = if primitive == "ChaCha20-Poly1305" && avx512 {
                chacha_avx512
            } else {
                own_by
            };
            assert_eq!(by, expected, "{primitive}, AVX-512 {avx512}");
        }
    }
    // The default table computes what the others compute.
    let key = [7u8; 32];
    let nonce = [1u8; 12];
    let mut x = vec![5u8; 1000];
    let mut y = x.clone();
    let t1 = Provider::Fastest
        .aead(AeadAlg::ChaCha20Poly1305, &key)
        .unwrap()
        .seal(&nonce, b"aad", &mut x)
        .unwrap();
    let t2 = Provider::RustCrypto
        .aead(AeadAlg::ChaCha20Poly1305, &key)
        .unwrap()
        .seal(&nonce, b"aad", &mut y)
        .unwrap();
    assert!((x, t1) == (y, t2));
}

// ---- Out of place, the same bytes as in place ------------------------------------------------

/// Deterministic bytes (the tests below run in every build, RustCrypto alone too).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

#[test]
fn block_ciphers_out_of_place_equal_in_place_on_every_provider() {
    let algs: [(BlockAlg, usize); 6] = [
        (BlockAlg::Aes, 16),
        (BlockAlg::Aes, 24),
        (BlockAlg::Aes, 32),
        (BlockAlg::Des, 8),
        (BlockAlg::TripleDes, 24),
        (BlockAlg::Blowfish, 16),
    ];
    for &provider in Provider::ALL {
        for (alg, key_len) in algs {
            let cipher = provider.block_cipher(alg, &pattern(key_len, 3)).unwrap();
            let bs = cipher.block_size();
            for blocks in [0, 1, 2, 67] {
                let at = format!("{alg:?} on {provider}, {blocks} blocks");
                // The input at an odd address.
                let stored = pattern(blocks * bs + 1, 9);
                let input = &stored[1..];
                for encrypt in [true, false] {
                    let mut in_place = input.to_vec();
                    cipher.ecb(encrypt, &mut in_place).unwrap();
                    let mut out = vec![0xa5; input.len()];
                    cipher.ecb_to(encrypt, input, &mut out).unwrap();
                    assert_eq!(out, in_place, "{at}: ECB {encrypt}");
                }
                let iv = pattern(bs, 77);
                let (mut chain_a, mut chain_b) = (iv.clone(), iv.clone());
                let mut in_place = input.to_vec();
                cipher.cbc_encrypt(&mut chain_a, &mut in_place).unwrap();
                let mut out = vec![0xa5; input.len()];
                cipher
                    .cbc_encrypt_to(&mut chain_b, input, &mut out)
                    .unwrap();
                assert_eq!((&out, &chain_b), (&in_place, &chain_a), "{at}: CBC");
                let mut in_place = input.to_vec();
                cipher.cbc_decrypt(&iv, &mut in_place).unwrap();
                let mut out = vec![0xa5; input.len()];
                cipher.cbc_decrypt_to(&iv, input, &mut out).unwrap();
                assert_eq!(out, in_place, "{at}: CBC decryption");
            }
        }
    }
}

#[test]
fn stream_ciphers_out_of_place_equal_in_place_on_every_provider() {
    for &provider in Provider::ALL {
        let ctr = provider.aes_ctr(&pattern(16, 1)).unwrap();
        let iv: [u8; 16] = pattern(16, 2).try_into().unwrap();
        for (offset, len) in [
            (0, 0),
            (0, 1),
            (5, 11),
            (13, 40),
            (1 << 33, 4099),
            (7, 70_001),
        ] {
            let stored = pattern(len + 3, 4);
            let input = &stored[3..];
            let mut in_place = input.to_vec();
            ctr.apply_keystream(&iv, offset, &mut in_place).unwrap();
            let mut out = vec![0xa5; len];
            ctr.apply_keystream_to(&iv, offset, input, &mut out)
                .unwrap();
            assert_eq!(
                out, in_place,
                "AES-CTR on {provider} at {offset}, {len} bytes"
            );
        }
        let (mut a, mut b) = (
            provider.rc4(&pattern(16, 5)).unwrap(),
            provider.rc4(&pattern(16, 5)).unwrap(),
        );
        for len in [0, 1, 300, 5000] {
            let stored = pattern(len + 1, 6);
            let input = &stored[1..];
            let mut in_place = input.to_vec();
            a.apply_keystream(&mut in_place);
            let mut out = vec![0xa5; len];
            b.apply_keystream_to(input, &mut out);
            assert_eq!(out, in_place, "RC4 on {provider}, {len} bytes");
        }
    }
}

// ---- Both providers, same bytes ---------------------------------------------------------------

#[cfg(any(feature = "aws-lc", feature = "openssl"))]
mod same_bytes {
    use super::*;

    /// Each compiled C backend beside RustCrypto, the reference.
    fn pairs() -> impl Iterator<Item = [Provider; 2]> {
        Provider::ALL
            .iter()
            .filter(|&&p| p != Provider::RustCrypto)
            .map(|&p| [p, Provider::RustCrypto])
    }

    fn both<T>(pair: [Provider; 2], make: impl Fn(Provider) -> Option<T>) -> [T; 2] {
        pair.map(|p| make(p).expect("valid key"))
    }

    /// (algorithm, key lengths to try).
    const BLOCK_ALGS: &[(BlockAlg, &[usize])] = &[
        (BlockAlg::Aes, &[16, 24, 32]),
        (BlockAlg::Des, &[8]),
        (BlockAlg::TripleDes, &[24]),
        (BlockAlg::Blowfish, &[4, 16, 56]),
    ];

    #[test]
    fn block_ciphers_agree_in_ecb_and_cbc() {
        for pair in pairs() {
            for &(alg, key_lens) in BLOCK_ALGS {
                for &key_len in key_lens {
                    for _ in 0..8 {
                        let key = random_bytes(key_len);
                        let [a, b] = both(pair, |p| p.block_cipher(alg, &key));
                        let bs = a.block_size();
                        let blocks = random_below(300) as usize;
                        let plain = random_bytes(blocks * bs);
                        let iv = random_bytes(bs);

                        let mut x = plain.clone();
                        let mut y = plain.clone();
                        a.ecb(true, &mut x).unwrap();
                        b.ecb(true, &mut y).unwrap();
                        assert_eq!(x, y, "{alg:?} ECB, key {key_len}");
                        a.ecb(false, &mut x).unwrap();
                        assert_eq!(x, plain);

                        let (mut chain_a, mut chain_b) = (iv.clone(), iv.clone());
                        let (mut x, mut y) = (plain.clone(), plain.clone());
                        a.cbc_encrypt(&mut chain_a, &mut x).unwrap();
                        b.cbc_encrypt(&mut chain_b, &mut y).unwrap();
                        assert_eq!(x, y, "{alg:?} CBC, key {key_len}");
                        assert_eq!(chain_a, chain_b);
                        let mut z = x.clone();
                        a.cbc_decrypt(&iv, &mut x).unwrap();
                        b.cbc_decrypt(&iv, &mut z).unwrap();
                        assert_eq!(x, plain);
                        assert_eq!(z, plain);
                    }
                }
            }
        }
    }

    #[test]
    fn des_weak_and_repeated_keys_work_as_openssl_takes_them() {
        for pair in pairs() {
            // A weak DES key, and 3DES with K1 = K2 = K3 (which degenerates to DES): openssl enc
            // accepts both, so both providers must.
            let weak = h("0101010101010101");
            let [a, b] = both(pair, |p| p.block_cipher(BlockAlg::Des, &weak));
            let (mut x, mut y) = (vec![7u8; 64], vec![7u8; 64]);
            a.ecb(true, &mut x).unwrap();
            b.ecb(true, &mut y).unwrap();
            assert_eq!(x, y);
            let repeated = [weak.clone(), weak.clone(), weak].concat();
            let [a, b] = both(pair, |p| p.block_cipher(BlockAlg::TripleDes, &repeated));
            let (mut x, mut y) = (vec![7u8; 64], vec![7u8; 64]);
            a.ecb(true, &mut x).unwrap();
            b.ecb(true, &mut y).unwrap();
            assert_eq!(x, y);
        }
    }

    #[test]
    fn ctr_agrees_at_any_offset_and_across_the_counter_wrap() {
        for pair in pairs() {
            for key_len in [16, 24, 32] {
                for round in 0..40 {
                    let key = random_bytes(key_len);
                    let mut iv: [u8; 16] = random_bytes(16).try_into().unwrap();
                    if round % 4 == 0 {
                        // A few blocks below 2^128: the keystream crosses the wrap.
                        iv = (u128::MAX - random_below(8) as u128).to_be_bytes();
                    }
                    let offset = match round % 3 {
                        0 => random_below(64),
                        1 => random_below(1 << 40),
                        _ => random_below(u64::MAX),
                    };
                    let len = random_below(5000) as usize;
                    let plain = random_bytes(len);
                    let [a, b] = both(pair, |p| p.aes_ctr(&key));
                    let (mut x, mut y) = (plain.clone(), plain.clone());
                    a.apply_keystream(&iv, offset, &mut x).unwrap();
                    b.apply_keystream(&iv, offset, &mut y).unwrap();
                    assert_eq!(x, y, "key {key_len}, offset {offset}, len {len}");
                    // Out of place, from an input at an odd address: the same keystream.
                    let stored = [&[0u8][..], &plain].concat();
                    for ctr in [&a, &b] {
                        let mut out = vec![0xa5; len];
                        ctr.apply_keystream_to(&iv, offset, &stored[1..], &mut out)
                            .unwrap();
                        assert_eq!(out, x, "out of place: key {key_len}, offset {offset}");
                    }
                    // Seeking is consistent: the stream in two pieces equals it in one.
                    let cut = random_below(len as u64 + 1) as usize;
                    let mut z = plain.clone();
                    a.apply_keystream(&iv, offset, &mut z[..cut]).unwrap();
                    b.apply_keystream(&iv, offset + cut as u64, &mut z[cut..])
                        .unwrap();
                    assert_eq!(z, x);
                }
            }
        }
    }

    #[test]
    fn ctr_wraps_modulo_2_128() {
        // The block after counter 2^128 − 1 is counter 0, in both.
        let key = random_bytes(32);
        let top = [0xffu8; 16];
        let zero = [0u8; 16];
        for &provider in Provider::ALL {
            let ctr = provider.aes_ctr(&key).unwrap();
            let mut across = [0u8; 32];
            ctr.apply_keystream(&top, 0, &mut across).unwrap();
            let mut first = [0u8; 16];
            ctr.apply_keystream(&zero, 0, &mut first).unwrap();
            assert_eq!(across[16..], first, "{provider}");
        }
    }

    #[test]
    fn rc4_agrees() {
        for pair in pairs() {
            for key_len in [1, 5, 16, 32, 256] {
                let key = random_bytes(key_len);
                let [mut a, mut b] = both(pair, |p| p.rc4(&key));
                for _ in 0..4 {
                    let plain = random_bytes(random_below(4000) as usize);
                    let (mut x, mut y) = (plain.clone(), plain);
                    a.apply_keystream(&mut x);
                    b.apply_keystream(&mut y);
                    assert_eq!(x, y, "key {key_len}");
                }
            }
        }
    }

    #[test]
    fn aeads_agree_and_open_each_others_chunks() {
        for pair in pairs() {
            for alg in [
                AeadAlg::Aes128Gcm,
                AeadAlg::Aes256Gcm,
                AeadAlg::ChaCha20Poly1305,
            ] {
                for _ in 0..16 {
                    let key = random_bytes(alg.key_len());
                    let nonce: [u8; 12] = random_bytes(12).try_into().unwrap();
                    let aad = random_bytes(random_below(64) as usize);
                    let plain = random_bytes(random_below(5000) as usize);
                    let [a, b] = both(pair, |p| p.aead(alg, &key));
                    let (mut x, mut y) = (plain.clone(), plain.clone());
                    let tag_a = a.seal(&nonce, &aad, &mut x).unwrap();
                    let tag_b = b.seal(&nonce, &aad, &mut y).unwrap();
                    assert_eq!((&x, tag_a), (&y, tag_b), "{alg:?}");
                    // A wrong tag leaves the ciphertext exactly as it was, in every backend.
                    let mut bad = tag_a;
                    bad[0] ^= 1;
                    for opener in [&a, &b] {
                        let mut z = x.clone();
                        assert!(!opener.open(&nonce, &aad, &mut z, &bad).unwrap());
                        assert!(z == x, "{alg:?}: a failed open changed the chunk");
                    }
                    // Out of place: the same bytes, and a failed open releases no plaintext.
                    for aead in [&a, &b] {
                        let mut out = vec![0xa5; plain.len()];
                        assert_eq!(aead.seal_to(&nonce, &aad, &plain, &mut out).unwrap(), tag_a);
                        assert!(out == x, "{alg:?}: seal_to");
                        let mut opened = vec![0x5a; plain.len()];
                        assert!(aead.open_to(&nonce, &aad, &x, &mut opened, &tag_a).unwrap());
                        assert!(opened == plain, "{alg:?}: open_to");
                        let mut opened = vec![0x5a; plain.len()];
                        assert!(!aead.open_to(&nonce, &aad, &x, &mut opened, &bad).unwrap());
                        // Left as it was, zeroed, or the ciphertext: never plaintext.
                        assert!(
                            opened.iter().all(|&v| v == 0x5a)
                                || opened.iter().all(|&v| v == 0)
                                || opened == x,
                            "{alg:?}: a failed open_to released the plaintext"
                        );
                    }
                    assert!(b.open(&nonce, &aad, &mut x, &tag_a).unwrap());
                    assert!(a.open(&nonce, &aad, &mut y, &tag_b).unwrap());
                    assert_eq!((&x, &y), (&plain, &plain));
                }
            }
        }
    }

    #[test]
    fn hmac_and_hkdf_agree() {
        for pair in pairs() {
            for key_len in [0, 16, 32, 64, 100] {
                let key = random_bytes(key_len);
                let [a, b] = pair.map(|p| p.hmac_sha256(&key));
                let data = random_bytes(random_below(3000) as usize);
                let cut = random_below(data.len() as u64 + 1) as usize;
                let parts: [&[u8]; 2] = [&data[..cut], &data[cut..]];
                assert_eq!(a.mac(&parts), b.mac(&[&data]));
                let prk = random_bytes(32);
                let info = random_bytes(20);
                let [mut x, mut y] = [[0u8; 100]; 2];
                pair[0].hkdf_sha256_expand(&prk, &[&info], &mut x);
                pair[1].hkdf_sha256_expand(&prk, &[&info], &mut y);
                assert_eq!(x, y);
            }
        }
    }
}

/// Not a test: the per-primitive figures of the tables of docs/guide/performance.md, one thread, MB/s
/// (best of 5 over 16 MiB). Run with `cargo test --release -p paracrypt-core --lib
/// measure_primitives -- --ignored --nocapture`; compare within a row, never across runs.
#[test]
#[ignore = "a measurement, run by hand"]
fn measure_primitives() {
    use std::time::Instant;
    const LEN: usize = 16 << 20;
    let mb_per_s = |f: &mut dyn FnMut(&mut [u8])| -> f64 {
        let mut data = vec![1u8; LEN];
        let best = (0..5)
            .map(|_| {
                let start = Instant::now();
                f(&mut data);
                std::hint::black_box(&data);
                start.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min);
        LEN as f64 / best / 1e6
    };
    for &p in Provider::ALL {
        let mut row = Vec::new();
        for (alg, key_len) in [
            (BlockAlg::Aes, 32),
            (BlockAlg::Des, 8),
            (BlockAlg::TripleDes, 24),
            (BlockAlg::Blowfish, 16),
        ] {
            let c = p.block_cipher(alg, &vec![3u8; key_len]).unwrap();
            let iv = vec![0u8; c.block_size()];
            row.push(format!(
                "{alg:?} ecb-enc {:.0} cbc-enc {:.0} cbc-dec {:.0}",
                mb_per_s(&mut |d| c.ecb(true, d).unwrap()),
                mb_per_s(&mut |d| c.cbc_encrypt(&mut iv.clone(), d).unwrap()),
                mb_per_s(&mut |d| c.cbc_decrypt(&iv, d).unwrap()),
            ));
        }
        let ctr = p.aes_ctr(&[3u8; 32]).unwrap();
        row.push(format!(
            "aes-256-ctr {:.0}",
            mb_per_s(&mut |d| ctr.apply_keystream(&[0; 16], 0, d).unwrap())
        ));
        let mut rc4 = p.rc4(&[3u8; 16]).unwrap();
        row.push(format!(
            "rc4 {:.0}",
            mb_per_s(&mut |d| rc4.apply_keystream(d))
        ));
        let mac = p.hmac_sha256(&[1; 32]);
        row.push(format!(
            "hmac-sha256 {:.0}",
            mb_per_s(&mut |d| {
                std::hint::black_box(mac.mac(&[d]));
            })
        ));
        for alg in [AeadAlg::Aes256Gcm, AeadAlg::ChaCha20Poly1305] {
            let aead = p.aead(alg, &[4u8; 32]).unwrap();
            row.push(format!(
                "{alg:?} seal {:.0}",
                mb_per_s(&mut |d| {
                    std::hint::black_box(aead.seal(&[0; 12], &[], d).unwrap());
                })
            ));
        }
        eprintln!("{p}: {}", row.join("; "));
    }
}

// ---- Layering ---------------------------------------------------------------------------------

/// The provider depends on nothing above it (as rustls's `crypto/`): no file under
/// `src/provider/` names a module of this crate other than `provider` and `error` (the errors,
/// below everything). The same check by hand:
/// `grep -rnoE 'crate::[a-z_]+' crates/paracrypt-core/src/provider | grep -vE 'crate::(error|provider)\b'`.
#[test]
fn the_provider_knows_no_module_above_it() {
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let mut rest = line;
                while let Some(at) = rest.find("crate::") {
                    rest = &rest[at + "crate::".len()..];
                    let module: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    // `crate::Error` (capitalised) is the error module's re-export.
                    if !module.is_empty() && module != "error" && module != "provider" {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/provider"),
        &mut found,
    );
    assert!(
        found.is_empty(),
        "the provider names modules above it:\n{}",
        found.join("\n")
    );
}
