//! Big numbers: what RSA's split private operation and the parallel prime search need.

use std::ffi::{c_int, c_void};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};

use aws_lc_sys as sys;

use super::{FfiError, Result, check};

/// An owned `BIGNUM`, cleared on drop (it may hold a secret).
pub(crate) struct Bignum(NonNull<sys::BIGNUM>);

// SAFETY: a `BIGNUM` is plain heap data with no thread affinity; `&Bignum` only reaches C
// through `const` pointers (reads), `&mut Bignum` is exclusive.
unsafe impl Send for Bignum {}
// SAFETY: as above.
unsafe impl Sync for Bignum {}

impl Bignum {
    /// Zero.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no arguments; returns an owned BIGNUM or null.
        NonNull::new(unsafe { sys::BN_new() })
            .map(Bignum)
            .ok_or(FfiError("BN_new"))
    }

    /// The unsigned big-endian integer in `bytes`.
    pub(crate) fn from_be_bytes(bytes: &[u8]) -> Result<Self> {
        let bn = Bignum::new()?;
        // SAFETY: `bytes` is valid for its length; `bn` is live and owned; on success the
        // function returns `bn` itself.
        let ret = unsafe { sys::BN_bin2bn(bytes.as_ptr(), bytes.len(), bn.ptr()) };
        if ret.is_null() {
            return Err(FfiError("BN_bin2bn"));
        }
        Ok(bn)
    }

    /// A small integer (the tests' values).
    #[cfg(test)]
    pub(crate) fn from_u64(value: u64) -> Result<Self> {
        let bn = Bignum::new()?;
        // SAFETY: `bn` is live and owned.
        check(unsafe { sys::BN_set_word(bn.ptr(), value) }, "BN_set_word")?;
        Ok(bn)
    }

    /// The value as exactly `len` big-endian bytes (fails if it does not fit).
    pub(crate) fn to_be_bytes(&self, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        // SAFETY: `out` is valid for `len` bytes; `self` is live and only read.
        check(
            unsafe { sys::BN_bn2bin_padded(out.as_mut_ptr(), len, self.0.as_ptr()) },
            "BN_bn2bin_padded",
        )?;
        Ok(out)
    }

    /// The number of significant bits (the tests check the primes' size with it).
    #[cfg(test)]
    pub(crate) fn bits(&self) -> u32 {
        // SAFETY: `self` is live and only read.
        unsafe { sys::BN_num_bits(self.0.as_ptr()) }
    }

    /// `self mod w` for a word `w > 0` (the tests check the primes' parity with it).
    #[cfg(test)]
    pub(crate) fn mod_word(&self, w: u64) -> u64 {
        // SAFETY: `self` is live and only read; `w` is not zero (callers pass constants).
        unsafe { sys::BN_mod_word(self.0.as_ptr(), w) }
    }

    fn ptr(&self) -> *mut sys::BIGNUM {
        self.0.as_ptr()
    }
}

impl PartialEq for Bignum {
    fn eq(&self, other: &Self) -> bool {
        // SAFETY: both are live and only read.
        unsafe { sys::BN_cmp(self.0.as_ptr(), other.0.as_ptr()) == 0 }
    }
}

impl Drop for Bignum {
    fn drop(&mut self) {
        // SAFETY: we own the BIGNUM; this clears and frees it once.
        unsafe { sys::BN_clear_free(self.0.as_ptr()) };
    }
}

/// An owned `BN_CTX` (scratch space): one per thread, never shared.
pub(crate) struct BnCtx(NonNull<sys::BN_CTX>);

// SAFETY: a `BN_CTX` has no thread affinity; it is only used through `&mut`.
unsafe impl Send for BnCtx {}

impl BnCtx {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no arguments; returns an owned context or null.
        NonNull::new(unsafe { sys::BN_CTX_new() })
            .map(BnCtx)
            .ok_or(FfiError("BN_CTX_new"))
    }
}

impl Drop for BnCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context and free it once.
        unsafe { sys::BN_CTX_free(self.0.as_ptr()) };
    }
}

/// Montgomery parameters of an odd modulus, computed in constant time (the modulus may be a
/// secret prime). Read-only once built, so shared across threads.
pub(crate) struct MontCtx(NonNull<sys::BN_MONT_CTX>);

// SAFETY: after construction a `BN_MONT_CTX` is only read (every function below takes it as
// `const`); it has no thread affinity.
unsafe impl Send for MontCtx {}
// SAFETY: as above.
unsafe impl Sync for MontCtx {}

