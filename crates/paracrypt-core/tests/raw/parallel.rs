//! Same answer at any parallelism: every driver (in memory, file to file, stream), any thread
//! count and any chunk size give the bytes of a one-thread run, for every cipher both ways.

use std::io::{Read, Seek, Write};

use paracrypt_core::Runner;
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};

use super::{chunk_size, cipher, data, process, with_threads};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// The reference: one thread, one chunk for the whole input.
fn reference(cipher: &RawCipher, direction: Direction, input: &[u8]) -> Vec<u8> {
    let mut buf = input.to_vec();
    let chunk = (input.len().div_ceil(16) * 16).clamp(16, 1 << 30);
    with_threads(1, || {
        process(cipher, direction, &mut buf, chunk_size(chunk))
    })
    .unwrap();
    buf
}

fn in_memory(
    cipher: &RawCipher,
    direction: Direction,
    input: &[u8],
    chunk: usize,
    threads: usize,
) -> Vec<u8> {
    let mut buf = input.to_vec();
    with_threads(threads, || {
        process(cipher, direction, &mut buf, chunk_size(chunk))
    })
    .unwrap();
    buf
}

fn file_to_file(
    cipher: &RawCipher,
    direction: Direction,
    input: &[u8],
    chunk: usize,
    threads: usize,
) -> Vec<u8> {
    let mut src = tempfile::tempfile().unwrap();
    src.write_all(input).unwrap();
    let mut dst = tempfile::tempfile().unwrap();
    // A stale longer output must be cut to the real length.
    dst.write_all(&vec![0xee; input.len() + 100]).unwrap();
    let written = with_threads(threads, || {
        Runner::new().file(&cipher.recipe(direction, chunk_size(chunk)), &src, &dst)
    })
    .unwrap();
    let mut out = Vec::new();
    dst.rewind().unwrap();
    dst.read_to_end(&mut out).unwrap();
    assert_eq!(written, out.len() as u64);
    out
}

/// From a file into an output that takes bytes only in order (a pipe, `/dev/null`).
fn file_to_writer(
    cipher: &RawCipher,
    direction: Direction,
    input: &[u8],
    chunk: usize,
    threads: usize,
) -> Vec<u8> {
    let mut src = tempfile::tempfile().unwrap();
    src.write_all(input).unwrap();
    let mut out = Vec::new();
    let written = with_threads(threads, || {
        let recipe = cipher.recipe(direction, chunk_size(chunk));
        Runner::new().file_to_writer(&recipe, &src, &mut out)
    })
    .unwrap();
    assert_eq!(written, out.len() as u64);
    out
}

/// A reader that hands out data in uneven pieces, as pipes do.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.step = (self.step * 7 + 3) % 5000 + 1;
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn streamed(
    cipher: &RawCipher,
    direction: Direction,
    input: &[u8],
    chunk: usize,
    threads: usize,
    window: usize,
) -> Vec<u8> {
    let mut reader = Trickle {
        data: input,
        step: 1,
    };
    let mut out = Vec::new();
    let written = with_threads(threads, || {
        let recipe = cipher.recipe(direction, chunk_size(chunk));
        Runner::new()
            .window(window)
            .stream(&recipe, &mut reader, &mut out)
    })
    .unwrap();
    assert_eq!(written, out.len() as u64);
    out
}

/// Input for `direction`: plaintext, or a valid ciphertext of it.
fn input_for(cipher: &RawCipher, direction: Direction, len: usize) -> Vec<u8> {
    let plain = data(len, len as u32);
    match direction {
        Direction::Encrypt => plain,
        Direction::Decrypt => reference(cipher, Direction::Encrypt, &plain),
    }
}

fn is_slow(name: RawCipherName) -> bool {
    !name.to_string().starts_with("aes")
}

