//! Reading a file that holds a secret (a key file, a password file, an identity file, a signing
//! key) into memory that is zeroed after use.
//!
//! `Zeroizing<Vec<u8>>` zeroes its buffer when dropped, but a `Vec` filled by `read_to_end`
//! grows by reallocation, and each buffer it outgrew is freed with the bytes read so far still
//! in it. [`read`] sizes its buffer from the file's length and, when a file turns out longer
//! (a pipe, a file that grew), moves to a larger one itself and zeroes the one it leaves, so
//! that no copy of the secret is freed unzeroed.
//!
//! ```
//! use std::io::Write;
//!
//! let mut file = tempfile::NamedTempFile::new()?;
//! file.write_all(b"AGE-SECRET-KEY-1...")?;
//! let bytes = paracrypt_core::secret_file::read(file.path(), 64 * 1024)?;
//! assert_eq!(&bytes[..], b"AGE-SECRET-KEY-1...");
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{ErrorKind, Read};
use std::path::Path;

use zeroize::Zeroizing;

/// The buffer a file whose length is unknown (a pipe) starts with.
const FIRST_GUESS: usize = 4096;

/// The bytes of the file at `path`, at most `max + 1` of them (so that a caller can tell a
/// file larger than `max`, and refuse it, without reading more), in a buffer zeroed when
/// dropped; no buffer holding any of them is freed unzeroed.
///
/// # Errors
///
/// The file cannot be opened or read.
pub fn read(path: &Path, max: u64) -> std::io::Result<Zeroizing<Vec<u8>>> {
    let file = std::fs::File::open(path)?;
    let limit = usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX);
    // One more byte than the file's length, so that its end is seen without growing.
    let hint = file
        .metadata()
        .ok()
        .filter(|meta| meta.is_file())
        .and_then(|meta| usize::try_from(meta.len()).ok())
        .map_or(FIRST_GUESS, |len| len.saturating_add(1));
    read_from(file.take(limit as u64), hint.clamp(1, limit))
}

/// Reads `reader` to its end into a buffer of `capacity` bytes to begin with, doubling it as
/// needed.
fn read_from(mut reader: impl Read, capacity: usize) -> std::io::Result<Zeroizing<Vec<u8>>> {
    let mut buf = Zeroizing::new(vec![0u8; capacity]);
    let mut len = 0;
    loop {
        if len == buf.len() {
            // The old buffer is zeroed when `bigger` replaces it (dropped as `Zeroizing`).
            let mut bigger = Zeroizing::new(vec![0u8; len.saturating_mul(2).max(1)]);
            bigger[..len].copy_from_slice(&buf[..len]);
            buf = bigger;
        }
        match reader.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // Within the capacity: no reallocation, and the bytes past `len` are zeroes.
    buf.truncate(len);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn files_around_the_first_buffer_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0, 1, 63, 4095, 4096, 4097, 100_000] {
            let path = dir.path().join(format!("f{len}"));
            std::fs::write(&path, bytes(len)).unwrap();
            let read = read(&path, 1 << 20).unwrap();
            assert!(*read == bytes(len), "length {len}");
        }
    }

    #[test]
    fn a_file_larger_than_the_limit_gives_one_byte_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, bytes(10_000)).unwrap();
        assert!(*read(&path, 999).unwrap() == bytes(1000));
        assert!(*read(&path, 10_000).unwrap() == bytes(10_000));
    }

    /// A reader longer than the buffer it started with (a pipe; a file that grew after its
    /// length was read) is read whole through the buffers it grows into.
    #[test]
    fn a_reader_longer_than_its_first_buffer_is_read_whole() {
        for (len, capacity) in [(0, 1), (1, 1), (2, 1), (10_000, 1), (10_000, 4096), (5, 8)] {
            let data = bytes(len);
            let read = read_from(&data[..], capacity).unwrap();
            assert!(*read == data, "length {len} from a buffer of {capacity}");
        }
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let error = read(&dir.path().join("none"), 100).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
    }
}
