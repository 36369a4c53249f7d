//! The input's first bytes, which say what it is (an age file, an `openssl enc` password
//! file) before any output exists.

use std::io::Read;

use anyhow::{Context, Result};
use paracrypt_core::request::{HEAD_LEN, head_of};

use crate::io::Input;

/// The input's first [`HEAD_LEN`] bytes (fewer if it is shorter), and whether they were taken from it:
/// a file is read positionally (and later read whole), a stream gives them up (the caller puts
/// them back in front, or goes on after them).
pub(super) fn read_head(input: &mut Input) -> Result<(Vec<u8>, bool)> {
    if let Some(remote) = input.remote() {
        return Ok((remote.front(HEAD_LEN)?, false));
    }
    let path = input.path().display().to_string();
    let cannot = || format!("cannot read {path}");
    if let Some(file) = input.as_file() {
        return Ok((head_of(file).with_context(cannot)?, false));
    }
    let mut head = Vec::with_capacity(HEAD_LEN);
    let read = input.reader().take(HEAD_LEN as u64).read_to_end(&mut head);
    read.with_context(cannot)?;
    Ok((head, true))
}
