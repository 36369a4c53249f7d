//! Ordered output from parallel work: the window behind [`run_to_writer`](super::run_to_writer)
//! and [`run_range`](super::run_range) (positional input) and the stream driver (a `Read`
//! input), for outputs that take bytes only in order (a pipe, a socket, `/dev/null`, a `Write`).
//!
//! Every pool thread reads its own tasks (with positional reads, or from a stream in its turn),
//! transforms them and hands them to the output, in task order, through a window of
//! `2 × threads` output buffers: no thread reads for the others, and none is set aside to
//! write. Whichever worker finishes the task the
//! output waits for becomes the writer for as long as finished tasks follow in order (an atomic
//! flag elects it, as in flat combining); the others go on transforming. A worker whose task
//! is a whole window ahead of the output waits, so memory stays at the window's buffers plus
//! one input buffer per thread, whatever the input size.
//!
//! Each slot of the window has its own lock, taken for moments by the worker that fills it and
//! by the writer while it writes it out (the writer only tries it: it never waits for a
//! worker): there is no lock shared by every task, only a few atomic operations per task, and
//! a lock and a wake-up when a worker has to wait for room.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::job::lowest_error;
use super::{Feed, Transform, claim_each};
use crate::buffer::{AlignedBuf, with_scratch};
use crate::error::{ChunkError, Result};

/// Where a run's output goes, in order: called with each task's chunks and their output (the
/// plan's last chunk cut to its real length). An error stops the run.
pub(crate) type Emit<'a> = dyn FnMut(Range<u64>, &[u8]) -> Result<()> + Send + 'a;

/// One task's place in the window.
pub(crate) struct Slot {
    /// The task whose output `buf` holds (`u64::MAX` before the first).
    task: u64,
    buf: AlignedBuf,
    /// Set once the task is transformed, taken by the writer.
    ready: Option<Ready>,
}

/// A transformed task, waiting for its turn.
pub(crate) struct Ready {
    /// The chunks transformed (all the task's, or those before the one that failed).
    pub chunks: Range<u64>,
    /// Their output length, at the front of the task's buffer.
    pub len: usize,
    /// Whether every chunk of the task was transformed; if not, the output stops after it.
    pub whole: bool,
}

/// The window between the workers and the output.
pub(crate) struct Window<'e, 'a> {
    slots: Box<[Mutex<Slot>]>,
    /// The lowest task not yet written.
    next: AtomicU64,
    /// Whether a worker is writing now.
    writing: AtomicBool,
    /// Set when a task failed or a write did: nothing more is written.
    stopped: AtomicBool,
    /// Workers waiting for room, and where they wait.
    sleepers: AtomicUsize,
    room: Mutex<()>,
    moved: Condvar,
    emit: Mutex<&'e mut Emit<'a>>,
}

/// Locks `mutex`, whose data stays consistent even if a holder panicked (the panic is
/// propagated by the pool anyway).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks `mutex` if nobody holds it. A slot is held only briefly by the worker that fills it,
/// which looks for a writer right after: the writer never waits for it.
fn try_lock<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

impl<'e, 'a> Window<'e, 'a> {
    /// A window of `width` tasks in front of `emit`.
    pub(crate) fn new(width: usize, emit: &'e mut Emit<'a>) -> Self {
        Window {
            slots: (0..width.max(1))
                .map(|_| {
                    Mutex::new(Slot {
                        task: u64::MAX,
                        buf: AlignedBuf::new(0),
                        ready: None,
                    })
                })
                .collect(),
            next: AtomicU64::new(0),
            writing: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            room: Mutex::new(()),
            moved: Condvar::new(),
            emit: Mutex::new(emit),
        }
    }

    fn slot(&self, task: u64) -> &Mutex<Slot> {
        &self.slots[(task % self.slots.len() as u64) as usize]
    }

    /// Waits until `task` has a slot (the task a window before it is written). Returns `false`
    /// when it never will, because the run stopped below it (`failed`: the lowest failing
    /// chunk so far; `first`: the task's first chunk).
    pub(crate) fn wait_for_room(&self, task: u64, first: u64, failed: &AtomicU64) -> bool {
        let width = self.slots.len() as u64;
        if task < self.next.load(Ordering::Acquire) + width {
            return true;
        }
        let mut guard = lock(&self.room);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let has_room = loop {
            if task < self.next.load(Ordering::SeqCst) + width {
                break true;
            }
            if self.stopped.load(Ordering::SeqCst) || first > failed.load(Ordering::SeqCst) {
                break false;
            }
            guard = self.moved.wait(guard).unwrap_or_else(|e| e.into_inner());
        };
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        has_room
    }

