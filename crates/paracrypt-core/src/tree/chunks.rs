//! One task of a tree's schedule: a run of one file's chunks, read, transformed, hashed and
//! written on the calling thread.
//!
//! The engine's own drivers spread one file's chunks over the pool; a tree spreads its files'
//! tasks instead (see [`schedule`](super::schedule)), so each task runs here, alone on its
//! thread, in that thread's scratch buffer: one positional read of the task's input, each
//! chunk transformed from it into the output buffer by the engine's own chunk loop
//! ([`transform_run`]), the plaintext's BLAKE3 leaf of each chunk computed while it is in cache
//! (the input when sealing, the output when opening), and one positional write.

use std::ops::Range;

use crate::buffer::with_scratch;
use std::sync::atomic::AtomicU64;

use crate::engine::{Job, Sink, Source, transform_run};
use crate::error::{ChunkError, Result};
use crate::sign::tree::{HASH_LEN, leaf};

/// Which side of a task holds the plaintext whose leaves the manifest keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plain {
    /// Sealing: the input.
    Input,
    /// Opening: the output.
    Output,
}

/// What a task did.
pub(crate) struct Ran {
    /// The leaf of each chunk of the task, in order.
    pub leaves: Vec<[u8; HASH_LEN]>,
    /// Where the output ends, when the task held the plan's last chunk.
    pub end: Option<u64>,
}

/// Runs the chunks `chunks` of `job` from `source` into `sink` (or nowhere: a check) on the
/// calling thread and returns their plaintext leaves. On failure, the failing chunk's output
/// slot is wiped and nothing of the task is written.
pub(crate) fn run_here(
    job: &Job,
    chunks: Range<u64>,
    source: &dyn Source,
    sink: Option<&dyn Sink>,
    plain: Plain,
) -> Result<Ran, ChunkError> {
    let plan = job.planned();
    let context_len = if chunks.start > 0 {
        job.context_len()
    } else {
        0
    };
    let first = plan.chunk(chunks.start);
    let last = plan.chunk(chunks.end - 1);
    let input_start = first.input.start - context_len as u64;
    let input_len = (last.input.end - input_start) as usize;
    let output_len = (last.output.end - first.output.start) as usize;
    with_scratch(input_len + output_len, |buf| {
        let (input, output) = buf.split_at_mut(input_len);
        source
            .read_chunk(chunks.start, input_start, input)
            .map_err(|source| ChunkError {
                index: chunks.start,
                source,
            })?;
        let mut leaves = Vec::with_capacity((chunks.end - chunks.start) as usize);
        // No other task of this file's run stops this one: a failure is this task's own.
        let failed = AtomicU64::new(u64::MAX);
        let done = job.transform().here(|t| {
            transform_run(
                plan,
                job.context_len(),
                chunks.clone(),
                input_start,
                input,
                output,
                t,
                &failed,
                |index, chunk_input, chunk_output| {
                    leaves.push(match plain {
                        Plain::Input => leaf(index, chunk_input),
                        Plain::Output => leaf(index, chunk_output),
                    });
                },
            )
        });
        let end = done.result?;
        if let Some(sink) = sink {
            sink.write_run(plan, chunks.clone(), &output[..done.len])
                .map_err(|source| ChunkError {
                    index: chunks.start,
                    source,
                })?;
        }
        Ok(Ran { leaves, end })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recipe;
    use crate::container::{Decryptor, Encryptor, Key};
    use crate::engine::{self, SliceSink, SliceSource};
    use crate::plan::ChunkSize;
    use crate::provider::Provider;
    use crate::sign::tree::FileDigest;

    /// Tasks run here, in any order, give the engine's bytes and the tree hash's leaves, both
    /// ways.
    #[test]
    fn tasks_give_the_engines_bytes_and_the_plaintext_leaves() {
        let size = ChunkSize::new(4096).unwrap();
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let key = Key::generate();
        let seal = Encryptor::new(key.clone()).chunk_size(size);
        let job = seal
            .first_job(&mut &[][..], Some(data.len() as u64), Provider::default())
            .unwrap();
        let mut whole = Vec::new();
        engine::run_in_memory(&job, &data, &mut whole).unwrap();

        let plan = job.plan().unwrap();
        let header = job.output_header().len();
        let mut sealed = vec![0u8; plan.output_len() as usize];
        sealed[..header].copy_from_slice(job.output_header());
        let mut leaves = vec![[0u8; 32]; plan.len() as usize];
        {
            let sink = SliceSink::new(plan, 0..plan.len(), &mut sealed[header..]);
            for run in [10..13, 0..4, 4..10] {
                let ran = run_here(
                    &job,
                    run.clone(),
                    &SliceSource(&data),
                    Some(&sink),
                    Plain::Input,
                )
                .unwrap();
                leaves[run.start as usize..run.end as usize].copy_from_slice(&ran.leaves);
            }
        }
        assert_eq!(sealed, whole);
        let flat: Vec<u8> = leaves.concat();
        let digest = FileDigest::from_leaves(size, data.len() as u64, &flat).unwrap();
        assert_eq!(digest, FileDigest::of_slice(size, &data));

        let open = Decryptor::new(key)
            .first_job(
                &mut &sealed[..],
                Some(sealed.len() as u64),
                Provider::default(),
            )
            .unwrap();
        let plan = open.plan().unwrap();
        let ran = run_here(
            &open,
            0..plan.len(),
            &SliceSource(&sealed),
            None,
            Plain::Output,
        )
        .unwrap();
        assert_eq!(ran.end, Some(data.len() as u64));
        assert_eq!(ran.leaves.concat(), flat);

        // A damaged chunk fails, naming it.
        let mut damaged = sealed.clone();
        damaged[header + 3 * 4112 + 7] ^= 1;
        let err = run_here(&open, 2..5, &SliceSource(&damaged), None, Plain::Output)
            .err()
            .unwrap();
        assert_eq!(err.index, 3);
    }
}
