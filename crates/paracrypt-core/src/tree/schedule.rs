//! One schedule for a tree's files and chunks, on the caller's one Rayon pool.
//!
//! Every file is cut into tasks: a file of up to [`TASK_BYTES`] is one task, and runs of
//! consecutive such small files are batched into one claim (up to [`TASK_BYTES`] and
//! [`BATCH_FILES`] files together); a larger file is cut into runs of chunks of about
//! [`TASK_BYTES`] each, its tasks claimed by any thread. Every pool thread claims the next
//! batch from one counter (one atomic operation per batch, no lock) and runs its tasks on its
//! own ([`run_here`](super::chunks::run_here)). So a tree of one large file runs on every core
//! as that file alone does, and a tree of many tiny files is not bound by one core, with no
//! second pool and no thread per file.
//!
//! **Lanes.** The claims are woven from one lane per thread: each lane takes the next file of
//! the tree (a large file's tasks, or one batch of small files) when it has none left, and the
//! lanes give one claim each in turn. Threads that claim at about the same time so take tasks
//! of different files, and rarely write one file at once while the tree has other files to
//! give: Linux takes a file's inode lock for every buffered write (`docs/SCALING.md`), and two
//! threads writing one file wait on it, where claims in file order put every thread on the same
//! large file. A tree of one large file has nothing to weave, and its tasks go in order.
//!
//! **Bounds.** A file is opened by the first of its tasks to run and closed by the last. A file
//! with tasks both claimed and not is at the head of a lane, and every other open file has a
//! task running on some thread, so at most `2 × threads` files are open on each side (input
//! and output) at any time. A task's bytes sit in its thread's scratch buffer (its input and
//! output, about `2 × TASK_BYTES`, or one chunk and its output when chunks are larger): at most
//! one task per thread is in flight. Memory beyond that is the list of files and of claims
//! (tens of bytes each, with the manifest's entries).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::engine::TASK_BYTES;
use crate::error::Error;

/// The most small files one batch carries.
pub const BATCH_FILES: usize = 64;

/// One file's share of the schedule: how many chunks its job will have, their plaintext size,
/// and whether the file must run in order (age's armor: one task, as a stream).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Planned {
    /// Its bytes (the plaintext's).
    pub bytes: u64,
    /// Its chunks.
    pub chunks: u64,
    /// Plaintext bytes per chunk.
    pub chunk_size: usize,
    /// One task, in order.
    pub in_order: bool,
}

/// A file's work, as the schedule runs it.
pub(crate) trait FileWork: Sync {
    /// What an open file holds while its tasks run (its input and output files, its job).
    type Open: Send + Sync;

    /// Opens file `file` (the first of its tasks to run does it).
    fn open(&self, file: usize) -> Result<Self::Open, Error>;

    /// Runs the chunks `chunks` of file `file`.
    fn run(&self, file: usize, open: &Self::Open, chunks: Range<u64>) -> Result<(), Error>;

    /// Every task of `file` is done: finish it (check, commit).
    fn finish(&self, file: usize, open: Self::Open) -> Result<(), Error>;

    /// File `file` failed with `error` (its open state, if any, is dropped: no output remains).
    fn failed(&self, file: usize, error: Error);

    /// Whether `error` ends the whole run (a full disk): no new file is started after it.
    fn stops_all(&self, error: &Error) -> bool;
}

/// Where a file stands.
enum Slot<T> {
    Closed,
    Open(Arc<T>),
    Failed,
}

struct FileState<T> {
    slot: Mutex<Slot<T>>,
    /// Its tasks not yet done.
    remaining: AtomicU64,
}

/// One claim: consecutive tasks, as `(file, chunks)`.
type Batch = Vec<(usize, Range<u64>)>;

/// The batches of `files`, each file's in order, woven from `lanes` lanes (see the module's
/// documentation).
fn batches(files: &[Planned], lanes: usize) -> Vec<Batch> {
    weave(units(files), lanes)
}

