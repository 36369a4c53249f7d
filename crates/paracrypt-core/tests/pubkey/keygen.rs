//! RSA key generation: the parallel search gives keys of the rsa crate's quality on any
//! number of threads.

use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{Odd, Resize};
use paracrypt_core::pubkey::Error;
use paracrypt_core::pubkey::keygen::{PUBLIC_EXPONENT, generate_rsa};
use rsa::BoxedUint;
use rsa::traits::{PrivateKeyParts, PublicKeyParts};

use super::with_threads;

/// The properties the rsa crate's own generator guarantees, plus FIPS 186-5's |p − q| and d.
fn check_key(key: &rsa::RsaPrivateKey, bits: usize) {
    assert_eq!(key.n().bits() as usize, bits, "modulus size");
    assert_eq!(key.e(), &BoxedUint::from(PUBLIC_EXPONENT), "e = 65537");
    key.validate().expect("the rsa crate validates the key");
    let primes = key.primes();
    assert_eq!(primes.len(), 2);
    let half = bits / 2;
    for prime in primes {
        let prime = prime.as_ref();
        assert_eq!(prime.bits() as usize, half, "each prime has half the bits");
        assert!(prime.bit_vartime(half as u32 - 1), "top bit set");
        assert!(prime.bit_vartime(half as u32 - 2), "second bit set");
        assert!(fermat_base_3(prime), "prime");
    }
    let (p, q) = (primes[0].as_ref(), primes[1].as_ref());
    let diff = if p > q {
        p.wrapping_sub(q)
    } else {
        q.wrapping_sub(p)
    };
    assert!(
        diff.bits() as usize > half - 100,
        "|p - q| > 2^(nlen/2 - 100)"
    );
    assert!(key.d().bits() as usize > half, "d > 2^(nlen/2)");
}

/// An independent check on top of the BPSW test the generator ran: Fermat, base 3.
fn fermat_base_3(p: &BoxedUint) -> bool {
    let precision = p.bits_precision();
    let params = BoxedMontyParams::new(Odd::new(p.clone()).unwrap());
    let three = BoxedMontyForm::new(BoxedUint::from(3u32).resize_unchecked(precision), &params);
    let p_minus_1 = p.wrapping_sub(BoxedUint::one_with_precision(precision));
    bool::from(three.pow(&p_minus_1).retrieve().is_one())
}

#[test]
fn rsa_2048_keys_on_one_two_and_three_threads() {
    for threads in [1, 2, 3] {
        let key = with_threads(threads, || generate_rsa(2048)).unwrap();
        check_key(&key, 2048);
    }
}

#[test]
fn rsa_3072_and_4096_keys() {
    for bits in [3072, 4096] {
        let key = with_threads(2, || generate_rsa(bits)).unwrap();
        check_key(&key, bits);
    }
}

#[test]
fn every_key_is_new() {
    let (a, b) = with_threads(2, || {
        (generate_rsa(2048).unwrap(), generate_rsa(2048).unwrap())
    });
    assert_ne!(a.n(), b.n());
}

#[test]
fn only_2048_3072_and_4096_are_offered() {
    for bits in [0, 1024, 2047, 8192] {
        let err = generate_rsa(bits).unwrap_err();
        assert!(matches!(err, Error::KeySize { .. }), "{bits}: {err}");
        assert!(err.to_string().contains("valid: 2048, 3072, 4096"));
    }
}
