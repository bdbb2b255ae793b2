//! makemore.py's training step for one `--type`, timed:
//! `cargo bench -p makemore --bench step -- --type transformer`.
//! `step_torch.py` beside this file times makemore.py's own step in PyTorch.
//!
//! Both sides train on names.txt with makemore.py's defaults, warm up, then
//! time `ROUNDS` blocks of `STEPS` steps and print the fastest block's time
//! per step (the machine is shared, so the minimum is the fair figure), and
//! the process's peak RSS.

use makemore::data::read_words;
use makemore::{ModelType, TrainConfig, Trainer};
use std::time::Instant;

const WARMUP: usize = 20;
const ROUNDS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args
        .iter()
        .position(|a| a == "--type")
        .map(|i| ModelType::parse(&args[i + 1]).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or(ModelType::Transformer);
    let steps = if kind == ModelType::Transformer {
        50
    } else {
        200
    };
    let words = read_words(&data::path("names.txt").unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{e}"));
    let cfg = TrainConfig {
        kind,
        ..TrainConfig::default()
    };
    let mut trainer = Trainer::new(cfg, words).unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..WARMUP {
        trainer.step();
    }
    let best = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..steps {
                trainer.step();
            }
            start.elapsed().as_secs_f64() * 1e3 / steps as f64
        })
        .fold(f64::INFINITY, f64::min);
    println!("makemore --type {kind} (rust): {best:.3} ms/step, the fastest of {ROUNDS} blocks of {steps}");
    println!(
        "bench-row makemore-{kind} ms={best} rss_mib={}",
        report::peak_rss_mib().unwrap_or(f64::NAN)
    );
}
