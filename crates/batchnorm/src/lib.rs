//! Lecture 4, "Building makemore Part 3: Activations & Gradients, BatchNorm":
//! the `torch.nn`-style modules the lecture writes (see [`nn`]).
#![deny(missing_docs)]

pub mod nn;
