//! The container on every compiled provider (aws-lc, OpenSSL and RustCrypto, so only in a build
//! with more than one): every suite at every size class and at 1 and 3 threads gives the same
//! file on each for the same key and header, each opens the others' on every driver, a damaged file gets the same
//! diagnosis on each, and a chunk that fails to open is left exactly as it was (the contract
//! the diagnosis stands on: it opens the same bytes again as the last chunk, or shorter).

use std::io::Write;

use age::secrecy::ExposeSecret;
use paracrypt_core::container::{Decryptor, Encryptor, HEADER_LEN, Suite};
use paracrypt_core::engine::ChunkCtx;
use paracrypt_core::provider::Provider;
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::{Error, Recipe, Runner};

use super::{SALT, chunk_size, data, key, read_back, temp_with, with_threads};

const CHUNK: usize = 4096;
/// The size classes: empty, one byte, around one chunk, several chunks and a bit.
const SIZES: [usize; 6] = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5];
/// Every compiled provider.
const ALL: &[Provider] = Provider::ALL;
/// A C backend (the first compiled): the sealer of the damage tests.
const SEALER: Provider = Provider::ALL[0];

fn encryptor(suite: Suite) -> Encryptor {
    Encryptor::new(key())
        .suite(suite)
        .chunk_size(chunk_size(CHUNK))
        .fixed_salt_for_tests(SALT)
}

/// A runner on `provider`.
fn on(provider: Provider) -> Runner {
    Runner::new().provider(provider)
}

/// Where chunk `index` starts in a version 1 file of `suite`.
fn chunk_at(suite: Suite, index: usize) -> usize {
    HEADER_LEN + index * suite.sealed_chunk_len(CHUNK)
}

