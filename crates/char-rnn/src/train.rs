//! char-rnn's `train.lua`: the options, `feval`, RMSprop, `eval_split` and the loop.
//!
//! What train.lua does that a modern training loop does not, kept here:
//! - the loss it reports is the mean over the sequence, but the gradient is
//!   the sum over time steps (it never divides by `seq_length`: "since we use
//!   rmsprop it would have no effect", almost);
//! - gradients are clamped element by element to ±`grad_clip`, not by norm;
//! - the hidden state of the last time step starts the next batch, and is
//!   never reset, across epochs included;
//! - the learning rate decays by `learning_rate_decay` at each epoch's end
//!   once `learning_rate_decay_after` epochs have passed;
//! - a run stops on a NaN loss or one over three times the first.

use crate::checkpoint::{self, Checkpoint};
use crate::loader::{Loader, Split};
use crate::model::{CharRnn, Kind};
use autograd::{ForwardPass, Graph, Params, Var};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// train.lua's options, with its defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct Options {
    /// Data directory. Should contain the file input.txt with input data.
    #[arg(long, default_value = "data/tinyshakespeare")]
    pub data_dir: PathBuf,
    /// Size of LSTM internal state.
    #[arg(long, default_value_t = 128)]
    pub rnn_size: usize,
    /// Number of layers in the LSTM.
    #[arg(long, default_value_t = 2)]
    pub num_layers: usize,
    /// lstm, gru or rnn.
    #[arg(long, default_value = "lstm")]
    pub model: String,
    /// Learning rate.
    #[arg(long, default_value_t = 2e-3)]
    pub learning_rate: f64,
    /// Learning rate decay.
    #[arg(long, default_value_t = 0.97)]
    pub learning_rate_decay: f64,
    /// In number of epochs, when to start decaying the learning rate.
    #[arg(long, default_value_t = 10.0)]
    pub learning_rate_decay_after: f64,
    /// Decay rate for rmsprop.
    #[arg(long, default_value_t = 0.95)]
    pub decay_rate: f64,
    /// Dropout for regularization, used after each RNN hidden layer. 0 = no dropout.
    #[arg(long, default_value_t = 0.0)]
    pub dropout: f64,
    /// Number of timesteps to unroll for.
    #[arg(long, default_value_t = 50)]
    pub seq_length: usize,
    /// Number of sequences to train on in parallel.
    #[arg(long, default_value_t = 50)]
    pub batch_size: usize,
    /// Number of full passes through the training data.
    #[arg(long, default_value_t = 50.0)]
    pub max_epochs: f64,
    /// Clip gradients at this value.
    #[arg(long, default_value_t = 5.0)]
    pub grad_clip: f64,
    /// Fraction of data that goes into train set.
    #[arg(long, default_value_t = 0.95)]
    pub train_frac: f64,
    /// Fraction of data that goes into validation set (test_frac is 1 - train_frac - val_frac).
    #[arg(long, default_value_t = 0.05)]
    pub val_frac: f64,
    /// Initialize network parameters from checkpoint at this path.
    #[arg(long, default_value = "")]
    pub init_from: String,
    /// torch manual random number generator seed.
    #[arg(long, default_value_t = 123)]
    pub seed: u64,
    /// How many steps/minibatches between printing out the loss.
    #[arg(long, default_value_t = 1)]
    pub print_every: usize,
    /// Every how many iterations should we evaluate on validation data?
    #[arg(long, default_value_t = 1000)]
    pub eval_val_every: usize,
    /// Output directory where checkpoints get written.
    #[arg(long, default_value = "cv")]
    pub checkpoint_dir: PathBuf,
    /// Filename to autosave the checkpoint to. Will be inside checkpoint_dir/.
    #[arg(long, default_value = "lstm")]
    pub savefile: String,
    /// Accepted for train.lua's sake: there is no GPU here to time.
    #[arg(long, default_value_t = 0)]
    pub accurate_gpu_timing: i64,
    /// Which GPU to use: only -1, the CPU.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub gpuid: i64,
    /// Use OpenCL (instead of CUDA): only 0.
    #[arg(long, default_value_t = 0)]
    pub opencl: i64,
    /// Stop after this many iterations (not in train.lua: for short runs and tests).
    #[arg(long)]
    #[serde(default)]
    pub max_iters: Option<usize>,
}

