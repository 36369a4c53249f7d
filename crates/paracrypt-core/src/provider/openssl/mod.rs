//! The OpenSSL provider: the system's libcrypto 3 through the `openssl` crate's safe API
//! (`EVP_CIPHER` contexts, `EVP_PKEY`), no `unsafe` here.
//!
//! Every call keys a fresh `EVP_CIPHER_CTX` from the key bytes the object keeps (an AES key
//! schedule or a GCM hash key is a few hundred nanoseconds, against chunks of kilobytes to
//! megabytes), so one keyed object serves any number of threads with nothing shared. Data is
//! processed in place or from one slice into another in one pass: stream modes (CTR, GCM,
//! ChaCha20-Poly1305) directly, block modes with their last block through a stack buffer (the
//! crate asks for one spare block of output).
//!
//! Its table names RustCrypto's DES, Blowfish and RC4: OpenSSL 3 keeps them in its `legacy`
//! provider, which a library should not load into the whole process behind its caller's back.

mod pubkey;

use openssl::cipher::{Cipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::md::Md;
use openssl::pkey::{Id, PKey, Private};
use openssl::pkey_ctx::{HkdfMode, PkeyCtx};
use openssl::sign::Signer;
use zeroize::Zeroizing;

use super::{
    Aead, AeadAlg, BlockCipher, CtrCipher, Entry, HmacSha256, NONCE_LEN, Provider, TAG_LEN, Table,
    rustcrypto,
};
use crate::error::{Error, Result};

/// OpenSSL's table.
pub(crate) static TABLE: Table = Table {
    aes: own(aes),
    des: rustcrypto::DES,
    des_ede3: own(des_ede3),
    blowfish: rustcrypto::BLOWFISH,
    aes_ctr: own(aes_ctr),
    rc4: rustcrypto::RC4,
    aes_gcm: own(aead),
    chacha20_poly1305: own(aead),
    hmac_sha256: own(hmac_sha256),
    hkdf_sha256: own(hkdf_sha256_expand),
    rsa_private: own(pubkey::rsa_private),
    rsa_public: own(pubkey::rsa_public),
    rsa_prime: own(pubkey::prime),
    ecdsa_sign: own(pubkey::ecdsa_signer),
    ecdsa_verify: own(pubkey::ecdsa_verifier),
    ed25519_sign: own(pubkey::ed25519_signer),
    ed25519_verify: own(pubkey::ed25519_verifier),
};

const fn own<F>(make: F) -> Entry<F> {
    Entry {
        by: Provider::OpenSsl,
        make,
    }
}

/// OpenSSL's errors: say which call failed.
fn failed(what: &'static str) -> impl FnOnce(ErrorStack) -> Error {
    move |_| Error::Provider { what }
}

// ---------------------------------------------------------------------------------------------
// Block ciphers

/// A block cipher in ECB and CBC: the `EVP_CIPHER`s of both modes and the key.
struct Blocks {
    ecb: &'static CipherRef,
    cbc: &'static CipherRef,
    block: usize,
    key: Zeroizing<Vec<u8>>,
}

fn aes(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    let (ecb, cbc) = match key.len() {
        16 => (Cipher::aes_128_ecb(), Cipher::aes_128_cbc()),
        24 => (Cipher::aes_192_ecb(), Cipher::aes_192_cbc()),
        32 => (Cipher::aes_256_ecb(), Cipher::aes_256_cbc()),
        _ => return None,
    };
    Some(Box::new(Blocks {
        ecb,
        cbc,
        block: 16,
        key: Zeroizing::new(key.to_vec()),
    }))
}

fn des_ede3(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    (key.len() == 24).then(|| {
        Box::new(Blocks {
            ecb: Cipher::des_ede3_ecb(),
            cbc: Cipher::des_ede3_cbc(),
            block: 8,
            key: Zeroizing::new(key.to_vec()),
        }) as _
    })
}

impl Blocks {
    /// Runs `cipher` (keyed, `iv` when CBC) over `data`, a whole number of blocks, in place.
    fn apply(
        &self,
        cipher: &CipherRef,
        encrypt: bool,
        iv: Option<&[u8]>,
        data: &mut [u8],
    ) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let mut ctx = self.context(cipher, encrypt, iv)?;
        // All but the last block in place (the crate wants one spare block of output room,
        // which the last block provides), then the last block through a stack buffer. Without
        // padding, `EVP_CipherUpdate` outputs every whole block it is given.
        let head = data.len() - self.block;
        let done = ctx
            .cipher_update_inplace(data, head)
            .map_err(failed("EVP_CipherUpdate"))?;
        debug_assert_eq!(done, head);
        let mut last = [0u8; 32];
        last[..self.block].copy_from_slice(&data[head..]);
        let done = ctx
            .cipher_update_inplace(&mut last, self.block)
            .map_err(failed("EVP_CipherUpdate"))?;
        debug_assert_eq!(done, self.block);
        data[head..].copy_from_slice(&last[..self.block]);
        Ok(())
    }

    /// [`apply`](Self::apply) from `input` into `output` (of the same length): one pass.
    fn apply_to(
        &self,
        cipher: &CipherRef,
        encrypt: bool,
        iv: Option<&[u8]>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        assert_eq!(input.len(), output.len(), "input and output lengths");
        if input.is_empty() {
            return Ok(());
        }
        let mut ctx = self.context(cipher, encrypt, iv)?;
        // As in place: the output of all but the last block gives the spare block the crate
        // asks for; the last block goes through a stack buffer.
        let head = input.len() - self.block;
        let done = ctx
            .cipher_update(&input[..head], Some(&mut *output))
            .map_err(failed("EVP_CipherUpdate"))?;
        debug_assert_eq!(done, head);
        let mut last = [0u8; 32];
        let done = ctx
            .cipher_update(&input[head..], Some(&mut last))
            .map_err(failed("EVP_CipherUpdate"))?;
        debug_assert_eq!(done, self.block);
        output[head..].copy_from_slice(&last[..self.block]);
        Ok(())
    }

    /// A context for `cipher` keyed in direction `encrypt` (from `iv` for CBC), no padding.
    fn context(&self, cipher: &CipherRef, encrypt: bool, iv: Option<&[u8]>) -> Result<CipherCtx> {
        let mut ctx = CipherCtx::new().map_err(failed("EVP_CIPHER_CTX_new"))?;
        let init = if encrypt {
            ctx.encrypt_init(Some(cipher), Some(&self.key), iv)
        } else {
            ctx.decrypt_init(Some(cipher), Some(&self.key), iv)
        };
        init.map_err(failed("EVP_CipherInit_ex"))?;
        ctx.set_padding(false);
        Ok(ctx)
    }
}

