//! The stages of the lecture and every hyperparameter of each, with its source.

use serde::{Deserialize, Serialize};

/// The lecture's progression: each stage is a runnable configuration (`--stage NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// bigram.py: the logits are a 65×65 lookup table. Lecture: val ≈ 2.5.
    Bigram,
    /// v2.py at 10024b1: token + position embeddings, one head of size 32. Lecture: 2.4.
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

    /// The val loss the lecture (or the recipe's README) reports for the stage.
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

    /// Whether the final val loss gates the run (±0.05); the others are reported.
    pub fn gated(self) -> bool {
        matches!(self, Stage::Bigram | Stage::Layernorm | Stage::Cpu)
    }
}

/// Which model the stage builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arch {
    /// `nn.Embedding(vocab, vocab)` read directly as logits.
    Bigram,
    /// The video's model at one of its commits (see [`Stage`]).
    Video(Stage),
    /// nanoGPT's `GPT`: fused qkv, all heads batched, GELU, weight tying, no bias.
    Nano,
}

/// Every hyperparameter of a run, model and training, as the stage's script sets them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The stage this configuration reproduces.
    pub stage: Stage,
    /// The model family.
    pub arch: Arch,
    /// Characters in the vocabulary (65).
    pub vocab_size: usize,
    /// Width of the residual stream (32 in the video's middle stages, 384 in gpt.py, 128 for `cpu`).
    pub n_embd: usize,
    /// Heads per attention layer (4; gpt.py 6).
    pub n_head: usize,
    /// Transformer blocks (3; gpt.py 6; `cpu` 4).
    pub n_layer: usize,
    /// Context length T (8; gpt.py 256; `cpu` 64).
    pub block_size: usize,
    /// Dropout probability (0; gpt.py 0.2).
    pub dropout: f32,
    /// Scale attention by head_size^-0.5 and initialise N(0, 0.02), as gpt.py after
    /// the video; `false` is the video's n_embd^-0.5 with PyTorch's default init.
    pub head_size_scale: bool,
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

impl Config {
    /// The configuration of `stage`, exactly as its script sets it.
    pub fn for_stage(stage: Stage) -> Config {
        // v2.py from 10024b1 on: batch 32, block 8, lr 1e-3, 5000 iters, eval every 500.
        let video = Config {
            stage,
            arch: Arch::Video(stage),
            vocab_size: 65,
            n_embd: 32,
            n_head: 4,
            n_layer: 3,
            block_size: 8,
            dropout: 0.0,
            head_size_scale: false,
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
        match stage {
            Stage::Bigram => Config {
                arch: Arch::Bigram,
                n_embd: 65,
                max_iters: 3000,
                eval_interval: 300,
                learning_rate: 1e-2,
                ..video
            },
            Stage::SelfAttention => Config { n_head: 1, ..video },
            Stage::MultiHead | Stage::FeedForward => video,
            // 5c3a2d2 added the evaluation at the last iteration.
            Stage::Blocks | Stage::Layernorm => Config {
                eval_last: true,
                ..video
            },
            Stage::Full => Config {
                n_embd: 384,
                n_head: 6,
                n_layer: 6,
                block_size: 256,
                dropout: 0.2,
                batch_size: 64,
                learning_rate: 3e-4,
                eval_last: true,
                ..video
            },
            Stage::Cpu => Config {
                arch: Arch::Nano,
                n_embd: 128,
                n_head: 4,
                n_layer: 4,
                block_size: 64,
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
                ..video
            },
        }
    }

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

    /// Training FLOPs per iteration, nanoGPT's `estimate_mfu` count:
    /// 6·N per token for the weights plus 12·L·C·T per token for attention.
    pub fn flops_per_iter(&self, params: usize) -> f64 {
        let tokens = (self.batch_size * self.block_size) as f64;
        let attn = 12.0 * (self.n_layer * self.n_embd * self.block_size) as f64;
        (6.0 * params as f64 + attn) * tokens
    }
}
