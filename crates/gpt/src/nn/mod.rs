//! The layers, one small type per file, as in candle-nn.
//!
//! Every layer is built the way its PyTorch module is constructed, drawing its
//! initial values from the one generator in the same order as torch, so a model
//! built here starts from the same numbers as the lecture's `torch.manual_seed(1337)`.
//! Its `forward` takes a [`Fwd`], the per-step context: the graph, the parameters
//! and, while training with dropout, the generator the masks come from.

mod attention;
mod block;
mod causal_self_attention;
mod embedding;
mod feed_forward;
mod layer_norm;
mod linear;

pub use attention::{Head, MultiHeadAttention};
pub use block::{Block, NanoBlock};
pub use causal_self_attention::CausalSelfAttention;
pub use embedding::Embedding;
pub use feed_forward::{FeedForward, Mlp};
pub use layer_norm::LayerNorm;
pub use linear::Linear;

use autograd::{Graph, ParamId, Params, Var};
use std::cell::RefCell;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// What a forward pass needs besides its input.
pub struct Fwd<'g> {
    /// The tape of this step (`Graph::no_grad()` for evaluation and sampling).
    pub graph: &'g Graph,
    /// The model's parameters.
    pub params: &'g Params,
    /// The generator for dropout masks; `None` is `model.eval()` (no dropout).
    pub dropout_rng: Option<&'g RefCell<TorchGenerator>>,
}

impl<'g> Fwd<'g> {
    /// A context in eval mode: no dropout.
    pub fn eval(graph: &'g Graph, params: &'g Params) -> Fwd<'g> {
        Fwd {
            graph,
            params,
            dropout_rng: None,
        }
    }

    /// A parameter as a leaf of this step's graph.
    pub fn p(&self, id: ParamId) -> Var<'g> {
        self.graph.param(self.params, id)
    }

    // ANCHOR: dropout
    /// `nn.Dropout(p)`: in training, zero each element with probability `p` and
    /// scale the rest by `1/(1-p)`; in eval, the identity.
    pub fn dropout(&self, x: Var<'g>, p: f32) -> Var<'g> {
        match self.dropout_rng {
            Some(rng) if p > 0.0 => x.dropout(p, &mut rng.borrow_mut()), // like x
            _ => x,
        }
    }
    // ANCHOR_END: dropout
}

/// The parameters being built and the generator their initial values come from.
pub struct Init<'a> {
    /// Where each layer registers its parameters.
    pub params: &'a mut Params,
    /// The lecture's generator (`torch.manual_seed(1337)`).
    pub rng: &'a mut TorchGenerator,
    /// Weights of every `Linear` and `Embedding`, in construction order: what
    /// `self.apply(self._init_weights)` re-draws.
    pub weights: Vec<ParamId>,
    /// Biases of every `Linear`, which `_init_weights` zeroes.
    pub biases: Vec<ParamId>,
}

impl<'a> Init<'a> {
    /// Starts building into `params`.
    pub fn new(params: &'a mut Params, rng: &'a mut TorchGenerator) -> Init<'a> {
        Init {
            params,
            rng,
            weights: Vec::new(),
            biases: Vec::new(),
        }
    }

    /// gpt.py's `_init_weights` (added after the video) and nanoGPT's: every
    /// Linear and Embedding weight re-drawn from N(0, std²), in module order;
    /// every Linear bias set to zero.
    pub fn normal_reinit(&mut self, std: f32) {
        for &id in &self.weights {
            let shape = self.params.value(id).shape().to_vec();
            self.params.get_mut(id).value = self.rng.normal(0.0, std, &shape);
        }
        for &id in &self.biases {
            let shape = self.params.value(id).shape().to_vec();
            self.params.get_mut(id).value = Tensor::zeros(&shape);
        }
    }
}

/// The causal mask for `t` positions: 1 above the diagonal (the future), where
/// `masked_fill(tril == 0, -inf)` writes -inf.
pub fn future_mask(t: usize) -> Tensor {
    Tensor::ones(&[t, t]).sub(&Tensor::tril_ones(t, t)) // (T, T)
}
