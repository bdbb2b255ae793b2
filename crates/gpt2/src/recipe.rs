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
use crate::ddp::{Collective, SingleProcess};
use crate::model::{Gpt, GptConfig, InitScheme};
use crate::shards::{DataLoader, TokenShard};
use crate::train::{accumulated_step, configure_optimizers, LrSchedule};
use autograd::{AdamW, ForwardPass, Graph, Params};
use report::{LogEvery, Stage};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The recipe's constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecipeConfig {
    /// The model; `vocab_size` is 50,304 and `block_size` is `t`.
    pub model: GptConfig,
    /// Micro-batch rows.
    pub b: usize,
    /// Tokens per row.
    pub t: usize,
    /// Tokens per optimizer step; a multiple of `b·t`.
    pub total_batch_size: usize,
    /// `get_lr`'s constants; `max_steps` is the number of steps.
    pub schedule: LrSchedule,
    /// AdamW's decay on matrices.
    pub weight_decay: f32,
    /// Evaluate the val loss every this many steps (and after the last).
    pub eval_every: usize,
    /// Micro-batches per evaluation (build-nanogpt: 20); `0` means the whole val split.
    pub val_steps: usize,
    /// Write a checkpoint every this many steps (and after the last); `0`: only after the last.
    pub checkpoint_every: usize,
    /// `torch.manual_seed` before the model is built.
    pub seed: u64,
}

impl RecipeConfig {
    /// The `cpu` stage. The model is GPT-2's with 4 layers of width 128 (4
    /// heads of 32) and a 64-token context: 7,240,448 parameters, 6,438,912
    /// of them the tied 50,304 × 128 embedding. The head is most of the work
    /// (6·V·C flops per token for the logits against 6·12·L·C² for the
    /// blocks, and the softmax over 50,304 logits per token), so a wider or
    /// deeper body costs little and a smaller one saves little. At B=16,
    /// T=64 a step of 1,024 tokens takes about 0.85 s on 2 cores; 500 steps
    /// (1.7 passes over the 304k training tokens) and 5 evaluations of the
    /// whole val split fit the lecture's 10 minutes. The peak rate is 3×
    /// build-nanogpt's 6e-4 (GPT-3 Small's), as small models take higher
    /// rates; warmup is 5% of the steps, as 10 of 50 is 20% in the video's
    /// short run and 715 of 19,073 is 4% in its full one.
    pub fn cpu() -> RecipeConfig {
        RecipeConfig {
            model: GptConfig {
                block_size: 64,
                vocab_size: 50304,
                n_layer: 4,
                n_head: 4,
                n_embd: 128,
            },
            b: 16,
            t: 64,
            total_batch_size: 1024,
            schedule: LrSchedule {
                max_lr: 6e-4 * 3.0,
                min_lr: 6e-4 * 3.0 * 0.1,
                warmup_steps: 25,
                max_steps: 500,
            },
            weight_decay: 0.1,
            eval_every: 125,
            val_steps: 0,
            checkpoint_every: 125,
            seed: 1337,
        }
    }

    /// Checks what the loop divides by: a warmup shorter than the run, and a
    /// total batch that is a multiple of `b·t·world_size`.
    pub fn validate(&self, world_size: usize) -> Result<(), String> {
        let s = &self.schedule;
        if s.warmup_steps >= s.max_steps {
            return Err(format!(
                "the warmup ({} steps) must be shorter than the run ({} steps)",
                s.warmup_steps, s.max_steps
            ));
        }
        if self.eval_every == 0 {
            return Err("eval_every must be at least 1".into());
        }
        self.grad_accum_steps(world_size).map(|_| ())
    }

    /// The recipe cut to `steps` steps: the schedule ends there, its warmup
    /// shortened to half the run if it was longer.
    pub fn with_steps(mut self, steps: usize) -> RecipeConfig {
        self.schedule.max_steps = steps;
        self.schedule.warmup_steps = self.schedule.warmup_steps.min(steps / 2);
        self.eval_every = self.eval_every.min(steps.max(1));
        self
    }

