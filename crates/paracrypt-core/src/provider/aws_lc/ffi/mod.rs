//! The one module with `unsafe`: the aws-lc functions that aws-lc-rs has no safe API for, each
//! called in one place and wrapped in a small safe type (the aws-lc-rs / ring style).
//!
//! - [`DesKey`]: DES and 3DES (EDE3) in ECB and CBC, keyed with `DES_set_key_unchecked`, so
//!   weak and repeated keys work as `openssl enc` takes them (aws-lc-rs's DES refuses them).
//! - [`Rc4Key`]: the RC4 keystream.
//! - [`EvpEcb`]: AES-ECB through `EVP_CIPHER`, which pipelines blocks (aws-lc-rs's ECB calls
//!   the one-block `AES_ecb_encrypt` per block, several times slower).
//! - [`EvpCtr`]: AES-CTR from one slice into another (aws-lc-rs's CTR works in place only).
//! - [`EvpGcmOpen`]: AES-GCM opened in place through `EVP_CIPHER`, a failed open leaving the
//!   ciphertext as it was (aws-lc-rs's `EVP_AEAD` zeroes it).
//! - [`Bignum`], [`BnCtx`], [`MontCtx`] and the functions on them: what RSA's split private
//!   operation and the parallel prime search need.
//!
//! Every pointer handed to C comes from a live Rust reference or from an owning wrapper whose
//! `Drop` frees it exactly once; every function that can fail is checked and turned into
//! [`FfiError`]. The key schedules are plain C structs owned by Rust and zeroized on drop.
//!
//! One file per subject: [`des`], [`rc4`], [`evp`] (`EVP_CIPHER` contexts), [`bn`] (big
//! numbers and primes).
#![allow(unsafe_code)]

use std::ffi::c_int;

use aws_lc_sys as sys;

mod bn;
mod des;
mod evp;
mod rc4;

#[cfg(test)]
pub(crate) use bn::mod_exp_public;
pub(crate) use bn::{
    Bignum, BnCtx, MontCtx, generate_prime, mod_exp_consttime, mod_inverse_blinded, mod_montgomery,
    mod_mul, mod_sub, mul_add, rand_range,
};
pub(crate) use des::{DES_BLOCK, DesKey};
pub(crate) use evp::{EvpCbc, EvpCtr, EvpEcb, EvpGcmOpen};
pub(crate) use rc4::Rc4Key;

/// An aws-lc call failed (allocation failure or an internal error): names the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FfiError(pub &'static str);

impl std::fmt::Display for FfiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "aws-lc {} failed", self.0)
    }
}

type Result<T> = std::result::Result<T, FfiError>;

/// Turns aws-lc's `1 = success` convention into a `Result`.
fn check(ret: c_int, what: &'static str) -> Result<()> {
    if ret == 1 {
        Ok(())
    } else {
        // SAFETY: clears this thread's aws-lc error queue; no arguments.
        unsafe { sys::ERR_clear_error() };
        Err(FfiError(what))
    }
}

fn enc_flag(encrypt: bool) -> c_int {
    c_int::from(encrypt)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn des_known_answer() {
        // FIPS 81 / the classic "Now is the time for all " example, ECB.
        let key = DesKey::new(&hex::decode("0123456789abcdef").unwrap()).unwrap();
        let mut data = b"Now is t".to_vec();
        key.ecb(true, &mut data);
        assert_eq!(hex::encode(&data), "3fa40e8a984d4815");
        key.ecb(false, &mut data);
        assert_eq!(&data, b"Now is t");
    }

    #[test]
    fn bignum_round_trip_and_arithmetic() {
        let mut ctx = BnCtx::new().unwrap();
        let m = Bignum::from_u64(1_000_003).unwrap();
        let mont = MontCtx::new_consttime(&m, &mut ctx).unwrap();
        let a = Bignum::from_u64(123_456).unwrap();
        let e = Bignum::from_u64(65_537).unwrap();
        let x = mod_exp_consttime(&a, &e, &m, &mont, &mut ctx).unwrap();
        let y = mod_exp_public(&a, &e, &m, &mut ctx).unwrap();
        assert!(x == y);
        let inv = mod_inverse_blinded(&a, &mont, &mut ctx).unwrap().unwrap();
        let one = mod_mul(&a, &inv, &mont, &mut ctx).unwrap();
        assert_eq!(one.to_be_bytes(1).unwrap(), [1]);
        assert_eq!(
            Bignum::from_be_bytes(&[1, 0])
                .unwrap()
                .to_be_bytes(3)
                .unwrap(),
            [0, 1, 0]
        );
        assert!(Bignum::from_u64(1 << 20).unwrap().to_be_bytes(2).is_err());
    }

    #[test]
    fn prime_search_stops_when_told() {
        let stop = AtomicBool::new(true);
        assert!(generate_prime(1024, &stop).unwrap().is_none());
        let go = AtomicBool::new(false);
        let p = generate_prime(256, &go).unwrap().unwrap();
        assert_eq!(p.bits(), 256);
        assert_eq!(p.mod_word(2), 1);
    }
}
