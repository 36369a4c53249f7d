//! The container testkit (age's testkit is the model): one file per case under
//! `tests/testdata/container/`, each a text header saying what decryption must do, a blank
//! line, then the container bytes. The files are the format's test vectors: another
//! implementation of `docs/FORMAT.md` can run them as they are.
//!
//! `every_case_meets_its_expectation` reads the checked-in files; `testkit_is_up_to_date`
//! rebuilds every case with a fixed salt and fails when the files differ (regenerate with
//! `PARACRYPT_REGENERATE_TESTKIT=1 cargo test --test tests testkit`).

use std::path::{Path, PathBuf};

use paracrypt::container::{
    Argon2Params, Decryptor, Encryptor, HEADER_LEN, Key, SALT_LEN, Secret, Suite,
};
use sha2::{Digest, Sha256};

const CHUNK: usize = 64;
const TESTKIT_KEY: [u8; 32] = *b"paracrypt testkit key (32 bytes)";
const OTHER_KEY: [u8; 32] = [0x11; 32];
const PASSWORD: &str = "paracrypt testkit password";
/// Small Argon2 costs keep the vectors fast to check; real files use Argon2's defaults.
const TEST_ARGON2: Argon2Params = Argon2Params {
    m_cost: 64,
    t_cost: 1,
    p_cost: 1,
};
const SALT: [u8; SALT_LEN] = [0xa5; SALT_LEN];
const OTHER_SALT: [u8; SALT_LEN] = [0x3c; SALT_LEN];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/container")
}

#[derive(Clone, Debug, PartialEq)]
enum SecretSpec {
    Key([u8; 32]),
    Password(String),
}

impl SecretSpec {
    fn secret(&self) -> Secret {
        match self {
            SecretSpec::Key(k) => Secret::Key(Key::from_bytes(*k)),
            SecretSpec::Password(p) => Secret::password_with_params(p.clone(), TEST_ARGON2),
        }
    }
    fn header_line(&self) -> String {
        match self {
            SecretSpec::Key(k) => format!("secret: key {}", hex::encode(k)),
            SecretSpec::Password(p) => format!("secret: password {p}"),
        }
    }
}

