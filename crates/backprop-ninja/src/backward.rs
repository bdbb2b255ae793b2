//! Exercise 1: the backward pass by hand, one small rule per atom of the forward.
//!
//! Each rule takes the forward values it needs and the gradient of what the atom
//! feeds into, and returns the atom's gradient. Where an atom feeds two later
//! atoms (counts, logits, bndiff, hprebn), its gradient is the sum of two rules'
//! contributions, the `+=` of the notebook. [`manual_backward`] chains them all.
//!
//! `d_x` always means ∂loss/∂x, with the shape of `x`.

use crate::forward::{AtomGrads, Atoms};
use crate::model::Weights;
use tensor::Tensor;

// ANCHOR: d_logprobs
/// `loss = -mean(logprobs[i, y_i])`: only the picked entries matter, each with weight −1/n.
pub fn d_logprobs(logprobs: &Tensor, yb: &[usize]) -> Tensor {
    let n = yb.len();
    let picked = Tensor::one_hot(yb, logprobs.shape()[1]); // (n, 27)
    picked.mul_scalar(-1.0 / n as f32)
}
// ANCHOR_END: d_logprobs

// ANCHOR: d_probs
/// `logprobs = log(probs)`: d log(x)/dx = 1/x.
pub fn d_probs(probs: &Tensor, d_logprobs: &Tensor) -> Tensor {
    probs.powf(-1.0).mul(d_logprobs)
}
// ANCHOR_END: d_probs

// ANCHOR: d_counts_sum_inv
/// `probs = counts * counts_sum_inv`, where `counts_sum_inv` (n, 1) was broadcast
/// across the 27 columns: its gradient sums over them.
pub fn d_counts_sum_inv(counts: &Tensor, d_probs: &Tensor) -> Tensor {
    counts.mul(d_probs).sum(1, true)
}
// ANCHOR_END: d_counts_sum_inv

// ANCHOR: d_counts_via_probs
/// `probs = counts * counts_sum_inv`: the first of the two paths into `counts`.
pub fn d_counts_via_probs(counts_sum_inv: &Tensor, d_probs: &Tensor) -> Tensor {
    counts_sum_inv.mul(d_probs)
}
// ANCHOR_END: d_counts_via_probs

// ANCHOR: d_counts_sum
/// `counts_sum_inv = counts_sum**-1`: d x⁻¹/dx = −x⁻².
pub fn d_counts_sum(counts_sum: &Tensor, d_counts_sum_inv: &Tensor) -> Tensor {
    counts_sum.powf(-2.0).neg().mul(d_counts_sum_inv)
}
// ANCHOR_END: d_counts_sum

// ANCHOR: d_counts_via_sum
/// `counts_sum = counts.sum(1)`: a sum hands its gradient to every term unchanged,
/// so the (n, 1) gradient is broadcast back over the row. The second path into `counts`.
pub fn d_counts_via_sum(counts: &Tensor, d_counts_sum: &Tensor) -> Tensor {
    Tensor::ones(counts.shape()).mul(d_counts_sum)
}
// ANCHOR_END: d_counts_via_sum

// ANCHOR: d_norm_logits
/// `counts = exp(norm_logits)`: exp is its own derivative, and `counts` holds it already.
pub fn d_norm_logits(counts: &Tensor, d_counts: &Tensor) -> Tensor {
    counts.mul(d_counts)
}
// ANCHOR_END: d_norm_logits

// ANCHOR: d_logit_maxes
/// `norm_logits = logits - logit_maxes`, the maxes broadcast along each row.
/// (Softmax does not depend on the shift, so this comes out ≈ 0.)
pub fn d_logit_maxes(d_norm_logits: &Tensor) -> Tensor {
    d_norm_logits.neg().sum(1, true)
}
// ANCHOR_END: d_logit_maxes

// ANCHOR: d_logits
/// `logits` feeds `norm_logits` directly (gradient passes through) and `logit_maxes`
/// through the max, which routes its gradient to the winning column of each row.
pub fn d_logits(logits: &Tensor, d_norm_logits: &Tensor, d_logit_maxes: &Tensor) -> Tensor {
    let winners = Tensor::one_hot(&logits.argmax(1), logits.shape()[1]); // (n, 27)
    d_norm_logits.add(&winners.mul(d_logit_maxes))
}
// ANCHOR_END: d_logits

