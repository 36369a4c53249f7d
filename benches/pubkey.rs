//! Public-key benchmarks: every workload of `paracrypt_bench::pubkey` in a one-thread pool
//! and in a two-thread pool (and one per core when there are more), so each speed-up is a
//! ratio of two medians from the same run.
//!
//! ```sh
//! cargo bench --bench pubkey                 # everything (about 3 minutes on 2 cores)
//! cargo bench --bench pubkey -- keygen       # one group
//! ```
//!
//! After the groups, it prints a table of medians and 2-thread speed-ups read back from
//! criterion's estimates.
//!
//! On a shared machine criterion's 1-thread and 2-thread runs happen minutes apart, under
//! whatever else runs then. `PARACRYPT_BENCH_PAIRED=1 cargo bench --bench pubkey` instead
//! alternates 1-thread and 2-thread runs of each workload, reads `/proc/stat` around each pair
//! and throws away pairs during which other processes used more than 2% of a core, and reports
//! the medians of the clean pairs and the median of their ratios (the table in docs/guide/performance.md). On a
//! machine someone else is using, run it at a high priority so clean pairs happen at all:
//! `cargo bench --bench pubkey --no-run` then `PARACRYPT_BENCH_PAIRED=1 nice -n -15 target/release/deps/pubkey-*`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use paracrypt::pubkey::ecdsa::EcdsaVerify;
use paracrypt::pubkey::rsa::PrivateOp;
use paracrypt_bench::pubkey::{
    BATCH_SIZE, RSA_KEYGEN_BITS, RSA_KEYGEN_SAMPLES, RSA_OP_BITS, Workload,
};

/// Thread counts to compare: 1, 2, and every core when there are more.
fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts = vec![1, 2];
    if cores > 2 {
        counts.push(cores);
    }
    counts
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
}

/// One group: `workloads` (label, workload) in a pool of each thread count.
fn group(
    c: &mut Criterion,
    name: &str,
    workloads: &[(&str, Workload)],
    threads: &[usize],
    configure: impl Fn(&mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>),
) {
    let mut group = c.benchmark_group(name);
    configure(&mut group);
    for &(label, workload) in workloads {
        let prepared = pool(2).install(|| workload.prepare()).expect("prepare");
        group.throughput(Throughput::Elements(workload.operations() as u64));
        for &t in threads {
            let pool = pool(t);
            group.bench_function(BenchmarkId::new(label, format!("{t}t")), |b| {
                b.iter(|| pool.install(|| prepared.run()).expect("workload"));
            });
        }
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    let threads = thread_counts();
    let keygen_name = Workload::RsaKeygen {
        bits: RSA_KEYGEN_BITS,
    }
    .name();
    group(
        c,
        &keygen_name,
        &[(
            "keygen",
            Workload::RsaKeygen {
                bits: RSA_KEYGEN_BITS,
            },
        )],
        &threads,
        |g| {
            // One key per sample: the median is the median over RSA_KEYGEN_SAMPLES keys.
            g.sample_size(RSA_KEYGEN_SAMPLES)
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(5));
        },
    );
    let sign = |op| Workload::RsaSign {
        bits: RSA_OP_BITS,
        op,
    };
    group(
        c,
        &format!("rsa{RSA_OP_BITS}-sign"),
        &[
            ("crate", sign(PrivateOp::Crate)),
            ("serial", sign(PrivateOp::Serial)),
            ("split", sign(PrivateOp::Split)),
        ],
        &threads,
        |g| {
            g.sample_size(100).measurement_time(Duration::from_secs(4));
        },
    );
    group(
        c,
        &format!("rsa{RSA_OP_BITS}-sign-batch{BATCH_SIZE}"),
        &[(
            "batch",
            Workload::RsaSignBatch {
                bits: RSA_OP_BITS,
                n: BATCH_SIZE,
            },
        )],
        &threads,
        |g| {
            g.sample_size(20).measurement_time(Duration::from_secs(6));
        },
    );
    let verify = |how| Workload::EcdsaVerify { how };
    group(
        c,
        "p256-verify",
        &[
            ("lincomb", verify(EcdsaVerify::Lincomb)),
            ("split", verify(EcdsaVerify::Split)),
        ],
        &threads,
        |g| {
            g.sample_size(100).measurement_time(Duration::from_secs(4));
        },
    );
    group(
        c,
        &format!("p256-verify-batch{BATCH_SIZE}"),
        &[("batch", Workload::EcdsaVerifyBatch { n: BATCH_SIZE })],
        &threads,
        |g| {
            g.sample_size(30).measurement_time(Duration::from_secs(5));
        },
    );
}

