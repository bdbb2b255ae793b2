//! nanoGPT (karpathy/nanoGPT at 3adf61e) on your own text, at the character
//! level: [`prepare`] is `data/shakespeare_char/prepare.py`, [`train`] is
//! `train.py` (its flags in [`configurator`]), [`sample`] is `sample.py`,
//! with nanoGPT's files (`train.bin`, `val.bin`, `meta.pkl`) and printed lines. The model and its step are
//! lecture 7's [`crate::model::Gpt`] and [`crate::train::Trainer`].
//!
//! Targets (`tests/nanogpt.rs`, against nanoGPT's own scripts run on a text
//! with characters beyond ASCII and Windows line endings,
//! `tests/fixtures/nanogpt/make_fixtures.py`): the prepared files byte for
//! byte and `meta.pkl` to an equal dict; with the README's CPU line and
//! `--max_iters=200 --lr_decay_iters=200 --eval_interval=100`, the parameter
//! count exactly, the iteration-0 loss within 1e-5, every logged loss within
//! 1.5e-4 and the val loss at iteration 200 within 1e-3; sample.py's
//! characters for the same weights and seed.

pub mod checkpoint;
pub mod configurator;
pub mod prepare;
pub mod sample;
pub mod train;
