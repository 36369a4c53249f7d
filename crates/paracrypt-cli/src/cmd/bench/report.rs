//! Results: the JSON schema (serde), and the text table in the layout of the papers' tables
//! (size × workers, with time, throughput, speed-up and efficiency).

use serde::{Deserialize, Serialize};

/// Where symmetric work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Medium {
    /// A buffer in memory.
    Memory,
    /// A file to a new file (positional I/O, page cache).
    File,
}

/// Summary statistics of a sample of times, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of timed runs.
    pub samples: usize,
    /// Median.
    pub median_s: f64,
    /// Fastest run.
    pub min_s: f64,
    /// Slowest run.
    pub max_s: f64,
    /// 10th percentile (the spread of key generation).
    pub p10_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
}

impl Stats {
    /// Statistics of `times` (not empty).
    pub fn of(mut times: Vec<f64>) -> Self {
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        let n = times.len();
        let median_s = if n % 2 == 1 {
            times[n / 2]
        } else {
            (times[n / 2 - 1] + times[n / 2]) / 2.0
        };
        Stats {
            samples: n,
            median_s,
            min_s: times[0],
            max_s: times[n - 1],
            p10_s: at(0.1),
            p90_s: at(0.9),
        }
    }
}

/// One algorithm at one size, mode and thread count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Workload name (`raw/aes-256-ctr/encrypt`, `rsa2048-sign-split`, …).
    pub algorithm: String,
    /// The provider that ran it (`aws-lc`, `rustcrypto`); absent in reports from before
    /// providers existed.
    #[serde(default)]
    pub provider: Option<String>,
    /// Memory or file to file (symmetric only).
    pub mode: Option<Medium>,
    /// Input bytes (symmetric only).
    pub size: Option<u64>,
    /// Threads in the pool.
    pub threads: usize,
    /// Operations per timed run (public key: batch size).
    pub operations: usize,
    /// Timing.
    pub stats: Stats,
    /// Throughput in MB/s (10⁶ bytes; symmetric only).
    pub mb_per_s: Option<f64>,
    /// Median time of the fewest-threads run over this one.
    pub speedup: Option<f64>,
    /// Speed-up per thread (1.0 is ideal).
    pub efficiency: Option<f64>,
    /// The same work through `openssl`, when compared: its median seconds per run.
    pub openssl_s: Option<f64>,
    /// The openssl command that did it.
    pub openssl_command: Option<String>,
}

impl Measurement {
    /// A measurement from raw times.
    pub fn new(
        algorithm: String,
        mode: Option<Medium>,
        size: Option<u64>,
        threads: usize,
        operations: usize,
        times: Vec<f64>,
    ) -> Self {
        let stats = Stats::of(times);
        let mb_per_s = size.map(|s| s as f64 / stats.median_s / 1e6);
        Measurement {
            algorithm,
            provider: None,
            mode,
            size,
            threads,
            operations,
            stats,
            mb_per_s,
            speedup: None,
            efficiency: None,
            openssl_s: None,
            openssl_command: None,
        }
    }

    /// paracrypt's speed over openssl's (above 1: paracrypt is faster).
    pub fn openssl_ratio(&self) -> Option<f64> {
        self.openssl_s.map(|o| o / self.stats.median_s)
    }
}

/// Where a run happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Logical CPUs.
    pub cpus: usize,
    /// CPU model, from /proc/cpuinfo.
    pub cpu_model: String,
    /// `openssl version`, when compared.
    pub openssl: Option<String>,
    /// Whether the CPU has AVX-512 IFMA (aws-lc then fuses both RSA CRT halves in one call).
    #[serde(default)]
    pub avx512_ifma: bool,
    /// For each provider measured, which backend computes each primitive (the default,
    /// `fastest`, picks them per CPU).
    #[serde(default)]
    pub primitives: Vec<Primitives>,
}

/// Which backend computes each primitive under one provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Primitives {
    /// The provider's name.
    pub provider: String,
    /// (primitive, backend), in the provider table's order.
    pub by: Vec<(String, String)>,
}

/// A whole `paracrypt bench` run: what `--json` writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Schema version of this JSON.
    pub schema: u32,
    /// paracrypt's version.
    pub paracrypt: String,
    /// The machine.
    pub machine: Machine,
    /// Chunk size of the symmetric work.
    pub chunk_size: usize,
    /// Every measurement.
    pub measurements: Vec<Measurement>,
}