// ANCHOR: linear_backward
/// `out = x @ w + b`: returns `(dx, dw, db)`. The shapes decide the formula:
/// `dx = dout @ wᵀ` (n, in), `dw = xᵀ @ dout` (in, out), and `b` was broadcast over
/// the batch, so `db` sums `dout` over it.
pub fn linear_backward(x: &Tensor, w: &Tensor, d_out: &Tensor) -> (Tensor, Tensor, Tensor) {
    let dx = d_out.matmul(&w.t());
    let dw = x.t().matmul(d_out);
    let db = d_out.sum(0, false);
    (dx, dw, db)
}
// ANCHOR_END: linear_backward

// ANCHOR: d_hpreact
/// `h = tanh(hpreact)`: d tanh(x)/dx = 1 − tanh(x)², and `h` is tanh(x).
pub fn d_hpreact(h: &Tensor, d_h: &Tensor) -> Tensor {
    h.mul(h).neg().add_scalar(1.0).mul(d_h)
}
// ANCHOR_END: d_hpreact

// ANCHOR: bn_affine_backward
/// `hpreact = bngain * bnraw + bnbias`: returns `(dbngain, dbnraw, dbnbias)`.
/// Gain and bias (1, n_hidden) were broadcast over the batch, so theirs sum over it.
pub fn bn_affine_backward(
    bngain: &Tensor,
    bnraw: &Tensor,
    d_hpreact: &Tensor,
) -> (Tensor, Tensor, Tensor) {
    let d_bngain = bnraw.mul(d_hpreact).sum(0, true);
    let d_bnraw = bngain.mul(d_hpreact);
    let d_bnbias = d_hpreact.sum(0, true);
    (d_bngain, d_bnraw, d_bnbias)
}
// ANCHOR_END: bn_affine_backward

// ANCHOR: d_bndiff_via_bnraw
/// `bnraw = bndiff * bnvar_inv`: the first of the two paths into `bndiff`.
pub fn d_bndiff_via_bnraw(bnvar_inv: &Tensor, d_bnraw: &Tensor) -> Tensor {
    bnvar_inv.mul(d_bnraw)
}
// ANCHOR_END: d_bndiff_via_bnraw

// ANCHOR: d_bnvar_inv
/// `bnraw = bndiff * bnvar_inv`, `bnvar_inv` (1, n_hidden) broadcast over the batch.
pub fn d_bnvar_inv(bndiff: &Tensor, d_bnraw: &Tensor) -> Tensor {
    bndiff.mul(d_bnraw).sum(0, true)
}
// ANCHOR_END: d_bnvar_inv

// ANCHOR: d_bnvar
/// `bnvar_inv = (bnvar + 1e-5)**-0.5`: d x^−½/dx = −½ x^−³ᐟ².
pub fn d_bnvar(bnvar: &Tensor, d_bnvar_inv: &Tensor) -> Tensor {
    bnvar
        .add_scalar(1e-5)
        .powf(-1.5)
        .mul_scalar(-0.5)
        .mul(d_bnvar_inv)
}
// ANCHOR_END: d_bnvar

// ANCHOR: d_bndiff2
/// `bnvar = 1/(n-1) * bndiff2.sum(0)`: every row gets the same share, 1/(n−1).
pub fn d_bndiff2(bndiff2: &Tensor, d_bnvar: &Tensor) -> Tensor {
    let n = bndiff2.shape()[0];
    Tensor::ones(bndiff2.shape())
        .mul_scalar(1.0 / (n - 1) as f32)
        .mul(d_bnvar)
}
// ANCHOR_END: d_bndiff2

// ANCHOR: d_bndiff_via_square
/// `bndiff2 = bndiff**2`: the second path into `bndiff`, d x²/dx = 2x.
pub fn d_bndiff_via_square(bndiff: &Tensor, d_bndiff2: &Tensor) -> Tensor {
    bndiff.mul_scalar(2.0).mul(d_bndiff2)
}
// ANCHOR_END: d_bndiff_via_square

// ANCHOR: d_bnmeani
/// `bndiff = hprebn - bnmeani`, the mean (1, n_hidden) broadcast over the batch.
pub fn d_bnmeani(d_bndiff: &Tensor) -> Tensor {
    d_bndiff.neg().sum(0, true)
}
// ANCHOR_END: d_bnmeani

