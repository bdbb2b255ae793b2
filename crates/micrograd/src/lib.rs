//! Lecture 1, "The spelled-out intro to neural networks and backpropagation:
//! building micrograd".
//!
//! A scalar autograd engine ([`Value`]) and a neural-net library on top of it
//! ([`Neuron`], [`Layer`], [`MLP`]), written to read like Karpathy's `engine.py` and
//! `nn.py`. Nothing here uses tensors: every number in a network is its own node.
//!
//! Targets (`cargo xtask lecture 1`, see `src/main.rs`):
//! - micrograd's README expression: g = 24.70408163265306, a.grad =
//!   138.83381924198252, b.grad = 645.5772594752186; `test_sanity_check`: y = -20,
//!   dy/dx = 46 exactly;
//! - the lecture's neuron: o = 0.7071067811865476, dx1 = -1.5, dw1 = 1, dx2 = 0.5, dw2 = 0;
//! - the exercises: f(2, 3, 4) = 6.336362190988558 with gradient
//!   [-12.353553390593273, 10.25699027111255, 0.0625]; softmax + NLL loss 2.1755153626167147;
//! - `MLP(3, [4, 4, 1])` on four examples: the loss falls over 20 steps and the
//!   predictions get the targets' signs;
//! - the moons demo, `MLP(2, [16, 16, 1])`, 337 parameters, 100 steps: 100% accuracy,
//!   loss 0.010978370135492717 (Karpathy's), every step within 1e-9 of pip micrograd.
//!
//! Design: a [`Value`] is an `Rc` to a node holding its data, its gradient, its
//! inputs and a backward closure. `backward()` sorts the graph with an explicit
//! stack and dropping a graph is iterative, so a chain of 100,000 nodes needs no
//! more stack than a chain of 3.
#![deny(missing_docs)]

pub mod boundary;
pub mod draw;
pub mod engine;
pub mod examples;
pub mod moons;
pub mod nn;
pub mod regression;

pub use draw::{to_dot, to_svg};
pub use engine::{values, Value};
pub use nn::{Activation, Layer, Module, Neuron, MLP};
