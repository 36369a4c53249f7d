//! The options every call shares (`threads=`, `provider=`, `progress=`), and how work runs:
//! without the GIL, in a Rayon pool, with panics caught.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use paracrypt_core::Runner;
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use pyo3::prelude::*;
use rayon::ThreadPool;

use crate::errors::{Failure, panic_message, usage};

/// The most threads a call may ask for (the CLI's bound: four per core).
fn max_threads() -> usize {
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One pool per thread count asked for, made once and kept: a pool costs threads to make, and
/// a call per chunk of a pipeline must not pay that each time.
fn pool(threads: usize) -> Result<Arc<ThreadPool>, Failure> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(pool) = pools.get(&threads) {
        return Ok(Arc::clone(pool));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("paracrypt-{i}"))
        .build()
        .map_err(|e| Failure::Io("starting threads".into(), std::io::Error::other(e)))?;
    let pool = Arc::new(pool);
    pools.insert(threads, Arc::clone(&pool));
    Ok(pool)
}

/// `threads=`: `None` is one thread per core.
pub fn threads(threads: Option<i64>) -> Result<usize, Failure> {
    let default = std::thread::available_parallelism().map_or(1, |n| n.get());
    match threads {
        None => Ok(default),
        Some(n) if n >= 1 && (n as u64) <= max_threads() as u64 => Ok(n as usize),
        Some(n) => usage(format!(
            "threads={n}: give 1 to {} (four per core), or None for one per core",
            max_threads()
        )),
    }
}

/// `provider=`: `None` is the fastest compiled provider per primitive.
pub fn provider(name: Option<&str>) -> Result<Provider, Failure> {
    Ok(match name {
        None => Provider::default(),
        Some(name) => name.parse()?,
    })
}

/// `chunk_size=`: bytes as an `int`, or a size as people write it (`"64KiB"`, `"1MiB"`).
pub fn chunk_size(value: Option<&Bound<'_, PyAny>>) -> Result<ChunkSize, Failure> {
    let Some(value) = value else {
        return Ok(ChunkSize::DEFAULT);
    };
    let bytes = if let Ok(text) = value.extract::<String>() {
        paracrypt_core::size::parse_size(&text)?
    } else if let Ok(n) = value.extract::<i64>() {
        u64::try_from(n).map_err(|_| Failure::Usage(format!("chunk_size={n} is negative")))?
    } else {
        return Err(Failure::Python(pyo3::exceptions::PyTypeError::new_err(
            "chunk_size must be an int (bytes) or a str such as \"1MiB\"",
        )));
    };
    let bytes = usize::try_from(bytes)
        .map_err(|_| Failure::Usage(format!("chunk_size {bytes} is too large")))?;
    Ok(ChunkSize::new(bytes)?)
}

/// Progress reported to a Python callable with the input bytes taken in, from whichever pool
/// thread took them: batched to at least [`Progress::STEP`] bytes a call, the rest reported
/// when the work ends. The first exception the callable raises is kept and raised then.
#[derive(Clone)]
pub struct Progress {
    callback: Arc<Py<PyAny>>,
    pending: Arc<AtomicU64>,
    raised: Arc<Mutex<Option<PyErr>>>,
}

impl Progress {
    /// Bytes gathered before the callable is called.
    const STEP: u64 = 1 << 20;

    /// Progress to `callback`, if given.
    pub fn new(callback: Option<Py<PyAny>>) -> Option<Self> {
        callback.map(|callback| Progress {
            callback: Arc::new(callback),
            pending: Arc::new(AtomicU64::new(0)),
            raised: Arc::new(Mutex::new(None)),
        })
    }

    /// Counts `n` bytes; calls the callable once a step has gathered.
    pub fn add(&self, n: u64) {
        let total = self.pending.fetch_add(n, Ordering::Relaxed) + n;
        if total >= Self::STEP {
            let taken = self.pending.swap(0, Ordering::Relaxed);
            if taken > 0 {
                self.call(taken);
            }
        }
    }

    fn call(&self, n: u64) {
        Python::attach(|py| {
            if let Err(e) = self.callback.call1(py, (n,)) {
                let mut raised = self.raised.lock().unwrap_or_else(|e| e.into_inner());
                raised.get_or_insert(e);
            }
        });
    }

    /// Reports what is left and returns the first exception the callable raised.
    pub fn finish(&self) -> Result<(), Failure> {
        let taken = self.pending.swap(0, Ordering::Relaxed);
        if taken > 0 {
            self.call(taken);
        }
        let raised = self.raised.lock().unwrap_or_else(|e| e.into_inner()).take();
        match raised {
            Some(e) => Err(Failure::Python(e)),
            None => Ok(()),
        }
    }
}

/// What every call runs with.
#[derive(Clone)]
pub struct Options {
    /// Threads of the pool the work runs in.
    pub threads: usize,
    /// Who computes the primitives.
    pub provider: Provider,
    /// `progress=`.
    pub progress: Option<Progress>,
}

impl Options {
    /// Options from the keyword arguments every call takes.
    pub fn new(
        threads: Option<i64>,
        provider: Option<&str>,
        progress: Option<Py<PyAny>>,
    ) -> Result<Self, Failure> {
        Ok(Options {
            threads: self::threads(threads)?,
            provider: self::provider(provider)?,
            progress: Progress::new(progress),
        })
    }

    /// The core's runner with these options.
    pub fn runner(&self) -> Runner {
        let runner = Runner::new().provider(self.provider);
        match &self.progress {
            Some(progress) => {
                let progress = progress.clone();
                runner.progress(move |n| progress.add(n))
            }
            None => runner,
        }
    }

    /// Reports the progress left, and fails with the first exception the progress callback
    /// raised (callable from any thread).
    pub fn report(&self) -> Result<(), Failure> {
        match &self.progress {
            Some(progress) => progress.finish(),
            None => Ok(()),
        }
    }

    /// Runs `work` without the GIL, in this call's pool, with a panic caught as a
    /// [`Failure::Panic`]; then reports the progress left (a callback's exception fails the
    /// call).
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce() -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        let result = detached(py, self.threads, work);
        let reported = self.report();
        let value = result?;
        reported?;
        Ok(value)
    }
}

/// Runs `work` without the GIL in a pool of `threads`, with a panic caught.
pub fn detached<T: Send>(
    py: Python<'_>,
    threads: usize,
    work: impl FnOnce() -> Result<T, Failure> + Send,
) -> Result<T, Failure> {
    py.detach(|| {
        let pool = pool(threads)?;
        std::panic::catch_unwind(AssertUnwindSafe(|| pool.install(work)))
            .unwrap_or_else(|payload| Err(panic_message(payload)))
    })
}