/// The units of `files`, in order: a large file's tasks, or one batch of consecutive small
/// files.
fn units(files: &[Planned]) -> Vec<Vec<Batch>> {
    let mut out: Vec<Vec<Batch>> = Vec::new();
    let mut small: Batch = Vec::new();
    let mut small_bytes = 0u64;
    let flush = |small: &mut Batch, bytes: &mut u64, out: &mut Vec<Vec<Batch>>| {
        if !small.is_empty() {
            out.push(vec![std::mem::take(small)]);
            *bytes = 0;
        }
    };
    for (index, file) in files.iter().enumerate() {
        let whole = 0..file.chunks;
        if file.in_order || file.bytes <= TASK_BYTES as u64 {
            if small_bytes + file.bytes > TASK_BYTES as u64 || small.len() == BATCH_FILES {
                flush(&mut small, &mut small_bytes, &mut out);
            }
            small.push((index, whole));
            small_bytes += file.bytes;
            continue;
        }
        flush(&mut small, &mut small_bytes, &mut out);
        let per_task = (TASK_BYTES / file.chunk_size.max(1)).max(1) as u64;
        let mut tasks = Vec::with_capacity(file.chunks.div_ceil(per_task) as usize);
        let mut start = 0;
        while start < file.chunks {
            let end = (start + per_task).min(file.chunks);
            tasks.push(vec![(index, start..end)]);
            start = end;
        }
        out.push(tasks);
    }
    flush(&mut small, &mut small_bytes, &mut out);
    out
}

/// The batches of `units` woven from `lanes` lanes: each lane takes the next unit when it has
/// no batch left, and the lanes give one batch each in turn.
fn weave(units: Vec<Vec<Batch>>, lanes: usize) -> Vec<Batch> {
    let mut out = Vec::with_capacity(units.iter().map(Vec::len).sum());
    let mut units = units.into_iter();
    let mut lanes: Vec<std::vec::IntoIter<Batch>> =
        (0..lanes.max(1)).map(|_| Vec::new().into_iter()).collect();
    loop {
        let mut gave = false;
        for lane in &mut lanes {
            let batch = lane.next().or_else(|| {
                units.by_ref().find_map(|unit| {
                    let mut next = unit.into_iter();
                    let first = next.next();
                    *lane = next;
                    first
                })
            });
            if let Some(batch) = batch {
                out.push(batch);
                gave = true;
            }
        }
        if !gave {
            return out;
        }
    }
}

/// How a schedule ended.
#[derive(Debug, Default)]
pub(crate) struct Ran {
    /// Files never started because a failure stopped the run.
    pub not_started: u64,
}

/// Runs every file of `files` through `work` on every thread of the current pool.
pub(crate) fn run<W: FileWork>(work: &W, files: &[Planned]) -> Ran {
    let workers = rayon::current_num_threads();
    let batches = batches(files, workers);
    let states: Vec<FileState<W::Open>> = files
        .iter()
        .map(|_| FileState {
            slot: Mutex::new(Slot::Closed),
            remaining: AtomicU64::new(0),
        })
        .collect();
    for batch in &batches {
        for (file, _) in batch {
            states[*file].remaining.fetch_add(1, Ordering::Relaxed);
        }
    }
    let next = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let not_started = AtomicU64::new(0);
    (0..workers).into_par_iter().for_each(|_| {
        loop {
            let claimed = next.fetch_add(1, Ordering::Relaxed);
            let Some(batch) = batches.get(claimed) else {
                return;
            };
            for (file, chunks) in batch {
                task(
                    work,
                    &states[*file],
                    *file,
                    chunks.clone(),
                    &stopped,
                    &not_started,
                );
            }
        }
    });
    Ran {
        not_started: not_started.into_inner(),
    }
}

