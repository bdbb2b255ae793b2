//! nanoGPT's `train.py` on a prepared folder: its configuration keys as flags
//! ([`super::configurator`]), its loop in its order of random draws, its
//! printed lines, and its checkpoint rule (after an evaluation, when the val
//! loss improved or `always_save_checkpoint`), with the checkpoint in
//! safetensors.
//!
//! The defaults are `config/train_shakespeare_char.py` with the README's CPU
//! line on top (`--device=cpu --compile=False --eval_iters=20 --log_interval=1
//! --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128
//! --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0`), which nanoGPT's
//! README says takes about three minutes and reaches a val loss of 1.88 on
//! tiny Shakespeare.

pub use super::checkpoint::History;
use super::checkpoint::{self, Checkpoint, CheckpointToSave};
use super::configurator::{training_floats, TrainArgs, TrainPyArgs};
use super::prepare::{self, thousands};
use crate::data::{Shakespeare, Split};
use crate::model::GptConfig;
use crate::nn::ForwardPass;
use crate::train::{naming_the_tensor, Trainer};
use autograd::{clip_grad_norm, AdamW, Graph, Params, Var};
use report::check_memory;
use report::LossRow;
use std::cell::RefCell;
use std::time::Instant;
use tensor::rng::TorchGenerator;

/// One micro-step's inputs and targets, `(X, Y)`, each `(B, T)` row-major.
pub type Batch = (Vec<usize>, Vec<usize>);

/// train.py's learning rate: `learning_rate`, or with `decay_lr` a linear
/// warmup and a cosine decay to `min_lr`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// The peak (or constant) rate.
    pub learning_rate: f32,
    /// Warm up and decay, or keep the rate constant.
    pub decay_lr: bool,
    /// Linear warmup iterations.
    pub warmup_iters: usize,
    /// The iteration at which the cosine reaches `min_lr`.
    pub lr_decay_iters: usize,
    /// The floor.
    pub min_lr: f32,
}

impl Schedule {
    // ANCHOR: get_lr
    /// `get_lr(it)`: linear warmup, cosine decay to `min_lr` at
    /// `lr_decay_iters`, then `min_lr`; the constant rate when `decay_lr` is off.
    pub fn get_lr(&self, it: usize) -> f32 {
        if !self.decay_lr {
            return self.learning_rate;
        }
        autograd::nanogpt_warmup_cosine(
            it,
            self.learning_rate,
            self.warmup_iters,
            self.lr_decay_iters,
            self.min_lr,
        )
    }
    // ANCHOR_END: get_lr
}

impl TrainPyArgs {
    /// The learning-rate schedule of these flags.
    pub fn schedule(&self) -> Schedule {
        Schedule {
            learning_rate: self.learning_rate,
            decay_lr: self.decay_lr,
            warmup_iters: self.warmup_iters,
            lr_decay_iters: self.lr_decay_iters,
            min_lr: self.min_lr,
        }
    }

    /// One iteration's flags at learning rate `lr`.
    pub fn step_flags(&self, lr: f32) -> StepFlags {
        StepFlags {
            accum: self.gradient_accumulation_steps,
            dropout: self.dropout,
            grad_clip: self.grad_clip,
            lr,
        }
    }
}

/// `model.get_num_params()`: the parameters without the position embeddings
/// (the token embeddings count, as they are the LM head's weights too).
pub fn num_params(trainer: &Trainer, model: &GptConfig) -> usize {
    trainer.params.count() - model.block_size * model.n_embd
}

/// `estimate_mfu`: the iteration's FLOPs (6N + 12·L·H·Q·T per token) per
/// second, as a fraction of an A100's bf16 peak, 312 TFLOPS, as nanoGPT
/// reports it. On a CPU it is tiny; it is printed for nanoGPT's line.
pub fn estimate_mfu(n_params: usize, model: &GptConfig, fwdbwd_per_iter: usize, dt: f64) -> f64 {
    let (l, h, t) = (model.n_layer, model.n_head, model.block_size);
    let q = model.n_embd / h;
    let flops_per_token = 6.0 * n_params as f64 + 12.0 * (l * h * q * t) as f64;
    let flops_per_iter = flops_per_token * t as f64 * fwdbwd_per_iter as f64;
    flops_per_iter / dt / 312e12
}

