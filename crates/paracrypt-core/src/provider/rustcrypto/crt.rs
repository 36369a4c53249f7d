//! The split RSA private operation on RustCrypto's numbers (crypto-bigint): `c^d mod n`, mod p
//! ‖ mod q on two threads, blinded and re-checked. How it works, and why it is hazmat, is told
//! in the public docs of `paracrypt_core::pubkey::crt`, which re-exports [`CrtKey`].
//!
//! The caller's thread recombines the halves with Garner's formula,
//! `m = m_q + q · (q⁻¹ · (m_p − m_q) mod p)`. All arithmetic is crypto-bigint's constant-time
//! Montgomery arithmetic, as the `rsa` crate uses.

use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams, MontyParams};
use crypto_bigint::{BoxedUint, ConcatenatingMul, NonZero, RandomMod, Resize};
use rsa::traits::{PrivateKeyParts, PublicKeyParts};
use zeroize::Zeroize;

use crate::error::pubkey::{Error, Result};
use crate::provider::public_key::Parallelism;

/// The parts of an RSA private key that the split private operation needs.
///
/// Built once per key (from the `rsa` crate's precomputed CRT values); secret parts are
/// zeroized on drop.
pub struct CrtKey {
    public: rsa::RsaPublicKey,
    p: Half,
    q: Half,
    /// `q⁻¹ mod p`, in Montgomery form mod p.
    qinv: BoxedMontyForm,
    /// `q` as an integer of the prime precision, for Garner's recombination.
    q_value: BoxedUint,
}

/// One prime's half of the key.
struct Half {
    /// Montgomery parameters of the prime.
    params: MontyParams<BoxedUint>,
    /// The prime as a divisor (for the constant-time `rem`).
    modulus: NonZero<BoxedUint>,
    /// `d mod (prime − 1)`.
    d: BoxedUint,
}

impl std::fmt::Debug for CrtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrtKey")
            .field("bits", &self.public.n().bits())
            .finish_non_exhaustive()
    }
}

impl Drop for CrtKey {
    fn drop(&mut self) {
        for half in [&mut self.p, &mut self.q] {
            half.params.zeroize();
            half.d.zeroize();
            // `NonZero` has no `Zeroize`; overwrite it with a public value of the same width.
            half.modulus =
                NonZero::new(BoxedUint::one_with_precision(half.modulus.bits_precision()))
                    .expect("one is not zero");
        }
        self.qinv.zeroize();
        self.q_value.zeroize();
    }
}

impl CrtKey {
    /// Takes the CRT parts of `key`.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedKey`] for a multi-prime key or one without CRT values (every
    /// two-prime key the `rsa` crate builds or decodes has them).
    pub fn new(key: &rsa::RsaPrivateKey) -> Result<Self> {
        let unsupported = || Error::UnsupportedKey {
            reason: "the split RSA operation needs a two-prime key with CRT values".into(),
        };
        if key.primes().len() != 2 {
            return Err(unsupported());
        }
        let (Some(dp), Some(dq), Some(qinv), Some(p), Some(q)) =
            (key.dp(), key.dq(), key.qinv(), key.p(), key.q())
        else {
            return Err(unsupported());
        };
        let half = |params: &MontyParams<BoxedUint>, d: &BoxedUint| Half {
            params: params.clone(),
            modulus: params.modulus().as_nz_ref().clone(),
            d: d.clone(),
        };
        Ok(CrtKey {
            public: key.to_public_key(),
            p: half(p, dp),
            q: half(q, dq),
            qinv: qinv.clone(),
            q_value: q.modulus().as_ref().clone(),
        })
    }

    /// The public key.
    pub fn public_key(&self) -> &rsa::RsaPublicKey {
        &self.public
    }

    /// ⚠️ Raw RSA: `c^d mod n` for `c < n`, blinded, split over the two CRT halves (as the
    /// docs of `paracrypt_core::pubkey::crt` describe), and re-checked (`m^e ≡ c`) before it is
    /// returned.
    ///
    /// `c` must have the modulus's precision (`BoxedUint::from_be_slice(bytes,
    /// key.n_bits_precision())`).
    ///
    /// # Errors
    ///
    /// [`Error::Rsa`] when `c` is out of range or of another precision; [`Error::FaultDetected`]
    /// when the result fails its re-check.
    pub fn private_op(&self, c: &BoxedUint, parallelism: Parallelism) -> Result<BoxedUint> {
        let m = self.private_op_unchecked(c, parallelism)?;
        let check = rsa::hazmat::rsa_encrypt(&self.public, &m).map_err(Error::rsa("re-check"))?;
        if check != *c {
            return Err(Error::FaultDetected);
        }
        Ok(m)
    }

    /// The private operation without the re-check: for callers that re-check in another form
    /// (signing verifies the whole signature with the `rsa` crate).
    pub(super) fn private_op_unchecked(
        &self,
        c: &BoxedUint,
        parallelism: Parallelism,
    ) -> Result<BoxedUint> {
        let n = self.public.n();
        if c.bits_precision() != n.bits_precision() || c >= n.as_ref() {
            return Err(Error::Rsa {
                what: "private operation",
                source: rsa::Error::Decryption,
            });
        }
        let mut rng = rand::rng();
        loop {
            let mut r = BoxedUint::random_mod_vartime(&mut rng, n);
            let (mp, mq) =
                parallelism.join(|| self.half(&self.p, c, &r), || self.half(&self.q, c, &r));
            r.zeroize();
            // `None` only when r shares a factor with n (probability about 2^-1023): draw again.
            if let (Some(mp), Some(mq)) = (mp, mq) {
                return Ok(self.recombine(&mp, &mq));
            }
        }
    }

    /// `(c · r^e)^d_x · r⁻¹ mod x` for one prime `x`; `None` if `r ≡ 0 (mod x)`.
    fn half(&self, half: &Half, c: &BoxedUint, r: &BoxedUint) -> Option<BoxedUint> {
        let params = BoxedMontyParams::from(half.params.clone());
        let c_x = BoxedMontyForm::new(c.rem(&half.modulus), &params);
        let r_x = BoxedMontyForm::new(r.rem(&half.modulus), &params);
        let e = self.public.e();
        let blinded = c_x * r_x.pow_bounded_exp(e, e.bits());
        let y = blinded.pow(&half.d);
        let r_inv = r_x.invert().into_option()?;
        Some((y * r_inv).retrieve())
    }

    /// Garner: `m = m_q + q · (q⁻¹ · (m_p − m_q) mod p)`.
    fn recombine(&self, mp: &BoxedUint, mq: &BoxedUint) -> BoxedUint {
        let params = self.qinv.params();
        let precision = params.bits_precision();
        // m_q < q < 2^precision, which Montgomery conversion reduces correctly.
        let mq_mod_p = BoxedMontyForm::new(mq.clone().resize_unchecked(precision), params);
        let mp = BoxedMontyForm::new(mp.clone(), params);
        let h = (&self.qinv * &(mp - mq_mod_p)).retrieve();
        let n_precision = self.public.n().bits_precision();
        let hq = h
            .concatenating_mul(&self.q_value)
            .resize_unchecked(n_precision);
        mq.clone().resize_unchecked(n_precision).wrapping_add(&hq)
    }
}
