//! nanochat's `scripts/base_train.py` at 92d63d4: pretraining, on one CPU process.
//!
//! In the script's order: the model from `--depth`, the horizon and batch size from the scaling
//! laws (tokens = 12 × the scaling parameters; the batch by the Power Lines rule B ∝ D^0.383 from
//! d12's 2^19), learning rates scaled by √(B/2^19), weight decay by √(B/B_REF)·(D_REF/D), then
//! the loop: warmup, constant, linear warmdown of the learning rate; Muon's momentum ramped
//! 0.85 → 0.97 and down to 0.90 in the warmdown; its weight decay on a cosine to zero.

mod args;
pub mod run;

pub use args::BaseTrainArgs;

use crate::dataloader::{BestFitLoader, DocumentSource, LoaderState};
use crate::gpt::{Gpt, GptConfig};
use crate::loss_eval::evaluate_bpb;
use crate::optim::MuonAdamW;
use crate::tokenizer::Tokenizer;
use autograd::{ForwardPass, Graph};
use tensor::rng::TorchGenerator;

/// The batch size (tokens) at which d12's hyperparameters were tuned.
pub const B_REF: f64 = 524_288.0;

/// What base_train.py works out before its loop.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The model's shape.
    pub config: GptConfig,
    /// `transformer_matrices + lm_head`: what the scaling laws count.
    pub num_scaling_params: usize,
    /// Tokens for this model at the target ratio.
    pub target_tokens: f64,
    /// The same for d12, the reference.
    pub d_ref: f64,
    /// Tokens per step.
    pub total_batch_size: usize,
    /// √(B/B_REF).
    pub batch_lr_scale: f64,
    /// Muon's weight decay for this depth and batch.
    pub weight_decay_scaled: f64,
    /// Optimizer steps.
    pub num_iterations: usize,
    /// Forward passes per step.
    pub grad_accum_steps: usize,
    /// `estimate_flops()`.
    pub flops_per_token: f64,
}

/// Python's `round` (half to even) for the horizon's float arithmetic.
fn round_half_even(x: f64) -> i64 {
    let floor = x.floor();
    if x - floor == 0.5 {
        (if floor % 2.0 == 0.0 {
            floor
        } else {
            floor + 1.0
        }) as i64
    } else {
        x.round() as i64
    }
}

/// Python's `:,`.
fn commas(n: usize) -> String {
    report::thousands(n)
}

impl Plan {
    /// The horizon, batch size, learning-rate and weight-decay scaling, as base_train.py prints
    /// them through `print0`.
    pub fn new(
        args: &BaseTrainArgs,
        model: &Gpt,
        print0: &mut dyn FnMut(String),
    ) -> Result<Plan, String> {
        let config = model.config.clone();
        let ratio = args.target_param_data_ratio;
        let num_scaling_params = config.scaling_params();
        let target_tokens = (ratio * num_scaling_params as f64).trunc();
        let d12 = GptConfig::from_depth(
            12,
            args.aspect_ratio,
            args.head_dim,
            args.max_seq_len,
            config.vocab_size,
            &args.window_pattern,
        )?;
        let d_ref = ratio * d12.scaling_params() as f64;
        let total_batch_size = if args.total_batch_size == -1 {
            let predicted = B_REF * (target_tokens / d_ref).powf(0.383);
            let b = 2f64.powi(round_half_even(predicted.log2()) as i32) as usize;
            print0(format!(
                "Auto-computed optimal batch size: {} tokens",
                commas(b)
            ));
            b
        } else if args.total_batch_size > 0 {
            args.total_batch_size as usize
        } else {
            return Err(format!(
                "--total-batch-size must be positive or -1, not {}",
                args.total_batch_size
            ));
        };
        let batch_ratio = total_batch_size as f64 / B_REF;
        let mut batch_lr_scale = 1.0;
        if batch_ratio != 1.0 {
            batch_lr_scale = batch_ratio.sqrt();
            print0(format!(
                "Scaling LRs by {batch_lr_scale:.4} for batch size {} (reference: {})",
                commas(total_batch_size),
                commas(B_REF as usize)
            ));
        }
        let weight_decay_scaled =
            args.weight_decay * (total_batch_size as f64 / B_REF).sqrt() * (d_ref / target_tokens);
        if weight_decay_scaled != args.weight_decay {
            print0(format!(
                "Scaling weight decay from {:.6} to {weight_decay_scaled:.6} for depth {}",
                args.weight_decay, args.depth
            ));
        }
        let flops_per_token = model.estimate_flops();
        let tokens_per_fwdbwd = args.device_batch_size * args.max_seq_len;
        if tokens_per_fwdbwd == 0 || total_batch_size % tokens_per_fwdbwd != 0 {
            return Err(format!(
                "total_batch_size ({total_batch_size}) must be a multiple of {tokens_per_fwdbwd} (--device-batch-size × --max-seq-len)"
            ));
        }
        Ok(Plan {
            config,
            num_scaling_params,
            target_tokens,
            d_ref,
            total_batch_size,
            batch_lr_scale,
            weight_decay_scaled,
            num_iterations: 0,
            grad_accum_steps: total_batch_size / tokens_per_fwdbwd,
            flops_per_token,
        })
    }

