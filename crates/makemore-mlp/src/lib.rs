//! Lecture 3, "Building makemore Part 2: MLP": the character-level MLP of
//! Bengio et al. 2003, trained on `names.txt`.
//!
//! Configuration (notebook `makemore_part2_mlp.ipynb`): a context of 3 characters,
//! each embedded in 10 dimensions by a table `C` (27×10); the 30 numbers go through
//! a tanh layer of 200 units and a linear layer to 27 logits; cross-entropy loss.
//! All five tensors are plain `randn` draws from `manual_seed(2147483647)` in the
//! order C, W1, b1, W2, b2: 11,897 parameters. Training is 200,000 steps of SGD on
//! minibatches of 32, lr 0.1 then 0.01 from step 100,000.
//!
//! Targets:
//! - loss of the initial net on the full training split: 26.004692 (PyTorch, same
//!   draws; the init is badly scaled, which lecture 4 fixes);
//! - after training, on the full splits: train ≈ 2.1260, dev ≈ 2.1701 (the
//!   lecture's printout), band ±0.03; and PyTorch's run with the same draws,
//!   2.12004 / 2.16382 ± 0.002 (`tests/fixtures/mlp_torch.py --full`).
//!
//! The pieces a learner writes are marked with mdBook anchors: the init
//! (`init`), the forward pass (`forward`), the training step (`train_step`) and
//! sampling (`sample`).
#![deny(missing_docs)]

mod model;
mod plot;
mod sample;
mod train;

pub use model::{Config, Mlp};
pub use plot::{embedding_plot, lr_find_plot};
pub use sample::sample;
pub use train::{lecture_lr, lr_find, train, train_step, LrFindPoint, BATCH_SIZE};

/// The loss of a uniform prediction over the 27 characters, `-ln(1/27)`: what a
/// well-initialised net should start at (exercise E02).
pub fn uniform_loss() -> f32 {
    (data::makemore::VOCAB_SIZE as f32).ln()
}
