//! The official age test vectors (C2SP CCTV, `tests/testdata/age-cctv/`) through the binary:
//! `paracrypt decrypt` of each of the 143, to a file and to stdout, on every provider. A
//! success writes the payload the vector hashes; every failure exits 1 with one line naming
//! the vector's outcome class, leaves nothing at `-o` (no output, no temporary file), and on
//! stdout releases only the verified plaintext the vector hashes.

use std::process::Command;

use paracrypt_core::pubkey::sha256;

use crate::cctv_vectors::{Outcome, Vector, allowed, vectors};
use crate::common::*;

/// `paracrypt decrypt` with the vector's identities (a file in `dir`) or passphrase.
fn decrypt(vector: &Vector, dir: &std::path::Path, provider: &str) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "-q", "-j", "2", "--provider", provider]);
    match &vector.passphrase {
        Some(passphrase) => {
            cmd.env("PARACRYPT_PASSWORD", passphrase);
        }
        None => {
            // `empty` and `armor_empty` name no secret: they fail before one is needed.
            let any = "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0";
            let lines = match &vector.identities[..] {
                [] => any.to_owned(),
                lines => lines.join("\n"),
            };
            let ids = write(dir, "identities", lines.as_bytes());
            cmd.arg("-i").arg(ids);
        }
    }
    cmd
}

/// The outcome class a one-line error message names.
fn class(name: &str, message: &str) -> Outcome {
    let message = message
        .strip_prefix("paracrypt: error: ")
        .unwrap_or_else(|| panic!("{name}: {message}"));
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| message.starts_with(p));
    if starts(&["damaged armor"]) {
        Outcome::Armor
    } else if starts(&[
        "invalid age header",
        "unsupported age format version",
        "no identity matches",
        "header damaged",
        "wrong key or password",
        "key derivation",
        "not a paracrypt or age file",
        "this file was encrypted with",
    ]) {
        Outcome::Header
    } else if starts(&[
        "chunk ",
        "input truncated",
        "file truncated",
        "trailing data",
    ]) {
        Outcome::Payload
    } else {
        panic!("{name}: unexpected error: {message}")
    }
}

/// age's payload chunk.
const CHUNK: u64 = 64 * 1024;

/// The chunk a payload failure withholds although it authenticates, because it stands where
/// no chunk may (`file truncated after chunk i`, `trailing data after the last chunk (chunk
/// i)`): age releases it before it reports the file, paracrypt writes exactly the chunks
/// before it (the library's CCTV test says more).
fn withheld(stderr: &str) -> Option<u64> {
    let rest = stderr
        .trim_end()
        .strip_prefix("paracrypt: error: file truncated after chunk ")
        .or_else(|| {
            stderr
                .trim_end()
                .strip_prefix("paracrypt: error: trailing data after the last chunk (chunk ")
                .and_then(|r| r.strip_suffix(')'))
        })?;
    rest.parse().ok()
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(sha256(bytes))
}

#[test]
fn every_vector_to_a_file_and_to_stdout() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 143);
    for vector in &vectors {
        let name = &vector.name;
        for provider in providers() {
            let dir = scratch();
            let d = dir.path();
            let input = write(d, "in.age", &vector.file);
            let out = d.join("out");
            let to_file = run({
                let mut c = decrypt(vector, d, provider);
                c.arg(&input).arg("-o").arg(&out);
                c
            });
            let to_stdout = run({
                let mut c = decrypt(vector, d, provider);
                c.arg(&input);
                c
            });
            if vector.expect == Outcome::Success {
                assert!(ok(to_file).is_empty(), "{name}: wrote to stdout");
                let written = std::fs::read(&out).unwrap();
                assert_eq!(Some(hex_sha256(&written)), vector.payload, "{name}: file");
                let written = ok(to_stdout);
                assert_eq!(Some(hex_sha256(&written)), vector.payload, "{name}: stdout");
                continue;
            }
            for (how, result) in [("file", &to_file), ("stdout", &to_stdout)] {
                let (code, stderr) = status_and_stderr(result);
                assert_eq!(code, 1, "{name} ({how}, {provider}): {stderr}");
                assert_eq!(stderr.lines().count(), 1, "{name} ({how}): {stderr}");
                let got = class(name, stderr.trim_end());
                assert!(
                    allowed(vector, got),
                    "{name} ({how}, {provider}): expected {:?}: {stderr}",
                    vector.expect
                );
                let released = &result.stdout;
                match got {
                    Outcome::Payload if how == "stdout" => assert!(
                        Some(hex_sha256(released)) == vector.payload
                            || withheld(&stderr).map(|i| i * CHUNK) == Some(released.len() as u64),
                        "{name}: released {} bytes on stdout: {stderr}",
                        released.len()
                    ),
                    _ => assert!(released.is_empty(), "{name} ({how}): wrote to stdout"),
                }
            }
            assert!(!out.exists(), "{name}: output left");
            assert!(
                !listing(d).iter().any(|f| f.starts_with(".paracrypt-")),
                "{name}: temporary file left"
            );
        }
    }
}
