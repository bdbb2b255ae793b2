//! Lecture 4, "Building makemore Part 3: Activations & Gradients, BatchNorm".
//!
//! Lecture 3's MLP trains, but its start is bad: the softmax is confidently
//! wrong and the tanh layer saturated. This lecture fixes the init step by
//! step, then adds batch norm, then rewrites the network as `torch.nn`-style
//! modules and looks inside a deep one with histograms.
//!
//! - **Model A** ([`mlp`]): embedding 10, hidden 200, `W1·(5/3)/√30`, no
//!   `b1`, `W2·0.01`, `b2·0`, one hand-written batch norm (unbiased std, no
//!   epsilon, running mean/std at momentum 0.001): 12,097 parameters. Targets:
//!   step-0 minibatch loss **3.3238626** (PyTorch, same draws; exact); after
//!   200,000 SGD steps (lr 0.1, 0.01 from 100,000) train ≈ **2.0674**, val ≈
//!   **2.1057** (the lecture's cell[10]; band ±0.03) and PyTorch's 2.0674145 /
//!   2.1056838 ± 1e-4 (`tests/fixtures/make_fixtures.py --full`), evaluated with the
//!   running statistics; the 20 losses cell[7] prints every 10,000 steps. `--ladder`
//!   reruns the lecture's loss log, five rows of 200k steps, each against the
//!   lecture and against PyTorch.
//! - **Gain experiments**: the deep Linear/Tanh stack without batch norm at
//!   gains 1, 5/3 and 3: activation and gradient statistics at init, checked
//!   against PyTorch. Exercise **E01**: an all-zero init trains only `b2`.
//! - **Model B** ([`torchified`]): `Linear`/`BatchNorm1d`/`Tanh` modules ([`nn`]), five
//!   hidden layers of 100, then Linear + BatchNorm to 27 with gamma·0.1: 47,024
//!   parameters. Step-0 loss **3.2870309** (exact). The lecture runs 1,001 steps:
//!   train 2.4003 / val 2.3982, tanh std 0.63–0.65, saturation 1.7–2.8%, weight
//!   grad:data ratios 8.0e-3 (C) … 1.16e-1 (last layer), with the diagnostics as PNGs
//!   ([`diagnostics`]). `--full` trains 200k steps (lr 0.01 from 150,000).
//! - Exercise **E02** ([`fold`]): batch norm folded into the preceding Linear
//!   gives the same logits within 1e-5.
//!
//! Every random draw comes from one `TorchGenerator::manual_seed(2147483647)`
//! in the notebook's order: parameters first, then each minibatch's
//! `torch.randint(0, n, (32,), generator=g)`. Run it with
//! `cargo run --release -p batchnorm -- lecture --out runs/lecture-04`.
#![deny(missing_docs)]

pub mod beside;
pub mod diagnostics;
pub mod fold;
pub mod mlp;
pub mod nn;
pub mod torchified;
pub mod train;

use autograd::{Graph, Var};
use tensor::rng::TorchGenerator;

/// Rows per chunk when a whole split is evaluated; keeps the activations of
/// the wider models small while giving the same mean loss.
pub const EVAL_CHUNK: usize = 8192;

// ANCHOR: split_loss
/// The mean cross-entropy over every example of a split (`split_loss` of the
/// lecture), with no graph recorded. `forward(graph, xb)` returns the logits;
/// the split is fed in chunks and the per-chunk means are combined by size.
pub fn split_loss(
    examples: &data::makemore::Dataset,
    mut forward: impl for<'g> FnMut(&'g Graph, &[usize]) -> Var<'g>,
) -> f64 {
    let n = examples.len();
    let mut total = 0.0f64;
    let mut start = 0;
    while start < n {
        let end = (start + EVAL_CHUNK).min(n);
        let (xb, yb) = examples.range(start, end);
        let graph = Graph::no_grad();
        let loss = forward(&graph, &xb).cross_entropy(&yb).item();
        total += loss as f64 * (end - start) as f64;
        start = end;
    }
    total / n as f64
}
// ANCHOR_END: split_loss

// ANCHOR: sample
/// Samples one name: start from an all-`.` context, draw each next symbol with
/// `torch.multinomial(probs, 1, generator=g)` until `.` comes out.
pub fn sample_name(
    g: &mut TorchGenerator,
    block_size: usize,
    mut logits_of: impl for<'g> FnMut(&'g Graph, &[usize]) -> Var<'g>,
) -> String {
    let vocab = ::data::makemore::Vocab::new();
    let mut context = vec![0usize; block_size];
    let mut out = String::new();
    loop {
        let graph = Graph::no_grad();
        let probs = logits_of(&graph, &context).softmax(1).value(); // (1, 27)
        let ix = g.multinomial(&probs, 1, false)[0] as usize;
        context.remove(0);
        context.push(ix);
        out.push(vocab.itos(ix));
        if ix == 0 {
            return out;
        }
    }
}
// ANCHOR_END: sample

/// The losses at steps 0, 10,000, 20,000, …: what the notebooks' loops print
/// (`if i % 10000 == 0: print(...)`), for comparing a run with the printout.
pub fn every_10k(losses: &[f32]) -> Vec<f64> {
    losses.iter().step_by(10_000).map(|&l| l as f64).collect()
}

/// Prints what the notebooks' loops print every 10,000 steps
/// (`print(f'{i:7d}/{max_steps:7d}: {loss.item():.4f}')`), from a finished
/// run's losses: for a run trained on another thread (see [`beside`]).
pub fn print_every_10k(losses: &[f32]) {
    let steps = losses.len();
    for (i, loss) in losses.iter().enumerate().step_by(10_000) {
        println!("{i:7}/{steps:7}: {loss:.4}");
    }
}

/// The learning rate of step `i`: `lr = 0.1 if i < decay_at else 0.01`.
pub fn step_lr(i: usize, decay_at: usize) -> f32 {
    if i < decay_at {
        0.1
    } else {
        0.01
    }
}
