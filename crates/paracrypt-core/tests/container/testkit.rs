//! The container testkit (age's testkit is the model): one file per case under
//! `tests/testdata/container/`, each a text header saying what decryption must do, a blank
//! line, then the container bytes. The files are the format's test vectors: another
//! implementation of `docs/FORMAT.md` can run them as they are.
//!
//! `every_case_meets_its_expectation` reads the checked-in files and runs each through every
//! decryption path (memory, stream, file to file, random access) at several thread counts, on
//! every compiled provider;
//! `testkit_is_up_to_date` rebuilds every case with a fixed salt and fails when the files differ
//! (regenerate with `PARACRYPT_REGENERATE_TESTKIT=1 cargo test -p paracrypt-core --test tests
//! testkit`). `tests/reference/` holds a second reader, written in Python from `docs/FORMAT.md`
//! alone, that runs the same files.
//!
//! The vectors stay at the repository's root (`tests/testdata/container/`), beside no crate:
//! they belong to the format, and readers in other languages use them too.

use std::path::{Path, PathBuf};

use paracrypt_core::container::{
    Argon2Params, Decryptor, Encryptor, HEADER_LEN, Key, SALT_LEN, Secret, Suite,
};
use paracrypt_core::{Error, Recipe, Runner};
use std::collections::HashSet;

use age_core::primitives::{aead_encrypt, hkdf};
use paracrypt_core::engine::ChunkCtx;
use paracrypt_core::provider::Provider;
use paracrypt_core::recipient::{Identities, Recipients, Stanza};
use paracrypt_core::sign::{Scheme, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use super::{chunk_size, read_back, temp_with, with_threads};

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
/// The file key of the version 2 vectors.
const FILE_KEY: [u8; 16] = *b"testkit file key";
const OTHER_SALT: [u8; SALT_LEN] = [0x3c; SALT_LEN];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/testdata/container")
}

#[derive(Clone, Debug, PartialEq)]
enum SecretSpec {
    Key([u8; 32]),
    Password(String),
    /// An identity file of one line (`AGE-SECRET-KEY-1…`).
    Identity(String),
}

