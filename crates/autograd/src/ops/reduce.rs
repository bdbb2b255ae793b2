//! Reductions: sums, means, maxima and variances over all, one or several axes.

use super::axis_index;
use crate::graph::Var;
use tensor::Tensor;

/// The shape a `keepdim = true` reduction over `axes` gives, so that a gradient
/// of the reduced shape broadcasts back over the reduced axes.
fn kept_shape(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .map(|(i, &n)| if axes.contains(&i) { 1 } else { n })
        .collect()
}

fn resolve(axes: &[isize], ndim: usize) -> Vec<usize> {
    axes.iter().map(|&a| axis_index(a, ndim)).collect()
}

impl<'g> Var<'g> {
    // ANCHOR: sum
    /// The sum over `axes`; each input element receives the output's gradient.
    pub fn sum_axes(self, axes: &[isize], keepdim: bool) -> Var<'g> {
        let a = self.value();
        let shape = a.shape().to_vec();
        let kept = kept_shape(&shape, &resolve(axes, shape.len()));
        self.graph
            .op(a.sum_axes(axes, keepdim), &[self], move |grad| {
                vec![grad.reshape(&kept).broadcast_to(&shape)]
            })
    }
    // ANCHOR_END: sum

    /// The sum over one axis.
    pub fn sum(self, axis: isize, keepdim: bool) -> Var<'g> {
        self.sum_axes(&[axis], keepdim)
    }

    /// The sum of all elements, as a 0-d tensor.
    pub fn sum_all(self) -> Var<'g> {
        let shape = self.shape();
        let out = self.value().sum_all();
        self.graph.op(out, &[self], move |grad| {
            vec![Tensor::full(&shape, grad.item())]
        })
    }

    /// The mean over `axes`; each input element receives `grad / n`.
    pub fn mean_axes(self, axes: &[isize], keepdim: bool) -> Var<'g> {
        let a = self.value();
        let shape = a.shape().to_vec();
        let resolved = resolve(axes, shape.len());
        let n: usize = resolved.iter().map(|&i| shape[i]).product();
        let kept = kept_shape(&shape, &resolved);
        self.graph
            .op(a.mean_axes(axes, keepdim), &[self], move |grad| {
                vec![grad
                    .reshape(&kept)
                    .broadcast_to(&shape)
                    .map(|g| g / n as f32)]
            })
    }

    /// The mean over one axis.
    pub fn mean(self, axis: isize, keepdim: bool) -> Var<'g> {
        self.mean_axes(&[axis], keepdim)
    }

    /// The mean of all elements, as a 0-d tensor.
    pub fn mean_all(self) -> Var<'g> {
        let shape = self.shape();
        let n = self.value().len() as f32;
        let out = self.value().mean_all();
        self.graph.op(out, &[self], move |grad| {
            vec![Tensor::full(&shape, grad.item() / n)]
        })
    }

    /// The maximum over one axis; the gradient goes to the (first) maximal element, as in PyTorch.
    pub fn max(self, axis: isize, keepdim: bool) -> Var<'g> {
        let a = self.value();
        let ax = axis_index(axis, a.ndim());
        let shape = a.shape().to_vec();
        let mut winners = ndarray::ArrayD::<f32>::zeros(shape.clone());
        for (lane, winner) in winners
            .lanes_mut(ndarray::Axis(ax))
            .into_iter()
            .zip(a.argmax(axis))
        {
            let mut lane = lane;
            lane[winner] = 1.0;
        }
        let winners = Tensor::from_array(winners);
        let kept = kept_shape(&shape, &[ax]);
        self.graph.op(a.max(axis, keepdim), &[self], move |grad| {
            vec![grad.reshape(&kept).mul(&winners)]
        })
    }

    // ANCHOR: var
    /// The variance over `axes`; `unbiased` divides by n − 1 (Bessel), as `torch.var` does by default.
    pub fn var_axes(self, axes: &[isize], keepdim: bool, unbiased: bool) -> Var<'g> {
        let a = self.value();
        let shape = a.shape().to_vec();
        let resolved = resolve(axes, shape.len());
        let n: usize = resolved.iter().map(|&i| shape[i]).product();
        let denominator = if unbiased { n as f32 - 1.0 } else { n as f32 };
        let centered = a.sub(&a.mean_axes(axes, true));
        let kept = kept_shape(&shape, &resolved);
        self.graph
            .op(a.var_axes(axes, keepdim, unbiased), &[self], move |grad| {
                // d var / d x_i = 2 (x_i − mean) / denominator; the mean's own dependence cancels.
                vec![centered
                    .mul(&grad.reshape(&kept))
                    .map(|g| 2.0 * g / denominator)]
            })
    }
    // ANCHOR_END: var

    /// The variance over one axis.
    pub fn var(self, axis: isize, keepdim: bool, unbiased: bool) -> Var<'g> {
        self.var_axes(&[axis], keepdim, unbiased)
    }

    /// The standard deviation over `axes`: `sqrt(var)`.
    pub fn std_axes(self, axes: &[isize], keepdim: bool, unbiased: bool) -> Var<'g> {
        self.var_axes(axes, keepdim, unbiased).sqrt()
    }

    /// The standard deviation over one axis.
    pub fn std(self, axis: isize, keepdim: bool, unbiased: bool) -> Var<'g> {
        self.std_axes(&[axis], keepdim, unbiased)
    }
}