/// Criterion's median estimate (ns) for `group/function/threads`, if it was run.
fn median_ns(root: &Path, group: &str, function: &str, threads: usize) -> Option<f64> {
    let path = root
        .join(group)
        .join(function)
        .join(format!("{threads}t"))
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["median"]["point_estimate"].as_f64()
}

/// Prints medians per operation and the speed-up of 2 threads over 1 (and over the `rsa`
/// crate's own path for signing).
fn summary() {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let root =
        std::env::var_os("CRITERION_HOME").map_or_else(|| target.join("criterion"), PathBuf::from);
    let rows = [
        (
            format!("rsa{RSA_KEYGEN_BITS}-keygen"),
            "keygen",
            1usize,
            None,
        ),
        (format!("rsa{RSA_OP_BITS}-sign"), "split", 1, Some("crate")),
        (format!("rsa{RSA_OP_BITS}-sign"), "serial", 1, None),
        (
            format!("rsa{RSA_OP_BITS}-sign-batch{BATCH_SIZE}"),
            "batch",
            BATCH_SIZE,
            None,
        ),
        ("p256-verify".to_owned(), "split", 1, Some("lincomb")),
        ("p256-verify".to_owned(), "lincomb", 1, None),
        (
            format!("p256-verify-batch{BATCH_SIZE}"),
            "batch",
            BATCH_SIZE,
            None,
        ),
    ];
    println!("\nFrom criterion's saved estimates (a group not run this time shows its last run):");
    println!(
        "{:<44} {:>12} {:>12} {:>8} {:>16}",
        "median per operation", "1 thread", "2 threads", "2t/1t", "2t vs baseline"
    );
    for (group, function, ops, baseline) in rows {
        let (Some(one), Some(two)) = (
            median_ns(&root, &group, function, 1),
            median_ns(&root, &group, function, 2),
        ) else {
            continue;
        };
        let per_op = |ns: f64| format!("{:.1} µs", ns / 1e3 / ops as f64);
        let vs = baseline
            .and_then(|b| {
                median_ns(&root, &group, b, 1).map(|base| format!("{:.2}× {b}", base / two))
            })
            .unwrap_or_default();
        println!(
            "{:<44} {:>12} {:>12} {:>7.2}× {:>16}",
            format!("{group}/{function}"),
            per_op(one),
            per_op(two),
            one / two,
            vs
        );
    }
}

/// CPU time (seconds) used by everything on the machine, and by this process, so far.
fn cpu_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
    let busy: f64 = fields.iter().take(8).sum::<f64>() - fields.get(3)? - fields.get(4)?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &own[own.rfind(')')? + 2..];
    let own: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line: 11 and 12 counting from the state (3).
    let utime: f64 = own.get(11)?.parse().ok()?;
    let stime: f64 = own.get(12)?.parse().ok()?;
    let ticks = 100.0; // USER_HZ
    Some((busy / ticks, (utime + stime) / ticks))
}

