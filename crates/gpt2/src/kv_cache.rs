//! Generation with a key/value cache. Without one, each new token runs the
//! whole sequence through the model again: O(T²) work per token. Attention
//! only ever needs the keys and values of the earlier positions, and those
//! never change, so each layer keeps them and a new token costs one position's
//! work plus its attention over the cache. The tokens drawn are the ones
//! [`crate::sample::generate`] draws: the same sampling, a cheaper forward.

use crate::model::Gpt;
use autograd::{ForwardPass, Graph, Params, Var};
use gpt::model::CausalSelfAttention;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// Each layer's keys and values so far, `(B, nh, T, hs)`.
#[derive(Clone)]
pub struct KvCache {
    keys: Vec<Option<Tensor>>,
    values: Vec<Option<Tensor>>,
}

impl KvCache {
    /// An empty cache for `n_layer` layers.
    pub fn new(n_layer: usize) -> KvCache {
        KvCache {
            keys: vec![None; n_layer],
            values: vec![None; n_layer],
        }
    }

    /// Positions cached so far.
    pub fn len(&self) -> usize {
        self.keys
            .first()
            .and_then(|k| k.as_ref())
            .map_or(0, |k| k.shape()[2])
    }

    /// Whether nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ANCHOR: cached_attention
/// `CausalSelfAttention` for `x` `(B, t, C)`, the positions after the `start`
/// cached ones: their queries attend to the cached keys and to their own.
fn cached_attention<'g>(
    attn: &CausalSelfAttention,
    pass: &ForwardPass<'g, '_>,
    x: Var<'g>,
    cache: &mut KvCache,
    layer: usize,
) -> Var<'g> {
    let shape = x.shape();
    let (b, t, c) = (shape[0], shape[1], shape[2]);
    let (nh, hs) = (attn.n_head, c / attn.n_head);
    let start = cache.keys[layer].as_ref().map_or(0, |k| k.shape()[2]);
    let qkv = attn.c_attn.forward(pass, x); // (B, t, 3C)
    let heads = |i: usize| {
        qkv.narrow(-1, i * c, c)
            .reshape(&[b, t, nh, hs])
            .transpose(1, 2)
    }; // (B, nh, t, hs)
    let (q, k, v) = (heads(0), heads(1), heads(2));
    let append = |cached: &Option<Tensor>, new: Var<'g>| match cached {
        Some(old) => Var::concat(&[pass.graph.constant(old.clone()), new], 2), // (B, nh, start + t, hs)
        None => new,
    };
    let k = append(&cache.keys[layer], k);
    let v = append(&cache.values[layer], v);
    cache.keys[layer] = Some(k.value());
    cache.values[layer] = Some(v.value());
    let total = start + t;
    // Query i sits at position start + i and may see keys 0 ..= start + i.
    let future: Vec<f32> = (0..t)
        .flat_map(|i| (0..total).map(move |j| if j > start + i { 1.0 } else { 0.0 }))
        .collect();
    let att = q.matmul(k.transpose(-2, -1)) * (1.0 / (hs as f64).sqrt()) as f32; // (B, nh, t, start + t)
    let att = att.masked_fill(&Tensor::from_vec(future, &[t, total]), f32::NEG_INFINITY);
    let y = att.softmax(-1).matmul(v); // (B, nh, t, hs)
    let y = y.transpose(1, 2).reshape(&[b, t, c]); // (B, t, C)
    attn.c_proj.forward(pass, y) // (B, t, C)
}
// ANCHOR_END: cached_attention

/// The logits `(B, t, V)` of `idx` `(B, t)`, the positions after the cached
/// ones, adding their keys and values to the cache. An error if the positions
/// run past the context, or if the batch is not the cache's.
pub fn forward_cached(
    model: &Gpt,
    params: &Params,
    idx: &[usize],
    b: usize,
    t: usize,
    cache: &mut KvCache,
) -> Result<Tensor, String> {
    let start = cache.len();
    let block_size = model.config.block_size;
    if t == 0 || idx.len() != b * t || start + t > block_size {
        return Err(format!(
            "{} tokens as {b}×{t} after {start} cached: the context holds {block_size}",
            idx.len()
        ));
    }
    if let Some(cached_b) = cache
        .keys
        .first()
        .and_then(|k| k.as_ref())
        .map(|k| k.shape()[0])
        .filter(|&cb| cb != b)
    {
        return Err(format!("a batch of {b} rows on a cache of {cached_b}"));
    }
    if let Some(bad) = idx.iter().find(|&&i| i >= model.config.vocab_size) {
        return Err(format!(
            "token id {bad} is outside the vocabulary of {}",
            model.config.vocab_size
        ));
    }
    let graph = Graph::no_grad();
    let pass = ForwardPass::eval(&graph, params);
    let pos: Vec<usize> = (start..start + t).collect(); // (t,)
    let mut x = model.wte.forward(&pass, idx, &[b, t]) + model.wpe.forward(&pass, &pos, &[t]); // (B, t, C)
    for (layer, block) in model.h.iter().enumerate() {
        let h = block.ln_1.forward(&pass, x);
        x = x + cached_attention(&block.attn, &pass, h, cache, layer); // (B, t, C)
        x = x + block.mlp.forward(&pass, block.ln_2.forward(&pass, x)); // (B, t, C)
    }
    let x = model.ln_f.forward(&pass, x); // (B, t, C)
    Ok(model.lm_head.forward(&pass, x).value()) // (B, t, V)
}

/// [`crate::sample::generate`] with the cache: the prompt in one pass, then
/// one position per new token.
pub fn generate(
    model: &Gpt,
    params: &Params,
    prompt: &[usize],
    num_return_sequences: usize,
    max_length: usize,
    top_k: usize,
    rng: &mut TorchGenerator,
) -> Result<Vec<Vec<usize>>, String> {
    crate::sample::check_request(model, prompt, num_return_sequences, max_length, top_k)?;
    let (b, vocab) = (num_return_sequences, model.config.vocab_size);
    let mut x: Vec<Vec<usize>> = vec![prompt.to_vec(); b];
    let mut cache = KvCache::new(model.config.n_layer);
    let mut fresh: Vec<usize> = x.concat(); // what the cache has not seen, (B, t)
    let mut t = prompt.len();
    while x[0].len() < max_length {
        let logits = forward_cached(model, params, &fresh, b, t, &mut cache)?; // (B, t, V)
        let last = logits.narrow(1, t - 1, 1).reshape(&[b, vocab]); // (B, V)
        let next = crate::sample::draw_top_k(&last, top_k, rng);
        for (seq, &token) in x.iter_mut().zip(&next) {
            seq.push(token);
        }
        fresh = next;
        t = 1;
    }
    Ok(x)
}
