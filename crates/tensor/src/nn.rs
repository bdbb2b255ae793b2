//! Neural-network functions: softmax, log-softmax, cross-entropy, layer norm and
//! dropout with a given mask.
//!
//! Softmax subtracts each lane's maximum before exponentiating, so logits of a
//! thousand give the same probabilities as logits near zero instead of `inf/inf`.

use crate::elementwise::{fill_in_pieces, parallel_fill, threads_for};
use crate::numeric::{exp_in_place, exp_shifted_into, max_blocked, sum_f64_blocked, SimdPath};
use crate::reduce::{group_row_sums, interleaved_row_sums, INTERLEAVED};
use crate::shape::axis_index;
use crate::Tensor;

impl Tensor {
    /// Replaces each lane along `axis` by `f(lane)`, in the original layout.
    fn map_lanes(&self, axis: isize, f: impl Fn(&[f32], &mut [f32]) + Sync) -> Tensor {
        self.map_lane_groups(axis, |x, y, lane| {
            for (x, y) in x.chunks(lane).zip(y.chunks_mut(lane)) {
                f(x, y);
            }
        })
    }

    /// Replaces the lanes along `axis` by `f(lanes, out, lane length)`, up to
    /// [`INTERLEAVED`] lanes at a time, one after another in `lanes`, in the
    /// original layout.
    fn map_lane_groups(&self, axis: isize, f: impl Fn(&[f32], &mut [f32], usize) + Sync) -> Tensor {
        let axis = axis_index(axis, self.shape());
        let mut order: Vec<usize> = (0..self.ndim()).filter(|&a| a != axis).collect();
        order.push(axis);
        let moved = self.permute(&order).contiguous();
        let input = moved.data.as_slice().expect("contiguous");
        let lane = self.shape()[axis];
        let mut output = vec![0f32; input.len()];
        if lane > 0 {
            parallel_fill(&mut output, lane, |start, piece| {
                let group = INTERLEAVED * lane;
                for (x, y) in input[start..].chunks(group).zip(piece.chunks_mut(group)) {
                    f(&x[..y.len()], y, lane);
                }
            });
        }
        let mut back = vec![0; self.ndim()];
        for (i, &a) in order.iter().enumerate() {
            back[a] = i;
        }
        Tensor::from_vec(output, moved.shape())
            .permute(&back)
            .contiguous()
    }

    /// `F.softmax(x, axis)`: `exp(x - max) / Σ exp(x - max)` along `axis`.
    pub fn softmax(&self, axis: isize) -> Tensor {
        self.map_lane_groups(axis, |x, y, lane| {
            let mut lives = [0; INTERLEAVED];
            for ((x, y), live) in x.chunks(lane).zip(y.chunks_mut(lane)).zip(&mut lives) {
                let max = lane_max(x);
                // A causal mask's future (a trailing run of -inf) gives exactly 0
                // and adds nothing to the sum, so it is written, not computed: the
                // same bits, half the exponentials of a masked attention row.
                *live = if max.is_finite() {
                    x.iter()
                        .rposition(|&v| v != f32::NEG_INFINITY)
                        .map_or(0, |last| last + 1)
                } else {
                    x.len()
                };
                let (y, future) = y.split_at_mut(*live);
                future.fill(0.0);
                for (y, &x) in y.iter_mut().zip(x) {
                    *y = x - max;
                }
                exp_in_place(y); // `f32::exp`'s bits, several lanes at a time
            }
            // Each lane's Σ in f64, in order, eight lanes side by side. The future's
            // zeros are added too: a sum of non-negative terms stays as it was.
            let sums = group_row_sums(y, lane);
            for ((y, live), sum) in y.chunks_mut(lane).zip(lives).zip(sums) {
                let scale = (1.0 / sum) as f32;
                for y in &mut y[..live] {
                    *y *= scale;
                }
            }
        })
    }

