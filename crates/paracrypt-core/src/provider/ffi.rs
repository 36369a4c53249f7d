//! The one module with `unsafe`: the aws-lc functions that aws-lc-rs has no safe API for, each
//! called in one place and wrapped in a small safe type (the aws-lc-rs / ring style).
//!
//! - [`DesKey`]: DES and 3DES (EDE3) in ECB and CBC, keyed with `DES_set_key_unchecked`, so
//!   weak and repeated keys work as `openssl enc` takes them (aws-lc-rs's DES refuses them).
//! - [`Rc4Key`]: the RC4 keystream.
//! - [`EvpEcb`]: AES-ECB through `EVP_CIPHER`, which pipelines blocks (aws-lc-rs's ECB calls
//!   the one-block `AES_ecb_encrypt` per block, several times slower).
//! - [`EvpGcmOpen`]: AES-GCM opened in place through `EVP_CIPHER`, a failed open leaving the
//!   ciphertext as it was (aws-lc-rs's `EVP_AEAD` zeroes it).
//! - [`Bignum`], [`BnCtx`], [`MontCtx`] and the functions on them: what RSA's split private
//!   operation and the parallel prime search need.
//!
//! Every pointer handed to C comes from a live Rust reference or from an owning wrapper whose
//! `Drop` frees it exactly once; every function that can fail is checked and turned into
//! [`FfiError`]. The key schedules are plain C structs owned by Rust and zeroized on drop.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};

use aws_lc_sys as sys;
use zeroize::Zeroize;

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

// ---------------------------------------------------------------------------------------------
// DES and 3DES

/// A DES (one schedule) or 3DES-EDE3 (three schedules) key.
pub(crate) struct DesKey {
    schedules: [sys::DES_key_schedule; 3],
    triple: bool,
}

/// DES's block size.
pub(crate) const DES_BLOCK: usize = 8;

impl DesKey {
    /// Single DES from an 8-byte key, or 3DES-EDE3 from a 24-byte key (any key bytes: parity
    /// is ignored and weak keys are allowed, as `openssl enc` does).
    pub(crate) fn new(key: &[u8]) -> Option<Self> {
        let triple = match key.len() {
            8 => false,
            24 => true,
            _ => return None,
        };
        let empty = sys::DES_key_schedule {
            subkeys: [[0; 2]; 16],
        };
        let mut schedules = [empty; 3];
        for (schedule, part) in schedules.iter_mut().zip(key.chunks_exact(8)) {
            let block = sys::DES_cblock {
                bytes: part.try_into().expect("chunks of 8"),
            };
            // SAFETY: both pointers come from live references to values of the declared C
            // types; the function only writes the schedule.
            unsafe { sys::DES_set_key_unchecked(&block, schedule) };
        }
        Some(DesKey { schedules, triple })
    }

    /// ECB over whole blocks, in place.
    pub(crate) fn ecb(&self, encrypt: bool, data: &mut [u8]) {
        debug_assert!(data.len().is_multiple_of(DES_BLOCK));
        let [k1, k2, k3] = &self.schedules;
        for chunk in data.chunks_exact_mut(DES_BLOCK) {
            let block: *mut sys::DES_cblock = chunk.as_mut_ptr().cast();
            // SAFETY: `block` points at 8 bytes of `data` (a `DES_cblock` is `[u8; 8]`,
            // alignment 1); aws-lc reads the input block into registers before writing the
            // output, so in place is allowed (as OpenSSL documents); the schedules are live.
            unsafe {
                if self.triple {
                    sys::DES_ecb3_encrypt(block, block, k1, k2, k3, enc_flag(encrypt));
                } else {
                    sys::DES_ecb_encrypt(block, block, k1, enc_flag(encrypt));
                }
            }
        }
    }

    /// CBC over whole blocks, in place; `iv` becomes the chaining value for what follows
    /// (the last ciphertext block).
    pub(crate) fn cbc(&self, encrypt: bool, iv: &mut [u8; DES_BLOCK], data: &mut [u8]) {
        debug_assert!(data.len().is_multiple_of(DES_BLOCK));
        let [k1, k2, k3] = &self.schedules;
        let ivec: *mut sys::DES_cblock = iv.as_mut_ptr().cast();
        let len = data.len();
        let buf = data.as_mut_ptr();
        // SAFETY: `buf` is valid for `len` bytes (a whole number of blocks, so the C code
        // never pads or reads past it); in-place CBC is supported (each block is loaded
        // before its output is stored); `ivec` points at our 8-byte IV, which C updates.
        unsafe {
            if self.triple {
                sys::DES_ede3_cbc_encrypt(buf, buf, len, k1, k2, k3, ivec, enc_flag(encrypt));
            } else {
                sys::DES_ncbc_encrypt(buf, buf, len, k1, ivec, enc_flag(encrypt));
            }
        }
    }
}

