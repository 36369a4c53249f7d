//! The official age test vectors (C2SP CCTV, `tests/testdata/age-cctv/`): all 143 through the
//! library's drivers (memory, stream, file), at 1 and 3 threads, on every provider. Each must
//! end in its vector's outcome class; a success must give the payload whose SHA-256 the vector
//! names, and a payload failure streamed must have released exactly the verified plaintext
//! the vector hashes (nothing past the failing chunk).

use age::secrecy::SecretString;
use paracrypt_core::Error;
use paracrypt_core::agefile::Decryptor;
use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::sha256;
use paracrypt_core::recipient::Identities;

use crate::raw::with_threads;

mod vectors;

use vectors::{Outcome, Vector, allowed, vectors};

impl Vector {
    /// The vector's secret, as paracrypt takes it.
    pub fn identities(&self) -> Identities {
        if let Some(passphrase) = &self.passphrase {
            return Identities::passphrase(SecretString::from(passphrase.clone()), None);
        }
        let mut ids = Identities::new();
        ids.add_file(&self.name, self.identities.join("\n").as_bytes())
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        ids
    }
}

/// The outcome class of an error; panics on errors no age file should cause.
pub fn class(name: &str, error: &Error) -> Outcome {
    match error {
        Error::AgeHeader(_)
        | Error::UnsupportedAgeVersion(_)
        | Error::NoIdentityMatches { .. }
        | Error::Header(_)
        | Error::WrongKey
        | Error::Kdf(_) => Outcome::Header,
        Error::Armor(_) => Outcome::Armor,
        Error::ChunkAuth { .. }
        | Error::Truncated { .. }
        | Error::TruncatedAfter { .. }
        | Error::TruncatedAfterHeader
        | Error::TrailingData { .. }
        | Error::EmptyLastChunk { .. } => Outcome::Payload,
        other => panic!("{name}: unexpected error {other:?}"),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(sha256(bytes))
}

/// Checks one run's result: `released` is what the driver wrote.
fn check(vector: &Vector, how: &str, result: Result<(), Error>, released: &[u8]) {
    let name = &vector.name;
    match result {
        Ok(()) => {
            assert_eq!(vector.expect, Outcome::Success, "{name} ({how}) decrypted");
            assert_eq!(
                Some(hex_sha256(released)),
                vector.payload,
                "{name} ({how}): payload"
            );
        }
        Err(e) => {
            let got = class(name, &e);
            assert!(
                allowed(vector, got),
                "{name} ({how}): expected {:?}, got {got:?}: {e}",
                vector.expect
            );
            assert!(!e.to_string().contains('\n'), "{name}: {e}");
            match got {
                Outcome::Payload if how.starts_with("stream") => assert_eq!(
                    Some(hex_sha256(released)),
                    vector.payload,
                    "{name} ({how}): the released plaintext"
                ),
                Outcome::Header => assert!(released.is_empty(), "{name} ({how}): released"),
                _ => {}
            }
        }
    }
}

fn run_all(vector: &Vector, provider: Provider, threads: usize) {
    let decryptor = Decryptor::new(vector.identities()).with_provider(provider);
    let how = |driver: &str| format!("{driver}, {provider:?}, {threads} threads");
    with_threads(threads, || {
        let mut out = Vec::new();
        let result = decryptor.decrypt_vec(&vector.file).map(|plain| out = plain);
        check(vector, &how("memory"), result, &out);

        let mut out = Vec::new();
        let result = decryptor
            .decrypt_stream(&mut &vector.file[..], &mut out)
            .map(drop);
        check(vector, &how("stream"), result, &out);

        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.age");
        std::fs::write(&input, &vector.file).unwrap();
        let output = std::fs::File::create(dir.path().join("out")).unwrap();
        let result = decryptor
            .decrypt_file(&std::fs::File::open(&input).unwrap(), &output)
            .map(drop);
        let out = std::fs::read(dir.path().join("out")).unwrap();
        // A file driver may leave written chunks behind on failure (the CLI's output is a
        // temporary file that is then removed): only a success is compared.
        let released = if result.is_ok() { &out[..] } else { &[][..] };
        check(vector, &how("file"), result, released);
    });
}

#[test]
fn there_are_143_vectors_of_every_class() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 143);
    for class in [
        Outcome::Success,
        Outcome::Header,
        Outcome::Payload,
        Outcome::Armor,
    ] {
        assert!(vectors.iter().any(|v| v.expect == class), "{class:?}");
    }
}

#[test]
fn every_vector_in_memory_streamed_and_file_to_file() {
    let vectors = vectors();
    for vector in &vectors {
        for &provider in Provider::ALL {
            for threads in [1, 3] {
                run_all(vector, provider, threads);
            }
        }
    }
}
