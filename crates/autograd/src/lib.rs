//! A define-by-run autograd tape: the engine behind lectures 3 to 7.
//!
//! Lecture 1 builds backpropagation for scalars (`micrograd`); from lecture 3 on the
//! same idea runs over tensors. Every operation on a [`Var`] computes its value
//! at once and records, on a [`Graph`], a closure that knows the operation's local
//! derivative. [`Var::backward`] then walks the graph from the loss to the
//! leaves, applying the chain rule.
//!
//! The design follows candle and micrograd:
//!
//! - The graph is an arena of nodes indexed by id. A node can only refer to nodes
//!   created before it, so reverse creation order is a valid topological order:
//!   backward needs no sort.
//! - Gradients live outside the nodes, in a [`Grads`] store, so nodes never need
//!   interior mutability. When a node is used twice, its gradient is the *sum* of
//!   both contributions (the `+=` of micrograd, and the most common learner bug).
//! - Parameters persist across steps in [`Params`]; each training step builds a
//!   fresh graph, attaches the parameters as leaves, and hands the gradients to an
//!   optimizer ([`Sgd`], [`AdamW`]).
//!
//! Each op's forward sits next to its backward rule, in `src/ops/`, marked with
//! mdBook anchors so the lecture pages can quote them and instructors can blank
//! them out. Every rule is tested against central finite differences
//! (`tests/finite_differences.rs`), and the composite ones against PyTorch
//! (`tests/torch_parity.rs`).
//!
//! ```
//! use autograd::{Graph, Params};
//! use tensor::Tensor;
//!
//! let mut params = Params::new();
//! let w = params.add("w", Tensor::from_vec(vec![2.0], &[1]));
//! let graph = Graph::new();
//! let wv = graph.param(&params, w);
//! let a = wv * 2.0;             // a = 2w
//! let b = a * 3.0;              // b = 3a
//! let z = (a + b).sum_all();    // a is used twice
//! let grads = z.backward();
//! assert_eq!(grads.of(wv).unwrap().to_vec(), vec![8.0]);
//! ```
#![deny(missing_docs)]

mod cmp;
pub mod faults;
mod graph;
mod module;
mod ops;
mod optim;
mod params;
pub mod profile;
mod schedule;

pub use cmp::{cmp, CmpResult};
pub use graph::{Grads, Graph, Var};
pub use module::{ForwardPass, Init};
pub use optim::{clip_grad_norm, AdamW, AdamWConfig, Sgd};
pub use params::{Param, ParamId, Params};
pub use schedule::{nanogpt_warmup_cosine, step_decay};
