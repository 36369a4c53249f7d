//! The container test vectors (`tests/testdata/container/`, format in `docs/FORMAT.md`)
//! through the binary: `decrypt` file to file, and `decrypt --range` over the whole plaintext.
//! Success writes the vector's plaintext; every failure exits 1 with the vector's exact message
//! and leaves no output file and no temporary file.

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
        let get = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("{name}: no `{k}:` line"))
        };
        let dir = scratch();
        let d = dir.path();
        let input = write(d, "in.pcr", body);
        let out = d.join("out");

        let mut file_to_file = decrypt(d, get("secret"));
        file_to_file
            .args(["-q", "-j", "2"])
            .arg(&input)
            .arg("-o")
            .arg(&out);
        let file_to_file = run(file_to_file);
        let mut range = decrypt(d, get("secret"));
        range.args(["-q", "--range", "0:1GiB"]).arg(&input);
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
            fails(file_to_file, 1, &message);
            fails(range, 1, &message);
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