impl MontCtx {
    /// Parameters for the odd modulus `m`.
    pub(crate) fn new_consttime(m: &Bignum, ctx: &mut BnCtx) -> Result<Self> {
        // SAFETY: `m` and `ctx` are live; the function copies `m`.
        NonNull::new(unsafe { sys::BN_MONT_CTX_new_consttime(m.0.as_ptr(), ctx.0.as_ptr()) })
            .map(MontCtx)
            .ok_or(FfiError("BN_MONT_CTX_new_consttime"))
    }
}

impl Drop for MontCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context and free it once.
        unsafe { sys::BN_MONT_CTX_free(self.0.as_ptr()) };
    }
}

/// `a^p mod m` in constant time (`BN_mod_exp_mont_consttime`); `a < m`, `mont` built for `m`.
pub(crate) fn mod_exp_consttime(
    a: &Bignum,
    p: &Bignum,
    m: &Bignum,
    mont: &MontCtx,
    ctx: &mut BnCtx,
) -> Result<Bignum> {
    let r = Bignum::new()?;
    // SAFETY: every pointer comes from a live wrapper; `r` is fresh and distinct from the
    // inputs; `mont` matches `m` (the callers build it from `m`).
    check(
        unsafe {
            sys::BN_mod_exp_mont_consttime(
                r.ptr(),
                a.0.as_ptr(),
                p.0.as_ptr(),
                m.0.as_ptr(),
                ctx.0.as_ptr(),
                mont.0.as_ptr(),
            )
        },
        "BN_mod_exp_mont_consttime",
    )?;
    Ok(r)
}

/// `a^p mod m` with a public exponent (variable time in `p` only): the tests' reference for
/// the constant-time exponentiation.
#[cfg(test)]
pub(crate) fn mod_exp_public(
    a: &Bignum,
    p: &Bignum,
    m: &Bignum,
    ctx: &mut BnCtx,
) -> Result<Bignum> {
    let r = Bignum::new()?;
    // SAFETY: every pointer comes from a live wrapper; `r` is fresh; a null `mont` makes the
    // function build its own parameters.
    check(
        unsafe {
            sys::BN_mod_exp_mont(
                r.ptr(),
                a.0.as_ptr(),
                p.0.as_ptr(),
                m.0.as_ptr(),
                ctx.0.as_ptr(),
                ptr::null(),
            )
        },
        "BN_mod_exp_mont",
    )?;
    Ok(r)
}

/// `a mod m` in constant time, for `a < m · R` (two Montgomery reductions, as aws-lc's own
/// RSA reduces mod p and q).
pub(crate) fn mod_montgomery(a: &Bignum, mont: &MontCtx, ctx: &mut BnCtx) -> Result<Bignum> {
    let r = Bignum::new()?;
    // SAFETY: live wrappers; `r` is fresh; the second call works in place on `r`, which the
    // function allows.
    unsafe {
        check(
            sys::BN_from_montgomery(r.ptr(), a.0.as_ptr(), mont.0.as_ptr(), ctx.0.as_ptr()),
            "BN_from_montgomery",
        )?;
        check(
            sys::BN_to_montgomery(r.ptr(), r.ptr(), mont.0.as_ptr(), ctx.0.as_ptr()),
            "BN_to_montgomery",
        )?;
    }
    Ok(r)
}

/// `a · b mod m` in constant time for `a, b < m`.
pub(crate) fn mod_mul(a: &Bignum, b: &Bignum, mont: &MontCtx, ctx: &mut BnCtx) -> Result<Bignum> {
    let r = Bignum::new()?;
    // SAFETY: live wrappers; `r` is fresh; both in-place steps on `r` are allowed.
    unsafe {
        check(
            sys::BN_to_montgomery(r.ptr(), a.0.as_ptr(), mont.0.as_ptr(), ctx.0.as_ptr()),
            "BN_to_montgomery",
        )?;
        check(
            sys::BN_mod_mul_montgomery(
                r.ptr(),
                r.ptr(),
                b.0.as_ptr(),
                mont.0.as_ptr(),
                ctx.0.as_ptr(),
            ),
            "BN_mod_mul_montgomery",
        )?;
    }
    Ok(r)
}

/// `a⁻¹ mod m` by aws-lc's blinded inversion, for `a < m`; `None` when there is no inverse.
pub(crate) fn mod_inverse_blinded(
    a: &Bignum,
    mont: &MontCtx,
    ctx: &mut BnCtx,
) -> Result<Option<Bignum>> {
    let r = Bignum::new()?;
    let mut no_inverse: c_int = 0;
    // SAFETY: live wrappers; `r` is fresh; `no_inverse` is a live int.
    let ok = unsafe {
        sys::BN_mod_inverse_blinded(
            r.ptr(),
            &mut no_inverse,
            a.0.as_ptr(),
            mont.0.as_ptr(),
            ctx.0.as_ptr(),
        )
    };
    if ok != 1 && no_inverse != 0 {
        // SAFETY: clears this thread's error queue.
        unsafe { sys::ERR_clear_error() };
        return Ok(None);
    }
    check(ok, "BN_mod_inverse_blinded")?;
    Ok(Some(r))
}

