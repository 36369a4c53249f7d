//! The RustCrypto provider: `aes`, `des`, `blowfish`, `rc4`, `ctr`, `cbc`, `ecb`, `aes-gcm`,
//! `chacha20poly1305`, `hmac` and `hkdf`, each chunk handed to the mode crates' batch methods
//! (`encrypt_blocks`, `write_keystream`) so every thread keeps the cipher's instruction-level
//! parallelism; `rsa`, `crypto-primes`, `p256`, `ed25519-dalek` and `ml-dsa` for the public-key entries ([`pubkey`]).

pub(super) mod crt;
mod pubkey;

pub(crate) use pubkey::verify_p256;

use aes_gcm::aead::{AeadInOut, Nonce, Tag, inout::InOutBuf};
use cipher::{
    Array, Block, BlockCipherDecrypt, BlockCipherEncrypt, BlockModeDecrypt, BlockModeEncrypt,
    BlockSizeUser, InnerIvInit, KeyInit, StreamCipher as _, StreamCipherCoreWrapper,
    StreamCipherSeek, common::InnerInit, consts::U16, typenum::Unsigned,
};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{
    Aead, AeadAlg, BlockCipher, BlockFn, CtrCipher, Entry, HmacSha256, NONCE_LEN, Provider,
    StreamCipher, TAG_LEN, Table,
};
use crate::error::Result;

/// RustCrypto's table: every primitive, the public-key ones in [`pubkey`].
pub(crate) static TABLE: Table = Table {
    aes: own(aes),
    des: own(des),
    des_ede3: own(des_ede3),
    blowfish: BLOWFISH,
    aes_ctr: own(aes_ctr),
    rc4: RC4,
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
    ml_dsa_65_sign: ML_DSA_65_SIGN,
    ml_dsa_65_verify: ML_DSA_65_VERIFY,
};

/// RustCrypto's DES, for the backends that lack one.
#[cfg_attr(not(feature = "openssl"), allow(dead_code))]
pub(crate) const DES: Entry<BlockFn> = own(des);
/// RustCrypto's Blowfish, for the backends that lack one.
pub(crate) const BLOWFISH: Entry<BlockFn> = own(blowfish);
/// RustCrypto's ML-DSA-65 signing (`ml-dsa`), for the backends that lack it.
pub(crate) const ML_DSA_65_SIGN: Entry<super::table::MlDsaSignerFn> = own(pubkey::ml_dsa_65_signer);
/// RustCrypto's ML-DSA-65 verification, for the backends that lack it.
pub(crate) const ML_DSA_65_VERIFY: Entry<super::table::MlDsaVerifierFn> =
    own(pubkey::ml_dsa_65_verifier);
/// RustCrypto's RC4, for the backends that lack one.
pub(crate) const RC4: Entry<super::table::Rc4Fn> = own(rc4);

const fn own<F>(make: F) -> Entry<F> {
    Entry {
        by: Provider::RustCrypto,
        make,
    }
}

fn boxed<C>(key: &[u8]) -> Option<Box<dyn BlockCipher>>
where
    C: KeyInit + BlockCipherEncrypt + BlockCipherDecrypt + Clone + Send + Sync + 'static,
{
    Some(Box::new(Blocks(C::new_from_slice(key).ok()?)))
}

fn aes(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    match key.len() {
        16 => boxed::<aes::Aes128>(key),
        24 => boxed::<aes::Aes192>(key),
        32 => boxed::<aes::Aes256>(key),
        _ => None,
    }
}

fn des(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    (key.len() == 8).then(|| boxed::<des::Des>(key))?
}

fn des_ede3(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    (key.len() == 24).then(|| boxed::<des::TdesEde3>(key))?
}

fn blowfish(key: &[u8]) -> Option<Box<dyn BlockCipher>> {
    (4..=56)
        .contains(&key.len())
        .then(|| boxed::<blowfish::Blowfish>(key))?
}

fn blocks<C: BlockSizeUser>(data: &mut [u8]) -> &mut [Block<C>] {
    let (blocks, rest) = Array::slice_as_chunks_mut(data);
    debug_assert!(rest.is_empty(), "whole blocks only");
    blocks
}

fn blocks_in<C: BlockSizeUser>(data: &[u8]) -> &[Block<C>] {
    let (blocks, rest) = Array::slice_as_chunks(data);
    debug_assert!(rest.is_empty(), "whole blocks only");
    blocks
}

/// The mode crates' buffer-to-buffer calls fail only when the two lengths differ.
const SAME_LEN: &str = "input and output of the same length";

/// Any RustCrypto block cipher, in ECB and CBC through the `ecb` and `cbc` crates.
struct Blocks<C>(C);