    /// The buffer of `task`'s slot, taken out while the task is computed (so that the slot is
    /// locked only for moments), once [`Window::wait_for_room`] said it has one. Buffers are
    /// made (empty) as the window first fills: a short run never pays for buffers it does not
    /// need.
    pub(crate) fn take_buf(&self, task: u64) -> AlignedBuf {
        std::mem::replace(&mut lock(self.slot(task)).buf, AlignedBuf::new(0))
    }

    /// Puts `task`'s buffer back with what it holds, for the writer.
    pub(crate) fn put(&self, task: u64, buf: AlignedBuf, ready: Ready) {
        let mut slot = lock(self.slot(task));
        slot.buf = buf;
        slot.task = task;
        slot.ready = Some(ready);
    }

    /// Wakes the workers waiting for room, if any.
    fn wake(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            drop(lock(&self.room));
            self.moved.notify_all();
        }
    }

    /// Writes every finished task from the next one on, in order, if no other worker is
    /// writing; the one that is sees this worker's task before it stops. Returns the error of
    /// a write that failed here.
    pub(crate) fn write_ready(&self, failed: &AtomicU64) -> Result<Option<u64>, ChunkError> {
        let mut result = Ok(None);
        loop {
            if self.writing.swap(true, Ordering::AcqRel) {
                return result;
            }
            while !self.stopped.load(Ordering::Relaxed) {
                let task = self.next.load(Ordering::Relaxed);
                let Some(mut slot) = try_lock(self.slot(task)) else {
                    break;
                };
                if slot.task != task {
                    break;
                }
                let Some(ready) = slot.ready.take() else {
                    break;
                };
                let written = if ready.chunks.is_empty() {
                    Ok(())
                } else {
                    (lock(&self.emit))(ready.chunks.clone(), &slot.buf[..ready.len])
                };
                drop(slot);
                if let Err(source) = written {
                    failed.fetch_min(ready.chunks.start, Ordering::SeqCst);
                    result = Err(ChunkError {
                        index: ready.chunks.start,
                        source,
                    });
                    self.stopped.store(true, Ordering::SeqCst);
                } else if !ready.whole {
                    self.stopped.store(true, Ordering::SeqCst);
                } else {
                    self.next.store(task + 1, Ordering::SeqCst);
                }
                self.wake();
            }
            self.writing.store(false, Ordering::Release);
            // A task finished after the last look above and before the flag fell found the
            // flag up and left its task to this writer: look once more.
            let task = self.next.load(Ordering::Acquire);
            let more = try_lock(self.slot(task))
                .is_some_and(|slot| slot.task == task && slot.ready.is_some());
            if !more || self.stopped.load(Ordering::SeqCst) {
                return result;
            }
        }
    }
}

/// Runs the tasks of `feed` on every worker of `transform` and hands their output to `emit` in
/// order. On failure: the error of the lowest failing chunk (a write that fails names the
/// first chunk it held), every chunk below it emitted and none above. Returns where the output
/// ends if the plan's last chunk was among the tasks.
pub(crate) fn run_ordered(
    feed: &Feed<'_>,
    transform: &Transform,
    emit: &mut Emit<'_>,
) -> Result<Option<u64>, ChunkError> {
    let (input_len, output_len) = feed.buffer_lens();
    let width = (2 * transform.workers()).min(feed.tasks() as usize);
    let window = Window::new(width, emit);
    let failed = AtomicU64::new(u64::MAX);
    claim_each(feed, transform, &failed, |t, task| {
        if !window.wait_for_room(task, feed.task(task).start, &failed) {
            return Ok(None);
        }
        let mut buf = window.take_buf(task);
        if buf.len() < output_len {
            buf = AlignedBuf::new(output_len);
        }
        let done = with_scratch(input_len, |input| {
            feed.read_and_transform(input, &mut buf, task, t, &failed)
        });
        let ready = Ready {
            whole: done.result.is_ok(),
            chunks: done.chunks,
            len: done.len,
        };
        window.put(task, buf, ready);
        lowest_error(done.result, window.write_ready(&failed))
    })
}