impl Drop for DesKey {
    fn drop(&mut self) {
        for schedule in &mut self.schedules {
            schedule.subkeys.zeroize();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RC4

/// An RC4 keystream (its state moves with every byte).
pub(crate) struct Rc4Key(Box<sys::RC4_KEY>);

impl Rc4Key {
    /// A key of 1 to 256 bytes (`None` outside).
    pub(crate) fn new(key: &[u8]) -> Option<Self> {
        if !(1..=256).contains(&key.len()) {
            return None;
        }
        let mut state = Box::new(sys::RC4_KEY {
            x: 0,
            y: 0,
            data: [0; 256],
        });
        let len = u32::try_from(key.len()).expect("at most 256");
        // SAFETY: `state` is a live, owned `RC4_KEY`; `key` is valid for `len` bytes.
        unsafe { sys::RC4_set_key(&mut *state, len, key.as_ptr()) };
        Some(Rc4Key(state))
    }

    /// XORs the next `data.len()` keystream bytes into `data`.
    pub(crate) fn apply(&mut self, data: &mut [u8]) {
        let buf = data.as_mut_ptr();
        // SAFETY: `buf` is valid for `data.len()` bytes; RC4 reads each byte before writing
        // it, so in place is allowed; the state is live and exclusively borrowed.
        unsafe { sys::RC4(&mut *self.0, data.len(), buf, buf) };
    }
}

impl Drop for Rc4Key {
    fn drop(&mut self) {
        self.0.data.zeroize();
        self.0.x = 0;
        self.0.y = 0;
    }
}

// ---------------------------------------------------------------------------------------------
// AES-ECB through EVP

/// An owned `EVP_CIPHER_CTX`.
struct CipherCtx(NonNull<sys::EVP_CIPHER_CTX>);

impl CipherCtx {
    fn new() -> Result<Self> {
        // SAFETY: no arguments; returns an owned context or null.
        NonNull::new(unsafe { sys::EVP_CIPHER_CTX_new() })
            .map(CipherCtx)
            .ok_or(FfiError("EVP_CIPHER_CTX_new"))
    }

    /// A context keyed with `key` for `cipher` (a static table whose key length is
    /// `key.len()`, checked by the callers), in direction `encrypt`, with no IV yet.
    fn keyed(cipher: *const sys::EVP_CIPHER, key: &[u8], encrypt: bool) -> Result<Self> {
        let ctx = CipherCtx::new()?;
        // SAFETY: the context is live; `cipher` is a static table; `key` is valid for the
        // cipher's key length (the callers check it); a null IV keeps the IV unset.
        check(
            unsafe {
                sys::EVP_CipherInit_ex(
                    ctx.0.as_ptr(),
                    cipher,
                    ptr::null_mut(),
                    key.as_ptr(),
                    ptr::null(),
                    enc_flag(encrypt),
                )
            },
            "EVP_CipherInit_ex",
        )?;
        Ok(ctx)
    }

    /// A working copy of a keyed template (the expanded key is copied, not recomputed), so
    /// that one template serves any number of threads at once.
    fn copy_of(template: &CipherCtx) -> Result<Self> {
        let ctx = CipherCtx::new()?;
        // SAFETY: both contexts are live; the template is only read.
        check(
            unsafe { sys::EVP_CIPHER_CTX_copy(ctx.0.as_ptr(), template.0.as_ptr()) },
            "EVP_CIPHER_CTX_copy",
        )?;
        Ok(ctx)
    }

    /// Runs `EVP_CipherUpdate` over `data` in place, in pieces below `int`'s limit; every
    /// byte in gives a byte out (ECB over whole blocks without padding, the AEADs' stream
    /// modes).
    fn update_in_place(&self, data: &mut [u8]) -> Result<()> {
        for piece in data.chunks_mut(1 << 30) {
            let len = c_int::try_from(piece.len()).expect("pieces are below 2^30");
            let buf = piece.as_mut_ptr();
            let mut written: c_int = 0;
            // SAFETY: `buf` is valid for `len` bytes; the ciphers used here write exactly
            // `len` bytes for `len` bytes in, and allow in == out.
            check(
                unsafe { sys::EVP_CipherUpdate(self.0.as_ptr(), buf, &mut written, buf, len) },
                "EVP_CipherUpdate",
            )?;
            if written != len {
                return Err(FfiError("EVP_CipherUpdate (short output)"));
            }
        }
        Ok(())
    }
}

impl Drop for CipherCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context; `EVP_CIPHER_CTX_free` cleanses the key schedule and
        // frees it once.
        unsafe { sys::EVP_CIPHER_CTX_free(self.0.as_ptr()) };
    }
}

/// AES-ECB (128, 192 or 256-bit key) for one direction, without padding.
///
/// Holds a keyed template context, never used for data; every call copies it (the expanded
/// key, no new key schedule) into a fresh context, so one `EvpEcb` serves any number of
/// threads at once.
pub(crate) struct EvpEcb {
    template: CipherCtx,
}

// SAFETY: after `new` the template is only ever read, through the `const` pointer of
// `EVP_CIPHER_CTX_copy`; reads from many threads at once are sound.
unsafe impl Send for EvpEcb {}
// SAFETY: as above: shared access only reads the template.
unsafe impl Sync for EvpEcb {}

impl EvpEcb {
    /// A keyed AES-ECB context (`None` for a key length other than 16, 24 or 32).
    pub(crate) fn aes(key: &[u8], encrypt: bool) -> Result<Option<Self>> {
        // SAFETY: these return pointers to static cipher tables.
        let cipher = unsafe {
            match key.len() {
                16 => sys::EVP_aes_128_ecb(),
                24 => sys::EVP_aes_192_ecb(),
                32 => sys::EVP_aes_256_ecb(),
                _ => return Ok(None),
            }
        };
        let template = CipherCtx::keyed(cipher, key, encrypt)?;
        // SAFETY: the context is live and initialised.
        check(
            unsafe { sys::EVP_CIPHER_CTX_set_padding(template.0.as_ptr(), 0) },
            "EVP_CIPHER_CTX_set_padding",
        )?;
        Ok(Some(EvpEcb { template }))
    }

