//! One full-batch step of the neural bigram (forward, backward, update) over all
//! 228,146 bigrams, one-hot as in the lecture. `step_torch.py` beside this file
//! times the same step in PyTorch; `cargo xtask bench --crate makemore-bigram`
//! runs both. Needs ZTH_DATA (xtask sets it).

use data::makemore::{bigrams, words};
use makemore_bigram::neural::{Encoding, LossFormula, NeuralBigram, LEARNING_RATE};
use makemore_bigram::LECTURE_SEED;
use std::time::Instant;
use tensor::rng::TorchGenerator;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let pairs = bigrams(&words().unwrap_or_else(|e| panic!("{e}")));
    let xs: Vec<usize> = pairs.iter().map(|p| p.0).collect();
    let ys: Vec<usize> = pairs.iter().map(|p| p.1).collect();
    for (name, row, encoding) in [
        ("one-hot", "bigram-step-onehot", Encoding::OneHot),
        (
            "row index (E04)",
            "bigram-step-rowindex",
            Encoding::RowIndex,
        ),
    ] {
        let mut model = NeuralBigram::init(&mut TorchGenerator::manual_seed(LECTURE_SEED));
        let mut times = Vec::new();
        for _ in 0..22 {
            let start = Instant::now();
            model.train_step(&xs, &ys, encoding, LossFormula::Lecture, LEARNING_RATE);
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let mut steady = times[2..].to_vec(); // the first steps warm the allocator
        steady.sort_by(f64::total_cmp);
        println!(
            "rust   neural bigram step, {name:<16}: median {:7.2} ms (min {:.2})",
            steady[steady.len() / 2],
            steady[0]
        );
        println!("bench-row {row} ms={}", steady[steady.len() / 2]);
    }
}
