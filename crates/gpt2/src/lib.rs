//! Lecture 9, "Let's reproduce GPT-2 (124M)" (karpathy/build-nanogpt): GPT-2
//! built as the video builds it, loaded with OpenAI's weights in Hugging
//! Face's layout, and sampled from.
//!
//! Targets (`tests/`, fixtures made by `tests/fixtures/make_fixtures.py` with
//! PyTorch and `transformers`): a random GPT-2 saved by `transformers` gives
//! its logits within 1e-4; the sampling demo (af6e591: "Hello, I'm a
//! language model,", 5 × 30 tokens, top-k 50, `torch.manual_seed(42)`) gives
//! PyTorch's tokens.
#![deny(missing_docs)]

pub mod hf;
pub mod model;
pub mod sample;

pub use model::{Block, Gpt, GptConfig, InitScheme, Mlp};
