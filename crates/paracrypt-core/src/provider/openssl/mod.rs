//! The OpenSSL provider: the system's libcrypto 3 through the `openssl` crate's safe API
//! (`EVP_CIPHER` contexts, `EVP_PKEY`), no `unsafe` here.
//!
//! Each cipher is fetched once per process (`EVP_CIPHER_fetch`), each keyed object keys one
//! `EVP_CIPHER_CTX` template per mode and direction once, and each pool thread works on its own
//! copy of a template ([`Contexts`]): a chunk only points that copy at its IV or nonce, so it
//! costs no fetch, no key schedule, no allocation and no lock another thread takes. Data is
//! processed in place or from one slice into another in one pass: stream modes (CTR, GCM,
//! ChaCha20-Poly1305) directly, block modes with their last block through a stack buffer (the
//! crate asks for one spare block of output).
//!
//! Its table names RustCrypto's DES, Blowfish and RC4: OpenSSL 3 keeps them in its `legacy`
//! provider, which a library should not load into the whole process behind its caller's back.
//! It also names RustCrypto's ML-DSA-65: OpenSSL has ML-DSA from 3.5 on, and the `openssl`
//! crate (built against any libcrypto from 3.0) has no API for it.

mod pubkey;

use std::sync::OnceLock;

use openssl::cipher::{Cipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::md::Md;
use openssl::pkey::{Id, PKey, Private};
use openssl::pkey_ctx::{HkdfMode, PkeyCtx};
use openssl::sign::Signer;
use zeroize::Zeroizing;

use super::per_thread::Working;
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
    // ML-DSA came with OpenSSL 3.5; the `openssl` crate builds against 3.0 and up.
    ml_dsa_65_sign: rustcrypto::ML_DSA_65_SIGN,
    ml_dsa_65_verify: rustcrypto::ML_DSA_65_VERIFY,
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
// Fetched ciphers and keyed contexts

/// The `EVP_CIPHER`s this backend runs, fetched by name from the default library context.
#[derive(Clone, Copy, Debug)]
enum Alg {
    Aes128Ecb,
    Aes192Ecb,
    Aes256Ecb,
    Aes128Cbc,
    Aes192Cbc,
    Aes256Cbc,
    DesEde3Ecb,
    DesEde3Cbc,
    Aes128Ctr,
    Aes192Ctr,
    Aes256Ctr,
    Aes128Gcm,
    Aes256Gcm,
    ChaCha20Poly1305,
}

impl Alg {
    /// Every algorithm, in the order of `Alg as usize`.
    const COUNT: usize = 14;

    /// OpenSSL's name of the algorithm.
    fn name(self) -> &'static str {
        match self {
            Alg::Aes128Ecb => "AES-128-ECB",
            Alg::Aes192Ecb => "AES-192-ECB",
            Alg::Aes256Ecb => "AES-256-ECB",
            Alg::Aes128Cbc => "AES-128-CBC",
            Alg::Aes192Cbc => "AES-192-CBC",
            Alg::Aes256Cbc => "AES-256-CBC",
            Alg::DesEde3Ecb => "DES-EDE3-ECB",
            Alg::DesEde3Cbc => "DES-EDE3-CBC",
            Alg::Aes128Ctr => "AES-128-CTR",
            Alg::Aes192Ctr => "AES-192-CTR",
            Alg::Aes256Ctr => "AES-256-CTR",
            Alg::Aes128Gcm => "AES-128-GCM",
            Alg::Aes256Gcm => "AES-256-GCM",
            Alg::ChaCha20Poly1305 => "ChaCha20-Poly1305",
        }
    }

    /// The algorithm's `EVP_CIPHER`, fetched once per process (`EVP_CIPHER_fetch`).
    ///
    /// OpenSSL 3 fetches the implementation of a static cipher such as `EVP_aes_128_cbc()` from
    /// its provider store on *every* `EVP_CipherInit_ex` that names it (and looks for an
    /// engine for it), under the store's and the engine table's locks: with a context keyed
    /// per chunk that way, two threads ran AES-128-CBC decryption no faster than one.
    fn cipher(self) -> Result<&'static CipherRef> {
        static FETCHED: [OnceLock<Cipher>; Alg::COUNT] = [const { OnceLock::new() }; Alg::COUNT];
        let slot = &FETCHED[self as usize];
        if let Some(cipher) = slot.get() {
            return Ok(cipher);
        }
        let cipher = Cipher::fetch(None, self.name(), None).map_err(failed("EVP_CIPHER_fetch"))?;
        Ok(slot.get_or_init(|| cipher))
    }
}

