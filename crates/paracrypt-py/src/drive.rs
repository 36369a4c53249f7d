//! The drivers a [`Spec`] runs on: file to file, memory to `bytes`, a range of a file. Each
//! is the core's [`Runner`](paracrypt_core::Runner) (or engine) doing the work without the GIL.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use paracrypt_core::agefile::DETECT_LEN;
use paracrypt_core::engine;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::{Bytes, new_bytes};
use crate::errors::{Failure, usage};
use crate::options::{Options, detached};
use crate::output::Staged;
use crate::recipes::{Built, Spec};

/// Opens `src` for reading.
pub fn open_input(src: &Path) -> Result<File, Failure> {
    let cannot = |e| Failure::Io(format!("cannot read {}", src.display()), e);
    let file = File::open(src).map_err(cannot)?;
    if file.metadata().map_err(cannot)?.is_dir() {
        return usage(format!("input {} is a directory", src.display()));
    }
    Ok(file)
}

/// Whether `file` is a regular file (read with positional reads on every thread; anything else,
/// a FIFO or a device, is read as a stream).
fn is_regular(file: &File) -> bool {
    file.metadata().is_ok_and(|m| m.is_file())
}

/// The first bytes of a file, read at offset 0 (its cursor left alone): what tells an age
/// file's armor from its binary form.
fn head_of(file: &File) -> Result<Vec<u8>, Failure> {
    let mut head = vec![0u8; DETECT_LEN];
    let mut filled = 0;
    while filled < head.len() {
        match file.read_at(&mut head[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::Io("reading the header".into(), e)),
        }
    }
    head.truncate(filled);
    Ok(head)
}

/// Runs `spec` from the file `src` into `dst` (staged: nothing at `dst` unless it all
/// succeeded). Returns the bytes written.
pub fn file_to_file(
    py: Python<'_>,
    spec: &Spec,
    src: &Path,
    dst: &Path,
    overwrite: bool,
    options: &Options,
) -> PyResult<u64> {
    spec.warn(py)?;
    let built = spec.build()?;
    // Everything from opening the input (a FIFO waits for its writer there) to the commit runs
    // without the GIL.
    options.run(py, || {
        let input = open_input(src)?;
        let output = Staged::create(dst, overwrite, Some(src))?;
        let written = run_file(&built, options, &input, &output)?;
        // A progress callback that raised fails the call before anything is committed.
        options.report()?;
        output.commit()?;
        Ok(written)
    })
}

/// Runs `built` from `input` into `output`: positional work on every thread for a regular
/// file, a stream otherwise (and for armor).
fn run_file(
    built: &Built,
    options: &Options,
    input: &File,
    output: &Staged,
) -> Result<u64, Failure> {
    {
        let runner = options.runner();
        let regular = is_regular(input);
        let head = if regular { head_of(input)? } else { Vec::new() };
        let in_order = built.in_order(&head);
        if regular && !in_order {
            return Ok(runner.file(built.recipe(), input, output.file())?);
        }
        // A stream: armor, or an input that is not a regular file (whose head is read with the
        // rest, so armor is recognised there too).
        let mut reader: Box<dyn Read + Send> = Box::new(input);
        let mut start = Vec::new();
        if !regular {
            (&mut reader)
                .take(DETECT_LEN as u64)
                .read_to_end(&mut start)
                .map_err(|e| Failure::Io("reading the header".into(), e))?;
        }
        let in_order = in_order || built.in_order(&start);
        let mut reader = (&start[..]).chain(reader);
        let mut writer = output.file();
        built.stream(&runner, &mut reader, &mut writer, in_order)
    }
}

/// Runs `spec` over the bytes of `data` (any buffer, read in place) into a new `bytes`.
pub fn memory<'py>(
    py: Python<'py>,
    spec: &Spec,
    data: &Bound<'py, PyAny>,
    options: &Options,
) -> PyResult<Bound<'py, PyBytes>> {
    spec.warn(py)?;
    let built = spec.build()?;
    let data = Bytes::get(data)?;
    let input = data.as_slice();
    let runner = options.runner();
    // Armor runs in order, as a stream, into a growing buffer.
    if built.in_order(&input[..input.len().min(DETECT_LEN)]) {
        let out = options.run(py, || {
            let mut out = Vec::new();
            built.stream(&runner, &mut &input[..], &mut out, true)?;
            Ok(out)
        })?;
        return Ok(PyBytes::new(py, &out));
    }
    // Otherwise the output's size is known from the plan: the chunks are written straight into
    // the `bytes` object, on every thread.
    let provider = options.provider;
    let job = options.run(py, || {
        Ok(built
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

/// Runs `spec` over the bytes of `data` into the start of `out`, a writable buffer kept by the
/// caller (bytearray, memoryview, numpy array, mmap) that must hold the whole output; returns
/// the bytes written. No allocation: what a caller calling again and again reuses.
pub fn memory_into(
    py: Python<'_>,
    spec: &Spec,
    data: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    options: &Options,
) -> PyResult<u64> {
    spec.warn(py)?;
    let built = spec.build()?;
    let data = Bytes::get(data)?;
    let mut out = Bytes::get_mut(out)?;
    let input = data.as_slice();
    let out = out.as_mut_slice();
    let (from, to) = (input.as_ptr_range(), out.as_ptr_range());
    if !input.is_empty() && !out.is_empty() && from.start < to.end && to.start < from.end {
        return Ok(usage("out overlaps data: give a buffer of its own")?);
    }
    if built.in_order(&input[..input.len().min(DETECT_LEN)]) {
        return Ok(usage(
            "armor is read and written in order: use encrypt() or decrypt(), which return bytes",
        )?);
    }
    let provider = options.provider;
    let job = options.run(py, || {
        Ok(built
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

/// Runs only the chunks of `spec`'s job over the file `src` that cover output bytes
/// `offset..offset + length`, and returns those bytes.
pub fn range<'py>(
    py: Python<'py>,
    spec: &Spec,
    src: &Path,
    offset: u64,
    length: u64,
    options: &Options,
) -> PyResult<Bound<'py, PyBytes>> {
    let built = spec.build()?;
    let out = options.run(py, || {
        let input = open_input(src)?;
        if !is_regular(&input) {
            return usage(format!(
                "{} is not a regular file (a range reads only the chunks it needs)",
                src.display()
            ));
        }
        if built.in_order(&head_of(&input)?) {
            return usage("a range needs a binary age file (armor is read in order)");
        }
        let mut out = Vec::new();
        options
            .runner()
            .range(built.recipe(), &input, offset, length, &mut out)?;
        Ok(out)
    })?;
    Ok(PyBytes::new(py, &out))
}
