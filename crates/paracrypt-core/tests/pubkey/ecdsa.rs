//! ECDSA P-256: RFC 6979 known answers, DER signatures, and the split verification agreeing
//! with p256's own on valid and damaged signatures.

use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::ecdsa::{EcdsaPrivateKey, EcdsaVerify};
use paracrypt_core::pubkey::{batch, sha256};

use super::{data, with_threads};

/// RFC 6979, appendix A.2.5: the P-256 key and the SHA-256 signatures of "sample" and "test",
/// with a low `s`: RFC 6979's `s` of "sample" is above `n / 2`, and paracrypt writes
/// `n − s` (f7cb1c94… becomes 0834e36a…; the nonce, and so `r`, are RFC 6979's).
#[test]
fn rfc_6979_a_2_5_p256_sha256() {
    let x =
        hex::decode("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721").unwrap();
    // RFC 6979 is RustCrypto's signing; aws-lc's nonces are random (see `providers`).
    let key = EcdsaPrivateKey::from_scalar_bytes(&x.try_into().unwrap())
        .unwrap()
        .with_provider(Provider::RustCrypto);
    let cases = [
        (
            "sample",
            "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716",
            "0834e36ad29a83bf2bc9385e491d6099c8fdf9d1ed67aa7ea5f51f93782857a9",
        ),
        (
            "test",
            "f1abb023518351cd71d881567b1ea663ed3efcf6c5132b354f28d3b0b7d38367",
            "019f4113742a2b14bd25926b49c649155f267e60d3814b4c0cc84250e46f0083",
        ),
    ];
    for (message, r, s) in cases {
        let der = key.sign_digest(&sha256(message.as_bytes()));
        let signature = p256::ecdsa::Signature::from_der(&der).unwrap();
        assert_eq!(
            hex::encode(signature.to_bytes()),
            format!("{r}{s}"),
            "{message}"
        );
        assert_eq!(der[0], 0x30, "DER SEQUENCE");
        for how in [EcdsaVerify::Lincomb, EcdsaVerify::Split] {
            assert!(
                key.public_key()
                    .verify_digest_with(how, &sha256(message.as_bytes()), &der)
            );
        }
    }
}

#[test]
fn rustcrypto_signing_is_deterministic() {
    let key = EcdsaPrivateKey::generate().with_provider(Provider::RustCrypto);
    let digest = sha256(b"same input");
    assert_eq!(key.sign_digest(&digest), key.sign_digest(&digest));
}

/// Valid signatures, signatures of another digest and signatures with one bit flipped, over
/// many digests: both verification paths accept exactly the valid ones.
#[test]
fn split_verification_agrees_with_p256_on_random_inputs() {
    let key = EcdsaPrivateKey::generate();
    let public = key.public_key();
    with_threads(2, || {
        for seed in 0..200u32 {
            let digest = sha256(&data(20, seed));
            let signature = key.sign_digest(&digest);
            let mut damaged = signature.clone();
            let at = 8 + (seed as usize % (damaged.len() - 8));
            damaged[at] ^= 1 << (seed % 8);
            let mut other_digest = digest;
            other_digest[(seed % 32) as usize] ^= 0x80;
            for (d, s, valid, what) in [
                (&digest, &signature, true, "valid"),
                (&other_digest, &signature, false, "other digest"),
                (&digest, &damaged, false, "bit flipped"),
            ] {
                let lincomb = public.verify_digest_with(EcdsaVerify::Lincomb, d, s);
                let split = public.verify_digest_with(EcdsaVerify::Split, d, s);
                assert_eq!(lincomb, valid, "seed {seed}, {what}, lincomb");
                assert_eq!(split, valid, "seed {seed}, {what}, split");
            }
        }
    });
}

#[test]
fn garbage_signatures_do_not_verify() {
    let key = EcdsaPrivateKey::generate();
    let digest = sha256(b"m");
    for signature in [
        &[][..],
        &[0x30, 0x00],
        &[0xff; 72],
        &key.sign_digest(&digest)[..40],
    ] {
        assert!(!key.public_key().verify_digest(&digest, signature));
    }
}

#[test]
fn batch_sign_and_verify_keep_the_order() {
    // Deterministic signatures, so the batch's can be compared with one-by-one ones.
    let key = EcdsaPrivateKey::generate().with_provider(Provider::RustCrypto);
    let digests: Vec<_> = (0..32).map(|i| sha256(&data(8, i))).collect();
    let signatures = with_threads(2, || batch::sign_all(&key, &digests)).unwrap();
    for (digest, signature) in digests.iter().zip(&signatures) {
        assert_eq!(signature, &key.sign_digest(digest));
    }
    let mut items: Vec<_> = digests
        .iter()
        .zip(&signatures)
        .map(|(d, s)| (*d, s.as_slice()))
        .collect();
    // The first two signatures swapped: each is valid, but for the other digest.
    items[0].1 = &signatures[1];
    items[1].1 = &signatures[0];
    let results = with_threads(2, || batch::verify_all(&key.public_key(), &items));
    assert!(!results[0] && !results[1]);
    assert!(results[2..].iter().all(|&ok| ok));
}
