//! `paracrypt bench` and `paracrypt generate`: the outputs are produced and well formed (the
//! speed itself is never asserted).

use crate::common::*;

#[test]
fn a_tiny_run_prints_the_table_and_writes_json_and_svg() {
    let dir = scratch();
    let d = dir.path();
    let (json, svg) = (d.join("bench.json"), d.join("bench.svg"));
    let mut cmd = paracrypt();
    cmd.args([
        "bench",
        "--algorithms",
        "raw/aes-256-ctr,container/aes-256-gcm,p256-verify-split",
        "--sizes",
        "64KiB",
        "--threads",
        "1,2",
        "--repeat",
        "1",
        "--json",
    ])
    .arg(&json)
    .arg("--plot")
    .arg(&svg)
    .arg("--dir")
    .arg(d);
    let table = String::from_utf8(ok(run(cmd))).unwrap();
    // Rows name their provider: the default one (`fastest`) for raw ciphers and the container
    // suites, RustCrypto for p256's split verification (it exists there only); the default's
    // table says which backend computes each primitive.
    let default = "fastest";
    let first = providers()[0];
    for needle in [
        &format!("[fastest] computes: AES (ECB, CBC) ({first}), ")[..],
        &format!("raw/aes-256-ctr/encrypt [{default}] (in memory)")[..],
        &format!("raw/aes-256-ctr/encrypt [{default}] (file to file)"),
        &format!("container/aes-256-gcm/encrypt [{default}] (in memory)"),
        "p256-verify-split [rustcrypto]",
        "1 thread",
        "2 threads",
        "64 KiB",
        "MB/s",
        "/op",
    ] {
        assert!(table.contains(needle), "{needle} missing from\n{table}");
    }

    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], 1);
    assert!(report["machine"]["cpus"].as_u64().unwrap() >= 1);
    let tables = report["machine"]["primitives"].as_array().unwrap();
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0]["provider"], "fastest");
    // One row per primitive of the provider table (signatures added Ed25519 and ML-DSA-65).
    assert_eq!(tables[0]["by"].as_array().unwrap().len(), 19);
    let measurements = report["measurements"].as_array().unwrap();
    // 2 symmetric algorithms × 1 size × 2 modes × 2 thread counts, and 1 public-key × 2.
    assert_eq!(measurements.len(), 10);
    for m in measurements {
        assert!(m["stats"]["median_s"].as_f64().unwrap() > 0.0);
        assert!(m["speedup"].as_f64().unwrap() > 0.0);
        assert!(m["efficiency"].as_f64().is_some());
        if m["algorithm"].as_str().unwrap().starts_with("raw/") {
            assert!(m["mb_per_s"].as_f64().unwrap() > 0.0);
            assert_eq!(m["size"], 65536);
        }
    }

    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let labels: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    for needle in [
        "ideal",
        &format!("raw/aes-256-ctr/encrypt [{default}] (memory)")[..],
        "p256-verify-split [rustcrypto]",
        "threads",
    ] {
        assert!(
            labels.iter().any(|l| l.contains(needle)),
            "{needle} not in the plot: {labels:?}"
        );
    }
    assert!(
        listing(d)
            .iter()
            .all(|f| f == "bench.json" || f == "bench.svg"),
        "{:?}",
        listing(d)
    );
}

#[test]
fn compare_openssl_runs_the_same_aead_in_memory_and_its_cipher_file_to_file() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let json = d.join("bench.json");
    let mut cmd = paracrypt();
    cmd.args([
        "bench",
        "--algorithms",
        "container/aes-256-gcm/encrypt,container/chacha20-poly1305/decrypt",
        "--sizes",
        "64KiB",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--compare-openssl",
        "-q",
        "--json",
    ])
    .arg(&json)
    .arg("--dir")
    .arg(d);
    ok(run(cmd));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let commands: Vec<(String, String, String)> = report["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["algorithm"].as_str().unwrap().to_string(),
                m["mode"].as_str().unwrap().to_string(),
                m["openssl_command"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for (algorithm, mode, expected) in [
        (
            "container/aes-256-gcm/encrypt",
            "memory",
            "-evp aes-256-gcm",
        ),
        ("container/aes-256-gcm/encrypt", "file", "-aes-256-ctr"),
        (
            "container/chacha20-poly1305/decrypt",
            "memory",
            "-evp chacha20-poly1305",
        ),
    ] {
        let (_, _, command) = commands
            .iter()
            .find(|(a, m, _)| a == algorithm && m == mode)
            .unwrap_or_else(|| panic!("no {algorithm} {mode} row in {commands:?}"));
        assert!(
            command.contains(expected),
            "{algorithm} {mode}: {command:?} should contain {expected:?}"
        );
    }
}

#[test]
fn unknown_algorithms_and_bad_options_are_usage_errors() {
    let mut cmd = paracrypt();
    cmd.args(["bench", "--algorithms", "raw/aes-999"]);
    let stderr = fails(run(cmd), 2, "unknown algorithm `raw/aes-999`");
    assert!(
        stderr.contains("container/aes-256-gcm/encrypt") && stderr.contains("rsa3072-keygen"),
        "{stderr}"
    );
    let mut cmd = paracrypt();
    cmd.args(["bench", "--threads", "0"]);
    fails(run(cmd), 2, "--threads must be at least 1");
    let mut cmd = paracrypt();
    cmd.args(["bench", "--sizes", "12XB"]);
    fails(run(cmd), 2, "size");
}

#[test]
fn man_pages_and_completions_are_generated_from_the_cli() {
    let dir = scratch();
    let man = dir.path().join("man1");
    let mut cmd = paracrypt();
    cmd.args(["generate", "man", "-o"]).arg(&man);
    ok(run(cmd));
    let pages = listing(&man);
    for page in [
        "paracrypt.1",
        "paracrypt-encrypt.1",
        "paracrypt-raw.1",
        "paracrypt-bench.1",
        "paracrypt-rsa-keygen.1",
    ] {
        assert!(pages.contains(&page.to_string()), "{page} in {pages:?}");
    }
    let encrypt = std::fs::read_to_string(man.join("paracrypt-encrypt.1")).unwrap();
    assert!(
        encrypt.starts_with(".ie") || encrypt.contains(".TH"),
        "roff"
    );
    assert!(
        !encrypt.contains("fixed-salt"),
        "hidden options stay hidden"
    );
    for shell in ["bash", "zsh", "fish"] {
        let mut cmd = paracrypt();
        cmd.args(["generate", "completions", shell]);
        let script = String::from_utf8(ok(run(cmd))).unwrap();
        assert!(
            script.contains("paracrypt") && script.contains("encrypt"),
            "{shell}"
        );
    }
}