/// A run in progress: the trainer, the data, where it stands.
pub struct Run {
    /// The flags.
    pub args: TrainArgs,
    /// Model, AdamW, generator.
    pub trainer: Trainer,
    /// The prepared folder.
    pub data: Shakespeare,
    /// The lowest val loss so far (1e9 before any evaluation).
    pub best_val_loss: f32,
    /// Losses and evaluations so far.
    pub history: History,
}

impl Run {
    /// The checkpoint of the run at its current iteration.
    pub fn checkpoint(&self) -> CheckpointToSave<'_> {
        CheckpointToSave {
            trainer: &self.trainer,
            args: &self.args,
            vocab: &self.data.vocab,
            best_val_loss: self.best_val_loss,
            history: &self.history,
        }
    }

    /// `train.py` up to the loop: the data, `torch.manual_seed`, the model from
    /// scratch or from OUT_DIR's checkpoint, and AdamW. Prints nanoGPT's lines.
    pub fn start(mut args: TrainArgs) -> Result<Run, String> {
        args.check()?;
        report::check_out_dir("--out-dir", &args.out_dir)?;
        let ckpt = args.out_dir.join(checkpoint::FILE);
        if args.init_from == "scratch" && ckpt.exists() {
            // nanoGPT would overwrite it at the first evaluation that improves.
            return Err(format!(
                "--out-dir {} already holds a checkpoint ({}); continue it with --init-from resume, \
                 or give another --out-dir",
                args.out_dir.display(),
                ckpt.display()
            ));
        }
        let data = prepare::read_folder(&args.data)?;
        for (split, ids, file) in [
            (Split::Train, &data.train, prepare::TRAIN_BIN),
            (Split::Val, &data.val, prepare::VAL_BIN),
        ] {
            if ids.len() <= args.train_py.block_size {
                return Err(format!(
                    "{} holds {} tokens; a {split:?} batch needs --block-size + 1 = {}",
                    args.data.join(file).display(),
                    ids.len(),
                    args.train_py.block_size + 1
                ));
            }
        }
        let tokens = args.train_py.gradient_accumulation_steps
            * args.train_py.batch_size
            * args.train_py.block_size;
        println!("tokens per iteration will be: {}", thousands(tokens));
        println!(
            "found vocab_size = {} (inside {})",
            data.vocab.len(),
            args.data.join(prepare::META_PKL).display()
        );
        let model = args.model_args(data.vocab.len());
        check_memory(
            training_floats(&model, args.train_py.batch_size),
            "--batch-size, --block-size, --n-layer, --n-embd and the vocabulary",
        )?;
        let ckpt_path = args.out_dir.join(checkpoint::FILE);
        let resumed = if args.init_from == "resume" {
            println!("Resuming training from {}", args.out_dir.display());
            let ckpt = Checkpoint::load(&ckpt_path)?;
            ckpt.check_model(&model, &ckpt_path)?;
            if ckpt.vocab != data.vocab {
                return Err(format!(
                    "checkpoint {} was trained on another vocabulary than {}",
                    ckpt_path.display(),
                    args.data.join(prepare::META_PKL).display()
                ));
            }
            ckpt.take_optimizer_settings(&mut args);
            Some(ckpt)
        } else {
            println!("Initializing a new model from scratch");
            None
        };
        let mut trainer = Trainer::new(args.config(model)); // torch.manual_seed(1337), GPT(gptconf)
        println!(
            "number of parameters: {:.2}M",
            num_params(&trainer, &model) as f64 / 1e6
        );
        let mut best_val_loss = 1e9;
        let mut history = History::default();
        if let Some(ckpt) = resumed {
            ckpt.restore(&mut trainer)
                .map_err(|e| format!("checkpoint {}: {e}", ckpt_path.display()))?;
            best_val_loss = ckpt.best_val_loss;
            // The loop evaluates first where the flags' interval meets the
            // checkpoint's iteration, or with --eval-only.
            let evaluates =
                args.eval_only || ckpt.iter_num.is_multiple_of(args.train_py.eval_interval);
            history = ckpt.history_before_resume(evaluates);
        }
        print_groups(&trainer);
        Ok(Run {
            args,
            trainer,
            data,
            best_val_loss,
            history,
        })
    }
}

