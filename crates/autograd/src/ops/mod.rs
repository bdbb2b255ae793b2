//! The operations of [`Var`](crate::Var), each forward next to its backward rule.
//!
//! A rule receives `grad`, the gradient of the loss with respect to the op's
//! output, and returns the gradient with respect to each input, in order. Inputs
//! that were broadcast get their gradient summed back to their own shape
//! (`sum_to_shape`): broadcasting copies a value, so the copies' gradients add up.

mod elementwise;
mod index;
mod matmul;
mod nn;
mod reduce;
mod shape;

/// PyTorch's negative axes: -1 is the last axis.
pub(crate) fn axis_index(axis: isize, ndim: usize) -> usize {
    let resolved = if axis < 0 { axis + ndim as isize } else { axis };
    assert!(
        (0..ndim as isize).contains(&resolved),
        "axis {axis} is out of range for a tensor with {ndim} axes"
    );
    resolved as usize
}
