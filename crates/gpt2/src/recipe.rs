//! The `cpu` stage: build-nanogpt's whole recipe (`train_gpt2.py` at efedfac,
//! "add checkpointing"), narrowed to train on 2 cores in minutes.
//!
//! What is kept: GPT-2's architecture and init, the GPT-2 tokenizer with the
//! vocabulary padded to 50,304, AdamW with β (0.9, 0.95) and weight decay 0.1
//! on matrices, clipping at 1.0, warmup then cosine to a tenth, gradient
//! accumulation, a validation split evaluated on schedule, a sample at the
//! end, checkpoints, and the `{step} train|val {loss}` log.
//!
//! What is narrowed: the model ([`RecipeConfig::cpu`]), the batch, and the
//! data (tiny Shakespeare split 90/10 instead of FineWeb-Edu's 10B tokens).
//! HellaSwag needs its validation file, which the offline data catalogue does
//! not hold; `gpt2 eval hellaswag` scores a saved model on it.
//!
//! One change from build-nanogpt: its last evaluation comes before the last
//! step; here it comes after it, so the final val loss is the trained
//! model's.

use crate::checkpoint;
use crate::model::Gpt;
use crate::train::accumulated_step;
use autograd::{ForwardPass, Graph, Params};
use report::{LogEvery, Stage};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use crate::trainer::{train_loader, RecipeConfig, Split, Tokens, Trainer};

/// One evaluation of the val loss.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Eval {
    /// Steps taken before it.
    pub step: usize,
    /// The mean val loss.
    pub val: f32,
}

/// What a run of [`train`] did.
pub struct Trained {
    /// Every training step's loss, from the step the run started at.
    pub losses: Vec<f32>,
    /// Every evaluation.
    pub evals: Vec<Eval>,
    /// Tokens per second of the training steps alone.
    pub tokens_per_second: f64,
    /// Model flops per second of the training steps (6·N + attention per token).
    pub flops_per_second: f64,
}

/// build-nanogpt's log file (`log.txt`): one `{step} train|val {value}` line each.
pub struct LogFile {
    path: PathBuf,
}

impl LogFile {
    /// Opens `path`: a fresh run empties it; a resumed one keeps the lines
    /// before `from_step` and drops the rest, which the run writes again.
    pub fn open(path: &Path, from_step: usize) -> Result<LogFile, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let kept: String = match text {
            text if from_step > 0 => text
                .lines()
                .filter(|line| {
                    line.split(' ')
                        .next()
                        .and_then(|s| s.parse::<usize>().ok())
                        .is_some_and(|s| s < from_step)
                })
                .map(|line| format!("{line}\n"))
                .collect(),
            _ => String::new(),
        };
        report::write_atomic(path, kept.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(LogFile {
            path: path.to_path_buf(),
        })
    }

    /// Appends a line.
    pub fn line(
        &mut self,
        step: usize,
        kind: &str,
        value: f32,
        digits: usize,
    ) -> Result<(), String> {
        let err = |e: std::io::Error| format!("{}: {e}", self.path.display());
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(err)?;
        writeln!(file, "{step} {kind} {value:.digits$}").map_err(err)
    }
}

/// Model flops per token of a training step: 6 per parameter (forward and
/// backward) plus attention's `12·L·T·C`, as nanoGPT's `estimate_mfu`
/// (which leaves the position embedding out of the count; here it is in,
/// 0.1% of this model).
pub fn flops_per_token(config: &RecipeConfig) -> f64 {
    let n = config.model.parameter_count().unwrap_or(0) as f64;
    let m = &config.model;
    6.0 * n + 12.0 * (m.n_layer * config.t * m.n_embd) as f64
}

// ANCHOR: recipe_loop
/// The loop of train_gpt2.py from the trainer's step to `max_steps` (or to
/// the step `stop_after`, to test resuming): evaluate on schedule, take an
/// accumulated step at `get_lr(step)`, log, checkpoint into `out` on
/// schedule. A loss that is not finite stops the run before any checkpoint
/// of that state is written. Every rank runs it; only rank 0 prints, logs
/// and writes.
pub fn train(
    trainer: &mut Trainer,
    split: &Split,
    out: &Path,
    report: &mut Stage,
    stop_after: Option<usize>,
) -> Result<Trained, String> {
    let config = trainer.config.clone();
    let max_steps = config.schedule.max_steps;
    let grad_accum_steps = config.grad_accum_steps(trainer.ddp.world_size())?;
    let master = trainer.ddp.is_master();
    let mut log = match master {
        true => {
            std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
            Some(LogFile::open(&out.join("log.txt"), trainer.step)?)
        }
        false => None,
    };
    report.start_training("cpu", max_steps, LogEvery::Evaluations);
    let (mut losses, mut evals) = (Vec::new(), Vec::new());
    let (mut train_seconds, mut since_eval) = (0.0f64, Vec::new());
    for step in trainer.step..=max_steps {
        let last_step = step == max_steps;
        if step.is_multiple_of(config.eval_every) || last_step {
            let val = trainer.val_loss(split)?;
            if let Some(log) = &mut log {
                println!("validation loss: {val:.4}");
                log.line(step, "val", val, 4)?;
            }
            if !since_eval.is_empty() {
                let train = since_eval.iter().sum::<f64>() / since_eval.len() as f64;
                report.log(
                    step,
                    train,
                    Some(val as f64),
                    Some(config.schedule.get_lr(step)),
                );
                since_eval.clear();
            }
            evals.push(Eval { step, val });
        }
        if last_step || stop_after.is_some_and(|stop| trainer.step >= stop) {
            break;
        }
        let started = Instant::now();
        let lr = config.schedule.get_lr(step) as f32;
        let mut next_batch = || trainer.train_loader.next_batch();
        let (loss, norm) = accumulated_step(
            &trainer.model,
            &mut trainer.params,
            &mut trainer.optimizer,
            &mut next_batch,
            (config.b, config.t),
            grad_accum_steps,
            lr,
            trainer.ddp.as_ref(),
        );
        let dt = started.elapsed().as_secs_f64();
        train_seconds += dt;
        // Stops on NaN or inf, naming the step and the tensor it started in.
        report
            .observe(step, loss, lr)
            .map_err(gpt::train::naming_the_tensor)?;
        trainer.step = step + 1;
        losses.push(loss);
        since_eval.push(loss as f64);
        if let Some(log) = &mut log {
            log.line(step, "train", loss, 6)?;
        }
        if master && (step.is_multiple_of(config.eval_every) || step + 1 == max_steps) {
            let tokens_per_sec = config.total_batch_size as f64 / dt;
            println!(
                "step {step:5} | loss: {loss:.6} | lr {lr:.4e} | norm: {norm:.4} | dt: {:.2}ms | tok/sec: {tokens_per_sec:.2}",
                dt * 1e3
            );
        }
        let every = config.checkpoint_every;
        if trainer.step == max_steps
            || (every > 0 && trainer.step.is_multiple_of(every))
            || stop_after.is_some_and(|stop| trainer.step >= stop)
        {
            // A step can leave the weights NaN before any loss shows it.
            if let Some(p) = trainer.params.first_not_finite() {
                return Err(format!(
                    "cpu: {} is not finite after step {step}; stopping without a checkpoint",
                    p.name
                ));
            }
            checkpoint::save(&out.join("checkpoint.safetensors"), trainer)?;
        }
    }
    report.finish_training();
    let tokens = (losses.len() * config.total_batch_size) as f64;
    Ok(Trained {
        losses,
        evals,
        tokens_per_second: tokens / train_seconds.max(1e-9),
        flops_per_second: tokens * flops_per_token(&config) / train_seconds.max(1e-9),
    })
}
// ANCHOR_END: recipe_loop

