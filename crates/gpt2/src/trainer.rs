//! The recipe's pieces that a checkpoint saves and restores: its constants
//! ([`RecipeConfig`]), the token splits, the [`Trainer`] (model, optimizer,
//! loader, schedule) and the train loader. [`crate::recipe`] runs the loop over
//! them and [`crate::checkpoint`] saves and restores them, so both build on
//! this module and neither on the other's loop.

use crate::ddp::{Collective, SingleProcess};
use crate::model::{Gpt, GptConfig, InitScheme};
use crate::shards::{DataLoader, TokenShard};
use crate::train::{configure_optimizers, LrSchedule};
use autograd::{AdamW, ForwardPass, Graph, Params};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