impl Options {
    /// The checks train.lua makes (or would need) before anything runs.
    pub fn check(&self) -> Result<Kind, String> {
        if self.gpuid != -1 {
            return Err(format!(
                "-gpuid {}: this port runs on the CPU only (-gpuid -1)",
                self.gpuid
            ));
        }
        if self.opencl != 0 {
            return Err(format!(
                "-opencl {}: there is no OpenCL here (-opencl 0)",
                self.opencl
            ));
        }
        if self.rnn_size == 0 || self.num_layers == 0 {
            return Err("-rnn_size and -num_layers must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(format!("-dropout {} is not in [0, 1)", self.dropout));
        }
        if self.print_every == 0 || self.eval_val_every == 0 {
            return Err("-print_every and -eval_val_every must be at least 1".into());
        }
        self.model.parse()
    }
}

/// What one iteration reports.
#[derive(Clone, Copy, Debug)]
pub struct Iteration {
    /// 1-based, as train.lua's `i`.
    pub i: usize,
    /// `i / ntrain`.
    pub epoch: f64,
    /// The mean loss over the sequence.
    pub train_loss: f64,
    /// `grad_params:norm() / params:norm()`, after the clamp and the step.
    pub grad_param_norm: f64,
    /// Seconds the iteration took (train.lua's `time/batch`).
    pub seconds: f64,
}

/// A training run's state: train.lua's globals.
pub struct Trainer {
    /// The options, with `-init_from`'s model settings in place.
    pub opt: Options,
    /// The batches.
    pub loader: Loader,
    /// `protos.rnn`.
    pub model: CharRnn,
    /// Its parameters.
    pub params: Params,
    /// RMSprop's mean square of each parameter's gradient (`optim_state.m`).
    mean_square: Vec<Tensor>,
    /// `optim_state.learningRate`.
    pub learning_rate: f64,
    /// The state the next batch starts from (`init_state_global`).
    state: Vec<Tensor>,
    /// PyTorch's generator: the init, then the dropout masks.
    rng: RefCell<TorchGenerator>,
    /// The iterations done.
    pub iteration: usize,
    /// Every train loss so far.
    pub train_losses: Vec<f64>,
    /// Validation losses by iteration.
    pub val_losses: BTreeMap<usize, f64>,
    /// Seconds spent in [`Trainer::step`] by this process.
    pub train_seconds: f64,
}

impl Trainer {
    /// train.lua up to the loop: seed, the loader, the model (new, or
    /// `-init_from`'s), the initialisation and the forget-gate biases.
    pub fn new(opt: Options, log: &mut dyn Write) -> Result<Trainer, String> {
        let mut opt = opt;
        let kind = opt.check()?;
        let mut rng = TorchGenerator::manual_seed(opt.seed);
        let loader = Loader::create(
            &opt.data_dir,
            opt.batch_size,
            opt.seq_length,
            opt.train_frac,
            opt.val_frac,
            log,
        )?;
        let w = |e: std::io::Error| format!("writing the log: {e}");
        let [ntrain, nval, ntest] = loader.split_sizes;
        writeln!(
            log,
            "data load done. Number of data batches in train: {ntrain}, val: {nval}, test: {ntest}"
        )
        .map_err(w)?;
        writeln!(log, "vocab size: {}", loader.vocab.len()).map_err(w)?;
        let mut params = Params::new();
        let model = if opt.init_from.is_empty() {
            writeln!(
                log,
                "creating an {} with {} layers",
                kind.name(),
                opt.num_layers
            )
            .map_err(w)?;
            let model = CharRnn::new(
                &mut params,
                kind,
                loader.vocab.len(),
                opt.rnn_size,
                opt.num_layers,
                opt.dropout as f32,
            );
            model.init(&mut params, &mut rng);
            model
        } else {
            let path = Path::new(&opt.init_from);
            writeln!(log, "loading a model from checkpoint {}", path.display()).map_err(w)?;
            let saved = Checkpoint::load(path)?;
            if saved.vocab != loader.vocab {
                return Err(format!(
                    "{}: the character vocabulary for this dataset and the one in the saved \
                     checkpoint are not the same ({} and {} bytes)",
                    path.display(),
                    loader.vocab.len(),
                    saved.vocab.len()
                ));
            }
            writeln!(
                log,
                "overwriting rnn_size={}, num_layers={}, model={} based on the checkpoint.",
                saved.opt.rnn_size, saved.opt.num_layers, saved.opt.model
            )
            .map_err(w)?;
            opt.rnn_size = saved.opt.rnn_size;
            opt.num_layers = saved.opt.num_layers;
            opt.model = saved.opt.model.clone();
            // The checkpoint's protos carry their own Dropout modules.
            opt.dropout = saved.opt.dropout;
            let (model, loaded) = saved.into_model()?;
            params = loaded;
            model.set_forget_biases(&mut params);
            model
        };
        writeln!(log, "number of parameters in the model: {}", params.count()).map_err(w)?;
        let mean_square = params
            .iter()
            .map(|(_, p)| Tensor::zeros(p.value.shape()))
            .collect();
        let state = model.zero_state(opt.batch_size);
        Ok(Trainer {
            learning_rate: opt.learning_rate,
            opt,
            loader,
            model,
            params,
            mean_square,
            state,
            rng: RefCell::new(rng),
            iteration: 0,
            train_losses: Vec::new(),
            val_losses: BTreeMap::new(),
            train_seconds: 0.0,
        })
    }

