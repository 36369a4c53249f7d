//! The per-chunk transforms behind the raw ciphers, on the [provider](crate::provider)'s
//! whole-chunk interface.
//!
//! Every chunk is handed to the provider in one call (ECB or CBC over all its blocks, CTR's
//! keystream from the chunk's offset), so each thread keeps the cipher's instruction-level
//! parallelism (AES-NI/VAES pipelines 8 or more blocks at once); Rayon threads are a second,
//! separate level on top. In memory the call reads the chunk's input and writes its output
//! slot (one pass: [`ChunkTransform::transform_to`]); elsewhere it works in place.

use cipher::block_padding::{Padding, Pkcs7};
use zeroize::Zeroizing;

use crate::engine::{ChunkCtx, ChunkTransform, SerialTransform};
use crate::error::{Error, Result};
use crate::provider::{BlockCipher, CtrCipher, Provider, StreamCipher as Keystream};

/// Encrypt or decrypt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Plaintext to ciphertext.
    Encrypt,
    /// Ciphertext to plaintext.
    Decrypt,
}

/// What every block transform needs besides its cipher: whether PKCS#7 padding applies.
/// (Errors name absolute lengths from the chunk's offset.)
#[derive(Clone, Copy, Debug)]
pub(crate) struct Framing {
    pub padding: bool,
}

impl Framing {
    /// Before encryption: pads the last chunk (returning the length to encrypt) or checks that
    /// the input is whole blocks.
    fn pad(&self, bs: usize, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        if ctx.is_last && self.padding {
            let whole = len / bs * bs;
            Pkcs7::raw_pad(&mut buf[whole..whole + bs], len - whole);
            return Ok(whole + bs);
        }
        self.whole_blocks(bs, ctx, len)
    }

    /// [`pad`](Self::pad) for encryption from `input` into `output`: the padded last block is
    /// written into `output` after the whole blocks. Returns how many bytes of `input` to
    /// encrypt (whole blocks) and the length to encrypt in all.
    fn pad_to(
        &self,
        bs: usize,
        ctx: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(usize, usize)> {
        let len = input.len();
        if ctx.is_last && self.padding {
            let whole = len / bs * bs;
            let last = &mut output[whole..whole + bs];
            last[..len - whole].copy_from_slice(&input[whole..]);
            Pkcs7::raw_pad(last, len - whole);
            return Ok((whole, whole + bs));
        }
        let len = self.whole_blocks(bs, ctx, len)?;
        Ok((len, len))
    }

    /// Checks that a chunk is whole blocks (always so but for the last chunk).
    fn whole_blocks(&self, bs: usize, ctx: &ChunkCtx<'_>, len: usize) -> Result<usize> {
        if !len.is_multiple_of(bs) {
            return Err(Error::PartialBlock {
                len: ctx.offset + len as u64,
                block_size: bs,
            });
        }
        Ok(len)
    }

    /// After decryption: strips and checks the last chunk's padding.
    fn unpad(&self, bs: usize, ctx: &ChunkCtx<'_>, buf: &[u8], len: usize) -> Result<usize> {
        if !(ctx.is_last && self.padding) {
            return Ok(len);
        }
        if len < bs {
            return Err(Error::TooShort {
                len: ctx.offset + len as u64,
                what: "padded ciphertext holds at least one block",
            });
        }
        let kept = Pkcs7::raw_unpad(&buf[len - bs..len]).map_err(|_| Error::BadPadding)?;
        Ok(len - bs + kept.len())
    }
}

/// ECB in either direction: every block independent.
pub(crate) struct Ecb {
    pub cipher: Box<dyn BlockCipher>,
    pub direction: Direction,
    pub framing: Framing,
}

impl ChunkTransform for Ecb {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        let bs = self.cipher.block_size();
        match self.direction {
            Direction::Encrypt => {
                let len = self.framing.pad(bs, ctx, buf, len)?;
                self.cipher.ecb(true, &mut buf[..len])?;
                Ok(len)
            }
            Direction::Decrypt => {
                let len = self.framing.whole_blocks(bs, ctx, len)?;
                self.cipher.ecb(false, &mut buf[..len])?;
                self.framing.unpad(bs, ctx, buf, len)
            }
        }
    }

    fn transform_to(&self, ctx: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        let bs = self.cipher.block_size();
        match self.direction {
            Direction::Encrypt => {
                let (whole, len) = self.framing.pad_to(bs, ctx, input, output)?;
                self.cipher
                    .ecb_to(true, &input[..whole], &mut output[..whole])?;
                if len > whole {
                    self.cipher.ecb(true, &mut output[whole..len])?;
                }
                Ok(len)
            }
            Direction::Decrypt => {
                let len = self.framing.whole_blocks(bs, ctx, input.len())?;
                self.cipher.ecb_to(false, input, &mut output[..len])?;
                self.framing.unpad(bs, ctx, output, len)
            }
        }
    }
}

