//! Shape operations: the gradient is reshaped, transposed or sliced back.

use super::axis_index;
use crate::graph::Var;
use tensor::Tensor;

impl<'g> Var<'g> {
    /// A new shape with the same elements (`view` / `reshape`).
    pub fn reshape(self, shape: &[usize]) -> Var<'g> {
        let old = self.shape();
        let out = self.value().reshape(shape);
        self.graph
            .op(out, &[self], move |grad| vec![grad.reshape(&old)])
    }

    /// `view` with one axis given as -1 and inferred.
    pub fn view(self, shape: &[isize]) -> Var<'g> {
        let out = self.value().view_shape(shape);
        let new_shape = out.shape().to_vec();
        self.reshape(&new_shape)
    }

    /// Swaps two axes.
    pub fn transpose(self, a: isize, b: isize) -> Var<'g> {
        let out = self.value().transpose(a, b);
        self.graph
            .op(out, &[self], move |grad| vec![grad.transpose(a, b)])
    }

    /// Reorders the axes.
    pub fn permute(self, order: &[usize]) -> Var<'g> {
        let mut inverse = vec![0; order.len()];
        for (i, &o) in order.iter().enumerate() {
            inverse[o] = i;
        }
        let out = self.value().permute(order);
        self.graph
            .op(out, &[self], move |grad| vec![grad.permute(&inverse)])
    }

    /// Merges axes `start..=end` into one.
    pub fn flatten(self, start: isize, end: isize) -> Var<'g> {
        let shape = self.value().flatten(start, end).shape().to_vec();
        self.reshape(&shape)
    }

    /// Inserts an axis of size 1.
    pub fn unsqueeze(self, axis: isize) -> Var<'g> {
        let shape = self.value().unsqueeze(axis).shape().to_vec();
        self.reshape(&shape)
    }

    /// Removes an axis of size 1.
    pub fn squeeze(self, axis: isize) -> Var<'g> {
        let shape = self.value().squeeze(axis).shape().to_vec();
        self.reshape(&shape)
    }

    /// The slice `start..start + len` along `axis`; its gradient is zero-padded back.
    pub fn narrow(self, axis: isize, start: usize, len: usize) -> Var<'g> {
        let a = self.value();
        let shape = a.shape().to_vec();
        let ax = axis_index(axis, shape.len());
        self.graph
            .op(a.narrow(axis, start, len), &[self], move |grad| {
                // Zeros everywhere but the slice, which gets the gradient.
                let mut padded = ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&shape));
                padded
                    .slice_axis_mut(ndarray::Axis(ax), ndarray::Slice::from(start..start + len))
                    .assign(&grad.view());
                vec![Tensor::from_array(padded)]
            })
    }

    /// Joins variables along an existing axis.
    pub fn concat(vars: &[Var<'g>], axis: isize) -> Var<'g> {
        assert!(!vars.is_empty(), "concat needs at least one variable");
        let values: Vec<Tensor> = vars.iter().map(Var::value).collect();
        let ax = axis_index(axis, values[0].ndim());
        let sizes: Vec<usize> = values.iter().map(|v| v.shape()[ax]).collect();
        let out = Tensor::concat(&values.iter().collect::<Vec<_>>(), axis);
        vars[0].graph.op(out, vars, move |grad| {
            let mut offset = 0;
            sizes
                .iter()
                .map(|&n| {
                    let piece = grad.narrow(ax as isize, offset, n).contiguous();
                    offset += n;
                    piece
                })
                .collect()
        })
    }

    /// Stacks variables of one shape along a new axis.
    pub fn stack(vars: &[Var<'g>], axis: isize) -> Var<'g> {
        assert!(!vars.is_empty(), "stack needs at least one variable");
        let expanded: Vec<Var<'g>> = vars.iter().map(|v| v.unsqueeze(axis)).collect();
        let ndim = vars[0].shape().len() + 1;
        Var::concat(&expanded, axis_index(axis, ndim) as isize)
    }

    /// Splits into pieces of `size` along `axis` (the last may be shorter).
    pub fn split(self, size: usize, axis: isize) -> Vec<Var<'g>> {
        let n = self.shape()[axis_index(axis, self.shape().len())];
        (0..n)
            .step_by(size)
            .map(|start| self.narrow(axis, start, size.min(n - start)))
            .collect()
    }
}
