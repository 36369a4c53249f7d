//! The input's first bytes, which say what it is (an age file, an `openssl enc` password
//! file) before any output exists.

use std::io::Read;
use std::os::unix::fs::FileExt;

use anyhow::{Context, Result};

use crate::io::Input;

/// The input's first `len` bytes (fewer if it is shorter), and whether they were taken from it:
/// a file is read positionally (and later read whole), a stream gives them up (the caller puts
/// them back in front, or goes on after them).
pub(super) fn read_head(input: &mut Input, len: usize) -> Result<(Vec<u8>, bool)> {
    if let Some(remote) = input.remote() {
        return Ok((remote.front(len)?, false));
    }
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
