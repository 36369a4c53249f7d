//! The symmetric benchmark workloads, defined once: the criterion bench
//! (`benches/symmetric.rs`) and `paracrypt bench` run exactly these.
//!
//! A [`Symmetric`] workload is prepared once for a size (keys, recipients, input data, output
//! buffers) and then run many times in whatever Rayon pool the caller installs; its speed-up is
//! its time in a one-thread pool over its time in an N-thread pool.
//!
//! Raw ciphers and container suites under a key make their [`Job`] once. Work to recipients
//! (age files, the container to an X25519 recipient) goes through its [`Recipe`] on every run,
//! as `paracrypt` does: each encryption draws a file key and wraps it for the recipient, each
//! decryption unwraps it, so the rows include the header's public-key work.
//!
//! ```
//! use paracrypt_bench::symmetric::Symmetric;
//! use paracrypt_core::plan::ChunkSize;
//!
//! for workload in Symmetric::all().into_iter().take(3) {
//!     let mut prepared = workload.prepare(64 * 1024, ChunkSize::new(16 * 1024)?)?;
//!     prepared.run_in_memory()?;
//! }
//! # Ok::<(), paracrypt_bench::Error>(())
//! ```

use std::fs::File;

use age::secrecy::ExposeSecret;
use paracrypt_core::container::{self, Key, Suite};
use paracrypt_core::engine::{self, Job};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};
use paracrypt_core::recipient::pq::HybridIdentity;
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::{Recipe, Runner, agefile};

use crate::Result;

/// The kind of age recipient work to recipients is addressed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgeRecipient {
    /// An X25519 recipient (`age1…`).
    X25519,
    /// A post-quantum recipient, ML-KEM-768 + X25519 (`age1pq1…`).
    PostQuantum,
}

impl AgeRecipient {
    /// Both kinds.
    pub const ALL: &'static [AgeRecipient] = &[AgeRecipient::X25519, AgeRecipient::PostQuantum];

    /// The name in workload names: `x25519`, `mlkem768x25519` (age's name of the hybrid).
    pub fn as_str(&self) -> &'static str {
        match self {
            AgeRecipient::X25519 => "x25519",
            AgeRecipient::PostQuantum => "mlkem768x25519",
        }
    }

    /// A fresh identity of this kind, as recipients (to encrypt) and identities (to decrypt).
    fn generate(&self) -> Result<(Recipients, Identities)> {
        let (public, secret) = match self {
            AgeRecipient::X25519 => {
                let identity = age::x25519::Identity::generate();
                let secret = identity.to_string().expose_secret().to_string();
                (identity.to_public().to_string(), secret)
            }
            AgeRecipient::PostQuantum => {
                let identity = HybridIdentity::generate();
                let secret = identity.to_secret_string().expose_secret().to_string();
                (identity.to_public().to_string(), secret)
            }
        };
        let mut recipients = Recipients::new();
        recipients.add(&public, "the benchmark's recipient")?;
        let mut identities = Identities::new();
        identities.add_file("the benchmark's identity", secret.as_bytes())?;
        Ok((recipients, identities))
    }
}

/// One symmetric workload: a raw cipher, a container suite, or an age file, one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Symmetric {
    /// `paracrypt raw` with this cipher (unpadded, so buffers keep their size).
    Raw {
        /// The cipher.
        cipher: RawCipherName,
        /// Encrypt or decrypt.
        direction: Direction,
    },
    /// The container with this suite, under a key.
    Container {
        /// The suite.
        suite: Suite,
        /// Encrypt or decrypt.
        direction: Direction,
    },
    /// The container with this suite to an age recipient (`paracrypt encrypt -r`).
    ContainerTo {
        /// The recipient's kind.
        recipient: AgeRecipient,
        /// The suite.
        suite: Suite,
        /// Encrypt or decrypt.
        direction: Direction,
    },
    /// An age v1 file (binary) to a recipient (`paracrypt age`).
    Age {
        /// The recipient's kind.
        recipient: AgeRecipient,
        /// Encrypt or decrypt.
        direction: Direction,
    },
}

