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

use autograd::{Graph, ParamId, Params, Var};
use std::cell::RefCell;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// What a forward pass needs besides its input: one per training step,
/// evaluation or sampling step.
pub struct ForwardPass<'g> {
    /// The tape of this step (`Graph::no_grad()` for evaluation and sampling).
    pub graph: &'g Graph,
    /// The model's parameters.
    pub params: &'g Params,
    /// The generator for dropout masks; `None` is `model.eval()` (no dropout).
    pub dropout_rng: Option<&'g RefCell<TorchGenerator>>,
}

impl<'g> ForwardPass<'g> {
    /// A pass in training mode: dropout masks come from `rng` (`model.train()`).
    pub fn train(
        graph: &'g Graph,
        params: &'g Params,
        rng: &'g RefCell<TorchGenerator>,
    ) -> ForwardPass<'g> {
        ForwardPass {
            graph,
            params,
            dropout_rng: Some(rng),
        }
    }

    /// A pass in eval mode: no dropout (`model.eval()`).
    pub fn eval(graph: &'g Graph, params: &'g Params) -> ForwardPass<'g> {
        ForwardPass {
            graph,
            params,
            dropout_rng: None,
        }
    }

    /// A parameter as a leaf of this step's graph.
    pub fn param(&self, id: ParamId) -> Var<'g> {
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
