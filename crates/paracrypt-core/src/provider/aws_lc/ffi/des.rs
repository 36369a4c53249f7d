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
