//! Every suite round-trips every boundary size on every driver at any thread count, and with
//! a fixed salt the bytes do not depend on threads or window.

use std::io::{Read, Write};

use paracrypt_core::Runner;
use paracrypt_core::container::{Decryptor, Encryptor, HEADER_LEN, Secret, Suite};

use super::{SALT, chunk_size, data, key, read_back, temp_with, with_threads};

const CHUNK: usize = 4096;

fn sizes() -> [usize; 7] {
    [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 1, 5 * CHUNK]
}

fn encryptor(suite: Suite) -> Encryptor {
    Encryptor::new(key())
        .suite(suite)
        .chunk_size(chunk_size(CHUNK))
}

#[test]
fn every_suite_and_size_round_trips_across_thread_counts() {
    for &suite in Suite::ALL {
        for len in sizes() {
            let plain = data(len, len as u32);
            for (enc_threads, dec_threads) in [(1, 3), (2, 1), (3, 2)] {
                let sealed =
                    with_threads(enc_threads, || Runner::new().vec(&encryptor(suite), &plain))
                        .unwrap();
                let opened = with_threads(dec_threads, || {
                    Runner::new().vec(&Decryptor::new(key()), &sealed)
                })
                .unwrap();
                assert!(
                    opened == plain,
                    "{suite} {len} bytes, {enc_threads}→{dec_threads} threads"
                );
            }
        }
    }
}

#[test]
fn sealed_sizes_follow_from_the_chunk_size() {
    for &suite in Suite::ALL {
        for len in sizes() {
            let sealed = Runner::new().vec(&encryptor(suite), &data(len, 1)).unwrap();
            let full = len / CHUNK;
            let tail = len % CHUNK;
            let chunks = if len == 0 { 1 } else { len.div_ceil(CHUNK) };
            let expected = match suite.cbc_block() {
                // Every CBC chunk is padded: a full one by a whole block.
                Some(b) => {
                    let last = if tail == 0 && len > 0 { CHUNK } else { tail };
                    let full_chunks = chunks - 1;
                    full_chunks * (CHUNK + b) + (last / b + 1) * b + chunks * suite.tag_len()
                }
                None => len + chunks * suite.tag_len(),
            };
            let _ = full;
            assert_eq!(sealed.len(), HEADER_LEN + expected, "{suite} {len}");
        }
    }
}