/// Runs one task of `file`: opens it if no task did, runs its chunks, and finishes it when it
/// was the last one; records a failure once.
fn task<W: FileWork>(
    work: &W,
    state: &FileState<W::Open>,
    file: usize,
    chunks: Range<u64>,
    stopped: &AtomicBool,
    not_started: &AtomicU64,
) {
    let open = {
        let mut slot = state.slot.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Slot::Open(open) => Some(Arc::clone(open)),
            Slot::Failed => None,
            Slot::Closed if stopped.load(Ordering::Relaxed) => {
                *slot = Slot::Failed;
                not_started.fetch_add(1, Ordering::Relaxed);
                None
            }
            Slot::Closed => match work.open(file) {
                Ok(open) => {
                    let open = Arc::new(open);
                    *slot = Slot::Open(Arc::clone(&open));
                    Some(open)
                }
                Err(error) => {
                    *slot = Slot::Failed;
                    drop(slot);
                    fail(work, file, error, stopped);
                    None
                }
            },
        }
    };
    if let Some(open) = open {
        let result = work.run(file, &open, chunks);
        drop(open);
        if let Err(error) = result {
            let mut slot = state.slot.lock().unwrap_or_else(|e| e.into_inner());
            if !matches!(*slot, Slot::Failed) {
                // The open file goes with the last reference to it.
                *slot = Slot::Failed;
                drop(slot);
                fail(work, file, error, stopped);
            }
        }
    }
    if state.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
        let slot = std::mem::replace(
            &mut *state.slot.lock().unwrap_or_else(|e| e.into_inner()),
            Slot::Failed,
        );
        if let Slot::Open(open) = slot {
            let open = Arc::into_inner(open).expect("every task of the file is done");
            if let Err(error) = work.finish(file, open) {
                fail(work, file, error, stopped);
            }
        }
    }
}

