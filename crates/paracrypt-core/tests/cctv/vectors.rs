//! The official age test vectors (C2SP CCTV) in `tests/testdata/age-cctv/vectors`: reading
//! them (shared by the library's and the binary's tests).

use std::io::Read;
use std::path::{Path, PathBuf};

/// Where the vectors are.
pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/testdata/age-cctv/vectors")
}

/// The outcome classes of the vectors (`expect:`), as paracrypt can tell them apart: `no match`
/// and `HMAC failure` are failures of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Decrypts to the end; the payload's SHA-256 is the vector's.
    Success,
    /// The header is refused (malformed, no identity matches, the MAC differs): no plaintext.
    Header,
    /// The header opens, a chunk does not: only the chunks before it may be released.
    Payload,
    /// The armor is damaged.
    Armor,
}

/// One vector: its name, fields, the age file (decompressed) and what it expects.
pub struct Vector {
    /// The file name.
    pub name: String,
    /// `identity:` lines.
    pub identities: Vec<String>,
    /// `passphrase:`, if any.
    pub passphrase: Option<String>,
    /// The SHA-256 of the plaintext that may be released, hex (`payload:`).
    pub payload: Option<String>,
    /// `expect:`.
    pub expect: Outcome,
    /// The age file.
    pub file: Vec<u8>,
}

/// Every vector, in name order.
pub fn vectors() -> Vec<Vector> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(vectors_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths.iter().map(|p| parse(p)).collect()
}

fn parse(path: &Path) -> Vector {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let bytes = std::fs::read(path).unwrap();
    let split = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or_else(|| panic!("{name}: no empty line after the fields"));
    let mut vector = Vector {
        name: name.clone(),
        identities: Vec::new(),
        passphrase: None,
        payload: None,
        expect: Outcome::Success,
        file: bytes[split + 2..].to_vec(),
    };
    let mut compressed = false;
    for line in std::str::from_utf8(&bytes[..split]).unwrap().lines() {
        let (key, value) = line.split_once(": ").unwrap();
        match key {
            "expect" => {
                vector.expect = match value {
                    "success" => Outcome::Success,
                    "header failure" | "no match" | "HMAC failure" => Outcome::Header,
                    "payload failure" => Outcome::Payload,
                    "armor failure" => Outcome::Armor,
                    other => panic!("{name}: unknown expect {other:?}"),
                }
            }
            "identity" => vector.identities.push(value.to_owned()),
            "passphrase" => vector.passphrase = Some(value.to_owned()),
            "payload" => vector.payload = Some(value.to_owned()),
            "compressed" => {
                assert_eq!(value, "zlib", "{name}");
                compressed = true;
            }
            "file key" | "armored" | "comment" => {}
            other => panic!("{name}: unknown field {other:?}"),
        }
    }
    if compressed {
        let mut plain = Vec::new();
        flate2::read::ZlibDecoder::new(&vector.file[..])
            .read_to_end(&mut plain)
            .unwrap();
        vector.file = plain;
    }
    vector
}

/// What a vector's failure class allows for this file: garbage before the armor's BEGIN line
/// leaves a file that is no age file at all (`not an age file`, a header failure).
pub fn allowed(vector: &Vector, got: Outcome) -> bool {
    got == vector.expect
        || (vector.expect == Outcome::Armor
            && got == Outcome::Header
            && !vector.file.trim_ascii_start().starts_with(b"-----"))
}
