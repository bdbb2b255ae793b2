//! One training step of lecture 6's model, timed: `cargo bench -p wavenet --bench wavenet_step`.
//! `wavenet_step_torch.py` beside this file times the same step in PyTorch, so the two
//! can be compared side by side on one machine.

use autograd::{Graph, Sgd};
use data::makemore::Splits;
use std::time::Instant;
use tensor::rng::TorchGenerator;
use wavenet::{Config, WaveNet};

const WARMUP: usize = 200;
const STEPS: usize = 2000;

fn main() {
    let train = Splits::load(8).unwrap_or_else(|e| panic!("{e}")).train;
    let mut g = TorchGenerator::manual_seed(42);
    let mut net = WaveNet::new(Config::lecture(), &mut g);
    let mut step = || {
        let (xb, yb) = train.minibatch(&mut g, 32);
        let graph = Graph::new();
        let loss = net.forward(&graph, &xb).cross_entropy(&yb);
        let grads = loss.backward();
        net.params.zero_grad();
        net.params.accumulate(&grads);
        Sgd::new(0.1).step(&mut net.params);
    };
    for _ in 0..WARMUP {
        step();
    }
    let start = Instant::now();
    for _ in 0..STEPS {
        step();
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / STEPS as f64;
    println!("lecture 6 wavenet (rust): {ms:.4} ms/step");
    println!("bench-row wavenet-step ms={ms}");
}
