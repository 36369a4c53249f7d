//! The symmetric benchmark workloads, defined once: the criterion bench
//! (`benches/symmetric.rs`) and `paracrypt bench` run exactly these.
//!
//! A [`Symmetric`] workload is prepared once for a size (keys, the [`Job`], input data, output
//! buffers) and then run many times in whatever Rayon pool the caller installs; its speed-up is
//! its time in a one-thread pool over its time in an N-thread pool.
//!
//! ```
//! use paracrypt_core::plan::ChunkSize;
//! use paracrypt_core::workload::Symmetric;
//!
//! for workload in Symmetric::all().into_iter().take(3) {
//!     let mut prepared = workload.prepare(64 * 1024, ChunkSize::new(16 * 1024)?)?;
//!     prepared.run_in_memory()?;
//! }
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

use std::fs::File;

use crate::container::{Decryptor, Encryptor, Key, Suite};
use crate::engine::{self, Job};
use crate::error::Result;
use crate::plan::ChunkSize;
use crate::provider::Provider;
use crate::raw::{Direction, RawCipher, RawCipherName};

/// One symmetric workload: a raw cipher or a container suite, one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Symmetric {
    /// `paracrypt raw` with this cipher (unpadded, so buffers keep their size).
    Raw {
        /// The cipher.
        cipher: RawCipherName,
        /// Encrypt or decrypt.
        direction: Direction,
    },
    /// The container with this suite.
    Container {
        /// The suite.
        suite: Suite,
        /// Encrypt or decrypt.
        direction: Direction,
    },
}

impl Symmetric {
    /// Every raw cipher's encryption, the decryption of those whose two directions parallelise
    /// differently (CBC), and every container suite both ways.
    pub fn all() -> Vec<Symmetric> {
        let mut all = Vec::new();
        for &cipher in RawCipherName::ALL {
            all.push(Symmetric::Raw {
                cipher,
                direction: Direction::Encrypt,
            });
            if cipher.encrypts_in_parallel() != cipher.decrypts_in_parallel() {
                all.push(Symmetric::Raw {
                    cipher,
                    direction: Direction::Decrypt,
                });
            }
        }
        for &suite in Suite::ALL {
            for direction in [Direction::Encrypt, Direction::Decrypt] {
                all.push(Symmetric::Container { suite, direction });
            }
        }
        all
    }

    /// A stable name: `raw/aes-256-ctr/encrypt`, `container/aes-256-gcm/decrypt`.
    pub fn name(&self) -> String {
        let dir = |d: Direction| match d {
            Direction::Encrypt => "encrypt",
            Direction::Decrypt => "decrypt",
        };
        match *self {
            Symmetric::Raw { cipher, direction } => format!("raw/{cipher}/{}", dir(direction)),
            Symmetric::Container { suite, direction } => {
                format!("container/{suite}/{}", dir(direction))
            }
        }
    }

    /// Parses a [`Symmetric::name`], or a short form without the direction (encryption).
    pub fn from_name(name: &str) -> Option<Symmetric> {
        Symmetric::all()
            .into_iter()
            .find(|w| w.name() == name || w.name() == format!("{name}/encrypt"))
    }

    /// Whether the work can use more than one thread.
    pub fn is_parallel(&self) -> bool {
        match *self {
            Symmetric::Raw { cipher, direction } => cipher.runs_in_parallel(direction),
            Symmetric::Container { .. } => true,
        }
    }

    /// Builds keys, the job and `size` bytes of input (ciphertext, for decryption) in chunks of
    /// `chunk_size` bytes, on the default provider.
    pub fn prepare(&self, size: usize, chunk_size: ChunkSize) -> Result<Prepared> {
        self.prepare_with(size, chunk_size, Provider::default())
    }

    /// [`prepare`](Self::prepare) with the raw cipher or the container suite on `provider`.
    pub fn prepare_with(
        &self,
        size: usize,
        chunk_size: ChunkSize,
        provider: Provider,
    ) -> Result<Prepared> {
        let plaintext = pattern(size);
        let len = Some(size as u64);
        let (job, input) = match *self {
            Symmetric::Raw { cipher, direction } => {
                let (min, max) = cipher.algorithm().key_lengths();
                let key = vec![0x42; if min == max { min } else { 16 }];
                let iv = vec![0x24; cipher.iv_len()];
                let raw = RawCipher::new(cipher, &key, (!iv.is_empty()).then_some(&iv[..]))?
                    .with_padding(false)
                    .with_provider(provider);
                (raw.job(direction, len, chunk_size)?, plaintext)
            }
            Symmetric::Container { suite, direction } => {
                let key = Key::from_bytes([0x42; 32]);
                let encryptor = Encryptor::new(key.clone())
                    .suite(suite)
                    .chunk_size(chunk_size)
                    .with_provider(provider);
                match direction {
                    Direction::Encrypt => (encryptor.job(len)?, plaintext),
                    Direction::Decrypt => {
                        let sealed = encryptor.encrypt_vec(&plaintext)?;
                        let job = Decryptor::new(key)
                            .with_provider(provider)
                            .job(&sealed, Some(sealed.len() as u64))?;
                        (job, sealed)
                    }
                }
            }
        };
        Ok(Prepared {
            workload: *self,
            job,
            input,
            output: Vec::new(),
        })
    }
}

/// A workload ready to run.
pub struct Prepared {
    workload: Symmetric,
    job: Job,
    input: Vec<u8>,
    output: Vec<u8>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("workload", &self.workload)
            .field("input", &self.input.len())
            .finish_non_exhaustive()
    }
}

impl Prepared {
    /// The workload.
    pub fn workload(&self) -> Symmetric {
        self.workload
    }

    /// The input bytes (write them to a file for [`Prepared::run_file`]).
    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// Runs once in memory, in the current pool. Raw ciphers work in place (unpadded, so
    /// repeated runs keep transforming the same buffer); the container writes into a buffer
    /// kept between runs, so no run allocates.
    pub fn run_in_memory(&mut self) -> Result<()> {
        match self.workload {
            Symmetric::Raw { .. } => engine::process_in_place(&self.job, &mut self.input)?,
            Symmetric::Container { .. } => {
                engine::run_in_memory(&self.job, &self.input, &mut self.output)?
            }
        }
        Ok(())
    }

    /// Runs once from `input` (holding [`Prepared::input`]) to `output`, file to file.
    pub fn run_file(&self, input: &File, output: &File) -> Result<u64> {
        engine::run_file(&self.job, input, output)
    }
}

/// Deterministic, incompressible-looking input.
fn pattern(size: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect()
}
