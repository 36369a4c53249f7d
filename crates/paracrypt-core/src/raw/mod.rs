//! Raw ciphers, byte-compatible with `openssl enc -K KEY -iv IV`: AES, DES, 3DES, Blowfish and
//! RC4 in ECB, CBC and CTR modes, PKCS#7 padded as OpenSSL pads by default.
//!
//! Raw output has **no integrity protection**: use the [container](crate) for anything that
//! must not be altered unnoticed. DES, 3DES, Blowfish, RC4 and ECB are legacy
//! ([`RawCipherName::hazards`]) and exist for compatibility and benchmarks.
//!
//! How each parallelises:
//!
//! | mode | encrypt | decrypt |
//! |---|---|---|
//! | ECB | parallel | parallel |
//! | CTR | parallel (each chunk seeks its counter) | parallel |
//! | CBC | **serial** (each block chains on the one before) | parallel (each chunk starts from the ciphertext block before it) |
//! | RC4 | serial (one keystream) | serial |
//!
//! ```
//! use paracrypt_core::raw::{Direction, RawCipher};
//!
//! let key = [0x11; 32];
//! let iv = [0x22; 16];
//! let cipher = RawCipher::new("aes-256-cbc".parse()?, &key, Some(&iv))?;
//! let mut data = b"attack at dawn".to_vec();
//! cipher.encrypt_vec(&mut data, 4096)?;
//! assert_eq!(data.len(), 16);
//! cipher.decrypt_vec(&mut data, 4096)?;
//! assert_eq!(data, b"attack at dawn");
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

mod modes;
mod name;

use std::fs::File;
use std::io::{Read, Write};

use cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, InnerIvInit, KeyInit};
use zeroize::Zeroizing;

use crate::engine::{self, ChunkTransform, SerialTransform, Work};
use crate::error::{Error, Result};
use crate::plan::{self, ChunkLayout, ChunkPlan, Tail};
pub use modes::Direction;
use modes::{CbcDecrypt, CbcEncrypt, Ctr, Ecb, Framing, Rc4Stream};
pub use name::{Algorithm, Hazard, Mode, RawCipherName};

/// A raw cipher with its key, IV and padding choice: the whole description of a raw job but
/// for the data and the chunk size.
#[derive(Clone)]
pub struct RawCipher {
    name: RawCipherName,
    key: Zeroizing<Vec<u8>>,
    iv: Vec<u8>,
    padding: bool,
}

impl std::fmt::Debug for RawCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawCipher")
            .field("name", &self.name)
            .field("padding", &self.padding)
            .finish_non_exhaustive()
    }
}

impl RawCipher {
    /// Checks the key and IV lengths for `name`. Padding is on for ECB and CBC.
    pub fn new(name: RawCipherName, key: &[u8], iv: Option<&[u8]>) -> Result<Self> {
        let (min, max) = name.algorithm().key_lengths();
        if !(min..=max).contains(&key.len()) {
            return Err(Error::KeyLength {
                cipher: name.as_str(),
                expected: name.algorithm().key_lengths_text(),
                got: key.len(),
            });
        }
        let expected = name.iv_len();
        let iv = match (iv, expected) {
            (None, 0) => Vec::new(),
            (Some(_), 0) => {
                return Err(Error::UnexpectedIv {
                    cipher: name.as_str(),
                });
            }
            (None, expected) => {
                return Err(Error::MissingIv {
                    cipher: name.as_str(),
                    expected,
                });
            }
            (Some(iv), expected) if iv.len() != expected => {
                return Err(Error::IvLength {
                    cipher: name.as_str(),
                    expected,
                    got: iv.len(),
                });
            }
            (Some(iv), _) => iv.to_vec(),
        };
        Ok(RawCipher {
            name,
            key: Zeroizing::new(key.to_vec()),
            iv,
            padding: name.is_padded_mode(),
        })
    }

    /// Turns PKCS#7 padding on or off (`openssl enc -nopad`). Without padding the input must be
    /// a whole number of blocks. Has no effect on CTR and RC4, which never pad.
    pub fn with_padding(mut self, padding: bool) -> Self {
        self.padding = padding && self.name.is_padded_mode();
        self
    }

    /// The cipher's name.
    pub fn name(&self) -> RawCipherName {
        self.name
    }

    /// Whether PKCS#7 padding is applied.
    pub fn padding(&self) -> bool {
        self.padding
    }

