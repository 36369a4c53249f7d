//! One copy of a backend's key object per thread of the pool.
//!
//! A key object of a C library is not only numbers: aws-lc's and OpenSSL's `RSA` carry a lock,
//! a cache of blinding values and Montgomery contexts, every `EVP_PKEY` a reference count
//! that each operation's context takes and drops. Two threads signing with one object write to
//! the same cache lines on every operation. [`PerThread`] gives each thread of the current
//! Rayon pool its own copy, built the first time that thread uses the key (from the key's DER,
//! never a new key schedule per operation), so a batch shares nothing but the read-only
//! numbers it started from.
//!
//! [`Working`] is the same idea for state a call changes: a cipher context that is keyed once
//! and then only re-pointed at each chunk's IV or nonce. Each pool thread gets its own, on a
//! cache line of its own, made the first time that thread needs it; a chunk then costs no
//! allocation, no key schedule and no shared write.

use std::sync::{Mutex, OnceLock, TryLockError};

use crossbeam_utils::CachePadded;

/// The most pool threads that get their own copy; threads beyond share the first one.
const MAX_COPIES: usize = 256;

/// A key object with one lazily built copy per Rayon worker thread.
pub(crate) struct PerThread<T> {
    /// The copy for threads outside a pool (and beyond [`MAX_COPIES`]).
    first: T,
    /// Worker `i`'s copy.
    copies: Box<[OnceLock<Option<T>>]>,
    /// Builds one more copy (`None` if the backend fails: that thread uses `first`).
    make: Box<dyn Fn() -> Option<T> + Send + Sync>,
}

impl<T: Send + Sync> PerThread<T> {
    /// `first`, and `make` for the copies, as many slots as the current pool has threads.
    pub(crate) fn new(first: T, make: impl Fn() -> Option<T> + Send + Sync + 'static) -> Self {
        let threads = rayon::current_num_threads()
            .max(std::thread::available_parallelism().map_or(1, usize::from))
            .min(MAX_COPIES);
        PerThread {
            first,
            copies: (0..threads).map(|_| OnceLock::new()).collect(),
            make: Box::new(make),
        }
    }

    /// This thread's copy.
    pub(crate) fn get(&self) -> &T {
        rayon::current_thread_index()
            .and_then(|i| self.copies.get(i))
            .and_then(|slot| slot.get_or_init(|| (self.make)()).as_ref())
            .unwrap_or(&self.first)
    }
}

/// A mutable working object per Rayon worker thread (and one for threads outside a pool), made
/// on first use; see [`Working::with`].
///
/// Each slot has its own lock, taken only by the thread whose index it is: uncontended, on a
/// cache line of its own, so threads never write to a line another thread reads. Nothing is
/// global: 64 threads work on 64 objects. (Only the OpenSSL provider keeps working objects.)
#[cfg_attr(not(feature = "openssl"), allow(dead_code))]
pub(crate) struct Working<T> {
    /// Worker `i`'s object.
    slots: Box<[CachePadded<Mutex<Option<T>>>]>,
    /// The object of threads outside a pool (and beyond the slots).
    outside: CachePadded<Mutex<Option<T>>>,
}

#[cfg_attr(not(feature = "openssl"), allow(dead_code))]
impl<T: Send> Working<T> {
    /// As many slots as the current pool (or this machine) has threads, all empty.
    pub(crate) fn new() -> Self {
        let threads = rayon::current_num_threads()
            .max(std::thread::available_parallelism().map_or(1, usize::from))
            .min(MAX_COPIES);
        Working {
            slots: (0..threads)
                .map(|_| CachePadded::new(Mutex::new(None)))
                .collect(),
            outside: CachePadded::new(Mutex::new(None)),
        }
    }

    /// Runs `f` on this thread's object, made by `make` the first time this thread asks.
    ///
    /// When the slot is busy (a second pool whose thread has the same index, or a thread
    /// outside any pool while another one works in the shared slot) `f` runs on a fresh object
    /// from `make`, dropped afterwards: never a wait, never a deadlock, the same result.
    pub(crate) fn with<R, E>(
        &self,
        make: impl Fn() -> Result<T, E>,
        f: impl FnOnce(&mut T) -> Result<R, E>,
    ) -> Result<R, E> {
        let slot = rayon::current_thread_index()
            .and_then(|i| self.slots.get(i))
            .unwrap_or(&self.outside);
        let mut guard = match slot.try_lock() {
            Ok(guard) => guard,
            // A panic inside `f` may have left the object mid-call: make a new one.
            Err(TryLockError::Poisoned(poisoned)) => {
                let mut guard = poisoned.into_inner();
                *guard = None;
                guard
            }
            Err(TryLockError::WouldBlock) => return f(&mut make()?),
        };
        let object = match &mut *guard {
            Some(object) => object,
            empty => empty.insert(make()?),
        };
        f(object)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// What a batch relies on: each thread of the pool works on a copy of its own, made once,
    /// and never on another thread's.
    #[test]
    fn each_pool_thread_gets_a_copy_of_its_own() {
        let made = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&made);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let copies = pool.install(|| {
            PerThread::new(0, move || Some(counter.fetch_add(1, Ordering::Relaxed) + 1))
        });
        assert_eq!(*copies.get(), 0, "outside the pool: the first copy");
        let seen = pool.broadcast(|_| *copies.get());
        let mut distinct = seen.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 3, "one copy per thread: {seen:?}");
        assert!(!seen.contains(&0), "no pool thread uses the first copy");
        assert_eq!(
            pool.broadcast(|_| *copies.get()),
            seen,
            "the same copy again"
        );
        assert_eq!(made.load(Ordering::Relaxed), 3);
    }

    /// Each pool thread works on an object of its own, made once and kept; a thread that finds
    /// its slot busy (here: the same index in a second pool, at the same time) gets a fresh one.
    #[test]
    fn each_thread_works_on_its_own_object_and_a_busy_slot_gets_a_fresh_one() {
        let made = AtomicUsize::new(0);
        let make = || Ok::<_, ()>(made.fetch_add(1, Ordering::Relaxed));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let working = pool.install(Working::<usize>::new);
        let seen = pool.broadcast(|_| working.with(make, |n| Ok(*n)).unwrap());
        assert_ne!(seen[0], seen[1], "one object per thread: {seen:?}");
        assert_eq!(
            pool.broadcast(|_| working.with(make, |n| Ok(*n)).unwrap()),
            seen
        );
        assert_eq!(made.load(Ordering::Relaxed), 2, "made once per thread");
        // Thread 0 of the pool holds its slot while thread 0 of another pool asks for it.
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let inner = pool.broadcast(|thread| {
            (thread.index() == 0).then(|| {
                working
                    .with(make, |_| {
                        Ok(other.install(|| working.with(make, |n| Ok(*n)).unwrap()))
                    })
                    .unwrap()
            })
        });
        assert_eq!(inner[0], Some(2), "a fresh object, not a wait");
        assert_eq!(
            pool.broadcast(|_| working.with(make, |n| Ok(*n)).unwrap()),
            seen
        );
        // Outside a pool: the shared slot, kept too.
        let outside = working.with(make, |n| Ok(*n)).unwrap();
        assert_eq!(working.with(make, |n| Ok(*n)).unwrap(), outside);
        assert_eq!(made.load(Ordering::Relaxed), 4);
    }
}