fn fail<W: FileWork>(work: &W, file: usize, error: Error, stopped: &AtomicBool) {
    if work.stops_all(&error) {
        stopped.store(true, Ordering::Relaxed);
    }
    work.failed(file, error);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(bytes: u64, chunk_size: usize) -> Planned {
        Planned {
            bytes,
            chunks: bytes.div_ceil(chunk_size as u64).max(1),
            chunk_size,
            in_order: false,
        }
    }

    #[test]
    fn small_files_are_batched_and_large_ones_split() {
        let mib = 1 << 20;
        let files = [
            planned(10, mib),
            planned(0, mib),
            planned(600_000, mib),
            planned(600_000, mib),
            planned(5 * mib as u64 + 1, 64 << 10),
            planned(3, mib),
        ];
        // One lane: the files in order.
        let got = batches(&files, 1);
        assert_eq!(got[0], vec![(0, 0..1), (1, 0..1), (2, 0..1)]);
        assert_eq!(got[1], vec![(3, 0..1)]);
        // 81 chunks of 64 KiB, 16 to a task.
        let large = got[2..8].to_vec();
        assert_eq!(large[0], vec![(4, 0..16)]);
        assert_eq!(large[5], vec![(4, 80..81)]);
        assert_eq!(got[8], vec![(5, 0..1)]);
        assert_eq!(got.len(), 9);
        let many: Vec<Planned> = (0..200).map(|_| planned(1, mib)).collect();
        assert_eq!(batches(&many, 1).len(), 4);
        assert_eq!(batches(&many, 3).len(), 4);
    }

    /// Threads that claim one after the other take tasks of different files while the tree
    /// has other files to give; each file's tasks stay in order and every task is claimed
    /// once, whatever the number of lanes.
    #[test]
    fn lanes_give_consecutive_claims_to_different_files() {
        let mib = 1 << 20;
        // Two files of three tasks, small files, one of two tasks, small files.
        let mut files = vec![planned(3 * mib as u64, mib), planned(3 * mib as u64, mib)];
        files.extend((0..4).map(|_| planned(600_000, mib)));
        files.push(planned(2 * mib as u64, mib));
        files.extend((0..2).map(|_| planned(10, mib)));
        let got = batches(&files, 2);
        let claims: Vec<Vec<usize>> = got
            .iter()
            .map(|batch| batch.iter().map(|(file, _)| *file).collect())
            .collect();
        assert_eq!(
            claims,
            [
                vec![0],
                vec![1],
                vec![0],
                vec![1],
                vec![0],
                vec![1],
                vec![2],
                vec![3],
                vec![4],
                vec![5],
                vec![6],
                vec![7, 8],
                vec![6],
            ]
        );
        for lanes in 1..6 {
            let got = batches(&files, lanes);
            let mut flat: Vec<(usize, Range<u64>)> = got.into_iter().flatten().collect();
            // Sorting by file alone keeps each file's tasks in the order they were claimed.
            flat.sort_by_key(|(file, _)| *file);
            assert_eq!(flat, batches(&files, 1).concat(), "{lanes} lanes");
        }
    }

    /// Opens, runs and finishes each file once, whatever the thread count; a failed file is
    /// never finished; a failure that stops the run starts no new file.
    #[test]
    fn every_file_is_opened_and_finished_once() {
        struct Count {
            opened: Vec<AtomicU64>,
            finished: Vec<AtomicU64>,
            chunks: Vec<AtomicU64>,
            failed: Mutex<Vec<usize>>,
            open_now: Arc<AtomicU64>,
            most_open: AtomicU64,
        }
        /// An open file, counted while it is open.
        struct Opened(usize, Arc<AtomicU64>);
        impl Drop for Opened {
            fn drop(&mut self) {
                self.1.fetch_sub(1, Ordering::Relaxed);
            }
        }
        impl FileWork for Count {
            type Open = Opened;
            fn open(&self, file: usize) -> Result<Opened, Error> {
                self.opened[file].fetch_add(1, Ordering::Relaxed);
                if file == 7 {
                    return Err(Error::Tree("seven".into()));
                }
                let now = self.open_now.fetch_add(1, Ordering::Relaxed) + 1;
                self.most_open.fetch_max(now, Ordering::Relaxed);
                Ok(Opened(file, Arc::clone(&self.open_now)))
            }
            fn run(&self, file: usize, open: &Opened, chunks: Range<u64>) -> Result<(), Error> {
                assert_eq!(file, open.0);
                self.chunks[file].fetch_add(chunks.end - chunks.start, Ordering::Relaxed);
                if file == 30 && chunks.start == 16 {
                    return Err(Error::Tree("thirty".into()));
                }
                Ok(())
            }
            fn finish(&self, file: usize, _: Opened) -> Result<(), Error> {
                self.finished[file].fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            fn failed(&self, file: usize, _: Error) {
                self.failed.lock().unwrap().push(file);
            }
            fn stops_all(&self, _: &Error) -> bool {
                false
            }
        }
        let files: Vec<Planned> = (0..60)
            .map(|i| planned(if i % 10 == 0 { 3 << 20 } else { 1000 }, 64 << 10))
            .collect();
        for threads in [1, 4] {
            let count = Count {
                opened: (0..60).map(|_| AtomicU64::new(0)).collect(),
                finished: (0..60).map(|_| AtomicU64::new(0)).collect(),
                chunks: (0..60).map(|_| AtomicU64::new(0)).collect(),
                failed: Mutex::new(Vec::new()),
                open_now: Arc::new(AtomicU64::new(0)),
                most_open: AtomicU64::new(0),
            };
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| run(&count, &files));
            for (i, file) in files.iter().enumerate() {
                assert_eq!(count.opened[i].load(Ordering::Relaxed), 1, "file {i}");
                let finished = count.finished[i].load(Ordering::Relaxed);
                assert_eq!(finished, u64::from(i != 7 && i != 30), "file {i}");
                if i != 7 && i != 30 {
                    assert_eq!(
                        count.chunks[i].load(Ordering::Relaxed),
                        file.chunks,
                        "file {i}"
                    );
                }
            }
            let mut failed = count.failed.into_inner().unwrap();
            failed.sort();
            assert_eq!(failed, [7, 30]);
            assert!(count.most_open.load(Ordering::Relaxed) <= 2 * threads as u64);
        }
    }
}
