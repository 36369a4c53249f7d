//! Every provider against every other: PKCS#1 v1.5 signatures byte-identical, PSS and ECDSA
//! signatures verified across providers, keys from either provider's generator usable by both.
//! (`openssl` checks the same keys and signatures in the CLI tests.)

use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::ecdsa::EcdsaPrivateKey;
use paracrypt_core::pubkey::rsa::{PrivateOp, RsaPrivateKey, RsaScheme};
use paracrypt_core::pubkey::sha256;

use super::{data, rsa2048, with_threads};

fn rsa_on(provider: Provider) -> RsaPrivateKey {
    let pem = rsa2048().to_pkcs8_pem().unwrap();
    RsaPrivateKey::from_key_file(pem.as_bytes())
        .unwrap()
        .with_provider(provider)
        .unwrap()
}

#[test]
fn providers_run_what_they_are_given() {
    for &provider in Provider::ALL {
        assert_eq!(rsa_on(provider).provider(), provider);
        assert_eq!(rsa_on(provider).public_key().provider(), provider);
        let ec = EcdsaPrivateKey::generate().with_provider(provider);
        assert_eq!(ec.provider(), provider);
        assert_eq!(ec.public_key().provider(), provider);
    }
}

#[test]
fn pkcs1v15_signatures_are_byte_identical_across_providers_and_paths() {
    let keys: Vec<_> = Provider::ALL.iter().map(|&p| rsa_on(p)).collect();
    with_threads(2, || {
        for seed in 0..40 {
            let digest = sha256(&data(64, seed));
            let expected = keys[0]
                .sign_digest_with(RsaScheme::Pkcs1v15, &digest, PrivateOp::Crate)
                .unwrap();
            for key in &keys {
                for op in [PrivateOp::Split, PrivateOp::Serial, PrivateOp::Crate] {
                    let signature = key
                        .sign_digest_with(RsaScheme::Pkcs1v15, &digest, op)
                        .unwrap();
                    assert_eq!(signature, expected, "{} {op:?}", key.provider());
                }
                assert_eq!(
                    key.sign_digest(RsaScheme::Pkcs1v15, &digest).unwrap(),
                    expected
                );
            }
        }
    });
}

#[test]
fn rsa_signatures_verify_across_providers() {
    let keys: Vec<_> = Provider::ALL.iter().map(|&p| rsa_on(p)).collect();
    for signer in &keys {
        for scheme in [RsaScheme::Pkcs1v15, RsaScheme::Pss] {
            let digest = sha256(b"across providers");
            let signature = signer.sign_digest(scheme, &digest).unwrap();
            for verifier in &keys {
                let public = verifier.public_key();
                assert!(
                    public.verify_digest(scheme, &digest, &signature),
                    "{scheme} by {} verified by {}",
                    signer.provider(),
                    verifier.provider()
                );
                let mut bad = signature.clone();
                bad[10] ^= 1;
                assert!(!public.verify_digest(scheme, &digest, &bad));
                assert!(!public.verify_digest(scheme, &sha256(b"other"), &signature));
            }
        }
    }
}

#[test]
fn oaep_ciphertexts_open_with_either_provider() {
    let keys: Vec<_> = Provider::ALL.iter().map(|&p| rsa_on(p)).collect();
    let message = b"a symmetric key, say";
    for encryptor in &keys {
        let ciphertext = encryptor.public_key().encrypt_oaep(message).unwrap();
        for decryptor in &keys {
            assert_eq!(&decryptor.decrypt_oaep(&ciphertext).unwrap()[..], message);
            let mut bad = ciphertext.clone();
            bad[5] ^= 1;
            assert!(decryptor.decrypt_oaep(&bad).is_err());
        }
    }
}

#[test]
fn ecdsa_signatures_verify_across_providers() {
    let base = EcdsaPrivateKey::generate();
    let keys: Vec<_> = Provider::ALL
        .iter()
        .map(|&p| base.clone().with_provider(p))
        .collect();
    for seed in 0..20 {
        let digest = sha256(&data(32, seed));
        for signer in &keys {
            let signature = signer.sign_digest(&digest);
            for verifier in &keys {
                let public = verifier.public_key();
                assert!(
                    public.verify_digest(&digest, &signature),
                    "signed by {}, verified by {}",
                    signer.provider(),
                    verifier.provider()
                );
                let mut bad = signature.clone();
                let last = bad.len() - 1;
                bad[last] ^= 1;
                assert!(!public.verify_digest(&digest, &bad));
            }
        }
    }
}

#[test]
fn keys_generated_by_each_provider_work_in_both() {
    for &generator in Provider::ALL {
        let key = with_threads(2, || RsaPrivateKey::generate_with(2048, generator)).unwrap();
        assert_eq!(key.bits(), 2048);
        assert_eq!(key.provider(), generator);
        let digest = sha256(b"fresh key");
        let signatures: Vec<_> = Provider::ALL
            .iter()
            .map(|&p| {
                let pem = key.to_pkcs8_pem().unwrap();
                RsaPrivateKey::from_key_file(pem.as_bytes())
                    .unwrap()
                    .with_provider(p)
                    .unwrap()
                    .sign_digest(RsaScheme::Pkcs1v15, &digest)
                    .unwrap()
            })
            .collect();
        assert!(signatures.windows(2).all(|w| w[0] == w[1]), "{generator}");
    }
}

#[test]
fn small_rsa_keys_stay_on_rustcrypto() {
    // aws-lc takes 2048 bits and more; a 1024-bit key (the rsa crate reads them) still works.
    let small = rsa::RsaPrivateKey::new(&mut rand::rng(), 1024);
    let Ok(small) = small else { return };
    let key = RsaPrivateKey::from_rsa(small).unwrap();
    assert_eq!(key.provider(), Provider::RustCrypto);
    let digest = sha256(b"small");
    let signature = key.sign_digest(RsaScheme::Pkcs1v15, &digest).unwrap();
    assert!(
        key.public_key()
            .verify_digest(RsaScheme::Pkcs1v15, &digest, &signature)
    );
}
