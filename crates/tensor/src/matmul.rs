//! Matrix products with `torch.matmul`'s rules: 2-D products, batched products
//! whose batch axes broadcast, and 1-D operands promoted to a row (left) or a
//! column (right) and removed again afterwards.
//!
//! The arithmetic is `matrixmultiply`'s sgemm through ndarray's `general_mat_mul`,
//! which reads any strides, so transposed operands are never copied.

use crate::{broadcast_shapes, Tensor};
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayD, ArrayView2, ArrayViewD, ArrayViewMut2, Axis, Ix2, IxDyn};

impl Tensor {
    /// `self @ other` (`torch.matmul`). Shapes: `(M,K)@(K,N)`, `(…,M,K)@(K,N)`,
    /// `(…,M,K)@(…,K,N)` with broadcast batch axes, and 1-D on either side.
    /// Panics naming both shapes if the inner sizes or batch axes disagree.
    pub fn matmul(&self, other: &Tensor) -> Tensor {
        assert!(
            self.ndim() >= 1 && other.ndim() >= 1,
            "matmul: cannot multiply {:?} by {:?}: 0-d operand",
            self.shape(),
            other.shape()
        );
        let left_vector = self.ndim() == 1;
        let right_vector = other.ndim() == 1;
        let a = if left_vector {
            self.unsqueeze(0)
        } else {
            self.clone()
        };
        let b = if right_vector {
            other.unsqueeze(-1)
        } else {
            other.clone()
        };
        let (ra, rb) = (a.ndim(), b.ndim());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        assert!(
            k == k2,
            "matmul: cannot multiply {:?} by {:?}: inner sizes {k} and {k2} differ",
            self.shape(),
            other.shape()
        );
        let batch =
            broadcast_shapes(&a.shape()[..ra - 2], &b.shape()[..rb - 2]).unwrap_or_else(|_| {
                panic!(
                    "matmul: cannot multiply {:?} by {:?}: batch axes do not broadcast",
                    self.shape(),
                    other.shape()
                )
            });

        let mut out_shape = batch.clone();
        out_shape.extend([m, n]);
        let mut out = ArrayD::<f32>::zeros(IxDyn(&out_shape));
        if rb == 2 {
            // A stack of matrices times one matrix is one tall product: (B·M, K) @ (K, N).
            let rows = a.reshape(&[batch.iter().product::<usize>() * m, k]);
            let rows = rows.data.view().into_dimensionality::<Ix2>().expect("2-D");
            let b2 = b.data.view().into_dimensionality::<Ix2>().expect("2-D");
            let total_rows = rows.nrows();
            let mut c = out
                .view_mut()
                .into_shape_with_order((total_rows, n))
                .expect("fresh standard layout");
            gemm(&rows, &b2, &mut c);
        } else {
            let mut a_shape = batch.clone();
            a_shape.extend([m, k]);
            let mut b_shape = batch.clone();
            b_shape.extend([k, n]);
            // Broadcast views repeat an operand along batch axes without copying it.
            let av = a.data.broadcast(IxDyn(&a_shape)).expect("checked batch");
            let bv = b.data.broadcast(IxDyn(&b_shape)).expect("checked batch");
            let count: usize = batch.iter().product();
            let out_values = out.as_slice_mut().expect("fresh standard layout");
            for (i, chunk) in out_values
                .chunks_mut((m * n).max(1))
                .take(count)
                .enumerate()
            {
                let a2 = matrix_at(&av, &batch, i);
                let b2 = matrix_at(&bv, &batch, i);
                let mut c = ArrayViewMut2::from_shape((m, n), chunk).expect("m·n values");
                gemm(&a2, &b2, &mut c);
            }
        }

        let mut result = Tensor::from_array(out);
        let last = result.ndim() as isize - 1;
        if right_vector {
            result = result.squeeze(last);
        }
        if left_vector {
            result = result.squeeze(last - 1);
        }
        result
    }
}

/// `c = a @ b`.
fn gemm(a: &ArrayView2<f32>, b: &ArrayView2<f32>, c: &mut ArrayViewMut2<f32>) {
    general_mat_mul(1.0, a, b, 0.0, c);
}

/// The matrix at flat batch position `index` (row-major over `batch`).
fn matrix_at<'a>(
    view: &ArrayViewD<'a, f32>,
    batch: &[usize],
    mut index: usize,
) -> ArrayView2<'a, f32> {
    let mut m = view.clone();
    let mut coords = vec![0; batch.len()];
    for (c, &d) in coords.iter_mut().zip(batch).rev() {
        *c = index % d;
        index /= d;
    }
    for c in coords {
        m = m.index_axis_move(Axis(0), c);
    }
    m.into_dimensionality::<Ix2>()
        .expect("2-D after the batch axes")
}