/// The flags of one iteration of train.py: micro-steps, dropout, clipping,
/// and the learning rate of this iteration.
#[derive(Clone, Copy, Debug)]
pub struct StepFlags {
    /// `gradient_accumulation_steps`.
    pub accum: usize,
    /// Dropout while training; 0 runs the forward pass without it.
    pub dropout: f32,
    /// The gradients' global norm is clipped to this; 0 turns clipping off.
    pub grad_clip: f32,
    /// `get_lr(iter)`.
    pub lr: f32,
}

// ANCHOR: micro_steps
/// One iteration of train.py: `accum` forward passes, each loss divided by
/// their number, the next batch fetched after each forward and before its
/// backward (as train.py prefetches), the gradients summed; then clipping and
/// AdamW at `lr`. Returns the last micro-step's loss, scaled back up as
/// train.py logs it. nanoGPT's own run and the GPT-2 fine-tune both step here,
/// each with its model's loss.
pub fn micro_steps(
    params: &mut Params,
    opt: &mut AdamW,
    rng: &RefCell<TorchGenerator>,
    flags: StepFlags,
    batch: &mut Batch,
    loss_of: impl for<'g> Fn(&ForwardPass<'g, '_>, &Batch) -> Var<'g>,
    next_batch: impl Fn() -> Batch,
) -> f32 {
    let accum = flags.accum;
    params.zero_grad();
    let mut last = 0.0;
    for _ in 0..accum {
        let graph = Graph::new();
        let pass = if flags.dropout > 0.0 {
            ForwardPass::train(&graph, params, rng)
        } else {
            ForwardPass::eval(&graph, params)
        };
        let loss = loss_of(&pass, batch); // scalar
        let loss = if accum > 1 {
            loss.div_scalar(accum as f32)
        } else {
            loss
        };
        *batch = next_batch(); // the next (X, Y)
        loss.backward_into(params);
        last = loss.item();
    }
    if flags.grad_clip > 0.0 {
        clip_grad_norm(params, flags.grad_clip);
    }
    opt.config.lr = flags.lr;
    opt.step(params);
    last * accum as f32
}
// ANCHOR_END: micro_steps

/// What train.py's loop reads of a run's flags.
#[derive(Clone, Copy, Debug)]
pub struct LoopFlags {
    /// Evaluate (and maybe save) every N iterations.
    pub eval_interval: usize,
    /// Print the loss every N iterations.
    pub log_interval: usize,
    /// The last iteration: the loop takes `max_iters + 1` steps from 0.
    pub max_iters: usize,
    /// Evaluate once and stop.
    pub eval_only: bool,
    /// Save after every evaluation, not only when the val loss improved.
    pub always_save_checkpoint: bool,
    /// `get_lr`.
    pub schedule: Schedule,
    /// The model's shape, for the MFU estimate.
    pub model: GptConfig,
    /// Its parameters, as `model.get_num_params()` counts them.
    pub n_params: usize,
    /// Forward-backward passes of `batch_size` sequences per iteration.
    pub fwdbwd_per_iter: usize,
}

/// A run that train.py's loop ([`train`]) drives: nanoGPT's own ([`Run`])
/// and the GPT-2 fine-tune (`gpt2::finetune`). They differ in their model
/// and in what they save; the loop is one.
pub trait TrainPy {
    /// The loop's flags.
    fn loop_flags(&self) -> LoopFlags;
    /// The next iteration.
    fn iter(&self) -> usize;
    /// `get_batch('train')`.
    fn train_batch(&self) -> Batch;
    /// `estimate_loss()`: the mean train and val losses.
    fn estimate_loss(&self) -> (f32, f32);
    /// One iteration at `lr` ([`micro_steps`]); returns the loss train.py logs.
    fn step(&mut self, batch: &mut Batch, lr: f32) -> f32;
    /// The losses and evaluations so far.
    fn history(&mut self) -> &mut History;
    /// The lowest val loss so far (1e9 before any evaluation).
    fn best_val_loss(&mut self) -> &mut f32;
    /// Saves what train.py saves at iteration `iter` after an evaluation,
    /// printing its line.
    fn save(&mut self, iter: usize) -> Result<(), String>;
}

