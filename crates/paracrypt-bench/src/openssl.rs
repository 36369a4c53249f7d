//! `--compare-openssl`: the same work through the `openssl` binary, when it is installed.
//!
//! - Raw ciphers, file to file: `openssl enc` on the same input file (openssl is one thread).
//! - Symmetric work in memory: `openssl speed -evp CIPHER -bytes 16384 -multi N` (N processes).
//! - Container suites (under a key or to a recipient) and age files (ChaCha20-Poly1305): in
//!   memory the AEAD suites are compared with the same AEAD in `openssl speed` (AES-GCM,
//!   ChaCha20-Poly1305); file to file, and for the encrypt-then-MAC suites, there is no
//!   `openssl enc` equivalent, so they are compared with openssl's nearest cipher (AES-CTR,
//!   ChaCha20, 3DES-CBC, BF-CBC, RC4), which has no integrity at all.
//! - Public key: `openssl speed -multi N rsa2048|ecdsap256` per-operation throughput, and
//!   `openssl genpkey` for key generation.
//!
//! Each distinct openssl command is measured once per run and its result reused: `openssl enc`
//! is one thread whatever paracrypt's thread count, so every thread count of a row is compared
//! with the same openssl time rather than with a fresh, differently noisy one.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::pubkey::Workload;
use crate::report::{Measurement, Medium};
use crate::symmetric::Symmetric;
use paracrypt_core::container::Suite;
use paracrypt_core::raw::{Direction, RawCipherName};

/// `openssl version`, or `None` when openssl is not installed.
pub fn version() -> Option<String> {
    let out = Command::new("openssl").arg("version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// OpenSSL's name for the cipher closest to a workload, and the direction. `openssl speed`
/// (`in_memory`) runs the AEADs themselves; `openssl enc` has no AEAD mode, so file to file an
/// AEAD suite is compared with its cipher alone.
fn cipher(workload: Symmetric, in_memory: bool) -> (&'static str, Direction) {
    match workload {
        Symmetric::Raw { cipher, direction } => (cipher.as_str(), direction),
        Symmetric::Age { direction, .. } => (
            if in_memory {
                "chacha20-poly1305"
            } else {
                "chacha20"
            },
            direction,
        ),
        Symmetric::Container { suite, direction }
        | Symmetric::ContainerTo {
            suite, direction, ..
        } => (
            match suite {
                Suite::Aes256Gcm if in_memory => "aes-256-gcm",
                Suite::Aes128Gcm if in_memory => "aes-128-gcm",
                Suite::ChaCha20Poly1305 if in_memory => "chacha20-poly1305",
                Suite::Aes256Gcm | Suite::Aes256CtrHmacSha256 => "aes-256-ctr",
                Suite::Aes128Gcm => "aes-128-ctr",
                Suite::ChaCha20Poly1305 => "chacha20",
                Suite::DesEde3CbcHmacSha256 => "des-ede3-cbc",
                Suite::BfCbcHmacSha256 => "bf-cbc",
                Suite::Rc4HmacSha256 => "rc4",
            },
            direction,
        ),
    }
}

fn legacy(name: &str) -> bool {
    name.starts_with("des") || name.starts_with("bf") || name == "rc4"
}

/// The `openssl` binary as a peer, remembering what it has measured in this run.
#[derive(Default)]
pub struct Peer {
    /// Result of each measurement, keyed by what determines it.
    seen: HashMap<String, Option<(f64, String)>>,
}

impl Peer {
    /// Measures `key` with `measure` the first time, then answers from memory.
    fn once(
        &mut self,
        key: String,
        measure: impl FnOnce() -> Option<(f64, String)>,
    ) -> Option<(f64, String)> {
        self.seen.entry(key).or_insert_with(measure).clone()
    }

    /// Fills `openssl_s` (and the command) in `m`, a measurement of `workload`; `input` holds
    /// the workload's input for file-to-file measurements.
    pub fn compare_symmetric(
        &mut self,
        workload: Symmetric,
        m: &mut Measurement,
        input: &Path,
        dir: &Path,
    ) {
        let in_memory = !matches!(m.mode, Some(Medium::File));
        let (name, direction) = cipher(workload, in_memory);
        let size = m.size.unwrap_or(0);
        let result = match m.mode {
            Some(Medium::File) => self.once(format!("enc {name} {direction:?} {size}"), || {
                enc(name, direction, input, dir)
            }),
            _ => self
                .once(format!("speed {name} {direction:?} {}", m.threads), || {
                    speed_evp(name, direction, m.threads)
                })
                .map(|(bytes_per_s, cmd)| (size as f64 / bytes_per_s, cmd)),
        };
        if let Some((seconds, command)) = result {
            m.openssl_s = Some(seconds);
            m.openssl_command = Some(command);
        }
    }

    /// Fills `openssl_s` for a public-key workload.
    pub fn compare_public_key(&mut self, workload: Workload, m: &mut Measurement) {
        let ops = m.operations as f64;
        // One operation split across threads is compared with one openssl process; a batch
        // with as many processes as threads.
        let threads = if ops > 1.0 { m.threads } else { 1 };
        let result = match workload {
            Workload::RsaKeygen { bits } => self.once(format!("genpkey {bits}"), || genpkey(bits)),
            Workload::RsaSign { bits, .. } | Workload::RsaSignBatch { bits, .. } => self
                .once(format!("rsa{bits} {threads}"), || {
                    rate(&format!("rsa{bits}"), threads, "rsa", 4)
                })
                .map(|(per_s, cmd)| (ops / per_s, cmd)),
            Workload::EcdsaVerify { .. } | Workload::EcdsaVerifyBatch { .. } => self
                .once(format!("ecdsap256 {threads}"), || {
                    rate("ecdsap256", threads, "ecdsa", 5)
                })
                .map(|(per_s, cmd)| (ops / per_s, cmd)),
        };
        if let Some((seconds, command)) = result {
            m.openssl_s = Some(seconds);
            m.openssl_command = Some(command);
        }
    }
}

/// Times `openssl enc` on `input` (median of three runs).
fn enc(name: &str, direction: Direction, input: &Path, dir: &Path) -> Option<(f64, String)> {
    let raw: RawCipherName = name.parse().ok()?;
    let (min, max) = raw.algorithm().key_lengths();
    let key = hex::encode(vec![0x42u8; if min == max { min } else { 16 }]);
    let iv = hex::encode(vec![0x24u8; raw.iv_len()]);
    let output = dir.join("openssl-output");
    let mut args: Vec<String> = vec![
        "enc".into(),
        if direction == Direction::Encrypt {
            "-e"
        } else {
            "-d"
        }
        .into(),
    ];
    if legacy(name) {
        args.extend(["-provider", "legacy", "-provider", "default"].map(String::from));
    }
    args.extend([format!("-{name}"), "-K".into(), key, "-nopad".into()]);
    if raw.iv_len() > 0 {
        args.extend(["-iv".into(), iv]);
    }
    args.extend([
        "-in".into(),
        input.display().to_string(),
        "-out".into(),
        output.display().to_string(),
    ]);
    // paracrypt is timed in-process; subtract openssl's start-up (the same command on an
    // empty input) so that small sizes compare the work, not the process.
    let empty = dir.join("openssl-empty");
    std::fs::write(&empty, b"").ok()?;
    let mut empty_args = args.clone();
    let at = empty_args.iter().position(|a| a == "-in")? + 1;
    empty_args[at] = empty.display().to_string();
    let startup = median_of(3, &empty_args, &output)?;
    let full = median_of(3, &args, &output)?;
    let _ = std::fs::remove_file(&empty);
    Some((
        (full - startup).max(1e-6),
        format!("openssl {} (minus its start-up)", args.join(" ")),
    ))
}

/// Median seconds of running `openssl ARGS` `runs` times, removing `output` before each.
fn median_of(runs: usize, args: &[String], output: &Path) -> Option<f64> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let _ = std::fs::remove_file(output);
        let start = Instant::now();
        let ok = Command::new("openssl")
            .args(args)
            .output()
            .ok()?
            .status
            .success();
        if !ok {
            return None;
        }
        times.push(start.elapsed().as_secs_f64());
    }
    let _ = std::fs::remove_file(output);
    times.sort_by(f64::total_cmp);
    Some(times[runs / 2])
}