struct Case {
    name: String,
    comment: &'static str,
    secret: SecretSpec,
    /// `Ok(plaintext)` or `Err((kind, message))`.
    expect: Result<Vec<u8>, (&'static str, String)>,
    bytes: Vec<u8>,
}

fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn seal(suite: Suite, secret: &SecretSpec, salt: [u8; SALT_LEN], plain: &[u8]) -> Vec<u8> {
    Encryptor::new(secret.secret())
        .suite(suite)
        .chunk_size(CHUNK)
        .fixed_salt_for_tests(salt)
        .encrypt_vec(plain)
        .unwrap()
}

fn cases() -> Vec<Case> {
    let key = SecretSpec::Key(TESTKIT_KEY);
    let mut cases = Vec::new();
    let mut ok = |name: String, comment, secret: SecretSpec, plain: Vec<u8>, bytes| {
        cases.push(Case {
            name,
            comment,
            secret,
            expect: Ok(plain),
            bytes,
        });
    };
    for &suite in Suite::ALL {
        let plain = plaintext(3 * CHUNK + 17);
        ok(
            format!("{suite}-success"),
            "three full chunks and a short last one",
            key.clone(),
            plain.clone(),
            seal(suite, &key, SALT, &plain),
        );
        ok(
            format!("{suite}-empty"),
            "the empty file: one empty final chunk",
            key.clone(),
            Vec::new(),
            seal(suite, &key, SALT, &[]),
        );
        let aligned = plaintext(2 * CHUNK);
        ok(
            format!("{suite}-aligned"),
            "two full chunks, the second flagged last",
            key.clone(),
            aligned.clone(),
            seal(suite, &key, SALT, &aligned),
        );
    }
    let pw = SecretSpec::Password(PASSWORD.into());
    let plain = plaintext(100);
    ok(
        "aes-256-gcm-password-success".into(),
        "Argon2id password (m=64 KiB, t=1, p=1)",
        pw.clone(),
        plain.clone(),
        seal(Suite::Aes256Gcm, &pw, SALT, &plain),
    );

    let mut fail = |name: String, comment, secret: SecretSpec, kind, message: String, bytes| {
        cases.push(Case {
            name,
            comment,
            secret,
            expect: Err((kind, message)),
            bytes,
        });
    };
    for &suite in Suite::ALL {
        let plain = plaintext(3 * CHUNK + 17);
        let file = seal(suite, &key, SALT, &plain);
        let stride = suite.sealed_chunk_len(CHUNK);
        let at = |i: usize| HEADER_LEN + i * stride;
        let flip = |i: usize| {
            let mut f = file.clone();
            f[i] ^= 0x01;
            f
        };
        let chunk_fail = |i: u64| {
            format!("chunk {i} failed authentication (damaged, reordered or from another file)")
        };
        let header = "header failure";
        let payload = "payload failure";
        fail(
            format!("{suite}-header-magic"),
            "first magic byte flipped",
            key.clone(),
            header,
            "not a paracrypt file (no PARACRYPT header)".into(),
            flip(0),
        );
        fail(
            format!("{suite}-header-version"),
            "version byte 1 → 0",
            key.clone(),
            header,
            "unsupported paracrypt format version 0 (this build reads version 1)".into(),
            flip(9),
        );
        fail(
            format!("{suite}-header-suite"),
            "suite byte flipped",
            key.clone(),
            header,
            "header damaged: checksum mismatch".into(),
            flip(10),
        );
        fail(
            format!("{suite}-header-chunk-size"),
            "chunk size flipped",
            key.clone(),
            header,
            "header damaged: checksum mismatch".into(),
            flip(15),
        );
        fail(
            format!("{suite}-header-salt"),
            "salt flipped",
            key.clone(),
            header,
            "header damaged: checksum mismatch".into(),
            flip(40),
        );
        fail(
            format!("{suite}-header-mac"),
            "header MAC flipped",
            key.clone(),
            header,
            "header damaged: authentication failed".into(),
            flip(100),
        );
        fail(
            format!("{suite}-header-truncated"),
            "cut inside the header",
            key.clone(),
            header,
            "header damaged: file shorter than a header".into(),
            file[..HEADER_LEN - 1].to_vec(),
        );
        fail(
            format!("{suite}-header-only"),
            "the header and no chunk",
            key.clone(),
            header,
            "file truncated after the header (no chunks)".into(),
            file[..HEADER_LEN].to_vec(),
        );
        fail(
            format!("{suite}-wrong-key"),
            "another key",
            SecretSpec::Key(OTHER_KEY),
            header,
            "wrong key or password".into(),
            file.clone(),
        );
        fail(
            format!("{suite}-body-chunk0"),
            "first ciphertext byte of chunk 0 flipped",
            key.clone(),
            payload,
            chunk_fail(0),
            flip(at(0)),
        );
        fail(
            format!("{suite}-body-chunk2"),
            "a byte in the middle of chunk 2 flipped",
            key.clone(),
            payload,
            chunk_fail(2),
            flip(at(2) + 30),
        );
        fail(
            format!("{suite}-body-last-tag"),
            "last byte of the file (the last tag) flipped",
            key.clone(),
            payload,
            chunk_fail(3),
            flip(file.len() - 1),
        );
        fail(
            format!("{suite}-truncated-boundary"),
            "last chunk removed",
            key.clone(),
            payload,
            "file truncated after chunk 2".into(),
            file[..at(3)].to_vec(),
        );
        fail(
            format!("{suite}-truncated-mid-chunk"),
            "cut 40 bytes into chunk 1",
            key.clone(),
            payload,
            chunk_fail(1),
            file[..at(1) + 40].to_vec(),
        );
        fail(
            format!("{suite}-truncated-in-tag"),
            "cut 3 bytes into the last chunk",
            key.clone(),
            payload,
            "input truncated inside chunk 3".into(),
            file[..at(3) + 3].to_vec(),
        );
        let mut extended = file.clone();
        extended.extend_from_slice(&file[at(3)..]);
        // Chunk 3 is short: with its copy it fails as a full chunk, but its beginning still
        // authenticates as the last chunk.
        fail(
            format!("{suite}-extended-copy"),
            "the last chunk appended again",
            key.clone(),
            payload,
            "trailing data after the last chunk (chunk 3)".into(),
            extended,
        );
        let aligned = seal(suite, &key, SALT, &plaintext(2 * CHUNK));
        let mut extended = aligned.clone();
        extended.extend_from_slice(&aligned[HEADER_LEN + stride..]);
        fail(
            format!("{suite}-extended-after-last"),
            "a full last chunk appended again",
            key.clone(),
            payload,
            "trailing data after the last chunk (chunk 1)".into(),
            extended,
        );
        let mut junk = file.clone();
        junk.extend_from_slice(&[0u8; 40]);
        fail(
            format!("{suite}-extended-junk"),
            "40 zero bytes appended",
            key.clone(),
            payload,
            "trailing data after the last chunk (chunk 3)".into(),
            junk,
        );
        let mut swapped = file.clone();
        swapped[at(0)..at(1)].copy_from_slice(&file[at(1)..at(2)]);
        swapped[at(1)..at(2)].copy_from_slice(&file[at(0)..at(1)]);
        fail(
            format!("{suite}-chunk-swap"),
            "chunks 0 and 1 swapped",
            key.clone(),
            payload,
            chunk_fail(0),
            swapped,
        );
        let other = seal(suite, &key, OTHER_SALT, &plaintext(3 * CHUNK + 17));
        let mut spliced = file.clone();
        spliced[at(1)..at(2)].copy_from_slice(&other[at(1)..at(2)]);
        fail(
            format!("{suite}-chunk-from-other-file"),
            "chunk 1 from a file with the same key and another salt",
            key.clone(),
            payload,
            chunk_fail(1),
            spliced,
        );
    }
    let pw_file = seal(Suite::Aes256Gcm, &pw, SALT, &plaintext(100));
    fail(
        "aes-256-gcm-wrong-password".into(),
        "another password",
        SecretSpec::Password("not the password".into()),
        "header failure",
        "wrong key or password".into(),
        pw_file.clone(),
    );
    fail(
        "aes-256-gcm-password-given-key".into(),
        "a key for a password file",
        key.clone(),
        "header failure",
        "this file was encrypted with a password".into(),
        pw_file,
    );
    cases
}

fn render(case: &Case) -> Vec<u8> {
    let mut text = match &case.expect {
        Ok(plain) => format!(
            "expect: success\nplaintext: {} bytes, sha256 {}\n",
            plain.len(),
            hex::encode(Sha256::digest(plain))
        ),
        Err((kind, message)) => format!("expect: {kind}\nerror: {message}\n"),
    };
    text.push_str(&case.secret.header_line());
    text.push('\n');
    text.push_str(&format!("comment: {}\n\n", case.comment));
    let mut out = text.into_bytes();
    out.extend_from_slice(&case.bytes);
    out
}

#[test]
fn testkit_is_up_to_date() {
    let regenerate = std::env::var_os("PARACRYPT_REGENERATE_TESTKIT").is_some();
    let mut stale = Vec::new();
    let cases = cases();
    for case in &cases {
        let path = dir().join(&case.name);
        let expected = render(case);
        if std::fs::read(&path).ok().as_deref() != Some(&expected[..]) {
            if regenerate {
                std::fs::write(&path, &expected).unwrap();
            } else {
                stale.push(case.name.clone());
            }
        }
    }
    let names: Vec<String> = cases.iter().map(|c| c.name.clone()).collect();
    let extra: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !names.contains(n))
        .collect();
    assert!(extra.is_empty(), "files with no case: {extra:?}");
    assert!(
        stale.is_empty(),
        "testkit files out of date (regenerate with PARACRYPT_REGENERATE_TESTKIT=1): {stale:?}"
    );
}

