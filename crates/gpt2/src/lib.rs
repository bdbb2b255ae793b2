//! Lecture 9, "Let's reproduce GPT-2 (124M)" (karpathy/build-nanogpt): GPT-2
//! built as the video builds it, loaded with OpenAI's weights in Hugging
//! Face's layout, sampled from, and trained with build-nanogpt's recipe, by
//! one process or several.
//!
//! Targets (`tests/`, fixtures made by `tests/fixtures/make_fixtures.py` with
//! PyTorch and `transformers`):
//! - parameters: **124,439,808** for `gpt2` at vocab 50,257 (llm.c prints the
//!   same), **163,037,184** untied with PyTorch's default init (before
//!   build-nanogpt ec39245);
//! - build-nanogpt's init (9ac321e) from `torch.manual_seed(1337)` equals
//!   PyTorch's bit for bit: the SHA-256 of every 124M tensor;
//! - the 124M model at init on the lecture's first batch (41078d1: 4×32
//!   tokens of tiny Shakespeare) gives PyTorch's loss, **10.960030**, within
//!   1e-5 (−ln(1/50257) = 10.8249 for a uniform guess);
//! - a random GPT-2 saved by `transformers`: logits within 1e-4, the loss and
//!   every gradient within 1e-4 (relative to the tensor's largest entry);
//! - the training stages (7822fce, 631f7d6, 9ac321e, 01be6b3): the step-0
//!   loss within 1e-5 and the first five steps within 1e-4 of PyTorch's run
//!   of the same code ([`train`]);
//! - the `cpu` recipe ([`recipe`], its pieces in [`trainer`], `cargo xtask lecture 9`): build-nanogpt's
//!   whole loop on a 7,240,448-parameter GPT-2, its val loss on tiny
//!   Shakespeare within 0.02 of PyTorch's run of it (5.6154) and below a
//!   counted token bigram's (5.8588); a resumed run bit for bit the
//!   uninterrupted one ([`checkpoint`]);
//! - the same recipe with bfloat16 products (`--dtype bfloat16`, as train_gpt2.py autocasts on a
//!   CPU): its first five losses within 1.46e-4 and its val loss within b = 0.0159 of PyTorch's
//!   autocast run (5.6195), each tolerance PyTorch's own largest bf16−f32 gap over 3 seeds;
//! - data-parallel training (ba2554a) over MPI with the `mpi` feature
//!   ([`ddp`]): 2 ranks give one process's loss curve within 1e-5 relative
//!   for 20 steps of the `cpu` model, the all-reduce gives the mean on every
//!   rank, and a rank that dies or hangs ends the run (`tests/ddp.rs`);
//! - token shards byte for byte build-nanogpt's and llm.c's ([`shards`]);
//! - `gpt2 finetune` ([`finetune`]): nanoGPT's train.py with `init_from` a
//!   GPT-2 folder: a random GPT-2 saved by `transformers` fine-tuned for 10
//!   iterations gives PyTorch's losses (nanoGPT's loop on `GPT2LMHeadModel`,
//!   `tests/fixtures/finetune.py`) within 1e-4, and the saved model its
//!   logits within 1e-4;
//! - the sampling demo (af6e591: "Hello, I'm a language model,", 5 × 30
//!   tokens, top-k 50, `torch.manual_seed(42)`) gives PyTorch's tokens.
#![deny(missing_docs)]

pub mod checkpoint;
pub mod ddp;
pub mod finetune;
pub mod hellaswag;
pub mod hf;
pub mod kv_cache;
pub mod llmc;
pub mod model;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod recipe;
pub mod sample;
pub mod shards;
pub mod train;
pub mod trainer;

pub use model::{Block, Gpt, GptConfig, InitScheme, Mlp};

/// Tells mimalloc to keep the pages it frees ([`tensor::keep_freed_memory`]).
pub use tensor::keep_freed_memory;