/// Runs `f` and returns its wall time and the CPU time other processes used meanwhile.
fn timed(f: impl FnOnce()) -> (f64, f64) {
    let before = cpu_seconds();
    let start = std::time::Instant::now();
    f();
    let wall = start.elapsed().as_secs_f64();
    let others = match (before, cpu_seconds()) {
        (Some((b0, o0)), Some((b1, o1))) => ((b1 - b0) - (o1 - o0)).max(0.0),
        _ => 0.0,
    };
    (wall, others)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The 5th and 95th percentiles of median(a)/median(b) over 2000 bootstrap resamples: key
/// generation times are spread so widely that the ratio of two medians needs an error bar.
fn bootstrap_ratio_of_medians(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut ratios: Vec<f64> = (0..2000)
        .map(|_| {
            let mut ra: Vec<f64> = (0..a.len()).map(|_| a[next(a.len())]).collect();
            let mut rb: Vec<f64> = (0..b.len()).map(|_| b[next(b.len())]).collect();
            median(&mut ra) / median(&mut rb)
        })
        .collect();
    ratios.sort_by(|x, y| x.total_cmp(y));
    (ratios[100], ratios[1900])
}

/// Pairs during which other processes used more than this fraction of one core are discarded.
const MAX_OTHERS: f64 = 0.02;

/// The paired, load-aware measurement (see the module docs).
fn paired() {
    let (one, two) = (pool(1), pool(2));
    println!(
        "{:<28} {:>6} {:>13} {:>13} {:>8} {:>8} {:>9} {:>9} {:>9}",
        "median per operation",
        "pairs",
        "1 thread",
        "2 threads",
        "1t/2t",
        "means",
        "pair med",
        "pair IQR",
        "discarded"
    );
    let only = std::env::var("PARACRYPT_BENCH_ONLY").unwrap_or_default();
    let keys: usize = std::env::var("PARACRYPT_BENCH_KEYS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(2 * RSA_KEYGEN_SAMPLES);
    for workload in Workload::standard() {
        if !workload.name().contains(&only) {
            continue;
        }
        let prepared = two.install(|| workload.prepare()).expect("prepare");
        // Repeat short operations so each timed block lasts about 200 ms (clean-pair detection
        // has /proc/stat's 10 ms resolution); key generation is one key per block.
        let single = timed(|| one.install(|| prepared.run()).expect("run")).0;
        let reps = if matches!(workload, Workload::RsaKeygen { .. }) {
            1
        } else {
            ((0.2 / single).ceil() as usize).max(1)
        };
        let pairs = if matches!(workload, Workload::RsaKeygen { .. }) {
            keys
        } else {
            40
        };
        let block = |pool: &rayon::ThreadPool| {
            timed(|| {
                for _ in 0..reps {
                    pool.install(|| prepared.run()).expect("run");
                }
            })
        };
        let (mut t1, mut t2, mut ratios, mut discarded) = (vec![], vec![], vec![], 0);
        while ratios.len() < pairs && discarded < 200 * pairs {
            if (ratios.len() + discarded) % 25 == 24 {
                eprintln!(
                    "{}: {} clean pairs, {discarded} discarded",
                    workload.name(),
                    ratios.len()
                );
            }
            // Alternate which goes first so drift cancels.
            let ((a, oa), (b, ob)) = if ratios.len() % 2 == 0 {
                let a = block(&one);
                (a, block(&two))
            } else {
                let b = block(&two);
                (block(&one), b)
            };
            if (oa + ob) / (a + b) > MAX_OTHERS {
                discarded += 1;
                continue;
            }
            let ops = (reps * workload.operations()) as f64;
            t1.push(a / ops);
            t2.push(b / ops);
            ratios.push(a / b);
        }
        let mut sorted = ratios.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let q = |f: f64| {
            sorted
                .get(((sorted.len() as f64 - 1.0) * f) as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        let iqr = format!("{:.2}-{:.2}", q(0.25), q(0.75));
        let us = |s: f64| {
            if s > 0.01 {
                format!("{:.1} ms", s * 1e3)
            } else {
                format!("{:.1} µs", s * 1e6)
            }
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        if matches!(workload, Workload::RsaKeygen { .. }) {
            let (lo, hi) = bootstrap_ratio_of_medians(&t1, &t2);
            eprintln!(
                "{}: 90% bootstrap interval of the ratio of medians: {lo:.2}-{hi:.2}",
                workload.name()
            );
        }
        let mean_ratio = mean(&t1) / mean(&t2);
        let (m1, m2) = (median(&mut t1), median(&mut t2));
        println!(
            "{:<28} {:>6} {:>13} {:>13} {:>7.2}× {:>7.2}× {:>8.2}× {:>9} {:>9}",
            workload.name(),
            ratios.len(),
            us(m1),
            us(m2),
            m1 / m2,
            mean_ratio,
            median(&mut ratios),
            iqr,
            discarded
        );
    }
}

fn main() {
    if std::env::var_os("PARACRYPT_BENCH_PAIRED").is_some() {
        paired();
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
    summary();
}