    /// Checks that `chunk_size` suits this cipher: within the engine's limits and a multiple of
    /// 16 bytes, so a chunk always holds whole blocks of every cipher.
    pub fn check_chunk_size(chunk_size: usize) -> Result<()> {
        plan::check_chunk_size(chunk_size)?;
        if !chunk_size.is_multiple_of(16) {
            return Err(Error::ChunkSize {
                size: chunk_size as u64,
                reason: "must be a multiple of 16 bytes",
            });
        }
        Ok(())
    }

    /// Where each chunk goes: in place, the last chunk padded or unpadded.
    pub fn layout(&self, direction: Direction, chunk_size: usize) -> Result<ChunkLayout> {
        Self::check_chunk_size(chunk_size)?;
        let tail = match (self.padding, direction) {
            (false, _) => Tail::Fixed,
            (true, Direction::Encrypt) => Tail::Pad {
                block: self.name.algorithm().block_size(),
                overhead: 0,
            },
            (true, Direction::Decrypt) => Tail::Unpad { overhead: 0 },
        };
        ChunkLayout::framed(0, chunk_size, 0, chunk_size, tail)
    }

    /// The plan for `input_len` bytes. Fails before any work when the length cannot be right:
    /// a partial block without padding, or padded ciphertext that is not whole blocks.
    pub fn plan(
        &self,
        direction: Direction,
        input_len: u64,
        chunk_size: usize,
    ) -> Result<ChunkPlan> {
        let bs = self.name.algorithm().block_size() as u64;
        let must_be_whole =
            self.name.is_padded_mode() && (!self.padding || direction == Direction::Decrypt);
        if must_be_whole && !input_len.is_multiple_of(bs) {
            return Err(Error::PartialBlock {
                len: input_len,
                block_size: bs as usize,
            });
        }
        if self.padding && direction == Direction::Decrypt && input_len == 0 {
            return Err(Error::TooShort {
                len: 0,
                what: "padded ciphertext holds at least one block",
            });
        }
        ChunkPlan::new(self.layout(direction, chunk_size)?, input_len)
    }

    /// The per-chunk transform for `direction` with chunks of `chunk_size` bytes.
    pub fn transform(&self, direction: Direction, chunk_size: usize) -> RawTransform {
        let framing = Framing {
            chunk_size,
            padding: self.padding,
        };
        let key = &self.key[..];
        let iv = &self.iv[..];
        let mode = self.name.mode();
        // The key and IV lengths were checked in `new`, so building the cipher cannot fail.
        macro_rules! build {
            ($cipher:ty) => {
                <$cipher>::new_from_slice(key).expect("key length checked in RawCipher::new")
            };
        }
        match (self.name.algorithm(), mode) {
            (Algorithm::Aes128, Mode::Ctr) => ctr_transform(build!(aes::Aes128), iv, chunk_size),
            (Algorithm::Aes192, Mode::Ctr) => ctr_transform(build!(aes::Aes192), iv, chunk_size),
            (Algorithm::Aes256, Mode::Ctr) => ctr_transform(build!(aes::Aes256), iv, chunk_size),
            (Algorithm::Aes128, _) => {
                block_transform(build!(aes::Aes128), mode, direction, iv, framing)
            }
            (Algorithm::Aes192, _) => {
                block_transform(build!(aes::Aes192), mode, direction, iv, framing)
            }
            (Algorithm::Aes256, _) => {
                block_transform(build!(aes::Aes256), mode, direction, iv, framing)
            }
            (Algorithm::Des, _) => block_transform(build!(des::Des), mode, direction, iv, framing),
            (Algorithm::TripleDes, _) => {
                block_transform(build!(des::TdesEde3), mode, direction, iv, framing)
            }
            (Algorithm::Blowfish, _) => {
                block_transform(build!(blowfish::Blowfish), mode, direction, iv, framing)
            }
            (Algorithm::Rc4, _) => RawTransform::Serial(Box::new(Rc4Stream(build!(rc4::Rc4)))),
        }
    }

    /// Encrypts `data` in place, growing it by the padding. Runs in the current Rayon pool.
    pub fn encrypt_vec(&self, data: &mut Vec<u8>, chunk_size: usize) -> Result<()> {
        self.process_vec(Direction::Encrypt, data, chunk_size)
    }

    /// Decrypts `data` in place, shrinking it by the padding. Runs in the current Rayon pool.
    pub fn decrypt_vec(&self, data: &mut Vec<u8>, chunk_size: usize) -> Result<()> {
        self.process_vec(Direction::Decrypt, data, chunk_size)
    }

