//! One training step of lecture 4's models, timed: `cargo bench -p batchnorm --bench batchnorm_step`.
//! `batchnorm_step_torch.py` beside this file times the same steps in PyTorch, so the two
//! can be compared side by side on one machine.

use autograd::{Graph, Sgd};
use batchnorm::mlp::{LossLogRow, Mlp};
use batchnorm::torchified::TorchifiedMlp;
use data::makemore::Splits;
use std::time::Instant;
use tensor::rng::TorchGenerator;

const WARMUP: usize = 200;
const STEPS: usize = 2000;

fn time(label: &str, mut step: impl FnMut()) {
    for _ in 0..WARMUP {
        step();
    }
    let start = Instant::now();
    for _ in 0..STEPS {
        step();
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / STEPS as f64;
    println!("{label}: {ms:.4} ms/step");
}

fn main() {
    let train = Splits::load(3).unwrap_or_else(|e| panic!("{e}")).train;

    let mut g = TorchGenerator::manual_seed(2147483647);
    let mut a = Mlp::new(LossLogRow::BatchNorm, &mut g);
    time("lecture 4 model A (rust)", || {
        let (xb, yb) = train.minibatch(&mut g, 32);
        let graph = Graph::new();
        let loss = a.forward(&graph, &xb, true).cross_entropy(&yb);
        let grads = loss.backward();
        a.params.zero_grad();
        a.params.accumulate(&grads);
        Sgd::new(0.1).step(&mut a.params);
    });

    let mut g = TorchGenerator::manual_seed(2147483647);
    let mut b = TorchifiedMlp::new(&mut g, true, 1.0);
    time("lecture 4 model B (rust)", || {
        let (xb, yb) = train.minibatch(&mut g, 32);
        let graph = Graph::new();
        let loss = b.forward(&graph, &xb).cross_entropy(&yb);
        let grads = loss.backward();
        b.params.zero_grad();
        b.params.accumulate(&grads);
        Sgd::new(0.1).step(&mut b.params);
    });
}
