//! Interrupts: SIGINT (Ctrl-C), SIGTERM and SIGHUP end the process without leaving anything
//! behind.
//!
//! The CLI installs the handler once, in `main` (the libraries never touch signals). A
//! dedicated thread receives the signals (signal-hook), so the cleanup is ordinary code, not
//! code in a signal handler. It removes every temporary file and directory still registered
//! here, aborts every multipart upload of an output object still registered (so neither the
//! object nor its parts are left), clears the progress bar, and then ends the process the way the signal would have, so a
//! shell still sees "killed by SIGINT" (status 130, 143 or 129).
//!
//! Registration and cleanup share one lock. An output that commits (links or renames its
//! temporary file into place) holds the lock for the whole commit, so an interrupt either lands
//! before it (the temporary file is removed, the old destination is untouched) or after it (the
//! new output is complete); never in between.
//!
//! Creating something to undo and registering it are one step to the handler too
//! ([`making`]): many threads create at once (a tree's named temporary files, its multipart
//! uploads), each holding a shared gate that the handler takes alone before it cleans up, so
//! that nothing is created after the handler looked (a file created between its registration
//! and the cleanup would otherwise be left behind). Nothing calls [`making`] while it holds
//! [`pending`]'s lock.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockWriteGuard};

use indicatif::ProgressBar;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// An action that undoes something an interrupted run began (abort a multipart upload).
pub type Undo = Box<dyn FnMut() + Send>;

/// What an interrupted run must undo.
#[derive(Default)]
pub struct Pending {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    aborts: Vec<(u64, Undo)>,
    #[cfg_attr(not(feature = "s3"), allow(dead_code))] // only object storage aborts
    next_abort: u64,
    bar: Option<ProgressBar>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("files", &self.files)
            .field("dirs", &self.dirs)
            .field("aborts", &self.aborts.len())
            .finish_non_exhaustive()
    }
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    files: Vec::new(),
    dirs: Vec::new(),
    aborts: Vec::new(),
    next_abort: 0,
    bar: None,
});

/// Held shared by each thread creating something to undo (see [`making`]), and alone by the
/// cleanup.
static MAKING: RwLock<()> = RwLock::new(());

/// Takes the lock that cleanup runs under (also after a panic elsewhere: the lists stay valid).
pub fn pending() -> MutexGuard<'static, Pending> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `make`, which creates something an interrupt must undo (a temporary file, a multipart
/// upload) and registers it with [`pending`], with the cleanup held off until it returns: an
/// interrupt then finds it either not begun or registered. Threads making at once do not wait
/// for each other. Never called with [`pending`]'s lock held.
pub fn making<T>(make: impl FnOnce() -> T) -> T {
    let _shared = MAKING.read().unwrap_or_else(PoisonError::into_inner);
    make()
}

/// The cleanup's hold: no thread is in [`making`], and nothing registers or commits.
pub struct Held {
    _making: RwLockWriteGuard<'static, ()>,
    pending: MutexGuard<'static, Pending>,
}

impl std::ops::Deref for Held {
    type Target = Pending;
    fn deref(&self) -> &Pending {
        &self.pending
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut Pending {
        &mut self.pending
    }
}

/// Waits for every thread in [`making`] to finish and takes [`pending`]'s lock: what the
/// cleanup holds.
pub fn hold() -> Held {
    let making = MAKING.write().unwrap_or_else(PoisonError::into_inner);
    Held {
        _making: making,
        pending: pending(),
    }
}

/// [`hold`], if it can be had within `wait`: a commit holds the lock while it links or renames
/// the output, and a thread creating a file on a hung filesystem stays in [`making`]; either
/// is left alone (a stalled distributed run must still end).
#[cfg(feature = "mpi")]
pub fn hold_within(wait: std::time::Duration) -> Option<Held> {
    use std::sync::TryLockError;
    let start = std::time::Instant::now();
    let pause = || std::thread::sleep(std::time::Duration::from_millis(10));
    let making = loop {
        match MAKING.try_write() {
            Ok(guard) => break guard,
            Err(TryLockError::Poisoned(e)) => break e.into_inner(),
            Err(TryLockError::WouldBlock) if start.elapsed() < wait => pause(),
            Err(TryLockError::WouldBlock) => return None,
        }
    };
    loop {
        match PENDING.try_lock() {
            Ok(pending) => {
                return Some(Held {
                    _making: making,
                    pending,
                });
            }
            Err(TryLockError::Poisoned(e)) => {
                return Some(Held {
                    _making: making,
                    pending: e.into_inner(),
                });
            }
            Err(TryLockError::WouldBlock) if start.elapsed() < wait => pause(),
            Err(TryLockError::WouldBlock) => return None,
        }
    }
}

impl Pending {
    /// Removes `path` if the process is interrupted before [`Pending::forget_file`].
    pub fn add_file(&mut self, path: &Path) {
        self.files.push(path.to_path_buf());
    }

