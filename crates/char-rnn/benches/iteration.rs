//! One iteration of `char-rnn train` with train.lua's defaults (a 2-layer LSTM
//! of 128, batch 50, 50 steps, on tinyshakespeare.txt), timed:
//! `cargo bench -p char-rnn --bench iteration`. `iteration_torch.py` beside
//! this file times the same iteration of the PyTorch reference.

use char_rnn::train::{Options, Trainer};
use clap::Parser;
use std::time::Instant;

const WARMUP: usize = 3;
const STEPS: usize = 20;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    opt: Options,
}

fn main() {
    let text = data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("char-rnn-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&text, dir.join("input.txt")).unwrap();
    let opt = flags::parse_from::<Cli>(["bench", "--data-dir", dir.to_str().unwrap()]).opt;
    let mut trainer = Trainer::new(opt, &mut std::io::sink()).unwrap();
    for _ in 0..WARMUP {
        trainer.step().unwrap();
    }
    let start = Instant::now();
    for _ in 0..STEPS {
        trainer.step().unwrap();
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / STEPS as f64;
    println!("char-rnn lstm iteration (rust): {ms:.2} ms");
    println!("bench-row char-rnn-lstm ms={ms}");
    std::fs::remove_dir_all(dir).unwrap();
}
