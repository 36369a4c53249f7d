//! The public-key benchmark workloads, defined once: the criterion benches
//! (`benches/pubkey.rs`) and `paracrypt bench` run the same operations on the same sizes.
//!
//! Each [`Workload`] is prepared once (keys, digests, signatures) and then run many times,
//! under whatever Rayon pool the caller installs; the speed-up of a workload is its time in a
//! one-thread pool over its time in an N-thread pool.
//!
//! ```
//! use paracrypt_bench::pubkey::Workload;
//!
//! let prepared = Workload::EcdsaVerifyBatch { n: 4 }.prepare()?;
//! prepared.run()?;
//! # Ok::<(), paracrypt_core::pubkey::Error>(())
//! ```

use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::ecdsa::{EcdsaPrivateKey, EcdsaPublicKey, EcdsaVerify};
use paracrypt_core::pubkey::rsa::{PrivateOp, RsaPrivateKey, RsaScheme};
use paracrypt_core::pubkey::{Digest, Error, Result, Verifier, batch, keygen, sha256};

/// RSA size of the key-generation benchmark.
pub const RSA_KEYGEN_BITS: usize = 3072;
/// Keys per key-generation measurement: generation time is widely spread, so medians need many.
pub const RSA_KEYGEN_SAMPLES: usize = 60;
/// RSA size of the private-operation benchmarks.
pub const RSA_OP_BITS: usize = 2048;
/// Operations per batch benchmark.
pub const BATCH_SIZE: usize = 64;
/// Operations per large batch benchmark (the other batch size issue #21's targets name).
pub const LARGE_BATCH_SIZE: usize = 1024;

/// One benchmark workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Generate one RSA key (parallel prime search).
    RsaKeygen {
        /// Modulus size.
        bits: usize,
    },
    /// One PKCS#1 v1.5 SHA-256 signature, the private operation on the given path.
    RsaSign {
        /// Modulus size.
        bits: usize,
        /// Split, serial or the `rsa` crate's own path.
        op: PrivateOp,
    },
    /// `n` PKCS#1 v1.5 signatures across the pool.
    RsaSignBatch {
        /// Modulus size.
        bits: usize,
        /// Signatures per run.
        n: usize,
    },
    /// One P-256 verification by the given path.
    EcdsaVerify {
        /// Lincomb (the provider's own one-pass verification: p256's, or aws-lc's) or split
        /// (p256's products on two threads; RustCrypto only).
        how: EcdsaVerify,
    },
    /// `n` P-256 verifications across the pool.
    EcdsaVerifyBatch {
        /// Verifications per run.
        n: usize,
    },
}

impl Workload {
    /// The workloads of the table in docs/guide/performance.md.
    pub fn standard() -> Vec<Workload> {
        vec![
            Workload::RsaKeygen {
                bits: RSA_KEYGEN_BITS,
            },
            Workload::RsaSign {
                bits: RSA_OP_BITS,
                op: PrivateOp::Crate,
            },
            Workload::RsaSign {
                bits: RSA_OP_BITS,
                op: PrivateOp::Split,
            },
            Workload::RsaSignBatch {
                bits: RSA_OP_BITS,
                n: BATCH_SIZE,
            },
            Workload::RsaSignBatch {
                bits: RSA_OP_BITS,
                n: LARGE_BATCH_SIZE,
            },
            Workload::EcdsaVerify {
                how: EcdsaVerify::Lincomb,
            },
            Workload::EcdsaVerify {
                how: EcdsaVerify::Split,
            },
            Workload::EcdsaVerifyBatch { n: BATCH_SIZE },
            Workload::EcdsaVerifyBatch {
                n: LARGE_BATCH_SIZE,
            },
        ]
    }

    /// A short stable name, e.g. `rsa2048-sign-split`.
    pub fn name(&self) -> String {
        match *self {
            Workload::RsaKeygen { bits } => format!("rsa{bits}-keygen"),
            Workload::RsaSign { bits, op } => {
                let op = match op {
                    PrivateOp::Split => "split",
                    PrivateOp::Serial => "serial",
                    PrivateOp::Crate => "crate",
                };
                format!("rsa{bits}-sign-{op}")
            }
            Workload::RsaSignBatch { bits, n } => format!("rsa{bits}-sign-batch{n}"),
            Workload::EcdsaVerify { how } => {
                let how = match how {
                    EcdsaVerify::Lincomb => "lincomb",
                    EcdsaVerify::Split => "split",
                };
                format!("p256-verify-{how}")
            }
            Workload::EcdsaVerifyBatch { n } => format!("p256-verify-batch{n}"),
        }
    }

