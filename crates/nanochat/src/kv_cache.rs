//! nanochat's `KVCache` (`nanochat/engine.py`) and `GPT.forward(idx, kv_cache=…)`: each layer's
//! keys and values kept, so that a sampled token costs one position's work, not the whole
//! sequence's; and the previous token's normed embedding, for the smear.
//!
//! The cache grows as it is filled (nanochat allocates it whole), and a prompt's cache is copied
//! to every sample's row ([`KvCache::replicate`], `KVCache.prefill`). Target
//! (`tests/core_eval.rs`): the engine gives the same tokens with the cache as without it, and
//! both nanochat's.

use crate::gpt::{linear, norm, repeat_kv, Gpt, SMEAR_CHANNELS, SOFTCAP};
use autograd::{ForwardPass, Graph, Var};
use tensor::Tensor;

/// The keys and values of the positions seen so far, per layer, and the last token's normed
/// embedding.
#[derive(Clone, Debug)]
pub struct KvCache {
    /// Per layer: (B, P, KVH, D).
    keys: Vec<Option<Tensor>>,
    /// Per layer: (B, P, KVH, D).
    values: Vec<Option<Tensor>>,
    /// Positions filled, P.
    pub pos: usize,
    /// (B, 1, C): the normed embedding of the last token, before its smear.
    prev_embedding: Option<Tensor>,
}

impl KvCache {
    /// An empty cache for a model of `n_layer` layers.
    pub fn new(n_layer: usize) -> KvCache {
        KvCache {
            keys: vec![None; n_layer],
            values: vec![None; n_layer],
            pos: 0,
            prev_embedding: None,
        }
    }

    /// `KVCache.prefill` from a cache of one row: the same keys, values and embedding in each of
    /// `rows` rows.
    pub fn replicate(&self, rows: usize) -> KvCache {
        let expand = |t: &Tensor| {
            let mut shape = t.shape().to_vec();
            shape[0] = rows;
            t.broadcast_to(&shape).contiguous()
        };
        KvCache {
            keys: self.keys.iter().map(|k| k.as_ref().map(expand)).collect(),
            values: self.values.iter().map(|v| v.as_ref().map(expand)).collect(),
            pos: self.pos,
            prev_embedding: self.prev_embedding.as_ref().map(expand),
        }
    }
}

/// `t` (B, P, KVH, D) with `new` (B, T, KVH, D) after it.
fn appended(old: Option<Tensor>, new: Tensor) -> Tensor {
    match old {
        Some(old) => Tensor::concat(&[&old, &new], 1),
        None => new,
    }
}