    /// `max_epochs * ntrain` iterations, or `-max_iters` if fewer.
    pub fn iterations(&self) -> usize {
        let all = (self.opt.max_epochs * self.loader.split_sizes[0] as f64).floor() as usize;
        self.opt.max_iters.map_or(all, |m| m.min(all))
    }

    // ANCHOR: feval
    /// `feval`: the next train batch forward through `seq_length` clones, the
    /// loss summed over time steps backward, and the last state kept for the
    /// next batch. Returns the mean loss over the sequence; the gradients are
    /// left in the parameters, clamped to ±grad_clip.
    fn feval(&mut self) -> Result<f64, String> {
        let (x, y) = self.loader.next_batch(Split::Train)?; // (T, B) each
        let b = self.opt.batch_size;
        let loss_sum = {
            let graph = Graph::new();
            let pass = ForwardPass::train(&graph, &self.params, &self.rng);
            let mut state: Vec<Var> = self
                .state
                .iter()
                .map(|s| graph.constant(s.clone()))
                .collect();
            let mut loss: Option<Var> = None;
            for t in 0..self.opt.seq_length {
                let rows = t * b..(t + 1) * b;
                let (next, logits) = self.model.step(&pass, &x[rows.clone()], &state); // (B, V)
                let loss_t = logits.cross_entropy(&y[rows]); // ClassNLLCriterion, batch mean
                loss = Some(loss.map_or(loss_t, |sum| sum + loss_t));
                state = next;
            }
            let loss = loss.expect("seq_length >= 1");
            self.params.zero_grad();
            loss.backward_into(&mut self.params);
            self.state = state.iter().map(|s| s.value()).collect(); // carried, detached
            loss.item() as f64
        };
        let clip = self.opt.grad_clip as f32;
        for (_, p) in self.params.iter_mut() {
            let g = p.grad.as_ref().expect("every parameter is used").to_vec();
            let clamped = g.iter().map(|v| v.clamp(-clip, clip)).collect();
            p.grad = Some(Tensor::from_vec(clamped, p.value.shape()));
        }
        Ok(loss_sum / self.opt.seq_length as f64)
    }
    // ANCHOR_END: feval