/// CBC decryption: chunk `i` starts its chain from the last ciphertext block of chunk `i - 1`
/// (the context the engine hands over), or from the IV for chunk 0.
pub(crate) struct CbcDecrypt {
    pub cipher: Box<dyn BlockCipher>,
    pub iv: Vec<u8>,
    pub framing: Framing,
}

impl ChunkTransform for CbcDecrypt {
    fn context_len(&self) -> usize {
        self.cipher.block_size()
    }

    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        let bs = self.cipher.block_size();
        let len = self.framing.whole_blocks(bs, ctx, len)?;
        self.cipher
            .cbc_decrypt(self.chain_start(ctx), &mut buf[..len])?;
        self.framing.unpad(bs, ctx, buf, len)
    }

    fn transform_to(&self, ctx: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        let bs = self.cipher.block_size();
        let len = self.framing.whole_blocks(bs, ctx, input.len())?;
        self.cipher
            .cbc_decrypt_to(self.chain_start(ctx), input, &mut output[..len])?;
        self.framing.unpad(bs, ctx, output, len)
    }
}

impl CbcDecrypt {
    /// The block chunk `ctx` chains from: the IV for chunk 0, else the last ciphertext block
    /// of the chunk before (its context).
    fn chain_start<'a>(&'a self, ctx: &ChunkCtx<'a>) -> &'a [u8] {
        if ctx.index == 0 {
            &self.iv
        } else {
            ctx.context
        }
    }
}

/// CBC encryption: each block chains on the previous ciphertext block, so chunks run in order;
/// chunk 0 starts the chain from the IV again.
pub(crate) struct CbcEncrypt {
    pub cipher: Box<dyn BlockCipher>,
    pub iv: Vec<u8>,
    /// The last ciphertext block so far (the IV before chunk 0).
    pub chain: Vec<u8>,
    pub framing: Framing,
}

impl SerialTransform for CbcEncrypt {
    fn transform(&mut self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        if ctx.index == 0 {
            self.chain.copy_from_slice(&self.iv);
        }
        let len = self.framing.pad(self.cipher.block_size(), ctx, buf, len)?;
        self.cipher.cbc_encrypt(&mut self.chain, &mut buf[..len])?;
        Ok(len)
    }

    fn transform_to(
        &mut self,
        ctx: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<usize> {
        if ctx.index == 0 {
            self.chain.copy_from_slice(&self.iv);
        }
        let bs = self.cipher.block_size();
        let (whole, len) = self.framing.pad_to(bs, ctx, input, output)?;
        self.cipher
            .cbc_encrypt_to(&mut self.chain, &input[..whole], &mut output[..whole])?;
        if len > whole {
            self.cipher
                .cbc_encrypt(&mut self.chain, &mut output[whole..len])?;
        }
        Ok(len)
    }
}

/// CTR in either direction: each chunk XORs the keystream from its own offset.
pub(crate) struct Ctr {
    pub cipher: Box<dyn CtrCipher>,
    pub iv: [u8; 16],
}

impl ChunkTransform for Ctr {
    fn transform(&self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        self.cipher
            .apply_keystream(&self.iv, ctx.offset, &mut buf[..len])?;
        Ok(len)
    }

    fn transform_to(&self, ctx: &ChunkCtx<'_>, input: &[u8], output: &mut [u8]) -> Result<usize> {
        let len = input.len();
        self.cipher
            .apply_keystream_to(&self.iv, ctx.offset, input, &mut output[..len])?;
        Ok(len)
    }
}

/// RC4: one keystream from the start, so chunks run in order; chunk 0 starts it over.
pub(crate) struct Rc4Stream {
    pub provider: Provider,
    pub key: Zeroizing<Vec<u8>>,
    pub state: Box<dyn Keystream>,
}

impl SerialTransform for Rc4Stream {
    fn transform(&mut self, ctx: &ChunkCtx<'_>, buf: &mut [u8], len: usize) -> Result<usize> {
        if ctx.index == 0 {
            self.state = self.provider.rc4(&self.key).expect("key length checked");
        }
        self.state.apply_keystream(&mut buf[..len]);
        Ok(len)
    }

    fn transform_to(
        &mut self,
        ctx: &ChunkCtx<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<usize> {
        if ctx.index == 0 {
            self.state = self.provider.rc4(&self.key).expect("key length checked");
        }
        let len = input.len();
        self.state.apply_keystream_to(input, &mut output[..len]);
        Ok(len)
    }
}
