//! The lecture's training loops: the MLP's (cell[7], and each row of the loss
//! log), E01's, and the torchified net's with its update:data ratios (cell[14]).

use crate::diagnostics::{mean_std, TanhStats};
use crate::mlp::Mlp;
use crate::torchified::TorchifiedMlp;
use crate::{split_loss, step_lr};
use autograd::{Graph, Sgd};
use data::makemore::{Dataset, Splits};
use report::{LogEvery, Stage};
use tensor::rng::TorchGenerator;

/// The minibatch size (`batch_size = 32`).
pub const BATCH_SIZE: usize = 32;
/// The MLP's learning rate drops from 0.1 to 0.01 here (cell[7]).
pub const MLP_DECAY_AT: usize = 100_000;
/// The torchified net's decay step (cell[14]; its lecture run stops at 1,001).
pub const TORCHIFIED_DECAY_AT: usize = 150_000;

/// Every step's minibatch loss and the loop's milliseconds per step.
pub struct Losses {
    /// The minibatch loss of each step.
    pub losses: Vec<f32>,
    /// Milliseconds per training step.
    pub ms_per_step: f64,
}

// ANCHOR: train
/// Trains the MLP for `steps` steps (cell[7]): a minibatch from `g`, forward in
/// training mode (batch statistics, running averages updated), the
/// cross-entropy, `zero_grad`, `backward`, and the SGD update.
pub fn train_mlp(
    model: &mut Mlp,
    g: &mut TorchGenerator,
    train: &Dataset,
    steps: usize,
    stage: &mut Stage,
    label: &str,
) -> Result<Losses, String> {
    stage.start_training(label, steps, LogEvery::Mean(100));
    let mut losses = Vec::with_capacity(steps);
    for i in 0..steps {
        let (xb, yb) = train.minibatch(g, BATCH_SIZE);
        let graph = Graph::new();
        let loss = model.forward(&graph, &xb, true).cross_entropy(&yb);
        let lr = step_lr(i, MLP_DECAY_AT);
        stage.observe(i, loss.item(), lr)?;
        // ANCHOR: train_step
        // `p.grad = None`; `loss.backward()`; `p.data += -lr * p.grad`.
        model.params.zero_grad();
        loss.backward_into(&mut model.params);
        Sgd::new(lr).step(&mut model.params);
        // ANCHOR_END: train_step
        losses.push(loss.item());
        if i % 10_000 == 0 && !stage.is_silent() {
            println!("{i:7}/{steps:7}: {:.4}", loss.item());
        }
    }
    let ms_per_step = stage.finish_training();
    Ok(Losses {
        losses,
        ms_per_step,
    })
}
// ANCHOR_END: train

/// The MLP's mean loss on the whole train and val splits, batch norm using its
/// running statistics (cell[10]).
pub fn mlp_split_losses(model: &mut Mlp, splits: &Splits) -> (f64, f64) {
    let train = split_loss(&splits.train, |graph, xb| model.forward(graph, xb, false));
    let val = split_loss(&splits.dev, |graph, xb| model.forward(graph, xb, false));
    (train, val)
}

/// E01: trains the all-zero MLP at lr 0.1 and returns the names of the
/// parameters that ever received a nonzero gradient.
pub fn train_zero_init(
    model: &mut Mlp,
    g: &mut TorchGenerator,
    train: &Dataset,
    steps: usize,
    stage: &mut Stage,
) -> Result<Vec<String>, String> {
    let mut moved = std::collections::BTreeSet::new();
    stage.start_training("E01", steps, LogEvery::Mean(100));
    for i in 0..steps {
        let (xb, yb) = train.minibatch(g, BATCH_SIZE);
        let graph = Graph::new();
        let loss = model.forward(&graph, &xb, true).cross_entropy(&yb);
        stage.observe(i, loss.item(), 0.1)?;
        model.params.zero_grad();
        loss.backward_into(&mut model.params);
        for (_, p) in model.params.iter() {
            let nonzero = p
                .grad
                .as_ref()
                .is_some_and(|gr| gr.to_vec().iter().any(|&x| x != 0.0));
            if nonzero {
                moved.insert(p.name.clone());
            }
        }
        Sgd::new(0.1).step(&mut model.params);
    }
    stage.finish_training();
    Ok(moved.into_iter().collect())
}

/// What the torchified net's run keeps for the lecture's four visualisations.
pub struct TorchifiedRun {
    /// Every step's minibatch loss.
    pub losses: Vec<f32>,
    /// log10 of the update:data ratio of every 2-D parameter, one row per
    /// recorded step (every step up to 10,000 steps, then every 100th).
    pub update_ratios: Vec<Vec<f64>>,
    /// The steps the rows of `update_ratios` belong to.
    pub update_ratio_steps: Vec<usize>,
    /// The tanh layers' outputs and gradients at the last step.
    pub last_tanh: Vec<TanhStats>,
    /// Milliseconds per training step.
    pub ms_per_step: f64,
}

// ANCHOR: train_torchified
/// Trains the torchified net (cell[14]) and records the update:data ratio
/// `((lr * p.grad).std() / p.data.std()).log10()` of each 2-D parameter after
/// each update, and the tanh activations and gradients of the last step.
pub fn train_torchified(
    net: &mut TorchifiedMlp,
    g: &mut TorchGenerator,
    train: &Dataset,
    steps: usize,
    stage: &mut Stage,
) -> Result<TorchifiedRun, String> {
    let tanh = net.tanh_layers();
    stage.start_training("model B", steps, LogEvery::Mean(100));
    let mut run = TorchifiedRun {
        losses: Vec::with_capacity(steps),
        update_ratios: Vec::new(),
        update_ratio_steps: Vec::new(),
        last_tanh: Vec::new(),
        ms_per_step: 0.0,
    };
    for i in 0..steps {
        let (xb, yb) = train.minibatch(g, BATCH_SIZE);
        let graph = Graph::new();
        let outs = net.forward_traced(&graph, &xb);
        let loss = outs.last().expect("layers").cross_entropy(&yb);
        let lr = step_lr(i, TORCHIFIED_DECAY_AT);
        stage.observe(i, loss.item(), lr)?;
        let is_last = i + 1 == steps;
        // `layer.out.retain_grad()`, only where the gradients are looked at.
        let kept: Vec<_> = if is_last {
            tanh.iter().map(|&k| outs[k].retain_grad()).collect()
        } else {
            Vec::new()
        };
        net.params.zero_grad();
        let grads = loss.backward_into(&mut net.params);
        if is_last {
            run.last_tanh = tanh
                .iter()
                .zip(&kept)
                .map(|(&k, v)| TanhStats {
                    layer: k,
                    out: v.value(),
                    grad: grads.of(*v).expect("retained").clone(),
                })
                .collect();
        }
        Sgd::new(lr).step(&mut net.params);
        if steps <= 10_000 || i % 100 == 0 {
            let row = net
                .params
                .iter()
                .filter(|(_, p)| p.value.ndim() == 2)
                .map(|(_, p)| {
                    let update = mean_std(&p.grad.as_ref().expect("grad").mul_scalar(lr)).1;
                    (update / mean_std(&p.value).1).log10()
                })
                .collect();
            run.update_ratios.push(row);
            run.update_ratio_steps.push(i);
        }
        run.losses.push(loss.item());
        if i % 10_000 == 0 {
            println!("{i:7}/{steps:7}: {:.4}", loss.item());
        }
    }
    run.ms_per_step = stage.finish_training();
    Ok(run)
}
// ANCHOR_END: train_torchified
