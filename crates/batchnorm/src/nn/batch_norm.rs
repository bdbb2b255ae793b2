//! `BatchNorm1d`: normalise each feature over the batch, then scale and shift.
//!
//! `y = gamma * (x - mean) / sqrt(var + eps) + beta`, with the mean and the
//! **unbiased** variance (`x.var()`, as the lectures write it; `torch.nn.BatchNorm1d`
//! normalises with the biased one) taken over axis 0 of a `(B, C)` input, or
//! over axes `(0, 1)` of a `(B, T, C)` input: lecture 6's "fix bug in
//! batchnorm", which treats every position as one more example.
//!
//! In training mode the running mean and variance move towards the batch's by
//! `momentum`; they are buffers, not parameters. In evaluation mode the layer
//! uses them instead of the batch's statistics, so one example can be fed alone.

use super::Module;
use autograd::{ForwardPass, Init, ParamId, Var};
use tensor::Tensor;

/// Batch normalisation over the last axis (lecture 4, cell[13]; 3-D input from lecture 6, cell[7]).
#[derive(Clone, Debug)]
pub struct BatchNorm1d {
    /// Scale, `(dim,)`, starts at 1.
    pub gamma: ParamId,
    /// Shift, `(dim,)`, starts at 0.
    pub beta: ParamId,
    /// Buffer: running mean, `(dim,)`, starts at 0.
    pub running_mean: Tensor,
    /// Buffer: running (unbiased) variance, `(dim,)`, starts at 1.
    pub running_var: Tensor,
    /// Added to the variance before the square root (1e-5).
    pub eps: f32,
    /// Weight of the newest batch in the running statistics (0.1).
    pub momentum: f32,
    /// Batch statistics (true) or running statistics (false).
    pub training: bool,
    /// Lecture 6's bug, kept for its performance log: reduce over axis 0 only,
    /// so a `(B, T, C)` input gets separate statistics (and running buffers
    /// `(T, C)`) for every position instead of one set per channel.
    pub batch_axis_only: bool,
}

impl BatchNorm1d {
    /// The lecture's `BatchNorm1d(dim)`: eps 1e-5, momentum 0.1, training mode.
    pub fn new(init: &mut Init, name: &str, dim: usize) -> BatchNorm1d {
        BatchNorm1d {
            gamma: init
                .params
                .add(&format!("{name}.gamma"), Tensor::ones(&[dim])),
            beta: init
                .params
                .add(&format!("{name}.beta"), Tensor::zeros(&[dim])),
            running_mean: Tensor::zeros(&[dim]),
            running_var: Tensor::ones(&[dim]),
            eps: 1e-5,
            momentum: 0.1,
            training: true,
            batch_axis_only: false,
        }
    }

    /// The axes the statistics run over: the batch, and for 3-D input the positions too.
    fn batch_axes(&self, shape: &[usize]) -> &'static [isize] {
        match shape.len() {
            2 => &[0],
            3 if self.batch_axis_only => &[0],
            3 => &[0, 1],
            _ => panic!("BatchNorm1d: expected (B, C) or (B, T, C) input, got {shape:?}"),
        }
    }
}

impl Module for BatchNorm1d {
    // ANCHOR: batchnorm
    fn forward<'g>(&mut self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let shape = x.shape();
        let (xmean, xvar) = if self.training {
            let axes = self.batch_axes(&shape);
            (x.mean_axes(axes, true), x.var_axes(axes, true, true)) // (1, C) or (1, 1, C)
        } else {
            (
                pass.graph.constant(self.running_mean.clone()), // (C,)
                pass.graph.constant(self.running_var.clone()),  // (C,)
            )
        };
        let xhat = (x - xmean) / (xvar + self.eps).sqrt(); // normalise to unit variance
        let out = pass.param(self.gamma) * xhat + pass.param(self.beta);
        if self.training {
            // A buffer update, outside the graph (`with torch.no_grad()`). The
            // statistics drop their kept unit axes: (C,), or (T, C) with the bug.
            let reduced = self.batch_axes(&shape).len();
            let stat_shape = &xmean.shape()[reduced..];
            let keep = (1.0 - self.momentum as f64) as f32;
            self.running_mean = self
                .running_mean
                .mul_scalar(keep)
                .add(&xmean.value().reshape(stat_shape).mul_scalar(self.momentum));
            self.running_var = self
                .running_var
                .mul_scalar(keep)
                .add(&xvar.value().reshape(stat_shape).mul_scalar(self.momentum));
        }
        out
    }
    // ANCHOR_END: batchnorm

    fn parameters(&self) -> Vec<ParamId> {
        vec![self.gamma, self.beta]
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn name(&self) -> &'static str {
        "BatchNorm1d"
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

    fn check(name: &str) {
        let f = load(name);
        let shape: Vec<usize> = f["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let dim = *shape.last().unwrap();
        let mut params = Params::new();
        let mut bn = BatchNorm1d::new(
            &mut Init::new(&mut params, &mut TorchGenerator::manual_seed(0)),
            "bn",
            dim,
        );
        params.get_mut(bn.gamma).value = tensor(&f["gamma"], &[dim]);
        params.get_mut(bn.beta).value = tensor(&f["beta"], &[dim]);

        let graph = Graph::new();
        let x = graph.leaf(tensor(&f["x"], &shape));
        let y = bn.forward(&ForwardPass::eval(&graph, &params), x);
        assert_close("y", &y.value(), &f["y"], 1e-5);
        let grads = (y * graph.constant(tensor(&f["r"], &shape)))
            .sum_all()
            .backward();
        assert_close("dx", grads.of(x).unwrap(), &f["dx"], 1e-5);
        params.accumulate(&grads);
        assert_close(
            "dgamma",
            params.get(bn.gamma).grad.as_ref().unwrap(),
            &f["dgamma"],
            1e-5,
        );
        assert_close(
            "dbeta",
            params.get(bn.beta).grad.as_ref().unwrap(),
            &f["dbeta"],
            1e-5,
        );
        assert_close("running_mean", &bn.running_mean, &f["running_mean"], 1e-6);
        assert_close("running_var", &bn.running_var, &f["running_var"], 1e-6);

        // Evaluation mode: running statistics, buffers left alone.
        bn.set_training(false);
        let graph = Graph::no_grad();
        let y = bn.forward(
            &ForwardPass::eval(&graph, &params),
            graph.constant(tensor(&f["x_eval"], &shape)),
        );
        assert_close("y_eval", &y.value(), &f["y_eval"], 1e-5);
        assert_close(
            "running_mean after eval",
            &bn.running_mean,
            &f["running_mean"],
            1e-6,
        );
    }

    #[test]
    fn two_d_matches_pytorch() {
        check("batchnorm_2d");
    }

    #[test]
    fn three_d_reduces_over_batch_and_time_like_pytorch() {
        check("batchnorm_3d");
    }

    #[test]
    #[should_panic(expected = "expected (B, C) or (B, T, C) input, got [4]")]
    fn one_d_input_is_refused_with_its_shape() {
        let mut params = Params::new();
        let mut bn = BatchNorm1d::new(
            &mut Init::new(&mut params, &mut TorchGenerator::manual_seed(0)),
            "bn",
            4,
        );
        let graph = Graph::new();
        bn.forward(
            &ForwardPass::eval(&graph, &params),
            graph.constant(Tensor::zeros(&[4])),
        );
    }
}
