//! Matrix multiplication.

use crate::graph::Var;

impl<'g> Var<'g> {
    // ANCHOR: matmul
    /// `self @ other` for 2-D and batched operands: `(…, M, K) @ (K, N)` or `(…, M, K) @ (…, K, N)`.
    ///
    /// With `C = A @ B`: `dA = dC @ Bᵀ` and `dB = Aᵀ @ dC`, each summed back over
    /// any batch axes the operand was broadcast along.
    pub fn matmul(self, other: Var<'g>) -> Var<'g> {
        let (a, b) = (self.value(), other.value());
        assert!(
            a.ndim() >= 2 && b.ndim() >= 2,
            "matmul on the tape needs 2-D or batched operands, got {:?} @ {:?}",
            a.shape(),
            b.shape()
        );
        self.graph.op(a.matmul(&b), &[self, other], move |grad| {
            let grad_a = grad.matmul(&b.transpose(-1, -2)).sum_to_shape(a.shape());
            let grad_b = if b.ndim() == 2 && a.ndim() > 2 {
                // A weight shared by every row of a (B, T, K) input: its gradient sums
                // over all B·T rows, which is one (K, B·T) @ (B·T, N) product, not B
                // small products and a sum over them (as PyTorch folds it, too).
                let (k, n) = (b.shape()[0], b.shape()[1]);
                let rows = a.len() / k;
                a.reshape(&[rows, k])
                    .transpose(0, 1)
                    .matmul(&grad.reshape(&[rows, n]))
            } else {
                a.transpose(-1, -2).matmul(grad).sum_to_shape(b.shape())
            };
            vec![grad_a, grad_b]
        })
    }
    // ANCHOR_END: matmul
}
