//! `ZTH_PROFILE=1`: time per op kind, printed to stderr when the process exits,
//! so that anyone can see where a training step goes and which op to speed up
//! next.
//!
//! - **forward**: an op computes its value just before it records itself on the
//!   tape, so each op is charged the time since the previous record on its
//!   thread (or since its graph was made). Building a constant input (a mask, a
//!   batch) is charged to `(inputs)`.
//! - **backward**: each backward rule is timed as it runs; adding two
//!   contributions to one gradient (a node used twice) is `(gradient sum)`.
//! - **update**: adding the gradients into `p.grad`, gradient clipping, and
//!   `(optimizer step)`: the time from the end of `backward_into` to the next
//!   graph, which is the optimizer's step and whatever else the loop does
//!   there (its learning-rate schedule, reading the loss).
//!
//! The op kind is the name of the `Var` method that recorded it (`matmul`,
//! `softmax`, …), read from its backward closure's type name. Time outside
//! the tape (sampling batches, logging) appears only in the wall-time line.
//! When `ZTH_PROFILE` is unset, each record costs one relaxed atomic load.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Where an entry's time goes in the table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// The forward pass: computing an op's value.
    Forward,
    /// The backward pass: an op's backward rule.
    Backward,
    /// The optimizer, clipping, accumulating into `p.grad`.
    Update,
}

#[derive(Clone, Copy, Default)]
struct Cost {
    calls: u64,
    time: [Duration; 3],
}

