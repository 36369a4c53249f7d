//! `paracrypt bench`: the papers' experiments on the user's machine — time, throughput,
//! speed-up and efficiency against threads and input size — as a table, JSON and an SVG plot.
//!
//! The workloads, the measuring, the report, the plot and the openssl comparison are
//! `paracrypt-bench`'s, the same ones the criterion benches run; this module is the command
//! line around them (flags, progress bar, output files).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_bench::measure::{self, Algorithm};
use paracrypt_bench::openssl;
use paracrypt_bench::plot;
use paracrypt_bench::pubkey::RSA_KEYGEN_SAMPLES;
use paracrypt_bench::report::{self, Machine, Medium, Report, SCHEMA};
use paracrypt_core::provider::Provider;

use crate::exit::{usage, warn};
use crate::flags::{ChunkSizeFlag, ProgressFlags};
use crate::progress;
use crate::size::parse_size;

/// `bench -h`'s examples (and the end of `bench --help`).
macro_rules! bench_examples {
    () => {
        "\
Examples:
  paracrypt bench                                 # every core count, 3 sizes
  paracrypt bench --threads 1,8 --sizes 1GiB --json bench.json"
    };
}

/// Arguments of `paracrypt bench`.
#[derive(Debug, Args)]
#[command(after_help = bench_examples!(), after_long_help = concat!("\
Algorithms: `default` (the papers' algorithms: raw aes-256-ctr, bf-ecb, aes-256-cbc decrypt, \
container aes-256-gcm and segmented RC4, RSA-2048 keygen/sign, P-256 verify), `all`, `symmetric`, \
`raw`, `container`, `age`, `pubkey`, or names such as raw/des-ede3, container/aes-256-gcm/decrypt, \
container/x25519/aes-256-gcm (to an X25519 recipient), age/x25519, age/mlkem768x25519/decrypt, \
aes-256-ctr, rsa3072-keygen, rsa2048-sign-split, p256-verify-batch64. \
Speed-up is the fewest-threads time over the N-thread time; efficiency is speed-up per thread. \
With --compare-openssl, `vs openssl` is openssl's time over paracrypt's for the same work (above \
1×, paracrypt is faster): `openssl enc` file to file, `openssl speed -multi N` in memory and for \
signatures, `openssl genpkey` for keys. \
Timings are medians; other load on the machine shows up in them, so compare ratios of one run.

", bench_examples!()))]
pub struct BenchArgs {
    /// Comma-separated algorithms or groups.
    #[arg(long, value_name = "LIST", default_value = "default")]
    algorithms: String,
    /// Thread counts (default: 1, 2, 4, … up to the number of cores, and that number).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Input sizes of the symmetric work.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size, default_value = "4MiB,40MiB,160MiB")]
    sizes: Vec<u64>,
    /// Timed runs per measurement (the median is reported; public-key operations take at
    /// least 10).
    #[arg(long, value_name = "N", default_value_t = 3)]
    repeat: usize,
    /// Keys per RSA key-generation measurement.
    #[arg(long, value_name = "N", default_value_t = RSA_KEYGEN_SAMPLES)]
    keygen_samples: usize,
    /// Where symmetric work runs: memory, file (file to file), or both.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "memory,file"
    )]
    modes: Vec<Medium>,
    #[command(flatten)]
    chunk_size: ChunkSizeFlag,
    /// Run the same work through the `openssl` binary and show paracrypt's speed relative to it.
    #[arg(long)]
    compare_openssl: bool,
    /// Write machine-readable results here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw speed-up against threads here (SVG).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Directory for the file-to-file runs (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    progress: ProgressFlags,
}

fn default_threads() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
        .take_while(|&t| t < cores)
        .collect();
    threads.push(cores);
    threads
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The providers a public-key workload runs on among `asked`: p256's split verification exists
/// on RustCrypto only, and runs there when asked for under aws-lc alone (labelled so).
fn providers_for(runs_on: impl Fn(Provider) -> bool, asked: &[Provider]) -> Vec<Provider> {
    let on: Vec<Provider> = asked.iter().copied().filter(|&p| runs_on(p)).collect();
    if on.is_empty() {
        vec![Provider::RustCrypto]
    } else {
        on
    }
}