    /// `path` is no longer temporary (committed or removed).
    pub fn forget_file(&mut self, path: &Path) {
        self.files.retain(|p| p != path);
    }

    /// Removes the directory `path` and everything in it if the process is interrupted before
    /// [`Pending::forget_dir`].
    pub fn add_dir(&mut self, path: &Path) {
        self.dirs.push(path.to_path_buf());
    }

    /// `path` is no longer temporary.
    pub fn forget_dir(&mut self, path: &Path) {
        self.dirs.retain(|p| p != path);
    }

    /// Runs `undo` if the process is interrupted before [`Pending::forget_abort`] with the
    /// number returned.
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    pub fn add_abort(&mut self, undo: Undo) -> u64 {
        self.next_abort += 1;
        self.aborts.push((self.next_abort, undo));
        self.next_abort
    }

    /// The action registered as `id` is no longer needed (the upload completed or was
    /// aborted).
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    pub fn forget_abort(&mut self, id: u64) {
        self.aborts.retain(|(n, _)| *n != id);
    }

    /// Clears `bar` on an interrupt or an error.
    pub fn set_bar(&mut self, bar: ProgressBar) {
        self.bar = Some(bar);
    }

    /// Clears the progress bar, if one is drawn.
    pub fn clear_bar(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Removes every registered temporary file and directory and clears the bar (what an
    /// interrupt does; also a stalled distributed run before it is aborted).
    pub fn clean_up(&mut self) {
        self.clear_bar();
        for (_, mut undo) in self.aborts.drain(..) {
            undo();
        }
        for file in self.files.drain(..) {
            let _ = std::fs::remove_file(file);
        }
        for dir in self.dirs.drain(..) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Starts the thread that turns SIGINT, SIGTERM and SIGHUP into a cleanup and an exit. A signal
/// the process was started with ignored stays ignored (`nohup` ignores SIGHUP; a shell without
/// job control starts background jobs ignoring SIGINT).
pub fn install() -> std::io::Result<()> {
    let ignored = ignored_signals();
    let watched: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&signal| ignored & (1 << (signal - 1)) == 0)
        .collect();
    let mut signals = Signals::new(watched)?;
    std::thread::Builder::new()
        .name("paracrypt-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Held until the process ends: nothing is created or commits after this point.
                let mut held = hold();
                held.clean_up();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

/// The signals this process ignores, as the kernel reports them (`SigIgn` in
/// `/proc/self/status`: bit N − 1 for signal N); none where that cannot be read.
fn ignored_signals() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The cleanup waits for a thread in [`making`]: what that thread creates, even after the
    /// interrupt came, is registered and removed (a file created between its registration and
    /// the cleanup used to be left behind).
    #[test]
    fn the_cleanup_waits_for_what_is_being_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".paracrypt-test.tmp");
        let (entered, inside) = std::sync::mpsc::channel();
        let maker = {
            let path = path.clone();
            std::thread::spawn(move || {
                making(|| {
                    entered.send(()).unwrap();
                    // The interrupt comes now, while the file is not created yet.
                    std::thread::sleep(Duration::from_millis(300));
                    std::fs::write(&path, b"x").unwrap();
                    pending().add_file(&path);
                })
            })
        };
        inside.recv().unwrap();
        let mut held = hold();
        assert!(path.exists(), "the cleanup did not wait");
        held.clean_up();
        drop(held);
        maker.join().unwrap();
        assert!(!path.exists());
    }
}