/// `a − b mod m` in constant time for `a, b < m`.
pub(crate) fn mod_sub(a: &Bignum, b: &Bignum, m: &Bignum) -> Result<Bignum> {
    let r = Bignum::new()?;
    // SAFETY: live wrappers; `r` is fresh.
    check(
        unsafe { sys::BN_mod_sub_quick(r.ptr(), a.0.as_ptr(), b.0.as_ptr(), m.0.as_ptr()) },
        "BN_mod_sub_quick",
    )?;
    Ok(r)
}

/// `a · b + c` (no reduction).
pub(crate) fn mul_add(a: &Bignum, b: &Bignum, c: &Bignum, ctx: &mut BnCtx) -> Result<Bignum> {
    let r = Bignum::new()?;
    // SAFETY: live wrappers; `r` is fresh; `BN_add` in place on `r` is allowed.
    unsafe {
        check(
            sys::BN_mul(r.ptr(), a.0.as_ptr(), b.0.as_ptr(), ctx.0.as_ptr()),
            "BN_mul",
        )?;
        check(sys::BN_add(r.ptr(), r.ptr(), c.0.as_ptr()), "BN_add")?;
    }
    Ok(r)
}

/// A uniformly random integer in `[1, max)`.
pub(crate) fn rand_range(max: &Bignum) -> Result<Bignum> {
    let r = Bignum::new()?;
    // SAFETY: live wrappers; `r` is fresh.
    check(
        unsafe { sys::BN_rand_range_ex(r.ptr(), 1, max.0.as_ptr()) },
        "BN_rand_range_ex",
    )?;
    Ok(r)
}

/// The callback of [`generate_prime`]: returning 0 makes aws-lc abandon the search.
unsafe extern "C" fn keep_searching(_event: c_int, _n: c_int, cb: *mut sys::BN_GENCB) -> c_int {
    // SAFETY: aws-lc passes back the `BN_GENCB` that `generate_prime` set up, whose argument
    // is a pointer to an `AtomicBool` that outlives the search (it is borrowed for the whole
    // `BN_generate_prime_ex` call).
    let stop = unsafe { &*(sys::BN_GENCB_get_arg(cb) as *const AtomicBool) };
    c_int::from(!stop.load(Ordering::Acquire))
}

/// An owned `BN_GENCB`.
struct GenCb(NonNull<sys::BN_GENCB>);

impl Drop for GenCb {
    fn drop(&mut self) {
        // SAFETY: we own the callback structure and free it once.
        unsafe { sys::BN_GENCB_free(self.0.as_ptr()) };
    }
}

/// A random prime of exactly `bits` bits with the two top bits set (so a product of two has
/// exactly `2·bits` bits), by `BN_generate_prime_ex` (random start, small-prime sieve, then
/// Miller–Rabin with aws-lc's round count for the size). Returns `None` as soon as `stop` is
/// set: aws-lc asks the callback after every candidate and Miller–Rabin round.
pub(crate) fn generate_prime(bits: u32, stop: &AtomicBool) -> Result<Option<Bignum>> {
    let bits = c_int::try_from(bits).map_err(|_| FfiError("BN_generate_prime_ex (size)"))?;
    // SAFETY: no arguments; returns an owned structure or null.
    let cb = NonNull::new(unsafe { sys::BN_GENCB_new() })
        .map(GenCb)
        .ok_or(FfiError("BN_GENCB_new"))?;
    // SAFETY: `cb` is live; the argument points at `stop`, which outlives every use of `cb`
    // (both live until this function returns); the callback only reads it.
    unsafe {
        sys::BN_GENCB_set(
            cb.0.as_ptr(),
            Some(keep_searching),
            ptr::from_ref(stop).cast_mut().cast::<c_void>(),
        )
    };
    let prime = Bignum::new()?;
    // SAFETY: `prime` and `cb` are live; `add` and `rem` are null (no congruence asked).
    let ok = unsafe {
        sys::BN_generate_prime_ex(
            prime.ptr(),
            bits,
            0,
            ptr::null(),
            ptr::null(),
            cb.0.as_ptr(),
        )
    };
    if ok != 1 {
        // SAFETY: clears this thread's error queue.
        unsafe { sys::ERR_clear_error() };
        if stop.load(Ordering::Acquire) {
            return Ok(None);
        }
        return Err(FfiError("BN_generate_prime_ex"));
    }
    Ok(Some(prime))
}
