//! A job on this machine: file to file with positional I/O on every thread, or as a stream
//! when either side is a pipe (or `-`), or a range of a file.

use std::io::Read;
use std::process::ExitCode;

use anyhow::Result;
use paracrypt_core::Runner;
use paracrypt_core::provider::Provider;

use crate::exit::usage;
use crate::io::{Input, OutputTarget};
use crate::progress;
use crate::spec::{HEAD_LEN, JobSpec};

/// Runs `spec` in a pool of its `-j` threads, on `provider`.
pub fn run(spec: JobSpec, provider: Provider) -> Result<ExitCode> {
    super::warn_all(&spec);
    let mut input = Input::open(&spec.input)?;
    let range = spec.operation.range();
    if range.is_some() && input.as_file().is_none() {
        return usage("--range needs INPUT to be a file (it reads only the chunks it needs)");
    }
    let target = OutputTarget::new(&spec.output, input.path(), spec.policy)?;
    let keyed = spec.operation.keyed(true)?;
    let pool = spec.threads.pool()?;
    // The input's first bytes say what it is: refused before any output exists when the job
    // cannot read it. `taken`: they came from a stream, in front of the rest.
    let (head, taken) = super::head::read_head(&mut input, HEAD_LEN)?;
    keyed.check(&head, input.path())?;
    let in_order = keyed.in_order(&head);
    if in_order && range.is_some() {
        return usage("--range needs a binary age file (armor is read in order)");
    }
    let bar = progress::bar(spec.progress, input.len(), keyed.label);
    let runner = {
        let bar = bar.clone();
        Runner::new()
            .provider(provider)
            .progress(move |n| bar.inc(n))
    };
    let mut output = target.create()?;
    pool.install(|| -> Result<()> {
        let recipe = keyed.recipe();
        match (in_order, input.as_file(), output.as_file(), range) {
            (false, Some(src), _, Some((offset, len))) => {
                runner.range(recipe, src, offset, len, &mut *output.writer())?;
            }
            (false, Some(src), Some(dst), None) => {
                runner.file(recipe, src, dst)?;
            }
            _ => {
                let front = if taken { &head[..] } else { &[][..] };
                let mut reader = front.chain(input.reader());
                let writer = &mut *output.writer();
                if in_order {
                    keyed.run_in_order(&runner, &mut reader, writer)?;
                } else {
                    runner.stream(recipe, &mut reader, writer)?;
                }
            }
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}
