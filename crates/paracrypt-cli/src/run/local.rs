//! A job on this machine: from a file with positional reads on every thread (to a file with
//! positional writes, or in order to a pipe, a device or stdout), as a stream when the input
//! is a pipe (or `-`), or a range of a file. An object (`s3://…`) is a
//! positional input like a file (ranged GETs, read ahead), and a positional output of its own
//! kind: the chunks go up as the parts of one multipart upload, each part a run of chunks made
//! with the core's `run_to_buffer` (`paracrypt_store::upload_parts`).

use std::io::Read;
use std::process::ExitCode;

use anyhow::Result;
use paracrypt_core::Runner;
use paracrypt_core::engine::{self, Source};
use paracrypt_core::provider::Provider;
use paracrypt_core::request::{Driver, Resolved};

use crate::exit::usage;
use crate::io::{Input, Output, OutputTarget};
use crate::progress::{Progress, Unit};
use crate::spec::JobSpec;

/// Runs `spec` in a pool of its `-j` threads, on `provider`.
pub fn run(spec: JobSpec, provider: Provider) -> Result<ExitCode> {
    let mut input = Input::open(&spec.input)?;
    let range = spec.operation.range();
    if range.is_some() && input.as_file().is_none() && input.remote().is_none() {
        return usage("--range needs INPUT to be a file (it reads only the chunks it needs)");
    }
    let target = OutputTarget::new(&spec.output, input.path(), spec.policy)?;
    let request = spec.operation.request(true)?;
    super::warn_all(&spec, &request);
    let pool = spec.threads.pool()?;
    // The input's first bytes say what it is: the core's request resolves them into the job,
    // refusing before any output exists what it cannot or must not read. `taken`: they came
    // from a stream, in front of the rest.
    let (head, taken) = super::head::read_head(&mut input)?;
    let driver = match range {
        Some(_) => Driver::Range,
        None => Driver::Whole,
    };
    let resolved = request
        .resolve(&head, driver)
        .map_err(|e| super::hint(e, &spec, input.path()))?;
    let in_order = resolved.in_order();
    let to_stdout = spec.output.as_os_str() == "-";
    let bar = Progress::new(
        spec.progress,
        input.len(),
        spec.operation.label(),
        Unit::Bytes,
        to_stdout,
    );
    let runner = {
        let bar = bar.clone();
        Runner::new()
            .provider(provider)
            .progress(move |n| bar.inc(n))
    };
    let mut output = target.create()?;
    pool.install(|| -> Result<()> {
        let positional_out = output.as_file().is_some() || output.remote().is_some();
        if !in_order && input.remote().is_some() && (range.is_some() || positional_out) {
            return remote_input(&resolved, &mut input, &mut output, range, provider, &bar);
        }
        #[cfg(feature = "s3")]
        if !in_order
            && range.is_none()
            && output.remote().is_some()
            && let Some(file) = input.as_file()
        {
            // The header is read with the file's cursor; the chunks with positional reads.
            let job = resolved.recipe().first_job(
                &mut std::io::BufReader::new(file),
                input.len(),
                provider,
            )?;
            let source = Progressed {
                inner: file,
                bar: &bar,
            };
            return upload(&job, &source, &mut output);
        }
        let recipe = resolved.recipe();
        match (in_order, input.as_file(), output.as_file(), range) {
            (false, Some(src), _, Some((offset, len))) => {
                runner.range(recipe, src, offset, len, &mut *output.writer())?;
            }
            (false, Some(src), Some(dst), None) => {
                runner.file(recipe, src, dst)?;
            }
            (false, Some(src), None, None) => {
                runner.file_to_writer(recipe, src, &mut *output.writer())?;
            }
            _ => {
                let front = if taken { &head[..] } else { &[][..] };
                let mut reader = front.chain(input.reader());
                let writer = &mut *output.writer();
                resolved.stream(&runner, &mut reader, writer)?;
            }
        }
        Ok(())
    })?;
    bar.clear();
    output.commit()?;
    input.consumed();
    bar.finish();
    if let Some(note) = super::signer_note(&resolved).filter(|_| !spec.quiet) {
        crate::exit::say!("paracrypt: {note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// A job whose input is an object, read positionally: to a file, to another object, or a
/// range (to any output).
fn remote_input(
    resolved: &Resolved,
    input: &mut Input,
    output: &mut Output,
    range: Option<(u64, u64)>,
    provider: Provider,
    bar: &Progress,
) -> Result<()> {
    let remote = input.remote().expect("an object");
    let len = remote.len();
    let job = resolved
        .recipe()
        .first_job(&mut remote.header(), Some(len), provider)?;
    let source = Progressed {
        inner: remote.source(),
        bar,
    };
    if let Some((offset, want)) = range {
        engine::run_range(&job, &source, offset, want, &mut *output.writer())?;
        return Ok(());
    }
    #[cfg(feature = "s3")]
    if output.remote().is_some() {
        return upload(&job, &source, output);
    }
    let file = output.as_file().expect("a file output");
    engine::run_file(&job, &source, file)?;
    Ok(())
}

/// Uploads every part of `job` from `source` into the output object.
#[cfg(feature = "s3")]
fn upload(job: &engine::Job, source: &dyn Source, output: &mut Output) -> Result<()> {
    let plan = job.plan().expect("a job of known length");
    let count = paracrypt_store::part_count(plan);
    let upload = output.remote().expect("an object").planned(count);
    paracrypt_store::upload_parts(job, source, upload, 0..count).map_err(|e| match e {
        paracrypt_store::UploadError::Chunk(e) => anyhow::Error::from(e),
        paracrypt_store::UploadError::Store(e) => anyhow::Error::from(e),
    })?;
    Ok(())
}

/// A source that moves the progress bar by the bytes read.
struct Progressed<'a> {
    inner: &'a dyn Source,
    bar: &'a Progress,
}

impl Source for Progressed<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> paracrypt_core::Result<()> {
        self.inner.read_chunk(index, offset, buf)?;
        self.bar.inc(buf.len() as u64);
        Ok(())
    }

    fn will_read(&self, bytes: std::ops::Range<u64>) {
        self.inner.will_read(bytes);
    }
}