    // ANCHOR: rmsprop
    /// `optim.rmsprop`: `m = α m + (1 − α) g²`, then `x −= lr g / (√m + ε)`,
    /// with α = `decay_rate`, ε = 1e-8 and `m` starting at 0.
    fn rmsprop(&mut self) {
        let alpha = self.opt.decay_rate as f32;
        let one_minus_alpha = (1.0 - self.opt.decay_rate) as f32;
        let lr = self.learning_rate as f32;
        for ((_, p), m) in self.params.iter_mut().zip(&mut self.mean_square) {
            let g = p.grad.as_ref().expect("feval set every gradient").to_vec();
            let mut ms = m.to_vec();
            let mut x = p.value.to_vec();
            for ((x, m), g) in x.iter_mut().zip(&mut ms).zip(&g) {
                *m = *m * alpha + one_minus_alpha * g * g;
                *x += -lr * (g / (m.sqrt() + 1e-8));
            }
            *m = Tensor::from_vec(ms, p.value.shape());
            p.value = Tensor::from_vec(x, p.value.shape());
        }
    }
    // ANCHOR_END: rmsprop

    /// One iteration of train.lua's loop: `feval`, RMSprop, the learning rate
    /// decay at an epoch's end.
    pub fn step(&mut self) -> Result<Iteration, String> {
        let timer = std::time::Instant::now();
        self.iteration += 1;
        let i = self.iteration;
        let ntrain = self.loader.split_sizes[0];
        let epoch = i as f64 / ntrain as f64;
        let train_loss = self.feval()?;
        self.rmsprop();
        let (mut grad_sq, mut param_sq) = (0.0f64, 0.0f64);
        for (_, p) in self.params.iter() {
            let g = p.grad.as_ref().expect("feval set every gradient");
            grad_sq += g
                .to_vec()
                .iter()
                .map(|&v| (v as f64) * (v as f64))
                .sum::<f64>();
            param_sq += p
                .value
                .to_vec()
                .iter()
                .map(|&v| (v as f64) * (v as f64))
                .sum::<f64>();
        }
        self.train_losses.push(train_loss);
        if i.is_multiple_of(ntrain)
            && self.opt.learning_rate_decay < 1.0
            && epoch >= self.opt.learning_rate_decay_after
        {
            self.learning_rate *= self.opt.learning_rate_decay;
        }
        let seconds = timer.elapsed().as_secs_f64();
        self.train_seconds += seconds;
        Ok(Iteration {
            i,
            epoch,
            train_loss,
            grad_param_norm: grad_sq.sqrt() / param_sq.sqrt(),
            seconds,
        })
    }

    /// `eval_split(split)`: the mean loss over every batch of the split, from
    /// a zero state carried from batch to batch, without dropout.
    pub fn eval_split(&mut self, split: Split) -> Result<f64, String> {
        let n = self.loader.split_sizes[split as usize];
        self.loader.reset_batch_pointer(split);
        let b = self.opt.batch_size;
        let mut state = self.model.zero_state(b);
        let mut loss = 0.0f64;
        for _ in 0..n {
            let (x, y) = self.loader.next_batch(split)?;
            for t in 0..self.opt.seq_length {
                let graph = Graph::no_grad();
                let pass = ForwardPass::eval(&graph, &self.params);
                let vars: Vec<Var> = state.iter().map(|s| graph.constant(s.clone())).collect();
                let rows = t * b..(t + 1) * b;
                let (next, logits) = self.model.step(&pass, &x[rows.clone()], &vars);
                loss += logits.cross_entropy(&y[rows]).item() as f64;
                state = next.iter().map(|s| s.value()).collect();
            }
        }
        Ok(loss / self.opt.seq_length as f64 / n as f64)
    }

