//! An f32 n-dimensional tensor with PyTorch's semantics, for lectures 2 to 9.
//!
//! `Tensor` wraps an [`ndarray::ArcArray`]: cloning is a reference-count bump, and a
//! write copies only when the buffer is shared. That lets the autograd tape keep
//! the values it needs for backward without copying every activation.
//!
//! Broadcasting follows PyTorch exactly: shapes are aligned from the right and
//! axes of size 1 stretch. A pair that does not broadcast panics with a message
//! that names both shapes.
//!
//! The [`rng`] module reproduces `torch.Generator().manual_seed(s)` and CPython's
//! `random`, so the lectures' seeded draws come out the same in Rust.
#![deny(missing_docs)]

pub mod attention;
pub mod bf16;
mod broadcast;
mod creation;
mod elementwise;
mod index;
mod matmul;
mod memory;
mod nn;
mod numeric;
mod pool;
mod reduce;
pub mod rng;
mod shape;
pub mod small_matmul;

pub use broadcast::{broadcast_shapes, ShapeError};
pub use elementwise::{
    non_finite_kind, parallel_fill, parallel_update, scale_in_place, sum_of_squares,
};
pub use matmul::{check_threads_env, max_threads, set_max_threads, threads_from_env};
pub use memory::keep_freed_memory;
pub use nn::{KeepMask, LayerNormStats};
pub use numeric::{
    erf, erfc_fast, exp_in_place, exp_shifted, exp_shifted_into, gelu_grad, gelu_grad_into,
    gelu_into, gelu_tanh, gelu_tanh_grad, gelu_tanh_grad_into, gelu_tanh_into, max_blocked,
    normal_cdf, normal_cdf_into, sum_f64_blocked, SimdPath,
};

use ndarray::{ArcArray, ArrayD, IxDyn};

/// An f32 tensor of any rank, stored row-major.
#[derive(Clone, PartialEq)]
pub struct Tensor {
    data: ArcArray<f32, IxDyn>,
}

impl Tensor {
    /// A tensor from row-major values and a shape. Panics if the counts differ.
    pub fn from_vec(values: Vec<f32>, shape: &[usize]) -> Tensor {
        let count: usize = shape.iter().product();
        assert!(
            values.len() == count,
            "from_vec: {} values do not fill shape {:?} ({} elements)",
            values.len(),
            shape,
            count
        );
        let array = ArrayD::from_shape_vec(IxDyn(shape), values).expect("row-major shape");
        Tensor {
            data: array.into_shared(),
        }
    }

    /// Wraps an ndarray array.
    pub fn from_array(array: ArrayD<f32>) -> Tensor {
        Tensor {
            data: array.into_shared(),
        }
    }

    /// A 0-d tensor holding one value.
    pub fn scalar(value: f32) -> Tensor {
        Tensor::from_vec(vec![value], &[])
    }

    /// The shape, outermost axis first.
    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }

    /// The number of axes.
    pub fn ndim(&self) -> usize {
        self.data.ndim()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The values in row-major order.
    pub fn to_vec(&self) -> Vec<f32> {
        self.data.iter().copied().collect()
    }

    /// The single value of a one-element tensor (`tensor.item()`).
    pub fn item(&self) -> f32 {
        assert!(
            self.len() == 1,
            "item() needs one element, the shape is {:?}",
            self.shape()
        );
        *self.data.iter().next().expect("one element")
    }

    /// A read-only ndarray view.
    pub fn view(&self) -> ndarray::ArrayViewD<'_, f32> {
        self.data.view()
    }

    /// The underlying shared array.
    pub fn array(&self) -> &ArcArray<f32, IxDyn> {
        &self.data
    }

    /// Whether no other tensor shares this one's buffer, so that dropping it
    /// frees the memory.
    pub fn is_unique(&self) -> bool {
        self.data.is_unique()
    }

    /// Whether the two tensors' elements overlap in memory: one is a view
    /// (a reshape, a transpose, a slice) of the other's buffer, or both are
    /// views of one buffer.
    pub fn shares_memory(&self, other: &Tensor) -> bool {
        match (self.address_range(), other.address_range()) {
            (Some(a), Some(b)) => a.start < b.end && b.start < a.end,
            _ => false,
        }
    }

    /// The addresses from the first to just past the last element, whatever
    /// the strides; `None` for an empty tensor.
    fn address_range(&self) -> Option<std::ops::Range<usize>> {
        if self.data.is_empty() {
            return None;
        }
        let (mut low, mut high) = (0isize, 0isize);
        for (&dim, &stride) in self.data.shape().iter().zip(self.data.strides()) {
            let reach = (dim as isize - 1) * stride;
            if reach < 0 {
                low += reach;
            } else {
                high += reach;
            }
        }
        let base = self.data.as_ptr() as isize;
        let size = std::mem::size_of::<f32>() as isize;
        Some((base + low * size) as usize..(base + (high + 1) * size) as usize)
    }

    /// A mutable view; copies the buffer first if another tensor shares it.
    pub fn view_mut(&mut self) -> ndarray::ArrayViewMutD<'_, f32> {
        self.data.view_mut()
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor{:?} {}", self.shape(), self.data)
    }
}