    /// Softmax's backward along `axis`: `s ⊙ (g − Σ g⊙s)`, for `self` = s, the
    /// softmax's output, and `grad` = g. Rounded as the op-by-op form rounds it
    /// (`grad.mul(s).sum(axis, true)`, then `s.mul(grad.sub(dot))`), but where
    /// `axis` is the last and both are contiguous, in one pass over each row
    /// instead of four passes and their temporaries.
    pub fn softmax_backward(&self, grad: &Tensor, axis: isize) -> Tensor {
        assert_eq!(
            self.shape(),
            grad.shape(),
            "softmax_backward: grad's shape differs"
        );
        let axis_index = axis_index(axis, self.shape());
        let width = self.shape()[axis_index];
        // A 1-d tensor's `sum(-1)` adds from +0.0 (`sum_axes`' leading-axes path),
        // the rows of more axes from `Iterator::sum`'s −0.0 as the rows here do:
        // the one pass is for the latter.
        let (Some(probs), Some(grads), true, true) = (
            self.data.as_slice(),
            grad.data.as_slice(),
            axis_index + 1 == self.ndim() && self.ndim() >= 2,
            width > 0,
        ) else {
            let dot = grad.mul(self).sum(axis, true);
            return self.mul(&grad.sub(&dot));
        };
        let mut out = vec![0f32; probs.len()];
        parallel_fill(&mut out, width, |start, piece| {
            let group = INTERLEAVED * width;
            let (probs, grads) = (
                &probs[start..][..piece.len()],
                &grads[start..][..piece.len()],
            );
            let mut products = vec![0f32; group];
            let groups = piece
                .chunks_mut(group)
                .zip(probs.chunks(group))
                .zip(grads.chunks(group));
            for ((out, probs), grads) in groups {
                let products = &mut products[..probs.len()];
                for ((p, &s), &g) in products.iter_mut().zip(probs).zip(grads) {
                    *p = g * s;
                }
                // Each row's Σ g⊙s, in `sum(axis)`'s order.
                let dots = group_row_sums(products, width);
                let rows = out
                    .chunks_mut(width)
                    .zip(probs.chunks(width))
                    .zip(grads.chunks(width));
                for (((out, probs), grads), dot) in rows.zip(dots) {
                    let dot = dot as f32;
                    for ((o, &s), &g) in out.iter_mut().zip(probs).zip(grads) {
                        *o = s * (g - dot);
                    }
                }
            }
        });
        Tensor::from_vec(out, self.shape())
    }

    /// `F.log_softmax(x, axis)`: `x - max - log Σ exp(x - max)` along `axis`.
    pub fn log_softmax(&self, axis: isize) -> Tensor {
        self.map_lanes(axis, |x, y| {
            let max = lane_max(x);
            let log_sum = log_sum_exp_shifted(x, max);
            for (y, &x) in y.iter_mut().zip(x) {
                *y = x - max - log_sum;
            }
        })
    }

    // ANCHOR: cross_entropy
    /// `F.cross_entropy(logits, targets)`: the mean over rows of
    /// `log Σ_c exp(logits[i, c]) - logits[i, targets[i]]`, as a 0-d tensor.
    /// `self` is `(N, C)`; each target is a class index below `C`.
    pub fn cross_entropy(&self, targets: &[usize]) -> Tensor {
        assert!(
            self.ndim() == 2 && self.shape()[0] == targets.len(),
            "cross_entropy: logits {:?} need shape (N, C) with N = {} targets",
            self.shape(),
            targets.len()
        );
        let classes = self.shape()[1];
        let logits = self.contiguous();
        let values = logits.data.as_slice().expect("contiguous");
        let mut total = 0f64;
        for (row, &target) in values.chunks(classes.max(1)).zip(targets) {
            assert!(
                target < classes,
                "cross_entropy: target {target} is out of range for {classes} classes"
            );
            let max = lane_max(row);
            // -log_softmax[target], in the same f32 steps as log_softmax.
            let log_prob = row[target] - max - log_sum_exp_shifted(row, max);
            total -= log_prob as f64;
        }
        Tensor::scalar((total / targets.len() as f64) as f32)
    }
    // ANCHOR_END: cross_entropy

    /// [`Tensor::cross_entropy`] with its exponentials in f64 lanes
    /// ([`crate::exp_shifted`], within one ulp of `expf` and nearly always
    /// equal) and its rows spread over threads: the same steps otherwise, so
    /// the loss moves at most in its last bits. For GPT-2 (lecture 9) and
    /// makemore, whose 50,304 and 27 classes it serves; the lectures before
    /// keep `cross_entropy` and libm's bits, and so does lecture 7: with this
    /// one, its layernorm stage's val loss after 5,000 steps moved by 1.6e-3,
    /// outside its ±5e-4 gate against PyTorch. The rows are summed in order,
    /// so the thread count changes nothing.
    pub fn cross_entropy_fast(&self, targets: &[usize]) -> Tensor {
        let work = self.len();
        self.cross_entropy_fast_on(targets, threads_for(work))
    }