    /// Micro-steps per optimizer step of each of `world_size` processes.
    pub fn grad_accum_steps(&self, world_size: usize) -> Result<usize, String> {
        let micro = self.b * self.t * world_size;
        if micro == 0 || !self.total_batch_size.is_multiple_of(micro) {
            return Err(format!(
                "total_batch_size {} is not a multiple of B·T·processes = {}·{}·{world_size} = {micro}",
                self.total_batch_size, self.b, self.t
            ));
        }
        Ok(self.total_batch_size / micro)
    }
}

/// The tokens of one split: in memory, or shards on disk (`gpt2 prepare`).
pub enum Tokens {
    /// Named for errors.
    Memory(String, Vec<u16>),
    /// Shard files, in order.
    Shards(Vec<PathBuf>),
    /// nanoGPT's headerless `train.bin` or `val.bin`.
    Headerless(PathBuf),
}

impl Tokens {
    /// The split as shards for a [`DataLoader`]: mapped files, or one shard in memory.
    pub fn open(&self) -> Result<Vec<TokenShard>, String> {
        match self {
            Tokens::Memory(name, tokens) => Ok(vec![TokenShard::from_tokens(name, tokens.clone())]),
            Tokens::Shards(paths) => paths.iter().map(|p| TokenShard::open(p)).collect(),
            Tokens::Headerless(path) => Ok(vec![TokenShard::open_as(
                path,
                crate::shards::ShardFormat::Nanogpt,
            )?]),
        }
    }

    /// [`Tokens::open`], checking that every token is below `vocab_size`: a
    /// damaged shard's token past the embedding table is an error naming
    /// the shard, not a panic deep in the model.
    pub fn open_for(&self, vocab_size: usize) -> Result<Vec<TokenShard>, String> {
        Tokens::check_vocab(self.open()?, vocab_size)
    }

    /// `shards`, if every token is below `vocab_size`; it reads them all
    /// (about 1 s for a billion tokens in the page cache).
    fn check_vocab(shards: Vec<TokenShard>, vocab_size: usize) -> Result<Vec<TokenShard>, String> {
        for shard in &shards {
            if let Some((i, token)) = shard.first_token_from(vocab_size) {
                return Err(format!(
                    "{}: token {i} is {token}, past the model's vocabulary of {vocab_size}",
                    shard.name()
                ));
            }
        }
        Ok(shards)
    }

    /// What the split is, for checkpoints: each shard's name and length.
    pub fn describe(&self) -> Result<String, String> {
        Ok(self
            .open()?
            .iter()
            .map(|s| format!("{} ({} tokens)", s.name(), s.len()))
            .collect::<Vec<_>>()
            .join(", "))
    }

    /// The tokens, when they are in memory.
    pub fn in_memory(&self) -> Option<&[u16]> {
        match self {
            Tokens::Memory(_, tokens) => Some(tokens),
            Tokens::Shards(_) | Tokens::Headerless(_) => None,
        }
    }
}

/// The train and val splits.
pub struct Split {
    /// Training tokens.
    pub train: Tokens,
    /// Validation tokens.
    pub val: Tokens,
}

impl Split {
    /// `tokens` split at 90%, as lecture 7 splits its characters.
    pub fn new(tokens: &[usize]) -> Split {
        let n = tokens.len() * 9 / 10;
        let u16s = |s: &[usize]| s.iter().map(|&t| t as u16).collect();
        Split {
            train: Tokens::Memory("the train split".into(), u16s(&tokens[..n])),
            val: Tokens::Memory("the val split".into(), u16s(&tokens[n..])),
        }
    }

    /// Tiny Shakespeare's GPT-2 tokens, split 90/10.
    pub fn shakespeare() -> Result<Split, String> {
        Ok(Split::new(&crate::train::shakespeare_tokens(None)?))
    }

    /// The tokens `gpt2 prepare` wrote into `dir`: shards (`*_train_*` and
    /// `*_val_*`) or nanoGPT's `train.bin` and `val.bin`, told apart by what
    /// the folder holds ([`crate::shards::Layout::of`]).
    pub fn from_dir(dir: &Path) -> Result<Split, String> {
        Ok(match crate::shards::Layout::of(dir)? {
            crate::shards::Layout::Shards { train, val } => Split {
                train: Tokens::Shards(train),
                val: Tokens::Shards(val),
            },
            crate::shards::Layout::Nanogpt { train, val } => Split {
                train: Tokens::Headerless(train),
                val: Tokens::Headerless(val),
            },
        })
    }
}

