//! The one-shot reference of the raw ciphers: what `openssl enc` computes, from the block
//! ciphers alone (the `aes`, `des`, `blowfish` and `rc4` crates), over the whole input at once,
//! with the modes and PKCS#7 padding written out in the plainest way. Slow and simple: no
//! chunks, no threads, no provider.

use cipher::{Array, BlockCipherEncrypt, KeyInit, StreamCipher};
use paracrypt_core::raw::{Algorithm, CipherMode, RawCipherName};

/// `openssl enc -e` of `data`, or `None` when openssl would refuse the input (a partial block
/// with padding off) or the key does not fit the cipher.
pub fn encrypt(
    name: RawCipherName,
    key: &[u8],
    iv: Option<&[u8]>,
    padding: bool,
    data: &[u8],
) -> Option<Vec<u8>> {
    match name.algorithm() {
        Algorithm::Aes128 => modes(
            aes::Aes128::new_from_slice(key).ok()?,
            name,
            iv,
            padding,
            data,
        ),
        Algorithm::Aes192 => modes(
            aes::Aes192::new_from_slice(key).ok()?,
            name,
            iv,
            padding,
            data,
        ),
        Algorithm::Aes256 => modes(
            aes::Aes256::new_from_slice(key).ok()?,
            name,
            iv,
            padding,
            data,
        ),
        Algorithm::Des => modes(des::Des::new_from_slice(key).ok()?, name, iv, padding, data),
        Algorithm::TripleDes => modes(
            des::TdesEde3::new_from_slice(key).ok()?,
            name,
            iv,
            padding,
            data,
        ),
        Algorithm::Blowfish => modes(
            <blowfish::Blowfish>::new_from_slice(key).ok()?,
            name,
            iv,
            padding,
            data,
        ),
        Algorithm::Rc4 => {
            let mut out = data.to_vec();
            rc4::Rc4::new_from_slice(key)
                .ok()?
                .apply_keystream(&mut out);
            Some(out)
        }
    }
}

fn modes<C: BlockCipherEncrypt>(
    cipher: C,
    name: RawCipherName,
    iv: Option<&[u8]>,
    padding: bool,
    data: &[u8],
) -> Option<Vec<u8>> {
    let bs = name.algorithm().block_size();
    let encrypt = |block: &[u8]| -> Vec<u8> {
        let mut block = Array::try_from(block).expect("one block");
        cipher.encrypt_block(&mut block);
        block.to_vec()
    };
    match name.mode() {
        CipherMode::Ctr => {
            // The whole IV is a big-endian counter that wraps, as OpenSSL's.
            let mut counter = u128::from_be_bytes(iv?.try_into().ok()?);
            let mut out = Vec::with_capacity(data.len());
            for piece in data.chunks(bs) {
                let keystream = encrypt(&counter.to_be_bytes());
                out.extend(piece.iter().zip(keystream).map(|(d, k)| d ^ k));
                counter = counter.wrapping_add(1);
            }
            Some(out)
        }
        CipherMode::Ecb | CipherMode::Cbc => {
            let mut input = data.to_vec();
            if padding {
                let pad = bs - input.len() % bs;
                input.resize(input.len() + pad, pad as u8);
            } else if input.len() % bs != 0 {
                return None;
            }
            let mut chain = match name.mode() {
                CipherMode::Cbc => Some(iv?.to_vec()),
                _ => None,
            };
            let mut out = Vec::with_capacity(input.len());
            for block in input.chunks(bs) {
                let sealed = match &chain {
                    Some(previous) => {
                        let mixed: Vec<u8> =
                            block.iter().zip(previous).map(|(b, p)| b ^ p).collect();
                        encrypt(&mixed)
                    }
                    None => encrypt(block),
                };
                if chain.is_some() {
                    chain = Some(sealed.clone());
                }
                out.extend_from_slice(&sealed);
            }
            Some(out)
        }
        _ => None,
    }
}