impl<C> BlockCipher for Blocks<C>
where
    C: BlockCipherEncrypt + BlockCipherDecrypt + Clone + Send + Sync,
{
    fn block_size(&self) -> usize {
        C::BlockSize::USIZE
    }

    fn ecb(&self, encrypt: bool, data: &mut [u8]) -> Result<()> {
        if encrypt {
            ecb::Encryptor::<C>::inner_init(self.0.clone()).encrypt_blocks(blocks::<C>(data));
        } else {
            ecb::Decryptor::<C>::inner_init(self.0.clone()).decrypt_blocks(blocks::<C>(data));
        }
        Ok(())
    }

    fn cbc_encrypt(&self, iv: &mut [u8], data: &mut [u8]) -> Result<()> {
        let start = Array::try_from(&*iv).expect("IV is one block");
        cbc::Encryptor::<C>::inner_iv_init(self.0.clone(), &start)
            .encrypt_blocks(blocks::<C>(data));
        if let Some(last) = data.rchunks_exact(iv.len()).next() {
            iv.copy_from_slice(last);
        }
        Ok(())
    }

    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<()> {
        let start = Array::try_from(iv).expect("IV is one block");
        cbc::Decryptor::<C>::inner_iv_init(self.0.clone(), &start)
            .decrypt_blocks(blocks::<C>(data));
        Ok(())
    }

    fn ecb_to(&self, encrypt: bool, input: &[u8], output: &mut [u8]) -> Result<()> {
        let (input, output) = (blocks_in::<C>(input), blocks::<C>(output));
        let done = if encrypt {
            ecb::Encryptor::<C>::inner_init(self.0.clone()).encrypt_blocks_b2b(input, output)
        } else {
            ecb::Decryptor::<C>::inner_init(self.0.clone()).decrypt_blocks_b2b(input, output)
        };
        done.expect(SAME_LEN);
        Ok(())
    }

    fn cbc_encrypt_to(&self, iv: &mut [u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        let start = Array::try_from(&*iv).expect("IV is one block");
        cbc::Encryptor::<C>::inner_iv_init(self.0.clone(), &start)
            .encrypt_blocks_b2b(blocks_in::<C>(input), blocks::<C>(output))
            .expect(SAME_LEN);
        if let Some(last) = output.rchunks_exact(iv.len()).next() {
            iv.copy_from_slice(last);
        }
        Ok(())
    }

    fn cbc_decrypt_to(&self, iv: &[u8], input: &[u8], output: &mut [u8]) -> Result<()> {
        let start = Array::try_from(iv).expect("IV is one block");
        cbc::Decryptor::<C>::inner_iv_init(self.0.clone(), &start)
            .decrypt_blocks_b2b(blocks_in::<C>(input), blocks::<C>(output))
            .expect(SAME_LEN);
        Ok(())
    }
}

fn aes_ctr(key: &[u8]) -> Option<Box<dyn CtrCipher>> {
    Some(match key.len() {
        16 => Box::new(Ctr(aes::Aes128::new_from_slice(key).ok()?)),
        24 => Box::new(Ctr(aes::Aes192::new_from_slice(key).ok()?)),
        32 => Box::new(Ctr(aes::Aes256::new_from_slice(key).ok()?)),
        _ => return None,
    })
}

type Ctr128Be<C> = StreamCipherCoreWrapper<ctr::CtrCore<C, ctr::flavors::Ctr128BE>>;

/// Keystream generated per step of the CTR loop: fits L1 with the data it is XORed into.
const KEYSTREAM_PIECE: usize = 16 * 1024;

/// AES-CTR through the `ctr` crate.
struct Ctr<C>(C);

impl<C> CtrCipher for Ctr<C>
where
    C: BlockCipherEncrypt<BlockSize = U16> + Clone + Send + Sync,
{
    fn apply_keystream(&self, iv: &[u8; 16], offset: u64, data: &mut [u8]) -> Result<()> {
        let mut stream = self.stream(iv, offset);
        // `ctr` writes keystream at close to the block cipher's speed, but its in-place XOR
        // path runs at about 60 % of that (measured, aes 0.9 / ctr 0.10 with VAES): so take
        // the keystream in L1-sized pieces and XOR them in a loop the compiler vectorises.
        let mut keystream = [0u8; KEYSTREAM_PIECE];
        for piece in data.chunks_mut(KEYSTREAM_PIECE) {
            let keystream = &mut keystream[..piece.len()];
            stream.write_keystream(keystream);
            for (d, k) in piece.iter_mut().zip(&*keystream) {
                *d ^= k;
            }
        }
        Ok(())
    }

    fn apply_keystream_to(
        &self,
        iv: &[u8; 16],
        offset: u64,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<()> {
        assert_eq!(input.len(), output.len(), "{SAME_LEN}");
        let mut stream = self.stream(iv, offset);
        // As in place: the keystream in L1-sized pieces, straight into the output, then the
        // input XORed into it while the piece is still in L1.
        for (out, input) in output
            .chunks_mut(KEYSTREAM_PIECE)
            .zip(input.chunks(KEYSTREAM_PIECE))
        {
            stream.write_keystream(out);
            for (o, i) in out.iter_mut().zip(input) {
                *o ^= i;
            }
        }
        Ok(())
    }
}

impl<C> Ctr<C>
where
    C: BlockCipherEncrypt<BlockSize = U16> + Clone,
{
    /// The keystream of `iv` from byte `offset` on.
    fn stream(&self, iv: &[u8; 16], offset: u64) -> Ctr128Be<C> {
        // Start at the counter block of `offset` (wrapping, as OpenSSL), so no seek can
        // overflow the crate's 128-bit block position.
        let start = super::ctr_add(iv, u128::from(offset / 16));
        let core = ctr::CtrCore::<C, ctr::flavors::Ctr128BE>::inner_iv_init(
            self.0.clone(),
            &Array::from(start),
        );
        let mut stream: Ctr128Be<C> = StreamCipherCoreWrapper::from_core(core);
        stream.seek(offset % 16);
        stream
    }
}

fn rc4(key: &[u8]) -> Option<Box<dyn StreamCipher>> {
    Some(Box::new(Rc4(rc4::Rc4::new_from_slice(key).ok()?)))
}

struct Rc4(rc4::Rc4);

impl StreamCipher for Rc4 {
    fn apply_keystream(&mut self, data: &mut [u8]) {
        self.0.apply_keystream(data);
    }

    fn apply_keystream_to(&mut self, input: &[u8], output: &mut [u8]) {
        self.0.apply_keystream_b2b(input, output);
    }
}

fn aead(alg: AeadAlg, key: &[u8]) -> Option<Box<dyn Aead>> {
    Some(match alg {
        AeadAlg::Aes128Gcm => Box::new(AeadImpl(aes_gcm::Aes128Gcm::new_from_slice(key).ok()?)),
        AeadAlg::Aes256Gcm => Box::new(AeadImpl(aes_gcm::Aes256Gcm::new_from_slice(key).ok()?)),
        AeadAlg::ChaCha20Poly1305 => Box::new(AeadImpl(
            chacha20poly1305::ChaCha20Poly1305::new_from_slice(key).ok()?,
        )),
    })
}

struct AeadImpl<A>(A);

impl<A: AeadInOut + Send + Sync> Aead for AeadImpl<A> {
    fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], data: &mut [u8]) -> Result<[u8; TAG_LEN]> {
        let nonce = Nonce::<A>::try_from(&nonce[..]).expect("12-byte nonces");
        let tag = self
            .0
            .encrypt_inout_detached(&nonce, aad, data.into())
            .map_err(|_| crate::Error::Provider {
                what: "AEAD seal: chunk above the AEAD's length limit",
            })?;
        Ok(tag[..].try_into().expect("16-byte tags"))
    }

    fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool> {
        let nonce = Nonce::<A>::try_from(&nonce[..]).expect("12-byte nonces");
        let tag = Tag::<A>::try_from(&tag[..]).expect("16-byte tags");
        // Both crates check the tag before they decrypt, so a failure leaves `data` alone.
        Ok(self
            .0
            .decrypt_inout_detached(&nonce, aad, data.into(), &tag)
            .is_ok())
    }

    fn seal_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<[u8; TAG_LEN]> {
        let nonce = Nonce::<A>::try_from(&nonce[..]).expect("12-byte nonces");
        let buf = InOutBuf::new(input, output).map_err(|_| crate::Error::Provider {
            what: "AEAD seal: input and output lengths differ",
        })?;
        let tag = self
            .0
            .encrypt_inout_detached(&nonce, aad, buf)
            .map_err(|_| crate::Error::Provider {
                what: "AEAD seal: chunk above the AEAD's length limit",
            })?;
        Ok(tag[..].try_into().expect("16-byte tags"))
    }

    fn open_to(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        input: &[u8],
        output: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<bool> {
        let nonce = Nonce::<A>::try_from(&nonce[..]).expect("12-byte nonces");
        let tag = Tag::<A>::try_from(&tag[..]).expect("16-byte tags");
        let buf = InOutBuf::new(input, output).map_err(|_| crate::Error::Provider {
            what: "AEAD open: input and output lengths differ",
        })?;
        // The tag is checked before anything is written to `output`.
        Ok(self
            .0
            .decrypt_inout_detached(&nonce, aad, buf, &tag)
            .is_ok())
    }
}

fn hmac_sha256(key: &[u8]) -> Box<dyn HmacSha256> {
    Box::new(Hmac256(
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key"),
    ))
}

struct Hmac256(Hmac<Sha256>);

impl HmacSha256 for Hmac256 {
    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.0.clone();
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }
}

fn hkdf_sha256_expand(prk: &[u8], info: &[&[u8]], out: &mut [u8]) {
    Hkdf::<Sha256>::from_prk(prk)
        .expect("PRK of at least 32 bytes")
        .expand_multi_info(info, out)
        .expect("output within HKDF's limit");
}
