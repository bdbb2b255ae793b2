//! The training loop of the lecture's scripts: evaluation over random batches,
//! AdamW steps, the learning-rate schedule, and the order of random draws.

use crate::config::Config;
use crate::data::{Shakespeare, Split};
use crate::model::Model;
use crate::nn::Fwd;
use autograd::{clip_grad_norm, AdamW, AdamWConfig, Graph, Params};
use std::cell::RefCell;
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
        let mut rng = TorchGenerator::manual_seed(cfg.seed);
        let mut params = Params::new();
        let model = Model::build(&cfg, &mut params, &mut rng);
        let adamw = AdamWConfig {
            lr: cfg.learning_rate,
            betas: cfg.betas,
            eps: 1e-8,
            weight_decay: cfg.weight_decay,
        };
        let opt = if cfg.decay_matrices_only {
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
        data.get_batch(split, self.cfg.batch_size, self.cfg.block_size, &mut rng)
    }

    // ANCHOR: estimate_loss
    /// `estimate_loss()`: the mean loss over `eval_iters` random batches of each
    /// split, in eval mode (no dropout, no graph).
    pub fn estimate_loss(&self, data: &Shakespeare) -> Eval {
        let (b, t) = (self.cfg.batch_size, self.cfg.block_size);
        let mut means = [0f32; 2];
        for (mean, split) in means.iter_mut().zip([Split::Train, Split::Val]) {
            let mut sum = 0f64;
            for _ in 0..self.cfg.eval_iters {
                let (x, y) = self.get_batch(data, split);
                let graph = Graph::no_grad();
                let f = Fwd::eval(&graph, &self.params);
                sum += self.model.loss(&f, &x, &y, b, t).item() as f64;
            }
            *mean = (sum / self.cfg.eval_iters as f64) as f32;
        }
        Eval {
            iter: self.iter,
            train: means[0],
            val: means[1],
        }
    }
    // ANCHOR_END: estimate_loss

    // ANCHOR: train_step
    /// One iteration on the batch `(x, y)`: forward, backward, clip, AdamW at the
    /// schedule's rate. Returns the loss, or an error if it is not finite.
    pub fn step(&mut self, x: &[usize], y: &[usize]) -> Result<f32, String> {
        let (b, t) = (self.cfg.batch_size, self.cfg.block_size);
        let lr = self.cfg.lr_at(self.iter);
        let loss_value = {
            let graph = Graph::new();
            let dropout = (self.cfg.dropout > 0.0).then_some(&self.rng);
            let f = Fwd {
                graph: &graph,
                params: &self.params,
                dropout_rng: dropout,
            };
            let loss = self.model.loss(&f, x, y, b, t); // scalar
            let grads = loss.backward();
            let value = loss.item();
            self.params.zero_grad();
            self.params.accumulate(&grads);
            value
        };
        if !loss_value.is_finite() {
            return Err(format!("loss is {loss_value} at iteration {}", self.iter));
        }
        if self.cfg.grad_clip > 0.0 {
            clip_grad_norm(&mut self.params, self.cfg.grad_clip);
        }
        self.opt.config.lr = lr;
        self.opt.step(&mut self.params);
        self.iter += 1;
        Ok(loss_value)
    }
    // ANCHOR_END: train_step
}
