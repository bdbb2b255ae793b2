//! Training runs that a `--ladder` makes beside the lecture's own: the rows of
//! lecture 4's loss log and lecture 6's performance log.
//!
//! A step of these small models gains nothing from a second thread (lecture
//! 6's model: 1.12 ms on one, 1.16 on two, measured), so the rows train on the
//! cores the lecture's thread does not use, while it trains its own model, and
//! that thread takes the rows still waiting once its own work is done. Which
//! thread trains a row never changes its bits. Products then stay on the
//! thread that asks for them: the pool's workers would spin on the cores the
//! rows need (lecture 6's model beside a row: 1.56 ms a step with the pool,
//! 1.18 without).

use report::Stage;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;

/// One row of a ladder, trained and evaluated: what its table and its
/// targets need.
pub struct Row {
    /// The model's parameter count.
    pub params: usize,
    /// Every step's minibatch loss.
    pub losses: Vec<f32>,
    /// The loss on the whole train split, in eval mode.
    pub train: f64,
    /// The loss on the whole val split, in eval mode.
    pub val: f64,
    /// The training loop's milliseconds per step.
    pub ms_per_step: f64,
}

/// How a row is trained: its place in the log, and the stage it reports to.
type TrainRow<T> = dyn Fn(usize, &mut Stage) -> Result<T, String> + Send + Sync;

/// Rows trained, each with its place and the stage that holds its loss rows.
type Trained<T> = Vec<(usize, T, Stage)>;

/// Rows training beside the lecture's thread, and those still waiting.
pub struct Beside<T> {
    rows: Arc<Vec<(usize, &'static str)>>,
    next: Arc<AtomicUsize>,
    train: Arc<TrainRow<T>>,
    background: Option<JoinHandle<Result<Trained<T>, String>>>,
}

impl<T: Send + 'static> Beside<T> {
    /// Starts `rows` (place in the log, name) on the cores the run may use
    /// besides this thread's (`ZTH_THREADS`, or the machine's cores), in the
    /// order given: the most costly first, so that the threads end close
    /// together. On one core nothing starts before [`Beside::finish`].
    pub fn start(
        rows: Vec<(usize, &'static str)>,
        train: impl Fn(usize, &mut Stage) -> Result<T, String> + Send + Sync + 'static,
    ) -> Beside<T> {
        let cores = tensor::threads_from_env()
            .ok()
            .flatten()
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let mut beside = Beside {
            rows: Arc::new(rows),
            next: Arc::new(AtomicUsize::new(0)),
            train: Arc::new(train),
            background: None,
        };
        let threads = (cores - 1).min(beside.rows.len());
        if threads > 0 {
            tensor::set_max_threads(1);
            println!(
                "{} rows train meanwhile, on {threads} more thread(s)",
                beside.rows.len()
            );
            let (rows, next, train) = (
                Arc::clone(&beside.rows),
                Arc::clone(&beside.next),
                Arc::clone(&beside.train),
            );
            beside.background = Some(std::thread::spawn(move || {
                std::thread::scope(|scope| {
                    let handles: Vec<_> = (0..threads)
                        .map(|_| scope.spawn(|| work(&rows, &next, &*train)))
                        .collect();
                    let mut done = Vec::new();
                    for handle in handles {
                        done.extend(handle.join().map_err(|_| panicked())??);
                    }
                    Ok(done)
                })
            }));
        }
        beside
    }

    /// Trains the rows still waiting on this thread, then waits for the
    /// others; returns every row with its stage, in the log's order.
    pub fn finish(self) -> Result<Vec<(T, Stage)>, String> {
        let mut done = work(&self.rows, &self.next, &*self.train)?;
        if let Some(handle) = self.background {
            done.extend(handle.join().map_err(|_| panicked())??);
        }
        done.sort_by_key(|(place, _, _)| *place);
        Ok(done
            .into_iter()
            .map(|(_, row, stage)| (row, stage))
            .collect())
    }
}

fn panicked() -> String {
    "a thread training the ladder's rows panicked".to_string()
}

/// Takes rows and trains them until none is left, each under a silent stage
/// of its own: two threads' prints would interleave, so the caller prints
/// each row's lines, in the log's order, from what it returns.
fn work<T>(
    rows: &[(usize, &'static str)],
    next: &AtomicUsize,
    train: &TrainRow<T>,
) -> Result<Trained<T>, String> {
    let mut done = Vec::new();
    while let Some(&(place, name)) = rows.get(next.fetch_add(1, SeqCst)) {
        let mut stage = Stage::standalone(name).silent();
        let started = std::time::Instant::now();
        let row = train(place, &mut stage)?;
        println!(
            "{name}: trained in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        done.push((place, row, stage));
    }
    Ok(done)
}