/// Runs `openssl speed` and returns its stdout.
fn speed(args: &[String]) -> Option<String> {
    let out = Command::new("openssl")
        .arg("speed")
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Bytes per second of `openssl speed -evp` on 16 KiB blocks with `threads` processes.
fn speed_evp(name: &str, direction: Direction, threads: usize) -> Option<(f64, String)> {
    let mut args: Vec<String> = Vec::new();
    if legacy(name) {
        args.extend(["-provider", "legacy", "-provider", "default"].map(String::from));
    }
    if direction == Direction::Decrypt {
        args.push("-decrypt".into());
    }
    args.extend(["-seconds", "1", "-bytes", "16384", "-multi"].map(String::from));
    args.push(threads.to_string());
    args.extend(["-evp".into(), name.into()]);
    let text = speed(&args)?;
    // The last line ends with the throughput in thousands of bytes per second: "… 8073691.14k".
    let value = text.lines().rev().find_map(|l| {
        l.split_whitespace()
            .last()?
            .strip_suffix('k')?
            .parse::<f64>()
            .ok()
    })?;
    Some((value * 1000.0, format!("openssl speed {}", args.join(" "))))
}

/// Operations per second from `openssl speed -multi N ALG`: number `column` of the result line
/// that mentions `prefix` ("rsa 2048 bits 0.000596s 0.000027s 1677.0 37453.0": sign/s is the
/// 4th; "256 bits ecdsa (nistp256) 0.0000s 0.0001s 32710.0 11432.0": verify/s is the 5th).
fn rate(alg: &str, threads: usize, prefix: &str, column: usize) -> Option<(f64, String)> {
    let args: Vec<String> = ["-seconds", "1", "-multi"]
        .iter()
        .map(|s| s.to_string())
        .chain([threads.to_string(), alg.to_string()])
        .collect();
    let text = speed(&args)?;
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains(prefix) && l.contains("bits"))?;
    let numbers: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches('s').parse::<f64>().ok())
        .collect();
    let value = *numbers.get(column - 1)?;
    (value > 0.0).then(|| (value, format!("openssl speed {}", args.join(" "))))
}

/// Keys `openssl genpkey` makes for its median: key generation time is widely spread.
const GENPKEY_SAMPLES: usize = 15;

/// Median seconds of `openssl genpkey` for an RSA key of `bits` over [`GENPKEY_SAMPLES`] keys,
/// each including the process's start-up (a few milliseconds, small against a key).
fn genpkey(bits: usize) -> Option<(f64, String)> {
    let args = [
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        &format!("rsa_keygen_bits:{bits}"),
        "-out",
        "/dev/null",
    ];
    let mut times = Vec::new();
    for _ in 0..GENPKEY_SAMPLES {
        let start = Instant::now();
        if !Command::new("openssl")
            .args(args)
            .output()
            .ok()?
            .status
            .success()
        {
            return None;
        }
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Some((
        times[GENPKEY_SAMPLES / 2],
        format!(
            "openssl {} (median of {GENPKEY_SAMPLES} keys)",
            args.join(" ")
        ),
    ))
}