#[test]
fn every_cipher_every_thread_count_in_memory() {
    for &name in RawCipherName::ALL {
        let cipher = cipher(name);
        let (chunks, len): (&[usize], usize) = if is_slow(name) {
            (&[4 * KIB, 64 * KIB], 200 * KIB + 5)
        } else {
            (&[4 * KIB, 64 * KIB, MIB, 4 * MIB], 9 * MIB + 5)
        };
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            let input = input_for(&cipher, direction, len);
            let expected = reference(&cipher, direction, &input);
            for &chunk in chunks {
                for threads in [1, 2, 3, 8] {
                    let got = in_memory(&cipher, direction, &input, chunk, threads);
                    assert!(
                        got == expected,
                        "{name} {direction:?} chunk {chunk} threads {threads}"
                    );
                }
            }
        }
    }
}

#[test]
fn file_and_stream_drivers_match_memory() {
    for &name in RawCipherName::ALL {
        let cipher = cipher(name);
        let len = 100 * KIB + 13;
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            let input = input_for(&cipher, direction, len);
            let expected = reference(&cipher, direction, &input);
            for threads in [1, 3] {
                for chunk in [4 * KIB, 48 * KIB] {
                    let file = file_to_file(&cipher, direction, &input, chunk, threads);
                    assert!(
                        file == expected,
                        "{name} {direction:?} file, chunk {chunk} threads {threads}"
                    );
                    let ordered = file_to_writer(&cipher, direction, &input, chunk, threads);
                    assert!(
                        ordered == expected,
                        "{name} {direction:?} file to a writer, chunk {chunk} threads {threads}"
                    );
                    for window in [0, 1, 5] {
                        let stream = streamed(&cipher, direction, &input, chunk, threads, window);
                        assert!(
                            stream == expected,
                            "{name} {direction:?} stream, chunk {chunk} threads {threads} window {window}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn boundary_sizes_round_trip_on_every_driver() {
    let chunk = 4 * KIB;
    for &name in RawCipherName::ALL {
        let cipher = cipher(name);
        let bs = name.algorithm().block_size();
        for len in [
            0,
            1,
            bs - 1,
            bs,
            bs + 1,
            chunk - 1,
            chunk,
            chunk + 1,
            3 * chunk + 7,
        ] {
            let plain = data(len, 7);
            let sealed = reference(&cipher, Direction::Encrypt, &plain);
            for threads in [1, 2] {
                assert_eq!(
                    in_memory(&cipher, Direction::Encrypt, &plain, chunk, threads),
                    sealed,
                    "{name} len {len}"
                );
                assert_eq!(
                    file_to_file(&cipher, Direction::Encrypt, &plain, chunk, threads),
                    sealed,
                    "{name} len {len}"
                );
                assert_eq!(
                    streamed(&cipher, Direction::Encrypt, &plain, chunk, threads, 0),
                    sealed,
                    "{name} len {len}"
                );
                assert_eq!(
                    file_to_writer(&cipher, Direction::Encrypt, &plain, chunk, threads),
                    sealed,
                    "{name} len {len}"
                );
                assert_eq!(
                    in_memory(&cipher, Direction::Decrypt, &sealed, chunk, threads),
                    plain,
                    "{name} len {len}"
                );
                assert_eq!(
                    file_to_file(&cipher, Direction::Decrypt, &sealed, chunk, threads),
                    plain,
                    "{name} len {len}"
                );
                assert_eq!(
                    streamed(&cipher, Direction::Decrypt, &sealed, chunk, threads, 0),
                    plain,
                    "{name} len {len}"
                );
                assert_eq!(
                    file_to_writer(&cipher, Direction::Decrypt, &sealed, chunk, threads),
                    plain,
                    "{name} len {len}"
                );
            }
        }
    }
}

#[test]
fn unpadded_modes_preserve_length() {
    for &name in RawCipherName::ALL {
        let cipher = cipher(name).with_padding(false);
        let len = 64 * KIB;
        let plain = data(len, 3);
        let sealed = in_memory(&cipher, Direction::Encrypt, &plain, 4 * KIB, 2);
        assert_eq!(sealed.len(), len, "{name}");
        assert_ne!(sealed, plain);
        assert_eq!(
            in_memory(&cipher, Direction::Decrypt, &sealed, 16 * KIB, 3),
            plain,
            "{name}"
        );
    }
}
