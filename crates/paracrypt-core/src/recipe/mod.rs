//! What a format is to the engine, and the one runner that runs any format on every driver.
//!
//! A [`Recipe`] turns an input into a [`Job`]: it makes the header a job
//! writes (encrypting), or reads the header at the front of the input and makes the job that
//! opens the rest (decrypting). Every format is one: the container (versions 1 to 3:
//! [`container::Encryptor`](crate::container::Encryptor),
//! [`container::Decryptor`](crate::container::Decryptor)), age files
//! ([`agefile::Encryptor`](crate::agefile::Encryptor),
//! [`agefile::Decryptor`](crate::agefile::Decryptor); the binary form, armor being a stream
//! wrapper around it), raw ciphers ([`RawRecipe`](crate::raw::RawRecipe)) and `openssl enc`
//! password files ([`PasswordRecipe`](crate::raw::salted::PasswordRecipe)). A recipe keeps only
//! its format's own options (suite, chunk size, recipients).
//!
//! The [`Runner`] holds what every format shares (the streaming window, a progress callback,
//! the [`Provider`] that computes the primitives, handed to the recipe as it makes the job)
//! and runs any recipe: file to file ([`Runner::file`]), a file to an output that takes bytes
//! in order ([`Runner::file_to_writer`]), stream to stream ([`Runner::stream`]),
//! in memory ([`Runner::vec`]), a byte range ([`Runner::range`]), as a `Write` adapter
//! ([`Runner::writer`], whose [`StreamWriter::finish`] must be called) and as a `Read` adapter
//! ([`Runner::reader`]). The thread pool stays
//! the caller's. `paracrypt-mpi`'s `distribute` takes the same recipes (and its options name
//! the provider): rank 0 makes the job
//! with [`Recipe::first_job`], the other ranks with [`Recipe::job_from_header`] from its
//! header and, when the header alone is not enough, its [shared key](crate::engine::Job::shared_key).
//!
//! One recipe through every driver:
//!
//! ```
//! use std::io::Write;
//! use paracrypt_core::container::{Decryptor, Encryptor, Key};
//! use paracrypt_core::plan::ChunkSize;
//! use paracrypt_core::provider::Provider;
//! use paracrypt_core::Runner;
//!
//! let key = Key::generate();
//! let seal = Encryptor::new(key.clone()).chunk_size(ChunkSize::new(4096)?);
//! let open = Decryptor::new(key);
//! let runner = Runner::new().window(4).provider(Provider::RustCrypto);
//! let data = vec![7u8; 50_000];
//!
//! // In memory.
//! let sealed = runner.vec(&seal, &data)?;
//! assert_eq!(runner.vec(&open, &sealed)?, data);
//!
//! // Stream to stream.
//! let mut streamed = Vec::new();
//! runner.stream(&seal, &mut &data[..], &mut streamed)?;
//! let mut plain = Vec::new();
//! runner.stream(&open, &mut &streamed[..], &mut plain)?;
//! assert_eq!(plain, data);
//!
//! // File to file, and a range of the plaintext.
//! let (input, sealed_file, output) = (tempfile::tempfile()?, tempfile::tempfile()?, tempfile::tempfile()?);
//! std::os::unix::fs::FileExt::write_all_at(&input, &data, 0)?;
//! runner.file(&seal, &input, &sealed_file)?;
//! assert_eq!(runner.file(&open, &sealed_file, &output)?, data.len() as u64);
//! let mut part = Vec::new();
//! runner.range(&open, &sealed_file, 10_000, 5, &mut part)?;
//! assert_eq!(part, &data[10_000..10_005]);
//!
//! // A `Write` adapter: call `finish`.
//! let mut writer = runner.writer(&seal, Vec::new())?;
//! writer.write_all(&data)?;
//! let sealed = writer.finish()?;
//! assert_eq!(runner.vec(&open, &sealed)?, data);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod reader;
mod runner;
mod writer;

use std::io::BufRead;

pub use reader::StreamReader;
pub use runner::Runner;
pub use writer::StreamWriter;

use crate::engine::Job;
use crate::error::Result;
use crate::provider::Provider;

/// What a format is to the engine: the job for an input, and the same job again on another
/// process from the first one's header.
///
/// Both methods make jobs that transform every chunk identically, so that chunk `i` is the same
/// bytes whichever process runs it, and whichever `provider` computes the primitives (the
/// caller's choice: [`Runner::provider`], or `paracrypt-mpi`'s options).
pub trait Recipe: Send + Sync {
    /// The job for an input of `input_len` bytes, header included (`None`: a stream of unknown
    /// length). A recipe that opens a header reads exactly its bytes from the front of `input`
    /// (checking it: a wrong key fails here, before any output), so that a stream goes on from
    /// the first chunk; one that writes a header reads nothing and makes it (a fresh salt, file
    /// key or nonce each call).
    fn first_job(
        &self,
        input: &mut dyn BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job>;

    /// The job [`Recipe::first_job`] made, made again from its [`Job::header`] and its
    /// [`Job::shared_key`] (`key`), for an input of `input_len` bytes: what another process
    /// (an MPI rank) runs. No new salt, key or nonce is drawn; the header is checked.
    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> Result<Job>;
}
