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
//! use paracrypt_core::plan::ChunkSize;
//! use paracrypt_core::raw::{Direction, RawCipher};
//! use paracrypt_core::Runner;
//!
//! let key = [0x11; 32];
//! let iv = [0x22; 16];
//! let cipher = RawCipher::new("aes-256-cbc".parse()?, &key, Some(&iv))?;
//! let chunk = ChunkSize::new(4096)?;
//! let runner = Runner::new();
//! let sealed = runner.vec(&cipher.recipe(Direction::Encrypt, chunk), b"attack at dawn")?;
//! assert_eq!(sealed.len(), 16);
//! let plain = runner.vec(&cipher.recipe(Direction::Decrypt, chunk), &sealed)?;
//! assert_eq!(plain, b"attack at dawn");
//! # Ok::<(), paracrypt_core::Error>(())
//! ```
//!
//! A [`RawRecipe`] (cipher, direction, chunk size) is the [`Recipe`] any
//! [`Runner`](crate::Runner) runs: it makes the [`Job`] the [engine](crate::engine)'s drivers run.

mod modes;
mod name;
pub mod salted;

use std::io::BufRead;

use zeroize::Zeroizing;

use crate::engine::{Job, Transform};
use crate::error::{Error, Result};
use crate::plan::{ChunkLayout, ChunkSize, Tail};
use crate::provider::{BlockAlg, Provider};
use crate::recipe::Recipe;
pub use modes::Direction;
use modes::{CbcDecrypt, CbcEncrypt, Ctr, Ecb, Framing, Rc4Stream};
pub use name::{Algorithm, CipherMode, Hazard, RawCipherName};

