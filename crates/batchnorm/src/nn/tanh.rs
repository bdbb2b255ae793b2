//! `Tanh`: the element-wise non-linearity, a layer without parameters.

use super::Module;
use autograd::{ForwardPass, Var};

/// `torch.tanh` as a layer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tanh;

impl Module for Tanh {
    // ANCHOR: tanh
    fn forward<'g>(&mut self, _pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        x.tanh()
    }
    // ANCHOR_END: tanh

    fn name(&self) -> &'static str {
        "Tanh"
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
        let f = load("tanh");
        let no_params = Params::new();
        let graph = Graph::new();
        let x = graph.leaf(tensor(&f["x"], &[2, 5]));
        let y = Tanh.forward(&ForwardPass::eval(&graph, &no_params), x);
        assert_close("y", &y.value(), &f["y"], 1e-6);
        let grads = (y * graph.constant(tensor(&f["r"], &[2, 5])))
            .sum_all()
            .backward();
        assert_close("dx", grads.of(x).unwrap(), &f["dx"], 1e-6);
    }
}
