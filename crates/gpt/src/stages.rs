//! The stages of the lecture as named configurations: each stage's model
//! (nanoGPT's `GPTConfig` or the video's hyperparameters) and its training
//! configuration (the script's batch size, schedule and optimizer), with
//! their sources; and [`Model`], the model a stage builds.

use crate::model::{Gpt, GptConfig};
use crate::nn::{ForwardPass, Init};
use crate::video::{Bigram, VideoBody, VideoConfig, VideoGpt};
use autograd::{Params, Var};
use serde::{Deserialize, Serialize};
use tensor::rng::TorchGenerator;

/// The lecture's progression: each stage is a runnable configuration (`--stage NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// bigram.py: the logits are a 65×65 lookup table. Lecture: val ≈ 2.5.
    Bigram,
    /// v2.py at 10024b1: token + position embeddings, one head of size 32. The video: 2.4 ("from 2.5 to 2.4"); the commit's message: "reach 2.5 val loss".
    SelfAttention,
    /// a6e0bee: 4 heads of 8. Lecture: 2.28.
    MultiHead,
    /// 97dd3f9: + Linear(32, 32) + ReLU per position. Lecture: 2.24.
    FeedForward,
    /// 5c3a2d2: 3 blocks, residual connections, projections, 4× FFN. Lecture: 2.08.
    Blocks,
    /// 0016836: pre-LayerNorm in each block and a final one; 42,369 params. Lecture: 2.06.
    Layernorm,
    /// gpt.py as in the video (482b15d): 6 layers, 6 heads, n_embd 384, block 256,
    /// dropout 0.2; 10,788,929 params. Lecture: 1.48 (15 minutes on an A100).
    Full,
    /// nanoGPT's documented CPU recipe for shakespeare_char; 804,096 params. README: 1.88.
    Cpu,
}

impl Stage {
    /// Every stage, in the lecture's order.
    pub const ALL: [Stage; 8] = [
        Stage::Bigram,
        Stage::SelfAttention,
        Stage::MultiHead,
        Stage::FeedForward,
        Stage::Blocks,
        Stage::Layernorm,
        Stage::Full,
        Stage::Cpu,
    ];

    /// The name used by `--stage` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Bigram => "bigram",
            Stage::SelfAttention => "self-attention",
            Stage::MultiHead => "multi-head",
            Stage::FeedForward => "feed-forward",
            Stage::Blocks => "blocks",
            Stage::Layernorm => "layernorm",
            Stage::Full => "full",
            Stage::Cpu => "cpu",
        }
    }

    /// Where the stage's expected values come from, for the report.
    pub fn source(self) -> &'static str {
        match self {
            Stage::Bigram => {
                "ng-video-lecture bigram.py (val 2.5, the video); PyTorch, same draws: tests/fixtures/stages.py"
            }
            Stage::SelfAttention | Stage::MultiHead | Stage::FeedForward | Stage::Blocks => {
                "ng-video-lecture v2.py's commits and the video; PyTorch, same draws: tests/fixtures/stages.py"
            }
            Stage::Layernorm => {
                "ng-video-lecture commit 0016836 (val 2.06); PyTorch, same draws: tests/fixtures/stages.py"
            }
            Stage::Full => "gpt.py at 482b15d (val 1.48, the video); PyTorch: tests/fixtures/stages.py",
            Stage::Cpu => "nanoGPT's README, CPU recipe (val 1.88); PyTorch, same draws: tests/fixtures/stages.py",
        }
    }

    /// The val loss the lecture (the video or the commit that reached it, or
    /// the recipe's README) reports for the stage.
    pub fn lecture_val(self) -> f64 {
        match self {
            Stage::Bigram => 2.5,
            Stage::SelfAttention => 2.4,
            Stage::MultiHead => 2.28,
            Stage::FeedForward => 2.24,
            Stage::Blocks => 2.08,
            Stage::Layernorm => 2.06,
            Stage::Full => 1.48,
            Stage::Cpu => 1.88,
        }
    }

    /// The name of the [`Stage::lecture_val`] target, with its source: the
    /// video's words, the commit that reached it, or nanoGPT's README.
    pub fn lecture_val_target(self) -> &'static str {
        match self {
            Stage::Bigram => "val loss (video)",
            // The video says "from 2.5 to 2.4"; the commit's message, "reach 2.5 val loss".
            Stage::SelfAttention => "val loss (video; commit 10024b1 says 2.5)",
            Stage::MultiHead => "val loss (commit a6e0bee, video)",
            Stage::FeedForward => "val loss (commit 97dd3f9, video)",
            Stage::Blocks => "val loss (video; commit 5c3a2d2 gives none)",
            Stage::Layernorm => "val loss (commit 0016836)",
            Stage::Full => "val loss (video)",
            Stage::Cpu => "val loss (nanoGPT README)",
        }
    }

    /// Whether the final val loss gates the run (±0.05); the others are reported.
    pub fn gated(self) -> bool {
        matches!(self, Stage::Bigram | Stage::Layernorm | Stage::Cpu)
    }
}

