//! `Sequential`: layers applied in order; it knows the mode and gathers the parameters.

use super::Module;
use autograd::{ForwardPass, ParamId, Var};

/// A stack of layers (lecture 6, cell[7]).
pub struct Sequential {
    /// The layers, first to last.
    pub layers: Vec<Box<dyn Module>>,
}

impl Sequential {
    /// A stack of `layers`.
    pub fn new(layers: Vec<Box<dyn Module>>) -> Sequential {
        Sequential { layers }
    }

    /// The forward pass that keeps every layer's output (the lecture's `layer.out`),
    /// for the diagnostics and the shape walk-through. The last entry is the result.
    pub fn forward_traced<'g>(&mut self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Vec<Var<'g>> {
        let mut outs = Vec::with_capacity(self.layers.len());
        let mut x = x;
        for layer in &mut self.layers {
            x = layer.forward(pass, x);
            outs.push(x);
        }
        outs
    }
}

impl Module for Sequential {
    // ANCHOR: sequential
    fn forward<'g>(&mut self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let mut x = x;
        for layer in &mut self.layers {
            x = layer.forward(pass, x);
        }
        x
    }
    // ANCHOR_END: sequential

    fn parameters(&self) -> Vec<ParamId> {
        self.layers.iter().flat_map(|l| l.parameters()).collect()
    }

    fn set_training(&mut self, training: bool) {
        for layer in &mut self.layers {
            layer.set_training(training);
        }
    }

    fn name(&self) -> &'static str {
        "Sequential"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fixture::{assert_close, load, tensor};
    use crate::nn::{BatchNorm1d, Linear, Tanh};
    use autograd::Graph;
    #[allow(unused_imports)]
    use autograd::{ForwardPass, Init, Params};
    #[allow(unused_imports)]
    use tensor::rng::TorchGenerator;

    #[test]
    fn applies_layers_in_order_and_gathers_their_parameters() {
        let f = load("linear");
        let mut params = Params::new();
        let linear = Linear {
            weight: params.add("w", tensor(&f["w"], &[3, 5])),
            bias: Some(params.add("b", tensor(&f["b"], &[5]))),
        };
        let bn = BatchNorm1d::new(
            &mut Init::new(&mut params, &mut TorchGenerator::manual_seed(0)),
            "bn",
            5,
        );
        let mut model = Sequential::new(vec![Box::new(linear), Box::new(Tanh), Box::new(bn)]);
        assert_eq!(model.parameters().len(), 4);
        model.set_training(false);
        // In eval mode with fresh buffers the batch norm is y / sqrt(1 + eps): tanh(PyTorch's linear output) scaled.
        let graph = Graph::no_grad();
        let outs = model.forward_traced(
            &ForwardPass::eval(&graph, &params),
            graph.constant(tensor(&f["x"], &[4, 3])),
        );
        assert_close("linear", &outs[0].value(), &f["y"], 1e-5);
        let scale = 1.0 / (1.0f32 + 1e-5).sqrt();
        let want = tensor(&f["y"], &[4, 5]).tanh().mul_scalar(scale);
        let got = outs[2].value().to_vec();
        for (g, w) in got.iter().zip(want.to_vec()) {
            assert!((g - w).abs() < 1e-6, "{g} vs {w}");
        }
    }
}
