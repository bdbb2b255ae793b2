//! `nn.LayerNorm(dim)`: each position's vector normalised to mean 0 and variance 1
//! over its features, then scaled and shifted by learned gains and biases.

use super::{Fwd, Init};
use autograd::{ParamId, Var};
use tensor::Tensor;

/// Layer normalisation over the last axis, eps 1e-5.
#[derive(Clone, Debug)]
pub struct LayerNorm {
    /// `(dim,)`, ones at init.
    pub weight: ParamId,
    /// `(dim,)`, zeros at init; nanoGPT's `bias=False` leaves it out.
    pub bias: Option<ParamId>,
}

impl LayerNorm {
    /// `nn.LayerNorm(dim)`; draws nothing from the generator.
    pub fn new(init: &mut Init, name: &str, dim: usize, bias: bool) -> LayerNorm {
        let weight = init
            .params
            .add(&format!("{name}.weight"), Tensor::ones(&[dim]));
        let bias = bias.then(|| {
            init.params
                .add(&format!("{name}.bias"), Tensor::zeros(&[dim]))
        });
        LayerNorm { weight, bias }
    }

    /// `(…, dim) -> (…, dim)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        x.layer_norm(Some(f.p(self.weight)), self.bias.map(|b| f.p(b)), 1e-5)
    }
}