impl Symmetric {
    /// Every raw cipher's encryption, the decryption of those whose two directions parallelise
    /// differently (CBC), every container suite both ways, the default suite to an X25519
    /// recipient both ways, and age files to each kind of recipient both ways.
    pub fn all() -> Vec<Symmetric> {
        let both = [Direction::Encrypt, Direction::Decrypt];
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
            for direction in both {
                all.push(Symmetric::Container { suite, direction });
            }
        }
        for direction in both {
            all.push(Symmetric::ContainerTo {
                recipient: AgeRecipient::X25519,
                suite: Suite::default(),
                direction,
            });
        }
        for &recipient in AgeRecipient::ALL {
            for direction in both {
                all.push(Symmetric::Age {
                    recipient,
                    direction,
                });
            }
        }
        all
    }

    /// A stable name: `raw/aes-256-ctr/encrypt`, `container/aes-256-gcm/decrypt`,
    /// `container/x25519/aes-256-gcm/encrypt`, `age/mlkem768x25519/decrypt`.
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
            Symmetric::ContainerTo {
                recipient,
                suite,
                direction,
            } => format!(
                "container/{}/{suite}/{}",
                recipient.as_str(),
                dir(direction)
            ),
            Symmetric::Age {
                recipient,
                direction,
            } => format!("age/{}/{}", recipient.as_str(), dir(direction)),
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
            Symmetric::Container { .. } | Symmetric::ContainerTo { .. } | Symmetric::Age { .. } => {
                true
            }
        }
    }

    /// The direction.
    pub fn direction(&self) -> Direction {
        match *self {
            Symmetric::Raw { direction, .. }
            | Symmetric::Container { direction, .. }
            | Symmetric::ContainerTo { direction, .. }
            | Symmetric::Age { direction, .. } => direction,
        }
    }

    /// Builds keys, the job and `size` bytes of input (ciphertext, for decryption) in chunks of
    /// `chunk_size` bytes, on the default provider.
    pub fn prepare(&self, size: usize, chunk_size: ChunkSize) -> Result<Prepared> {
        self.prepare_with(size, chunk_size, Provider::default())
    }

    /// [`prepare`](Self::prepare) with the raw cipher, the container suite or the age payload on
    /// `provider`. age's chunks are its own 64 KiB: `chunk_size` does not apply to them.
    pub fn prepare_with(
        &self,
        size: usize,
        chunk_size: ChunkSize,
        provider: Provider,
    ) -> Result<Prepared> {
        let plaintext = pattern(size);
        let len = Some(size as u64);
        let runner = Runner::new().provider(provider);
        let (work, input) = match *self {
            Symmetric::Raw { cipher, direction } => {
                let (min, max) = cipher.algorithm().key_lengths();
                let key = vec![0x42; if min == max { min } else { 16 }];
                let iv = vec![0x24; cipher.iv_len()];
                let raw = RawCipher::new(cipher, &key, (!iv.is_empty()).then_some(&iv[..]))?
                    .with_padding(false)
                    .recipe(direction, chunk_size);
                let job = raw.first_job(&mut &[][..], len, provider)?;
                (Work::InPlace(job), plaintext)
            }
            Symmetric::Container { suite, direction } => {
                let key = Key::from_bytes([0x42; 32]);
                let encryptor = container::Encryptor::new(key.clone())
                    .suite(suite)
                    .chunk_size(chunk_size);
                match direction {
                    Direction::Encrypt => {
                        let job = encryptor.first_job(&mut &[][..], len, provider)?;
                        (Work::Job(job), plaintext)
                    }
                    Direction::Decrypt => {
                        let sealed = runner.vec(&encryptor, &plaintext)?;
                        let sealed_len = Some(sealed.len() as u64);
                        let job = container::Decryptor::new(key).first_job(
                            &mut &sealed[..],
                            sealed_len,
                            provider,
                        )?;
                        (Work::Job(job), sealed)
                    }
                }
            }
            Symmetric::ContainerTo {
                recipient,
                suite,
                direction,
            } => {
                let (recipients, identities) = recipient.generate()?;
                let encryptor = container::Encryptor::new(recipients)
                    .suite(suite)
                    .chunk_size(chunk_size);
                match direction {
                    Direction::Encrypt => (Work::Recipe(Box::new(encryptor)), plaintext),
                    Direction::Decrypt => {
                        let sealed = runner.vec(&encryptor, &plaintext)?;
                        let decryptor = container::Decryptor::new(identities);
                        (Work::Recipe(Box::new(decryptor)), sealed)
                    }
                }
            }
            Symmetric::Age {
                recipient,
                direction,
            } => {
                let (recipients, identities) = recipient.generate()?;
                let encryptor = agefile::Encryptor::new(recipients);
                match direction {
                    Direction::Encrypt => (Work::Recipe(Box::new(encryptor)), plaintext),
                    Direction::Decrypt => {
                        let sealed = runner.vec(&encryptor, &plaintext)?;
                        let decryptor = agefile::Decryptor::new(identities);
                        (Work::Recipe(Box::new(decryptor)), sealed)
                    }
                }
            }
        };
        Ok(Prepared {
            workload: *self,
            work,
            provider,
            input,
            output: Vec::new(),
        })
    }
}

/// How a prepared workload runs.
enum Work {
    /// A job made once, run in place (raw ciphers, unpadded).
    InPlace(Job),
    /// A job made once, run into an output buffer (the container under a key).
    Job(Job),
    /// A recipe that makes its job, header included, on every run (work to recipients).
    Recipe(Box<dyn Recipe>),
}

/// A workload ready to run.
pub struct Prepared {
    workload: Symmetric,
    work: Work,
    /// The provider the recipes make their jobs on.
    provider: Provider,
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

    /// The output of the last in-memory run (empty for raw ciphers, which work in place).
    pub fn output(&self) -> &[u8] {
        &self.output
    }

    /// Runs once in memory, in the current pool. Raw ciphers work in place (unpadded, so
    /// repeated runs keep transforming the same buffer); the others write into a buffer kept
    /// between runs, so no run allocates it again.
    pub fn run_in_memory(&mut self) -> Result<()> {
        match &self.work {
            Work::InPlace(job) => engine::process_in_place(job, &mut self.input)
                .map_err(paracrypt_core::Error::from)?,
            Work::Job(job) => engine::run_in_memory(job, &self.input, &mut self.output)
                .map_err(paracrypt_core::Error::from)?,
            Work::Recipe(recipe) => {
                let input_len = Some(self.input.len() as u64);
                let job = recipe.first_job(&mut &self.input[..], input_len, self.provider)?;
                engine::run_in_memory(&job, &self.input, &mut self.output)
                    .map_err(paracrypt_core::Error::from)?
            }
        }
        Ok(())
    }

    /// Runs once from `input` (holding [`Prepared::input`]) to `output`, file to file.
    pub fn run_file(&self, input: &File, output: &File) -> Result<u64> {
        Ok(match &self.work {
            Work::InPlace(job) | Work::Job(job) => engine::run_file(job, input, output)?,
            Work::Recipe(recipe) => {
                let runner = Runner::new().provider(self.provider);
                runner.file(recipe.as_ref(), input, output)?
            }
        })
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
