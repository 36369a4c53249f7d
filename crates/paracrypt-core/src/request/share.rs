//! A job run in parts by other processes (Dask tasks, any scheduler's): made once where the
//! request was resolved, made again in each process from what that job shares.
//!
//! What travels is the job's header, its [shared key](crate::engine::Job::shared_key) — the
//! keys derived for this one file (a container's header and payload keys, an age file's file
//! key), never the key file, password or identities they came from — and, to seal a signed
//! container, the signing key (each process signs the chunks it seals). Each process also
//! checks that the input it reads is the one the job was made for ([`InputId`]).
//!
//! ```
//! use paracrypt_core::engine::{self, SliceSource};
//! use paracrypt_core::provider::Provider;
//! use paracrypt_core::request::{Driver, Key, Request, Sealing, Secret, share};
//!
//! let input = vec![7u8; 100_000];
//! let request = Request::encrypt(Secret::Key(Key::generate()), Sealing::default())?;
//! let resolved = request.resolve(&[], Driver::Distributed)?;
//! let first = resolved.recipe().first_job(&mut &[][..], Some(100_000), Provider::default())?;
//! // Elsewhere: the same job from the header and the derived keys alone.
//! let again = share::job(true, first.header(), first.shared_key().unwrap(), None, 100_000, Provider::default())?;
//! let (mut a, mut b) = (Vec::new(), Vec::new());
//! let plan = first.plan().unwrap();
//! engine::run_to_buffer(&first, 0..plan.len(), &SliceSource(&input), &mut a)?;
//! engine::run_to_buffer(&again, 0..plan.len(), &SliceSource(&input), &mut b)?;
//! assert_eq!(a, b);
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

use std::sync::Arc;

use crate::agefile;
use crate::container::{self, Secret};
use crate::engine::Job;
pub use crate::engine::{INPUT_ID_LEN, InputId};
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::recipe::Recipe;
use crate::recipient::{Identities, Recipients};
use crate::sign::SigningKey;

use super::AnyDecryptor;

/// The job that another process made with `header` and shared `key` (its
/// [`Job::shared_key`]), for an input of `input_len` bytes: an encryption (`encrypting`; a
/// signed container's with the `signer` that the header names) or a decryption, of a container
/// or a binary age file (the header says which). The header is checked with the key: another
/// file's keys fail with [`Error::WrongKey`].
pub fn job(
    encrypting: bool,
    header: &[u8],
    key: &[u8],
    signer: Option<&SigningKey>,
    input_len: u64,
    provider: Provider,
) -> Result<Job> {
    if key.is_empty() {
        return Err(Error::WrongKey);
    }
    // No secret is needed: the shared key opens the header. These stand for "none".
    let nobody = || Secret::Identities(Arc::new(Identities::new()));
    let len = Some(input_len);
    let key = Some(key);
    if !encrypting {
        return AnyDecryptor::new(nobody()).job_from_header(header, key, len, provider);
    }
    if agefile::detect(header).is_some() {
        let age = agefile::Encryptor::new(Recipients::new());
        return age.job_from_header(header, key, len, provider);
    }
    let mut seal = container::Encryptor::new(nobody());
    if let Some(signer) = signer {
        seal = seal.sign(signer.clone());
    }
    seal.job_from_header(header, key, len, provider)
}
