//! Raw decryption with a key refuses what `openssl enc` encrypted with a password (it starts
//! with `Salted__`) and says how to read it: with `--password-file`, which reads the header.

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{Context, Result};
use paracrypt_core::raw::RawCipherName;

use crate::io::Input;

/// What `openssl enc` writes first when it derives the key from a password.
const OPENSSL_SALTED: &[u8; 8] = b"Salted__";

/// The input's first `len` bytes (fewer if it is shorter), and whether they were taken from it:
/// a file is read positionally (and later read whole), a stream gives them up (the caller puts
/// them back in front, or goes on after them).
pub(super) fn read_head(input: &mut Input, len: usize) -> Result<(Vec<u8>, bool)> {
    let path = input.path().display().to_string();
    let cannot = || format!("cannot read {path}");
    let mut head = vec![0u8; len];
    if let Some(file) = input.as_file() {
        let mut n = 0;
        while n < head.len() {
            match file.read_at(&mut head[n..], n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(cannot),
            }
        }
        head.truncate(n);
        return Ok((head, false));
    }
    head.clear();
    let read = input.reader().take(len as u64).read_to_end(&mut head);
    read.with_context(cannot)?;
    Ok((head, true))
}

/// Refuses an input that `openssl enc` encrypted with a password, and says how to read it.
/// Returns the bytes it took from a stream, which belong in front of the rest (none from a
/// file).
pub(super) fn refuse_salted(input: &mut Input, cipher: RawCipherName) -> Result<Vec<u8>> {
    let (head, taken) = read_head(input, OPENSSL_SALTED.len())?;
    if head != OPENSSL_SALTED {
        return Ok(if taken { head } else { Vec::new() });
    }
    let (what, file) = match input.path() {
        path if path == Path::new("-") => ("the input".to_string(), "FILE".to_string()),
        path => (path.display().to_string(), path.display().to_string()),
    };
    anyhow::bail!(
        "{what} starts with `Salted__`: `openssl enc` encrypted it with a password, from which \
         openssl derives the key and IV; give paracrypt the password instead of -K: \
         `paracrypt raw -d -c {cipher} --password-file PASSWORD_FILE --pbkdf2 {file}` (with the \
         --iter and --md it was encrypted with; without --pbkdf2 for a file from `openssl enc` \
         without -pbkdf2)"
    )
}