impl BlockCipher for Blocks {
    fn block_size(&self) -> usize {
        self.block
    }

    fn ecb(&self, encrypt: bool, data: &mut [u8]) -> Result<()> {
        self.apply(self.ecb, encrypt, None, data)
    }

    fn cbc_encrypt(&self, iv: &mut [u8], data: &mut [u8]) -> Result<()> {
        self.apply(self.cbc, true, Some(iv), data)?;
        if let Some(last) = data.rchunks_exact(self.block).next() {
            iv.copy_from_slice(last);
        }
        Ok(())
    }

    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<()> {
        self.apply(self.cbc, false, Some(iv), data)
    }

    fn ecb_to(&self, encrypt: bool, input: &[u8], output: &mut [u8]) -> Result<()> {
        self.apply_to(self.ecb, encrypt, None, input, output)
    }

    fn cbc_encrypt_to(&self, iv: &mut [u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        self.apply_to(self.cbc, true, Some(iv), input, output)?;
        if let Some(last) = output.rchunks_exact(self.block).next() {
            iv.copy_from_slice(last);
        }
        Ok(())
    }

    fn cbc_decrypt_to(&self, iv: &[u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        self.apply_to(self.cbc, false, Some(iv), input, output)
    }
}

// ---------------------------------------------------------------------------------------------
// AES-CTR

fn aes_ctr(key: &[u8]) -> Option<Box<dyn CtrCipher>> {
    let cipher = match key.len() {
        16 => Cipher::aes_128_ctr(),
        24 => Cipher::aes_192_ctr(),
        32 => Cipher::aes_256_ctr(),
        _ => return None,
    };
    Some(Box::new(Ctr {
        cipher,
        key: Zeroizing::new(key.to_vec()),
    }))
}

/// AES-CTR through `EVP_aes_*_ctr` (a 128-bit big-endian counter, as `openssl enc`).
struct Ctr {
    cipher: &'static CipherRef,
    key: Zeroizing<Vec<u8>>,
}

impl CtrCipher for Ctr {
    fn apply_keystream(&self, iv: &[u8; 16], offset: u64, data: &mut [u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let len = data.len();
        self.context(iv, offset)?
            .cipher_update_inplace(data, len)
            .map_err(failed("EVP_EncryptUpdate"))?;
        Ok(())
    }

    fn apply_keystream_to(
        &self,
        iv: &[u8; 16],
        offset: u64,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        assert_eq!(input.len(), output.len(), "input and output lengths");
        if input.is_empty() {
            return Ok(());
        }
        self.context(iv, offset)?
            .cipher_update(input, Some(output))
            .map_err(failed("EVP_EncryptUpdate"))?;
        Ok(())
    }
}

impl Ctr {
    /// A context whose keystream starts at byte `offset` of `iv`'s.
    fn context(&self, iv: &[u8; 16], offset: u64) -> Result<CipherCtx> {
        let counter = super::ctr_add(iv, u128::from(offset / 16));
        let mut ctx = CipherCtx::new().map_err(failed("EVP_CIPHER_CTX_new"))?;
        ctx.encrypt_init(Some(self.cipher), Some(&self.key), Some(&counter))
            .map_err(failed("EVP_EncryptInit_ex"))?;
        let skip = (offset % 16) as usize;
        if skip != 0 {
            // Move the keystream to byte `skip` of the first block.
            let mut discard = [0u8; 16];
            ctx.cipher_update_inplace(&mut discard, skip)
                .map_err(failed("EVP_EncryptUpdate"))?;
        }
        Ok(ctx)
    }
}

// ---------------------------------------------------------------------------------------------
// AEADs

fn aead(alg: AeadAlg, key: &[u8]) -> Option<Box<dyn Aead>> {
    let cipher = match alg {
        AeadAlg::Aes128Gcm => Cipher::aes_128_gcm(),
        AeadAlg::Aes256Gcm => Cipher::aes_256_gcm(),
        AeadAlg::ChaCha20Poly1305 => Cipher::chacha20_poly1305(),
    };
    (key.len() == alg.key_len()).then(|| {
        Box::new(AeadImpl {
            cipher,
            key: Zeroizing::new(key.to_vec()),
        }) as _
    })
}

/// AES-GCM or ChaCha20-Poly1305 through `EVP_CIPHER`, in place.
struct AeadImpl {
    cipher: &'static CipherRef,
    key: Zeroizing<Vec<u8>>,
}

impl AeadImpl {
    /// A context keyed for `nonce` with `aad` absorbed.
    fn context(&self, encrypt: bool, nonce: &[u8; NONCE_LEN], aad: &[u8]) -> Result<CipherCtx> {
        let mut ctx = CipherCtx::new().map_err(failed("EVP_CIPHER_CTX_new"))?;
        let init = if encrypt {
            ctx.encrypt_init(Some(self.cipher), Some(&self.key), Some(nonce))
        } else {
            ctx.decrypt_init(Some(self.cipher), Some(&self.key), Some(nonce))
        };
        init.map_err(failed("EVP_CipherInit_ex"))?;
        if !aad.is_empty() {
            ctx.cipher_update(aad, None)
                .map_err(failed("EVP_CipherUpdate (AAD)"))?;
        }
        Ok(ctx)
    }
}

impl Aead for AeadImpl {
    fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8]) -> Result<[u8; TAG_LEN]> {
        let mut ctx = self.context(true, nonce, aad)?;
        let len = data.len();
        ctx.cipher_update_inplace(data, len)
            .map_err(failed("EVP_EncryptUpdate"))?;
        ctx.cipher_final(&mut [])
            .map_err(failed("EVP_EncryptFinal_ex"))?;
        let mut tag = [0u8; TAG_LEN];
        ctx.tag(&mut tag).map_err(failed("EVP_CTRL_AEAD_GET_TAG"))?;
        Ok(tag)
    }

    fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool> {
        let mut ctx = self.context(false, nonce, aad)?;
        ctx.set_tag(tag).map_err(failed("EVP_CTRL_AEAD_SET_TAG"))?;
        let len = data.len();
        ctx.cipher_update_inplace(data, len)
            .map_err(failed("EVP_DecryptUpdate"))?;
        if ctx.cipher_final(&mut []).is_ok() {
            return Ok(true);
        }
        // A wrong tag: `EVP_DecryptFinal_ex` checks it after the data is decrypted. Both
        // AEADs encrypt with a keystream (CTR, ChaCha20), so encrypting the buffer again under
        // the same key and nonce XORs it back: the caller gets its ciphertext exactly as it
        // was, as the table's `open` promises.
        let mut ctx = self.context(true, nonce, &[])?;
        ctx.cipher_update_inplace(data, len)
            .map_err(failed("EVP_EncryptUpdate"))?;
        Ok(false)
    }

    fn seal_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<[u8; TAG_LEN]> {
        assert_eq!(input.len(), output.len(), "AEAD input and output lengths");
        let mut ctx = self.context(true, nonce, aad)?;
        if !input.is_empty() {
            ctx.cipher_update(input, Some(output))
                .map_err(failed("EVP_EncryptUpdate"))?;
        }
        ctx.cipher_final(&mut [])
            .map_err(failed("EVP_EncryptFinal_ex"))?;
        let mut tag = [0u8; TAG_LEN];
        ctx.tag(&mut tag).map_err(failed("EVP_CTRL_AEAD_GET_TAG"))?;
        Ok(tag)
    }

    fn open_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool> {
        assert_eq!(input.len(), output.len(), "AEAD input and output lengths");
        let mut ctx = self.context(false, nonce, aad)?;
        ctx.set_tag(tag).map_err(failed("EVP_CTRL_AEAD_SET_TAG"))?;
        if !input.is_empty() {
            ctx.cipher_update(input, Some(output))
                .map_err(failed("EVP_DecryptUpdate"))?;
        }
        if ctx.cipher_final(&mut []).is_ok() {
            return Ok(true);
        }
        // A wrong tag: the plaintext written is unauthenticated; none of it may stay.
        output.fill(0);
        Ok(false)
    }
}

// ---------------------------------------------------------------------------------------------
// HMAC and HKDF

fn hmac_sha256(key: &[u8]) -> Box<dyn HmacSha256> {
    // OpenSSL refuses an empty HMAC key. HMAC pads a short key with zeros to the 64-byte
    // block, so the empty key and the one zero byte are the same key.
    let key = if key.is_empty() { &[0u8][..] } else { key };
    Box::new(Hmac256(
        PKey::hmac(key).expect("OpenSSL takes any non-empty HMAC key"),
    ))
}

struct Hmac256(PKey<Private>);

impl HmacSha256 for Hmac256 {
    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mac = || -> std::result::Result<Vec<u8>, ErrorStack> {
            let mut signer = Signer::new(MessageDigest::sha256(), &self.0)?;
            for part in parts {
                signer.update(part)?;
            }
            signer.sign_to_vec()
        };
        mac()
            .expect("HMAC-SHA256 fails only when OpenSSL cannot allocate")
            .try_into()
            .expect("32-byte HMAC-SHA256")
    }
}

fn hkdf_sha256_expand(prk: &[u8], info: &[&[u8]], out: &mut [u8]) {
    let mut expand = || -> std::result::Result<usize, ErrorStack> {
        let mut ctx = PkeyCtx::new_id(Id::HKDF)?;
        ctx.derive_init()?;
        ctx.set_hkdf_md(Md::sha256())?;
        ctx.set_hkdf_mode(HkdfMode::EXPAND_ONLY)?;
        ctx.set_hkdf_key(prk)?;
        let info: Vec<u8> = info.concat();
        if !info.is_empty() {
            ctx.add_hkdf_info(&info)?;
        }
        ctx.derive(Some(out))
    };
    let written = expand().expect("output within HKDF's limit");
    assert_eq!(written, out.len(), "HKDF-Expand fills its output");
}