/// Runs `paracrypt bench`.
///
/// Every workload runs once per provider in `providers` (raw ciphers, container suites and
/// public-key work alike), but for the one public-key workload that exists on RustCrypto only.
pub fn run(args: BenchArgs, providers: &[Provider]) -> Result<ExitCode> {
    let algorithms = match measure::resolve(&args.algorithms) {
        Ok(algorithms) => algorithms,
        Err(e) => return usage(e.to_string()),
    };
    let mut threads = args.threads.clone().unwrap_or_else(default_threads);
    threads.sort_unstable();
    threads.dedup();
    for &n in &threads {
        crate::io::check_threads("--threads", n)?;
    }
    if args.repeat == 0 || args.keygen_samples == 0 {
        return usage("--repeat and --keygen-samples must be at least 1");
    }
    let chunk_size = args.chunk_size.get();
    let mut modes = args.modes.clone();
    modes.dedup();
    let openssl_version = if args.compare_openssl {
        let version = openssl::version();
        if version.is_none() && !args.progress.quiet {
            warn("--compare-openssl: openssl is not installed; showing paracrypt alone");
        }
        version
    } else {
        None
    };
    // Its files hold test data as large as the largest size: never leave them behind.
    let dir = crate::interrupt::making(|| {
        let dir = match &args.dir {
            Some(dir) => tempfile::tempdir_in(dir),
            None => tempfile::tempdir(),
        }?;
        crate::interrupt::pending().add_dir(dir.path());
        Ok::<_, std::io::Error>(dir)
    })
    .context("cannot create a directory for the file-to-file runs")?;

    let steps: u64 = algorithms
        .iter()
        .map(|a| match a {
            Algorithm::Symmetric(_) => {
                (args.sizes.len() * modes.len() * threads.len() * providers.len()) as u64
            }
            Algorithm::PublicKey(w) => {
                (threads.len() * providers_for(|p| w.runs_on(p), providers).len()) as u64
            }
        })
        .sum();
    let bar = progress::Progress::new(
        args.progress.show(),
        Some(steps),
        "benchmarking",
        progress::Unit::Runs,
        false,
    );

    let settings = measure::Settings {
        threads: &threads,
        repeat: args.repeat,
        chunk_size,
        dir: dir.path(),
    };
    let mut measurements = Vec::new();
    let mut peer = openssl::Peer::default();
    for algorithm in &algorithms {
        bar.set_message(algorithm.name());
        match algorithm {
            Algorithm::Symmetric(workload) => {
                let mut runs = Vec::new();
                for &size in &args.sizes {
                    for &mode in &modes {
                        runs.extend(providers.iter().map(|&provider| (size, mode, provider)));
                    }
                }
                for (size, mode, provider) in runs {
                    let mut got =
                        measure::symmetric(*workload, provider, size, mode, &settings, || {
                            bar.inc(1)
                        })?;
                    if openssl_version.is_some() {
                        let input = dir.path().join("openssl-input");
                        if mode == Medium::File {
                            let prepared = workload.prepare(size as usize, chunk_size)?;
                            std::fs::write(&input, prepared.input())?;
                        }
                        for m in &mut got {
                            peer.compare_symmetric(*workload, m, &input, dir.path());
                        }
                        let _ = std::fs::remove_file(&input);
                    }
                    measurements.extend(got);
                }
            }
            Algorithm::PublicKey(workload) => {
                for provider in providers_for(|p| workload.runs_on(p), providers) {
                    let mut got = measure::public_key(
                        *workload,
                        provider,
                        &threads,
                        args.repeat,
                        args.keygen_samples,
                        || bar.inc(1),
                    )?;
                    if openssl_version.is_some() {
                        for m in &mut got {
                            peer.compare_public_key(*workload, m);
                        }
                    }
                    measurements.extend(got);
                }
            }
        }
    }
    bar.finish();
    measure::add_speedups(&mut measurements);
    let report = Report {
        schema: SCHEMA,
        paracrypt: env!("CARGO_PKG_VERSION").to_string(),
        machine: Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model: cpu_model(),
            openssl: openssl_version,
            avx512_ifma: paracrypt_core::pubkey::rsa::has_avx512_ifma(),
            primitives: providers
                .iter()
                .map(|p| report::Primitives {
                    provider: p.to_string(),
                    by: p
                        .primitives()
                        .into_iter()
                        .map(|(primitive, by)| (primitive.to_string(), by.to_string()))
                        .collect(),
                })
                .collect(),
        },
        chunk_size: chunk_size.get(),
        measurements,
    };
    let mut stdout = std::io::stdout().lock();
    write!(stdout, "{}", report::table(&report))
        .and_then(|()| stdout.flush())
        .context("writing to stdout")?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report).context("encoding JSON")?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        plot::speedup_svg(&report, path)?;
    }
    crate::interrupt::pending().forget_dir(dir.path());
    Ok(ExitCode::SUCCESS)
}
