//! Running workloads and timing them: medians of repeated runs in pools of each thread count.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;

use crate::pubkey::{self as pk, Workload};
use crate::report::{Measurement, Medium};
use crate::symmetric::Symmetric;
use crate::{Error, Result};

/// What one benchmark entry measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// A raw cipher or container suite, per size and mode.
    Symmetric(Symmetric),
    /// A public-key operation.
    PublicKey(Workload),
}

impl Algorithm {
    /// The name used on the command line, in tables and in JSON.
    pub fn name(&self) -> String {
        match self {
            Algorithm::Symmetric(w) => w.name(),
            Algorithm::PublicKey(w) => w.name(),
        }
    }
}

/// A pool of `threads` threads (at least 1).
fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    Ok(rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("paracrypt-{i}"))
        .build()?)
}

/// Wraps a preparation failure with the workload's and provider's names.
fn preparing(name: String, provider: Provider) -> impl FnOnce(Error) -> Error {
    move |e| Error::Prepare {
        workload: name,
        provider: provider.to_string(),
        source: Box::new(e),
    }
}

/// Times `run(i)` for every thread count `i` of `pools`, `samples` rounds, interleaved: each
/// round runs every thread count once, so a change in the machine's state (other load, a
/// hypervisor's page handling) hits every thread count alike and the speed-up stays fair.
/// Every pool gets one untimed warm-up run first. Returns the times per pool.
fn time_interleaved(
    pools: &[rayon::ThreadPool],
    samples: usize,
    mut run: impl FnMut(&rayon::ThreadPool) -> Result<()>,
) -> Result<Vec<Vec<f64>>> {
    for pool in pools {
        run(pool)?;
    }
    let mut times = vec![Vec::with_capacity(samples); pools.len()];
    for _ in 0..samples {
        for (pool, times) in pools.iter().zip(&mut times) {
            let start = Instant::now();
            run(pool)?;
            times.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(times)
}

/// How symmetric measurements are taken.
#[derive(Clone, Debug)]
pub struct Settings<'a> {
    /// Thread counts.
    pub threads: &'a [usize],
    /// Timed runs per measurement.
    pub repeat: usize,
    /// Chunk size.
    pub chunk_size: ChunkSize,
    /// Directory for file-to-file runs.
    pub dir: &'a Path,
}

/// Measures a symmetric workload at one size, in one mode, at every thread count.
pub fn symmetric(
    workload: Symmetric,
    provider: Provider,
    size: u64,
    mode: Medium,
    settings: &Settings<'_>,
    mut tick: impl FnMut(),
) -> Result<Vec<Measurement>> {
    let Settings {
        threads,
        repeat,
        chunk_size,
        dir,
    } = *settings;
    let mut prepared = workload
        .prepare_with(size as usize, chunk_size, provider)
        .map_err(preparing(workload.name(), provider))?;
    let input_path = dir.join("input");
    if mode == Medium::File {
        std::fs::File::create(&input_path)
            .and_then(|mut file| {
                file.write_all(prepared.input())?;
                file.sync_all()
            })
            .map_err(|e| Error::io("writing", &input_path, e))?;
    }
    let pools = threads
        .iter()
        .map(|&n| pool(n))
        .collect::<Result<Vec<_>>>()?;
    let times = match mode {
        Medium::Memory => time_interleaved(&pools, repeat, |pool| {
            pool.install(|| prepared.run_in_memory())
        })?,
        Medium::File => {
            let input = std::fs::File::open(&input_path)
                .map_err(|e| Error::io("reading", &input_path, e))?;
            time_interleaved(&pools, repeat, |pool| {
                // A new output file every run, as the CLI writes one.
                let output = tempfile::tempfile_in(dir)
                    .map_err(|e| Error::io("creating a file in", dir, e))?;
                pool.install(|| prepared.run_file(&input, &output))?;
                Ok(())
            })?
        }
    };
    let mut out = Vec::new();
    for (&n, samples) in threads.iter().zip(times) {
        let mut m = Measurement::new(workload.name(), Some(mode), Some(size), n, 1, samples);
        m.provider = Some(provider.to_string());
        out.push(m);
        tick();
    }
    let _ = std::fs::remove_file(&input_path);
    Ok(out)
}

/// Measures a public-key workload at every thread count. Key generation takes
/// `keygen_samples` keys (its time is widely spread); the others `max(repeat, 10)` runs.
pub fn public_key(
    workload: Workload,
    provider: Provider,
    threads: &[usize],
    repeat: usize,
    keygen_samples: usize,
    mut tick: impl FnMut(),
) -> Result<Vec<Measurement>> {
    let prepared = workload
        .prepare_with(provider)
        .map_err(|e| preparing(workload.name(), provider)(e.into()))?;
    let samples = match workload {
        Workload::RsaKeygen { .. } => keygen_samples,
        _ => repeat.max(10),
    };
    let pools = threads
        .iter()
        .map(|&n| pool(n))
        .collect::<Result<Vec<_>>>()?;
    let times = time_interleaved(&pools, samples, |pool| {
        pool.install(|| prepared.run()).map_err(Error::from)
    })?;
    let mut out = Vec::new();
    for (&n, times) in threads.iter().zip(times) {
        let mut m = Measurement::new(workload.name(), None, None, n, workload.operations(), times);
        m.provider = Some(provider.to_string());
        out.push(m);
        tick();
    }
    Ok(out)
}

/// Fills in each measurement's speed-up and efficiency against the fewest-threads measurement
/// of the same algorithm, mode and size.
pub fn add_speedups(measurements: &mut [Measurement]) {
    let baselines: Vec<Measurement> = measurements.to_vec();
    for m in measurements.iter_mut() {
        let base = baselines
            .iter()
            .filter(|b| {
                b.algorithm == m.algorithm
                    && b.provider == m.provider
                    && b.mode == m.mode
                    && b.size == m.size
            })
            .min_by_key(|b| b.threads)
            .map(|b| (b.threads, b.stats.median_s));
        if let Some((base_threads, base_median)) = base {
            let speedup = base_median / m.stats.median_s;
            m.speedup = Some(speedup);
            m.efficiency = Some(speedup * base_threads as f64 / m.threads as f64);
        }
    }
}

/// The default and named groups of algorithms.
pub fn resolve(list: &str) -> Result<Vec<Algorithm>> {
    let sym = |names: &[&str]| -> Vec<Algorithm> {
        names
            .iter()
            .map(|n| Algorithm::Symmetric(Symmetric::from_name(n).expect("known workload")))
            .collect()
    };
    let mut out: Vec<Algorithm> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let add: Vec<Algorithm> = match item {
            "all" => Symmetric::all()
                .into_iter()
                .map(Algorithm::Symmetric)
                .chain(public_keys())
                .collect(),
            "symmetric" => Symmetric::all()
                .into_iter()
                .map(Algorithm::Symmetric)
                .collect(),
            "raw" | "container" | "age" => Symmetric::all()
                .into_iter()
                .filter(|w| w.name().starts_with(&format!("{item}/")))
                .map(Algorithm::Symmetric)
                .collect(),
            "pubkey" => public_keys().collect(),
            // The papers' algorithms at sizes that keep the default run under two minutes on
            // two cores: AES-CTR (the MPI paper), Blowfish (the supercomputer paper), segmented
            // RC4 (PARC4), the authenticated default, and the JCE paper's public-key splits.
            "default" => {
                let mut d = sym(&[
                    "raw/aes-256-ctr/encrypt",
                    "raw/bf-ecb/encrypt",
                    "raw/aes-256-cbc/decrypt",
                    "container/aes-256-gcm/encrypt",
                    "container/rc4-hmac-sha256/encrypt",
                ]);
                d.extend(
                    [
                        Workload::RsaKeygen { bits: 2048 },
                        Workload::RsaSign {
                            bits: pk::RSA_OP_BITS,
                            op: paracrypt_core::pubkey::rsa::PrivateOp::Split,
                        },
                        Workload::RsaSignBatch {
                            bits: pk::RSA_OP_BITS,
                            n: pk::BATCH_SIZE,
                        },
                        Workload::EcdsaVerify {
                            how: paracrypt_core::pubkey::ecdsa::EcdsaVerify::Split,
                        },
                        Workload::EcdsaVerifyBatch { n: pk::BATCH_SIZE },
                    ]
                    .into_iter()
                    .map(Algorithm::PublicKey),
                );
                d
            }
            name => {
                if let Some(w) = Symmetric::from_name(name)
                    .or_else(|| Symmetric::from_name(&format!("raw/{name}")))
                    .or_else(|| Symmetric::from_name(&format!("container/{name}")))
                    .or_else(|| Symmetric::from_name(&format!("age/{name}")))
                {
                    vec![Algorithm::Symmetric(w)]
                } else if let Some(w) = public_keys().find(|a| a.name() == name) {
                    vec![w]
                } else {
                    let names: Vec<String> = Symmetric::all()
                        .iter()
                        .map(Symmetric::name)
                        .chain(public_keys().map(|a| a.name()))
                        .collect();
                    return Err(Error::UnknownAlgorithm(format!(
                        "unknown algorithm `{name}` (valid: default, all, symmetric, raw, container, age, pubkey, {})",
                        names.join(", ")
                    )));
                }
            }
        };
        for a in add {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    if out.is_empty() {
        return Err(Error::UnknownAlgorithm("--algorithms is empty".into()));
    }
    Ok(out)
}

/// Every public-key workload: the standard set plus 2048-bit key generation.
fn public_keys() -> impl Iterator<Item = Algorithm> {
    let mut all = Workload::standard();
    all.insert(0, Workload::RsaKeygen { bits: 2048 });
    all.into_iter().map(Algorithm::PublicKey)
}