    /// The checkpoint of this run after a validation loss: the model and
    /// what `sample` and `-init_from` need.
    pub fn checkpoint(&self, val_loss: f64) -> Checkpoint {
        Checkpoint {
            opt: self.opt.clone(),
            vocab: self.loader.vocab.clone(),
            params: self.params.clone(),
            iteration: self.iteration,
            epoch: self.iteration as f64 / self.loader.split_sizes[0] as f64,
            val_loss,
            train_losses: self.train_losses.clone(),
            val_losses: self.val_losses.clone(),
        }
    }
}

/// C's `%.4e`: `1.2345e-02`, where Rust writes `1.2345e-2`.
pub fn c_exp(x: f64) -> String {
    let s = format!("{x:.4e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s, // NaN, inf
    }
}

// ANCHOR: train_loop
/// train.lua's loop: iterate, print every `print_every`, evaluate and save a
/// checkpoint every `eval_val_every` iterations and at the last (then call
/// `after_eval`), and stop on a NaN loss or one over three times the first.
/// Returns the last validation loss.
pub fn run(
    trainer: &mut Trainer,
    log: &mut dyn Write,
    after_eval: &mut dyn FnMut(&Trainer) -> Result<(), String>,
) -> Result<Option<f64>, String> {
    let w = |e: std::io::Error| format!("writing the log: {e}");
    let iterations = trainer.iterations();
    std::fs::create_dir_all(&trainer.opt.checkpoint_dir)
        .map_err(|e| format!("{}: {e}", trainer.opt.checkpoint_dir.display()))?;
    let mut loss0: Option<f64> = None;
    let mut last_val = None;
    for _ in 0..iterations {
        let it = trainer.step()?;
        if !it.train_loss.is_finite() {
            return Err(format!(
                "loss is {} at iteration {}: stopping",
                it.train_loss, it.i
            ));
        }
        if it.i % trainer.opt.eval_val_every == 0 || it.i == iterations {
            writeln!(log, "evaluating loss over split index 2").map_err(w)?;
            let val_loss = trainer.eval_split(Split::Val)?;
            trainer.val_losses.insert(it.i, val_loss);
            let savefile = trainer.opt.checkpoint_dir.join(format!(
                "lm_{}_epoch{:.2}_{:.4}.safetensors",
                trainer.opt.savefile, it.epoch, val_loss
            ));
            writeln!(log, "saving checkpoint to {}", savefile.display()).map_err(w)?;
            checkpoint::save(&savefile, &trainer.checkpoint(val_loss))?;
            last_val = Some(val_loss);
            after_eval(trainer)?;
        }
        if it.i % trainer.opt.print_every == 0 {
            writeln!(
                log,
                "{}/{iterations} (epoch {:.3}), train_loss = {:6.8}, grad/param norm = {}, time/batch = {:.4}s",
                it.i,
                it.epoch,
                it.train_loss,
                c_exp(it.grad_param_norm),
                it.seconds
            )
            .map_err(w)?;
        }
        let first = *loss0.get_or_insert(it.train_loss);
        if it.train_loss > first * 3.0 {
            return Err(format!(
                "loss is exploding, aborting: {} at iteration {}, over three times the first ({first})",
                it.train_loss, it.i
            ));
        }
    }
    Ok(last_val)
}
// ANCHOR_END: train_loop

#[cfg(test)]
mod tests {
    use super::c_exp;

    #[test]
    fn exponents_print_as_c_prints_them() {
        assert_eq!(c_exp(0.012345), "1.2345e-02");
        assert_eq!(c_exp(12345.0), "1.2345e+04");
        assert_eq!(c_exp(1.5e-100), "1.5000e-100");
    }
}