/// The model of a stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelConfig {
    /// bigram.py's `nn.Embedding(vocab, vocab)`, read directly as logits.
    Bigram {
        /// Characters in the vocabulary (65).
        vocab_size: usize,
        /// The batches' context length (8); the table reads one token at a time.
        block_size: usize,
    },
    /// The video's model at one of its commits.
    Video(VideoConfig),
    /// nanoGPT's `GPT`.
    Gpt(GptConfig),
}

impl ModelConfig {
    /// The context length of the batches and the longest context the model reads.
    pub fn block_size(&self) -> usize {
        match self {
            ModelConfig::Bigram { block_size, .. } => *block_size,
            ModelConfig::Video(c) => c.block_size,
            ModelConfig::Gpt(c) => c.block_size,
        }
    }

    /// Tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        match self {
            ModelConfig::Bigram { vocab_size, .. } => *vocab_size,
            ModelConfig::Video(c) => c.vocab_size,
            ModelConfig::Gpt(c) => c.vocab_size,
        }
    }

    /// Dropout probability while training.
    pub fn dropout(&self) -> f32 {
        match self {
            ModelConfig::Bigram { .. } => 0.0,
            ModelConfig::Video(c) => c.dropout,
            ModelConfig::Gpt(c) => c.dropout,
        }
    }

    /// (n_layer, n_embd) for nanoGPT's FLOP count; the bigram table has neither.
    fn layers_and_width(&self) -> (usize, usize) {
        match self {
            ModelConfig::Bigram { .. } => (0, 0),
            ModelConfig::Video(c) => (c.n_layer, c.n_embd),
            ModelConfig::Gpt(c) => (c.n_layer, c.n_embd),
        }
    }
}

/// How a stage trains: the script's batch size, iterations, evaluation,
/// learning-rate schedule and AdamW settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Sequences per batch B (32; gpt.py 64; `cpu` 12).
    pub batch_size: usize,
    /// Training iterations (bigram 3000, middle stages 5000, `cpu` 2000).
    pub max_iters: usize,
    /// Evaluate every this many iterations (300, 500, `cpu` 250).
    pub eval_interval: usize,
    /// Batches per split in each evaluation (200; `cpu` 20).
    pub eval_iters: usize,
    /// Also evaluate at the last iteration (`iter == max_iters - 1`), as v2.py does from 5c3a2d2 on.
    pub eval_last: bool,
    /// nanoGPT's loop: fetch the next batch before the evaluation, train
    /// `max_iters` steps and evaluate at `max_iters`.
    pub nanogpt_loop: bool,
    /// Peak learning rate (bigram 1e-2, middle stages 1e-3, gpt.py 3e-4, `cpu` 1e-3).
    pub learning_rate: f32,
    /// Linear warmup iterations (`cpu` 100), then cosine decay to `min_lr`; 0 means a constant rate.
    pub warmup_iters: usize,
    /// The iteration at which the cosine reaches `min_lr` (`cpu` 2000).
    pub lr_decay_iters: usize,
    /// The floor of the cosine (`cpu` 1e-4).
    pub min_lr: f32,
    /// AdamW β₁, β₂ (torch default 0.9, 0.999; nanoGPT 0.9, 0.99).
    pub betas: (f32, f32),
    /// AdamW weight decay (torch default 0.01 on everything; nanoGPT 0.1 on matrices only).
    pub weight_decay: f32,
    /// Decay only parameters with two or more axes (nanoGPT's two groups).
    pub decay_matrices_only: bool,
    /// Clip the global gradient norm to this (nanoGPT 1.0); 0 for none.
    pub grad_clip: f32,
    /// `torch.manual_seed` (1337 everywhere in this lecture).
    pub seed: u64,
}

