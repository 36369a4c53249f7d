//! # paracrypt-store
//!
//! paracrypt's chunk jobs from and to object storage — `s3://bucket/key`, and what Apache
//! Arrow's `object_store` gives with no extra code: `gs://`, `az://`, and `http(s)://` for
//! reading. A driver, not a format: every format's [`Job`](paracrypt_core::engine::Job) runs
//! through the core's engine as it does on files, with two pieces of I/O from here.
//!
//! - [`ObjectSource`]: the core's positional [`Source`](paracrypt_core::engine::Source) over
//!   ranged GETs, reading ahead within what the engine announces a run will read
//!   ([`Source::will_read`](paracrypt_core::engine::Source::will_read)), so chunks are fetched
//!   concurrently and verified in parallel, and a `--range` fetches only its covering chunks.
//! - [`Upload`]: one multipart upload whose parts are runs of whole chunks made with the core's
//!   [`run_to_buffer`](paracrypt_core::engine::run_to_buffer) ([`upload_parts`]), uploaded
//!   concurrently, completed by one request that makes the object, and aborted on any
//!   failure (and by an [`Aborter`] from a signal handler). Another process can upload some
//!   of the parts ([`Upload::join`]): an MPI rank uploads the parts of its own chunks.
//!
//! ```no_run
//! use paracrypt_core::container::{Encryptor, Key};
//! use paracrypt_core::provider::Provider;
//! use paracrypt_core::Recipe;
//! use paracrypt_store::{Object, Options, Upload, part_count, upload_parts};
//!
//! let input = std::fs::File::open("big.tar")?;
//! let len = input.metadata()?.len();
//! let recipe = Encryptor::new(Key::generate());
//! let job = recipe.first_job(&mut &[][..], Some(len), Provider::default())?;
//! let object = Object::open("s3://bucket/big.tar.pcr", Options::default())?;
//! let upload = Upload::create(&object, false)?; // refuses an existing object
//! let parts = part_count(job.plan().unwrap());
//! upload_parts(&job, &input, &upload, 0..parts)?; // sealed on every core of the pool
//! upload.complete(parts, &[])?; // the object appears now, or never
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`Kms`]: AWS KMS for `awskms:` recipients, on the same signing, HTTP client and settings.
//!
//! Requests run on a small runtime each [`Object`] owns; the API blocks, so callers stay
//! synchronous (the rayon pool and MPI ranks). This crate never prints.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
mod kms;
mod object;
mod source;
mod tree;
mod upload;

pub use error::{Error, Kind};
pub use kms::Kms;
pub use object::{
    DEFAULT_DOWNLOAD_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_UPLOAD_CONCURRENCY, MAX_CONCURRENCY,
    MAX_RETRIES, Meta, Object, Options, is_url,
};
pub use source::{BLOCK, HeadReader, ObjectReader, ObjectSource};
pub use tree::{
    Decryption, Encryption, Listed, MAX_KEY, MAX_OBJECTS, PlainPrefix, Prefix, PrefixInput,
    PrefixOutput, PrefixRun, Rekeying, UploadWatch, open_task_from, plain_input, prefix_input,
    prefix_rekey, prefix_run, run_task, seal_task_from,
};
pub use upload::{
    Aborter, Budget, MAX_PARTS, MIN_PART, PartWriter, Upload, UploadError, part_count,
    stream_part_size, upload_parts,
};
