//! `--provider` and `PARACRYPT_PROVIDER`: keys made by either provider load in `openssl pkey
//! -check` and in the other provider; signatures made by either verify with the other and with
//! openssl; PKCS#1 v1.5 signatures are byte-identical; containers (every suite) and age files
//! sealed on either provider are the same bytes and open on the other; `info` names what runs
//! the suite; bad names are usage errors; `bench` measures every provider it is given.

use std::path::Path;

use paracrypt_core::container::Suite;

use crate::common::*;
use crate::people::x25519;
use crate::sigfiles::*;

#[test]
fn the_build_names_its_providers() {
    // The pure-Rust build refuses aws-lc by name, saying why.
    let mut cmd = paracrypt();
    cmd.args([
        "--provider",
        "aws-lc",
        "ecdsa",
        "keygen",
        "-o",
        "/nonexistent/k",
    ]);
    if cfg!(feature = "aws-lc") {
        fails(run(cmd), 1, "/nonexistent");
    } else {
        fails(run(cmd), 2, "`aws-lc` is not compiled into this build");
    }
    // And a build without OpenSSL refuses it the same way.
    let mut cmd = paracrypt();
    cmd.args([
        "--provider",
        "openssl",
        "ecdsa",
        "keygen",
        "-o",
        "/nonexistent/k",
    ]);
    if cfg!(feature = "openssl") {
        fails(run(cmd), 1, "/nonexistent");
    } else {
        fails(run(cmd), 2, "`openssl` is not compiled into this build");
    }
}

fn sign(algo: &str, provider: &str, key: &Path, extra: &[&str], file: &Path) {
    let mut cmd = paracrypt();
    cmd.args([
        "--provider",
        provider,
        algo,
        "sign",
        "--key",
        s(key),
        "--force",
    ])
    .args(extra)
    .arg(file);
    ok(run(cmd));
}

fn verify(algo: &str, provider: &str, public: &Path, extra: &[&str], file: &Path) {
    let mut cmd = paracrypt();
    // The environment variable chooses too.
    cmd.env("PARACRYPT_PROVIDER", provider)
        .args([algo, "verify", "--public", s(public)])
        .args(extra)
        .arg(file);
    ok(run(cmd));
}

#[test]
fn rsa_keys_and_signatures_cross_providers_and_openssl() {
    let dir = scratch();
    let file = write(dir.path(), "data.bin", &data(100_000, 3));
    let mut pkcs1 = Vec::new();
    for keygen_provider in providers() {
        let (key, public) = keygen(
            dir.path(),
            "rsa",
            &[
                "--bits",
                "2048",
                "-j",
                "2",
                "-f",
                "--provider",
                keygen_provider,
            ],
        );
        if openssl().is_some() {
            let check = openssl_ok(&["pkey", "-in", s(&key), "-check", "-noout"]);
            assert!(
                String::from_utf8_lossy(&check).contains("valid"),
                "{keygen_provider}"
            );
        }
        for scheme in ["pkcs1v15", "pss"] {
            let mut signatures = Vec::new();
            for signer in providers() {
                sign("rsa", signer, &key, &["--scheme", scheme], &file);
                let sig = std::fs::read(format!("{}.sig", file.display())).unwrap();
                for verifier in providers() {
                    verify("rsa", verifier, &public, &["--scheme", scheme], &file);
                }
                if openssl().is_some() {
                    let pss = scheme == "pss";
                    assert!(
                        openssl_verifies(&public, &file, pss),
                        "{scheme} by {signer}"
                    );
                }
                signatures.push(sig);
            }
            if scheme == "pkcs1v15" {
                assert!(
                    signatures.windows(2).all(|w| w[0] == w[1]),
                    "byte-identical"
                );
                pkcs1.push(signatures);
            }
        }
    }
    assert!(!pkcs1.is_empty());
}

#[test]
fn ecdsa_signatures_cross_providers_and_openssl() {
    let dir = scratch();
    let file = write(dir.path(), "data.bin", &data(5_000, 4));
    for keygen_provider in providers() {
        let (key, public) = keygen(dir.path(), "ecdsa", &["-f", "--provider", keygen_provider]);
        if openssl().is_some() {
            openssl_ok(&["pkey", "-in", s(&key), "-check", "-noout"]);
        }
        for signer in providers() {
            sign("ecdsa", signer, &key, &[], &file);
            for verifier in providers() {
                verify("ecdsa", verifier, &public, &[], &file);
            }
            if openssl().is_some() {
                assert!(
                    openssl_verifies(&public, &file, false),
                    "signed by {signer}"
                );
            }
        }
    }
}

#[test]
fn unknown_providers_and_lists_outside_bench_are_usage_errors() {
    let mut cmd = paracrypt();
    cmd.args([
        "--provider",
        "boringssl",
        "ecdsa",
        "keygen",
        "-o",
        "/nonexistent/k",
    ]);
    let err = fails(run(cmd), 2, "unknown provider `boringssl`");
    assert!(err.contains("rustcrypto"), "{err}");
    let mut cmd = paracrypt();
    cmd.env("PARACRYPT_PROVIDER", "nope")
        .args(["ecdsa", "keygen", "-o", "/nonexistent/k"]);
    fails(run(cmd), 2, "unknown provider `nope`");
    let mut cmd = paracrypt();
    cmd.args([
        "--provider",
        "rustcrypto,rustcrypto",
        "ecdsa",
        "keygen",
        "-o",
        "/nonexistent/k",
    ]);
    fails(run(cmd), 2, "--provider takes one provider");
}