    /// The number of steps: given, or from the target FLOPs, or from the data:param ratio.
    pub fn horizon(
        &mut self,
        args: &BaseTrainArgs,
        print0: &mut dyn FnMut(String),
    ) -> Result<(), String> {
        let b = self.total_batch_size as f64;
        self.num_iterations = if args.num_iterations > 0 {
            let n = args.num_iterations as usize;
            print0(format!(
                "Using user-provided number of iterations: {}",
                commas(n)
            ));
            n
        } else if args.target_flops > 0.0 {
            let n = round_half_even(args.target_flops / (self.flops_per_token * b)).max(0) as usize;
            print0(format!(
                "Calculated number of iterations from target FLOPs: {}",
                commas(n)
            ));
            n
        } else if args.target_param_data_ratio > 0.0 {
            let n = (self.target_tokens / b).floor() as usize;
            print0(format!(
                "Calculated number of iterations from target data:param ratio: {}",
                commas(n)
            ));
            n
        } else {
            return Err("no training horizon: give --num-iterations, --target-flops or --target-param-data-ratio".into());
        };
        let total_tokens = self.total_batch_size * self.num_iterations;
        print0(format!(
            "Total number of training tokens: {}",
            commas(total_tokens)
        ));
        print0(format!(
            "Tokens : Scaling params ratio: {:.2}",
            total_tokens as f64 / self.num_scaling_params as f64
        ));
        print0(format!(
            "Total training FLOPs estimate: {}",
            python_e(self.flops_per_token * total_tokens as f64)
        ));
        Ok(())
    }
}

/// Python's `f"{x:e}"`: six decimals and a two-digit exponent.
pub fn python_e(x: f64) -> String {
    let s = format!("{x:.6e}");
    let (mantissa, exp) = s.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    format!(
        "{mantissa}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

/// The schedules of base_train.py, over `num_iterations` steps.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// Steps in all.
    pub num_iterations: usize,
    /// Linear warmup steps.
    pub warmup_steps: usize,
    /// Fraction of the steps in the warmdown.
    pub warmdown_ratio: f64,
    /// The learning rate's floor, as a fraction.
    pub final_lr_frac: f64,
    /// Muon's weight decay at step 0.
    pub weight_decay: f64,
}

impl Schedule {
    fn warmdown_iters(&self) -> usize {
        round_half_even(self.warmdown_ratio * self.num_iterations as f64).max(0) as usize
    }

    // ANCHOR: schedules
    /// `get_lr_multiplier`: linear warmup, constant, linear warmdown to `final_lr_frac`.
    pub fn lr_multiplier(&self, it: usize) -> f64 {
        let warmdown = self.warmdown_iters();
        if it < self.warmup_steps {
            (it + 1) as f64 / self.warmup_steps as f64
        } else if it + warmdown <= self.num_iterations {
            1.0
        } else {
            let progress = (self.num_iterations - it) as f64 / warmdown as f64;
            progress * 1.0 + (1.0 - progress) * self.final_lr_frac
        }
    }

    /// `get_muon_momentum`: 0.85 → 0.97 over 400 steps, down to 0.90 over the warmdown.
    pub fn muon_momentum(&self, it: usize) -> f64 {
        let warmdown = self.warmdown_iters();
        let warmdown_start = self.num_iterations - warmdown;
        if it < 400 {
            let frac = it as f64 / 400.0;
            (1.0 - frac) * 0.85 + frac * 0.97
        } else if it >= warmdown_start {
            let progress = (it - warmdown_start) as f64 / warmdown as f64;
            0.97 * (1.0 - progress) + 0.90 * progress
        } else {
            0.97
        }
    }

    /// `get_weight_decay`: a cosine from the scaled weight decay to zero.
    pub fn weight_decay(&self, it: usize) -> f64 {
        self.weight_decay
            * 0.5
            * (1.0 + (std::f64::consts::PI * it as f64 / self.num_iterations as f64).cos())
    }
    // ANCHOR_END: schedules
}

/// The state of a run: the model, its optimizer, the train loader and the next batch.
pub struct BaseTrain<'t, S: DocumentSource> {
    /// The model.
    pub model: Gpt,
    /// MuonAdamW over it.
    pub optimizer: MuonAdamW,
    /// The schedules.
    pub schedule: Schedule,
    /// Forward passes per step.
    pub grad_accum_steps: usize,
    /// The training batches.
    pub loader: BestFitLoader<'t, S>,
    /// The batch the next forward pass takes, and where its documents came from.
    pub next: (Vec<u32>, Vec<i32>, LoaderState),
    /// Steps taken.
    pub step: usize,
    /// Batches the loader has handed out, `next` included.
    pub batches_drawn: usize,
}

