//! Random access: running only the chunks that cover a range of the output.

use std::io::Write;

use super::{Job, Source, run_to_buffer};
use crate::error::{Error, Result};

/// Runs only the chunks of `job` whose output covers bytes `offset..offset + len` and writes
/// those bytes (fewer when the output ends first). Returns the bytes written.
///
/// A range that reaches the end of the output also runs the last chunk, so that a file cut
/// after a chunk boundary fails here as it does everywhere else: the last chunk's flag is what
/// shows the file ends there, and that chunk may cover no output at all. Memory stays bounded:
/// at most two tasks' worth of chunks ([`TASK_BYTES`](super::TASK_BYTES) of input each, at
/// least a chunk) per pool thread are held at a time.
///
/// # Panics
/// If the job was made without the input's length.
pub fn run_range(
    job: &Job,
    source: &dyn Source,
    offset: u64,
    len: u64,
    writer: &mut dyn Write,
) -> Result<u64> {
    let plan = job.planned();
    let upper = plan.output_len();
    if offset > upper {
        return Err(Error::RangeOutOfBounds { offset, len: upper });
    }
    if len == 0 {
        return Ok(0);
    }
    let wanted_end = offset.saturating_add(len);
    let end = wanted_end.min(upper);
    let mut chunks = plan.chunks_covering_output(offset..end);
    if wanted_end >= upper {
        chunks.end = plan.len();
    }
    // Two tasks per thread at a time (each up to `TASK_BYTES` of input, at least a chunk).
    let per_task = (super::TASK_BYTES / plan.layout().input_chunk).max(1) as u64;
    let batch = 2 * rayon::current_num_threads() as u64 * per_task;
    let mut written = 0;
    let mut buf = Vec::new();
    let mut first = chunks.start;
    while first < chunks.end {
        let last = (first + batch).min(chunks.end);
        let base = plan.chunk(first).output.start;
        // The last chunk's exact length is known once it is open (CBC padding).
        let real_end = run_to_buffer(job, first..last, source, &mut buf)?;
        let stop = end.min(base + buf.len() as u64);
        if let Some(real) = real_end.filter(|&real| offset > real) {
            return Err(Error::RangeOutOfBounds { offset, len: real });
        }
        let from = offset.max(base);
        if stop > from {
            let part = &buf[(from - base) as usize..(stop - base) as usize];
            writer
                .write_all(part)
                .map_err(|e| Error::io("writing output", e))?;
            written += part.len() as u64;
        }
        first = last;
    }
    Ok(written)
}
