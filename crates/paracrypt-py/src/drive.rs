//! The drivers a [`Request`] runs on: file to file, memory to `bytes`, a range of a file. Each
//! resolves the request with the input's first bytes (the core's refusals) and is the core's
//! [`Runner`](paracrypt_core::Runner) (or engine) doing the work without the GIL.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use paracrypt_core::engine;
use paracrypt_core::request::{self, Driver, HEAD_LEN, Request};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::{Bytes, new_bytes};
use crate::errors::{Failure, usage};
use crate::options::{Options, detached};
use crate::output::Staged;

/// Emits the request's warnings (legacy algorithms, no integrity) as
/// `paracrypt.LegacyWarning`s.
pub fn warn(py: Python<'_>, request: &Request) -> PyResult<()> {
    let warnings = request.warnings();
    if warnings.is_empty() {
        return Ok(());
    }
    let category = py.import("paracrypt._errors")?.getattr("LegacyWarning")?;
    let warn = py.import("warnings")?.getattr("warn")?;
    for message in warnings {
        warn.call1((message, &category, 1))?;
    }
    Ok(())
}

/// Opens `src` for reading.
pub fn open_input(src: &Path) -> Result<File, Failure> {
    Ok(paracrypt_core::request::open_input(src)?)
}

/// Whether `file` is a regular file (read with positional reads on every thread; anything else,
/// a FIFO or a device, is read as a stream).
fn is_regular(file: &File) -> bool {
    file.metadata().is_ok_and(|m| m.is_file())
}

/// Runs `request` from the file `src` into `dst` (staged: nothing at `dst` unless it all
/// succeeded). Returns the bytes written.
pub fn file_to_file(
    py: Python<'_>,
    request: &Request,
    src: &Path,
    dst: &Path,
    overwrite: bool,
    options: &Options,
) -> PyResult<u64> {
    warn(py, request)?;
    // Everything from opening the input (a FIFO waits for its writer there) to the commit runs
    // without the GIL.
    options.run(py, || {
        let input = open_input(src)?;
        let output = Staged::create(dst, overwrite, Some(src))?;
        let written = run_file(request, options, &input, &output)?;
        // A progress callback that raised fails the call before anything is committed.
        options.report()?;
        output.commit()?;
        Ok(written)
    })
}

/// Runs `request` from `input` into `output`: positional work on every thread for a regular
/// file, a stream otherwise (and for armor).
fn run_file(
    request: &Request,
    options: &Options,
    input: &File,
    output: &Staged,
) -> Result<u64, Failure> {
    let runner = options.runner();
    let mut writer = output.file();
    if is_regular(input) {
        let resolved = request.resolve(&request::head_of(input)?, Driver::Whole)?;
        if !resolved.in_order() {
            return Ok(runner.file(resolved.recipe(), input, output.file())?);
        }
        // Armor, read in order from the file's start.
        return Ok(resolved.stream(&runner, &mut &*input, &mut writer)?);
    }
    // A FIFO or a device: its first bytes are read from the stream, then put back in front.
    let mut reader = input;
    let mut start = Vec::with_capacity(HEAD_LEN);
    (&mut reader)
        .take(HEAD_LEN as u64)
        .read_to_end(&mut start)
        .map_err(|e| Failure::Io("reading the header".into(), e))?;
    let resolved = request.resolve(&start, Driver::Whole)?;
    Ok(resolved.stream(&runner, &mut (&start[..]).chain(reader), &mut writer)?)
}

