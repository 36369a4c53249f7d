//! A job on this machine: file to file with positional I/O on every thread, or as a stream
//! when either side is a pipe (or `-`).

use std::process::ExitCode;

use std::io::Read;

use anyhow::Result;
use paracrypt_core::agefile::{self, AgeFormat};
use paracrypt_core::engine;
use paracrypt_core::raw::Direction;
use paracrypt_core::raw::salted;

use crate::exit::usage;
use crate::io::{Input, OutputTarget};
use crate::progress;
use crate::spec::{JobSpec, Keyed, Operation};

/// Runs `spec` in a pool of its `-j` threads.
pub fn run(spec: JobSpec) -> Result<ExitCode> {
    super::warn_all(&spec);
    let mut input = Input::open(&spec.input)?;
    if matches!(spec.operation, Operation::Decrypt { range: Some(_), .. })
        && input.as_file().is_none()
    {
        return usage("--range needs INPUT to be a file (it reads only the chunks it needs)");
    }
    let target = OutputTarget::new(&spec.output, input.path(), spec.policy)?;
    let keyed = spec.operation.keyed(true)?;
    let pool = spec.threads.pool()?;
    let label = match &keyed {
        Keyed::Raw(_) | Keyed::RawPassword(..) => "",
        Keyed::Encrypt(_) | Keyed::EncryptAge(_) => "encrypting",
        Keyed::Decrypt(..) => "decrypting",
    };
    let bar = progress::bar(spec.progress, input.len(), label);
    let count = {
        let bar = bar.clone();
        move |n| bar.inc(n)
    };
    // A raw job checks the input's length before any output exists, and a raw decryption
    // refuses openssl's password format or, given the password, reads its header; a decryption
    // tells an age file from a container. `head`: what was taken from a stream that belongs
    // in front of the rest; `skip`: the bytes of a header a job was made from, which a file
    // read as a stream still starts with.
    let mut skip = 0;
    let (raw_job, head, age) = match &keyed {
        Keyed::Raw(raw) => {
            let job = raw.cipher.job(raw.direction, input.len(), raw.chunk_size)?;
            let head = match raw.direction {
                Direction::Decrypt => super::salted::refuse_salted(&mut input, raw.cipher.name())?,
                Direction::Encrypt => Vec::new(),
            };
            (Some(job), head, None)
        }
        Keyed::RawPassword(cipher, Direction::Encrypt, chunk) => (
            Some(cipher.encrypt_job(input.len(), *chunk)?),
            Vec::new(),
            None,
        ),
        Keyed::RawPassword(cipher, Direction::Decrypt, chunk) => {
            // The header is the job's: a stream goes on from the first chunk.
            let (header, taken) = super::salted::read_head(&mut input, salted::HEADER_LEN)?;
            let job = cipher.decrypt_job(&header, input.len(), *chunk)?;
            if !taken {
                skip = header.len() as u64;
            }
            (Some(job), Vec::new(), None)
        }
        Keyed::Decrypt(_, _, range) => {
            let (head, taken) = super::salted::read_head(&mut input, agefile::DETECT_LEN)?;
            let age = agefile::detect(&head);
            let magic = paracrypt_core::container::MAGIC;
            let container =
                head.starts_with(magic) || (!head.is_empty() && magic.starts_with(&head));
            if age.is_none() && !container {
                return Err(paracrypt_core::Error::NotEncrypted.into());
            }
            if age == Some(AgeFormat::Armored) && range.is_some() {
                return usage("--range needs a binary age file (armor is read in order)");
            }
            (None, if taken { head } else { Vec::new() }, age)
        }
        _ => (None, Vec::new(), None),
    };
    let mut output = target.create()?;
    pool.install(|| -> Result<()> {
        match (keyed, raw_job, input.as_file(), output.as_file()) {
            (Keyed::Raw(_) | Keyed::RawPassword(..), Some(job), Some(src), Some(dst)) => {
                engine::run_file(&job, src, dst)?;
            }
            (Keyed::Raw(_) | Keyed::RawPassword(..), Some(job), ..) => {
                let mut reader = input.reader();
                std::io::copy(&mut (&mut reader).take(skip), &mut std::io::sink())?;
                let mut reader = head.as_slice().chain(reader);
                engine::stream::process_stream(&job, &mut reader, &mut *output.writer(), 0)?;
            }
            (Keyed::Raw(_) | Keyed::RawPassword(..), None, ..) => {
                unreachable!("a raw job is made above")
            }
            (Keyed::Encrypt(encryptor), _, Some(src), Some(dst)) => {
                encryptor.progress(count).encrypt_file(src, dst)?;
            }
            (Keyed::Encrypt(encryptor), ..) => {
                let mut reader = input.reader();
                encryptor
                    .progress(count)
                    .encrypt_stream(&mut *reader, &mut *output.writer())?;
            }
            (Keyed::EncryptAge(encryptor), _, Some(src), Some(dst)) => {
                encryptor.progress(count).encrypt_file(src, dst)?;
            }
            (Keyed::EncryptAge(encryptor), ..) => {
                let mut reader = input.reader();
                encryptor
                    .progress(count)
                    .encrypt_stream(&mut *reader, &mut *output.writer())?;
            }
            (Keyed::Decrypt(_, decryptor, range), _, src, dst) if age.is_some() => {
                let Some(decryptor) = decryptor else {
                    return usage(
                        "this is an age file: decrypt it with an identity (-i FILE) or its \
                         passphrase, not a key file",
                    );
                };
                let decryptor = decryptor.progress(count);
                match (range, src, dst) {
                    (Some((offset, len)), Some(src), _) => {
                        decryptor.decrypt_range(src, offset, len, &mut *output.writer())?;
                    }
                    (None, Some(src), Some(dst)) => {
                        decryptor.decrypt_file(src, dst)?;
                    }
                    _ => {
                        let mut reader = head.as_slice().chain(input.reader());
                        decryptor.decrypt_stream(&mut reader, &mut *output.writer())?;
                    }
                }
            }
            (Keyed::Decrypt(decryptor, _, Some((offset, len))), _, Some(src), _) => {
                decryptor
                    .progress(count)
                    .decrypt_range(src, offset, len, &mut *output.writer())?;
            }
            (Keyed::Decrypt(decryptor, ..), _, Some(src), Some(dst)) => {
                decryptor.progress(count).decrypt_file(src, dst)?;
            }
            (Keyed::Decrypt(decryptor, ..), ..) => {
                let mut reader = head.as_slice().chain(input.reader());
                decryptor
                    .progress(count)
                    .decrypt_stream(&mut reader, &mut *output.writer())?;
            }
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}