    /// [`Tensor::cross_entropy_fast`] with its rows split between `threads`.
    fn cross_entropy_fast_on(&self, targets: &[usize], threads: usize) -> Tensor {
        let (logits, classes) = self.check_cross_entropy(targets);
        let values = logits.data.as_slice().expect("contiguous");
        let path = SimdPath::best();
        let mut log_probs = vec![0f32; targets.len()];
        fill_in_pieces(&mut log_probs, 1, threads, |start, piece| {
            let mut exps = vec![0f32; classes];
            for (i, log_prob) in piece.iter_mut().enumerate() {
                let row = &values[(start + i) * classes..][..classes];
                let max = max_blocked(row, path);
                exp_shifted_into(row, max, &mut exps, path);
                let sum = sum_f64_blocked(&exps, path);
                *log_prob = row[targets[start + i]] - max - (sum as f32).ln();
            }
        });
        let total = log_probs.iter().fold(0f64, |total, &lp| total - lp as f64);
        Tensor::scalar((total / targets.len() as f64) as f32)
    }

    /// The gradient of [`Tensor::cross_entropy_fast`] times `scale`:
    /// `(softmax(logits) − one_hot(targets)) / N · scale`, rounded as
    /// `Var::cross_entropy`'s backward rounds it, row by row across threads.
    pub fn cross_entropy_fast_grad(&self, targets: &[usize], scale: f32) -> Tensor {
        let work = self.len();
        self.cross_entropy_fast_grad_on(targets, scale, threads_for(work))
    }

    /// [`Tensor::cross_entropy_fast_grad`] with its rows split between `threads`.
    fn cross_entropy_fast_grad_on(&self, targets: &[usize], scale: f32, threads: usize) -> Tensor {
        let (logits, classes) = self.check_cross_entropy(targets);
        let values = logits.data.as_slice().expect("contiguous");
        let path = SimdPath::best();
        let n = targets.len() as f32;
        let mut grad = vec![0f32; values.len()];
        if classes > 0 {
            fill_in_pieces(&mut grad, classes, threads, |start, piece| {
                for (r, y) in piece.chunks_mut(classes).enumerate() {
                    let row = start / classes + r;
                    let x = &values[row * classes..][..classes];
                    let max = max_blocked(x, path);
                    exp_shifted_into(x, max, y, path);
                    let inverse = (1.0 / sum_f64_blocked(y, path)) as f32;
                    let target = targets[row];
                    let at_target = y[target] * inverse - 1.0;
                    // `(e · 1/sum − [c = target]) / N · scale`, each step
                    // rounded as the op-by-op backward rounds it, in one pass.
                    for y in y.iter_mut() {
                        *y = *y * inverse / n * scale;
                    }
                    y[target] = at_target / n * scale;
                }
            });
        }
        Tensor::from_vec(grad, logits.shape())
    }

    /// Panics unless `self` is `(N, C)` logits for `N` targets below `C`;
    /// returns them contiguous, and `C`.
    fn check_cross_entropy(&self, targets: &[usize]) -> (Tensor, usize) {
        assert!(
            self.ndim() == 2 && self.shape()[0] == targets.len(),
            "cross_entropy: logits {:?} need shape (N, C) with N = {} targets",
            self.shape(),
            targets.len()
        );
        let classes = self.shape()[1];
        if let Some(&target) = targets.iter().find(|&&t| t >= classes) {
            panic!("cross_entropy: target {target} is out of range for {classes} classes");
        }
        (self.contiguous(), classes)
    }

    // ANCHOR: layer_norm
    /// `F.layer_norm(x, (D,), weight, bias, eps)` over the last axis:
    /// `(x - mean) / sqrt(var + eps) * weight + bias`, with the biased variance
    /// (divided by `D`), as PyTorch does. `weight` and `bias` have shape `(D,)`.
    /// Rounded step by step as the op-by-op version on the tape
    /// (`autograd::Var::layer_norm_plain`) rounds it.
    pub fn layer_norm(&self, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f32) -> Tensor {
        assert!(self.ndim() >= 1, "layer_norm of a 0-d tensor");
        let d = self.shape()[self.ndim() - 1];
        for (name, p) in [("weight", weight), ("bias", bias)] {
            if let Some(p) = p {
                assert!(
                    p.shape() == [d],
                    "layer_norm: {name} {:?} does not match input {:?}",
                    p.shape(),
                    self.shape()
                );
            }
        }
        if d == 0 {
            return self.clone();
        }
        let stats = self.layer_norm_stats(eps);
        self.layer_normalized(&stats).scale_shift(weight, bias)
    }
    // ANCHOR_END: layer_norm

