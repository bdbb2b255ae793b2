//! PyTorch's own building blocks: `nn.Linear`, `nn.Embedding`, dropout, the
//! causal mask, and how a model is built ([`Init`]) and run ([`ForwardPass`]).
//!
//! The one layer convention of lectures 7 and 9: a layer is built with
//! `Layer::new(init, name, …)`, drawing its initial values from the one
//! generator in the order its PyTorch module is constructed, so a model built
//! here starts from the same numbers as the lecture's `torch.manual_seed(1337)`;
//! and run with `layer.forward(pass, x)`, where the [`ForwardPass`] holds
//! what `torch.nn` keeps implicitly: the step's graph, the parameters, and
//! whether dropout is on.

mod embedding;
mod linear;

pub use embedding::Embedding;
pub use linear::Linear;

pub use autograd::{ForwardPass, Init};

use tensor::Tensor;

/// The causal mask for `t` positions: 1 above the diagonal (the future), where
/// `masked_fill(tril == 0, -inf)` writes -inf.
pub fn future_mask(t: usize) -> Tensor {
    Tensor::ones(&[t, t]).sub(&Tensor::tril_ones(t, t)) // (T, T)
}
