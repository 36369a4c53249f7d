//! Every raw cipher on every provider: the same bytes at every size class and at 1 and 3
//! threads, in memory, file to file and as a stream, and each provider decrypts the other's.

use paracrypt_core::Runner;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};

use super::{chunk_size, cipher, data, process_on, with_threads};

const CHUNK: usize = 4096;

/// Sizes around the chunk and block boundaries, and a few chunks and a bit.
const SIZES: &[usize] = &[
    0,
    1,
    7,
    8,
    15,
    16,
    17,
    CHUNK - 1,
    CHUNK,
    CHUNK + 1,
    3 * CHUNK + 24,
];

fn encrypt(c: &RawCipher, plain: &[u8], threads: usize, provider: Provider) -> Vec<u8> {
    let mut data = plain.to_vec();
    with_threads(threads, || {
        process_on(
            c,
            Direction::Encrypt,
            &mut data,
            chunk_size(CHUNK),
            provider,
        )
    })
    .unwrap();
    data
}

#[test]
fn every_raw_cipher_gives_the_same_bytes_on_every_provider() {
    for &name in RawCipherName::ALL {
        for &len in SIZES {
            let plain = data(len, len as u32 ^ 0x77);
            {
                let mut outputs = Vec::new();
                for &provider in Provider::ALL {
                    for threads in [1, 3] {
                        let sealed = encrypt(&cipher(name), &plain, threads, provider);
                        outputs.push((provider, threads, sealed));
                    }
                }
                let (_, _, first) = &outputs[0];
                for (provider, threads, out) in &outputs {
                    assert_eq!(out, first, "{name} {len} bytes on {provider} at {threads}t");
                }
                // Each provider decrypts what the other encrypted.
                for &provider in Provider::ALL {
                    let mut back = first.clone();
                    with_threads(3, || {
                        let c = cipher(name);
                        process_on(
                            &c,
                            Direction::Decrypt,
                            &mut back,
                            chunk_size(CHUNK),
                            provider,
                        )
                    })
                    .unwrap();
                    assert_eq!(back, plain, "{name} {len} bytes decrypted on {provider}");
                }
            }
        }
    }
}

#[test]
fn streams_and_files_agree_across_providers() {
    let dir = tempfile::tempdir().unwrap();
    for &name in RawCipherName::ALL {
        let plain = data(3 * CHUNK + 24, 9);
        let input = dir.path().join("in");
        std::fs::write(&input, &plain).unwrap();
        let expected = encrypt(&cipher(name), &plain, 1, Provider::RustCrypto);
        for &provider in Provider::ALL {
            let (c, runner) = (cipher(name), Runner::new().provider(provider));
            let out = dir.path().join(format!("out-{provider}"));
            let (i, o) = (
                std::fs::File::open(&input).unwrap(),
                std::fs::File::create(&out).unwrap(),
            );
            with_threads(3, || {
                let recipe = c.recipe(Direction::Encrypt, chunk_size(CHUNK));
                runner.file(&recipe, &i, &o)
            })
            .unwrap();
            assert_eq!(
                std::fs::read(&out).unwrap(),
                expected,
                "{name} file on {provider}"
            );
            let mut sink = Vec::new();
            with_threads(3, || {
                let recipe = c.recipe(Direction::Encrypt, chunk_size(CHUNK));
                runner.stream(&recipe, &mut &plain[..], &mut sink)
            })
            .unwrap();
            assert_eq!(sink, expected, "{name} stream on {provider}");
        }
    }
}

/// In memory, every chunk goes from the input straight into its output slot (one pass: the
/// provider's out-of-place calls); in place, through one buffer. Both give the same bytes for
/// every raw cipher on every provider: from an input that starts at an odd address, with
/// chunks of an odd number of AES blocks, and a short last chunk. (CTR at offsets inside a
/// block is the provider tests' part: chunk sizes are whole blocks.)
#[test]
fn one_pass_in_memory_equals_in_place_on_every_provider() {
    for &name in RawCipherName::ALL {
        for chunk in [CHUNK, 1008] {
            for len in [0, 1, 17, chunk - 1, chunk, 3 * chunk + 24, 3 * chunk + 29] {
                let stored = [&[0x42][..], &data(len, len as u32 ^ 0x1d)].concat();
                let plain = &stored[1..];
                for &provider in Provider::ALL {
                    let at = format!("{name}, chunks of {chunk}, {len} bytes on {provider}");
                    let (c, runner) = (cipher(name), Runner::new().provider(provider));
                    let mut in_place = plain.to_vec();
                    let size = chunk_size(chunk);
                    if with_threads(3, || {
                        process_on(&c, Direction::Encrypt, &mut in_place, size, provider)
                    })
                    .is_err()
                    {
                        // A partial block without padding: refused the same way in memory.
                        let recipe = c.recipe(Direction::Encrypt, chunk_size(chunk));
                        assert!(runner.vec(&recipe, plain).is_err(), "{at}");
                        continue;
                    }
                    for threads in [1, 3] {
                        let sealed = with_threads(threads, || {
                            let recipe = c.recipe(Direction::Encrypt, chunk_size(chunk));
                            runner.vec(&recipe, plain)
                        })
                        .unwrap();
                        assert!(sealed == in_place, "{at}, {threads} threads: encryption");
                        let stored = [&[0x42][..], &sealed].concat();
                        let opened = with_threads(threads, || {
                            let recipe = c.recipe(Direction::Decrypt, chunk_size(chunk));
                            runner.vec(&recipe, &stored[1..])
                        })
                        .unwrap();
                        assert!(opened == plain, "{at}, {threads} threads: decryption");
                    }
                }
            }
        }
    }
}
