//! The one layer convention of every `torch.nn`-style lecture (4, 6, 7, 9):
//! a layer is built with `Layer::new(init, name, …)` and run with
//! `layer.forward(pass, x)`.
//!
//! [`Init`] is what construction draws from: the parameter store and the one
//! generator, consumed in the order PyTorch's modules consume theirs, so a
//! model starts from the same numbers as the lecture's seeded PyTorch code.
//! [`ForwardPass`] is what `torch.nn` keeps implicitly during a forward pass:
//! the step's graph, the parameters, and whether dropout is on.

use crate::{Graph, ParamId, Params, Var};
use std::cell::RefCell;
use tensor::attention::WeightDropout;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// What a forward pass needs besides its input: one per training step,
/// evaluation or sampling step.
///
/// `'g` is the graph's lifetime, which the pass's outputs carry; `'p` is how
/// long the parameters are lent, which can end before the outputs are gone
/// (the update after `backward`).
pub struct ForwardPass<'g, 'p> {
    /// The tape of this step (`Graph::no_grad()` for evaluation and sampling).
    pub graph: &'g Graph,
    /// The model's parameters.
    pub params: &'p Params,
    /// The generator for dropout masks; `None` is `model.eval()` (no dropout).
    pub dropout_rng: Option<&'p RefCell<TorchGenerator>>,
    /// A forward hook on every dropout, as PyTorch's `register_forward_hook`
    /// on `nn.Dropout`: when set, each dropout's input is kept here, in call
    /// order. On nanoGPT's `attn_dropout` that input is the attention weights,
    /// which is how the runs page draws them without a second copy of the
    /// attention code.
    pub dropout_inputs: Option<&'p RefCell<Vec<Tensor>>>,
}

impl<'g, 'p> ForwardPass<'g, 'p> {
    /// A pass in training mode: dropout masks come from `rng` (`model.train()`).
    pub fn train(
        graph: &'g Graph,
        params: &'p Params,
        rng: &'p RefCell<TorchGenerator>,
    ) -> ForwardPass<'g, 'p> {
        ForwardPass {
            graph,
            params,
            dropout_rng: Some(rng),
            dropout_inputs: None,
        }
    }

    /// A pass in eval mode: no dropout (`model.eval()`).
    pub fn eval(graph: &'g Graph, params: &'p Params) -> ForwardPass<'g, 'p> {
        ForwardPass {
            graph,
            params,
            dropout_rng: None,
            dropout_inputs: None,
        }
    }

    /// A pass in eval mode that keeps every dropout's input in `kept`.
    pub fn eval_keeping_dropout_inputs(
        graph: &'g Graph,
        params: &'p Params,
        kept: &'p RefCell<Vec<Tensor>>,
    ) -> ForwardPass<'g, 'p> {
        ForwardPass {
            dropout_inputs: Some(kept),
            ..ForwardPass::eval(graph, params)
        }
    }

    /// A parameter as a leaf of this step's graph.
    pub fn param(&self, id: ParamId) -> Var<'g> {
        self.graph.param(self.params, id)
    }

    /// Calls a layer as Python calls `block(x)`: the values it made die when
    /// it returns, except its output and what backward keeps (see
    /// [`Graph::scope`]). The numbers do not change; the peak memory does.
    pub fn scope(&self, layer: impl FnOnce() -> Var<'g>) -> Var<'g> {
        self.graph.scope(layer)
    }

    /// Dropout on attention weights of `shape` inside the fused op
    /// ([`Var::attention`]): the keep mask [`ForwardPass::dropout`] would draw
    /// here, one bit per weight; `None` where it would draw nothing (eval
    /// mode, `p = 0`).
    pub fn weight_dropout(&self, p: f32, shape: &[usize]) -> Option<WeightDropout> {
        match self.dropout_rng {
            Some(rng) if p > 0.0 => Some(WeightDropout {
                keep: rng.borrow_mut().bernoulli_keep_bits(p, shape),
                p,
            }),
            _ => None,
        }
    }

    // ANCHOR: dropout
    /// `nn.Dropout(p)`: in training, zero each element with probability `p` and
    /// scale the rest by `1/(1-p)`; in eval, the identity.
    pub fn dropout(&self, x: Var<'g>, p: f32) -> Var<'g> {
        if let Some(kept) = self.dropout_inputs {
            kept.borrow_mut().push(x.value()); // the forward hook
        }
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
