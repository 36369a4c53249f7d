//! Which units of work — chunks, or the parts of an output made of parts — each rank gets.

use std::ops::Range;
use std::sync::Mutex;

use paracrypt_core::plan::share;

use crate::Schedule;

/// The most bytes of chunks in one batch: with [`DEPTH`](crate::protocol::DEPTH) batches per
/// worker this bounds what a rank holds under the messages transport.
pub const MAX_BATCH_BYTES: usize = 32 << 20;

/// The most bytes of chunks in one batch under the messages transport: a batch crosses the
/// link twice (in, then out), and the last one's return is time the link carries nothing else,
/// so smaller batches end a run sooner on a slow link (8 MiB: 0.7 s at 100 Mbit/s).
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;

/// Rank 0's dispenser of batches of units, shared by its serving loop and its own compute
/// thread.
pub struct Dispenser {
    state: Mutex<State>,
    size: usize,
    max_chunks: u64,
}

struct State {
    /// Dynamic: the next unit to hand out.
    next: u64,
    /// Static: what is left of each rank's block.
    blocks: Vec<Range<u64>>,
    /// The lowest unit known to have failed.
    failed: u64,
    schedule: Schedule,
    chunks: u64,
}

impl Dispenser {
    /// A dispenser of `chunks` units over `size` ranks, no batch over `max_chunks` units;
    /// under the static schedule each rank's share is its [`share`] (for chunks, its
    /// [`ChunkPlan::block`](paracrypt_core::plan::ChunkPlan::block)).
    pub fn new(schedule: Schedule, chunks: u64, size: usize, max_chunks: u64) -> Self {
        Dispenser {
            state: Mutex::new(State {
                next: 0,
                blocks: (0..size).map(|r| share(chunks, r, size)).collect(),
                failed: u64::MAX,
                schedule,
                chunks,
            }),
            size,
            max_chunks: max_chunks.max(1),
        }
    }

    /// The next batch for `rank`, which runs `threads` threads; `None` when its work is done.
    ///
    /// Batches above a failed chunk are no longer handed out (their result could not change
    /// which failure is reported), batches below it still are.
    pub fn next(&self, rank: usize, threads: usize) -> Option<Range<u64>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let threads = threads.max(1) as u64;
        let failed = state.failed;
        let batch = match state.schedule {
            Schedule::Static => {
                let block = &mut state.blocks[rank];
                let len = (4 * threads)
                    .min(self.max_chunks)
                    .min(block.end - block.start);
                let batch = block.start..block.start + len;
                block.start += len;
                batch
            }
            Schedule::Dynamic => {
                // Guided self-scheduling: a share of what is left, at least one chunk per
                // thread and at most four, so the last batches are small and even out.
                let left = state.chunks - state.next;
                let len = (left / (2 * self.size as u64))
                    .clamp(threads, 4 * threads)
                    .min(self.max_chunks)
                    .min(left);
                let batch = state.next..state.next + len;
                state.next += len;
                batch
            }
        };
        (!batch.is_empty() && batch.start <= failed).then_some(batch)
    }

    /// Notes that unit `chunk` failed.
    pub fn fail(&self, chunk: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.failed = state.failed.min(chunk);
    }
}

#[cfg(test)]
mod tests {
    use paracrypt_core::plan::ChunkPlan;

    use super::*;

    fn drain(d: &Dispenser, size: usize) -> Vec<Range<u64>> {
        let mut all = Vec::new();
        let mut active = vec![true; size];
        while active.iter().any(|&a| a) {
            for (rank, a) in active.iter_mut().enumerate() {
                match d.next(rank, 2) {
                    Some(b) => all.push(b),
                    None => *a = false,
                }
            }
        }
        all.sort_by_key(|b| b.start);
        all
    }

    #[test]
    fn every_chunk_is_handed_out_once() {
        for schedule in [Schedule::Static, Schedule::Dynamic] {
            for chunks in [1u64, 5, 64, 1000] {
                for size in [1, 2, 3, 7] {
                    let plan = ChunkPlan::identity(chunks * 16, 16).unwrap();
                    assert_eq!(
                        share(plan.len(), size - 1, size),
                        plan.block(size - 1, size)
                    );
                    let d = Dispenser::new(schedule, plan.len(), size, 6);
                    let batches = drain(&d, size);
                    let mut next = 0;
                    for b in batches {
                        assert_eq!(b.start, next);
                        assert!(b.end - b.start <= 6);
                        next = b.end;
                    }
                    assert_eq!(next, chunks, "{schedule} {chunks} {size}");
                }
            }
        }
    }

    #[test]
    fn nothing_above_a_failure_is_handed_out() {
        let plan = ChunkPlan::identity(100 * 16, 16).unwrap();
        let d = Dispenser::new(Schedule::Dynamic, plan.len(), 2, 4);
        let first = d.next(0, 1).unwrap();
        d.fail(first.start);
        assert_eq!(d.next(1, 1), None);
    }
}
