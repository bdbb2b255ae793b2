//! Fused neural-net ops: softmax, log-softmax, cross-entropy, layer norm, dropout.
//!
//! Each could be written from the primitives above (lecture 5 does exactly that),
//! but the fused backward is shorter, faster and numerically kinder.

use crate::graph::Var;
use tensor::attention::Attention;
use tensor::rng::TorchGenerator;
use tensor::{KeepMask, Tensor};

impl<'g> Var<'g> {
    /// Softmax along `axis`, computed as `exp(x - max) / sum`.
    pub fn softmax(self, axis: isize) -> Var<'g> {
        let out = self.value().softmax(axis);
        let s = out.clone();
        self.graph.op(out, &[self], move |grad| {
            // dx = s ⊙ (g − Σ g⊙s)
            let dot = grad.mul(&s).sum(axis, true);
            vec![s.mul(&grad.sub(&dot))]
        })
    }

    /// Log-softmax along `axis`.
    pub fn log_softmax(self, axis: isize) -> Var<'g> {
        let out = self.value().log_softmax(axis);
        let probs = out.exp();
        self.graph.op(out, &[self], move |grad| {
            // dx = g − softmax ⊙ Σ g
            vec![grad.sub(&probs.mul(&grad.sum(axis, true)))]
        })
    }

    // ANCHOR: cross_entropy
    /// `F.cross_entropy(logits, targets)`: the mean negative log-likelihood of the
    /// targets under softmax(logits), for logits of shape (N, C).
    ///
    /// Its gradient is the lecture-5 result: `(softmax(logits) − one_hot(targets)) / N`.
    pub fn cross_entropy(self, targets: &[usize]) -> Var<'g> {
        let logits = self.value();
        assert_eq!(
            logits.ndim(),
            2,
            "cross_entropy expects logits (N, C), got {:?}",
            logits.shape()
        );
        let n = logits.shape()[0];
        assert_eq!(
            targets.len(),
            n,
            "cross_entropy: {n} rows of logits but {} targets",
            targets.len()
        );
        let out = logits.cross_entropy(targets);
        let targets = targets.to_vec();
        self.graph.op(out, &[self], move |grad| {
            // softmax − one_hot, in the softmax's own buffer: the one-hot
            // touches one entry per row, so it is never built (for GPT-2's
            // 50,304 classes it would be as large as the logits).
            let mut dlogits = logits.softmax(-1); // (N, C)
            let scale = grad.item();
            let mut view = dlogits.view_mut();
            for (mut row, &target) in view.outer_iter_mut().zip(&targets) {
                row[target] -= 1.0;
            }
            view.mapv_inplace(|d| d / n as f32 * scale);
            vec![dlogits]
        })
    }
    // ANCHOR_END: cross_entropy

    /// Layer norm over the last axis: `(x − mean) / sqrt(var + eps) * weight + bias`,
    /// with the biased variance, as `nn.LayerNorm`.
    ///
    /// The same numbers as [`Var::layer_norm_plain`], bit for bit
    /// (`tests/layer_norm.rs`), in fewer passes: the normalised rows and their
    /// `1/std` come from one kernel, and backward's `dx` from another, instead
    /// of some ten element-wise ops and their temporaries each way.
    pub fn layer_norm(self, weight: Option<Var<'g>>, bias: Option<Var<'g>>, eps: f32) -> Var<'g> {
        let x = self.value();
        if x.ndim() < 2 || x.is_empty() {
            return self.layer_norm_plain(weight, bias, eps);
        }
        let width = x.shape()[x.ndim() - 1];
        let stats = row_stats(&x, eps); // (mean, rstd) per row
        let mut out = normalized(&x, &stats); // (…, C)
        let mut inputs = vec![self];
        if let Some(w) = weight {
            out = out.mul(&w.value());
            inputs.push(w);
        }
        if let Some(b) = bias {
            out = out.add(&b.value());
            inputs.push(b);
        }
        let w_value = weight.map(|w| w.value());
        let (has_w, has_b) = (weight.is_some(), bias.is_some());
        self.graph.op(out, &inputs, move |grad| {
            // x̂ again from x and the row statistics, to the bit: the input is
            // kept anyway, a second (…, C) copy for backward need not be.
            let xhat = normalized(&x, &stats); // (…, C)
            let dxhat = match &w_value {
                Some(w) => grad.mul(w),
                None => grad.contiguous(),
            };
            let rstd = stats.rstd(xhat.shape());
            let mut grads = vec![normalize_rows_backward(&dxhat, &xhat, &rstd)];
            if has_w {
                grads.push(grad.mul(&xhat).sum_to_shape(&[width]));
            }
            if has_b {
                grads.push(grad.sum_to_shape(&[width]));
            }
            grads
        })
    }

    // ANCHOR: layer_norm
    /// Layer norm over the last axis, op by op: `(x − mean) / sqrt(var + eps) *
    /// weight + bias`, with the biased variance, as `nn.LayerNorm`.
    /// [`Var::layer_norm`] computes the same bits in fewer passes.
    pub fn layer_norm_plain(
        self,
        weight: Option<Var<'g>>,
        bias: Option<Var<'g>>,
        eps: f32,
    ) -> Var<'g> {
        let x = self.value();
        let d = *x
            .shape()
            .last()
            .expect("layer_norm needs at least one axis") as f32;
        let centered = x.sub(&x.mean(-1, true));
        let rstd = centered
            .mul(&centered)
            .mean(-1, true)
            .add_scalar(eps)
            .sqrt()
            .map(|s| 1.0 / s);
        let xhat = centered.mul(&rstd);
        let mut out = xhat.clone();
        let mut inputs = vec![self];
        if let Some(w) = weight {
            out = out.mul(&w.value());
            inputs.push(w);
        }
        if let Some(b) = bias {
            out = out.add(&b.value());
            inputs.push(b);
        }
        let w_value = weight.map(|w| w.value());
        let (has_w, has_b) = (weight.is_some(), bias.is_some());
        self.graph.op(out, &inputs, move |grad| {
            let dxhat = match &w_value {
                Some(w) => grad.mul(w),
                None => grad.clone(),
            };
            // dx = rstd/D · (D·dxhat − Σdxhat − xhat·Σ(dxhat⊙xhat))
            let sum_dxhat = dxhat.sum(-1, true);
            let sum_dxhat_xhat = dxhat.mul(&xhat).sum(-1, true);
            let dx = dxhat
                .mul_scalar(d)
                .sub(&sum_dxhat)
                .sub(&xhat.mul(&sum_dxhat_xhat))
                .mul(&rstd)
                .map(|v| v / d);
            let mut grads = vec![dx];
            let width = [d as usize];
            if has_w {
                grads.push(grad.mul(&xhat).sum_to_shape(&width));
            }
            if has_b {
                grads.push(grad.sum_to_shape(&width));
            }
            grads
        })
    }
    // ANCHOR_END: layer_norm

    /// Dropout with a given keep mask (0/1): `x · mask / (1 − p)`, rounded as PyTorch rounds it.
    pub fn dropout_with_mask(self, keep_mask: &Tensor, p: f32) -> Var<'g> {
        let out = self.value().dropout_with_mask(keep_mask, p);
        // Kept as a bit per element, as PyTorch keeps a bool mask.
        let mask = KeepMask::pack(keep_mask);
        // The op is linear in x: the gradient takes the same mask and scale.
        self.graph.op(out, &[self], move |grad| {
            vec![grad.dropout_with_mask(&mask.unpack(), p)]
        })
    }

    /// `F.dropout(x, p, training=True)`: the keep mask is drawn from `gen` as
    /// PyTorch draws it (`TorchGenerator::bernoulli_keep_mask`).
    pub fn dropout(self, p: f32, gen: &mut TorchGenerator) -> Var<'g> {
        // The draws of `bernoulli_keep_mask`, a bit each: the same mask.
        let keep = gen.bernoulli_keep_bits(p, &self.shape());
        let out = self.value().dropout_with_keep(&keep, 0, p);
        self.graph.op(out, &[self], move |grad| {
            vec![grad.dropout_with_keep(&keep, 0, p)]
        })
    }
}