impl SecretSpec {
    fn secret(&self) -> Secret {
        match self {
            SecretSpec::Key(k) => Secret::Key(Key::from_bytes(*k)),
            SecretSpec::Password(p) => Secret::password_with_params(p.clone(), TEST_ARGON2),
            SecretSpec::Identity(text) => {
                let mut identities = Identities::new();
                identities.add_file("identity", text.as_bytes()).unwrap();
                Secret::from(identities)
            }
        }
    }
    fn header_line(&self) -> String {
        match self {
            SecretSpec::Key(k) => format!("secret: key {}", hex::encode(k)),
            SecretSpec::Password(p) => format!("secret: password {p}"),
            SecretSpec::Identity(text) => format!("secret: identity {text}"),
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
    /// The Ed25519 public key the reader must require (`verify-with:`), for signed files.
    verify_with: Option<[u8; 32]>,
}

/// An X25519 identity made from fixed bytes: (identity file line, public key).
fn fixed_identity(secret: [u8; 32]) -> (String, [u8; 32]) {
    let hrp = bech32::Hrp::parse("age-secret-key-").unwrap();
    let line = bech32::encode::<bech32::Bech32>(hrp, &secret)
        .unwrap()
        .to_uppercase();
    let public = x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from(secret));
    (line, public.to_bytes())
}

/// age's X25519 recipient with a fixed ephemeral key, so that its stanza, and with a fixed
/// salt and file key the whole file, is reproducible (age draws a fresh ephemeral key).
struct FixedX25519 {
    public: [u8; 32],
    ephemeral: [u8; 32],
}

impl age::Recipient for FixedX25519 {
    fn wrap_file_key(
        &self,
        file_key: &paracrypt_core::recipient::FileKey,
    ) -> Result<(Vec<Stanza>, HashSet<String>), age::EncryptError> {
        use age::secrecy::ExposeSecret;
        use base64::Engine;
        let ephemeral = x25519_dalek::StaticSecret::from(self.ephemeral);
        let share = x25519_dalek::PublicKey::from(&ephemeral);
        let shared = ephemeral.diffie_hellman(&x25519_dalek::PublicKey::from(self.public));
        let salt = [share.as_bytes(), &self.public[..]].concat();
        let key = hkdf(&salt, b"age-encryption.org/v1/X25519", shared.as_bytes());
        let stanza = Stanza {
            tag: "X25519".into(),
            args: vec![base64::prelude::BASE64_STANDARD_NO_PAD.encode(share.as_bytes())],
            body: aead_encrypt(&key, file_key.expose_secret()),
        };
        Ok((vec![stanza], HashSet::new()))
    }
}

/// Seals `plain` to the fixed X25519 keys `publics` (version 2), reproducibly.
fn seal_to(suite: Suite, publics: &[[u8; 32]], plain: &[u8]) -> Vec<u8> {
    let mut recipients = Recipients::new();
    for (i, public) in publics.iter().enumerate() {
        recipients.push(Box::new(FixedX25519 {
            public: *public,
            ephemeral: [0x40 + i as u8; 32],
        }));
    }
    Runner::new()
        .vec(
            &Encryptor::new(recipients)
                .suite(suite)
                .chunk_size(chunk_size(CHUNK))
                .fixed_salt_for_tests(SALT)
                .fixed_file_key_for_tests(FILE_KEY),
            plain,
        )
        .unwrap()
}

/// A version 2 `file` with its header edited by `edit` and the checksum recomputed.
fn with_v2_header(file: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut file = file.to_vec();
    let len = HEADER_LEN + u32::from_be_bytes(file[16..20].try_into().unwrap()) as usize;
    edit(&mut file[..len]);
    let sum = Sha256::digest(&file[..len - 40]);
    file[len - 40..len - 32].copy_from_slice(&sum[..8]);
    file
}

fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn seal(suite: Suite, secret: &SecretSpec, salt: [u8; SALT_LEN], plain: &[u8]) -> Vec<u8> {
    Runner::new()
        .vec(
            &Encryptor::new(secret.secret())
                .suite(suite)
                .chunk_size(chunk_size(CHUNK))
                .fixed_salt_for_tests(salt),
            plain,
        )
        .unwrap()
}

/// Seals chosen chunks with the suite's own chunk transform under the testkit header: files
/// that no writer makes (chunk lengths only a key holder can forge), for the rule that every
/// plaintext has exactly one encoding.
fn forge(suite: Suite, secret: &SecretSpec, chunks: &[(u64, bool, Vec<u8>)]) -> Vec<u8> {
    let job = Encryptor::new(secret.secret())
        .suite(suite)
        .chunk_size(chunk_size(CHUNK))
        .fixed_salt_for_tests(SALT)
        .first_job(&mut &[][..], None, Provider::default())
        .unwrap();
    let mut file = job.header().to_vec();
    for (index, is_last, plain) in chunks {
        let mut buf = vec![0u8; suite.sealed_chunk_len(CHUNK)];
        buf[..plain.len()].copy_from_slice(plain);
        let ctx = ChunkCtx {
            index: *index,
            offset: *index * CHUNK as u64,
            chunk_size: CHUNK,
            is_last: *is_last,
            context: &[],
        };
        let sealed = job.transform_chunk(&ctx, &mut buf, plain.len()).unwrap();
        file.extend_from_slice(&buf[..sealed]);
    }
    file
}

/// `file` with its header edited by `edit` and the checksum recomputed, so that the field
/// check, not the checksum, is what sees the edit.
fn with_header(file: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut file = file.to_vec();
    edit(&mut file[..HEADER_LEN]);
    let sum = Sha256::digest(&file[..76]);
    file[76..84].copy_from_slice(&sum[..8]);
    file
}

/// A header field case: name, comment, the edit, the message it must fail with.
type FieldCase = (&'static str, &'static str, fn(&mut [u8]), String);

/// Writes a big-endian u32 header field at `at`.
fn set_u32(header: &mut [u8], at: usize, value: u32) {
    header[at..at + 4].copy_from_slice(&value.to_be_bytes());
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
            verify_with: None,
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
            verify_with: None,
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
            "unsupported paracrypt format version 0 (this build reads versions 1 to 3)".into(),
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
        pw_file.clone(),
    );

