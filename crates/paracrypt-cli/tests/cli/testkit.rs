//! The container test vectors (`tests/testdata/container/`, format in `docs/FORMAT.md`)
//! through the binary: `decrypt` file to file, and `decrypt --range` over the whole plaintext.
//! Success writes the vector's plaintext; every failure exits 1 (5 for a signature failure)
//! with the vector's exact message and leaves no output file and no temporary file. A signed
//! vector is decrypted with `--verify-with` its signer.

use std::path::{Path, PathBuf};
use std::process::Command;

use paracrypt_core::pubkey::sha256;

use crate::common::*;

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/testdata/container")
}

/// The vector's `key: value` header lines and its container bytes.
fn parse(bytes: &[u8]) -> (Vec<(String, String)>, &[u8]) {
    let split = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("an empty line after the header");
    let fields = std::str::from_utf8(&bytes[..split])
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(": ").unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    (fields, &bytes[split + 2..])
}

/// `paracrypt decrypt` with the vector's secret (a key file or an identity file in `dir`, or the password through
/// the environment).
fn decrypt(dir: &Path, secret: &str) -> Command {
    let mut cmd = paracrypt();
    cmd.arg("decrypt");
    match secret.split_once(' ').unwrap() {
        ("key", hex_key) => {
            let key = write(dir, "key", format!("# testkit key\n{hex_key}\n").as_bytes());
            cmd.arg("--key-file").arg(key);
        }
        ("identity", identity) => {
            let file = write(dir, "identity", format!("{identity}\n").as_bytes());
            cmd.arg("-i").arg(file);
        }
        ("password", password) => {
            cmd.env("PARACRYPT_PASSWORD", password);
        }
        other => panic!("unknown secret {other:?}"),
    }
    cmd
}

#[test]
fn every_vector_through_decrypt_and_decrypt_range() {
    let mut count = 0;
    for entry in std::fs::read_dir(vectors()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let (fields, body) = parse(&bytes);
        let find = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let get = |k: &str| find(k).unwrap_or_else(|| panic!("{name}: no `{k}:` line"));
        let dir = scratch();
        let d = dir.path();
        let input = write(d, "in.pcr", body);
        let out = d.join("out");
        // A signed vector's signer, as an OpenSSH line for --verify-with.
        let verify_with = find("verify-with").map(|line| {
            let hex_key = line.strip_prefix("ed25519 ").unwrap();
            let key = paracrypt_core::sign::VerifyingKey::from_field(
                paracrypt_core::sign::Scheme::Ed25519,
                &hex::decode(hex_key).unwrap(),
            )
            .unwrap();
            write(d, "signer.pub", key.to_openssh().unwrap().as_bytes())
        });
        let with_signer = |cmd: &mut Command| {
            if let Some(path) = &verify_with {
                cmd.arg("--verify-with").arg(path);
            }
        };

        let mut file_to_file = decrypt(d, get("secret"));
        file_to_file
            .args(["-q", "-j", "2"])
            .arg(&input)
            .arg("-o")
            .arg(&out);
        with_signer(&mut file_to_file);
        let file_to_file = run(file_to_file);
        let mut range = decrypt(d, get("secret"));
        range.args(["-q", "--range", "0:1GiB"]).arg(&input);
        with_signer(&mut range);
        let range = run(range);

        if get("expect") == "success" {
            let plaintext = ok(file_to_file);
            assert!(plaintext.is_empty(), "{name}: file to file wrote to stdout");
            let plaintext = std::fs::read(&out).unwrap();
            let want = get("plaintext");
            let described =
                |p: &[u8]| format!("{} bytes, sha256 {}", p.len(), hex::encode(sha256(p)));
            assert_eq!(described(&plaintext), want, "{name}: file to file");
            assert_eq!(described(&ok(range)), want, "{name}: --range");
        } else {
            // `decrypt` reads age files too: what does not even begin like a container says
            // it is neither format (the library's container reader: `not a paracrypt file`).
            let magic = paracrypt_core::container::MAGIC;
            let begins_like_one = !body.is_empty() && magic.starts_with(&body[..body.len().min(9)]);
            let message = match get("error") {
                "not a paracrypt file (no PARACRYPT header)" if !begins_like_one => {
                    paracrypt_core::Error::NotEncrypted.to_string()
                }
                other => other.to_owned(),
            };
            let message = format!("paracrypt: error: {message}");
            // A signature failure exits 5, as `verify` does.
            let code = if get("expect") == "signature failure" {
                5
            } else {
                1
            };
            fails(file_to_file, code, &message);
            fails(range, code, &message);
            assert!(!out.exists(), "{name}: output left");
            assert!(
                !listing(d).iter().any(|f| f.starts_with(".paracrypt-")),
                "{name}: temporary file left"
            );
        }
        count += 1;
    }
    assert!(count > 100, "only {count} vectors");
}
