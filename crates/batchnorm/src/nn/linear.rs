//! `Linear`: `y = x @ W + b`, for `x` of shape `(…, fan_in)`.
//!
//! The weight is drawn `randn(fan_in, fan_out) / sqrt(fan_in)` (lecture 4's
//! "kaiming" scale without the gain), the optional bias starts at zero.

use super::Module;
use autograd::{ForwardPass, Init, ParamId, Var};
use tensor::Tensor;

/// A fully connected layer (lecture 4, cell[13]).
#[derive(Clone, Debug)]
pub struct Linear {
    /// `(fan_in, fan_out)`.
    pub weight: ParamId,
    /// `(fan_out,)`, if the layer has one.
    pub bias: Option<ParamId>,
}

impl Linear {
    /// Registers `name.weight` (and `name.bias`), drawing the weight from `g`.
    pub fn new(init: &mut Init, name: &str, fan_in: usize, fan_out: usize, bias: bool) -> Linear {
        // `/ fan_in**0.5`: Python's double square root, rounded to f32 for the division.
        let scale = (fan_in as f64).sqrt() as f32;
        let weight = init.rng.randn(&[fan_in, fan_out]).map(|w| w / scale);
        let weight = init.params.add(&format!("{name}.weight"), weight);
        let bias = bias.then(|| {
            init.params
                .add(&format!("{name}.bias"), Tensor::zeros(&[fan_out]))
        });
        Linear { weight, bias }
    }
}

impl Module for Linear {
    // ANCHOR: linear
    fn forward<'g>(&mut self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let out = x.matmul(pass.param(self.weight)); // (…, fan_out)
        match self.bias {
            Some(b) => out + pass.param(b), // (…, fan_out)
            None => out,
        }
    }
    // ANCHOR_END: linear

    fn parameters(&self) -> Vec<ParamId> {
        std::iter::once(self.weight).chain(self.bias).collect()
    }

    fn name(&self) -> &'static str {
        "Linear"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fixture::{assert_close, load, tensor};
    use autograd::Graph;
    #[allow(unused_imports)]
    use autograd::{ForwardPass, Init, Params};
    #[allow(unused_imports)]
    use tensor::rng::TorchGenerator;

    #[test]
    fn forward_and_backward_match_pytorch() {
        let f = load("linear");
        let mut params = Params::new();
        let mut layer = Linear {
            weight: params.add("w", tensor(&f["w"], &[3, 5])),
            bias: Some(params.add("b", tensor(&f["b"], &[5]))),
        };
        let graph = Graph::new();
        let x = graph.leaf(tensor(&f["x"], &[4, 3]));
        let y = layer.forward(&ForwardPass::eval(&graph, &params), x);
        assert_close("y", &y.value(), &f["y"], 1e-5);
        let grads = (y * graph.constant(tensor(&f["r"], &[4, 5])))
            .sum_all()
            .backward();
        assert_close("dx", grads.of(x).unwrap(), &f["dx"], 1e-5);
        params.accumulate(&grads);
        assert_close(
            "dW",
            params.get(layer.weight).grad.as_ref().unwrap(),
            &f["dw"],
            1e-5,
        );
        assert_close(
            "db",
            params.get(layer.bias.unwrap()).grad.as_ref().unwrap(),
            &f["db"],
            1e-5,
        );
    }

    #[test]
    fn init_is_randn_over_root_fan_in() {
        let mut params = Params::new();
        let layer = Linear::new(
            &mut Init::new(&mut params, &mut TorchGenerator::manual_seed(1)),
            "l",
            4,
            3,
            false,
        );
        let raw = TorchGenerator::manual_seed(1).randn(&[4, 3]).to_vec();
        let w = params.value(layer.weight).to_vec();
        for (w, r) in w.iter().zip(raw) {
            assert_eq!(*w, r / 2.0);
        }
        assert_eq!(layer.parameters().len(), 1);
    }
}