    // Header checks 1-3 on files too short for a header, and check 9 after a wrong key.
    let file = seal(Suite::Aes256Gcm, &key, SALT, &plaintext(3 * CHUNK + 17));
    let header = "header failure";
    let not_paracrypt = || "not a paracrypt file (no PARACRYPT header)".to_string();
    let short = || "header damaged: file shorter than a header".to_string();
    for (name, comment, message, bytes) in [
        ("empty-file", "no bytes at all", not_paracrypt(), Vec::new()),
        (
            "short-magic",
            "the first 5 magic bytes only",
            not_paracrypt(),
            file[..5].to_vec(),
        ),
        (
            "magic-only",
            "the 9 magic bytes only",
            short(),
            file[..9].to_vec(),
        ),
        (
            "truncated-version",
            "cut inside the header, version 4: the version is checked before the length",
            "unsupported paracrypt format version 4 (this build reads versions 1 to 3)".into(),
            with_header(&file, |h| h[9] = 4)[..HEADER_LEN - 1].to_vec(),
        ),
    ] {
        fail(
            format!("aes-256-gcm-header-{name}"),
            comment,
            key.clone(),
            header,
            message,
            bytes,
        );
    }
    fail(
        "aes-256-gcm-header-only-wrong-key".into(),
        "the header and no chunk, another key: the header checks come first",
        SecretSpec::Key(OTHER_KEY),
        header,
        "wrong key or password".into(),
        file[..HEADER_LEN].to_vec(),
    );
    fail(
        "aes-256-gcm-key-file-given-password".into(),
        "a password for a key-file file",
        pw.clone(),
        header,
        "this file was encrypted with a key file".into(),
        file.clone(),
    );

