//! A job on this machine: file to file with positional I/O on every thread, or as a stream
//! when either side is a pipe (or `-`).

use std::process::ExitCode;

use std::io::Read;

use anyhow::Result;
use paracrypt_core::engine;
use paracrypt_core::raw::Direction;

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
        Keyed::Raw(_) => "",
        Keyed::Encrypt(_) => "encrypting",
        Keyed::Decrypt(..) => "decrypting",
    };
    let bar = progress::bar(spec.progress, input.len(), label);
    let count = {
        let bar = bar.clone();
        move |n| bar.inc(n)
    };
    // A raw job checks the input's length before any output exists, and a raw decryption
    // refuses openssl's password format (`head`: what it took from a stream, to put back).
    let (raw_job, head) = match &keyed {
        Keyed::Raw(raw) => {
            let job = raw.cipher.job(raw.direction, input.len(), raw.chunk_size)?;
            let head = match raw.direction {
                Direction::Decrypt => super::salted::refuse_salted(&mut input, raw.cipher.name())?,
                Direction::Encrypt => Vec::new(),
            };
            (Some(job), head)
        }
        _ => (None, Vec::new()),
    };
    let mut output = target.create()?;
    pool.install(|| -> Result<()> {
        match (keyed, raw_job, input.as_file(), output.as_file()) {
            (Keyed::Raw(_), Some(job), Some(src), Some(dst)) => {
                engine::run_file(&job, src, dst)?;
            }
            (Keyed::Raw(_), Some(job), ..) => {
                let mut reader = head.as_slice().chain(input.reader());
                engine::stream::process_stream(&job, &mut reader, &mut *output.writer(), 0)?;
            }
            (Keyed::Raw(_), None, ..) => unreachable!("a raw job is made above"),
            (Keyed::Encrypt(encryptor), _, Some(src), Some(dst)) => {
                encryptor.progress(count).encrypt_file(src, dst)?;
            }
            (Keyed::Encrypt(encryptor), ..) => {
                let mut reader = input.reader();
                encryptor
                    .progress(count)
                    .encrypt_stream(&mut *reader, &mut *output.writer())?;
            }
            (Keyed::Decrypt(decryptor, Some((offset, len))), _, Some(src), _) => {
                decryptor
                    .progress(count)
                    .decrypt_range(src, offset, len, &mut *output.writer())?;
            }
            (Keyed::Decrypt(decryptor, _), _, Some(src), Some(dst)) => {
                decryptor.progress(count).decrypt_file(src, dst)?;
            }
            (Keyed::Decrypt(decryptor, _), ..) => {
                let mut reader = input.reader();
                decryptor
                    .progress(count)
                    .decrypt_stream(&mut *reader, &mut *output.writer())?;
            }
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}