    /// Dropout with a given keep mask (1.0 keep, 0.0 drop): `x * mask / (1 - p)`,
    /// computed as PyTorch does, `x * mask * (1 / (1 - p))`. The mask comes from
    /// the generator (`rng`), so the draws match `torch.manual_seed`.
    pub fn dropout_with_mask(&self, keep_mask: &Tensor, p: f32) -> Tensor {
        assert!(
            keep_mask.shape() == self.shape(),
            "dropout: mask {:?} does not match input {:?}",
            keep_mask.shape(),
            self.shape()
        );
        let scale = dropout_scale(p);
        self.zip_map(keep_mask, |x, m| x * m * scale)
    }

    /// `F.dropout(x, p, training=True)` with the generator's draws: a keep mask
    /// from [`TorchGenerator::bernoulli_keep_mask`](crate::rng::TorchGenerator::bernoulli_keep_mask), then `x * mask / (1 - p)`.
    pub fn dropout(&self, p: f32, gen: &mut crate::rng::TorchGenerator) -> Tensor {
        let mask = gen.bernoulli_keep_mask(p, self.shape());
        self.dropout_with_mask(&mask, p)
    }
}

/// The largest value of a lane; `-inf` for an empty lane.
/// What dropout multiplies a kept element by, `1 / (1 - p)` rounded as
/// PyTorch rounds it (0 at `p = 1`, where nothing is kept).
fn dropout_scale(p: f32) -> f32 {
    assert!(
        (0.0..=1.0).contains(&p),
        "dropout probability {p} is not in [0, 1]"
    );
    if p == 1.0 {
        0.0
    } else {
        (1.0 / (1.0 - p as f64)) as f32
    }
}