    // Header check 5: field values, each behind a recomputed checksum.
    let invalid = |field: &str| format!("header damaged: invalid {field}");
    let key_fields: [FieldCase; 12] = [
        ("suite-zero", "suite 0", |h| h[10] = 0, invalid("suite")),
        ("suite-unknown", "suite 4", |h| h[10] = 4, invalid("suite")),
        (
            "chunk-size-zero",
            "chunk size 0",
            |h| set_u32(h, 12, 0),
            invalid("chunk size"),
        ),
        (
            "chunk-size-unaligned",
            "chunk size 72, not a multiple of 16",
            |h| set_u32(h, 12, 72),
            invalid("chunk size"),
        ),
        (
            "chunk-size-over-limit",
            "chunk size 2^30 + 16",
            |h| set_u32(h, 12, (1 << 30) + 16),
            invalid("chunk size"),
        ),
        (
            "kdf-unknown",
            "kdf 2",
            |h| h[11] = 2,
            invalid("key derivation"),
        ),
        (
            "key-with-memory",
            "kdf 0 with m_cost 64",
            |h| set_u32(h, 16, 64),
            invalid("key derivation"),
        ),
        (
            "key-with-passes",
            "kdf 0 with t_cost 1",
            |h| set_u32(h, 20, 1),
            invalid("key derivation"),
        ),
        (
            "key-with-lanes",
            "kdf 0 with p_cost 1",
            |h| set_u32(h, 24, 1),
            invalid("key derivation"),
        ),
        (
            "order",
            "suite 4, chunk size 0 and kdf 2: the suite is checked first",
            |h| {
                h[10] = 4;
                h[11] = 2;
                set_u32(h, 12, 0);
            },
            invalid("suite"),
        ),
        (
            "chunk-size-limit",
            "chunk size 2^30 is valid: the header MAC is what rejects the edit",
            |h| set_u32(h, 12, 1 << 30),
            "header damaged: authentication failed".into(),
        ),
        (
            "chunk-size-smallest",
            "chunk size 16 is valid: the header MAC is what rejects the edit",
            |h| set_u32(h, 12, 16),
            "header damaged: authentication failed".into(),
        ),
    ];
    for (name, comment, edit, message) in key_fields {
        fail(
            format!("aes-256-gcm-field-{name}"),
            comment,
            key.clone(),
            header,
            message,
            with_header(&file, edit),
        );
    }
    fail(
        "aes-256-gcm-field-before-key-check".into(),
        "kdf 2, another key: the field check comes before the key check",
        SecretSpec::Key(OTHER_KEY),
        header,
        invalid("key derivation"),
        with_header(&file, |h| h[11] = 2),
    );
    // The password file's Argon2 costs (m, t, p): out of range, then at the limits. Valid costs
    // pass the field check and change Argon2's output, so the key check is what fails.
    let argon2_fields: [(&str, &str, [u32; 3], String); 8] = [
        (
            "memory-over-limit",
            "m_cost 4 GiB + 1 KiB",
            [(4 << 20) + 1, 1, 1],
            invalid("Argon2 parameters"),
        ),
        (
            "memory-under-lanes",
            "m_cost 7 KiB with one lane (Argon2 needs 8 per lane)",
            [7, 1, 1],
            invalid("Argon2 parameters"),
        ),
        (
            "passes-zero",
            "t_cost 0",
            [64, 0, 1],
            invalid("Argon2 parameters"),
        ),
        (
            "passes-over-limit",
            "t_cost 65",
            [64, 65, 1],
            invalid("Argon2 parameters"),
        ),
        (
            "lanes-zero",
            "p_cost 0",
            [64, 1, 0],
            invalid("Argon2 parameters"),
        ),
        (
            "lanes-over-limit",
            "p_cost 65 (with 8 KiB per lane)",
            [520, 1, 65],
            invalid("Argon2 parameters"),
        ),
        (
            "smallest",
            "m=8 KiB, t=1, p=1 are valid: the key check is what fails",
            [8, 1, 1],
            "wrong key or password".into(),
        ),
        (
            "most-passes-and-lanes",
            "t=64, p=64 are valid: the key check is what fails",
            [512, 64, 64],
            "wrong key or password".into(),
        ),
    ];
    for (name, comment, [m, t, p], message) in argon2_fields {
        fail(
            format!("aes-256-gcm-field-argon2-{name}"),
            comment,
            pw.clone(),
            header,
            message,
            with_header(&pw_file, |h| {
                set_u32(h, 16, m);
                set_u32(h, 20, t);
                set_u32(h, 24, p);
            }),
        );
    }

    // Chunks that authenticate but that no writer makes: every plaintext has one encoding.
    let chunk_fail = |i: u64| {
        format!("chunk {i} failed authentication (damaged, reordered or from another file)")
    };
    for &suite in Suite::ALL {
        fail(
            format!("{suite}-empty-last-chunk"),
            "a full chunk, then an empty chunk flagged last (only the empty file has one)",
            key.clone(),
            "payload failure",
            chunk_fail(1),
            forge(
                suite,
                &key,
                &[(0, false, plaintext(CHUNK)), (1, true, Vec::new())],
            ),
        );
        if suite.cbc_block().is_some() {
            fail(
                format!("{suite}-long-last-chunk"),
                "a last chunk of C + 3 bytes (a full chunk's length, with short padding)",
                key.clone(),
                "payload failure",
                chunk_fail(0),
                forge(suite, &key, &[(0, true, plaintext(CHUNK + 3))]),
            );
            fail(
                format!("{suite}-long-chunk"),
                "chunk 0 of C + 3 bytes (a full chunk's length, with short padding)",
                key.clone(),
                "payload failure",
                chunk_fail(0),
                forge(
                    suite,
                    &key,
                    &[(0, false, plaintext(CHUNK + 3)), (1, true, plaintext(17))],
                ),
            );
        }
    }
    recipient_cases(&mut cases);
    signed_cases(&mut cases);
    cases
}

/// The Ed25519 signer of the signed vectors (seed 32 × `0x5e`, as the fuzz targets' signer).
fn testkit_signer(seed: u8) -> SigningKey {
    SigningKey::ed25519_from_seed(&[seed; 32])
}