#[test]
fn every_suite_gives_the_same_file_on_every_provider_and_each_opens_the_others() {
    for &suite in Suite::ALL {
        for (n, len) in SIZES.into_iter().enumerate() {
            let plain = data(len, n as u32 + 40);
            for threads in [1, 3] {
                let at = format!("{suite}, {len} bytes, {threads} threads");
                let files: Vec<Vec<u8>> = ALL
                    .iter()
                    .map(|&p| {
                        with_threads(threads, || on(p).vec(&encryptor(suite), &plain)).unwrap()
                    })
                    .collect();
                for (sealed, &sealer) in files.iter().zip(ALL) {
                    assert!(*sealed == files[0], "{at}: {sealer}'s file differs");
                    for &opener in ALL {
                        let opened = with_threads(threads, || {
                            on(opener).vec(&Decryptor::new(key()), sealed)
                        })
                        .unwrap_or_else(|e| panic!("{at}, opened on {opener}: {e}"));
                        assert!(
                            opened == plain,
                            "{at}, sealed on {sealer}, opened on {opener}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn every_driver_gives_the_same_bytes_on_every_provider() {
    let plain = data(3 * CHUNK + 5, 7);
    for &suite in Suite::ALL {
        let expected = (on(Provider::RustCrypto).vec(&encryptor(suite), &plain)).unwrap();
        for &provider in ALL {
            let at = format!("{suite} on {provider}");
            let (e, runner) = (encryptor(suite), on(provider));
            let output = tempfile::tempfile().unwrap();
            with_threads(3, || runner.file(&e, &temp_with(&plain), &output)).unwrap();
            assert!(read_back(output) == expected, "{at}: file to file");
            let mut streamed = Vec::new();
            with_threads(2, || {
                (runner.clone().window(1)).stream(&e, &mut &plain[..], &mut streamed)
            })
            .unwrap();
            assert!(streamed == expected, "{at}: stream");
            let mut writer = runner.writer(&e, Vec::new()).unwrap();
            for piece in plain.chunks(1000) {
                writer.write_all(piece).unwrap();
            }
            assert!(writer.finish().unwrap() == expected, "{at}: writer");

            let d = Decryptor::new(key());
            let output = tempfile::tempfile().unwrap();
            with_threads(3, || runner.file(&d, &temp_with(&expected), &output)).unwrap();
            assert!(read_back(output) == plain, "{at}: decrypt file to file");
            let mut opened = Vec::new();
            with_threads(2, || {
                (runner.clone().window(1)).stream(&d, &mut &expected[..], &mut opened)
            })
            .unwrap();
            assert!(opened == plain, "{at}: decrypt stream");
            let mut range = Vec::new();
            (runner.range(&d, &temp_with(&expected), 5000, 3000, &mut range)).unwrap();
            assert!(range == plain[5000..8000], "{at}: range");
        }
    }
}

#[test]
fn files_to_recipients_open_on_every_provider() {
    let me = age::x25519::Identity::generate();
    let plain = data(3 * CHUNK + 5, 8);
    for &sealer in ALL {
        let mut recipients = Recipients::new();
        recipients
            .add(&me.to_public().to_string(), "recipient 1")
            .unwrap();
        let encryptor = Encryptor::new(recipients).chunk_size(chunk_size(CHUNK));
        let sealed = on(sealer).vec(&encryptor, &plain).unwrap();
        for &opener in ALL {
            let mut identities = Identities::new();
            identities
                .add_file("me.key", me.to_string().expose_secret().as_bytes())
                .unwrap();
            let opened = with_threads(3, || on(opener).vec(&Decryptor::new(identities), &sealed));
            let opened = opened.unwrap();
            assert!(opened == plain, "sealed on {sealer}, opened on {opener}");
        }
    }
}

/// Every way a file gets damaged, and the diagnosis it must get, for `suite`'s 3-chunk file of
/// `3 * CHUNK + 100` bytes (and, for appending whole chunks, a file of exactly 2 chunks).
fn damages(suite: Suite, sealed: &[u8], whole: &[u8]) -> Vec<(&'static str, Vec<u8>, Error)> {
    let c = |i| chunk_at(suite, i);
    let mut flipped = sealed.to_vec();
    flipped[c(1) + 7] ^= 1;
    let mut tag_flipped = sealed.to_vec();
    tag_flipped[c(2) - 1] ^= 0x80;
    let mut swapped = sealed.to_vec();
    swapped.copy_within(c(0)..c(1), c(1));
    vec![
        ("a flipped byte", flipped, Error::ChunkAuth { index: 1 }),
        ("a flipped tag", tag_flipped, Error::ChunkAuth { index: 1 }),
        (
            "chunk 0 copied over chunk 1",
            swapped,
            Error::ChunkAuth { index: 1 },
        ),
        (
            "cut after chunk 1",
            sealed[..c(2)].to_vec(),
            Error::TruncatedAfter { index: 1 },
        ),
        (
            "cut inside chunk 3's tag",
            sealed[..c(3) + 5].to_vec(),
            Error::Truncated { index: 3 },
        ),
        (
            "a newline appended",
            [sealed, b"\n"].concat(),
            Error::TrailingData { index: 3 },
        ),
        (
            "a whole chunk appended",
            [whole, &whole[c(0)..c(1)]].concat(),
            Error::TrailingData { index: 1 },
        ),
    ]
}

#[test]
fn damage_gets_the_same_diagnosis_on_every_provider() {
    for &suite in Suite::ALL {
        let sealed = on(SEALER).vec(&encryptor(suite), &data(3 * CHUNK + 100, 9));
        let whole = on(SEALER).vec(&encryptor(suite), &data(2 * CHUNK, 10));
        let (sealed, whole) = (sealed.unwrap(), whole.unwrap());
        for (what, bytes, expected) in damages(suite, &sealed, &whole) {
            for &provider in ALL {
                for threads in [1, 3] {
                    let at = format!("{suite}, {what}, on {provider} at {threads} threads");
                    let err =
                        with_threads(threads, || on(provider).vec(&Decryptor::new(key()), &bytes))
                            .expect_err(&at);
                    assert_eq!(err.to_string(), expected.to_string(), "{at}");
                    let mut out = Vec::new();
                    let err = with_threads(threads, || {
                        on(provider).stream(&Decryptor::new(key()), &mut &bytes[..], &mut out)
                    })
                    .expect_err(&at);
                    assert_eq!(err.to_string(), expected.to_string(), "{at}, streamed");
                }
            }
        }
    }
}

/// The open contract on every provider, for every suite (the three AEADs among them): a chunk
/// that does not open is left byte for byte as it was, after every try the diagnosis makes
/// (as itself, as the other kind of chunk, and as every shorter last chunk).
#[test]
fn a_chunk_that_fails_to_open_is_left_as_it_was() {
    for &suite in Suite::ALL {
        let sealed = on(SEALER).vec(&encryptor(suite), &data(3 * CHUNK + 100, 11));
        let sealed = sealed.unwrap();
        for &provider in ALL {
            let job = Decryptor::new(key())
                .first_job(
                    &mut &sealed[..HEADER_LEN],
                    Some(sealed.len() as u64),
                    provider,
                )
                .unwrap();
            // Chunk 1 (full) and chunk 3 (the short last one), each damaged in its ciphertext
            // and in its tag.
            for (index, is_last, start, end) in [
                (1, false, chunk_at(suite, 1), chunk_at(suite, 2)),
                (3, true, chunk_at(suite, 3), sealed.len()),
            ] {
                for damage_at in [start + 3, end - 1] {
                    let mut chunk = sealed[start..end].to_vec();
                    chunk[damage_at - start] ^= 0x20;
                    let before = chunk.clone();
                    let ctx = ChunkCtx {
                        index,
                        offset: index * CHUNK as u64,
                        chunk_size: CHUNK,
                        is_last,
                        context: &[],
                    };
                    let len = chunk.len();
                    let err = job.transform_chunk(&ctx, &mut chunk, len).unwrap_err();
                    let at = format!("{suite} on {provider}, chunk {index}, byte {damage_at}");
                    assert_eq!(
                        err.to_string(),
                        Error::ChunkAuth { index }.to_string(),
                        "{at}"
                    );
                    assert!(chunk == before, "{at}: the failed chunk was changed");
                }
            }
        }
    }
}
