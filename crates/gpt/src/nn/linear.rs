//! `nn.Linear`: `y = x @ wᵀ + b`, for `x` of shape `(…, in)`; `w` is `(out, in)` as in PyTorch.

use super::{ForwardPass, Init};
use autograd::{ParamId, Var};

/// A fully connected layer.
#[derive(Clone, Debug)]
pub struct Linear {
    /// `(out, in)`.
    pub weight: ParamId,
    /// `(out,)`, if the layer has a bias.
    pub bias: Option<ParamId>,
}

impl Linear {
    /// `nn.Linear(fan_in, fan_out, bias)` with PyTorch's default init:
    /// `kaiming_uniform_(a=√5)` for the weight, which is U(−1/√fan_in, 1/√fan_in),
    /// then U(−1/√fan_in, 1/√fan_in) for the bias.
    pub fn new(init: &mut Init, name: &str, fan_in: usize, fan_out: usize, bias: bool) -> Linear {
        let bound = Linear::default_bound(fan_in);
        let w = init
            .rng
            .uniform(-bound as f32, bound as f32, &[fan_out, fan_in]);
        let weight = init.params.add(&format!("{name}.weight"), w);
        init.weights.push(weight);
        let bias = bias.then(|| {
            let bound = 1.0 / (fan_in as f64).sqrt();
            let b = init.rng.uniform(-bound as f32, bound as f32, &[fan_out]);
            let id = init.params.add(&format!("{name}.bias"), b);
            init.biases.push(id);
            id
        });
        Linear { weight, bias }
    }

    /// The bound of `kaiming_uniform_(a=√5)`, in the same float64 steps as
    /// `torch.nn.init`, so it rounds the same way: √3 · gain / √fan_in, which is 1/√fan_in.
    pub fn default_bound(fan_in: usize) -> f64 {
        let gain = (2.0f64 / (1.0 + 5.0f64.sqrt().powi(2))).sqrt();
        3.0f64.sqrt() * (gain / (fan_in as f64).sqrt())
    }

    // ANCHOR: linear
    /// `(…, in) -> (…, out)`. The leading axes are flattened first, so the
    /// product (and its weight gradient) is one tall matrix product. `linear`
    /// is `F.linear`, `x @ wᵀ + b` as one op (`autograd`'s `linear_op`): the
    /// product before the bias is not kept for backward.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let shape = x.shape();
        let fan_in = shape[shape.len() - 1];
        let rows = x.value().len() / fan_in.max(1);
        let w = pass.param(self.weight); // (out, in)
        let fan_out = w.shape()[0];
        let b = self.bias.map(|b| pass.param(b)); // (out,)
        let y = x.reshape(&[rows, fan_in]).linear(w, b); // (N, in) @ (in, out) + (out,) -> (N, out)
        let mut out_shape = shape;
        *out_shape.last_mut().expect("at least one axis") = fan_out;
        y.reshape(&out_shape) // (…, out)
    }
    // ANCHOR_END: linear
}
