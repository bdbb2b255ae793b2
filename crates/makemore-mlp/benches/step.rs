//! Lecture-3 training step, timed the same way as `step_torch.py` beside it:
//! `--warmup` untimed steps (default 20,000, so the net is past its saturated
//! start, where a tanh is cheaper than in the rest of the run), then the best of
//! three runs of `--steps` (default 5,000) steps, printed as ms/step. Run with
//! `cargo bench -p makemore-mlp --bench step` and compare with
//! `python crates/makemore-mlp/benches/step_torch.py` (both need names.txt).

use data::makemore::Splits;
use makemore_mlp::{lecture_lr, train_step, Config, Mlp};
use std::time::Instant;
use tensor::rng::TorchGenerator;

fn main() {
    // `cargo bench` passes `--bench`; only `--steps N` matters here.
    let argv: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: usize| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let (steps, warmup) = (flag("--steps", 5000), flag("--warmup", 20_000));
    let splits = match Splits::load(3) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let mut model = Mlp::init(
        Config::default(),
        &mut TorchGenerator::manual_seed(2147483647),
    );
    let mut global = TorchGenerator::manual_seed(42);
    let mut step = |i: usize| {
        let (xb, yb) = splits.train.minibatch(&mut global, 32);
        train_step(&mut model, &xb, &yb, lecture_lr(i))
    };
    for i in 0..warmup {
        step(i);
    }
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t0 = Instant::now();
        for i in warmup..warmup + steps {
            std::hint::black_box(step(i));
        }
        best = best.min(t0.elapsed().as_secs_f64() / steps as f64);
    }
    println!("rust lecture-3 step: {:.4} ms/step", best * 1e3);
}
