//! nanoGPT's `configurator.py` and `train.py`'s configuration keys: the flags
//! of `gpt train` ([`TrainArgs`], each spelled `--batch-size 12` or nanoGPT's
//! `--batch_size=12`), and the checks every nanoGPT loop here shares (also
//! `gpt2 finetune`'s): each error names its flag, before any file is read.

use crate::model::GptConfig;
use crate::stages::{Config, ModelConfig, Stage, TrainConfig};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A Python boolean as nanoGPT's configurator reads it: `True` or `False`
/// (and, for the shell's sake, `true`, `false`, `1`, `0`).
pub fn python_bool(s: &str) -> Result<bool, String> {
    match s {
        "True" | "true" | "1" => Ok(true),
        "False" | "false" | "0" => Ok(false),
        _ => Err(format!("expected True or False, got {s:?}")),
    }
}

/// `train.py`'s configuration keys that every nanoGPT loop here reads, `gpt
/// train`'s ([`TrainArgs`]) and `gpt2 finetune`'s, with train.py's own
/// defaults (but the CPU for `device`, and no `compile`). Each tool flattens
/// them and lays its config file's values over these defaults, as
/// configurator.py lays a config file over train.py's globals. Each flag is
/// spelled both `--batch-size 12` and nanoGPT's `--batch_size=12`; booleans
/// take `=True` and `=False`.
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainPyArgs {
    /// Evaluate (and maybe checkpoint) every N iterations.
    #[arg(long, default_value_t = 2000)]
    pub eval_interval: usize,
    /// Print the loss every N iterations.
    #[arg(long, default_value_t = 1)]
    pub log_interval: usize,
    /// Batches per split in each evaluation.
    #[arg(long, default_value_t = 200)]
    pub eval_iters: usize,
    /// Save after every evaluation, not only when the val loss improved.
    #[arg(long, default_value = "True",
          num_args = 0..=1, default_missing_value = "True", value_parser = python_bool)]
    pub always_save_checkpoint: bool,
    /// Micro-batches per iteration, their gradients summed.
    #[arg(long, default_value_t = 40)]
    pub gradient_accumulation_steps: usize,
    /// Sequences per micro-batch.
    #[arg(long, default_value_t = 12)]
    pub batch_size: usize,
    /// Context length in tokens (a GPT-2's position embeddings are cropped to it).
    #[arg(long, default_value_t = 1024)]
    pub block_size: usize,
    /// Dropout probability while training.
    #[arg(long, default_value_t = 0.0)]
    pub dropout: f32,
    /// Peak learning rate.
    #[arg(long, default_value_t = 6e-4)]
    pub learning_rate: f32,
    /// Train until this iteration (nanoGPT steps at 0..=max_iters).
    #[arg(long, default_value_t = 600000)]
    pub max_iters: usize,
    /// AdamW weight decay of the matrices (the other parameters get none).
    #[arg(long, default_value_t = 0.1)]
    pub weight_decay: f32,
    /// AdamW β₁.
    #[arg(long, default_value_t = 0.9)]
    pub beta1: f32,
    /// AdamW β₂.
    #[arg(long, default_value_t = 0.95)]
    pub beta2: f32,
    /// Clip the gradients' global norm to this; 0 turns clipping off.
    #[arg(long, default_value_t = 1.0)]
    pub grad_clip: f32,
    /// Warm up, then decay the learning rate on a cosine; False keeps it constant.
    #[arg(long, default_value = "True", num_args = 0..=1,
          default_missing_value = "True", value_parser = python_bool)]
    pub decay_lr: bool,
    /// Linear warmup iterations.
    #[arg(long, default_value_t = 2000)]
    pub warmup_iters: usize,
    /// The iteration at which the cosine reaches min_lr.
    #[arg(long, default_value_t = 600000)]
    pub lr_decay_iters: usize,
    /// The learning rate's floor.
    #[arg(long, default_value_t = 6e-5)]
    pub min_lr: f32,
    /// Only `cpu`: accepted so that the flags of nanoGPT's CPU line can be pasted.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Accepted for nanoGPT's CPU line; there is nothing to compile here.
    #[arg(long, default_value = "False", num_args = 0..=1, default_missing_value = "True",
          value_parser = python_bool)]
    pub compile: bool,
    /// `torch.manual_seed`; nanoGPT hard-codes 1337 (+ the DDP rank).
    #[arg(long, default_value_t = 1337)]
    pub seed: u64,
    /// The products' arithmetic: float32, or bfloat16 operands with float32 sums (as
    /// `torch.autocast("cpu", dtype=torch.bfloat16)`, but with float32 results). nanoGPT's
    /// train.py runs a CPU in float32 whatever its `dtype` says; here bfloat16 is asked for.
    #[arg(long, default_value = "float32")]
    #[serde(default = "float32")]
    pub dtype: String,
}

