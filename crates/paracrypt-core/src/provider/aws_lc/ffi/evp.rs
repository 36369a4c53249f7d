//! `EVP_CIPHER`: AES-ECB pipelined, AES-CTR from one slice into another, and AES-GCM opened
//! in place.

use std::ffi::{c_int, c_void};
use std::ptr::{self, NonNull};

use aws_lc_sys as sys;

use super::{FfiError, Result, check, enc_flag};

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

    /// [`keyed`](Self::keyed), with padding off: whole blocks in, the same blocks out (ECB,
    /// CBC).
    fn unpadded(cipher: *const sys::EVP_CIPHER, key: &[u8], encrypt: bool) -> Result<Self> {
        let ctx = CipherCtx::keyed(cipher, key, encrypt)?;
        // SAFETY: the context is live and initialised.
        check(
            unsafe { sys::EVP_CIPHER_CTX_set_padding(ctx.0.as_ptr(), 0) },
            "EVP_CIPHER_CTX_set_padding",
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

    /// A working copy of a keyed template set to `iv` (the cipher's IV length), in direction
    /// `encrypt`.
    fn started(template: &CipherCtx, iv: &[u8], encrypt: bool) -> Result<Self> {
        let ctx = CipherCtx::copy_of(template)?;
        // SAFETY: the context is live and keyed; a null cipher and key keep them; `iv` is at
        // least the cipher's IV length (12 bytes for GCM, 16 for CTR: the callers' types).
        check(
            unsafe {
                sys::EVP_CipherInit_ex(
                    ctx.0.as_ptr(),
                    ptr::null(),
                    ptr::null_mut(),
                    ptr::null(),
                    iv.as_ptr(),
                    enc_flag(encrypt),
                )
            },
            "EVP_CipherInit_ex (IV)",
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

    /// [`update_in_place`](Self::update_in_place) from `input` into `output` (of the same
    /// length): one pass.
    fn update_to(&self, input: &[u8], output: &mut [u8]) -> Result<()> {
        if input.len() != output.len() {
            return Err(FfiError("EVP_CipherUpdate (input and output lengths)"));
        }
        for (input, output) in input.chunks(1 << 30).zip(output.chunks_mut(1 << 30)) {
            let len = c_int::try_from(input.len()).expect("pieces are below 2^30");
            let mut written: c_int = 0;
            // SAFETY: `input` is valid for reads and `output` (a distinct, exclusive borrow)
            // for writes of `len` bytes; the ciphers used here write exactly `len` bytes for
            // `len` bytes in.
            check(
                unsafe {
                    sys::EVP_CipherUpdate(
                        self.0.as_ptr(),
                        output.as_mut_ptr(),
                        &mut written,
                        input.as_ptr(),
                        len,
                    )
                },
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
        let template = CipherCtx::unpadded(cipher, key, encrypt)?;
        Ok(Some(EvpEcb { template }))
    }

    /// Encrypts or decrypts (as keyed) whole 16-byte blocks in place.
    pub(crate) fn apply(&self, data: &mut [u8]) -> Result<()> {
        debug_assert!(data.len().is_multiple_of(16));
        CipherCtx::copy_of(&self.template)?.update_in_place(data)
    }

    /// [`apply`](Self::apply) from `input` into `output` (of the same length): one pass.
    pub(crate) fn apply_to(&self, input: &[u8], output: &mut [u8]) -> Result<()> {
        debug_assert!(input.len().is_multiple_of(16));
        CipherCtx::copy_of(&self.template)?.update_to(input, output)
    }
}

/// AES-CBC (128, 192 or 256-bit key, no padding: whole blocks) from one slice into another in
/// one pass (aws-lc-rs's CBC works in place only).
///
/// As [`EvpEcb`], a keyed template copied for every call, in one direction.
pub(crate) struct EvpCbc {
    template: CipherCtx,
    encrypt: bool,
}

// SAFETY: after `new` the template is only ever read, through the `const` pointer of
// `EVP_CIPHER_CTX_copy`; reads from many threads at once are sound.
unsafe impl Send for EvpCbc {}
// SAFETY: as above: shared access only reads the template.
unsafe impl Sync for EvpCbc {}

impl EvpCbc {
    /// A keyed AES-CBC context for `encrypt`ion or decryption (`None` for a key length other
    /// than 16, 24 or 32).
    pub(crate) fn aes(key: &[u8], encrypt: bool) -> Result<Option<Self>> {
        // SAFETY: these return pointers to static cipher tables.
        let cipher = unsafe {
            match key.len() {
                16 => sys::EVP_aes_128_cbc(),
                24 => sys::EVP_aes_192_cbc(),
                32 => sys::EVP_aes_256_cbc(),
                _ => return Ok(None),
            }
        };
        let template = CipherCtx::unpadded(cipher, key, encrypt)?;
        Ok(Some(EvpCbc { template, encrypt }))
    }

    /// CBC over whole 16-byte blocks of `input` from `iv`, written to `output` (of the same
    /// length). Without padding every block in gives its block out at once.
    pub(crate) fn apply_to(&self, iv: &[u8; 16], input: &[u8], output: &mut [u8]) -> Result<()> {
        debug_assert!(input.len().is_multiple_of(16));
        CipherCtx::started(&self.template, iv, self.encrypt)?.update_to(input, output)
    }
}

/// AES-CTR (128, 192 or 256-bit key, a 128-bit big-endian counter) from one slice into
/// another in one pass (aws-lc-rs's CTR works in place only).
///
/// As [`EvpEcb`], a keyed template copied for every call.
pub(crate) struct EvpCtr {
    template: CipherCtx,
}

// SAFETY: after `new` the template is only ever read, through the `const` pointer of
// `EVP_CIPHER_CTX_copy`; reads from many threads at once are sound.
unsafe impl Send for EvpCtr {}
// SAFETY: as above: shared access only reads the template.
unsafe impl Sync for EvpCtr {}

impl EvpCtr {
    /// A keyed AES-CTR context (`None` for a key length other than 16, 24 or 32).
    pub(crate) fn aes(key: &[u8]) -> Result<Option<Self>> {
        // SAFETY: these return pointers to static cipher tables.
        let cipher = unsafe {
            match key.len() {
                16 => sys::EVP_aes_128_ctr(),
                24 => sys::EVP_aes_192_ctr(),
                32 => sys::EVP_aes_256_ctr(),
                _ => return Ok(None),
            }
        };
        Ok(Some(EvpCtr {
            template: CipherCtx::keyed(cipher, key, true)?,
        }))
    }

    /// XORs the keystream from counter block `counter`, byte `skip` (below 16) on, into
    /// `input`, written to `output` (of the same length).
    pub(crate) fn apply_to(
        &self,
        counter: &[u8; 16],
        skip: usize,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let ctx = CipherCtx::started(&self.template, counter, true)?;
        if skip != 0 {
            // Move the keystream to byte `skip` of the first block.
            ctx.update_in_place(&mut [0u8; 16][..skip])?;
        }
        ctx.update_to(input, output)
    }
}

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
        CipherCtx::started(&self.template, nonce, encrypt)
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
