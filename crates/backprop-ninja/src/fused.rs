//! Exercises 2 and 3: the same gradients from one formula each, derived on paper.

use tensor::Tensor;

// ANCHOR: cross_entropy_backward
/// Exercise 2: `dlogits` of `F.cross_entropy(logits, Yb)` in one go.
///
/// For one row, loss = −log softmax(l)_y, and ∂loss/∂l_j = softmax(l)_j − [j = y].
/// The mean over the batch divides by n.
pub fn cross_entropy_backward(logits: &Tensor, yb: &[usize]) -> Tensor {
    let n = yb.len();
    let probs = logits.softmax(1); // (n, 27)
    let targets = Tensor::one_hot(yb, logits.shape()[1]); // (n, 27)
    probs.sub(&targets).map(|d| d / n as f32)
}
// ANCHOR_END: cross_entropy_backward

// ANCHOR: batchnorm_backward
/// Exercise 3: `dhprebn` through the whole batch norm in one go, given `dhpreact`.
///
/// With x̂ = (x − μ)/σ (σ² the unbiased variance + eps) and y = γ·x̂ + β, every x_i
/// moves μ and σ too; collecting the three paths gives
/// dx = γ/(nσ) · (n·dy − Σdy − n/(n−1)·x̂·Σ(dy·x̂)).
pub fn batchnorm_backward(
    bngain: &Tensor,
    bnvar_inv: &Tensor,
    bnraw: &Tensor,
    d_hpreact: &Tensor,
) -> Tensor {
    let n = d_hpreact.shape()[0] as f32;
    let scale = bngain.mul(bnvar_inv).map(|x| x / n); // (1, n_hidden)
    let sum_dy = d_hpreact.sum(0, false); // (n_hidden)
    let sum_dy_xhat = d_hpreact.mul(bnraw).sum(0, false); // (n_hidden)
    let inner = d_hpreact
        .mul_scalar(n)
        .sub(&sum_dy)
        .sub(&bnraw.mul_scalar(n / (n - 1.0)).mul(&sum_dy_xhat)); // (n, n_hidden)
    scale.mul(&inner)
}
// ANCHOR_END: batchnorm_backward
