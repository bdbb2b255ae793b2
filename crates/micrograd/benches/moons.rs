//! Times the moons demo: one step (forward, backward, update) and the whole
//! 100-step run, on the committed fixture with `random.seed(1337)` weights.
//!
//! `cargo bench -p micrograd --bench moons` prints the figures; `compare.sh`
//! beside this file runs it next to pip micrograd and prints the speed-ups.
//! With `--json` the last line is `{"step_seconds": .., "demo_seconds": ..}`.
//!
//! A plain timing loop rather than criterion: one demo is already 100 steps, and
//! the figure to compare is a median wall time, as Python's `time.perf_counter`
//! gives on the other side.

use std::time::Instant;

use micrograd::moons::{self, Moons};

fn median(mut seconds: Vec<f64>) -> f64 {
    seconds.sort_by(f64::total_cmp);
    seconds[seconds.len() / 2]
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let data = Moons::fixture();

    // One step: the median over the first 30 steps of a run. Every step builds a
    // graph of the same size, so they cost the same apart from noise.
    let model = moons::model(1337);
    let mut steps = Vec::new();
    for k in 0..30 {
        let start = Instant::now();
        moons::step(&model, &data, k);
        steps.push(start.elapsed().as_secs_f64());
    }
    let step_seconds = median(steps);

    // The whole demo from fresh weights: the median of 5 runs.
    let mut demos = Vec::new();
    let mut final_loss = 0.0;
    for _ in 0..5 {
        let start = Instant::now();
        let model = moons::model(1337);
        for k in 0..100 {
            final_loss = moons::step(&model, &data, k).0;
        }
        demos.push(start.elapsed().as_secs_f64());
    }
    let demo_seconds = median(demos);

    println!(
        "one step (forward, backward, update): {:.2} ms",
        step_seconds * 1e3
    );
    println!(
        "100-step demo: {:.3} s (final loss {final_loss})",
        demo_seconds
    );
    if json {
        println!("{{\"step_seconds\": {step_seconds}, \"demo_seconds\": {demo_seconds}}}");
    }
}