#[test]
fn bench_measures_every_provider_given() {
    let list = providers().join(",");
    let dir = scratch();
    let json = dir.path().join("bench.json");
    let mut cmd = paracrypt();
    cmd.args([
        "bench",
        "--provider",
        &list,
        "--algorithms",
        "p256-verify-batch64,raw/aes-256-ctr,container/aes-256-gcm",
        "--sizes",
        "64KiB",
        "--modes",
        "memory",
        "--threads",
        "1,2",
        "--repeat",
        "1",
        "--json",
    ])
    .arg(&json);
    let table = String::from_utf8(ok(run(cmd))).unwrap();
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for provider in providers() {
        assert!(
            table.contains(&format!("p256-verify-batch64 [{provider}]")),
            "{table}"
        );
        let rows = report["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["provider"] == provider)
            .count();
        // p256, raw and the container: one row per thread count on each provider.
        assert_eq!(rows, 6, "{provider}: rows");
        for row in ["raw/aes-256-ctr/encrypt", "container/aes-256-gcm/encrypt"] {
            assert!(
                table.contains(&format!("{row} [{provider}] (in memory)")),
                "{row} on {provider} in\n{table}"
            );
        }
    }
}

/// Runs `paracrypt --provider PROVIDER ARGS… INPUT -o OUTPUT` and returns OUTPUT's bytes.
fn through(provider: &str, args: &[&str], input: &Path, output: &Path) -> Vec<u8> {
    let mut cmd = paracrypt();
    cmd.args(["--provider", provider])
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(output);
    ok(run(cmd));
    std::fs::read(output).unwrap()
}

#[test]
fn encrypt_decrypt_and_info_run_on_the_provider_given() {
    let dir = scratch();
    let d = dir.path();
    let key = crate::container::keygen(d, "k");
    let key = key.to_str().unwrap();
    let plain = data(300_001, 5);
    let input = write(d, "in", &plain);
    let salt = "cd".repeat(32);
    for suite in Suite::ALL {
        let mut files = Vec::new();
        for provider in providers() {
            let sealed = d.join(format!("{suite}-{provider}.pcr"));
            let mut args = vec![
                "encrypt",
                "-q",
                "--key-file",
                key,
                "--cipher",
                suite.as_str(),
            ];
            args.extend(["--chunk-size", "64KiB", "-j", "3"]);
            // A test build seals under one salt on every provider: the same bytes. (A build
            // without the test hooks, as stage 2 of scripts/test.sh runs, has no such flag:
            // every provider still opens every other's file, below.)
            if cfg!(feature = "test-hooks") {
                args.extend(["--fixed-salt", &salt]);
            }
            files.push((provider, through(provider, &args, &input, &sealed), sealed));
        }
        let (_, first, _) = &files[0];
        for (provider, bytes, sealed) in &files {
            assert!(
                bytes == first || !cfg!(feature = "test-hooks"),
                "{suite}: the file sealed on {provider} differs"
            );
            // Opened on every provider (the other one too), chosen by the environment this time.
            for opener in providers() {
                let out = d.join(format!("{suite}-{provider}-{opener}.out"));
                let mut cmd = paracrypt();
                cmd.env("PARACRYPT_PROVIDER", opener)
                    .args(["decrypt", "--key-file", key, "-j", "2"])
                    .arg(sealed)
                    .arg("-o")
                    .arg(&out);
                ok(run(cmd));
                assert!(
                    std::fs::read(&out).unwrap() == plain,
                    "{suite}: sealed on {provider}, opened on {opener}"
                );
            }
        }
        for provider in providers() {
            let mut cmd = paracrypt();
            cmd.args(["--provider", provider, "info"]).arg(&files[0].2);
            let info = String::from_utf8(ok(run(cmd))).unwrap();
            let line = format!(
                "provider:    {}",
                suite.primitives(provider.parse().unwrap())
            );
            assert!(info.contains(&line), "{line} in {info}");
        }
    }
}

#[test]
fn age_files_run_on_the_provider_given() {
    let dir = scratch();
    let d = dir.path();
    let (identity, recipient) = x25519(d, "me.key");
    let plain = data(200_003, 6);
    let input = write(d, "in", &plain);
    for sealer in providers() {
        let sealed = d.join(format!("{sealer}.age"));
        let args = ["encrypt", "--format", "age", "-r", &recipient, "-j", "3"];
        through(sealer, &args, &input, &sealed);
        for opener in providers() {
            let out = d.join(format!("{sealer}-{opener}.out"));
            let args = ["decrypt", "-i", identity.to_str().unwrap(), "-j", "2"];
            assert!(
                through(opener, &args, &sealed, &out) == plain,
                "sealed on {sealer}, opened on {opener}"
            );
        }
    }
}