impl TrainPy for Run {
    fn loop_flags(&self) -> LoopFlags {
        let args = &self.args;
        let model = args.model_args(self.data.vocab.len());
        LoopFlags {
            eval_interval: args.train_py.eval_interval,
            log_interval: args.train_py.log_interval,
            max_iters: args.train_py.max_iters,
            eval_only: args.eval_only,
            always_save_checkpoint: args.train_py.always_save_checkpoint,
            schedule: args.train_py.schedule(),
            model,
            n_params: num_params(&self.trainer, &model),
            fwdbwd_per_iter: args.train_py.batch_size * args.train_py.gradient_accumulation_steps,
        }
    }

    fn iter(&self) -> usize {
        self.trainer.iter
    }

    fn train_batch(&self) -> Batch {
        self.trainer.get_batch(&self.data, Split::Train)
    }

    fn estimate_loss(&self) -> (f32, f32) {
        let e = self.trainer.estimate_loss(&self.data);
        (e.train, e.val)
    }

    fn step(&mut self, batch: &mut Batch, lr: f32) -> f32 {
        let (b, t) = (self.args.train_py.batch_size, self.args.train_py.block_size);
        let flags = self.args.train_py.step_flags(lr);
        let (trainer, data) = (&mut self.trainer, &self.data);
        let (model, rng) = (&trainer.model, &trainer.rng);
        let loss = micro_steps(
            &mut trainer.params,
            &mut trainer.opt,
            rng,
            flags,
            batch,
            |pass, (x, y)| model.loss(pass, x, y, b, t),
            || data.get_batch(Split::Train, b, t, &mut rng.borrow_mut()),
        );
        trainer.iter += 1;
        loss
    }

    fn history(&mut self) -> &mut History {
        &mut self.history
    }

    fn best_val_loss(&mut self) -> &mut f32 {
        &mut self.best_val_loss
    }

    fn save(&mut self, _iter: usize) -> Result<(), String> {
        println!("saving checkpoint to {}", self.args.out_dir.display());
        self.checkpoint()
            .save(&self.args.out_dir.join(checkpoint::FILE))
    }
}

/// `configure_optimizers`' two lines about its groups.
fn print_groups(trainer: &Trainer) {
    let (mut decay, mut nodecay) = ((0, 0), (0, 0));
    for (_, p) in trainer.params.iter() {
        let group = if p.value.shape().len() >= 2 {
            &mut decay
        } else {
            &mut nodecay
        };
        group.0 += 1;
        group.1 += p.value.len();
    }
    println!(
        "num decayed parameter tensors: {}, with {} parameters",
        decay.0,
        thousands(decay.1)
    );
    println!(
        "num non-decayed parameter tensors: {}, with {} parameters",
        nodecay.0,
        thousands(nodecay.1)
    );
}

