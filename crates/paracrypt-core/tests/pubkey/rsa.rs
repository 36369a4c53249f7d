//! RSA: the split private operation equals the rsa crate's, PKCS#1 v1.5 signatures from the
//! split path are byte-identical to the crate's, PSS and OAEP round-trip, bad inputs fail.

use paracrypt_core::pubkey::crt::Parallelism;
use paracrypt_core::pubkey::rsa::{PrivateOp, RsaPrivateKey, RsaScheme};
use paracrypt_core::pubkey::{Error, batch, sha256};
use rsa::BoxedUint;
use rsa::traits::PublicKeyParts;

use super::{data, rsa2048, with_threads};

/// Random integers below n (and the edges 0, 1, n − 1), at the modulus precision.
fn inputs(key: &RsaPrivateKey, count: u32) -> Vec<BoxedUint> {
    let n = key.as_rsa().n();
    let precision = n.bits_precision();
    let k = key.as_rsa().size();
    let mut out = vec![
        BoxedUint::zero_with_precision(precision),
        BoxedUint::one_with_precision(precision),
        n.as_ref()
            .wrapping_sub(BoxedUint::one_with_precision(precision)),
    ];
    for seed in 0..count {
        let mut bytes = data(k, seed);
        bytes[0] &= 0x7f; // below n: n has its top bit set
        out.push(BoxedUint::from_be_slice(&bytes, precision).unwrap());
    }
    out
}

/// The rsa crate's raw private operation (unblinded: blinding does not change the result).
fn crate_private_op(key: &RsaPrivateKey, c: &BoxedUint) -> BoxedUint {
    rsa::hazmat::rsa_decrypt(None::<&mut rand::rngs::ThreadRng>, key.as_rsa(), c).unwrap()
}

#[test]
fn split_private_op_equals_the_rsa_crate_on_random_inputs() {
    let key = rsa2048();
    let cases = inputs(key, 200);
    with_threads(2, || {
        for c in &cases {
            let expected = crate_private_op(key, c);
            for parallelism in [Parallelism::Split, Parallelism::Serial] {
                assert_eq!(key.crt().private_op(c, parallelism).unwrap(), expected);
            }
        }
    });
}

#[test]
fn split_private_op_equals_the_rsa_crate_for_3072_bit_keys() {
    let key = with_threads(2, || RsaPrivateKey::generate(3072)).unwrap();
    with_threads(2, || {
        for c in inputs(&key, 20) {
            let expected = crate_private_op(&key, &c);
            assert_eq!(
                key.crt().private_op(&c, Parallelism::Split).unwrap(),
                expected
            );
        }
    });
}

#[test]
fn private_op_refuses_inputs_not_below_n() {
    let key = rsa2048();
    let n = key.as_rsa().n().as_ref().clone();
    assert!(key.crt().private_op(&n, Parallelism::Split).is_err());
    let narrow = BoxedUint::from(5u32);
    assert!(key.crt().private_op(&narrow, Parallelism::Split).is_err());
}

#[test]
fn pkcs1v15_signatures_from_every_path_equal_the_crate_signature() {
    let key = rsa2048();
    with_threads(2, || {
        for seed in 0..100 {
            let digest = sha256(&data(50, seed));
            let expected = key
                .as_rsa()
                .sign(rsa::Pkcs1v15Sign::new::<sha2::Sha256>(), &digest)
                .unwrap();
            for op in [PrivateOp::Split, PrivateOp::Serial, PrivateOp::Crate] {
                let signature = key
                    .sign_digest_with(RsaScheme::Pkcs1v15, &digest, op)
                    .unwrap();
                assert_eq!(signature, expected, "{op:?}");
            }
        }
    });
}