/// A signed file (version 3) of `plain` with the testkit key, salt and chunk size.
fn seal_signed(plain: &[u8], signer: u8) -> Vec<u8> {
    Runner::new()
        .vec(
            &Encryptor::new(Key::from_bytes(TESTKIT_KEY))
                .chunk_size(chunk_size(CHUNK))
                .fixed_salt_for_tests(SALT)
                .sign(testkit_signer(signer)),
            plain,
        )
        .unwrap()
}

/// Version 3: signed files (docs/FORMAT.md, "Version 3: signed files"), Ed25519, read with
/// the signer's public key required.
fn signed_cases(cases: &mut Vec<Case>) {
    let key = SecretSpec::Key(TESTKIT_KEY);
    let me = testkit_signer(0x5e).verifying_key();
    let public = me.ed25519_bytes().unwrap();
    let other = testkit_signer(0x5f).verifying_key();
    let mut add = |name: &str, comment, expect, bytes, verify: [u8; 32]| {
        cases.push(Case {
            name: format!("signed-{name}"),
            comment,
            secret: key.clone(),
            expect,
            bytes,
            verify_with: Some(verify),
        });
    };
    let plain = plaintext(3 * CHUNK + 17);
    let file = seal_signed(&plain, 0x5e);
    let h = len_of_signed(&file);
    let stride = CHUNK + 16 + 64;
    let at = |i: usize| h + i * stride;
    let signature = "signature failure";
    add(
        "success",
        "aes-256-gcm, Ed25519: three full chunks and a short last one",
        Ok(plain.clone()),
        file.clone(),
        public,
    );
    add(
        "empty",
        "the empty file: one empty final chunk and its signature",
        Ok(Vec::new()),
        seal_signed(&[], 0x5e),
        public,
    );
    add(
        "wrong-signer",
        "signed by another key than the one required",
        Err((
            signature,
            format!(
                "signed by another key ({}), not by the given public key ({})",
                other.fingerprint(),
                me.fingerprint()
            ),
        )),
        seal_signed(&plain, 0x5f),
        public,
    );
    add(
        "unsigned",
        "a version 1 file of the same key: the signature was required (a downgrade)",
        Err((
            signature,
            format!(
                "the file is not signed (a signature by {} was required)",
                me.fingerprint()
            ),
        )),
        seal(Suite::Aes256Gcm, &key, SALT, &plain),
        public,
    );
    let mut flipped = file.clone();
    flipped[at(1) + 5] ^= 0x01;
    add(
        "chunk-flip",
        "a bit of chunk 1's ciphertext flipped: neither signature nor tag holds",
        Err((
            "payload failure",
            "chunk 1 failed authentication (damaged, reordered or from another file)".into(),
        )),
        flipped,
        public,
    );
    let mut flipped = file.clone();
    flipped[at(1) + CHUNK + 16 + 5] ^= 0x01;
    add(
        "signature-flip",
        "a bit of chunk 1's signature flipped: the tag holds, the signature does not",
        Err((
            signature,
            "chunk 1 is not signed by the file's signer (its signature was altered, or someone \
             who holds the file key rewrote it)"
                .into(),
        )),
        flipped,
        public,
    );
    // Chunk 1 rewritten by someone who holds the key (the suite's own transform, under the
    // file's header MAC), its signature kept.
    let forged = {
        let job = Encryptor::new(Key::from_bytes(TESTKIT_KEY))
            .chunk_size(chunk_size(CHUNK))
            .fixed_salt_for_tests(SALT)
            .first_job(&mut &[][..], None, Provider::default())
            .unwrap();
        let aad = &file[h - 32..h];
        let unsigned_mac = &job.header()[job.header().len() - 32..];
        assert_ne!(aad, unsigned_mac);
        let mut f = file.clone();
        let payload = payload_key_aes256gcm(&TESTKIT_KEY, &SALT);
        let mut chunk = vec![b'X'; CHUNK];
        let tag = {
            use aes_gcm::aead::{AeadInOut, KeyInit};
            let mut nonce = [0u8; 12];
            nonce[3..11].copy_from_slice(&1u64.to_be_bytes());
            aes_gcm::Aes256Gcm::new(&payload.into())
                .encrypt_inout_detached(&nonce.into(), aad, chunk.as_mut_slice().into())
                .unwrap()
        };
        f[at(1)..at(1) + CHUNK].copy_from_slice(&chunk);
        f[at(1) + CHUNK..at(1) + CHUNK + 16].copy_from_slice(&tag);
        f
    };
    add(
        "forged",
        "chunk 1 rewritten with the file key (its tag holds), the signer's signature kept",
        Err((
            signature,
            "chunk 1 is not signed by the file's signer (its signature was altered, or someone \
             who holds the file key rewrote it)"
                .into(),
        )),
        forged,
        public,
    );
    add(
        "truncated",
        "cut after chunk 1: chunk 1 was not signed as the last",
        Err(("payload failure", "file truncated after chunk 1".into())),
        file[..at(2)].to_vec(),
        public,
    );
    let mut swapped = file.clone();
    swapped[at(0)..at(1)].copy_from_slice(&file[at(1)..at(2)]);
    swapped[at(1)..at(2)].copy_from_slice(&file[at(0)..at(1)]);
    add(
        "swapped",
        "chunks 0 and 1 swapped",
        Err((
            "payload failure",
            "chunk 0 failed authentication (damaged, reordered or from another file)".into(),
        )),
        swapped,
        public,
    );
    let mut bad = file.clone();
    bad[76] = 9;
    let sum = Sha256::digest(&bad[..h - 40]);
    bad[h - 40..h - 32].copy_from_slice(&sum[..8]);
    add(
        "header-scheme",
        "the signer's scheme set to 9 (checksum recomputed)",
        Err(("header failure", "header damaged: invalid signer".into())),
        bad,
        public,
    );
    let mut bad = file.clone();
    bad[80] ^= 0x01;
    add(
        "header-key",
        "a bit of the signer's public key flipped",
        Err(("header failure", "header damaged: checksum mismatch".into())),
        bad,
        public,
    );
}