/// The sum of a row in f64, rounded to f32: what `sum(-1)` and `mean(-1)`
/// compute for each row (`Tensor::sum_axes`).
fn row_sum(values: impl Iterator<Item = f32>) -> f64 {
    values.map(|v| v as f64).sum::<f64>()
}

/// Each row's mean and `rstd = 1 / sqrt(var + eps)`, interleaved, rounded
/// step by step exactly as [`Var::layer_norm_plain`]'s ops round them: an f32
/// mean from an f64 sum, f32 deviations, an f32 variance from the f64 sum of
/// their f32 squares.
struct RowStats(Vec<f32>);

impl RowStats {
    /// The `rstd` column, shaped `(…, 1)` for rows of `shape`.
    fn rstd(&self, shape: &[usize]) -> Tensor {
        let mut kept = shape.to_vec();
        *kept.last_mut().expect("2-D or more") = 1;
        Tensor::from_vec(self.0.chunks(2).map(|s| s[1]).collect(), &kept)
    }
}

fn row_stats(x: &Tensor, eps: f32) -> RowStats {
    let x = x.contiguous();
    let values = x.array().as_slice().expect("contiguous");
    let width = x.shape()[x.ndim() - 1];
    let d = width as f64;
    let row_rstd = |row: &[f32]| -> (f32, f32) {
        let mean = (row_sum(row.iter().copied()) / d) as f32;
        let var = (row_sum(row.iter().map(|&v| (v - mean) * (v - mean))) / d) as f32;
        (mean, 1.0 / (var + eps).sqrt())
    };
    let mut stats = vec![0f32; 2 * values.len() / width];
    tensor::parallel_fill(&mut stats, 2, |start, piece| {
        let rows = values[start / 2 * width..].chunks(width);
        for (s, row) in piece.chunks_mut(2).zip(rows) {
            (s[0], s[1]) = row_rstd(row);
        }
    });
    RowStats(stats)
}

