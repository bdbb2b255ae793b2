//! Lecture 2, "The spelled-out intro to language modeling: building makemore".
//!
//! A bigram model predicts the next character of a name from the current one.
//! The lecture builds it twice and shows the two agree:
//!
//! 1. [`counting`]: count every pair of neighbouring characters in names.txt
//!    (228,146 bigrams over a 27-symbol vocabulary), add one to every count, and
//!    normalise each row into a probability distribution. Its average negative
//!    log-likelihood over all bigrams is **2.4545768** (in f64).
//! 2. [`neural`]: a single 27×27 weight matrix `W`, one-hot inputs, softmax, and
//!    full-batch gradient descent with lr 50 and `0.01·mean(W²)` regularisation.
//!    From `W = randn((27, 27))` drawn with `torch.Generator().manual_seed(2147483647)`
//!    the loss is **3.7686186** at step 0, **2.4901** after 99 updates and **2.4830**
//!    after 199: what PyTorch prints for the lecture's code.
//!
//! Sampling five names with a fresh `manual_seed(2147483647)` gives, from the
//! counts, `cexze.`, `momasurailezitynn.`, `konimittain.`, `llayn.`, `ka.`, and from
//! the trained net `cexze.`, `momasurailezityha.`, `konimittain.`, `llayn.`, `ka.`,
//! exactly as PyTorch does: [`tensor::rng::TorchGenerator`] reproduces torch's
//! random stream.
//!
//! [`exercises`] holds the lecture's exercises E01–E05.
#![deny(missing_docs)]

pub mod counting;
pub mod exercises;
pub mod neural;
pub mod sampling;

/// The seed the lecture passes to `torch.Generator().manual_seed`.
pub const LECTURE_SEED: u64 = 2147483647;