    /// Encrypts or decrypts (as keyed) whole 16-byte blocks in place.
    pub(crate) fn apply(&self, data: &mut [u8]) -> Result<()> {
        debug_assert!(data.len().is_multiple_of(16));
        CipherCtx::copy_of(&self.template)?.update_in_place(data)
    }
}

// ---------------------------------------------------------------------------------------------
// AES-GCM opening in place through EVP_CIPHER

/// AES-GCM opened **in place** through `EVP_CIPHER`, a failed open leaving the ciphertext as it
/// was.
///
/// aws-lc's `EVP_AEAD` (behind aws-lc-rs) decrypts while it authenticates and zeroes the
/// output when the tag is wrong, so opening in place with it loses the ciphertext of a chunk
/// that fails, which the container needs for its diagnosis (the same chunk opened again as the
/// last one, or shorter). `EVP_CIPHER` decrypts in `EVP_CipherUpdate` and only checks the tag
/// in `EVP_CipherFinal_ex`, zeroing nothing; when the tag is wrong, encrypting the buffer again
/// under the same key and nonce XORs the same CTR keystream back, which restores the
/// ciphertext exactly. The success path is one pass, in place, with nothing copied (measured as
/// fast as sealing). ChaCha20-Poly1305 does not come here although aws-lc has it as an
/// `EVP_CIPHER` too (`EVP_chacha20_poly1305`, checked to give RFC 8439's bytes): that one runs
/// Poly1305 and ChaCha20 as two passes and opened about 25 % slower than `EVP_AEAD`'s stitched
/// pass plus a copy of the chunk, so the provider keeps the copy for it.
pub(crate) struct EvpGcmOpen {
    /// Keyed for decryption, no nonce: copied for each chunk.
    template: CipherCtx,
}

// SAFETY: after `new` the template is only ever read, through the `const` pointer of
// `EVP_CIPHER_CTX_copy`; reads from many threads at once are sound.
unsafe impl Send for EvpGcmOpen {}
// SAFETY: as above: shared access only reads the template.
unsafe impl Sync for EvpGcmOpen {}

/// GCM's nonce and tag lengths here (`EVP_CIPHER`'s defaults).
const AEAD_NONCE: usize = 12;
const AEAD_TAG: usize = 16;

impl EvpGcmOpen {
    /// AES-128-GCM or AES-256-GCM for a 16 or 32-byte key; `None` for another key length.
    pub(crate) fn new(key: &[u8]) -> Result<Option<Self>> {
        // SAFETY: these return pointers to static cipher tables.
        let cipher = unsafe {
            match key.len() {
                16 => sys::EVP_aes_128_gcm(),
                32 => sys::EVP_aes_256_gcm(),
                _ => return Ok(None),
            }
        };
        Ok(Some(EvpGcmOpen {
            template: CipherCtx::keyed(cipher, key, false)?,
        }))
    }

