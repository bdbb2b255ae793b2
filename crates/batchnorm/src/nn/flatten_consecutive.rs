//! `FlattenConsecutive(n)`: concatenate each `n` neighbouring positions' vectors.
//!
//! `(B, T, C)` becomes `(B, T/n, C·n)`: a plain view, because the `n`
//! neighbours' vectors already lie one after another in memory. When a single
//! position is left the axis is dropped, giving `(B, C·n)`. Stacking these with
//! `Linear` layers builds lecture 6's tree: pairs of characters, pairs of pairs, …

use super::Module;
use autograd::{ForwardPass, Var};

/// Lecture 6's hierarchical merge (cell[7]).
#[derive(Clone, Copy, Debug)]
pub struct FlattenConsecutive {
    /// How many neighbouring positions merge into one.
    pub n: usize,
}

impl FlattenConsecutive {
    /// Merges `n` neighbours.
    pub fn new(n: usize) -> FlattenConsecutive {
        FlattenConsecutive { n }
    }
}

impl Module for FlattenConsecutive {
    // ANCHOR: flatten_consecutive
    fn forward<'g>(&mut self, _pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let shape = x.shape();
        let [b, t, c] = shape[..] else {
            panic!("FlattenConsecutive: expected (B, T, C) input, got {shape:?}");
        };
        assert!(
            t % self.n == 0,
            "FlattenConsecutive({}): T = {t} of {shape:?} is not a multiple of {}",
            self.n,
            self.n
        );
        if t / self.n == 1 {
            x.reshape(&[b, c * self.n]) // (B, C·n)
        } else {
            x.reshape(&[b, t / self.n, c * self.n]) // (B, T/n, C·n)
        }
    }
    // ANCHOR_END: flatten_consecutive

    fn name(&self) -> &'static str {
        "FlattenConsecutive"
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
    fn merges_neighbours_like_pytorch_view() {
        let f = load("flatten_consecutive");
        let no_params = Params::new();
        let graph = Graph::new();
        let x = graph.leaf(tensor(&f["x"], &[2, 4, 3]));
        let y = FlattenConsecutive::new(2).forward(&ForwardPass::eval(&graph, &no_params), x);
        assert_eq!(y.shape(), vec![2, 2, 6]);
        assert_close("y", &y.value(), &f["y"], 0.0);
        // One position left: the time axis goes, (2, 1, 12) becomes (2, 12).
        let z = FlattenConsecutive::new(2).forward(
            &ForwardPass::eval(&graph, &no_params),
            y.reshape(&[2, 2, 6]),
        );
        assert_eq!(z.shape(), vec![2, 12]);
        // A reshape routes each gradient back to the element it came from.
        let grads = (z * 2.0).sum_all().backward();
        assert!(grads.of(x).unwrap().to_vec().iter().all(|&g| g == 2.0));
    }

    #[test]
    #[should_panic(expected = "T = 3 of [2, 3, 4] is not a multiple of 2")]
    fn odd_lengths_are_refused() {
        let no_params = Params::new();
        let graph = Graph::new();
        let x = graph.constant(tensor::Tensor::zeros(&[2, 3, 4]));
        FlattenConsecutive::new(2).forward(&ForwardPass::eval(&graph, &no_params), x);
    }
}