/// A version 3 file's header length (kdf 0: no recipient block).
fn len_of_signed(file: &[u8]) -> usize {
    79 + u16::from_be_bytes(file[77..79].try_into().unwrap()) as usize + 40
}

/// The AES-256-GCM payload key of a key-file container (docs/FORMAT.md, "Key schedule").
fn payload_key_aes256gcm(key: &[u8; 32], salt: &[u8; SALT_LEN]) -> [u8; 32] {
    let hk = hkdf::Hkdf::<Sha256>::new(Some(salt), key);
    let mut out = [0u8; 32];
    hk.expand(b"paracrypt v1 payload aes-256-gcm", &mut out)
        .unwrap();
    out
}

/// Version 2: files encrypted to recipients (docs/FORMAT.md, "Version 2").
fn recipient_cases(cases: &mut Vec<Case>) {
    let (me, my_public) = fixed_identity([0x01; 32]);
    let (_, their_public) = fixed_identity([0x02; 32]);
    let (stranger, _) = fixed_identity([0x03; 32]);
    let me = SecretSpec::Identity(me);
    let mut add = |name: &str, comment, secret: &SecretSpec, expect, bytes| {
        cases.push(Case {
            name: format!("recipients-{name}"),
            comment,
            secret: secret.clone(),
            expect,
            bytes,
            verify_with: None,
        });
    };
    let plain = plaintext(3 * CHUNK + 17);
    let one = seal_to(Suite::Aes256Gcm, &[my_public], &plain);
    let two = seal_to(Suite::ChaCha20Poly1305, &[their_public, my_public], &plain);
    add(
        "success",
        "aes-256-gcm to one X25519 recipient",
        &me,
        Ok(plain.clone()),
        one.clone(),
    );
    add(
        "second-of-two",
        "chacha20-poly1305 to two recipients, opened by the second",
        &me,
        Ok(plain.clone()),
        two.clone(),
    );
    add(
        "empty",
        "the empty file, to one recipient",
        &me,
        Ok(Vec::new()),
        seal_to(Suite::Aes256Gcm, &[my_public], &[]),
    );
    let header = "header failure";
    let invalid = |field: &str| Err((header, format!("header damaged: invalid {field}")));
    add(
        "wrong-identity",
        "no stanza opens with this identity",
        &SecretSpec::Identity(stranger),
        Err((
            header,
            "no identity matches this file; it was encrypted to 2 recipients".into(),
        )),
        two.clone(),
    );
    add(
        "key-given",
        "a key for a file encrypted to recipients",
        &SecretSpec::Key(TESTKIT_KEY),
        Err((
            header,
            "this file was encrypted with public keys (decrypt it with an identity)".into(),
        )),
        one.clone(),
    );
    add(
        "identity-given-key-file",
        "an identity for a key-file file (version 1)",
        &me,
        Err((header, "this file was encrypted with a key file".into())),
        seal(
            Suite::Aes256Gcm,
            &SecretSpec::Key(TESTKIT_KEY),
            SALT,
            &plain,
        ),
    );
    let len = HEADER_LEN + u32::from_be_bytes(one[16..20].try_into().unwrap()) as usize;
    let mut zero = one.clone();
    zero[16..20].copy_from_slice(&0u32.to_be_bytes());
    add(
        "block-length-zero",
        "a recipient block of 0 bytes",
        &me,
        invalid("recipient block length"),
        zero,
    );
    let mut over = one.clone();
    over[16..20].copy_from_slice(&((1u32 << 20) + 1).to_be_bytes());
    add(
        "block-length-over-limit",
        "a recipient block of 1 MiB + 1 byte",
        &me,
        invalid("recipient block length"),
        over,
    );
    add(
        "truncated-header",
        "cut inside the recipient block",
        &me,
        Err((header, "header damaged: file shorter than a header".into())),
        one[..len - 50].to_vec(),
    );
    let mut damaged = one.clone();
    damaged[80] ^= 0x01;
    add(
        "checksum",
        "a bit of the recipient block flipped",
        &me,
        Err((header, "header damaged: checksum mismatch".into())),
        damaged,
    );
    add(
        "reserved",
        "a reserved byte set (checksum recomputed)",
        &me,
        invalid("key derivation"),
        with_v2_header(&one, |h| h[25] = 1),
    );
    add(
        "kdf",
        "version 2 with kdf 0 (checksum recomputed)",
        &me,
        invalid("key derivation"),
        with_v2_header(&one, |h| h[11] = 0),
    );
    add(
        "block-malformed",
        "the stanza's arrow replaced (checksum recomputed)",
        &me,
        invalid("recipient block"),
        with_v2_header(&one, |h| h[76] = b'='),
    );
    // Two stanzas of the same length swapped: each still opens, so the key check passes and
    // the header MAC is what catches the edit.
    let block = &two[76..len_of(&two) - 40];
    let half = block.len() / 2;
    let swapped = with_v2_header(&two, |h| {
        let (a, b) = block.split_at(half);
        h[76..76 + half].copy_from_slice(b);
        h[76 + half..76 + 2 * half].copy_from_slice(a);
    });
    add(
        "stanzas-swapped",
        "the two stanzas swapped (checksum recomputed)",
        &me,
        Err((header, "header damaged: authentication failed".into())),
        swapped,
    );
    let mut flipped = one.clone();
    flipped[len + 5] ^= 0x01;
    add(
        "body-chunk0",
        "a bit of chunk 0 flipped",
        &me,
        Err((
            "payload failure",
            "chunk 0 failed authentication (damaged, reordered or from another file)".into(),
        )),
        flipped,
    );
}

