//! The aws-lc provider: aws-lc-rs's safe API for AES-CBC, AES-CTR, the AEADs (but opening
//! AES-GCM), HMAC, HKDF, RSA and ECDSA; the [`ffi`] module for AES-ECB (pipelined through
//! `EVP`), opening AES-GCM in place (through `EVP_CIPHER`), DES, 3DES, RC4 and the big
//! numbers of the split RSA operation and the prime search ([`pubkey`]). Blowfish is
//! RustCrypto's: aws-lc's (`decrepit`, one block per call) measured no faster, within the
//! noise, so it is not worth an `unsafe` binding.

mod ffi;
mod pubkey;

use aws_lc_rs::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::cipher::{
    self, DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext, UnboundCipherKey,
};
use aws_lc_rs::iv::FixedLength;
use aws_lc_rs::{hkdf, hmac};

use self::ffi::{DesKey, EvpCbc, EvpCtr, EvpEcb, EvpGcmOpen, FfiError, Rc4Key};
use super::{
    Aead, AeadAlg, BlockCipher, CtrCipher, Entry, HmacSha256, NONCE_LEN, Provider, StreamCipher,
    TAG_LEN, Table, rustcrypto,
};
use crate::error::{Error, Result};

/// aws-lc's table: every primitive but Blowfish.
pub(crate) static TABLE: Table = Table {
    aes: own(aes),
    des: own(des),
    des_ede3: own(des_ede3),
    blowfish: rustcrypto::BLOWFISH,
    aes_ctr: own(aes_ctr),
    rc4: own(rc4),
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
    ml_dsa_65_sign: own(pubkey::ml_dsa_65_signer),
    ml_dsa_65_verify: own(pubkey::ml_dsa_65_verifier),
};

const fn own<F>(make: F) -> Entry<F> {
    Entry {
        by: Provider::AwsLc,
        make,
    }
}

impl From<FfiError> for Error {
    fn from(e: FfiError) -> Self {
        Error::Provider { what: e.0 }
    }
}

/// aws-lc-rs's errors carry nothing: say which call failed.
fn failed(what: &'static str) -> impl FnOnce(aws_lc_rs::error::Unspecified) -> Error {
    move |_| Error::Provider { what }
}

fn aes(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    Aes::new(key).map(|c| Box::new(c) as Box<dyn BlockCipher>)
}

fn des(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    (key.len() == 8)
        .then(|| DesKey::new(key))?
        .map(|k| Box::new(Des(k)) as _)
}

fn des_ede3(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    (key.len() == 24)
        .then(|| DesKey::new(key))?
        .map(|k| Box::new(Des(k)) as _)
}

/// AES: ECB through `EVP` (pipelined), CBC in place through aws-lc-rs (`AES_cbc_encrypt`,
/// whose decryption pipelines too) and from one slice into another through `EVP` (one pass).
struct Aes {
    ecb_enc: EvpEcb,
    ecb_dec: EvpEcb,
    cbc_enc: EncryptingKey,
    cbc_dec: DecryptingKey,
    cbc_enc_to: EvpCbc,
    cbc_dec_to: EvpCbc,
}

impl Aes {
    fn new(key: &[u8]) -> Option<Self> {
        let alg = match key.len() {
            16 => &cipher::AES_128,
            24 => &cipher::AES_192,
            32 => &cipher::AES_256,
            _ => return None,
        };
        let unbound = || UnboundCipherKey::new(alg, key).ok();
        Some(Aes {
            ecb_enc: EvpEcb::aes(key, true).ok()??,
            ecb_dec: EvpEcb::aes(key, false).ok()??,
            cbc_enc: EncryptingKey::cbc(unbound()?).ok()?,
            cbc_dec: DecryptingKey::cbc(unbound()?).ok()?,
            cbc_enc_to: EvpCbc::aes(key, true).ok()??,
            cbc_dec_to: EvpCbc::aes(key, false).ok()??,
        })
    }
}

fn iv128(iv: &[u8]) -> FixedLength<16> {
    FixedLength::try_from(iv).expect("AES IVs are 16 bytes")
}

impl BlockCipher for Aes {
    fn block_size(&self) -> usize {
        16
    }

    fn ecb(&self, encrypt: bool, data: &mut [u8]) -> Result<()> {
        let ecb = if encrypt {
            &self.ecb_enc
        } else {
            &self.ecb_dec
        };
        Ok(ecb.apply(data)?)
    }

    fn ecb_to(&self, encrypt: bool, input: &[u8], output: &mut [u8]) -> Result<()> {
        let ecb = if encrypt {
            &self.ecb_enc
        } else {
            &self.ecb_dec
        };
        Ok(ecb.apply_to(input, output)?)
    }

