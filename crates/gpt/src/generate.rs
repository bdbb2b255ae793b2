//! Sampling text from a trained model, one character at a time.

use crate::nn::ForwardPass;
use crate::stages::Model;
use autograd::{Graph, Params};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// How to turn the last position's logits into a distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleOptions {
    /// Divide the logits by this (1.0 in the lecture; nanoGPT's sample.py uses 0.8).
    pub temperature: f32,
    /// Keep only the `k` most likely characters (nanoGPT's sample.py: 200, i.e. all 65).
    pub top_k: Option<usize>,
}

impl SampleOptions {
    /// The options, or an error naming the flag: the temperature must be
    /// positive and finite, and top-k at least 1.
    pub fn checked(temperature: f32, top_k: Option<usize>) -> Result<SampleOptions, String> {
        if !(temperature > 0.0 && temperature.is_finite()) {
            return Err(format!("--temperature must be positive, got {temperature}"));
        }
        if top_k == Some(0) {
            return Err("--top-k must be at least 1".into());
        }
        Ok(SampleOptions { temperature, top_k })
    }
}

impl Default for SampleOptions {
    /// The lecture's `generate`: plain softmax, no temperature, no top-k.
    fn default() -> SampleOptions {
        SampleOptions {
            temperature: 1.0,
            top_k: None,
        }
    }
}

// ANCHOR: generate
/// `model.generate(context, max_new_tokens)`: crop the context to the last
/// `block_size` ids, take the logits at the last position, softmax, draw one id
/// with `torch.multinomial`, append, repeat. Returns the context plus the new ids.
pub fn generate(
    model: &Model,
    params: &Params,
    rng: &mut TorchGenerator,
    context: &[usize],
    max_new_tokens: usize,
    opts: SampleOptions,
) -> Vec<usize> {
    let mut idx = context.to_vec();
    for _ in 0..max_new_tokens {
        let start = idx.len().saturating_sub(model.block_size());
        let cond = &idx[start..]; // (1, T)
        let t = cond.len();
        let graph = Graph::no_grad();
        let pass = ForwardPass::eval(&graph, params);
        let logits = model.forward(&pass, cond, 1, t).value(); // (1, T, V)
        let v = logits.shape()[2];
        let mut last = logits.reshape(&[t, v]).narrow(0, t - 1, 1).to_vec(); // (V,)
        if opts.temperature != 1.0 {
            for l in &mut last {
                *l /= opts.temperature;
            }
        }
        if let Some(k) = opts.top_k {
            crop_to_top_k(&mut last, v, k); // logits[logits < v[:, [-1]]] = -inf
        }
        let probs = Tensor::from_vec(last, &[1, v]).softmax(-1); // (1, V)
        let next = rng.multinomial(&probs, 1, false)[0]; // (1, 1)
        idx.push(next as usize);
    }
    idx
}
// ANCHOR_END: generate

/// nanoGPT's `v, _ = torch.topk(logits, min(top_k, V)); logits[logits < v[:, [-1]]] = -inf`
/// on each row of `V` logits: every logit below the row's `k`-th largest
/// becomes `-inf` (ties with it stay). `k` is taken in `1..=V`.
pub fn crop_to_top_k(logits: &mut [f32], v: usize, k: usize) {
    let k = k.clamp(1, v);
    for row in logits.chunks_mut(v) {
        let mut sorted = row.to_vec();
        sorted.sort_unstable_by(|a, b| b.total_cmp(a));
        let kth = sorted[k - 1];
        for x in row.iter_mut() {
            if *x < kth {
                *x = f32::NEG_INFINITY;
            }
        }
    }
}