/// A version 2 file's header length.
fn len_of(file: &[u8]) -> usize {
    HEADER_LEN + u32::from_be_bytes(file[16..20].try_into().unwrap()) as usize
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
    if let Some(public) = &case.verify_with {
        text.push_str(&format!("verify-with: ed25519 {}\n", hex::encode(public)));
    }
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

/// The format failure kind a vector's `expect:` line names, from the error's variant.
fn kind(err: &Error) -> &'static str {
    match err {
        Error::NotAContainer
        | Error::UnsupportedVersion(_)
        | Error::Header(_)
        | Error::WrongSecretKind { .. }
        | Error::WrongKey
        | Error::NoIdentityMatches { .. }
        | Error::TruncatedAfterHeader => "header failure",
        Error::ChunkAuth { .. }
        | Error::TruncatedAfter { .. }
        | Error::TrailingData { .. }
        | Error::Truncated { .. } => "payload failure",
        Error::WrongSigner { .. } | Error::Unsigned { .. } | Error::ChunkSignature { .. } => {
            "signature failure"
        }
        other => panic!("not a format failure: {other}"),
    }
}

/// The chunk a payload failure names: a streaming reader has written exactly the chunks
/// before it.
fn failing_chunk(err: &Error) -> u64 {
    match *err {
        Error::ChunkAuth { index }
        | Error::ChunkSignature { index }
        | Error::TruncatedAfter { index }
        | Error::TrailingData { index }
        | Error::Truncated { index } => index,
        _ => 0,
    }
}