impl TrainConfig {
    /// The learning rate at iteration `it`: constant, or nanoGPT's warmup + cosine.
    pub fn lr_at(&self, it: usize) -> f32 {
        if self.warmup_iters == 0 && self.lr_decay_iters == 0 {
            self.learning_rate
        } else {
            autograd::nanogpt_warmup_cosine(
                it,
                self.learning_rate,
                self.warmup_iters,
                self.lr_decay_iters,
                self.min_lr,
            )
        }
    }

    /// Whether iteration `it` ends with an evaluation.
    pub fn evaluates_at(&self, it: usize) -> bool {
        it.is_multiple_of(self.eval_interval) || (self.eval_last && it + 1 == self.max_iters)
    }
}

/// A stage's whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The stage this configuration reproduces.
    pub stage: Stage,
    /// Its model.
    pub model: ModelConfig,
    /// How it trains.
    pub train: TrainConfig,
}

impl Config {
    /// The configuration of `stage`, exactly as its script sets it.
    pub fn for_stage(stage: Stage) -> Config {
        // v2.py from 10024b1 on: batch 32, block 8, lr 1e-3, 5000 iters, eval every 500.
        let video = VideoConfig {
            vocab_size: 65,
            block_size: 8,
            n_embd: 32,
            n_head: 4,
            n_layer: 3,
            dropout: 0.0,
            body: VideoBody::Attention,
            head_size_scale: false,
            flash: false,
        };
        let video_train = TrainConfig {
            batch_size: 32,
            max_iters: 5000,
            eval_interval: 500,
            eval_iters: 200,
            eval_last: false,
            nanogpt_loop: false,
            learning_rate: 1e-3,
            warmup_iters: 0,
            lr_decay_iters: 0,
            min_lr: 0.0,
            betas: (0.9, 0.999),
            weight_decay: 0.01,
            decay_matrices_only: false,
            grad_clip: 0.0,
            seed: 1337,
        };
        // 5c3a2d2 added the evaluation at the last iteration.
        let eval_last = TrainConfig {
            eval_last: true,
            ..video_train.clone()
        };
        let (model, train) = match stage {
            Stage::Bigram => (
                ModelConfig::Bigram {
                    vocab_size: 65,
                    block_size: 8,
                },
                TrainConfig {
                    max_iters: 3000,
                    eval_interval: 300,
                    learning_rate: 1e-2,
                    ..video_train
                },
            ),
            Stage::SelfAttention => (
                ModelConfig::Video(VideoConfig { n_head: 1, ..video }),
                video_train,
            ),
            Stage::MultiHead => (ModelConfig::Video(video), video_train),
            Stage::FeedForward => (
                ModelConfig::Video(VideoConfig {
                    body: VideoBody::AttentionFeedForward,
                    ..video
                }),
                video_train,
            ),
            Stage::Blocks => (
                ModelConfig::Video(VideoConfig {
                    body: VideoBody::Blocks,
                    ..video
                }),
                eval_last,
            ),
            Stage::Layernorm => (
                ModelConfig::Video(VideoConfig {
                    body: VideoBody::PreNormBlocks,
                    ..video
                }),
                eval_last,
            ),
            Stage::Full => (
                ModelConfig::Video(VideoConfig {
                    n_embd: 384,
                    n_head: 6,
                    n_layer: 6,
                    block_size: 256,
                    dropout: 0.2,
                    body: VideoBody::PreNormBlocks,
                    // Not stored, the weights of 36 heads would be 3.6 GB
                    // (`Head::forward`); the same bits either way.
                    flash: true,
                    ..video
                }),
                TrainConfig {
                    batch_size: 64,
                    learning_rate: 3e-4,
                    ..eval_last
                },
            ),
            // nanoGPT's config/train_shakespeare_char.py with the README's CPU overrides.
            Stage::Cpu => (
                ModelConfig::Gpt(GptConfig {
                    block_size: 64,
                    vocab_size: 65,
                    n_layer: 4,
                    n_head: 4,
                    n_embd: 128,
                    dropout: 0.0,
                    bias: false,
                }),
                TrainConfig {
                    batch_size: 12,
                    max_iters: 2000,
                    eval_interval: 250,
                    eval_iters: 20,
                    nanogpt_loop: true,
                    learning_rate: 1e-3,
                    warmup_iters: 100,
                    lr_decay_iters: 2000,
                    min_lr: 1e-4,
                    betas: (0.9, 0.99),
                    weight_decay: 0.1,
                    decay_matrices_only: true,
                    grad_clip: 1.0,
                    ..video_train
                },
            ),
        };
        Config {
            stage,
            model,
            train,
        }
    }