impl<'t, S: DocumentSource> BaseTrain<'t, S> {
    /// The model initialised as base_train initialises it (`torch.manual_seed(42)`), the
    /// optimizer with the plan's scaled rates, and the first batch loaded.
    pub fn new(
        args: &BaseTrainArgs,
        model: Gpt,
        plan: &Plan,
        tokenizer: &'t Tokenizer,
        train: S,
        resume: Option<LoaderState>,
    ) -> Result<BaseTrain<'t, S>, String> {
        let s = plan.batch_lr_scale;
        let optimizer = model.setup_optimizer(
            args.unembedding_lr * s,
            args.embedding_lr * s,
            args.matrix_lr * s,
            plan.weight_decay_scaled,
            args.scalar_lr * s,
        );
        let mut loader = BestFitLoader::new(
            tokenizer,
            train,
            args.device_batch_size,
            args.max_seq_len,
            resume,
        );
        let next = loader.next_batch()?;
        let schedule = Schedule {
            num_iterations: plan.num_iterations,
            warmup_steps: args.warmup_steps,
            warmdown_ratio: args.warmdown_ratio,
            final_lr_frac: args.final_lr_frac,
            weight_decay: plan.weight_decay_scaled,
        };
        Ok(BaseTrain {
            model,
            optimizer,
            schedule,
            grad_accum_steps: plan.grad_accum_steps,
            loader,
            next,
            step: 0,
            batches_drawn: 1,
        })
    }

    // ANCHOR: train_step
    /// One optimizer step: `grad_accum_steps` forward and backward passes, each loss divided
    /// by their number, the schedules applied, `optimizer.step()`, the gradients cleared.
    /// Returns each forward pass's loss.
    pub fn train_step(&mut self) -> Result<Vec<f32>, String> {
        let mut losses = Vec::with_capacity(self.grad_accum_steps);
        for _ in 0..self.grad_accum_steps {
            let (x, y, _) = &self.next;
            let scale = self.grad_accum_steps;
            let loss = forward_backward(
                &mut self.model,
                x,
                y,
                self.loader.batch_size,
                scale,
                self.step,
            )?;
            losses.push(loss);
            self.next = self.loader.next_batch()?;
            self.batches_drawn += 1;
        }
        let s = &self.schedule;
        let (lrm, momentum, wd) = (
            s.lr_multiplier(self.step),
            s.muon_momentum(self.step),
            s.weight_decay(self.step),
        );
        self.optimizer.schedule(lrm, momentum, wd);
        optimizer_step(&mut self.model, &mut self.optimizer, self.step)?;
        self.step += 1;
        Ok(losses)
    }
    // ANCHOR_END: train_step
}

/// One forward and backward pass: the loss of inputs `x` and targets `y` (`b` rows), whose
/// gradient, divided by `grad_accum_steps`, is added to the parameters'. A loss that is not
/// finite stops the run, naming the step.
pub fn forward_backward(
    model: &mut Gpt,
    x: &[u32],
    y: &[i32],
    b: usize,
    grad_accum_steps: usize,
    step: usize,
) -> Result<f32, String> {
    let graph = Graph::new();
    let pass = ForwardPass::eval(&graph, &model.params);
    let loss = model.loss(&pass, x, y, b); // ()
    let value = loss.item();
    if !value.is_finite() {
        return Err(format!("the loss is {value} at step {step}"));
    }
    loss.div_scalar(grad_accum_steps as f32)
        .backward_into(&mut model.params);
    Ok(value)
}

/// `optimizer.step()` then `model.zero_grad()`; a parameter that is no longer finite stops the
/// run, naming itself and the step.
pub fn optimizer_step(
    model: &mut Gpt,
    optimizer: &mut MuonAdamW,
    step: usize,
) -> Result<(), String> {
    optimizer.step(&mut model.params);
    model.params.zero_grad();
    match model.params.first_not_finite() {
        Some(p) => Err(format!("{} is not finite after step {step}", p.name)),
        None => Ok(()),
    }
}

/// The model base_train builds: `--depth` and the shape flags, initialised from seed 42.
pub fn build_model(args: &BaseTrainArgs, vocab_size: usize) -> Result<Gpt, String> {
    let config = GptConfig::from_depth(
        args.depth,
        args.aspect_ratio,
        args.head_dim,
        args.max_seq_len,
        vocab_size,
        &args.window_pattern,
    )?;
    let mut rng = TorchGenerator::manual_seed(42);
    Gpt::new(config, &mut rng)
}

/// The validation bpb over `--eval-tokens`, from a fresh loader over `val`.
pub fn validation_bpb<S: DocumentSource>(
    args: &BaseTrainArgs,
    model: &Gpt,
    tokenizer: &Tokenizer,
    val: S,
    token_bytes: &[u32],
) -> Result<f64, String> {
    let mut loader = BestFitLoader::new(
        tokenizer,
        val,
        args.device_batch_size,
        args.max_seq_len,
        None,
    );
    let steps = args.eval_tokens / (args.device_batch_size * args.max_seq_len);
    let mut next = || loader.next_batch().map(|(x, y, _)| (x, y));
    evaluate_bpb(model, &mut next, args.device_batch_size, steps, token_bytes)
}
