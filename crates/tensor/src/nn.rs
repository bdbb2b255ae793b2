//! Neural-network functions: softmax, log-softmax, cross-entropy, layer norm and
//! dropout with a given mask.
//!
//! Softmax subtracts each lane's maximum before exponentiating, so logits of a
//! thousand give the same probabilities as logits near zero instead of `inf/inf`.

use crate::elementwise::parallel_fill;
use crate::shape::axis_index;
use crate::Tensor;

impl Tensor {
    /// Replaces each lane along `axis` by `f(lane)`, in the original layout.
    fn map_lanes(&self, axis: isize, f: impl Fn(&[f32], &mut [f32]) + Sync) -> Tensor {
        let axis = axis_index(axis, self.shape());
        let mut order: Vec<usize> = (0..self.ndim()).filter(|&a| a != axis).collect();
        order.push(axis);
        let moved = self.permute(&order).contiguous();
        let input = moved.data.as_slice().expect("contiguous");
        let lane = self.shape()[axis];
        let mut output = vec![0f32; input.len()];
        if lane > 0 {
            parallel_fill(&mut output, lane, |start, piece| {
                for (x, y) in input[start..].chunks(lane).zip(piece.chunks_mut(lane)) {
                    f(x, y);
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
        self.map_lanes(axis, |x, y| {
            let max = lane_max(x);
            let mut sum = 0f64;
            for (y, &x) in y.iter_mut().zip(x) {
                *y = (x - max).exp();
                sum += *y as f64;
            }
            let scale = (1.0 / sum) as f32;
            for y in y.iter_mut() {
                *y *= scale;
            }
        })
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

    // ANCHOR: layer_norm
    /// `F.layer_norm(x, (D,), weight, bias, eps)` over the last axis:
    /// `(x - mean) / sqrt(var + eps) * weight + bias`, with the biased variance
    /// (divided by `D`), as PyTorch does. `weight` and `bias` have shape `(D,)`.
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
        let w = weight.map(Tensor::to_vec);
        let b = bias.map(Tensor::to_vec);
        self.map_lanes(-1, |x, y| {
            let n = x.len() as f64;
            let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
            let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
            let rstd = (1.0 / (var + eps as f64).sqrt()) as f32;
            let mean = mean as f32;
            for (i, (y, &x)) in y.iter_mut().zip(x).enumerate() {
                let mut v = (x - mean) * rstd;
                if let Some(w) = &w {
                    v *= w[i];
                }
                if let Some(b) = &b {
                    v += b[i];
                }
                *y = v;
            }
        })
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
