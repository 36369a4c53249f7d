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

/// The largest password file read: a line of text, as a key file.
pub const MAX_PASSWORD_FILE: u64 = 64 * 1024;

/// The password in the file at `path`: its first line (without the line's end), read into
/// memory zeroed after use ([`read`]). What `--password-file` and `--new-password-file` take.
///
/// # Errors
/// [`crate::Error::Io`] when it cannot be read; [`crate::Error::Request`] (a usage error)
/// naming the file when it is larger than 64 KiB or not UTF-8 text.
pub fn read_password(path: &Path) -> crate::Result<Zeroizing<String>> {
    let named =
        |why: &str| crate::Error::Request(format!("password file {} {why}", path.display()));
    let bytes = read(path, MAX_PASSWORD_FILE).map_err(|e| {
        crate::Error::io(format!("cannot read password file {}", path.display()), e)
    })?;
    if bytes.len() as u64 > MAX_PASSWORD_FILE {
        return Err(named("is larger than 64 KiB"));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| named("is not text (UTF-8)"))?;
    Ok(Zeroizing::new(text.lines().next().unwrap_or("").to_owned()))
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

    /// A password file's first line; a file too large or not text is refused, naming it.
    #[test]
    fn a_password_file_gives_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let pw = read_password(&at("pw", b"hunter2\r\nsecond line\n")).unwrap();
        assert_eq!(pw.as_str(), "hunter2");
        assert_eq!(read_password(&at("empty", b"")).unwrap().as_str(), "");
        let big = at("big", &vec![b'a'; MAX_PASSWORD_FILE as usize + 1]);
        let e = read_password(&big).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("password file {} is larger than 64 KiB", big.display())
        );
        let e = read_password(&at("bin", b"\xff\xfe"))
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("is not text (UTF-8)"), "{e}");
    }
}
