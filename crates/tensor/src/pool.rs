//! The worker threads that element-wise passes and matrix products share.
//!
//! A training step hands the other cores thousands of pieces of work a few
//! microseconds long. A thread that sleeps between them has to be woken each
//! time, and on a virtual machine that wake costs tens of microseconds: with
//! rayon's pool, lecture 6's step took 2.4 ms on 2 threads against 0.72 ms on
//! one. So the workers here spin for a while after each piece, as OpenMP's do
//! in PyTorch, and only sleep when no work has come for [`SPIN_FOR`]. The
//! calling thread runs pieces too, so `max_threads() - 1` workers exist.
//!
//! Which thread runs a piece never changes what it computes, so results have
//! the same bits on any number of threads (a piece runs in its caller's
//! precision of products, [`crate::bf16::precision_scope`], on any thread).
//! A call made from inside a piece, or while another thread's call holds the
//! workers, runs its pieces in order on the calling thread.

use crate::bf16::{precision, precision_scope, Precision};
use crate::max_threads;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, OnceLock, TryLockError};
use std::time::{Duration, Instant};

/// How long an idle worker keeps checking for work before it sleeps.
const SPIN_FOR: Duration = Duration::from_micros(500);

/// One call's work: `pieces` calls of `run`, handed out by `next`.
struct Job<'a> {
    run: &'a (dyn Fn(usize) + Sync),
    pieces: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    panicked: AtomicBool,
    /// The caller's precision of products, which its pieces keep on any thread.
    precision: Precision,
}

impl Job<'_> {
    /// Runs pieces until none are left.
    fn work(&self) {
        loop {
            let piece = self.next.fetch_add(1, SeqCst);
            if piece >= self.pieces {
                return;
            }
            if catch_unwind(AssertUnwindSafe(|| (self.run)(piece))).is_err() {
                self.panicked.store(true, SeqCst);
            }
            self.done.fetch_add(1, SeqCst);
        }
    }
}

struct Pool {
    /// Held by the thread whose job the workers are running.
    caller: Mutex<()>,
    /// Bumped for every job, so a worker sees that something new came.
    generation: AtomicUsize,
    /// The current job (a `Job` on the caller's stack), or null.
    job: AtomicPtr<Job<'static>>,
    /// Workers that may be reading `job`; the caller waits for none before returning.
    inside: AtomicUsize,
    /// Workers asleep on `wake`.
    sleeping: AtomicUsize,
    sleep_lock: Mutex<()>,
    wake: Condvar,
}

thread_local! {
    /// True while this thread runs a piece (a nested call runs in order).
    static IN_PIECE: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is running a piece (where a call to [`for_each_piece`] runs in order).
pub(crate) fn in_piece() -> bool {
    IN_PIECE.with(Cell::get)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            caller: Mutex::new(()),
            generation: AtomicUsize::new(0),
            job: AtomicPtr::new(ptr::null_mut()),
            inside: AtomicUsize::new(0),
            sleeping: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
        }));
        for i in 1..max_threads() {
            std::thread::Builder::new()
                .name(format!("tensor-worker-{i}"))
                .spawn(move || worker(pool))
                .expect("spawning a tensor worker thread");
        }
        pool
    })
}

fn worker(pool: &'static Pool) {
    IN_PIECE.with(|flag| flag.set(true));
    let mut seen = 0;
    loop {
        // Spin, then sleep, until a new generation appears.
        let spin_start = Instant::now();
        let mut spins = 0u32;
        while pool.generation.load(SeqCst) == seen {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(256) && spin_start.elapsed() > SPIN_FOR {
                let mut guard = pool.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
                pool.sleeping.fetch_add(1, SeqCst);
                while pool.generation.load(SeqCst) == seen {
                    guard = pool.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                }
                pool.sleeping.fetch_sub(1, SeqCst);
            }
        }
        seen = pool.generation.load(SeqCst);
        pool.inside.fetch_add(1, SeqCst);
        let job = pool.job.load(SeqCst);
        if !job.is_null() {
            // SAFETY: the caller keeps the job alive until `inside` is zero,
            // and clears `job` before it waits for that.
            unsafe {
                let _caller_s = precision_scope((*job).precision);
                (*job).work()
            };
        }
        pool.inside.fetch_sub(1, SeqCst);
    }
}

/// Runs `run(0)`, `run(1)`, … `run(pieces - 1)`, spread over up to
/// [`max_threads`] threads, and returns when all have finished. A panic in a
/// piece panics here, after every piece has ended.
pub(crate) fn for_each_piece(pieces: usize, run: impl Fn(usize) + Sync) {
    let in_order = || (0..pieces).for_each(&run);
    if pieces <= 1 || max_threads() <= 1 || IN_PIECE.with(Cell::get) {
        return in_order();
    }
    let pool = pool();
    let turn = match pool.caller.try_lock() {
        Ok(turn) => turn,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return in_order(),
    };
    let job = Job {
        run: &run,
        pieces,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        precision: precision(),
    };
    // SAFETY (lifetime): the pointer is cleared, and every worker that could
    // have read it has left, before `job` goes out of scope below.
    let shared = &job as *const Job<'_> as *mut Job<'static>;
    pool.job.store(shared, SeqCst);
    pool.generation.fetch_add(1, SeqCst);
    if pool.sleeping.load(SeqCst) > 0 {
        let _guard = pool.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
        pool.wake.notify_all();
    }
    IN_PIECE.with(|flag| flag.set(true));
    job.work();
    IN_PIECE.with(|flag| flag.set(false));
    while job.done.load(SeqCst) < pieces {
        std::hint::spin_loop();
    }
    pool.job.store(ptr::null_mut(), SeqCst);
    while pool.inside.load(SeqCst) > 0 {
        std::hint::spin_loop();
    }
    drop(turn);
    if job.panicked.load(SeqCst) {
        panic!("a piece of a parallel tensor operation panicked (its message is above)");
    }
}

/// A pointer that pieces share; each piece writes a part no other piece touches.
pub(crate) struct SharedMut<T>(pub *mut T);

impl<T> Clone for SharedMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedMut<T> {}

impl<T> SharedMut<T> {
    /// The pointer (a method, so that closures capture the whole `SharedMut`).
    pub fn ptr(self) -> *mut T {
        self.0
    }
}
// SAFETY: users hand each piece a disjoint part of the buffer.
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: a shared `SharedMut` only hands out copies of the pointer, and each
// piece writes its own part through it, as for `Send`.
unsafe impl<T: Send> Sync for SharedMut<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_runs_once() {
        let counts: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
        for _ in 0..50 {
            for_each_piece(counts.len(), |i| {
                counts[i].fetch_add(1, SeqCst);
            });
        }
        assert!(counts.iter().all(|c| c.load(SeqCst) == 50));
    }

    #[test]
    fn a_nested_call_runs_in_order() {
        let total = AtomicUsize::new(0);
        for_each_piece(4, |_| {
            for_each_piece(3, |j| {
                total.fetch_add(j + 1, SeqCst);
            })
        });
        assert_eq!(total.load(SeqCst), 4 * 6);
    }

    #[test]
    fn a_panicking_piece_panics_the_call() {
        let result = catch_unwind(|| for_each_piece(8, |i| assert!(i != 5, "piece five")));
        assert!(result.is_err());
        // The pool still works afterwards.
        let total = AtomicUsize::new(0);
        for_each_piece(8, |i| {
            total.fetch_add(i, SeqCst);
        });
        assert_eq!(total.load(SeqCst), 28);
    }
}
