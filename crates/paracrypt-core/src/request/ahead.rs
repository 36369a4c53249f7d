//! Opening many files' keys ahead, in one session per age plugin: a hardware key is touched and
//! its PIN typed once for a batch (a tree, a set of files to rekey, a list of inputs), not once
//! per file.
//!
//! The plugin protocol's `identity-v1` state machine takes the stanzas of many files in one
//! session, so every header of the batch is read first (the header alone: no payload byte),
//! and each plugin is asked about all of them at once. What a plugin gives is kept in the
//! [`Identities`], keyed by the header's stanzas; the jobs that then open the files one by one
//! (on every thread) find their key there and start no plugin. A file whose header cannot be
//! read, or that another identity opens, is not asked about: opening it later says what is
//! wrong, as it would have.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{HEAD_LEN, Kind, Request, Secret};
use crate::recipient::{Identities, Stanza};
use crate::{agefile, container};

impl Request {
    /// Whether opening a file with this request may start an age plugin: a decryption with
    /// plugin identities. A caller that is about to open many files then asks
    /// [`Request::open_ahead`] first.
    pub fn uses_plugins(&self) -> bool {
        match &self.0 {
            Kind::Decrypt {
                secret: Secret::Identities(identities),
                ..
            } => !identities.plugins().is_empty(),
            _ => false,
        }
    }

    /// Opens ahead, with one session per age plugin, the file keys of the files at `paths`
    /// that this request's plugin identities open (see [`open_ahead`]); nothing for any other
    /// request. Errors are not reported here: each file's own opening reports them
    /// (a plugin that failed for the batch is not started again for each file).
    pub fn open_ahead(&self, paths: &[PathBuf]) {
        if let Kind::Decrypt {
            secret: Secret::Identities(identities),
            ..
        } = &self.0
        {
            open_ahead(identities, paths);
        }
    }
}

/// Opens ahead, with one session per age plugin of `identities`, the file keys of the files at
/// `paths` (containers and age files, binary or armored): what [`Request::open_ahead`] does,
/// for a caller that holds identities rather than a request (rekeying many files). Nothing
/// happens when `identities` has no plugin identity.
///
/// Every header is read first (the header alone), then each plugin is asked about all of them
/// in one `identity-v1` session; what it gives (a refusal too) is kept in `identities`, so that
/// opening any of these files later with the same identities, on any thread, starts no plugin.
pub fn open_ahead(identities: &Identities, paths: &[PathBuf]) {
    if identities.plugins().is_empty() {
        return;
    }
    let headers: Vec<Vec<Stanza>> = paths
        .par_iter()
        .filter_map(|path| stanzas_at(path))
        .collect();
    let files: Vec<&[Stanza]> = headers.iter().map(Vec::as_slice).collect();
    identities.open_ahead(&files);
}

/// The stanzas of the file at `path` (read without following a link, and only when it is a
/// regular file), or `None` when it has none or cannot be read.
fn stanzas_at(path: &Path) -> Option<Vec<Stanza>> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let file = crate::tree::open_no_follow(path).ok()?;
    let mut input = BufReader::new(file);
    let mut start = Vec::with_capacity(HEAD_LEN);
    (&mut input)
        .take(HEAD_LEN as u64)
        .read_to_end(&mut start)
        .ok()?;
    if start.starts_with(container::MAGIC) {
        let header = container::read_header_bytes(start.as_slice().chain(input)).ok()?;
        container::HeaderInfo::recipient_stanzas(&header).ok()?
    } else {
        agefile::stanzas_of(&start, &mut input).ok()
    }
}
