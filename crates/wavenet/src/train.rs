//! The lecture's training loop (cell[10]).

use crate::{Config, WaveNet};
use autograd::{Graph, Sgd};
use batchnorm::step_lr;
use data::makemore::Dataset;
use report::{LogEvery, Stage};
use tensor::rng::TorchGenerator;

/// The minibatch size.
pub const BATCH_SIZE: usize = 32;
/// The learning rate drops from 0.1 to 0.01 here (part 5 trains longer at 0.1).
pub const DECAY_AT: usize = 150_000;

/// What one training run produced.
pub struct Trained {
    /// The trained net (still in training mode).
    pub net: WaveNet,
    /// The generator after training: the notebook samples from it next.
    pub g: TorchGenerator,
    /// Every step's minibatch loss.
    pub losses: Vec<f32>,
    /// The loop's milliseconds per step.
    pub ms_per_step: f64,
}

// ANCHOR: train
/// Trains `config` from `manual_seed(seed)`: minibatches from the same generator,
/// SGD, the learning rate decayed at step 150,000, the notebook's print every
/// 10,000 steps, and the loss curve as the mean of each block of 1,000 steps.
pub fn train(
    config: Config,
    seed: u64,
    train: &Dataset,
    steps: usize,
    stage: &mut Stage,
    label: &str,
) -> Result<Trained, String> {
    let mut g = TorchGenerator::manual_seed(seed);
    let mut net = WaveNet::new(config, &mut g);
    if !stage.is_silent() {
        println!("{label}: {} parameters", net.params.count());
    }
    stage.start_training(label, steps, LogEvery::Mean(1000));
    let mut losses = Vec::with_capacity(steps);
    for i in 0..steps {
        let (xb, yb) = train.minibatch(&mut g, BATCH_SIZE);
        let graph = Graph::new();
        let loss = net.forward(&graph, &xb).cross_entropy(&yb);
        let lr = step_lr(i, DECAY_AT);
        stage.observe(i, loss.item(), lr)?;
        let grads = loss.backward();
        net.params.zero_grad();
        net.params.accumulate(&grads);
        Sgd::new(lr).step(&mut net.params);
        losses.push(loss.item());
        if i % 10_000 == 0 && !stage.is_silent() {
            println!("{i:7}/{steps:7}: {:.4}", loss.item());
        }
    }
    let ms_per_step = stage.finish_training();
    Ok(Trained {
        net,
        g,
        losses,
        ms_per_step,
    })
}
// ANCHOR_END: train
