//! One SGD step, the lecture's learning-rate schedule, and the learning-rate finder.

use crate::model::Mlp;
use autograd::{Graph, Sgd};
use data::makemore::Dataset;
use report::{LogEvery, Stage};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

// ANCHOR: train_step
/// Forward, backward and `p.data += -lr * p.grad` on one minibatch; returns its loss.
pub fn train_step(model: &mut Mlp, xb: &[usize], yb: &[usize], lr: f32) -> f32 {
    let graph = Graph::new();
    let loss = model.forward(&graph, xb).cross_entropy(yb);
    let grads = loss.backward();
    model.params.zero_grad();
    model.params.accumulate(&grads);
    Sgd::new(lr).step(&mut model.params);
    loss.item()
}
// ANCHOR_END: train_step

/// The minibatch size.
pub const BATCH_SIZE: usize = 32;

// ANCHOR: train
/// The lecture's loop (cell[26]): each step draws a minibatch of 32 from the
/// global generator, trains on it, and decays the learning rate at step 100,000.
/// Returns every step's minibatch loss and the loop's milliseconds per step.
pub fn train(
    model: &mut Mlp,
    train: &Dataset,
    global: &mut TorchGenerator,
    steps: usize,
    stage: &mut Stage,
) -> Result<(Vec<f32>, f64), String> {
    stage.start_training("mlp", steps, LogEvery::Step(100));
    let mut losses = Vec::with_capacity(steps);
    for i in 0..steps {
        let (xb, yb) = train.minibatch(global, BATCH_SIZE);
        let lr = lecture_lr(i);
        let loss = train_step(model, &xb, &yb, lr);
        stage.observe(i, loss, lr)?;
        losses.push(loss);
    }
    Ok((losses, stage.finish_training()))
}
// ANCHOR_END: train

/// `lr = 0.1 if i < 100000 else 0.01`.
pub fn lecture_lr(step: usize) -> f32 {
    autograd::step_decay(step, 0.1, &[(100_000, 0.01)])
}

/// One step of the learning-rate finder.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LrFindPoint {
    /// The exponent: `lr = 10^lre`.
    pub lre: f32,
    /// The learning rate used.
    pub lr: f32,
    /// The minibatch loss of the step (before its update).
    pub loss: f32,
}

// ANCHOR: lr_find
/// The lecture's learning-rate search: `lre = linspace(-3, 0, steps)`, `lrs = 10**lre`,
/// step `i` trains with `lrs[i]`. Loss against `lre` falls, flattens, then blows up;
/// a good rate sits in the valley, before the blow-up (the lecture picks 0.1).
pub fn lr_find(
    model: &mut Mlp,
    train: &Dataset,
    global: &mut TorchGenerator,
    steps: usize,
) -> Vec<LrFindPoint> {
    let lre = Tensor::linspace(-3.0, 0.0, steps).to_vec();
    let mut points = Vec::with_capacity(steps);
    for &e in &lre {
        let lr = 10f32.powf(e);
        let (xb, yb) = train.minibatch(global, BATCH_SIZE);
        let loss = train_step(model, &xb, &yb, lr);
        points.push(LrFindPoint { lre: e, lr, loss });
    }
    points
}
// ANCHOR_END: lr_find
