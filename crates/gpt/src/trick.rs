//! "The mathematical trick in self-attention": four ways to let each position
//! average the positions before it, from a double loop to a self-attention head,
//! and the demonstration of why attention scores are scaled by `1/√head_size`.

use tensor::rng::TorchGenerator;
use tensor::Tensor;

// ANCHOR: version1
/// Version 1: `xbow[b, t] = mean(x[b, 0..=t])`, with loops. `x` is `(B, T, C)`.
pub fn average_loop(x: &Tensor) -> Tensor {
    let (b, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let v = x.to_vec();
    let mut out = vec![0f32; b * t * c]; // (B, T, C)
    for bi in 0..b {
        for ti in 0..t {
            for ci in 0..c {
                let sum: f32 = (0..=ti).map(|s| v[(bi * t + s) * c + ci]).sum();
                out[(bi * t + ti) * c + ci] = sum / (ti + 1) as f32;
            }
        }
    }
    Tensor::from_vec(out, &[b, t, c])
}
// ANCHOR_END: version1

// ANCHOR: version2
/// Version 2: the same average as one product, `wei @ x` with `wei` the lower
/// triangle of ones, each row divided by its sum.
pub fn average_matmul(x: &Tensor) -> Tensor {
    let t = x.shape()[1];
    let tril = Tensor::tril_ones(t, t); // (T, T)
    let wei = tril.div(&tril.sum(1, true)); // (T, T), rows sum to 1
    wei.matmul(x) // (T, T) @ (B, T, C) -> (B, T, C)
}
// ANCHOR_END: version2

// ANCHOR: version3
/// Version 3: the weights as a softmax of zeros with the future masked to −∞,
/// the form attention uses (the zeros become data-dependent affinities).
pub fn average_softmax(x: &Tensor) -> Tensor {
    let t = x.shape()[1];
    let future = Tensor::ones(&[t, t]).sub(&Tensor::tril_ones(t, t)); // (T, T)
    let wei = Tensor::zeros(&[t, t]).masked_fill(&future, f32::NEG_INFINITY); // (T, T)
    let wei = wei.softmax(-1); // (T, T)
    wei.matmul(x) // (B, T, C)
}
// ANCHOR_END: version3

/// Version 4's weights and output.
pub struct HeadOutput {
    /// The attention weights, `(B, T, T)`; each row sums to 1.
    pub wei: Tensor,
    /// `wei @ v`, `(B, T, head_size)`.
    pub out: Tensor,
}

// ANCHOR: version4
/// Version 4: a self-attention head. The affinities are `q·kᵀ`, data dependent;
/// `wk`, `wq`, `wv` are `(head_size, C)` weights as in `nn.Linear`. `scale`
/// multiplies the affinities (the notebook's version 4 uses 1, gpt.py `1/√head_size`).
pub fn attention_head(x: &Tensor, wk: &Tensor, wq: &Tensor, wv: &Tensor, scale: f32) -> HeadOutput {
    let t = x.shape()[1];
    let k = x.matmul(&wk.transpose(0, 1)); // (B, T, hs)
    let q = x.matmul(&wq.transpose(0, 1)); // (B, T, hs)
    let wei = q.matmul(&k.transpose(-2, -1)).mul_scalar(scale); // (B, T, T)
    let future = Tensor::ones(&[t, t]).sub(&Tensor::tril_ones(t, t)); // (T, T)
    let wei = wei.masked_fill(&future, f32::NEG_INFINITY).softmax(-1); // (B, T, T)
    let v = x.matmul(&wv.transpose(0, 1)); // (B, T, hs)
    let out = wei.matmul(&v); // (B, T, hs)
    HeadOutput { wei, out }
}
// ANCHOR_END: version4

/// The numbers of the lecture's scaling demonstration.
#[derive(Clone, Debug)]
pub struct ScalingDemo {
    /// Variance of `k ~ randn(B, T, head_size)`: about 1.
    pub k_var: f32,
    /// Variance of `q`: about 1.
    pub q_var: f32,
    /// Variance of `q @ kᵀ`: about `head_size`.
    pub wei_var_unscaled: f32,
    /// Variance of `q @ kᵀ · head_size^-0.5`: about 1 again.
    pub wei_var_scaled: f32,
    /// `softmax([0.1, -0.2, 0.3, -0.2, 0.5])`: diffuse.
    pub softmax: Vec<f32>,
    /// The same logits times 8: close to one-hot on the largest.
    pub softmax_x8: Vec<f32>,
}

// ANCHOR: scaling
/// Why attention is scaled: with unit-variance q and k, `q·k` sums `head_size`
/// products and has variance `head_size`; softmax of such large values is
/// nearly one-hot, so every position would attend to a single other one.
/// Dividing by `√head_size` restores unit variance.
pub fn scaling_demo(seed: u64) -> ScalingDemo {
    let (b, t, hs) = (4, 8, 16);
    let mut rng = TorchGenerator::manual_seed(seed);
    let k = rng.randn(&[b, t, hs]); // (B, T, hs)
    let q = rng.randn(&[b, t, hs]); // (B, T, hs)
    let raw = q.matmul(&k.transpose(-2, -1)); // (B, T, T)
    let scaled = raw.mul_scalar((hs as f32).powf(-0.5)); // (B, T, T)
                                                         // torch's x.var(): unbiased, over every element.
    let var = |x: &Tensor| x.reshape(&[x.len()]).var(0, false, true).item();
    let logits = Tensor::from_vec(vec![0.1, -0.2, 0.3, -0.2, 0.5], &[5]);
    ScalingDemo {
        k_var: var(&k),
        q_var: var(&q),
        wei_var_unscaled: var(&raw),
        wei_var_scaled: var(&scaled),
        softmax: logits.softmax(-1).to_vec(),
        softmax_x8: logits.mul_scalar(8.0).softmax(-1).to_vec(),
    }
}
// ANCHOR_END: scaling
