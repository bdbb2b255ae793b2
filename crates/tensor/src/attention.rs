//! Scaled dot-product attention a few batch rows at a time, forward and
//! backward, so the `(B, nh, T, T)` weights are never stored: what PyTorch's
//! `F.scaled_dot_product_attention` does for nanoGPT's `flash` branch, after
//! FlashAttention (Dao et al. 2022, arXiv:2205.14135): the forward keeps no
//! weights, and the backward recomputes them.
//!
//! The batch is worked on in chunks of at most 16 MiB of `(T, T)` weights,
//! which live only while their chunk is, so attention needs that much instead
//! of `B × nh × T²` floats for each layer kept for backward. Each chunk goes
//! through the very ops of the lecture's lines (`q @ kᵀ`, `· scale`, `masked_fill`,
//! `softmax`, `@ v`) and of their backward rules, on the same `gemm` kernels,
//! so the numbers are the op-by-op version's, bit for bit (`autograd`'s
//! `tests/attention.rs`). FlashAttention's tiles and online softmax would also
//! bound the `T²` of one pair; at the course's T ≤ 1024 it is at most 4 MiB.

use crate::Tensor;
use ndarray::{Axis, Slice};

/// The most `(T, T)` weights held at once, in floats (16 MiB), unless one
/// batch row has more: a chunk this large is worked on as one batch, which keeps the products and
/// element-wise passes big enough to split across threads.
const CHUNK_FLOATS: usize = 1 << 22;

/// The scale, `1/√hs`, computed as the lecture computes it.
fn scale(hs: usize) -> f32 {
    (1.0 / (hs as f64).sqrt()) as f32
}

/// `(B, nh, T, hs)` → chunks of whole batch rows, each `(rows, nh, T, hs)`,
/// holding at most [`CHUNK_FLOATS`] weights (at least one row). Views: no
/// values are copied, and the products read the strides as they are.
fn chunks(x: &Tensor) -> Vec<Tensor> {
    let s = x.shape();
    let (b, per_row) = (s[0], s[1] * s[2] * s[2]);
    let rows = (CHUNK_FLOATS / per_row.max(1)).clamp(1, b.max(1));
    (0..b)
        .step_by(rows)
        .map(|first| {
            let mut chunk = x.data.clone(); // shares the values
            chunk.slice_axis_inplace(Axis(0), Slice::from(first..(first + rows).min(b)));
            Tensor { data: chunk } // (rows, nh, T, hs)
        })
        .collect()
}

/// The chunks back into one `(B, nh, T, hs)` tensor.
fn stack(chunks: Vec<Tensor>, shape: &[usize]) -> Tensor {
    let mut values = Vec::with_capacity(shape.iter().product());
    for chunk in chunks {
        values.extend(chunk.data.iter());
    }
    Tensor::from_vec(values, shape)
}

/// A chunk's weights, `softmax(q kᵀ · scale)` with the future masked: `(rows, nh, T, T)`.
fn weights(q: &Tensor, k: &Tensor, future: Option<&Tensor>) -> Tensor {
    let hs = q.shape()[3];
    let att = q.matmul(&k.transpose(-2, -1)).mul_scalar(scale(hs)); // (rows, nh, T, T)
    let att = match future {
        Some(mask) => att.masked_fill(mask, f32::NEG_INFINITY), // (rows, nh, T, T)
        None => att,
    };
    att.softmax(-1) // (rows, nh, T, T)
}

/// `1` above the diagonal: the positions a causal query may not see.
fn future(t: usize) -> Tensor {
    Tensor::ones(&[t, t]).sub(&Tensor::tril_ones(t, t)) // (T, T)
}

fn check(what: &str, q: &Tensor, others: &[&Tensor]) {
    assert!(
        q.ndim() == 4 && others.iter().all(|x| x.shape() == q.shape()),
        "{what}: q, k, v (and dy) must share one (B, nh, T, hs) shape, got {:?} and {:?}",
        q.shape(),
        others
            .iter()
            .map(|x| x.shape().to_vec())
            .collect::<Vec<_>>()
    );
}

/// `softmax(q kᵀ / √hs) v` over `(B, nh, T, hs)` operands, query `i` seeing
/// keys `0..=i` when `causal`.
pub fn scaled_dot_product_attention(q: &Tensor, k: &Tensor, v: &Tensor, causal: bool) -> Tensor {
    check("scaled_dot_product_attention", q, &[k, v]);
    let mask = causal.then(|| future(q.shape()[2]));
    let ys = (chunks(q).iter().zip(chunks(k)).zip(chunks(v)))
        .map(|((q, k), v)| weights(q, &k, mask.as_ref()).matmul(&v)) // (rows, nh, T, hs)
        .collect();
    stack(ys, q.shape()) // (B, nh, T, hs)
}

/// The gradients `(dq, dk, dv)` of [`scaled_dot_product_attention`] given
/// `dy`, with each chunk's weights recomputed and each op's backward rule as
/// the tape applies it: `@ v`, softmax, `masked_fill`, `· scale`, `q @ kᵀ`.
pub fn scaled_dot_product_attention_backward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    dy: &Tensor,
    causal: bool,
) -> [Tensor; 3] {
    check("scaled_dot_product_attention_backward", q, &[k, v, dy]);
    let mask = causal.then(|| future(q.shape()[2]));
    let scale = scale(q.shape()[3]);
    let mut grads: [Vec<Tensor>; 3] = Default::default();
    for (((q, k), v), dy) in chunks(q)
        .iter()
        .zip(chunks(k))
        .zip(chunks(v))
        .zip(chunks(dy))
    {
        let att = weights(q, &k, mask.as_ref()); // (rows, nh, T, T)
                                                 // y = att @ v
        let datt = dy.matmul(&v.transpose(-1, -2)); // (rows, nh, T, T)
        let dv = att.transpose(-1, -2).matmul(&dy); // (rows, nh, T, hs)
                                                    // att = softmax(scores): d = att ⊙ (datt − Σ datt ⊙ att)
        let dot = datt.mul(&att).sum(-1, true); // (rows, nh, T, 1)
        let dscores = att.mul(&datt.sub(&dot)); // (rows, nh, T, T)
        let dscores = match &mask {
            Some(mask) => dscores.masked_fill(mask, 0.0), // (rows, nh, T, T)
            None => dscores,
        };
        let dscores = dscores.mul_scalar(scale); // (rows, nh, T, T)
                                                 // scores = q @ kᵀ
        let k_t = k.transpose(-2, -1); // (rows, nh, hs, T)
        let dq = dscores.matmul(&k_t.transpose(-1, -2)); // (rows, nh, T, hs)
        let dk = q.transpose(-1, -2).matmul(&dscores).transpose(-2, -1); // (rows, nh, T, hs)
        for (all, grad) in grads.iter_mut().zip([dq, dk, dv]) {
            all.push(grad);
        }
    }
    grads.map(|chunks| stack(chunks, q.shape()))
}