fn lane_max(x: &[f32]) -> f32 {
    x.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

/// `log Σ exp(x - max)`, the sum taken in f64.
fn log_sum_exp_shifted(x: &[f32], max: f32) -> f32 {
    let sum: f64 = x.iter().map(|&v| (v - max).exp() as f64).sum();
    (sum as f32).ln()
}

/// A dropout keep mask held as one bit per element, a 32nd of the `f32`
/// mask's memory: what a dropout keeps for its backward, where PyTorch keeps
/// a `bool` mask. Unpacked, it is the 0.0/1.0 mask it was packed from, so
/// [`Tensor::dropout_with_mask`] gives the same bits either way.
#[derive(Clone, Debug)]
pub struct KeepMask {
    bits: Vec<u64>,
    shape: Vec<usize>,
}

impl KeepMask {
    /// Packs a mask of 0.0 (drop) and 1.0 (keep), such as
    /// [`TorchGenerator::bernoulli_keep_mask`](crate::rng::TorchGenerator::bernoulli_keep_mask)'s.
    ///
    /// Panics if a value is neither: such a mask is no dropout mask, and
    /// packing it would change the product.
    pub fn pack(mask: &Tensor) -> KeepMask {
        let mask = mask.contiguous();
        let values = mask.data.as_slice().expect("contiguous");
        let bits = values
            .chunks(64)
            .map(|word| {
                word.iter().enumerate().fold(0u64, |bits, (i, &m)| {
                    // Bit patterns, so that −0.0, which would unpack as +0.0, is refused.
                    assert!(
                        m.to_bits() == 0.0f32.to_bits() || m.to_bits() == 1.0f32.to_bits(),
                        "dropout keep mask: {m:?} is neither 0 nor 1"
                    );
                    bits | (u64::from(m == 1.0) << i)
                })
            })
            .collect();
        KeepMask {
            bits,
            shape: mask.shape().to_vec(),
        }
    }

    /// A mask of `shape` from its bits, element `i` at bit `i % 64` of word `i / 64`.
    pub(crate) fn from_bits(bits: Vec<u64>, shape: &[usize]) -> KeepMask {
        debug_assert_eq!(bits.len(), shape.iter().product::<usize>().div_ceil(64));
        KeepMask {
            bits,
            shape: shape.to_vec(),
        }
    }

    /// Whether element `i` (row-major) is kept, as 1.0 or 0.0.
    fn at(&self, i: usize) -> f32 {
        ((self.bits[i / 64] >> (i % 64)) & 1) as f32
    }

    /// The shape of the mask it was packed from.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The whole mask as 0.0 and 1.0 again.
    pub fn unpack(&self) -> Tensor {
        let len = self.shape.iter().product();
        Tensor::from_vec((0..len).map(|i| self.at(i)).collect(), &self.shape)
    }
}

impl Tensor {
    /// [`Tensor::dropout_with_mask`] with the mask's elements from `start` on
    /// (row-major) as the mask of `self`: `x * mask * (1 / (1 - p))`, the same
    /// bits, without unpacking the mask first.
    pub fn dropout_with_keep(&self, keep: &KeepMask, start: usize, p: f32) -> Tensor {
        let total: usize = keep.shape().iter().product();
        assert!(
            start + self.len() <= total,
            "dropout: elements {start}..{} of a keep mask of {:?}",
            start + self.len(),
            keep.shape()
        );
        let scale = dropout_scale(p);
        let x = self.contiguous();
        let values = x.data.as_slice().expect("contiguous");
        let mut out = vec![0f32; values.len()];
        parallel_fill(&mut out, 64, |first, piece| {
            for (i, (o, &v)) in piece.iter_mut().zip(&values[first..]).enumerate() {
                *o = v * keep.at(start + first + i) * scale;
            }
        });
        Tensor::from_vec(out, self.shape())
    }
}

/// Each row's mean and `rstd = 1 / sqrt(var + eps)`, interleaved, rounded step
/// by step exactly as the op-by-op layer norm's ops round them: an f32 mean
/// from an f64 sum, f32 deviations, an f32 variance from the f64 sum of their
/// f32 squares.
pub struct LayerNormStats(Vec<f32>);

impl LayerNormStats {
    /// The `rstd` column, shaped `(…, 1)` for rows of `shape`.
    pub fn rstd(&self, shape: &[usize]) -> Tensor {
        let mut kept = shape.to_vec();
        *kept.last_mut().expect("at least one axis") = 1;
        Tensor::from_vec(self.0.chunks(2).map(|s| s[1]).collect(), &kept)
    }
}

/// The sum of a row in f64: what `sum(-1)` and `mean(-1)` compute for each
/// row before rounding (`Tensor::sum_axes`).
fn row_sum(values: impl Iterator<Item = f32>) -> f64 {
    values.map(|v| v as f64).sum::<f64>()
}

impl Tensor {
    /// The mean and `1/sqrt(var + eps)` of each row (the last axis, of nonzero width).
    pub fn layer_norm_stats(&self, eps: f32) -> LayerNormStats {
        let x = self.contiguous();
        let values = x.data.as_slice().expect("contiguous");
        let width = x.shape()[x.ndim() - 1];
        let d = width as f64;
        let row_rstd = |row: &[f32]| -> (f32, f32) {
            let mean = (row_sum(row.iter().copied()) / d) as f32;
            let var = (row_sum(row.iter().map(|&v| (v - mean) * (v - mean))) / d) as f32;
            (mean, 1.0 / (var + eps).sqrt())
        };
        let mut stats = vec![0f32; 2 * values.len() / width];
        parallel_fill(&mut stats, 2, |start, piece| {
            let values = &values[start / 2 * width..];
            let done = (piece.len() / 2) / INTERLEAVED * INTERLEAVED;
            let mut groups = piece.chunks_exact_mut(2 * INTERLEAVED);
            let mut centered_squares = vec![0f32; INTERLEAVED * width];
            for (g, s) in (&mut groups).enumerate() {
                // `row_rstd` for eight rows at once, the same arithmetic.
                let rows = &values[g * INTERLEAVED * width..][..INTERLEAVED * width];
                let sums = interleaved_row_sums(rows, width);
                let means = sums.map(|sum| (sum / d) as f32);
                let pairs = centered_squares.chunks_mut(width).zip(rows.chunks(width));
                for ((out, row), mean) in pairs.zip(means) {
                    for (o, &v) in out.iter_mut().zip(row) {
                        *o = (v - mean) * (v - mean);
                    }
                }
                let squares = interleaved_row_sums(&centered_squares, width);
                for (r, s) in s.chunks_mut(2).enumerate() {
                    let var = (squares[r] / d) as f32;
                    (s[0], s[1]) = (means[r], 1.0 / (var + eps).sqrt());
                }
            }
            let rows = values[done * width..].chunks(width);
            for (s, row) in groups.into_remainder().chunks_mut(2).zip(rows) {
                (s[0], s[1]) = row_rstd(row);
            }
        });
        LayerNormStats(stats)
    }

    /// `x̂ = (x − mean) · rstd` for every row, in parallel.
    pub fn layer_normalized(&self, stats: &LayerNormStats) -> Tensor {
        let x = self.contiguous();
        let values = x.data.as_slice().expect("contiguous");
        let width = x.shape()[x.ndim() - 1];
        let mut xhat = vec![0f32; values.len()];
        parallel_fill(&mut xhat, width, |start, piece| {
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

    /// `x̂ · weight + bias`, as two rounded ops (`mul`, then `add`): the affine
    /// tail of every layer norm.
    pub fn scale_shift(self, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Tensor {
        let scaled = match weight {
            Some(w) => self.mul(w),
            None => self,
        };
        match bias {
            Some(b) => scaled.add(b),
            None => scaled,
        }
    }

    /// Layer norm's `dx` from `dxhat` (the gradient times the weight), row by
    /// row, rounded as the op-by-op backward rounds it:
    /// `dx = (D·dxhat − Σdxhat − xhat·Σ(dxhat⊙xhat)) · rstd / D`. `xhat` and
    /// `rstd` are as [`Tensor::layer_normalized`] and [`LayerNormStats::rstd`]
    /// make them: contiguous, of the same rows as `dxhat`.
    pub fn layer_norm_backward_rows(dxhat: &Tensor, xhat: &Tensor, rstd: &Tensor) -> Tensor {
        let dxhat = dxhat.contiguous();
        let g = dxhat.data.as_slice().expect("contiguous");
        let xh = xhat.data.as_slice().expect("contiguous");
        let r = rstd.data.as_slice().expect("contiguous");
        let width = xhat.shape()[xhat.ndim() - 1];
        let d = width as f32;
        let mut dx = vec![0f32; g.len()];
        let row = |out: &mut [f32], g: &[f32], xh: &[f32], sums: (f32, f32), rstd: f32| {
            let (sum_dxhat, sum_dxhat_xhat) = sums;
            for ((o, &g), &x) in out.iter_mut().zip(g).zip(xh) {
                *o = (g * d - sum_dxhat - x * sum_dxhat_xhat) * rstd / d;
            }
        };
        parallel_fill(&mut dx, width, |start, piece| {
            let (g, xh, r) = (&g[start..], &xh[start..], &r[start / width..]);
            let group = INTERLEAVED * width;
            let done = piece.len() / group * group;
            let mut groups = piece.chunks_exact_mut(group);
            let mut products = vec![0f32; group];
            for (n, out) in (&mut groups).enumerate() {
                // The two sums of eight rows at once, each in its own order.
                let (g, xh) = (&g[n * group..][..group], &xh[n * group..][..group]);
                let sum_dxhat = interleaved_row_sums(g, width);
                for ((p, &g), &x) in products.iter_mut().zip(g).zip(xh) {
                    *p = g * x;
                }
                let sum_dxhat_xhat = interleaved_row_sums(&products, width);
                for (k, out) in out.chunks_mut(width).enumerate() {
                    let sums = (sum_dxhat[k] as f32, sum_dxhat_xhat[k] as f32);
                    let at = k * width..(k + 1) * width;
                    row(out, &g[at.clone()], &xh[at], sums, r[n * INTERLEAVED + k]);
                }
            }
            let rows = g[done..].chunks(width).zip(xh[done..].chunks(width));
            for ((out, (g, xh)), &rstd) in groups
                .into_remainder()
                .chunks_mut(width)
                .zip(rows)
                .zip(&r[done / width..])
            {
                let sum_dxhat = row_sum(g.iter().copied()) as f32;
                let sum_dxhat_xhat = row_sum(g.iter().zip(xh).map(|(&g, &x)| g * x)) as f32;
                row(out, g, xh, (sum_dxhat, sum_dxhat_xhat), rstd);
            }
        });
        Tensor::from_vec(dx, xhat.shape())
    }
}

#[cfg(test)]
mod fast_cross_entropy_tests {
    use crate::rng::TorchGenerator;

    /// The rows go to threads in pieces, but each row's arithmetic and the
    /// sum over rows are fixed: 1, 2 and 3 threads give the same bits.
    #[test]
    fn the_thread_count_changes_no_bit() {
        let mut gen = TorchGenerator::manual_seed(7);
        let logits = gen.randn(&[37, 50_304]).mul_scalar(3.0);
        let targets: Vec<usize> = (0..37).map(|i| i * 1_301).collect();
        let bits = |t: crate::Tensor| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
        let runs: Vec<(Vec<u32>, Vec<u32>)> = [1, 2, 3]
            .into_iter()
            .map(|threads| {
                (
                    bits(logits.cross_entropy_fast_on(&targets, threads)),
                    bits(logits.cross_entropy_fast_grad_on(&targets, 0.5, threads)),
                )
            })
            .collect();
        assert!(runs[0] == runs[1], "1 and 2 threads differ");
        assert!(runs[0] == runs[2], "1 and 3 threads differ");
    }
}

#[cfg(test)]
mod tests {
    use crate::Tensor;

    /// Every exponential computed, as the lecture's lines do it.
    fn softmax_every_lane(row: &[f32]) -> Vec<f32> {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exps: Vec<f32> = row.iter().map(|&x| (x - max).exp()).collect();
        let sum: f64 = exps.iter().map(|&e| e as f64).sum();
        let scale = (1.0 / sum) as f32;
        exps.iter().map(|&e| e * scale).collect()
    }

    /// The one-pass backward gives the op-by-op form's bits: widths with and
    /// without a tail after eight columns, row counts with and without a tail after
    /// eight rows, causally masked rows (zeros in s), and rows whose every g⊙s is
    /// −0.0 (where the sum's starting zero shows in the sign of the result).
    #[test]
    fn softmax_backward_in_one_pass_is_the_op_by_op_form() {
        let filled = |shape: &[usize], seed: usize| {
            let n: usize = shape.iter().product();
            let values = (0..n)
                .map(|i| (((i + seed) * 7919 % 2001) as f32 - 1000.0) / 300.0)
                .collect();
            Tensor::from_vec(values, shape)
        };
        for shape in [[2, 8, 64], [3, 5, 7], [1, 19, 131], [4, 4, 1]] {
            let (rows, width) = (shape[0] * shape[1], shape[2]);
            let mut logits = filled(&shape, 1).to_vec();
            for (i, v) in logits.iter_mut().enumerate() {
                if i % width > (i / width) % width {
                    *v = f32::NEG_INFINITY; // the future, as a causal mask leaves it
                }
            }
            let probs = Tensor::from_vec(logits, &shape).softmax(-1);
            let mut grad = filled(&shape, 2).to_vec();
            // The first row's gradient −0.0 throughout: its g⊙s are all −0.0.
            grad[..width].fill(-0.0);
            let grad = Tensor::from_vec(grad, &shape);
            let dot = grad.mul(&probs).sum(-1, true);
            let expected = probs.mul(&grad.sub(&dot)).to_vec();
            let got = probs.softmax_backward(&grad, -1).to_vec();
            let same = expected
                .iter()
                .zip(&got)
                .all(|(e, g)| e.to_bits() == g.to_bits());
            assert!(same, "{shape:?} ({rows} rows of {width})");
        }
    }

    // The skipped future of a masked row changes no bit; -inf inside a row
    // and a row of nothing but -inf (NaN, as PyTorch gives) go the whole way.
    #[test]
    fn a_masked_future_is_written_as_the_full_softmax_writes_it() {
        // Eight rows (one group of lanes side by side), then eleven (a group and a
        // tail) of seventy (the vector exponentials and their tail).
        for (t, n) in [(7, 9), (10, 70)] {
            masked_rows_as_the_full_softmax(t, n);
        }
    }

    fn masked_rows_as_the_full_softmax(t: usize, n: usize) {
        let mut values = Vec::new();
        for i in 0..t {
            for j in 0..n {
                let x = ((i * 31 + j * 17) % 23) as f32 * 0.37 - 4.0;
                values.push(if j > i || (i == 5 && j == 1) {
                    f32::NEG_INFINITY
                } else {
                    x
                });
            }
        }
        values.extend(vec![f32::NEG_INFINITY; n]);
        let x = Tensor::from_vec(values.clone(), &[t + 1, n]);
        let got = x.softmax(-1).to_vec();
        for (row, (got, want)) in got
            .chunks(n)
            .zip(values.chunks(n).map(softmax_every_lane))
            .enumerate()
        {
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "row {row}: {got:?} vs {want:?}"
                );
            }
        }
    }
}