/// A model in training and everything needed to continue it.
pub struct Trainer {
    /// The recipe.
    pub config: RecipeConfig,
    /// The model.
    pub model: Gpt,
    /// Its parameters.
    pub params: Params,
    /// AdamW and its moments.
    pub optimizer: AdamW,
    /// Where the training data is.
    pub train_loader: DataLoader,
    /// What the training data is ([`Tokens::describe`]), checked on resuming.
    pub train_data: String,
    /// Steps taken.
    pub step: usize,
    /// The processes training together ([`SingleProcess`] alone).
    pub ddp: Box<dyn Collective>,
}

impl Trainer {
    /// A fresh model from `torch.manual_seed(config.seed)`, trained by one process.
    pub fn new(config: RecipeConfig, split: &Split) -> Result<Trainer, String> {
        Trainer::with_ddp(config, split, Box::new(SingleProcess))
    }

    /// A fresh model on every rank of `ddp`: the same seed gives every rank
    /// the same weights, as DDP's broadcast from rank 0 would.
    pub fn with_ddp(
        config: RecipeConfig,
        split: &Split,
        ddp: Box<dyn Collective>,
    ) -> Result<Trainer, String> {
        config.validate(ddp.world_size())?;
        let (model, params) = Gpt::seeded(config.model, InitScheme::Gpt2, config.seed);
        let optimizer =
            configure_optimizers(&params, config.weight_decay, config.schedule.max_lr as f32);
        let train_loader = train_loader(&config, split, ddp.as_ref())?;
        Ok(Trainer {
            config,
            model,
            params,
            optimizer,
            train_loader,
            train_data: split.train.describe()?,
            step: 0,
            ddp,
        })
    }

    /// The mean val loss over the val split's first micro-batches, without
    /// a tape (build-nanogpt's `val_loader.reset()` and loop): `val_steps`
    /// of them on each rank, or with `val_steps` 0 every whole one of the
    /// first val shard, shared among the ranks. Rank `r` of `world` takes
    /// batches `r`, `r + world`, …, as its val loader would, and the
    /// ranks' sums are added (build-nanogpt's all-reduce of the mean). The
    /// batches come from the first val shard only: more than it holds are
    /// cut to all of it, where build-nanogpt's loader would go on into the
    /// next shard or repeat it.
    pub fn val_loss(&self, split: &Split) -> Result<f32, String> {
        let (b, t) = (self.config.b, self.config.t);
        let (rank, world) = (self.ddp.rank(), self.ddp.world_size());
        let mut shards = split.val.open()?;
        // Only the first val shard is read: check its tokens, not every shard's.
        shards.truncate(1);
        let shards = Tokens::check_vocab(shards, self.config.model.vocab_size)?;
        let whole = (shards[0].len().max(1) - 1) / (b * t);
        if whole == 0 {
            return Err(format!(
                "{}: {} tokens cannot fill one val batch of {b}×{t} and its last target",
                shards[0].name(),
                shards[0].len()
            ));
        }
        let steps = match self.config.val_steps {
            0 => whole,
            n => (n * world).min(whole),
        };
        let mut val_loss_accum = 0.0f32;
        for batch in (rank..steps).step_by(world) {
            let buf = shards[0].read(batch * b * t, b * t + 1);
            let (x, y) = (&buf[..b * t], &buf[1..]);
            let graph = Graph::no_grad();
            let loss = self
                .model
                .loss(&ForwardPass::eval(&graph, &self.params), x, y, b, t); // scalar
            val_loss_accum += loss.item() / steps as f32;
        }
        let mut sum = [val_loss_accum];
        self.ddp.all_reduce_sum(&mut sum, "the val loss");
        Ok(sum[0])
    }
}

/// This process's loader over the train split: rank `r` of `world` starts
/// at micro-batch `r` and strides `world` of them.
pub fn train_loader(
    config: &RecipeConfig,
    split: &Split,
    ddp: &dyn Collective,
) -> Result<DataLoader, String> {
    let ranks = (ddp.rank(), ddp.world_size());
    DataLoader::new(
        split.train.open_for(config.model.vocab_size)?,
        (config.b, config.t),
        ranks,
        None,
    )
}

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