struct Profile {
    started: Instant,
    costs: Vec<(&'static str, Cost)>,
}

static FORCED: AtomicBool = AtomicBool::new(false);
static FROM_ENV: OnceLock<bool> = OnceLock::new();
static PROFILE: Mutex<Option<Profile>> = Mutex::new(None);

thread_local! {
    /// The end of the last record on this thread.
    static MARK: Cell<Option<Instant>> = const { Cell::new(None) };
    /// When the last `backward_into` on this thread ended, until the next graph.
    static AFTER_BACKWARD: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Whether ops are being timed: `ZTH_PROFILE` set (and not `0`), or [`enable`] called.
pub fn enabled() -> bool {
    FORCED.load(Ordering::Relaxed)
        || *FROM_ENV.get_or_init(|| {
            let on = std::env::var("ZTH_PROFILE").is_ok_and(|v| !v.is_empty() && v != "0");
            if on {
                print_at_exit();
            }
            on
        })
}

/// Turns profiling on from code (tests, benches), without printing at exit.
pub fn enable() {
    FORCED.store(true, Ordering::Relaxed);
}

/// A new graph: charges the optimizer's step, if a backward pass came
/// before, and starts a new interval on this thread, so that nothing before
/// now is charged to the next op.
pub(crate) fn mark() {
    if enabled() {
        let now = Instant::now();
        if let Some(since) = AFTER_BACKWARD.with(|a| a.take()) {
            add("(optimizer step)", Phase::Update, now - since, 1);
        }
        MARK.with(|m| m.set(Some(now)));
    }
}

/// `backward_into` has ended: the time until the next graph is the optimizer's.
pub(crate) fn after_backward() {
    if enabled() {
        AFTER_BACKWARD.with(|a| a.set(Some(Instant::now())));
    }
}

/// Charges the time since the last mark on this thread to `kind`'s forward, and marks.
pub(crate) fn forward(kind: &'static str) {
    if !enabled() {
        return;
    }
    let now = Instant::now();
    let since = MARK.with(|m| m.replace(Some(now))).unwrap_or(now);
    add(kind, Phase::Forward, now - since, 1);
}

/// Runs `f`, charging its time to `kind` in `phase`, then marks.
pub(crate) fn timed<R>(kind: &'static str, phase: Phase, f: impl FnOnce() -> R) -> R {
    if !enabled() {
        return f();
    }
    let start = Instant::now();
    let out = f();
    let now = Instant::now();
    add(kind, phase, now - start, u64::from(phase != Phase::Forward));
    MARK.with(|m| m.set(Some(now)));
    // Not charged twice: clipping between backward and the next graph.
    AFTER_BACKWARD.with(|a| {
        if let Some(since) = a.get() {
            a.set(Some(since + (now - start)));
        }
    });
    out
}

fn add(kind: &'static str, phase: Phase, time: Duration, calls: u64) {
    let mut profile = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
    let profile = profile.get_or_insert_with(|| Profile {
        started: Instant::now() - time,
        costs: Vec::new(),
    });
    let cost = match profile.costs.iter().position(|(k, _)| *k == kind) {
        Some(i) => &mut profile.costs[i].1,
        None => {
            profile.costs.push((kind, Cost::default()));
            &mut profile.costs.last_mut().expect("just pushed").1
        }
    };
    // A forward record counts the op's calls; a backward rule runs once per call.
    if phase != Phase::Backward {
        cost.calls += calls;
    }
    cost.time[phase as usize] += time;
}

/// The op kind a backward closure belongs to: the method that made it.
/// `autograd::ops::nn::<impl autograd::graph::Var>::softmax::{{closure}}` is `softmax`.
pub(crate) fn kind_of<F>() -> &'static str {
    let full = std::any::type_name::<F>();
    let method = full.trim_end_matches("::{{closure}}");
    method.rsplit("::").next().unwrap_or(full)
}

/// One row per kind: calls and milliseconds in each phase.
pub fn rows() -> Vec<(&'static str, u64, [f64; 3])> {
    let profile = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(profile) = profile.as_ref() else {
        return Vec::new();
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    profile
        .costs
        .iter()
        .map(|(kind, c)| (*kind, c.calls, c.time.map(ms)))
        .collect()
}

/// The table: one row per op kind, the slowest first, with its share of the
/// profiled time; `None` if nothing was profiled.
pub fn table() -> Option<String> {
    let wall = {
        let profile = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
        profile.as_ref()?.started.elapsed().as_secs_f64() * 1000.0
    };
    let mut rows = rows();
    let total = |r: &(&str, u64, [f64; 3])| r.2.iter().sum::<f64>();
    rows.sort_by(|a, b| total(b).total_cmp(&total(a)));
    let profiled: f64 = rows.iter().map(total).sum();
    let mut out = format!(
        "ZTH_PROFILE: time per op kind on the tape (ms)\n{:<24} {:>9} {:>11} {:>11} {:>11} {:>11} {:>6}\n",
        "op", "calls", "forward", "backward", "update", "total", "share"
    );
    let mut sums = [0.0; 3];
    for (kind, calls, ms) in &rows {
        let t = ms.iter().sum::<f64>();
        for (s, m) in sums.iter_mut().zip(ms) {
            *s += m;
        }
        out.push_str(&format!(
            "{kind:<24} {calls:>9} {:>11.1} {:>11.1} {:>11.1} {t:>11.1} {:>5.1}%\n",
            ms[0],
            ms[1],
            ms[2],
            100.0 * t / profiled.max(f64::MIN_POSITIVE)
        ));
    }
    out.push_str(&format!(
        "{:<24} {:>9} {:>11.1} {:>11.1} {:>11.1} {profiled:>11.1}\n\
         wall time since the first op: {wall:.1} ms ({:.1} ms outside the tape: batches, logging)\n",
        "all ops",
        "",
        sums[0],
        sums[1],
        sums[2],
        (wall - profiled).max(0.0)
    ));
    Some(out)
}

/// Forgets everything recorded so far (benches: after warm-up).
pub fn reset() {
    *PROFILE.lock().unwrap_or_else(|e| e.into_inner()) = None;
    MARK.with(|m| m.set(None));
    AFTER_BACKWARD.with(|a| a.set(None));
}

#[cfg(unix)]
fn print_at_exit() {
    extern "C" fn print() {
        use std::io::Write;
        if let Some(table) = table() {
            // Not eprintln!: a closed stderr must not panic across the C boundary.
            let _ = writeln!(std::io::stderr(), "\n{table}");
        }
    }
    // SAFETY: `print` is a plain function that does not unwind or call
    // `exit`; libc runs it once when the process exits.
    unsafe {
        libc::atexit(print);
    }
}

#[cfg(not(unix))]
fn print_at_exit() {
    eprintln!("ZTH_PROFILE: printing at exit needs a Unix libc; call autograd::profile::table()");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_the_method_that_made_the_closure() {
        fn make() -> impl Fn() {
            || {}
        }
        fn kind<F>(_: &F) -> &'static str {
            kind_of::<F>()
        }
        assert_eq!(kind(&make()), "make");
    }
}