    fn cbc_encrypt(&self, iv: &mut [u8], data: &mut [u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.cbc_enc
            .less_safe_encrypt(data, EncryptionContext::Iv128(iv128(iv)))
            .map_err(failed("AES-CBC encryption"))?;
        iv.copy_from_slice(&data[data.len() - 16..]);
        Ok(())
    }

    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.cbc_dec
            .decrypt(data, DecryptionContext::Iv128(iv128(iv)))
            .map_err(failed("AES-CBC decryption"))?;
        Ok(())
    }

    fn cbc_encrypt_to(&self, iv: &mut [u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        if input.is_empty() {
            return Ok(());
        }
        let start: [u8; 16] = iv.try_into().expect("AES IVs are 16 bytes");
        self.cbc_enc_to.apply_to(&start, input, output)?;
        iv.copy_from_slice(&output[output.len() - 16..]);
        Ok(())
    }

    fn cbc_decrypt_to(&self, iv: &[u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        if input.is_empty() {
            return Ok(());
        }
        let start: [u8; 16] = iv.try_into().expect("AES IVs are 16 bytes");
        Ok(self.cbc_dec_to.apply_to(&start, input, output)?)
    }
}

/// DES and 3DES (FFI: aws-lc-rs's DES refuses weak and repeated keys, `openssl enc` does not).
struct Des(DesKey);

impl BlockCipher for Des {
    fn block_size(&self) -> usize {
        ffi::DES_BLOCK
    }

    fn ecb(&self, encrypt: bool, data: &mut [u8]) -> Result<()> {
        self.0.ecb(encrypt, data);
        Ok(())
    }

    fn cbc_encrypt(&self, iv: &mut [u8], data: &mut [u8]) -> Result<()> {
        let iv: &mut [u8; 8] = iv.try_into().expect("DES IVs are 8 bytes");
        self.0.cbc(true, iv, data);
        Ok(())
    }

    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<()> {
        let mut iv: [u8; 8] = iv.try_into().expect("DES IVs are 8 bytes");
        self.0.cbc(false, &mut iv, data);
        Ok(())
    }

    fn ecb_to(&self, encrypt: bool, input: &[u8], output: &mut [u8]) -> Result<()> {
        self.0.ecb_to(encrypt, input, output);
        Ok(())
    }

    fn cbc_encrypt_to(&self, iv: &mut [u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        let iv: &mut [u8; 8] = iv.try_into().expect("DES IVs are 8 bytes");
        self.0.cbc_to(true, iv, input, output);
        Ok(())
    }

    fn cbc_decrypt_to(&self, iv: &[u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        let mut iv: [u8; 8] = iv.try_into().expect("DES IVs are 8 bytes");
        self.0.cbc_to(false, &mut iv, input, output);
        Ok(())
    }
}

fn aes_ctr(key: &[u8]) -> Option<Box<dyn CtrCipher>> {
    let alg = match key.len() {
        16 => &cipher::AES_128,
        24 => &cipher::AES_192,
        32 => &cipher::AES_256,
        _ => return None,
    };
    let evp = EvpCtr::aes(key).ok()??;
    let key = UnboundCipherKey::new(alg, key).ok()?;
    Some(Box::new(Ctr(EncryptingKey::ctr(key).ok()?, evp)))
}

/// AES-CTR through aws-lc-rs in place (`AES_ctr128_encrypt`: a 128-bit counter, carried past
/// 32 bits), through `EVP_CIPHER` ([`EvpCtr`]) from one slice into another.
struct Ctr(EncryptingKey, EvpCtr);

impl CtrCipher for Ctr {
    fn apply_keystream(&self, iv: &[u8; 16], offset: u64, data: &mut [u8]) -> Result<()> {
        let mut counter = super::ctr_add(iv, u128::from(offset / 16));
        let skip = (offset % 16) as usize;
        let mut rest = data;
        if skip != 0 && !rest.is_empty() {
            // The first, partial block: its keystream from byte `skip` on.
            let take = rest.len().min(16 - skip);
            let mut block = [0u8; 16];
            block[skip..skip + take].copy_from_slice(&rest[..take]);
            self.encrypt(counter, &mut block)?;
            rest[..take].copy_from_slice(&block[skip..skip + take]);
            rest = &mut rest[take..];
            counter = super::ctr_add(&counter, 1);
        }
        if rest.is_empty() {
            return Ok(());
        }
        self.encrypt(counter, rest)
    }

    fn apply_keystream_to(
        &self,
        iv: &[u8; 16],
        offset: u64,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        let counter = super::ctr_add(iv, u128::from(offset / 16));
        Ok(self
            .1
            .apply_to(&counter, (offset % 16) as usize, input, output)?)
    }
}

impl Ctr {
    fn encrypt(&self, counter: [u8; 16], data: &mut [u8]) -> Result<()> {
        self.0
            .less_safe_encrypt(data, EncryptionContext::Iv128(FixedLength::from(counter)))
            .map_err(failed("AES-CTR"))?;
        Ok(())
    }
}

fn rc4(key: &[u8]) -> Option<Box<dyn StreamCipher>> {
    Some(Box::new(Rc4(Rc4Key::new(key)?)))
}

struct Rc4(Rc4Key);

impl StreamCipher for Rc4 {
    fn apply_keystream(&mut self, data: &mut [u8]) {
        self.0.apply(data);
    }

    fn apply_keystream_to(&mut self, input: &[u8], output: &mut [u8]) {
        self.0.apply_to(input, output);
    }
}

fn aead(alg: AeadAlg, key: &[u8]) -> Option<Box<dyn Aead>> {
    let (sealing, chacha) = match alg {
        AeadAlg::Aes128Gcm => (&aead::AES_128_GCM, false),
        AeadAlg::Aes256Gcm => (&aead::AES_256_GCM, false),
        AeadAlg::ChaCha20Poly1305 => (&aead::CHACHA20_POLY1305, true),
    };
    let open = if chacha {
        Opener::Copied
    } else {
        Opener::InPlace(EvpGcmOpen::new(key).ok()??)
    };
    Some(Box::new(AeadImpl {
        seal: LessSafeKey::new(UnboundKey::new(sealing, key).ok()?),
        open,
    }))
}

/// Sealing through aws-lc-rs (`EVP_AEAD`); opening as [`Opener`] says.
struct AeadImpl {
    seal: LessSafeKey,
    open: Opener,
}

/// How the aws-lc provider opens a chunk so that a failed open keeps the ciphertext.
enum Opener {
    /// AES-GCM: in place through `EVP_CIPHER` (see [`EvpGcmOpen`]), with no copy.
    InPlace(EvpGcmOpen),
    /// ChaCha20-Poly1305: aws-lc-rs's `EVP_AEAD` open (one stitched pass), after a copy of
    /// the chunk into this thread's scratch buffer, put back when the tag is wrong
    /// (`EVP_AEAD` zeroes its output then). Measured about 25 % faster than opening in place
    /// through `EVP_CIPHER`'s ChaCha20-Poly1305, which makes two passes (see [`EvpGcmOpen`]).
    Copied,
}

impl Aead for AeadImpl {
    fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8]) -> Result<[u8; TAG_LEN]> {
        let tag = self
            .seal
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(*nonce), Aad::from(aad), data)
            .map_err(failed("AEAD seal"))?;
        Ok(tag.as_ref().try_into().expect("16-byte tags"))
    }

    fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool> {
        match &self.open {
            Opener::InPlace(evp) => Ok(evp.open_in_place(nonce, aad, data, tag)?),
            Opener::Copied => Ok(SCRATCH.with_borrow_mut(|saved| {
                saved.clear();
                saved.extend_from_slice(data);
                let opened = self
                    .seal
                    .open_in_place_separate_tag(
                        Nonce::assume_unique_for_key(*nonce),
                        Aad::from(aad),
                        tag,
                        data,
                    )
                    .is_ok();
                if !opened {
                    data.copy_from_slice(saved);
                }
                opened
            })),
        }
    }

    fn seal_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<[u8; TAG_LEN]> {
        assert_eq!(input.len(), output.len(), "AEAD input and output lengths");
        let mut tag = [0u8; TAG_LEN];
        self.seal
            .seal_out_of_place_scatter(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                input,
                output,
                &[],
                &mut tag,
            )
            .map_err(failed("AEAD seal"))?;
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
        if self.open_gather(nonce, aad, input, output, tag) {
            return Ok(true);
        }
        output.fill(0);
        Ok(false)
    }
}

impl AeadImpl {
    /// `EVP_AEAD`'s open from one slice into another (one pass; a wrong tag zeroes `output`).
    fn open_gather(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> bool {
        self.seal
            .open_separate_gather(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                input,
                tag,
                output,
            )
            .is_ok()
    }
}

thread_local! {
    /// The ciphertext of the ChaCha20-Poly1305 chunk being opened on this thread.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn hmac_sha256(key: &[u8]) -> Box<dyn HmacSha256> {
    Box::new(Hmac256(hmac::Key::new(hmac::HMAC_SHA256, key)))
}

struct Hmac256(hmac::Key);

impl HmacSha256 for Hmac256 {
    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut ctx = hmac::Context::with_key(&self.0);
        for part in parts {
            ctx.update(part);
        }
        ctx.sign().as_ref().try_into().expect("32-byte HMAC-SHA256")
    }
}

/// The output length for aws-lc-rs's HKDF.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn hkdf_sha256_expand(prk: &[u8], info: &[&[u8]], out: &mut [u8]) {
    hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, prk)
        .expand(info, Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("output within HKDF's limit");
}
