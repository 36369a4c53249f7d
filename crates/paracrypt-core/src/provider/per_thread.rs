//! One copy of a backend's key object per thread of the pool.
//!
//! A key object of a C library is not only numbers: aws-lc's and OpenSSL's `RSA` carry a lock,
//! a cache of blinding values and Montgomery contexts, every `EVP_PKEY` a reference count
//! that each operation's context takes and drops. Two threads signing with one object write to
//! the same cache lines on every operation. [`PerThread`] gives each thread of the current
//! Rayon pool its own copy, built the first time that thread uses the key (from the key's DER,
//! never a new key schedule per operation), so a batch shares nothing but the read-only
//! numbers it started from.

use std::sync::OnceLock;

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
}
