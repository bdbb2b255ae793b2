//! Lecture 1, "The spelled-out intro to neural networks and backpropagation:
//! building micrograd".
//!
//! A scalar autograd engine ([`Value`]) and a neural-net library on top of it
//! ([`Neuron`], [`Layer`], [`MLP`]), written to read like Karpathy's `engine.py` and
//! `nn.py`. Nothing here uses tensors: every number in a network is its own node.
//!
//! Design: a [`Value`] is an `Rc` to a node holding its data, its gradient, its
//! inputs and a backward closure. `backward()` sorts the graph with an explicit
//! stack and dropping a graph is iterative, so a chain of 100,000 nodes needs no
//! more stack than a chain of 3.
#![deny(missing_docs)]

pub mod draw;
pub mod engine;
pub mod examples;
pub mod moons;
pub mod nn;
pub mod regression;

pub use draw::to_dot;
pub use engine::{values, Value};
pub use nn::{Activation, Layer, Module, Neuron, MLP};