    /// Encrypts or decrypts `data` in place, resizing it by the padding.
    pub fn process_vec(
        &self,
        direction: Direction,
        data: &mut Vec<u8>,
        chunk_size: usize,
    ) -> Result<()> {
        let plan = self.plan(direction, data.len() as u64, chunk_size)?;
        data.resize(plan.output_len() as usize, 0);
        let mut transform = self.transform(direction, chunk_size);
        let len = engine::process_in_place(&plan, transform.as_work(), data)?;
        data.truncate(len as usize);
        Ok(())
    }

    /// Encrypts or decrypts `input` into `output` with positional I/O, in parallel where the mode
    /// allows, and sets `output`'s length. Returns the output length.
    pub fn process_file(
        &self,
        direction: Direction,
        input: &File,
        output: &File,
        chunk_size: usize,
    ) -> Result<u64> {
        let len = input
            .metadata()
            .map_err(|e| Error::io("reading input metadata", e))?
            .len();
        let plan = self.plan(direction, len, chunk_size)?;
        let mut transform = self.transform(direction, chunk_size);
        let written = engine::run(&plan, transform.as_work(), 0..plan.len(), input, output)?
            .expect("the whole plan includes its last chunk");
        output
            .set_len(written)
            .map_err(|e| Error::io("setting output length", e))?;
        Ok(written)
    }

    /// Encrypts or decrypts a stream through a bounded ordered window (`window` chunks per wave,
    /// 0 for one per pool thread). Returns the bytes written.
    pub fn process_stream(
        &self,
        direction: Direction,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
        chunk_size: usize,
        window: usize,
    ) -> Result<u64> {
        let layout = self.layout(direction, chunk_size)?;
        let mut transform = self.transform(direction, chunk_size);
        engine::stream::process_stream(&layout, transform.as_work(), reader, writer, window)
    }
}

/// A raw cipher's transform, owned: parallel for ECB, CTR and CBC decryption, serial otherwise.
pub enum RawTransform {
    /// Chunks are independent.
    Parallel(Box<dyn ChunkTransform + Send>),
    /// Chunks chain in order.
    Serial(Box<dyn SerialTransform>),
}

impl RawTransform {
    /// Borrows the transform as engine work.
    pub fn as_work(&mut self) -> Work<'_> {
        match self {
            RawTransform::Parallel(t) => Work::Parallel(&**t),
            RawTransform::Serial(t) => Work::Serial(&mut **t),
        }
    }
}

impl std::fmt::Debug for RawTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RawTransform::Parallel(_) => "RawTransform::Parallel",
            RawTransform::Serial(_) => "RawTransform::Serial",
        })
    }
}

/// ECB and CBC for any block cipher.
fn block_transform<C>(
    cipher: C,
    mode: Mode,
    direction: Direction,
    iv: &[u8],
    framing: Framing,
) -> RawTransform
where
    C: BlockCipherEncrypt + BlockCipherDecrypt + Clone + Send + Sync + 'static,
{
    let block_iv = || Array::try_from(iv).expect("IV length checked in RawCipher::new");
    match (mode, direction) {
        (Mode::Cbc, Direction::Decrypt) => RawTransform::Parallel(Box::new(CbcDecrypt {
            cipher,
            iv: block_iv(),
            framing,
        })),
        (Mode::Cbc, Direction::Encrypt) => RawTransform::Serial(Box::new(CbcEncrypt {
            mode: cbc::Encryptor::inner_iv_init(cipher, &block_iv()),
            framing,
        })),
        (Mode::Ecb, direction) => RawTransform::Parallel(Box::new(Ecb {
            cipher,
            direction,
            framing,
        })),
        (Mode::Ctr | Mode::Stream, _) => unreachable!("dispatched before block_transform"),
    }
}

/// CTR, which RustCrypto's `ctr` defines for 16-byte blocks (AES).
fn ctr_transform<C>(cipher: C, iv: &[u8], chunk_size: usize) -> RawTransform
where
    C: BlockCipherEncrypt<BlockSize = cipher::consts::U16> + Clone + Send + Sync + 'static,
{
    let iv = Array::try_from(iv).expect("IV length checked in RawCipher::new");
    RawTransform::Parallel(Box::new(Ctr {
        cipher,
        iv,
        chunk_size,
    }))
}
