//! Scaled dot-product attention a few batch rows at a time, forward and
//! backward, so the `(B, nh, T, T)` weights are never stored: what PyTorch's
//! `F.scaled_dot_product_attention` does for nanoGPT's `flash` branch, after
//! FlashAttention (Dao et al. 2022, arXiv:2205.14135): the forward keeps no
//! weights, and the backward recomputes them.
//!
//! The batch is worked on in chunks of at most 16 MiB of `(T, T)` weights,
//! which live only while their chunk is, so attention needs that much instead
//! of `B × nh × T²` floats for each layer kept for backward. Each chunk goes
//! through the arithmetic of the lecture's lines (`q @ kᵀ`, `· scale`,
//! `masked_fill`, `softmax`, dropout, `@ v`) and of their backward rules: the
//! products on the same `gemm` kernels, and scale, mask and softmax (and
//! their gradient) one pass per row with each op's roundings in its order,
//! so the numbers are the op-by-op version's, bit for bit (`autograd`'s
//! `tests/attention.rs`). Dropout on the weights takes the keep
//! mask the generator drew for the plain lines, held as one bit per weight
//! ([`KeepMask`]), so the video's heads, which drop attention weights, get
//! the fused op too. FlashAttention's tiles and online softmax would also
//! bound the `T²` of one pair; at the course's T ≤ 1024 it is at most 4 MiB.

use crate::{exp_in_place, parallel_fill, KeepMask, Tensor};
use ndarray::{Axis, Slice};
use std::ops::Range;

/// The most `(T, T)` weights held at once, in floats (16 MiB), unless one
/// batch row has more: a chunk this large is worked on as one batch, which keeps the products and
/// element-wise passes big enough to split across threads.
const CHUNK_FLOATS: usize = 1 << 22;

/// The scale nanoGPT uses, `1/√hs`, computed as the lecture computes it.
fn scale(hs: usize) -> f32 {
    (1.0 / (hs as f64).sqrt()) as f32
}

/// Dropout on the attention weights: the keep mask drawn for the whole
/// `(B, nh, T, T)` weights, and the probability of dropping one.
#[derive(Clone, Debug)]
pub struct WeightDropout {
    /// The keep mask, `(B, nh, T, T)`, as the plain lines' `dropout` draws it.
    pub keep: KeepMask,
    /// The drop probability.
    pub p: f32,
}

/// What the fused op computes: `dropout(softmax(mask(q kᵀ · scale))) v`.
#[derive(Clone, Debug)]
pub struct Attention {
    /// Query `i` sees keys `0..=i` only.
    pub causal: bool,
    /// The factor on `q kᵀ`.
    pub scale: f32,
    /// A sliding window: query `i` also sees no key before `i − window`
    /// (nanochat's `window_size=(window, 0)`), so `window + 1` keys at most.
    pub window: Option<usize>,
    /// Dropout on the weights, in training.
    pub dropout: Option<WeightDropout>,
}

/// The batch rows of each chunk: whole rows, at most [`CHUNK_FLOATS`]
/// weights (at least one row).
fn row_chunks(shape: &[usize]) -> Vec<Range<usize>> {
    let (b, per_row) = (shape[0], shape[1] * shape[2] * shape[2]);
    let rows = (CHUNK_FLOATS / per_row.max(1)).clamp(1, b.max(1));
    (0..b)
        .step_by(rows)
        .map(|first| first..(first + rows).min(b))
        .collect()
}

/// Rows `rows` of `x` along the batch axis: a view, no values copied, and
/// the products read the strides as they are.
fn rows_of(x: &Tensor, rows: &Range<usize>) -> Tensor {
    let mut chunk = x.data.clone(); // shares the values
    chunk.slice_axis_inplace(Axis(0), Slice::from(rows.clone()));
    Tensor { data: chunk } // (rows, nh, T, hs)
}