/// `N` keyed `EVP_CIPHER_CTX` templates (a cipher and a direction each) and every thread's
/// working copies of them.
///
/// A template is keyed once, on first use (the fetch and the key schedule happen there, once
/// per object), and never used for data. Each pool thread copies it once into a working context
/// of its own ([`Working`]); every chunk then only points that context at its IV or nonce
/// (`EVP_CipherInit_ex` with no cipher and no key: no fetch, no key schedule, no allocation)
/// and runs. Nothing is shared between threads but the read-only templates.
struct Contexts<const N: usize> {
    /// Each template's cipher and direction.
    specs: [(Alg, bool); N],
    /// Block modes: padding off (whole blocks in, the same blocks out).
    unpadded: bool,
    key: Zeroizing<Vec<u8>>,
    templates: [OnceLock<CipherCtx>; N],
    working: Working<[Option<CipherCtx>; N]>,
    /// How many working copies were made (what the tests check: one per thread, not per
    /// chunk).
    #[cfg(test)]
    copies: std::sync::atomic::AtomicUsize,
}

impl<const N: usize> Contexts<N> {
    fn new(specs: [(Alg, bool); N], unpadded: bool, key: &[u8]) -> Self {
        Contexts {
            specs,
            unpadded,
            key: Zeroizing::new(key.to_vec()),
            templates: std::array::from_fn(|_| OnceLock::new()),
            working: Working::new(),
            #[cfg(test)]
            copies: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Template `i`, keyed the first time it is asked for.
    fn template(&self, i: usize) -> Result<&CipherCtx> {
        if let Some(template) = self.templates[i].get() {
            return Ok(template);
        }
        let (alg, encrypt) = self.specs[i];
        let mut ctx = CipherCtx::new().map_err(failed("EVP_CIPHER_CTX_new"))?;
        let init = if encrypt {
            ctx.encrypt_init(Some(alg.cipher()?), Some(&self.key), None)
        } else {
            ctx.decrypt_init(Some(alg.cipher()?), Some(&self.key), None)
        };
        init.map_err(failed("EVP_CipherInit_ex"))?;
        if self.unpadded {
            ctx.set_padding(false);
        }
        Ok(self.templates[i].get_or_init(|| ctx))
    }

    /// A working copy of template `i` (its expanded key copied, not recomputed).
    fn copy(&self, i: usize) -> Result<CipherCtx> {
        let mut ctx = CipherCtx::new().map_err(failed("EVP_CIPHER_CTX_new"))?;
        ctx.copy(self.template(i)?)
            .map_err(failed("EVP_CIPHER_CTX_copy"))?;
        #[cfg(test)]
        self.copies
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(ctx)
    }

    /// Runs `f` on this thread's working copy of template `i`.
    fn with<R>(&self, i: usize, f: impl FnOnce(&mut CipherCtx) -> Result<R>) -> Result<R> {
        self.working.with(
            || Ok(std::array::from_fn(|_| None)),
            |contexts| {
                let ctx = match &mut contexts[i] {
                    Some(ctx) => ctx,
                    empty => empty.insert(self.copy(i)?),
                };
                f(ctx)
            },
        )
    }
}

/// Points the keyed `ctx` at `iv` (or nonce) in direction `encrypt`, keeping its cipher and its
/// key schedule.
fn restart(ctx: &mut CipherCtx, encrypt: bool, iv: &[u8]) -> Result<()> {
    let init = if encrypt {
        ctx.encrypt_init(None, None, Some(iv))
    } else {
        ctx.decrypt_init(None, None, Some(iv))
    };
    init.map_err(failed("EVP_CipherInit_ex (IV)"))
}

// ---------------------------------------------------------------------------------------------
// Block ciphers

/// A block cipher in ECB and CBC, both directions: four keyed templates (see [`Contexts`]).
struct Blocks {
    block: usize,
    contexts: Contexts<4>,
}

/// Which of a [`Blocks`]'s templates: ECB or CBC, decryption or encryption.
const fn template(cbc: bool, encrypt: bool) -> usize {
    2 * cbc as usize + encrypt as usize
}

fn aes(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    let (ecb, cbc) = match key.len() {
        16 => (Alg::Aes128Ecb, Alg::Aes128Cbc),
        24 => (Alg::Aes192Ecb, Alg::Aes192Cbc),
        32 => (Alg::Aes256Ecb, Alg::Aes256Cbc),
        _ => return None,
    };
    Some(Box::new(Blocks::new(ecb, cbc, 16, key)))
}

fn des_ede3(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    (key.len() == 24).then(|| Box::new(Blocks::new(Alg::DesEde3Ecb, Alg::DesEde3Cbc, 8, key)) as _)
}

impl Blocks {
    fn new(ecb: Alg, cbc: Alg, block: usize, key: &[u8]) -> Self {
        // In the order of `template`.
        let specs = [(ecb, false), (ecb, true), (cbc, false), (cbc, true)];
        Blocks {
            block,
            contexts: Contexts::new(specs, true, key),
        }
    }

    /// Runs `f` on this thread's context for the mode (`iv` for CBC) and direction, ready for
    /// the first block.
    fn run(
        &self,
        iv: Option<&[u8]>,
        encrypt: bool,
        f: impl FnOnce(&mut CipherCtx) -> Result<()>,
    ) -> Result<()> {
        self.contexts.with(template(iv.is_some(), encrypt), |ctx| {
            // ECB keeps no state between calls of whole blocks; CBC starts from `iv`.
            if let Some(iv) = iv {
                restart(ctx, encrypt, iv)?;
            }
            f(ctx)
        })
    }

    /// Runs the mode (CBC from `iv`, ECB without) over `data`, a whole number of blocks, in
    /// place.
    fn apply(&self, encrypt: bool, iv: Option<&[u8]>, data: &mut [u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let block = self.block;
        self.run(iv, encrypt, |ctx| {
            // All but the last block in place (the crate wants one spare block of output room,
            // which the last block provides), then the last block through a stack buffer.
            // Without padding, `EVP_CipherUpdate` outputs every whole block it is given.
            let head = data.len() - block;
            let done = ctx
                .cipher_update_inplace(data, head)
                .map_err(failed("EVP_CipherUpdate"))?;
            debug_assert_eq!(done, head);
            let mut last = [0u8; 32];
            last[..block].copy_from_slice(&data[head..]);
            let done = ctx
                .cipher_update_inplace(&mut last, block)
                .map_err(failed("EVP_CipherUpdate"))?;
            debug_assert_eq!(done, block);
            data[head..].copy_from_slice(&last[..block]);
            Ok(())
        })
    }

    /// [`apply`](Self::apply) from `input` into `output` (of the same length): one pass.
    fn apply_to(
        &self,
        encrypt: bool,
        iv: Option<&[u8]>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        assert_eq!(input.len(), output.len(), "input and output lengths");
        if input.is_empty() {
            return Ok(());
        }
        let block = self.block;
        self.run(iv, encrypt, |ctx| {
            // As in place: the output of all but the last block gives the spare block the
            // crate asks for; the last block goes through a stack buffer.
            let head = input.len() - block;
            let done = ctx
                .cipher_update(&input[..head], Some(&mut *output))
                .map_err(failed("EVP_CipherUpdate"))?;
            debug_assert_eq!(done, head);
            let mut last = [0u8; 32];
            let done = ctx
                .cipher_update(&input[head..], Some(&mut last))
                .map_err(failed("EVP_CipherUpdate"))?;
            debug_assert_eq!(done, block);
            output[head..].copy_from_slice(&last[..block]);
            Ok(())
        })
    }
}

impl BlockCipher for Blocks {
    fn block_size(&self) -> usize {
        self.block
    }

    fn ecb(&self, encrypt: bool, data: &mut [u8]) -> Result<()> {
        self.apply(encrypt, None, data)
    }

    fn cbc_encrypt(&self, iv: &mut [u8], data: &mut [u8]) -> Result<()> {
        self.apply(true, Some(iv), data)?;
        if let Some(last) = data.rchunks_exact(self.block).next() {
            iv.copy_from_slice(last);
        }
        Ok(())
    }

    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<()> {
        self.apply(false, Some(iv), data)
    }

    fn ecb_to(&self, encrypt: bool, input: &[u8], output: &mut [u8]) -> Result<()> {
        self.apply_to(encrypt, None, input, output)
    }

    fn cbc_encrypt_to(&self, iv: &mut [u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        self.apply_to(true, Some(iv), input, output)?;
        if let Some(last) = output.rchunks_exact(self.block).next() {
            iv.copy_from_slice(last);
        }
        Ok(())
    }

    fn cbc_decrypt_to(&self, iv: &[u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        self.apply_to(false, Some(iv), input, output)
    }
}

// ---------------------------------------------------------------------------------------------
// AES-CTR

fn aes_ctr(key: &[u8]) -> Option<Box<dyn CtrCipher>> {
    let alg = match key.len() {
        16 => Alg::Aes128Ctr,
        24 => Alg::Aes192Ctr,
        32 => Alg::Aes256Ctr,
        _ => return None,
    };
    Some(Box::new(Ctr(Contexts::new([(alg, true)], false, key))))
}

/// AES-CTR through `EVP_aes_*_ctr` (a 128-bit big-endian counter, as `openssl enc`): one keyed
/// template (see [`Contexts`]).
struct Ctr(Contexts<1>);

impl CtrCipher for Ctr {
    fn apply_keystream(&self, iv: &[u8; 16], offset: u64, data: &mut [u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.run(iv, offset, |ctx| {
            let len = data.len();
            ctx.cipher_update_inplace(data, len)
                .map_err(failed("EVP_EncryptUpdate"))?;
            Ok(())
        })
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
        self.run(iv, offset, |ctx| {
            ctx.cipher_update(input, Some(output))
                .map_err(failed("EVP_EncryptUpdate"))?;
            Ok(())
        })
    }
}

impl Ctr {
    /// Runs `f` on this thread's context, its keystream moved to byte `offset` of `iv`'s.
    fn run(
        &self,
        iv: &[u8; 16],
        offset: u64,
        f: impl FnOnce(&mut CipherCtx) -> Result<()>,
    ) -> Result<()> {
        let counter = super::ctr_add(iv, u128::from(offset / 16));
        self.0.with(0, |ctx| {
            restart(ctx, true, &counter)?;
            let skip = (offset % 16) as usize;
            if skip != 0 {
                // Move the keystream to byte `skip` of the first block.
                let mut discard = [0u8; 16];
                ctx.cipher_update_inplace(&mut discard, skip)
                    .map_err(failed("EVP_EncryptUpdate"))?;
            }
            f(ctx)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// AEADs

fn aead(alg: AeadAlg, key: &[u8]) -> Option<Box<dyn Aead>> {
    let cipher = match alg {
        AeadAlg::Aes128Gcm => Alg::Aes128Gcm,
        AeadAlg::Aes256Gcm => Alg::Aes256Gcm,
        AeadAlg::ChaCha20Poly1305 => Alg::ChaCha20Poly1305,
    };
    (key.len() == alg.key_len())
        .then(|| Box::new(AeadImpl(Contexts::new([(cipher, true)], false, key))) as _)
}

/// AES-GCM or ChaCha20-Poly1305 through `EVP_CIPHER`: one keyed template (see [`Contexts`]),
/// whose working copies seal and open (both AEADs key their stream the same way in either
/// direction; each chunk sets the direction with its nonce).
struct AeadImpl(Contexts<1>);

impl AeadImpl {
    /// Runs `f` on this thread's context, started at `nonce` with `aad` absorbed.
    fn run<R>(
        &self,
        encrypt: bool,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        f: impl FnOnce(&mut CipherCtx) -> Result<R>,
    ) -> Result<R> {
        self.0.with(0, |ctx| {
            restart(ctx, encrypt, nonce)?;
            if !aad.is_empty() {
                ctx.cipher_update(aad, None)
                    .map_err(failed("EVP_CipherUpdate (AAD)"))?;
            }
            f(ctx)
        })
    }
}

/// Finishes a sealing context: its tag.
fn seal_tag(ctx: &mut CipherCtx) -> Result<[u8; TAG_LEN]> {
    ctx.cipher_final(&mut [])
        .map_err(failed("EVP_EncryptFinal_ex"))?;
    let mut tag = [0u8; TAG_LEN];
    ctx.tag(&mut tag).map_err(failed("EVP_CTRL_AEAD_GET_TAG"))?;
    Ok(tag)
}

impl Aead for AeadImpl {
    fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8]) -> Result<[u8; TAG_LEN]> {
        self.run(true, nonce, aad, |ctx| {
            let len = data.len();
            ctx.cipher_update_inplace(data, len)
                .map_err(failed("EVP_EncryptUpdate"))?;
            seal_tag(ctx)
        })
    }

    fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool> {
        let authentic = self.run(false, nonce, aad, |ctx| {
            ctx.set_tag(tag).map_err(failed("EVP_CTRL_AEAD_SET_TAG"))?;
            let len = data.len();
            ctx.cipher_update_inplace(data, len)
                .map_err(failed("EVP_DecryptUpdate"))?;
            Ok(ctx.cipher_final(&mut []).is_ok())
        })?;
        if authentic {
            return Ok(true);
        }
        // A wrong tag: `EVP_DecryptFinal_ex` checks it after the data is decrypted. Both
        // AEADs encrypt with a keystream (CTR, ChaCha20), so encrypting the buffer again under
        // the same key and nonce XORs it back: the caller gets its ciphertext exactly as it
        // was, as the table's `open` promises.
        self.run(true, nonce, &[], |ctx| {
            let len = data.len();
            ctx.cipher_update_inplace(data, len)
                .map_err(failed("EVP_EncryptUpdate"))?;
            Ok(false)
        })
    }

    fn seal_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<[u8; TAG_LEN]> {
        assert_eq!(input.len(), output.len(), "AEAD input and output lengths");
        self.run(true, nonce, aad, |ctx| {
            if !input.is_empty() {
                ctx.cipher_update(input, Some(output))
                    .map_err(failed("EVP_EncryptUpdate"))?;
            }
            seal_tag(ctx)
        })
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
        let authentic = self.run(false, nonce, aad, |ctx| {
            ctx.set_tag(tag).map_err(failed("EVP_CTRL_AEAD_SET_TAG"))?;
            if !input.is_empty() {
                ctx.cipher_update(input, Some(&mut *output))
                    .map_err(failed("EVP_DecryptUpdate"))?;
            }
            Ok(ctx.cipher_final(&mut []).is_ok())
        })?;
        if !authentic {
            // A wrong tag: the plaintext written is unauthenticated; none of it may stay.
            output.fill(0);
        }
        Ok(authentic)
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

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    /// Chunks cost no context of their own: on a pool of two threads, 64 chunks of every mode
    /// and direction (and of CTR and an AEAD) make at most one working context per thread and
    /// template, and give the bytes of RustCrypto.
    #[test]
    fn working_contexts_are_made_once_per_thread_not_per_chunk() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let key = [7u8; 16];
        let reference = (rustcrypto::TABLE.aes.make)(&key).unwrap();
        let blocks = pool.install(|| Blocks::new(Alg::Aes128Ecb, Alg::Aes128Cbc, 16, &key));
        let chunk = |i: usize| -> Vec<u8> { (0..4096).map(|b| (b * 31 + i) as u8).collect() };
        let iv = [9u8; 16];
        pool.install(|| {
            (0..64).into_par_iter().for_each(|i| {
                let mut ours = chunk(i);
                let mut theirs = chunk(i);
                blocks.cbc_decrypt(&iv, &mut ours).unwrap();
                reference.cbc_decrypt(&iv, &mut theirs).unwrap();
                assert_eq!(ours, theirs, "CBC decryption of chunk {i}");
                blocks.ecb(i % 2 == 0, &mut ours).unwrap();
                reference.ecb(i % 2 == 0, &mut theirs).unwrap();
                assert_eq!(ours, theirs, "ECB of chunk {i}");
                let mut out = vec![0; ours.len()];
                blocks.cbc_decrypt_to(&iv, &ours, &mut out).unwrap();
                reference.cbc_decrypt(&iv, &mut theirs).unwrap();
                assert_eq!(out, theirs, "CBC decryption out of place, chunk {i}");
            });
        });
        let copies = blocks
            .contexts
            .copies
            .load(std::sync::atomic::Ordering::Relaxed);
        // Three templates used (ECB both ways, CBC decryption), at most one copy per thread.
        assert!(copies <= 3 * 2, "{copies} working contexts for 64 chunks");

        let ctr = Ctr(Contexts::new([(Alg::Aes128Ctr, true)], false, &key));
        let aead = AeadImpl(Contexts::new(
            [(Alg::ChaCha20Poly1305, true)],
            false,
            &[5u8; 32],
        ));
        pool.install(|| {
            (0..64u64).into_par_iter().for_each(|i| {
                let mut data = chunk(i as usize);
                ctr.apply_keystream(&iv, i * 4096, &mut data).unwrap();
                let mut nonce = [0u8; NONCE_LEN];
                nonce[4..].copy_from_slice(&i.to_be_bytes());
                let plain = data.clone();
                let tag = aead.seal(&nonce, b"aad", &mut data).unwrap();
                assert!(aead.open(&nonce, b"aad", &mut data, &tag).unwrap());
                assert_eq!(data, plain);
            });
        });
        for (what, copies) in [("CTR", &ctr.0.copies), ("AEAD", &aead.0.copies)] {
            let copies = copies.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                copies <= 2,
                "{copies} {what} working contexts for 64 chunks"
            );
        }
    }
}