// ANCHOR: train_loop
/// train.py's loop from the run's iteration: set the learning rate; every
/// `eval_interval` iterations estimate both losses, print them and save if
/// the val loss improved (or always, with `always_save_checkpoint`), never at
/// iteration 0; then step; log every `log_interval`; stop after iteration
/// `max_iters`, so a run from scratch takes `max_iters + 1` steps, as
/// nanoGPT's does. `on_eval` runs after each evaluation (the report and the
/// runs page). A loss that is not finite stops the run, naming the step and
/// the first tensor that went non-finite.
pub fn train<R: TrainPy>(
    run: &mut R,
    mut on_eval: impl FnMut(&R) -> Result<(), String>,
) -> Result<(), String> {
    let flags = run.loop_flags();
    let mut batch = run.train_batch(); // the very first batch
    let mut t0 = Instant::now();
    let mut local_iter = 0;
    let mut running_mfu = -1.0;
    loop {
        let iter = run.iter();
        let lr = flags.schedule.get_lr(iter);
        if iter.is_multiple_of(flags.eval_interval) || flags.eval_only {
            let (train, val) = run.estimate_loss();
            println!("step {iter}: train loss {train:.4}, val loss {val:.4}");
            if !(train.is_finite() && val.is_finite()) {
                return Err(naming_the_tensor(format!(
                    "iteration {iter}: the estimated loss is not finite (train {train}, val {val}); stopping"
                )));
            }
            run.history().evals.push((iter, train, val));
            let improved = val < *run.best_val_loss() || flags.always_save_checkpoint;
            if improved && !flags.eval_only {
                *run.best_val_loss() = val;
                if iter > 0 {
                    run.save(iter)?;
                }
            }
            on_eval(run)?;
        }
        if flags.eval_only {
            // nanoGPT breaks at iteration 0 only, so a resumed run of its
            // would train on; here --eval-only always evaluates and stops.
            break;
        }
        let lossf = run.step(&mut batch, lr);
        let dt = t0.elapsed().as_secs_f64();
        t0 = Instant::now();
        if !lossf.is_finite() {
            return Err(naming_the_tensor(format!(
                "iteration {iter}: the loss is {lossf}; stopping"
            )));
        }
        run.history().step_ms.push(dt * 1000.0);
        if iter.is_multiple_of(flags.log_interval) {
            if local_iter >= 5 {
                let mfu = estimate_mfu(flags.n_params, &flags.model, flags.fwdbwd_per_iter, dt);
                running_mfu = if running_mfu == -1.0 {
                    mfu
                } else {
                    0.9 * running_mfu + 0.1 * mfu
                };
            }
            println!(
                "iter {iter}: loss {lossf:.4}, time {:.2}ms, mfu {:.2}%",
                dt * 1000.0,
                running_mfu * 100.0
            );
            run.history().losses.push((iter, lossf));
        }
        local_iter += 1;
        if run.iter() > flags.max_iters {
            break;
        }
    }
    Ok(())
}
// ANCHOR_END: train_loop

/// The loss rows of `loss.csv`: every logged iteration `(iter, loss)`, with
/// the val loss where an evaluation `(iter, train, val)` ran at it, and each
/// evaluation at an iteration that was not logged.
pub fn loss_rows(
    losses: &[(usize, f32)],
    evals: &[(usize, f32, f32)],
    stage: &str,
    schedule: Schedule,
) -> Vec<LossRow> {
    let row = |step: usize, train: f32, val: Option<f32>| LossRow {
        step,
        stage: stage.into(),
        train: train as f64,
        val: val.map(f64::from),
        lr: Some(schedule.get_lr(step) as f64),
    };
    let mut rows: Vec<LossRow> = losses
        .iter()
        .map(|&(step, loss)| row(step, loss, evals.iter().find(|e| e.0 == step).map(|e| e.2)))
        .collect();
    for &(step, train, val) in evals {
        if !rows.iter().any(|r| r.step == step) {
            rows.push(row(step, train, Some(val)));
        }
    }
    rows.sort_by_key(|r| r.step);
    rows
}

/// The last evaluation's losses by split, and the first and last
/// evaluations as the run's figures, for `report.json`.
pub fn eval_figures(
    evals: &[(usize, f32, f32)],
) -> (std::collections::BTreeMap<String, f64>, Vec<report::Target>) {
    let mut final_losses = std::collections::BTreeMap::new();
    let mut targets = Vec::new();
    let mut add = |&(iter, train, val): &(usize, f32, f32)| {
        for (split, loss) in [("train", train), ("val", val)] {
            targets.push(report::Target::info(
                &format!("{split} loss at iteration {iter}"),
                loss as f64,
            ));
        }
    };
    if let Some(first) = evals.first().filter(|_| evals.len() > 1) {
        add(first);
    }
    if let Some(last @ &(_, train, val)) = evals.last() {
        add(last);
        final_losses.insert("train".to_string(), train as f64);
        final_losses.insert("val".to_string(), val as f64);
    }
    (final_losses, targets)
}