fn float32() -> String {
    "float32".into()
}

impl TrainPyArgs {
    /// `--dtype` as the precision of every matrix product.
    pub fn precision(&self) -> Result<tensor::bf16::Precision, String> {
        self.dtype.parse()
    }

    /// The shared flags' errors, each naming its flag.
    pub fn check(&self) -> Result<(), String> {
        self.precision()?;
        check_positive(&[
            ("--eval-interval", self.eval_interval),
            ("--log-interval", self.log_interval),
            ("--eval-iters", self.eval_iters),
            (
                "--gradient-accumulation-steps",
                self.gradient_accumulation_steps,
            ),
            ("--batch-size", self.batch_size),
            ("--block-size", self.block_size),
        ])?;
        check_optimizer(
            self.dropout,
            [
                ("--learning-rate", self.learning_rate),
                ("--min-lr", self.min_lr),
                ("--weight-decay", self.weight_decay),
                ("--grad-clip", self.grad_clip),
            ],
            (self.beta1, self.beta2),
            &self.device,
        )?;
        // nanoGPT's cosine divides by `lr_decay_iters - warmup_iters` when an
        // iteration reaches `warmup_iters`: equal, they are an error.
        if self.decay_lr
            && self.warmup_iters == self.lr_decay_iters
            && self.max_iters >= self.warmup_iters
        {
            return Err(format!(
                "--warmup-iters and --lr-decay-iters are both {}: nanoGPT's cosine would divide by zero there",
                self.warmup_iters
            ));
        }
        Ok(())
    }
}

/// `gpt train`'s flags: [`TrainPyArgs`] with `config/train_shakespeare_char.py`
/// and the README's CPU line on top as defaults (`--device=cpu
/// --compile=False --eval_iters=20 --log_interval=1 --block_size=64
/// --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000
/// --lr_decay_iters=2000 --dropout=0.0`), and the keys of a run from scratch.
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[command(
    mut_arg("eval_interval", |a| a.default_value("250")),
    mut_arg("eval_iters", |a| a.default_value("20")),
    mut_arg("always_save_checkpoint", |a| a.default_value("False")),
    mut_arg("gradient_accumulation_steps", |a| a.default_value("1")),
    mut_arg("block_size", |a| a.default_value("64")),
    mut_arg("learning_rate", |a| a.default_value("1e-3")),
    mut_arg("max_iters", |a| a.default_value("2000")),
    mut_arg("lr_decay_iters", |a| a.default_value("2000")),
    mut_arg("min_lr", |a| a.default_value("1e-4")),
    mut_arg("beta2", |a| a.default_value("0.99")),
    mut_arg("warmup_iters", |a| a.default_value("100"))
)]
pub struct TrainArgs {
    /// A folder with train.bin, val.bin and meta.pkl (`gpt prepare`, or nanoGPT's prepare.py).
    #[arg(long, alias = "dataset")]
    pub data: PathBuf,
    /// Where ckpt.safetensors, report.json, loss.csv and the plots go.
    #[arg(long, alias = "out", default_value = "out")]
    pub out_dir: PathBuf,
    /// Evaluate once and stop, saving nothing: with `--init-from resume`, the
    /// checkpoint's model on both splits (nanoGPT's own stops only at
    /// iteration 0, and would train a resumed run on).
    #[arg(long, default_value = "False", num_args = 0..=1,
          default_missing_value = "True", value_parser = python_bool)]
    pub eval_only: bool,
    /// `scratch`, or `resume` from OUT_DIR/ckpt.safetensors.
    #[arg(long, default_value = "scratch")]
    pub init_from: String,
    /// Transformer blocks.
    #[arg(long, default_value_t = 4)]
    pub n_layer: usize,
    /// Attention heads.
    #[arg(long, default_value_t = 4)]
    pub n_head: usize,
    /// Width of the residual stream.
    #[arg(long, default_value_t = 128)]
    pub n_embd: usize,
    /// Biases in the Linears and LayerNorms.
    #[arg(long, default_value = "False", num_args = 0..=1, default_missing_value = "True",
          value_parser = python_bool)]
    pub bias: bool,
    /// train.py's keys that every loop reads.
    #[command(flatten)]
    #[serde(flatten)]
    pub train_py: TrainPyArgs,
}

impl TrainArgs {
    /// The flags' errors, before any file is read: each names its flag.
    pub fn check(&self) -> Result<(), String> {
        check_utf8_paths(&[("--data", &self.data), ("--out-dir", &self.out_dir)])?;
        self.train_py.check()?;
        check_positive(&[
            ("--n-layer", self.n_layer),
            ("--n-head", self.n_head),
            ("--n-embd", self.n_embd),
        ])?;
        if !self.n_embd.is_multiple_of(self.n_head) {
            return Err(format!(
                "--n-embd {} is not a multiple of --n-head {}",
                self.n_embd, self.n_head
            ));
        }
        match self.init_from.as_str() {
            "scratch" | "resume" => {}
            s if s.starts_with("gpt2") => {
                return Err(format!(
                    "--init-from {s}: GPT-2 is fine-tuned by `gpt2 finetune --model DIR`"
                ))
            }
            s => return Err(format!("--init-from must be scratch or resume, got {s:?}")),
        }
        Ok(())
    }