    /// Whether the workload means something on `provider`: the split P-256 verification is
    /// p256's (RustCrypto) alone; every other workload runs on either provider.
    pub fn runs_on(&self, provider: Provider) -> bool {
        provider == Provider::RustCrypto
            || !matches!(
                self,
                Workload::EcdsaVerify {
                    how: EcdsaVerify::Split
                }
            )
    }

    /// Operations one [`Prepared::run`] performs (for per-operation times).
    pub fn operations(&self) -> usize {
        match *self {
            Workload::RsaSignBatch { n, .. } | Workload::EcdsaVerifyBatch { n } => n,
            _ => 1,
        }
    }

    /// Makes the keys, digests and signatures the workload needs (RSA keys are generated in
    /// the current pool), run by the default provider.
    ///
    /// # Errors
    ///
    /// Key generation or signing errors (not expected).
    pub fn prepare(&self) -> Result<Prepared> {
        self.prepare_with(Provider::default())
    }

    /// [`prepare`](Self::prepare) with every operation, key generation included, run by
    /// `provider`.
    ///
    /// # Errors
    ///
    /// Key generation or signing errors (not expected).
    pub fn prepare_with(&self, provider: Provider) -> Result<Prepared> {
        let digests = |n: usize| -> Vec<Digest> {
            (0..n)
                .map(|i| sha256(format!("paracrypt workload message {i}").as_bytes()))
                .collect()
        };
        let state = match *self {
            Workload::RsaKeygen { bits } => {
                if !keygen::RSA_SIZES.contains(&bits) {
                    return Err(Error::KeySize { bits });
                }
                State::None
            }
            Workload::RsaSign { bits, .. } | Workload::RsaSignBatch { bits, .. } => State::Rsa {
                key: Box::new(RsaPrivateKey::generate_with(bits, provider)?),
                digests: digests(self.operations()),
            },
            Workload::EcdsaVerify { .. } | Workload::EcdsaVerifyBatch { .. } => {
                let key = EcdsaPrivateKey::generate().with_provider(provider);
                let digests = digests(self.operations());
                let signatures = digests.iter().map(|d| key.sign_digest(d)).collect();
                State::Ecdsa {
                    key: key.public_key(),
                    digests,
                    signatures,
                }
            }
        };
        Ok(Prepared {
            workload: *self,
            provider,
            state,
        })
    }
}

/// A workload ready to run.
#[derive(Debug)]
pub struct Prepared {
    workload: Workload,
    provider: Provider,
    state: State,
}

#[derive(Debug)]
enum State {
    None,
    Rsa {
        key: Box<RsaPrivateKey>,
        digests: Vec<Digest>,
    },
    Ecdsa {
        key: EcdsaPublicKey,
        digests: Vec<Digest>,
        signatures: Vec<Vec<u8>>,
    },
}

impl Prepared {
    /// The workload.
    pub fn workload(&self) -> Workload {
        self.workload
    }

    /// The provider that runs it.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Runs the workload once, in the current Rayon pool.
    ///
    /// # Errors
    ///
    /// Key generation or signing errors, or [`Error::FaultDetected`] if a verification in the
    /// workload fails (which would mean a bug).
    pub fn run(&self) -> Result<()> {
        match (&self.workload, &self.state) {
            (Workload::RsaKeygen { bits }, _) => {
                keygen::generate_rsa_with(*bits, self.provider).map(drop)
            }
            (Workload::RsaSign { op, .. }, State::Rsa { key, digests }) => key
                .sign_digest_with(RsaScheme::Pkcs1v15, &digests[0], *op)
                .map(drop),
            (Workload::RsaSignBatch { .. }, State::Rsa { key, digests }) => {
                batch::sign_all(&key.signer(RsaScheme::Pkcs1v15), digests).map(drop)
            }
            (
                Workload::EcdsaVerify { how },
                State::Ecdsa {
                    key,
                    digests,
                    signatures,
                },
            ) => check(match how {
                // The provider's own one-pass verification: p256's lincomb, or aws-lc's.
                EcdsaVerify::Lincomb => Verifier::verify_digest(key, &digests[0], &signatures[0]),
                EcdsaVerify::Split => key.verify_digest_with(*how, &digests[0], &signatures[0]),
            }),
            (
                Workload::EcdsaVerifyBatch { .. },
                State::Ecdsa {
                    key,
                    digests,
                    signatures,
                },
            ) => {
                let items: Vec<(Digest, &[u8])> = digests
                    .iter()
                    .zip(signatures)
                    .map(|(d, s)| (*d, s.as_slice()))
                    .collect();
                check(batch::verify_all(key, &items).iter().all(|&ok| ok))
            }
            _ => unreachable!("prepare makes the state each workload needs"),
        }
    }
}

fn check(ok: bool) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::FaultDetected)
    }
}