#[test]
fn file_stream_writer_and_memory_give_the_same_bytes() {
    for &suite in Suite::ALL {
        for len in sizes() {
            let plain = data(len, 3);
            let enc = encryptor(suite).fixed_salt_for_tests(SALT);
            let reference = with_threads(1, || Runner::new().vec(&enc, &plain)).unwrap();
            for threads in [1, 2, 3] {
                for window in [0, 1, 3] {
                    let runner = Runner::new().window(window);
                    // File to file.
                    let (src, dst) = (temp_with(&plain), temp_with(&[0xee; 100_000]));
                    with_threads(threads, || runner.file(&enc, &src, &dst)).unwrap();
                    assert!(read_back(dst) == reference, "{suite} {len} file t{threads}");
                    // Stream to stream.
                    let mut out = Vec::new();
                    with_threads(threads, || runner.stream(&enc, &mut &plain[..], &mut out))
                        .unwrap();
                    assert!(
                        out == reference,
                        "{suite} {len} stream t{threads} w{window}"
                    );
                    // Write adapter, fed in odd pieces.
                    let sealed = with_threads(threads, || {
                        let mut w = runner.writer(&enc, Vec::new()).unwrap();
                        for piece in plain.chunks(1000) {
                            w.write_all(piece).unwrap();
                        }
                        w.finish().unwrap()
                    });
                    assert!(
                        sealed == reference,
                        "{suite} {len} writer t{threads} w{window}"
                    );

                    // And back, on every driver.
                    let dec = Decryptor::new(key());
                    let (src, dst) = (temp_with(&reference), temp_with(&[0xee; 100_000]));
                    with_threads(threads, || runner.file(&dec, &src, &dst)).unwrap();
                    assert!(
                        read_back(dst) == plain,
                        "{suite} {len} decrypt file t{threads}"
                    );
                    let mut out = Vec::new();
                    with_threads(threads, || {
                        runner.stream(&dec, &mut &reference[..], &mut out)
                    })
                    .unwrap();
                    assert!(
                        out == plain,
                        "{suite} {len} decrypt stream t{threads} w{window}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_fresh_salt_every_time() {
    let a = Runner::new()
        .vec(&encryptor(Suite::Aes256Gcm), b"same")
        .unwrap();
    let b = Runner::new()
        .vec(&encryptor(Suite::Aes256Gcm), b"same")
        .unwrap();
    assert_ne!(a, b);
    assert_ne!(a[28..60], b[28..60], "salts differ");
}

#[test]
fn passwords_round_trip_and_store_their_parameters() {
    let secret = Secret::password("correct horse battery staple");
    let encryptor = Encryptor::new(secret.clone()).chunk_size(chunk_size(CHUNK));
    let sealed = Runner::new().vec(&encryptor, b"secret").unwrap();
    let info = paracrypt_core::container::read_header(&mut &sealed[..]).unwrap();
    assert!(
        matches!(info.kdf, paracrypt_core::container::Kdf::Argon2id(p) if p.m_cost == 19 * 1024 && p.t_cost == 2)
    );
    assert_eq!(
        Runner::new().vec(&Decryptor::new(secret), &sealed).unwrap(),
        b"secret"
    );
}

#[test]
fn random_access_reads_only_what_it_needs() {
    for &suite in Suite::ALL {
        let plain = data(10 * CHUNK + 123, 5);
        let sealed = Runner::new().vec(&encryptor(suite), &plain).unwrap();
        let file = temp_with(&sealed);
        let dec = Decryptor::new(key());
        let c = CHUNK as u64;
        for (offset, len) in [
            (0u64, 1u64),
            (0, 10 * c + 123),
            (c - 1, 2),
            (5 * c + 7, 3 * c),
            (10 * c + 100, 1000),
            (10 * c + 123, 5),
            (17, 0),
        ] {
            let mut out = Vec::new();
            with_threads(2, || {
                Runner::new().range(&dec, &file, offset, len, &mut out)
            })
            .unwrap();
            let from = (offset as usize).min(plain.len());
            let to = (offset + len).min(plain.len() as u64) as usize;
            assert!(out == plain[from..to], "{suite} range {offset}+{len}");
        }
        let err = Runner::new()
            .range(&dec, &file, 10 * CHUNK as u64 + 124, 1, &mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().contains("beyond the end"), "{suite}: {err}");

        // A damaged chunk outside the range does not matter; inside it, it does.
        let mut damaged = sealed.clone();
        let chunk3 = HEADER_LEN + 3 * suite.sealed_chunk_len(CHUNK) + 10;
        damaged[chunk3] ^= 1;
        let file = temp_with(&damaged);
        let mut out = Vec::new();
        Runner::new()
            .range(&dec, &file, 0, CHUNK as u64, &mut out)
            .unwrap();
        assert_eq!(out, plain[..CHUNK]);
        let err = Runner::new()
            .range(&dec, &file, 3 * CHUNK as u64, 1, &mut Vec::new())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "chunk 3 failed authentication (damaged, reordered or from another file)"
        );
    }
}

/// A `Write` that keeps what reached it where the test can look while it runs.
#[derive(Clone, Default)]
struct SharedSink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for SharedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_writer_holds_at_most_one_window_of_chunks() {
    // 64 chunks through a window of 2, written a chunk at a time: after every write, all but
    // the last two chunks have been sealed and handed on, so memory does not grow with the
    // input.
    let suite = Suite::ChaCha20Poly1305;
    let window = 2;
    let plain = data(64 * CHUNK + 5, 11);
    let sink = SharedSink::default();
    let sealed = with_threads(2, || {
        let mut w = Runner::new()
            .window(window)
            .writer(&encryptor(suite), sink.clone())
            .unwrap();
        for (i, piece) in plain.chunks(CHUNK).enumerate() {
            w.write_all(piece).unwrap();
            let handed_on =
                (sink.0.lock().unwrap().len() - HEADER_LEN) / suite.sealed_chunk_len(CHUNK);
            let held = i + 1 - handed_on;
            assert!(held <= window, "after chunk {i}: {held} chunks held");
        }
        w.finish().unwrap();
        sink.0.lock().unwrap().clone()
    });
    assert_eq!(
        Runner::new().vec(&Decryptor::new(key()), &sealed).unwrap(),
        plain
    );
}

#[test]
fn the_stream_decryptor_holds_at_most_two_windows_of_chunks() {
    // Every read is checked against what has been written: a reader that takes in the whole
    // input before writing would hold 64 chunks.
    let suite = Suite::Aes256Gcm;
    let window = 2;
    let plain = data(64 * CHUNK + 5, 12);
    let sealed = Runner::new().vec(&encryptor(suite), &plain).unwrap();
    let sink = SharedSink::default();
    let mut source = Watched {
        rest: &sealed[..],
        taken: 0,
        check: |taken: usize| {
            let sealed_chunk = suite.sealed_chunk_len(CHUNK);
            let read = taken.saturating_sub(HEADER_LEN).div_ceil(sealed_chunk);
            let written = sink.0.lock().unwrap().len() / CHUNK;
            // Two waves, and the byte read ahead to learn whether a chunk is the last.
            assert!(
                read <= written + 2 * window + 1,
                "{read} chunks read, {written} written"
            );
        },
    };
    let mut out = sink.clone();
    with_threads(2, || {
        Runner::new()
            .window(window)
            .stream(&Decryptor::new(key()), &mut source, &mut out)
    })
    .unwrap();
    assert!(*sink.0.lock().unwrap() == plain);
}

/// A reader that calls `check` with the bytes taken so far before every read.
struct Watched<'a, F> {
    rest: &'a [u8],
    taken: usize,
    check: F,
}

impl<F: FnMut(usize)> Read for Watched<'_, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (self.check)(self.taken);
        let n = self.rest.read(buf)?;
        self.taken += n;
        Ok(n)
    }
}
