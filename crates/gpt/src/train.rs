//! The training loop of the lecture's scripts: evaluation over random batches,
//! AdamW steps, the learning-rate schedule, and the order of random draws.

use crate::checkpoint;
use crate::data::{Shakespeare, Split};
use crate::nn::ForwardPass;
use crate::stages::{Config, Model};
use autograd::{clip_grad_norm, AdamW, AdamWConfig, Graph, Params};
use report::LogEvery;
use std::cell::RefCell;
use std::path::Path;
use std::time::Instant;
use tensor::rng::TorchGenerator;

/// A model with its parameters, optimizer, generator and position in training.
pub struct Trainer {
    /// The run's configuration.
    pub cfg: Config,
    /// The model's structure.
    pub model: Model,
    /// Its parameters.
    pub params: Params,
    /// AdamW with the stage's groups.
    pub opt: AdamW,
    /// The one generator: init, batches, dropout, sampling (`torch.manual_seed(1337)`).
    pub rng: RefCell<TorchGenerator>,
    /// The next iteration to run.
    pub iter: usize,
}

/// Train and val loss from one evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eval {
    /// The iteration it ran at.
    pub iter: usize,
    /// Mean loss over `eval_iters` train batches.
    pub train: f32,
    /// Mean loss over `eval_iters` val batches.
    pub val: f32,
}

impl Trainer {
    /// `torch.manual_seed(seed)`, then the model and the optimizer, as the script builds them.
    pub fn new(cfg: Config) -> Trainer {
        let mut rng = TorchGenerator::manual_seed(cfg.train.seed);
        let mut params = Params::new();
        let model = Model::build(&cfg.model, &mut params, &mut rng);
        let adamw = AdamWConfig {
            lr: cfg.train.learning_rate,
            betas: cfg.train.betas,
            eps: 1e-8,
            weight_decay: cfg.train.weight_decay,
        };
        let opt = if cfg.train.decay_matrices_only {
            AdamW::decay_matrices_only(adamw, &params)
        } else {
            AdamW::new(adamw)
        };
        Trainer {
            cfg,
            model,
            params,
            opt,
            rng: RefCell::new(rng),
            iter: 0,
        }
    }

    /// One batch `(x, y)` of the split, each `(B, T)`.
    pub fn get_batch(&self, data: &Shakespeare, split: Split) -> (Vec<usize>, Vec<usize>) {
        let mut rng = self.rng.borrow_mut();
        let (b, t) = (self.cfg.train.batch_size, self.cfg.model.block_size());
        data.get_batch(split, b, t, &mut rng)
    }

    // ANCHOR: estimate_loss
    /// `estimate_loss()`: the mean loss over `eval_iters` random batches of each
    /// split, in eval mode (no dropout, no graph).
    pub fn estimate_loss(&self, data: &Shakespeare) -> Eval {
        let (b, t) = (self.cfg.train.batch_size, self.cfg.model.block_size());
        let eval_iters = self.cfg.train.eval_iters;
        let mut means = [0f32; 2];
        for (mean, split) in means.iter_mut().zip([Split::Train, Split::Val]) {
            let mut sum = 0f64;
            for _ in 0..eval_iters {
                let (x, y) = self.get_batch(data, split); // (B, T), (B, T)
                let graph = Graph::no_grad();
                let pass = ForwardPass::eval(&graph, &self.params);
                sum += self.model.loss(&pass, &x, &y, b, t).item() as f64;
            }
            *mean = (sum / eval_iters as f64) as f32;
        }
        Eval {
            iter: self.iter,
            train: means[0],
            val: means[1],
        }
    }
    // ANCHOR_END: estimate_loss

