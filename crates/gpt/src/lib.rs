//! Lecture 7, "Let's build GPT: from scratch, in code, spelled out": a
//! character-level language model on tiny Shakespeare, built up stage by stage
//! as in the video, then nanoGPT's CPU recipe.
//!
//! Data: `tinyshakespeare.txt`, 1,115,394 characters, a vocabulary of the 65
//! sorted characters ('\n' = 0, ' ' = 1), train = the first 90% (1,003,854),
//! val = the last 10% (111,540); batches from random offsets (`get_batch`).
//!
//! | stage | what is added | lecture's val | params |
//! |---|---|---|---|
//! | `bigram` | bigram.py: a 65×65 table, batch 32, block 8, lr 1e-2, 3000 iters | ≈2.5 | 4,225 |
//! | `self-attention` | token + position embeddings, one head of 32 | 2.4 (the video; commit 10024b1's message: 2.5) | 7,553 |
//! | `multi-head` | 4 heads of 8 | 2.28 | 7,553 |
//! | `feed-forward` | Linear + ReLU per position | 2.24 | 8,609 |
//! | `blocks` | 3 residual blocks, projections, 4× FFN | 2.08 | 41,921 |
//! | `layernorm` | pre-LN in each block + final LN | 2.06 | 42,369 |
//! | `full` | gpt.py: 6×6 heads, n_embd 384, block 256, dropout 0.2 | 1.48 | 10,788,929 |
//! | `cpu` | nanoGPT's CPU recipe: 4 layers, 4 heads, n_embd 128, block 64 | 1.88 | 804,096 |
//!
//! Every stage starts from `torch.manual_seed(1337)` with the generator of
//! [`tensor::rng`], and draws its initial weights, batches, dropout masks and
//! samples in the order the lecture's PyTorch code does, so the step-0 losses
//! equal PyTorch's. Targets: `bigram`, `layernorm` and `cpu` within ±0.05 of the
//! lecture's number, and within 1e-4 (layernorm 5e-4) of PyTorch running the same
//! seeded code (`tests/fixtures/stages.py --train`); exact parameter counts.
//!
//! Layout: [`data`] (vocabulary, split, `get_batch`), [`trick`] (the
//! mathematical trick of self-attention and why attention is scaled),
//! [`video`] (the video's models, stage by stage), [`model`] (nanoGPT's
//! `model.py` in one file), [`nn`] (PyTorch's `Linear`, `Embedding`, dropout),
//! [`stages`] (each stage's named configuration), [`train`] (the loop),
//! [`generate`] (sampling), [`checkpoint`] (safetensors), and [`nanogpt`]:
//! nanoGPT's `prepare.py`, `train.py` and `sample.py` on any text, checked
//! against nanoGPT's own scripts (`gpt prepare`, `gpt train`, `gpt sample
//! --out-dir`).
#![deny(missing_docs)]

pub mod checkpoint;
pub mod data;
pub mod generate;
pub mod model;
pub mod nanogpt;
pub mod nn;
pub mod stages;
pub mod train;
pub mod trick;
pub mod video;

pub use data::{CharVocab, Shakespeare, Split};
pub use generate::{generate, SampleOptions};
pub use stages::{Config, Model, ModelConfig, Stage, TrainConfig};
pub use train::{train, Eval, Trained, Trainer};