/// The current JSON schema version.
pub const SCHEMA: u32 = 1;

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn human_time(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// The report as text: one block per algorithm (and mode), rows by size, columns by threads.
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    let mut threads: Vec<usize> = report.measurements.iter().map(|m| m.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut keys: Vec<(String, Option<String>, Option<Medium>)> = Vec::new();
    for m in &report.measurements {
        let key = (m.algorithm.clone(), m.provider.clone(), m.mode);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let compared = report.measurements.iter().any(|m| m.openssl_s.is_some());
    for table in &report.machine.primitives {
        let by: Vec<String> = table
            .by
            .iter()
            .map(|(primitive, backend)| format!("{primitive} ({backend})"))
            .collect();
        out.push_str(&format!(
            "[{}] computes: {}\n",
            table.provider,
            by.join(", ")
        ));
    }
    for (algorithm, provider, mode) in keys {
        let rows: Vec<&Measurement> = report
            .measurements
            .iter()
            .filter(|m| m.algorithm == algorithm && m.provider == provider && m.mode == mode)
            .collect();
        let provider_text = provider.map(|p| format!(" [{p}]")).unwrap_or_default();
        let mode_text = match mode {
            Some(Medium::Memory) => " (in memory)",
            Some(Medium::File) => " (file to file)",
            None => "",
        };
        let ops = rows[0].operations;
        let per_op = if ops > 1 {
            format!(", {ops} operations per run")
        } else {
            String::new()
        };
        out.push_str(&format!("{algorithm}{provider_text}{mode_text}{per_op}\n"));
        let mut header = format!("  {:<9}", if mode.is_some() { "size" } else { "" });
        for t in &threads {
            let label = if *t == 1 {
                "1 thread".to_string()
            } else {
                format!("{t} threads")
            };
            header.push_str(&format!(" | {label:<30}"));
        }
        if compared {
            header.push_str(" | vs openssl");
        }
        out.push_str(header.trim_end());
        out.push('\n');
        let mut sizes: Vec<Option<u64>> = rows.iter().map(|m| m.size).collect();
        sizes.dedup();
        for size in sizes {
            let mut line = format!("  {:<9}", size.map(human_size).unwrap_or_default());
            let mut openssl = Vec::new();
            for t in &threads {
                let cell = match rows.iter().find(|m| m.size == size && m.threads == *t) {
                    Some(m) => {
                        let speed = match m.mb_per_s {
                            Some(mbs) => format!("{mbs:.0} MB/s"),
                            None => {
                                format!("{}/op", human_time(m.stats.median_s / m.operations as f64))
                            }
                        };
                        let ratio = match (m.speedup, m.efficiency) {
                            (Some(s), Some(e)) if m.threads > 1 => {
                                format!(" {s:.2}× {:.0}%", e * 100.0)
                            }
                            _ => String::new(),
                        };
                        if let Some(r) = m.openssl_ratio() {
                            openssl.push(format!("{r:.2}× at {}t", m.threads));
                        }
                        format!("{} {speed}{ratio}", human_time(m.stats.median_s))
                    }
                    None => "-".to_string(),
                };
                line.push_str(&format!(" | {cell:<30}"));
            }
            if compared {
                line.push_str(&format!(
                    " | {}",
                    if openssl.is_empty() {
                        "-".into()
                    } else {
                        openssl.join(", ")
                    }
                ));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if mode.is_none() && rows[0].algorithm.contains("keygen") {
            let spread: Vec<String> = rows
                .iter()
                .map(|m| {
                    format!(
                        "{}t p10–p90 {}–{}",
                        m.threads,
                        human_time(m.stats.p10_s),
                        human_time(m.stats.p90_s)
                    )
                })
                .collect();
            out.push_str(&format!(
                "  spread over {} keys: {}\n",
                rows[0].stats.samples,
                spread.join("; ")
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut m = Measurement::new(
            "raw/aes-256-ctr/encrypt".into(),
            Some(Medium::Memory),
            Some(4 << 20),
            2,
            1,
            vec![0.002, 0.001, 0.003],
        );
        m.speedup = Some(1.9);
        m.efficiency = Some(0.95);
        m.openssl_s = Some(0.004);
        let k = Measurement::new(
            "rsa2048-keygen".into(),
            None,
            None,
            1,
            1,
            vec![0.1, 0.05, 0.2, 0.08],
        );
        Report {
            schema: SCHEMA,
            paracrypt: "0.1.0".into(),
            machine: Machine {
                cpus: 2,
                cpu_model: "test".into(),
                openssl: Some("OpenSSL 3".into()),
                avx512_ifma: false,
                primitives: vec![Primitives {
                    provider: "fastest".into(),
                    by: vec![("AES-GCM".into(), "aws-lc".into())],
                }],
            },
            chunk_size: 1 << 20,
            measurements: vec![m, k],
        }
    }

    #[test]
    fn json_round_trips() {
        let report = sample();
        let json = serde_json::to_string_pretty(&report).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["schema"], 1);
        assert_eq!(value["measurements"][0]["mode"], "memory");
        assert_eq!(value["measurements"][0]["stats"]["median_s"], 0.002);
    }

    #[test]
    fn stats_and_table() {
        let s = Stats::of(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.median_s, s.min_s, s.max_s), (2.5, 1.0, 4.0));
        let text = table(&sample());
        assert!(
            text.contains("raw/aes-256-ctr/encrypt (in memory)"),
            "{text}"
        );
        assert!(text.contains("4 MiB"), "{text}");
        assert!(text.contains("2097 MB/s 1.90× 95%"), "{text}");
        assert!(text.contains("2.00× at 2t"), "{text}");
        assert!(text.contains("spread over 4 keys"), "{text}");
        assert!(
            text.contains("[fastest] computes: AES-GCM (aws-lc)"),
            "{text}"
        );
    }
}