    // ANCHOR: train_step
    /// One iteration on the batch `(x, y)`: forward, `zero_grad`, backward,
    /// clip, AdamW at the schedule's rate. Returns the loss.
    pub fn step(&mut self, x: &[usize], y: &[usize]) -> f32 {
        let (b, t) = (self.cfg.train.batch_size, self.cfg.model.block_size());
        let loss = {
            let graph = Graph::new();
            let pass = if self.cfg.model.dropout() > 0.0 {
                ForwardPass::train(&graph, &self.params, &self.rng)
            } else {
                ForwardPass::eval(&graph, &self.params) // no dropout: nothing differs
            };
            let loss = self.model.loss(&pass, x, y, b, t); // scalar
            self.params.zero_grad();
            loss.backward_into(&mut self.params);
            loss.item()
        }; // the graph is freed here, as PyTorch frees it in backward
        if self.cfg.train.grad_clip > 0.0 {
            clip_grad_norm(&mut self.params, self.cfg.train.grad_clip);
        }
        self.opt.config.lr = self.cfg.train.lr_at(self.iter);
        self.opt.step(&mut self.params); // so the update writes the weights in place
        self.iter += 1;
        loss
    }
    // ANCHOR_END: train_step
}

/// What a stage's training loop did.
pub struct Trained {
    /// Every evaluation, in order.
    pub evals: Vec<Eval>,
    /// Iterations trained in this run (fewer than `max_iters` when resumed).
    pub steps: usize,
    /// Milliseconds per training step, evaluations and checkpoints left out.
    pub ms_per_step: f64,
}

/// A non-finite loss's error (which names the step), with the tensor on the
/// tape where the NaN or infinity first appeared.
pub fn naming_the_tensor(error: String) -> String {
    match autograd::faults::take_non_finite() {
        Some(tensor) => format!("{error}; the first non-finite tensor: {tensor}"),
        None => error,
    }
}

// ANCHOR: train
/// The script's loop, from the trainer's iteration to `max_iters`: evaluate on
/// schedule, get a batch, step. nanoGPT's loop fetches the next batch before
/// it evaluates and evaluates once more at `max_iters`; the video's stops at
/// `max_iters - 1`. Writes a checkpoint every `checkpoint_every` iterations
/// and at the end.
pub fn train(
    trainer: &mut Trainer,
    data: &Shakespeare,
    stage: &mut report::Stage,
    checkpoint_path: &Path,
    checkpoint_every: usize,
) -> Result<Trained, String> {
    let cfg = trainer.cfg.train.clone();
    let start_iter = trainer.iter;
    let last_iter = if cfg.nanogpt_loop {
        cfg.max_iters
    } else {
        cfg.max_iters.saturating_sub(1)
    };
    let label = trainer.cfg.stage.name();
    stage.start_training(label, cfg.max_iters, LogEvery::Evaluations);
    let mut evals = Vec::new();
    let mut train_seconds = 0.0;
    let mut prefetched = cfg
        .nanogpt_loop
        .then(|| trainer.get_batch(data, Split::Train));
    for it in start_iter..=last_iter {
        if cfg.evaluates_at(it) {
            let e = trainer.estimate_loss(data);
            println!(
                "step {it}: train loss {:.4}, val loss {:.4}",
                e.train, e.val
            );
            stage.log(
                it,
                e.train as f64,
                Some(e.val as f64),
                Some(cfg.lr_at(it) as f64),
            );
            evals.push(e);
        }
        if it == cfg.max_iters {
            break; // nanoGPT's loop evaluates at max_iters and stops
        }
        let (x, y) = match prefetched.take() {
            Some(batch) => batch,
            None => trainer.get_batch(data, Split::Train),
        };
        let started = Instant::now();
        let loss = trainer.step(&x, &y);
        train_seconds += started.elapsed().as_secs_f64();
        stage
            .observe(it, loss, cfg.lr_at(it))
            .map_err(naming_the_tensor)?;
        if it + 1 == cfg.max_iters || (it + 1).is_multiple_of(checkpoint_every) {
            checkpoint::save(checkpoint_path, trainer, &data.vocab)
                .map_err(|e| format!("iteration {it}: {e}"))?;
        }
        if cfg.nanogpt_loop {
            prefetched = Some(trainer.get_batch(data, Split::Train));
        }
    }
    stage.finish_training();
    let steps = trainer.iter - start_iter;
    Ok(Trained {
        evals,
        steps,
        ms_per_step: 1000.0 * train_seconds / steps.max(1) as f64,
    })
}
// ANCHOR_END: train
