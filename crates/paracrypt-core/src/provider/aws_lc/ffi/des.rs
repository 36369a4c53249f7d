//! DES and 3DES (EDE3) in ECB and CBC, keyed with `DES_set_key_unchecked`.

use aws_lc_sys as sys;
use zeroize::Zeroize;

use super::enc_flag;

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
        let buf = data.as_mut_ptr();
        // SAFETY: `buf` is valid for reads and writes of `data.len()` bytes; in place is
        // allowed (see `ecb_raw`).
        unsafe { self.ecb_raw(encrypt, buf, buf, data.len()) }
    }

    /// ECB over whole blocks of `input`, written to `output` (of the same length): one pass.
    pub(crate) fn ecb_to(&self, encrypt: bool, input: &[u8], output: &mut [u8]) {
        assert_eq!(
            input.len(),
            output.len(),
            "DES ECB: input and output lengths"
        );
        // SAFETY: `input` is valid for reads and `output` (a distinct, exclusive borrow) for
        // writes of `input.len()` bytes.
        unsafe { self.ecb_raw(encrypt, input.as_ptr(), output.as_mut_ptr(), input.len()) }
    }

    /// ECB over `len` bytes (whole blocks) from `input` to `output`.
    ///
    /// # Safety
    ///
    /// `input` must be valid for reads and `output` for writes of `len` bytes; they may be
    /// the same pointer (aws-lc reads each input block into registers before writing its
    /// output, and OpenSSL documents in place as allowed) but must not overlap otherwise.
    unsafe fn ecb_raw(&self, encrypt: bool, input: *const u8, output: *mut u8, len: usize) {
        debug_assert!(len.is_multiple_of(DES_BLOCK));
        let [k1, k2, k3] = &self.schedules;
        for at in (0..len).step_by(DES_BLOCK) {
            // SAFETY: `at + 8 <= len`, so both blocks lie inside the caller's valid ranges (a
            // `DES_cblock` is `[u8; 8]`, alignment 1); the schedules are live.
            unsafe {
                let from: *const sys::DES_cblock = input.add(at).cast();
                let to: *mut sys::DES_cblock = output.add(at).cast();
                if self.triple {
                    sys::DES_ecb3_encrypt(from, to, k1, k2, k3, enc_flag(encrypt));
                } else {
                    sys::DES_ecb_encrypt(from, to, k1, enc_flag(encrypt));
                }
            }
        }
    }

    /// CBC over whole blocks, in place; `iv` becomes the chaining value for what follows
    /// (the last ciphertext block).
    pub(crate) fn cbc(&self, encrypt: bool, iv: &mut [u8; DES_BLOCK], data: &mut [u8]) {
        let buf = data.as_mut_ptr();
        // SAFETY: `buf` is valid for reads and writes of `data.len()` bytes; in place is
        // allowed (see `cbc_raw`).
        unsafe { self.cbc_raw(encrypt, iv, buf, buf, data.len()) }
    }

    /// CBC over whole blocks of `input`, written to `output` (of the same length): one pass;
    /// `iv` becomes the chaining value for what follows.
    pub(crate) fn cbc_to(
        &self,
        encrypt: bool,
        iv: &mut [u8; DES_BLOCK],
        input: &[u8],
        output: &mut [u8],
    ) {
        assert_eq!(
            input.len(),
            output.len(),
            "DES CBC: input and output lengths"
        );
        // SAFETY: `input` is valid for reads and `output` (a distinct, exclusive borrow) for
        // writes of `input.len()` bytes.
        unsafe {
            self.cbc_raw(
                encrypt,
                iv,
                input.as_ptr(),
                output.as_mut_ptr(),
                input.len(),
            )
        }
    }

    /// CBC over `len` bytes (whole blocks) from `input` to `output`.
    ///
    /// # Safety
    ///
    /// As [`ecb_raw`](Self::ecb_raw): `input` valid for reads and `output` for writes of `len`
    /// bytes, the same pointer or not overlapping (each block is loaded before its output is
    /// stored, so in place is supported).
    unsafe fn cbc_raw(
        &self,
        encrypt: bool,
        iv: &mut [u8; DES_BLOCK],
        input: *const u8,
        output: *mut u8,
        len: usize,
    ) {
        debug_assert!(len.is_multiple_of(DES_BLOCK));
        let [k1, k2, k3] = &self.schedules;
        let ivec: *mut sys::DES_cblock = iv.as_mut_ptr().cast();
        // SAFETY: the caller's ranges are valid for `len` bytes (a whole number of blocks, so
        // the C code never pads or reads past them); `ivec` points at our 8-byte IV, which C
        // updates; the schedules are live.
        unsafe {
            if self.triple {
                sys::DES_ede3_cbc_encrypt(input, output, len, k1, k2, k3, ivec, enc_flag(encrypt));
            } else {
                sys::DES_ncbc_encrypt(input, output, len, k1, ivec, enc_flag(encrypt));
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