impl Gpt {
    // ANCHOR: forward_cached
    /// `GPT.forward(idx, kv_cache=cache)`: the soft-capped logits (B, T, V) of `idx`, B rows of
    /// T new tokens at positions `cache.pos..`, reading and extending `cache`.
    pub fn forward_cached(
        &self,
        idx: &[u32],
        b: usize,
        cache: &mut KvCache,
    ) -> Result<Tensor, String> {
        let t = idx.len() / b;
        let p = cache.pos;
        if t == 0 || p + t > self.cos.shape()[0] {
            return Err(format!(
                "{} positions: the model reads 1 to {}",
                p + t,
                self.cos.shape()[0]
            ));
        }
        let rows: Vec<usize> = idx.iter().map(|&i| i as usize).collect();
        let half = self.config.head_dim() / 2;
        let graph = Graph::no_grad();
        let pass = ForwardPass::eval(&graph, &self.params);
        let cos = graph.constant(self.cos.narrow(0, p, t).reshape(&[1, t, 1, half])); // (1, T, 1, D/2)
        let sin = graph.constant(self.sin.narrow(0, p, t).reshape(&[1, t, 1, half])); // (1, T, 1, D/2)

        let x = norm(pass.param(self.wte).index_rows(&rows, &[b, t])); // (B, T, C)
                                                                       // The smear: within the new tokens as in training; a lone new token takes the cached one.
        let before = cache
            .prev_embedding
            .replace(x.value().narrow(1, t - 1, 1).contiguous()); // (B, 1, C)
        let x = match before {
            _ if t > 1 => self.smear(&pass, x), // (B, T, C)
            Some(prev) => {
                let gate = linear(&pass, x.narrow(2, 0, SMEAR_CHANNELS), self.smear_gate).sigmoid(); // (B, 1, 1)
                let gate = pass.param(self.smear_lambda).mul(gate); // (B, 1, 1)
                x.add(gate.mul(graph.constant(prev))) // (B, 1, C)
            }
            None => x,
        };

        let x0 = x;
        let backout_layer = self.config.n_layer / 2;
        let (resid, x0_lambdas) = (pass.param(self.resid_lambdas), pass.param(self.x0_lambdas)); // (L,)
        let mut x = x;
        let mut x_backout = None;
        for i in 0..self.config.n_layer {
            x = resid
                .narrow(0, i, 1)
                .mul(x)
                .add(x0_lambdas.narrow(0, i, 1).mul(x0)); // (B, T, C)
            let ve = self.value_embeds[i].map(|id| pass.param(id).index_rows(&rows, &[b, t])); // (B, T, kv_dim)
            x = x.add(self.attention_cached(&pass, i, norm(x), ve, (cos, sin), cache)); // (B, T, C)
            x = x.add(self.mlp(&pass, i, norm(x))); // (B, T, C)
            if i == backout_layer {
                x_backout = Some(x);
            }
        }
        cache.pos += t;
        if let Some(mid) = x_backout {
            x = x.sub(pass.param(self.backout_lambda).mul(mid)); // (B, T, C)
        }
        let x = norm(x); // (B, T, C)
        let logits = linear(&pass, x, self.lm_head).narrow(2, 0, self.config.vocab_size); // (B, T, V)
        Ok(logits
            .div_scalar(SOFTCAP)
            .tanh()
            .mul_scalar(SOFTCAP)
            .value()) // (B, T, V)
    }
    // ANCHOR_END: forward_cached

    /// Layer `i`'s attention for the new positions: their keys and values join the cache, and
    /// each new query attends to every cached key up to its own position (within its window).
    fn attention_cached<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        i: usize,
        x: Var<'g>,
        ve: Option<Var<'g>>,
        cos_sin: (Var<'g>, Var<'g>),
        cache: &mut KvCache,
    ) -> Var<'g> {
        let (b, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let (h, d) = (self.config.n_head, self.config.head_dim());
        let (q, k, v) = self.qkv(pass, i, x, ve, cos_sin); // (B, T, H|KVH, D)
        let keys = appended(cache.keys[i].take(), k.value()); // (B, P+T, KVH, D)
        let values = appended(cache.values[i].take(), v.value()); // (B, P+T, KVH, D)
        cache.keys[i] = Some(keys.clone());
        cache.values[i] = Some(values.clone());
        let graph = pass.graph;
        let q = q.transpose(1, 2); // (B, H, T, D)
        let k = repeat_kv(graph.constant(keys).transpose(1, 2), h); // (B, H, P+T, D)
        let v = repeat_kv(graph.constant(values).transpose(1, 2), h); // (B, H, P+T, D)
        let seen = k.shape()[2];
        let p = seen - t;
        // Query i, at position p + i, sees keys p + i − window ..= p + i.
        let window = self.window_sizes[i];
        let hidden: Vec<f32> = (0..t)
            .flat_map(|qi| {
                (0..seen).map(move |j| {
                    let at = p + qi;
                    (j > at || at.saturating_sub(window) > j) as u8 as f32
                })
            })
            .collect();
        let mask = Tensor::from_vec(hidden, &[t, seen]); // (T, P+T)
        let scale = (1.0 / (d as f64).sqrt()) as f32;
        let att = q.matmul(k.transpose(-2, -1)).mul_scalar(scale); // (B, H, T, P+T)
        let att = att.masked_fill(&mask, f32::NEG_INFINITY).softmax(-1); // (B, H, T, P+T)
        let y = att.matmul(v); // (B, H, T, D)
        let y = y.transpose(1, 2).reshape(&[b, t, c]); // (B, T, C)
        linear(pass, y, self.blocks[i].c_proj) // (B, T, C)
    }
}