    /// A copy of the template set to `nonce`, for decryption or encryption.
    fn start(&self, nonce: &[u8; AEAD_NONCE], encrypt: bool) -> Result<CipherCtx> {
        let ctx = CipherCtx::copy_of(&self.template)?;
        // SAFETY: the context is live and keyed; a null cipher and key keep them; `nonce` is
        // the ciphers' default IV length (12 bytes).
        check(
            unsafe {
                sys::EVP_CipherInit_ex(
                    ctx.0.as_ptr(),
                    ptr::null(),
                    ptr::null_mut(),
                    ptr::null(),
                    nonce.as_ptr(),
                    enc_flag(encrypt),
                )
            },
            "EVP_CipherInit_ex (nonce)",
        )?;
        Ok(ctx)
    }

    /// Decrypts `data` in place and checks `tag` over `aad` and the ciphertext. `Ok(true)`:
    /// `data` holds the plaintext. `Ok(false)`: the tag is wrong, and `data` holds the
    /// ciphertext exactly as it was.
    pub(crate) fn open_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8; AEAD_TAG],
    ) -> Result<bool> {
        let ctx = self.start(nonce, false)?;
        if !aad.is_empty() {
            let len = c_int::try_from(aad.len()).map_err(|_| FfiError("AEAD (AAD length)"))?;
            let mut written: c_int = 0;
            // SAFETY: a null output makes this call absorb `aad` (valid for `len` bytes) as
            // associated data, writing nothing.
            check(
                unsafe {
                    sys::EVP_CipherUpdate(
                        ctx.0.as_ptr(),
                        ptr::null_mut(),
                        &mut written,
                        aad.as_ptr(),
                        len,
                    )
                },
                "EVP_CipherUpdate (AAD)",
            )?;
        }
        if !data.is_empty() {
            ctx.update_in_place(data)?;
        }
        let tag_len = c_int::try_from(AEAD_TAG).expect("16");
        // SAFETY: the context is live and decrypting; `tag` is valid for 16 bytes, which the
        // cipher copies (it only reads through the pointer).
        check(
            unsafe {
                sys::EVP_CIPHER_CTX_ctrl(
                    ctx.0.as_ptr(),
                    sys::EVP_CTRL_AEAD_SET_TAG,
                    tag_len,
                    tag.as_ptr().cast_mut().cast::<c_void>(),
                )
            },
            "EVP_CIPHER_CTX_ctrl (tag)",
        )?;
        let mut rest = [0u8; AEAD_TAG];
        let mut written: c_int = 0;
        // SAFETY: the context is live; the AEADs write no bytes at the end (`rest` has room
        // for a block all the same); 1 means the tag matched.
        let authentic =
            unsafe { sys::EVP_CipherFinal_ex(ctx.0.as_ptr(), rest.as_mut_ptr(), &mut written) };
        if authentic == 1 {
            return Ok(true);
        }
        // SAFETY: clears this thread's aws-lc error queue (the failed tag check); no arguments.
        unsafe { sys::ERR_clear_error() };
        // The same CTR keystream again turns the unauthenticated plaintext back into the
        // ciphertext.
        if !data.is_empty() {
            self.start(nonce, true)?.update_in_place(data)?;
        }
        Ok(false)
    }
}

// ---------------------------------------------------------------------------------------------
// Big numbers

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

#[cfg(test)]
mod tests {
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