// ANCHOR: d_hprebn
/// `hprebn` feeds `bndiff` directly and `bnmeani = 1/n * hprebn.sum(0)`, which
/// spreads its gradient evenly, 1/n to every row.
pub fn d_hprebn(d_bndiff: &Tensor, d_bnmeani: &Tensor) -> Tensor {
    let n = d_bndiff.shape()[0];
    let via_mean = Tensor::ones(d_bndiff.shape())
        .mul(d_bnmeani)
        .mul_scalar(1.0 / n as f32);
    d_bndiff.add(&via_mean)
}
// ANCHOR_END: d_hprebn

// ANCHOR: d_emb
/// `embcat = emb.view(n, 30)`: a view moves no numbers, so the gradient is reshaped back.
pub fn d_emb(emb_shape: &[usize], d_embcat: &Tensor) -> Tensor {
    d_embcat.reshape(emb_shape)
}
// ANCHOR_END: d_emb

// ANCHOR: d_c
/// `emb = C[Xb]`: row `Xb[k, j]` of `C` was copied into `emb[k, j]`, so that row's
/// gradient collects `demb[k, j]`, once for every time it was looked up.
///
/// The sums are kept in f64, as the tape's `index_rows` backward keeps them, so
/// that a row looked up thousands of times (a whole split) does not drift.
pub fn d_c(c: &Tensor, xb: &[usize], d_emb: &Tensor) -> Tensor {
    let (rows, width) = (c.shape()[0], c.shape()[1]);
    let demb = d_emb.to_vec(); // (n, 3, 10), row-major
    let mut dc = vec![0.0f64; rows * width];
    for (pos, &ix) in xb.iter().enumerate() {
        for d in 0..width {
            dc[ix * width + d] += demb[pos * width + d] as f64;
        }
    }
    Tensor::from_vec(dc.into_iter().map(|v| v as f32).collect(), &[rows, width])
}
// ANCHOR_END: d_c

// ANCHOR: manual_backward
/// The whole backward pass, rule after rule, from the loss back to `C`.
pub fn manual_backward(a: &Atoms, w: &Weights, xb: &[usize], yb: &[usize]) -> AtomGrads {
    let logprobs = d_logprobs(&a.logprobs, yb);
    let probs = d_probs(&a.probs, &logprobs);
    let counts_sum_inv = d_counts_sum_inv(&a.counts, &probs);
    let counts_sum = d_counts_sum(&a.counts_sum, &counts_sum_inv);
    let counts = d_counts_via_probs(&a.counts_sum_inv, &probs)
        .add(&d_counts_via_sum(&a.counts, &counts_sum));
    let norm_logits = d_norm_logits(&a.counts, &counts);
    let logit_maxes = d_logit_maxes(&norm_logits);
    let logits = d_logits(&a.logits, &norm_logits, &logit_maxes);
    let (h, w2, b2) = linear_backward(&a.h, &w.w2, &logits);
    let hpreact = d_hpreact(&a.h, &h);
    let (bngain, bnraw, bnbias) = bn_affine_backward(&w.bngain, &a.bnraw, &hpreact);
    let bnvar_inv = d_bnvar_inv(&a.bndiff, &bnraw);
    let bnvar = d_bnvar(&a.bnvar, &bnvar_inv);
    let bndiff2 = d_bndiff2(&a.bndiff2, &bnvar);
    let bndiff =
        d_bndiff_via_bnraw(&a.bnvar_inv, &bnraw).add(&d_bndiff_via_square(&a.bndiff, &bndiff2));
    let bnmeani = d_bnmeani(&bndiff);
    let hprebn = d_hprebn(&bndiff, &bnmeani);
    let (embcat, w1, b1) = linear_backward(&a.embcat, &w.w1, &hprebn);
    let emb = d_emb(a.emb.shape(), &embcat);
    let c = d_c(&w.c, xb, &emb);
    AtomGrads {
        logprobs,
        probs,
        counts_sum_inv,
        counts_sum,
        counts,
        norm_logits,
        logit_maxes,
        logits,
        h,
        w2,
        b2,
        hpreact,
        bngain,
        bnbias,
        bnraw,
        bnvar_inv,
        bnvar,
        bndiff2,
        bndiff,
        bnmeani,
        hprebn,
        embcat,
        w1,
        b1,
        emb,
        c,
    }
}
// ANCHOR_END: manual_backward
