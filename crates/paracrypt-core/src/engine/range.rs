//! Random access: running only the chunks that cover a range of the output.

use std::io::Write;

use super::{Job, Source, run_in_order};
use crate::error::{Error, Result};

/// Runs only the chunks of `job` whose output covers bytes `offset..offset + len` and writes
/// those bytes (fewer when the output ends first). Returns the bytes written.
///
/// A range that reaches the end of the output also runs the last chunk, so that a file cut
/// after a chunk boundary fails here as it does everywhere else: the last chunk's flag is what
/// shows the file ends there, and that chunk may cover no output at all. The chunks run as
/// [`run_to_writer`](super::run_to_writer) runs them: every pool thread reads and transforms
/// its own, and they reach `writer` in order, so memory stays at two tasks
/// ([`TASK_BYTES`](super::TASK_BYTES) of input each, at least a chunk) per pool thread in the
/// window and one input buffer per thread.
///
/// # Panics
/// If the job was made without the input's length.
pub fn run_range(
    job: &Job,
    source: &dyn Source,
    offset: u64,
    len: u64,
    writer: &mut (dyn Write + Send),
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
    let mut written = 0;
    let real_end = run_in_order(job, chunks, source, &mut |chunks, bytes| {
        // The last chunk's exact length is known once it is open (CBC padding): `bytes` has it.
        let base = plan.chunk(chunks.start).output.start;
        let (from, stop) = (offset.max(base), end.min(base + bytes.len() as u64));
        if stop > from {
            let part = &bytes[(from - base) as usize..(stop - base) as usize];
            writer
                .write_all(part)
                .map_err(|e| Error::io("writing output", e))?;
            written += part.len() as u64;
        }
        Ok(())
    })?;
    if let Some(real) = real_end.filter(|&real| offset > real) {
        return Err(Error::RangeOutOfBounds { offset, len: real });
    }
    Ok(written)
}