/// `xhat = (x − mean) · rstd` for every row of `x` (at least 2-D), in parallel.
fn normalized(x: &Tensor, stats: &RowStats) -> Tensor {
    let x = x.contiguous();
    let values = x.array().as_slice().expect("contiguous");
    let width = x.shape()[x.ndim() - 1];
    let mut xhat = vec![0f32; values.len()];
    tensor::parallel_fill(&mut xhat, width, |start, piece| {
        let rows = values[start..]
            .chunks(width)
            .zip(stats.0[start / width * 2..].chunks(2));
        for (out, (row, s)) in piece.chunks_mut(width).zip(rows) {
            for (o, &v) in out.iter_mut().zip(row) {
                *o = (v - s[0]) * s[1];
            }
        }
    });
    Tensor::from_vec(xhat, x.shape())
}

/// Layer norm's `dx` from `dxhat` (the gradient times the weight), row by
/// row, rounded as [`Var::layer_norm_plain`]'s backward ops round it:
/// `dx = (D·dxhat − Σdxhat − xhat·Σ(dxhat⊙xhat)) · rstd / D`.
fn normalize_rows_backward(dxhat: &Tensor, xhat: &Tensor, rstd: &Tensor) -> Tensor {
    let dxhat = dxhat.contiguous();
    let g = dxhat.array().as_slice().expect("contiguous");
    let xh = xhat.array().as_slice().expect("contiguous");
    let r = rstd.array().as_slice().expect("contiguous");
    let width = xhat.shape()[xhat.ndim() - 1];
    let d = width as f32;
    let mut dx = vec![0f32; g.len()];
    tensor::parallel_fill(&mut dx, width, |start, piece| {
        let rows = g[start..].chunks(width).zip(xh[start..].chunks(width));
        for ((out, (g, xh)), &rstd) in piece.chunks_mut(width).zip(rows).zip(&r[start / width..]) {
            let sum_dxhat = row_sum(g.iter().copied()) as f32;
            let sum_dxhat_xhat = row_sum(g.iter().zip(xh).map(|(&g, &x)| g * x)) as f32;
            for ((o, &g), &x) in out.iter_mut().zip(g).zip(xh) {
                *o = (g * d - sum_dxhat - x * sum_dxhat_xhat) * rstd / d;
            }
        }
    });
    Tensor::from_vec(dx, xhat.shape())
}

impl<'g> Var<'g> {
    /// `F.scaled_dot_product_attention(q, k, v, is_causal)` for `self` = q and
    /// `k`, `v` of shape `(B, nh, T, hs)`: `softmax(q kᵀ / √hs) v`, query `i`
    /// seeing keys `0..=i` when `is_causal`; no dropout. One op on the tape
    /// ([`tensor::attention`]): it works a few batch rows at a time and
    /// keeps no `(B, nh, T, T)` weights for backward, which recomputes them.
    /// [`Var::attention`] with the scale `1/√hs`; the lecture's own lines
    /// (`q @ kᵀ`, `masked_fill`, `softmax`, `@ v`) give the same bits
    /// (`tests/attention.rs`).
    pub fn scaled_dot_product_attention(self, k: Var<'g>, v: Var<'g>, is_causal: bool) -> Var<'g> {
        let head_size = self.shape().get(3).copied().unwrap_or(0);
        self.attention(k, v, Attention::scaled_dot_product(is_causal, head_size))
    }

    /// Attention as one op, for `self` = q and `k`, `v` of shape
    /// `(B, nh, T, hs)`: `dropout(softmax(q kᵀ · scale)) v` as `op` says
    /// ([`tensor::attention::Attention`]). The lecture's lines with the same
    /// scale and the same keep mask give the same bits.
    pub fn attention(self, k: Var<'g>, v: Var<'g>, op: Attention) -> Var<'g> {
        let (q_value, k_value, v_value) = (self.value(), k.value(), v.value());
        let out = op.forward(&q_value, &k_value, &v_value); // (B, nh, T, hs)
        self.graph.op(out, &[self, k, v], move |grad| {
            op.backward(&q_value, &k_value, &v_value, grad).to_vec()
        })
    }
}
