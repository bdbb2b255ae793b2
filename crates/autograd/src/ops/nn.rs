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
            // dx = s ⊙ (g − Σ g⊙s), one pass over each row (tensor::softmax_backward).
            vec![s.softmax_backward(grad, axis)]
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

    /// [`Var::cross_entropy`] with its exponentials in f64 lanes and its rows
    /// across threads ([`Tensor::cross_entropy_fast`]): within an ulp or so of
    /// it, for GPT-2 and makemore, whose finals may move in their last bits;
    /// the lectures before 9 keep the plain one above (why lecture 7 does:
    /// [`Tensor::cross_entropy_fast`]).
    pub fn cross_entropy_fast(self, targets: &[usize]) -> Var<'g> {
        let logits = self.value();
        let out = logits.cross_entropy_fast(targets);
        let targets = targets.to_vec();
        self.graph.op(out, &[self], move |grad| {
            vec![logits.cross_entropy_fast_grad(&targets, grad.item())]
        })
    }

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
        let stats = x.layer_norm_stats(eps); // (mean, rstd) per row
        let (out, inputs, affine) = Affine::forward(x.layer_normalized(&stats), self, weight, bias);
        self.graph.op(out, &inputs, move |grad| {
            // x̂ again from x and the row statistics, to the bit: the input is
            // kept anyway, a second (…, C) copy for backward need not be.
            let xhat = x.layer_normalized(&stats); // (…, C)
            let rstd = stats.rstd(xhat.shape()); // (…, 1)
            let dxhat = affine.dxhat(grad);
            let mut grads = vec![Tensor::layer_norm_backward_rows(&dxhat, &xhat, &rstd)];
            affine.push_param_grads(grad, &xhat, &mut grads);
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
        let (out, inputs, affine) = Affine::forward(xhat.clone(), self, weight, bias);
        self.graph.op(out, &inputs, move |grad| {
            let dxhat = affine.dxhat(grad);
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
            affine.push_param_grads(grad, &xhat, &mut grads);
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

/// The affine tail `x̂ · weight + bias` that both layer norms share, and its
/// backward. (The closures stay in `layer_norm` and `layer_norm_plain`, so that
/// `ZTH_PROFILE` names the op after them.)
struct Affine {
    weight: Option<Tensor>,
    has_bias: bool,
}

impl Affine {
    /// The output from x̂, the op's inputs (`x`, then weight, then bias), and the tail.
    fn forward<'g>(
        xhat: Tensor,
        x: Var<'g>,
        weight: Option<Var<'g>>,
        bias: Option<Var<'g>>,
    ) -> (Tensor, Vec<Var<'g>>, Affine) {
        let affine = Affine {
            weight: weight.map(|w| w.value()),
            has_bias: bias.is_some(),
        };
        let out = xhat.scale_shift(affine.weight.as_ref(), bias.map(|b| b.value()).as_ref());
        let inputs = [Some(x), weight, bias].into_iter().flatten().collect();
        (out, inputs, affine)
    }

    /// `dx̂ = grad · weight`, or the gradient itself.
    fn dxhat(&self, grad: &Tensor) -> Tensor {
        match &self.weight {
            Some(w) => grad.mul(w),
            None => grad.clone(),
        }
    }

    /// Appends `dweight = Σ grad·x̂` and `dbias = Σ grad`, in input order.
    fn push_param_grads(&self, grad: &Tensor, xhat: &Tensor, grads: &mut Vec<Tensor>) {
        let width = [xhat.shape()[xhat.ndim() - 1]];
        if self.weight.is_some() {
            grads.push(grad.mul(xhat).sum_to_shape(&width));
        }
        if self.has_bias {
            grads.push(grad.sum_to_shape(&width));
        }
    }
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