    /// `model_args`: the model these flags build on a vocabulary of `vocab_size`.
    pub fn model_args(&self, vocab_size: usize) -> GptConfig {
        GptConfig {
            block_size: self.train_py.block_size,
            vocab_size,
            n_layer: self.n_layer,
            n_head: self.n_head,
            n_embd: self.n_embd,
            dropout: self.train_py.dropout,
            bias: self.bias,
        }
    }

    /// The lecture's `Config` for these flags: nanoGPT's model, AdamW with its
    /// two groups, and its loop.
    pub fn config(&self, model: GptConfig) -> Config {
        let t = &self.train_py;
        Config {
            stage: Stage::Cpu, // nanoGPT's recipe, with these flags' numbers
            model: ModelConfig::Gpt(model),
            train: TrainConfig {
                batch_size: t.batch_size,
                max_iters: t.max_iters,
                eval_interval: t.eval_interval,
                eval_iters: t.eval_iters,
                eval_last: false,
                nanogpt_loop: true,
                learning_rate: t.learning_rate,
                warmup_iters: t.warmup_iters,
                lr_decay_iters: t.lr_decay_iters,
                min_lr: t.min_lr,
                betas: (t.beta1, t.beta2),
                weight_decay: t.weight_decay,
                decay_matrices_only: true,
                grad_clip: t.grad_clip,
                seed: t.seed,
            },
        }
    }
}

/// Each path flag must be UTF-8: the run's record (`config` in the
/// checkpoint, `report.json`) stores it as text, and finding that out after
/// training would lose the run.
pub fn check_utf8_paths(flags: &[(&str, &Path)]) -> Result<(), String> {
    match flags.iter().find(|(_, p)| p.to_str().is_none()) {
        Some((flag, p)) => Err(format!(
            "{flag} {}: the path is not UTF-8; the run's record stores it as text, \
             so give a UTF-8 path",
            p.display()
        )),
        None => Ok(()),
    }
}

/// The `f32`s a nanoGPT-shaped model needs at the least to train: each
/// parameter four times (value, gradient, AdamW's two moments), and one
/// micro-batch's activations, about 16 per channel per token in each block
/// and two per logit. `None` when the count overflows.
pub fn training_floats(model: &GptConfig, batch_size: usize) -> Option<u64> {
    let [v, t, l, c, b] = [
        model.vocab_size,
        model.block_size,
        model.n_layer,
        model.n_embd,
        batch_size,
    ]
    .map(|n| n as u64);
    let block = c
        .checked_mul(c)?
        .checked_mul(12)?
        .checked_add(c.checked_mul(13)?)?;
    let params = v
        .checked_add(t)?
        .checked_mul(c)?
        .checked_add(l.checked_mul(block)?)?;
    let per_token = l
        .checked_mul(c)?
        .checked_mul(16)?
        .checked_add(v.checked_mul(2)?)?;
    let activations = b.checked_mul(t)?.checked_mul(per_token)?;
    params.checked_mul(4)?.checked_add(activations)
}

/// Each flag of `flags` must be at least 1.
pub fn check_positive(flags: &[(&str, usize)]) -> Result<(), String> {
    match flags.iter().find(|(_, v)| *v == 0) {
        Some((flag, _)) => Err(format!("{flag} must be at least 1")),
        None => Ok(()),
    }
}

/// The flags every nanoGPT loop shares: dropout in [0, 1), the rates, decay
/// and clip finite and ≥ 0, the betas in [0, 1), the device the CPU.
pub fn check_optimizer(
    dropout: f32,
    non_negative: [(&str, f32); 4],
    (beta1, beta2): (f32, f32),
    device: &str,
) -> Result<(), String> {
    if !(0.0..1.0).contains(&dropout) {
        return Err(format!("--dropout must be in [0, 1), got {dropout}"));
    }
    for (flag, v) in non_negative {
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("{flag} must be a finite number ≥ 0, got {v}"));
        }
    }
    for (flag, v) in [("--beta1", beta1), ("--beta2", beta2)] {
        if !(0.0..1.0).contains(&v) {
            return Err(format!("{flag} must be in [0, 1), got {v}"));
        }
    }
    report::check_device(device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_booleans() {
        assert_eq!(python_bool("True"), Ok(true));
        assert_eq!(python_bool("False"), Ok(false));
        assert!(python_bool("yes").is_err());
    }
}
