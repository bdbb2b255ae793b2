//! char-rnn: where the series began. Karpathy's "The Unreasonable
//! Effectiveness of Recurrent Neural Networks" (2015) trained a character-level
//! language model on raw text; its seed is min-char-rnn.py, a 112-line numpy
//! gist (gist d4dee566867f8291f086), and its grown-up form is char-rnn
//! (karpathy/char-rnn, Lua Torch).
//!
//! - [`min`]: the gist, top to bottom, in float64: a vanilla RNN with one
//!   hidden layer of 100, unrolled 25 characters, trained with Adagrad at 1e-1,
//!   its gradients clipped to ±5, printing the smoothed loss and a 200-character
//!   sample every 100 iterations. numpy's legacy generator is reproduced bit for
//!   bit (`pyrandom::numpy`), so the same seed gives the gist's weights and samples.
//!
//! Targets (`tests/fixtures/min/make_fixtures.sh`, the gist ported to Python 3
//! with `np.random.seed` and a sorted vocabulary, numpy 2.4.6 on one BLAS
//! thread with its SIMD dispatch off), for 2,000 iterations on
//! tinyshakespeare.txt and on a text in five scripts with emoji: the initial
//! weights bit for bit, every printed line equal (losses to their 6 printed
//! decimals, every sample), and every iteration's loss equal to numpy's in
//! full precision (`tests/min.rs`). That takes numpy's order of addition too:
//! its pairwise `sum`, and OpenBLAS's `dgemv` kernels ([`blas`]).
//!
//!
//! - [`loader`] and [`model`]: char-rnn's `CharSplitLMMinibatchLoader` and its
//!   `LSTM.lua`, `GRU.lua` and `RNN.lua` (karpathy/char-rnn at 6f9487a).
#![deny(missing_docs)]

pub mod blas;
pub mod loader;
pub mod min;
pub mod model;