/// The val loss of a counted token bigram, lecture 2's model on GPT-2
/// tokens: counts of each pair in the train split plus `alpha`, normalized
/// over the 50,257 tokens. Lecture 2 adds 1, which is far too much for 50,257
/// tokens seen 304k times (8.08); this returns the best `alpha` of a grid
/// chosen on the val split itself, the strongest bar an add-α bigram can set.
/// `None` for shards on disk or a val split without a pair.
pub fn bigram_val_loss(split: &Split) -> Option<(f64, f64)> {
    const V: f64 = 50257.0;
    let (train, val) = (split.train.in_memory()?, split.val.in_memory()?);
    if val.len() < 2 {
        return None;
    }
    let mut pairs: std::collections::HashMap<(u16, u16), f64> = std::collections::HashMap::new();
    let mut rows: std::collections::HashMap<u16, f64> = std::collections::HashMap::new();
    for w in train.windows(2) {
        *pairs.entry((w[0], w[1])).or_default() += 1.0;
        *rows.entry(w[0]).or_default() += 1.0;
    }
    let loss = |alpha: f64| {
        let nll: f64 = val
            .windows(2)
            .map(|w| {
                let count = pairs.get(&(w[0], w[1])).copied().unwrap_or(0.0);
                let row = rows.get(&w[0]).copied().unwrap_or(0.0);
                -((count + alpha) / (row + alpha * V)).ln()
            })
            .sum();
        nll / (val.len() - 1) as f64
    };
    [1.0, 0.1, 0.01, 3e-3, 1e-3, 3e-4, 1e-4]
        .into_iter()
        .map(|alpha| (alpha, loss(alpha)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// The mean loss of `model` over `tokens` in consecutive windows of `t`
/// tokens (one row each), without a tape.
pub fn model_val_loss(
    model: &Gpt,
    params: &Params,
    tokens: &[u16],
    t: usize,
) -> Result<f64, String> {
    let windows = (tokens.len().saturating_sub(1)) / t;
    if windows == 0 {
        return Err(format!("{} tokens hold no window of {t}", tokens.len()));
    }
    let mut sum = 0.0f64;
    for w in 0..windows {
        let x: Vec<usize> = tokens[w * t..w * t + t]
            .iter()
            .map(|&i| i as usize)
            .collect();
        let y: Vec<usize> = tokens[w * t + 1..w * t + t + 1]
            .iter()
            .map(|&i| i as usize)
            .collect();
        let graph = Graph::no_grad();
        sum += model
            .loss(&ForwardPass::eval(&graph, params), &x, &y, 1, t)
            .item() as f64;
    }
    Ok(sum / windows as f64)
}

/// The val loss of the model saved in `dir` (Hugging Face's layout, such as
/// OpenAI's `gpt2`): [`model_val_loss`] over the first 100,000 tokens of the
/// first val shard at most, in windows of the model's context (1,024 at most).
pub fn pretrained_val_loss(dir: &Path, split: &Split) -> Result<f64, String> {
    let (model, params) = crate::hf::from_pretrained(dir)?;
    let first = &split.val.open_for(model.config.vocab_size)?[0];
    let val: Vec<u16> = first
        .read(0, first.len().min(100_000))
        .into_iter()
        .map(|t| t as u16)
        .collect();
    model_val_loss(&model, &params, &val, model.config.block_size.min(1024))
}

/// `gemm`'s speed on this machine now: the best of three 1024³ products, in
/// flop/s. Training's share of it is what the run reports.
pub fn matmul_peak_flops() -> f64 {
    let a = tensor::Tensor::ones(&[1024, 1024]);
    let best = (0..3)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(a.matmul(&a));
            started.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    2.0 * 1024f64.powi(3) / best
}