/// Runs `request` over the bytes of `data` (any buffer, read in place) into a new `bytes`.
pub fn memory<'py>(
    py: Python<'py>,
    request: &Request,
    data: &Bound<'py, PyAny>,
    options: &Options,
) -> PyResult<Bound<'py, PyBytes>> {
    warn(py, request)?;
    let data = Bytes::get(data)?;
    let input = data.as_slice();
    let runner = options.runner();
    let resolved = request
        .resolve(input, Driver::Whole)
        .map_err(Failure::from)?;
    // Armor runs in order, as a stream, into a growing buffer.
    if resolved.in_order() {
        let out = options.run(py, || {
            let mut out = Vec::new();
            resolved.stream(&runner, &mut &input[..], &mut out)?;
            Ok(out)
        })?;
        return Ok(PyBytes::new(py, &out));
    }
    // Otherwise the output's size is known from the plan: the chunks are written straight into
    // the `bytes` object, on every thread.
    let provider = options.provider;
    let job = options.run(py, || {
        Ok(resolved
            .recipe()
            .first_job(&mut &input[..], Some(input.len() as u64), provider)?)
    })?;
    let plan = job
        .plan()
        .expect("a job made with the input's length has a plan");
    let bound = usize::try_from(plan.output_len())
        .map_err(|_| Failure::Usage("the output does not fit in memory".into()))?;
    let mut end = 0;
    // Zeroed and filled on the pool's threads without the GIL (see `buffer::new_bytes`).
    let bytes = new_bytes(py, bound, |out| {
        end = detached(py, options.threads, || {
            Ok(engine::run_into_slice(&job, input, out.zeroed())?)
        })?;
        Ok(())
    })?;
    let end = end as usize;
    // Padding removed from the last chunk (CBC): the real output is shorter than the bound.
    Ok(if end == bound {
        bytes
    } else {
        PyBytes::new(py, &bytes.as_bytes()[..end])
    })
}

/// Runs `request` over the bytes of `data` into the start of `out`, a writable buffer kept by
/// the caller (bytearray, memoryview, numpy array, mmap) that must hold the whole output;
/// returns the bytes written. No allocation: what a caller calling again and again reuses.
/// Nothing of a chunk that fails reaches `out` (the engine wipes its slot).
pub fn memory_into(
    py: Python<'_>,
    request: &Request,
    data: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    options: &Options,
) -> PyResult<u64> {
    warn(py, request)?;
    let data = Bytes::get(data)?;
    let mut out = Bytes::get_mut(out)?;
    let input = data.as_slice();
    let out = out.as_mut_slice();
    let (from, to) = (input.as_ptr_range(), out.as_ptr_range());
    if !input.is_empty() && !out.is_empty() && from.start < to.end && to.start < from.end {
        return Ok(usage("out overlaps data: give a buffer of its own")?);
    }
    let resolved = request
        .resolve(input, Driver::Buffer)
        .map_err(Failure::from)?;
    let provider = options.provider;
    let job = options.run(py, || {
        Ok(resolved
            .recipe()
            .first_job(&mut &input[..], Some(input.len() as u64), provider)?)
    })?;
    let plan = job
        .plan()
        .expect("a job made with the input's length has a plan");
    let needed = plan.output_len();
    if (out.len() as u64) < needed {
        return Ok(usage(format!(
            "out holds {} bytes; this output needs {needed}",
            out.len()
        ))?);
    }
    let out = &mut out[..needed as usize];
    Ok(detached(py, options.threads, || {
        Ok(engine::run_into_slice(&job, input, out)?)
    })?)
}

/// Runs only the chunks of `request`'s job over the file `src` that cover output bytes
/// `offset..offset + length`, and returns those bytes.
pub fn range<'py>(
    py: Python<'py>,
    request: &Request,
    src: &Path,
    offset: u64,
    length: u64,
    options: &Options,
) -> PyResult<Bound<'py, PyBytes>> {
    let out = options.run(py, || {
        let input = open_input(src)?;
        if !is_regular(&input) {
            return usage(format!(
                "{} is not a regular file (a range reads only the chunks it needs)",
                src.display()
            ));
        }
        let resolved = request.resolve(&request::head_of(&input)?, Driver::Range)?;
        let mut out = Vec::new();
        options
            .runner()
            .range(resolved.recipe(), &input, offset, length, &mut out)?;
        Ok(out)
    })?;
    Ok(PyBytes::new(py, &out))
}