#[test]
fn signatures_verify_and_modified_ones_do_not() {
    let key = rsa2048();
    let public = key.public_key();
    for scheme in [RsaScheme::Pkcs1v15, RsaScheme::Pss] {
        let digest = sha256(b"the message");
        let signature = key.sign_digest(scheme, &digest).unwrap();
        assert_eq!(signature.len(), 256);
        assert!(
            public.verify_digest(scheme, &digest, &signature),
            "{scheme}"
        );
        assert!(!public.verify_digest(scheme, &sha256(b"another message"), &signature));
        let mut bad = signature.clone();
        bad[100] ^= 1;
        assert!(!public.verify_digest(scheme, &digest, &bad));
        assert!(!public.verify_digest(scheme, &digest, &signature[1..]));
        assert!(!public.verify_digest(scheme, &digest, &[]));
    }
    // A PSS signature is not a PKCS#1 v1.5 one, nor the reverse.
    let digest = sha256(b"x");
    let pss = key.sign_digest(RsaScheme::Pss, &digest).unwrap();
    assert!(!public.verify_digest(RsaScheme::Pkcs1v15, &digest, &pss));
    let pkcs1 = key.sign_digest(RsaScheme::Pkcs1v15, &digest).unwrap();
    assert!(!public.verify_digest(RsaScheme::Pss, &digest, &pkcs1));
}

#[test]
fn pss_signatures_are_randomised() {
    let key = rsa2048();
    let digest = sha256(b"salted");
    let a = key.sign_digest(RsaScheme::Pss, &digest).unwrap();
    let b = key.sign_digest(RsaScheme::Pss, &digest).unwrap();
    assert_ne!(a, b);
}

#[test]
fn batch_signatures_equal_one_by_one_signatures() {
    let key = rsa2048();
    let digests: Vec<_> = (0..16).map(|i| sha256(&data(10, i))).collect();
    let batch = with_threads(2, || {
        batch::sign_all(&key.signer(RsaScheme::Pkcs1v15), &digests)
    })
    .unwrap();
    for (digest, signature) in digests.iter().zip(&batch) {
        assert_eq!(
            signature,
            &key.sign_digest(RsaScheme::Pkcs1v15, digest).unwrap()
        );
    }
    let public = key.public_key();
    let mut items: Vec<_> = digests
        .iter()
        .zip(&batch)
        .map(|(d, s)| (*d, s.as_slice()))
        .collect();
    items[3].0 = sha256(b"not what was signed");
    let results = with_threads(2, || {
        batch::verify_all(&public.verifier(RsaScheme::Pkcs1v15), &items)
    });
    let expected: Vec<bool> = (0..16).map(|i| i != 3).collect();
    assert_eq!(results, expected);
}

#[test]
fn oaep_round_trips_up_to_the_maximum_length() {
    let key = rsa2048();
    let public = key.public_key();
    assert_eq!(public.max_oaep_len(), 256 - 66);
    for len in [0, 1, 32, 190] {
        let message = data(len, len as u32);
        let ciphertext = public.encrypt_oaep(&message).unwrap();
        assert_eq!(ciphertext.len(), 256);
        assert_eq!(&*key.decrypt_oaep(&ciphertext).unwrap(), &message);
    }
}

#[test]
fn oaep_refuses_long_messages_and_bad_ciphertexts() {
    let key = rsa2048();
    let public = key.public_key();
    let err = public.encrypt_oaep(&[0; 191]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::MessageTooLong {
                len: 191,
                max: 190,
                bits: 2048
            }
        ),
        "{err}"
    );
    let mut ciphertext = public.encrypt_oaep(b"secret").unwrap();
    ciphertext[10] ^= 0x40;
    assert!(matches!(
        key.decrypt_oaep(&ciphertext),
        Err(Error::Decryption)
    ));
    assert!(matches!(
        key.decrypt_oaep(&ciphertext[1..]),
        Err(Error::Decryption)
    ));
    let other = with_threads(2, || RsaPrivateKey::generate(2048)).unwrap();
    let ciphertext = public.encrypt_oaep(b"secret").unwrap();
    assert!(matches!(
        other.decrypt_oaep(&ciphertext),
        Err(Error::Decryption)
    ));
}

#[test]
fn scheme_names_parse() {
    assert_eq!(
        "pkcs1v15".parse::<RsaScheme>().unwrap(),
        RsaScheme::Pkcs1v15
    );
    assert_eq!("PSS".parse::<RsaScheme>().unwrap(), RsaScheme::Pss);
    let err = "oaep".parse::<RsaScheme>().unwrap_err();
    assert!(err.contains("valid: pkcs1v15, pss"));
}