/// A raw cipher with its key, IV and padding choice: the whole description of a raw job but
/// for the data, the direction and the chunk size ([`RawCipher::recipe`]).
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

    /// The job of `transform` (this cipher's, perhaps wrapped) for an input of `input_len`
    /// bytes when it is known (`None`: a stream), behind `header`: one the output starts with
    /// when encrypting, one the input starts with (and `input_len` counts) when decrypting, as
    /// openssl's `Salted__` header ([`salted`]). A known length is checked before any work: a
    /// partial block without padding, or padded ciphertext that is not whole blocks, fails
    /// here.
    pub(crate) fn framed_job(
        &self,
        direction: Direction,
        input_len: Option<u64>,
        chunk_size: ChunkSize,
        header: &[u8],
        transform: Transform,
    ) -> Result<Job> {
        let header_len = header.len() as u64;
        let job =
            Job::new(self.layout(direction, chunk_size, header_len), transform).with_header(header);
        match input_len {
            Some(len) => {
                let data_len = match direction {
                    Direction::Encrypt => len,
                    Direction::Decrypt => len.checked_sub(header_len).ok_or(Error::TooShort {
                        len,
                        what: "the input is shorter than its header",
                    })?,
                };
                self.check_len(direction, data_len)?;
                job.with_input_len(len)
            }
            None => Ok(job),
        }
    }

    /// Where each chunk goes: after `header_len` bytes of header (in the output when
    /// encrypting, in the input when decrypting), the last chunk padded or unpadded.
    fn layout(&self, direction: Direction, chunk_size: ChunkSize, header_len: u64) -> ChunkLayout {
        let tail = match (self.padding, direction) {
            (false, _) => Tail::Fixed,
            (true, Direction::Encrypt) => Tail::Pad {
                block: self.name.algorithm().block_size(),
                overhead: 0,
            },
            (true, Direction::Decrypt) => Tail::Unpad { overhead: 0 },
        };
        let (input_offset, output_offset) = match direction {
            Direction::Encrypt => (0, header_len),
            Direction::Decrypt => (header_len, 0),
        };
        let chunk = chunk_size.get();
        ChunkLayout::framed(input_offset, chunk, output_offset, chunk, tail)
            .expect("a ChunkSize is a valid chunk")
    }

    /// Fails on an input length that cannot be right: a partial block without padding, or
    /// padded ciphertext that is not whole blocks.
    fn check_len(&self, direction: Direction, input_len: u64) -> Result<()> {
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
        Ok(())
    }

    /// The per-chunk transform for `direction` on `provider`: parallel for ECB, CTR and CBC
    /// decryption, serial otherwise.
    pub(crate) fn transform(&self, direction: Direction, provider: Provider) -> Transform {
        // The key and IV lengths were checked in `new`, so building the cipher cannot fail.
        const CHECKED: &str = "key and IV lengths checked in RawCipher::new";
        let (key, iv) = (&self.key[..], &self.iv[..]);
        let block_alg = match self.name.algorithm() {
            Algorithm::Aes128 | Algorithm::Aes192 | Algorithm::Aes256 => BlockAlg::Aes,
            Algorithm::Des => BlockAlg::Des,
            Algorithm::TripleDes => BlockAlg::TripleDes,
            Algorithm::Blowfish => BlockAlg::Blowfish,
            Algorithm::Rc4 => {
                return Transform::serial(Rc4Stream {
                    provider,
                    key: self.key.clone(),
                    state: provider.rc4(key).expect(CHECKED),
                });
            }
        };
        let framing = Framing {
            padding: self.padding,
        };
        match (self.name.mode(), direction) {
            (CipherMode::Ctr, _) => Transform::parallel(Ctr {
                cipher: provider.aes_ctr(key).expect(CHECKED),
                iv: iv.try_into().expect(CHECKED),
            }),
            (CipherMode::Cbc, Direction::Decrypt) => Transform::parallel(CbcDecrypt {
                cipher: provider.block_cipher(block_alg, key).expect(CHECKED),
                iv: iv.to_vec(),
                framing,
            }),
            (CipherMode::Cbc, Direction::Encrypt) => Transform::serial(CbcEncrypt {
                cipher: provider.block_cipher(block_alg, key).expect(CHECKED),
                iv: iv.to_vec(),
                chain: iv.to_vec(),
                framing,
            }),
            (CipherMode::Ecb, direction) => Transform::parallel(Ecb {
                cipher: provider.block_cipher(block_alg, key).expect(CHECKED),
                direction,
                framing,
            }),
            (CipherMode::Stream, _) => unreachable!("only RC4 is a stream cipher"),
        }
    }

    /// The recipe of this cipher in `direction`, in chunks of `chunk_size`: what a
    /// [`Runner`](crate::Runner) runs file to file, stream to stream, over a range or as a
    /// `Write` adapter.
    pub fn recipe(&self, direction: Direction, chunk_size: ChunkSize) -> RawRecipe {
        RawRecipe {
            cipher: self.clone(),
            direction,
            chunk_size,
        }
    }
}

/// A raw cipher job, everything it needs but the data and the provider: the cipher (key, IV,
/// padding), the direction and the chunk size. With no header, it is the same job on every
/// process.
#[derive(Clone, Debug)]
pub struct RawRecipe {
    /// The cipher, key and IV.
    pub cipher: RawCipher,
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// Bytes per chunk.
    pub chunk_size: ChunkSize,
}

impl RawRecipe {
    /// Whether the chunks run on many threads (not CBC encryption, nor RC4).
    pub fn is_parallel(&self) -> bool {
        self.cipher.name().runs_in_parallel(self.direction)
    }
}

/// The output bytes are the same whichever provider computes the cipher.
impl Recipe for RawRecipe {
    /// Reads nothing. A known length is checked here, before any work: a partial block without
    /// padding, or padded ciphertext that is not whole blocks, fails.
    fn first_job(
        &self,
        _input: &mut dyn BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        let transform = self.cipher.transform(self.direction, provider);
        (self.cipher).framed_job(self.direction, input_len, self.chunk_size, &[], transform)
    }

    fn job_from_header(
        &self,
        _header: &[u8],
        _key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job> {
        self.first_job(&mut &[][..], input_len, provider)
    }
}