/// One way of decrypting a whole file: the plaintext or the error, and for the stream the
/// output written (before the error, if any).
type DecryptPath = fn(&Runner, &Decryptor, &[u8]) -> (Result<Vec<u8>, Error>, Option<Vec<u8>>);

/// Every decryption path, each at a thread count of its own.
fn paths() -> [(&'static str, usize, DecryptPath); 5] {
    [
        ("memory", 1, |r, d, body| (r.vec(d, body), None)),
        ("memory", 3, |r, d, body| (r.vec(d, body), None)),
        ("stream", 2, |r, d, body| {
            let mut out = Vec::new();
            let result = r.clone().window(1).stream(d, &mut &body[..], &mut out);
            (result.map(|_| out.clone()), Some(out))
        }),
        ("file to file", 3, |r, d, body| {
            let (input, output) = (temp_with(body), tempfile::tempfile().unwrap());
            let result = r.file(d, &input, &output);
            (result.map(|_| read_back(output)), None)
        }),
        ("whole range", 2, |r, d, body| {
            let mut out = Vec::new();
            let result = r.range(d, &temp_with(body), 0, u64::MAX, &mut out);
            (result.map(|_| out), None)
        }),
    ]
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
            ("identity", text) => SecretSpec::Identity(text.to_string()),
            other => panic!("unknown secret {other:?}"),
        };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let expect = get("expect").unwrap();
        let routes = Provider::ALL
            .iter()
            .flat_map(|&provider| paths().map(|path| (provider, path)));
        for (provider, (route, threads, decrypt)) in routes {
            let mut decryptor = Decryptor::new(secret.secret());
            if let Some(public) = get("verify-with") {
                let hex_key = public.strip_prefix("ed25519 ").unwrap();
                let field = hex::decode(hex_key).unwrap();
                decryptor = decryptor
                    .verify_with(VerifyingKey::from_field(Scheme::Ed25519, &field).unwrap());
            }
            let runner = Runner::new().provider(provider);
            let (result, streamed) = with_threads(threads, || decrypt(&runner, &decryptor, body));
            let at = format!("{name} ({route}, {threads} threads, {provider})");
            match expect {
                "success" => {
                    let plain = result.unwrap_or_else(|e| panic!("{at}: {e}"));
                    let got = format!(
                        "{} bytes, sha256 {}",
                        plain.len(),
                        hex::encode(Sha256::digest(&plain))
                    );
                    assert_eq!(got, get("plaintext").unwrap(), "{at}");
                }
                "header failure" | "payload failure" | "signature failure" => {
                    let err = result.err().unwrap_or_else(|| panic!("{at}: no error"));
                    assert_eq!(err.to_string(), get("error").unwrap(), "{at}");
                    assert_eq!(kind(&err), expect, "{at}: {err}");
                    // A stream has written only the verified chunks before the failing one
                    // (every testkit plaintext is a prefix of `plaintext(n)`).
                    if let Some(streamed) = streamed {
                        let verified = failing_chunk(&err) as usize * CHUNK;
                        assert!(
                            streamed == plaintext(verified),
                            "{at}: wrote {} bytes before the error",
                            streamed.len()
                        );
                    }
                }
                other => panic!("{name}: unknown expectation {other}"),
            }
        }
        count += 1;
    }
    assert!(count > 100, "only {count} testkit files");
}