/// The chunks back into one `(B, nh, T, hs)` tensor: a single chunk as it is (made
/// contiguous), more copied slice by slice.
fn stack(chunks: Vec<Tensor>, shape: &[usize]) -> Tensor {
    if let [chunk] = &chunks[..] {
        return chunk.contiguous();
    }
    let mut values = Vec::with_capacity(shape.iter().product());
    for chunk in chunks {
        let chunk = chunk.contiguous();
        values.extend_from_slice(chunk.data.as_slice().expect("contiguous"));
    }
    Tensor::from_vec(values, shape)
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

impl Attention {
    /// nanoGPT's `F.scaled_dot_product_attention(q, k, v, is_causal)` in
    /// training without dropout: the scale `1/√hs`.
    pub fn scaled_dot_product(causal: bool, head_size: usize) -> Attention {
        Attention {
            causal,
            scale: scale(head_size),
            window: None,
            dropout: None,
        }
    }

    /// The keys query `i` of `t` sees: `lo..hi`.
    fn seen(&self, i: usize, t: usize) -> (usize, usize) {
        let hi = if self.causal { i + 1 } else { t };
        let lo = self.window.map_or(0, |w| i.saturating_sub(w));
        (lo, hi)
    }

    fn check_dropout(&self, q: &Tensor) {
        if let Some(dropout) = &self.dropout {
            let (s, t) = (q.shape(), q.shape()[2]);
            assert!(
                dropout.keep.shape() == [s[0], s[1], t, t],
                "attention: a keep mask of {:?} for weights of {:?}",
                dropout.keep.shape(),
                [s[0], s[1], t, t]
            );
        }
    }

    /// A chunk's weights, `softmax(q kᵀ · scale)` with the future masked:
    /// `(rows, nh, T, T)`. One pass per row does what `mul_scalar`,
    /// `masked_fill` and `softmax` do in three, rounding as they round.
    fn weights(&self, q: &Tensor, k: &Tensor) -> Tensor {
        let scores = q.matmul(&k.transpose(-2, -1)); // (rows, nh, T, T)
        let t = scores.shape()[3];
        let scores = scores.contiguous();
        let x = scores.data.as_slice().expect("contiguous");
        let mut att = vec![0f32; x.len()];
        if t > 0 {
            parallel_fill(&mut att, t, |start, piece| {
                for (r, (y, x)) in piece.chunks_mut(t).zip(x[start..].chunks(t)).enumerate() {
                    // The query's position: keys after it are masked when
                    // causal, and keys before its window when there is one.
                    let (lo, seen) = self.seen((start / t + r) % t, t);
                    // `· scale`, then `masked_fill(future, −∞)`.
                    for (j, (y, &x)) in y.iter_mut().zip(x).enumerate() {
                        *y = if lo <= j && j < seen {
                            x * self.scale
                        } else {
                            f32::NEG_INFINITY
                        };
                    }
                    // `softmax`: exp(x − max), summed in f64, times 1/sum.
                    let max = y.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    // A masked key's exp(−∞ − max) is exactly 0 when max is
                    // finite, and adding or scaling a 0 changes nothing: only
                    // the keys the query sees are computed (half the exps).
                    let live = if max.is_finite() { lo..seen } else { 0..t };
                    let seen_keys = &mut y[live.clone()];
                    for y in seen_keys.iter_mut() {
                        *y -= max;
                    }
                    exp_in_place(seen_keys); // `f32::exp`'s bits, several lanes at a time
                    let mut sum = 0f64;
                    for &y in seen_keys.iter() {
                        sum += y as f64;
                    }
                    let inverse = (1.0 / sum) as f32;
                    for y in y[live.clone()].iter_mut() {
                        *y *= inverse;
                    }
                    // 0 · inverse, as the full loop gave: NaN when a seen
                    // score was NaN (`max` skips NaN, so `live` is `seen`).
                    y[..live.start].fill(0.0 * inverse);
                    y[live.end..].fill(0.0 * inverse);
                }
            });
        }
        Tensor::from_vec(att, scores.shape()) // (rows, nh, T, T)
    }

    /// The scores' gradient from the weights' (`datt`), through softmax,
    /// `masked_fill` and `· scale`: `att ⊙ (datt − Σ datt ⊙ att)`, zero where
    /// masked, times the scale. One pass per row, rounding as the tape's ops
    /// (`mul`, `sum(-1)` in f64, `sub`, `mul`, `masked_fill`, `mul_scalar`).
    fn scores_grad(&self, att: &Tensor, datt: &Tensor) -> Tensor {
        let t = att.shape()[3];
        let (att, datt) = (att.contiguous(), datt.contiguous());
        let a = att.data.as_slice().expect("contiguous");
        let g = datt.data.as_slice().expect("contiguous");
        let mut dscores = vec![0f32; a.len()];
        if t > 0 {
            parallel_fill(&mut dscores, t, |start, piece| {
                let rows = a[start..].chunks(t).zip(g[start..].chunks(t));
                for (r, (d, (a, g))) in piece.chunks_mut(t).zip(rows).enumerate() {
                    let (lo, seen) = self.seen((start / t + r) % t, t);
                    let dot = g.iter().zip(a).map(|(&g, &a)| (g * a) as f64).sum::<f64>() as f32;
                    for (j, (d, (&a, &g))) in d.iter_mut().zip(a.iter().zip(g)).enumerate() {
                        let masked = if lo <= j && j < seen {
                            a * (g - dot)
                        } else {
                            0.0
                        };
                        *d = masked * self.scale;
                    }
                }
            });
        }
        Tensor::from_vec(dscores, att.shape()) // (rows, nh, T, T)
    }

    /// `x` (a chunk's weights or their gradient) through the dropout of the
    /// batch rows `rows`, if there is one.
    fn drop(&self, x: Tensor, rows: &Range<usize>) -> Tensor {
        match &self.dropout {
            Some(dropout) => {
                let per_row: usize = x.shape()[1..].iter().product();
                x.dropout_with_keep(&dropout.keep, rows.start * per_row, dropout.p)
                // (rows, nh, T, T)
            }
            None => x,
        }
    }

    /// The attention's output over `(B, nh, T, hs)` operands.
    pub fn forward(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Tensor {
        check("attention", q, &[k, v]);
        self.check_dropout(q);
        let ys = row_chunks(q.shape())
            .iter()
            .map(|rows| {
                let att = self.weights(&rows_of(q, rows), &rows_of(k, rows)); // (rows, nh, T, T)
                self.drop(att, rows).matmul(&rows_of(v, rows)) // (rows, nh, T, hs)
            })
            .collect();
        stack(ys, q.shape()) // (B, nh, T, hs)
    }

    /// The gradients `(dq, dk, dv)` given `dy`, with each chunk's weights
    /// recomputed and each op's backward rule as the tape applies it: `@ v`,
    /// dropout, softmax, `masked_fill`, `· scale`, `q @ kᵀ`.
    pub fn backward(&self, q: &Tensor, k: &Tensor, v: &Tensor, dy: &Tensor) -> [Tensor; 3] {
        check("attention backward", q, &[k, v, dy]);
        self.check_dropout(q);
        let mut grads: [Vec<Tensor>; 3] = Default::default();
        for rows in row_chunks(q.shape()) {
            let (q, k, v, dy) = (
                rows_of(q, &rows),
                rows_of(k, &rows),
                rows_of(v, &rows),
                rows_of(dy, &rows),
            );
            let att = self.weights(&q, &k); // (rows, nh, T, T)
            let dropped = self.drop(att.clone(), &rows); // (rows, nh, T, T)

            // y = dropped @ v
            let ddropped = dy.matmul(&v.transpose(-1, -2)); // (rows, nh, T, T)
            let dv = dropped.transpose(-1, -2).matmul(&dy); // (rows, nh, T, hs)

            // dropped = dropout(att): the same mask and scale
            let datt = self.drop(ddropped, &rows); // (rows, nh, T, T)

            // att = softmax(masked(scores · scale))
            let dscores = self.scores_grad(&att, &datt); // (rows, nh, T, T)

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
}