    /// gpt.py after the video: attention scaled by head_size^-0.5, N(0, 0.02)
    /// init. Only the video's transformer stages have the choice.
    pub fn with_head_size_scale(mut self, on: bool) -> Config {
        if let ModelConfig::Video(video) = &mut self.model {
            video.head_size_scale = on;
        }
        self
    }

    /// Whether the model scales attention by head_size^-0.5 (see [`Config::with_head_size_scale`]).
    pub fn head_size_scale(&self) -> bool {
        matches!(
            self.model,
            ModelConfig::Video(VideoConfig {
                head_size_scale: true,
                ..
            })
        )
    }

    /// Training FLOPs per iteration, nanoGPT's `estimate_mfu` count:
    /// 6·N per token for the weights plus 12·L·C·T per token for attention.
    pub fn flops_per_iter(&self, params: usize) -> f64 {
        let t = self.model.block_size();
        let (n_layer, n_embd) = self.model.layers_and_width();
        let tokens = (self.train.batch_size * t) as f64;
        let attn = 12.0 * (n_layer * n_embd * t) as f64;
        (6.0 * params as f64 + attn) * tokens
    }
}

/// A model of any stage.
#[derive(Clone, Debug)]
pub enum Model {
    /// Stage `bigram`.
    Bigram(Bigram),
    /// Stages `self-attention` to `full`.
    Video(VideoGpt),
    /// Stage `cpu`.
    Gpt(Gpt),
}

impl Model {
    /// Builds the model of `config` into `params`, drawing its initial values
    /// from `rng` in the order the stage's PyTorch code constructs its modules.
    pub fn build(config: &ModelConfig, params: &mut Params, rng: &mut TorchGenerator) -> Model {
        let mut init = Init::new(params, rng);
        match *config {
            ModelConfig::Bigram { vocab_size, .. } => {
                Model::Bigram(Bigram::new(&mut init, vocab_size))
            }
            ModelConfig::Video(video) => Model::Video(VideoGpt::new(&mut init, video)),
            ModelConfig::Gpt(gpt) => Model::Gpt(Gpt::new(&mut init, gpt)),
        }
    }

    /// The longest context the model reads.
    pub fn block_size(&self) -> usize {
        match self {
            Model::Bigram(_) => usize::MAX,
            Model::Video(m) => m.config.block_size,
            Model::Gpt(m) => m.config.block_size,
        }
    }

    /// `idx` `(B, T)` row-major -> logits `(B, T, vocab)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        match self {
            Model::Bigram(m) => m.forward(pass, idx, b, t),
            Model::Video(m) => m.forward(pass, idx, b, t),
            Model::Gpt(m) => m.forward(pass, idx, b, t),
        }
    }

    // ANCHOR: loss
    /// The mean cross-entropy of the logits against the targets `y` `(B, T)`.
    pub fn loss<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        x: &[usize],
        y: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        let logits = self.forward(pass, x, b, t); // (B, T, V)
        let v = logits.shape()[2];
        logits.reshape(&[b * t, v]).cross_entropy(y) // scalar
    }
    // ANCHOR_END: loss
}
