//! Matrix multiplication.

use crate::graph::Var;
use tensor::Tensor;

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
        // As PyTorch's `needs_input_grad`: no product for a constant left
        // operand (the lecture's one-hot inputs), whose gradient nobody reads.
        let a_needs_grad = self.requires_grad();
        self.graph.op(a.matmul(&b), &[self, other], move |grad| {
            let grad_a = if a_needs_grad {
                grad.matmul(&b.transpose(-1, -2)).sum_to_shape(a.shape())
            } else {
                Tensor::zeros(&[0])
            };
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

impl<'g> Var<'g> {
    // ANCHOR: linear_op
    /// `F.linear(x, w, b)`: `self @ wᵀ + b` for `self` of shape `(N, in)`, `w`
    /// `(out, in)` and `b` `(out,)`, as one op, as PyTorch's `addmm` is: the
    /// product before the bias is not kept. The same bits as
    /// `self.matmul(w.transpose(0, 1)) + b` (`tests/linear.rs`), whose rules
    /// its backward applies in turn: `matmul`'s, `transpose`'s and `add`'s.
    pub fn linear(self, weight: Var<'g>, bias: Option<Var<'g>>) -> Var<'g> {
        let (x, w) = (self.value(), weight.value());
        assert!(
            x.ndim() == 2 && w.ndim() == 2 && x.shape()[1] == w.shape()[1],
            "linear: x {:?} and weight {:?} must be (N, in) and (out, in)",
            x.shape(),
            w.shape()
        );
        if let Some(b) = bias {
            assert!(
                b.shape() == [w.shape()[0]],
                "linear: bias {:?} for a weight {:?} must be (out,)",
                b.shape(),
                w.shape()
            );
        }
        let w_t = w.transpose(0, 1); // (in, out)
        let has_bias = bias.is_some();
        let mut inputs = vec![self, weight];
        let out = match bias {
            Some(b) => {
                inputs.push(b);
                x.matmul(&w_t).add(&b.value()) // (N, out)
            }
            None => x.matmul(&w_t), // (N, out)
        };
        self.graph.op(out, &inputs, move |grad| {
            let dx = grad.matmul(&w_t.transpose(-1, -2)); // (N, in)
            let dw = x.transpose(-1, -2).matmul(grad).transpose(0, 1); // (out, in)
            let mut grads = vec![dx, dw];
            if has_bias {
                grads.push(grad.sum_to_shape(&[w_t.shape()[1]])); // (out,)
            }
            grads
        })
    }
    // ANCHOR_END: linear_op
}
