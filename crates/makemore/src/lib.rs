//! makemore: Karpathy's `makemore.py` (karpathy/makemore at 988aa59) as a
//! Rust tool. It "takes one text file as input, where each line is assumed to
//! be one training thing, and generates more things like it".
//!
//! The five makemore lectures (2–6) build its models piece by piece; this
//! crate is the program a learner runs after them, on their own data. It reads
//! like makemore.py, top to bottom:
//!
//! - [`model`]: the six models, one type per class (`Transformer`, `BoW`,
//!   `RNN` with `RNNCell` or `GRUCell`, `MLP`, `Bigram`), plus the `LSTMCell`
//!   makemore.py leaves out, with PyTorch's initialisation and `state_dict` names;
//! - [`sample`]: `generate` and `print_samples`;
//! - [`data`]: `CharDataset` and `create_datasets`, reading the file as Python does;
//! - [`loader`]: the draws of `InfiniteDataLoader` and `evaluate`'s shuffled loader;
//! - [`train`]: the step, `evaluate`, and the state of the loop;
//! - [`run`]: the main loop, printing makemore.py's lines;
//! - [`checkpoint`]: the best model in makemore.py's `state_dict` layout, and
//!   the state to resume from;
//! - [`tensorboard`]: the `Loss/train` and `Loss/test` scalars `SummaryWriter` writes.
//!
//! Every random draw comes from PyTorch's generator in makemore.py's order
//! (the split, the init, the loaders' seeds, the batches, the evaluation
//! shuffles, the samples), so a run follows PyTorch running makemore.py.
//!
//! Targets (`tests/fixtures/makemore_torch.py`, PyTorch running makemore.py
//! unmodified with `--max-steps 501 --num-workers 0` on names.txt): for every
//! type the split (31,033 / 1,000), `vocab_size=27`, `block_size=16`, the
//! parameter count and `state_dict` exactly (204,544 for the transformer,
//! "0.20M" without its head), the step-0 loss within 1e-5, the printed losses
//! of steps 0–200 within 1.5e-4 and the full-precision ones within 1e-5, and
//! the samples at step 200 word for word (`tests/torch_parity.rs`); the same
//! on a non-ASCII file with `\r\n` endings. A resumed run equals a straight
//! one bit for bit (`tests/cli.rs`).
#![deny(missing_docs)]

pub mod checkpoint;
pub mod data;
pub mod loader;
pub mod model;
pub mod run;
pub mod sample;
pub mod tensorboard;
pub mod train;

pub use model::{Model, ModelConfig, ModelType};
pub use run::{run, Options};
pub use train::{TrainConfig, Trainer};