/// Parses a testkit file into its header fields and body.
fn parse(bytes: &[u8]) -> (Vec<(String, String)>, &[u8]) {
    let split = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("blank line")
        + 2;
    let header = std::str::from_utf8(&bytes[..split - 2]).unwrap();
    let fields = header
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(": ").unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    (fields, &bytes[split..])
}

#[test]
fn every_case_meets_its_expectation() {
    let mut count = 0;
    for entry in std::fs::read_dir(dir()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let (fields, body) = parse(&bytes);
        let get = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let secret = match get("secret").unwrap().split_once(' ').unwrap() {
            ("key", hex_key) => SecretSpec::Key(hex::decode(hex_key).unwrap().try_into().unwrap()),
            ("password", p) => SecretSpec::Password(p.to_string()),
            other => panic!("unknown secret {other:?}"),
        };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let result = Decryptor::new(secret.secret()).decrypt_vec(body);
        let mut streamed = Vec::new();
        let stream = Decryptor::new(secret.secret()).decrypt_stream(&mut &body[..], &mut streamed);
        match get("expect").unwrap() {
            "success" => {
                let plain = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                let want = get("plaintext").unwrap();
                let got = format!(
                    "{} bytes, sha256 {}",
                    plain.len(),
                    hex::encode(Sha256::digest(&plain))
                );
                assert_eq!(got, want, "{name}");
                stream.unwrap_or_else(|e| panic!("{name} (stream): {e}"));
                assert_eq!(streamed, plain, "{name} (stream)");
            }
            "header failure" | "payload failure" => {
                let message = get("error").unwrap();
                let err = result.expect_err(&name);
                assert_eq!(err.to_string(), message, "{name}");
                let err = stream.expect_err(&name);
                assert_eq!(err.to_string(), message, "{name} (stream)");
            }
            other => panic!("{name}: unknown expectation {other}"),
        }
        count += 1;
    }
    assert!(count > 100, "only {count} testkit files");
}
