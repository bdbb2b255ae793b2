//! nanochat's `KVCache` (`nanochat/engine.py`), which `GPT.forward(idx, kv_cache=…)`
//! ([`Gpt::forward`]) reads and extends: each layer's keys and values kept, so that a sampled
//! token costs one position's work, not the whole sequence's; and the previous token's normed
//! embedding, for the smear.
//!
//! The cache grows as it is filled (nanochat allocates it whole), and a prompt's cache is copied
//! to every sample's row ([`KvCache::replicate`], `KVCache.prefill`). Target
//! (`tests/core_eval.rs`): the engine gives the same tokens with the cache as without it, and
//! both nanochat's.

use crate::gpt::{linear, repeat_kv, Gpt, SMEAR_CHANNELS};
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

impl KvCache {
    /// Stores the normed embedding `x` (B, T, C)'s last position as the one the next token
    /// smears in, and gives the one stored before, if any.
    pub(crate) fn swap_last_embedding(&mut self, x: &Var<'_>) -> Option<Tensor> {
        let t = x.shape()[1];
        self.prev_embedding
            .replace(x.value().narrow(1, t - 1, 1).contiguous()) // (B, 1, C)
    }

    // ANCHOR: attend
    /// Layer `layer`'s attention for T new positions, given their queries `q` (B, T, H, D) and
    /// keys and values `k`, `v` (B, T, KVH, D): the keys and values join the cache, and each
    /// new query attends to every cached key up to its own position, within `window`.
    /// Returns (B, H, T, D).
    pub(crate) fn attend<'g>(
        &mut self,
        graph: &'g Graph,
        layer: usize,
        q: Var<'g>,
        k: Var<'g>,
        v: Var<'g>,
        window: usize,
    ) -> Var<'g> {
        let (t, h, d) = (q.shape()[1], q.shape()[2], q.shape()[3]);
        let keys = appended(self.keys[layer].take(), k.value()); // (B, P+T, KVH, D)
        let values = appended(self.values[layer].take(), v.value()); // (B, P+T, KVH, D)
        self.keys[layer] = Some(keys.clone());
        self.values[layer] = Some(values.clone());
        let q = q.transpose(1, 2); // (B, H, T, D)
        let k = repeat_kv(graph.constant(keys).transpose(1, 2), h); // (B, H, P+T, D)
        let v = repeat_kv(graph.constant(values).transpose(1, 2), h); // (B, H, P+T, D)
        let seen = k.shape()[2];
        let p = seen - t;
        // Query i, at position p + i, sees keys p + i − window ..= p + i.
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
        att.matmul(v) // (B, H, T, D)
    }
    // ANCHOR_END: attend
}

impl Gpt {
    /// The smear for one new token `x` (B, 1, C): the cached previous embedding `prev`
    /// (B, 1, C), through the same gate as [`Gpt::smear`].
    pub(crate) fn smear_after<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        x: Var<'g>,
        prev: Tensor,
    ) -> Var<'g> {
        let gate = linear(pass, x.narrow(2, 0, SMEAR_CHANNELS), self.smear_gate).sigmoid(); // (B, 1, 1)
        let gate = pass.param(self.smear_lambda).mul(gate); // (B, 1, 1)
        x.add(gate.mul(pass.graph.constant(prev))) // (B, 1, C)
    }

    /// [`Gpt::forward`] with `cache`, in a graph of its own: the logits (B, T, V) of B rows of
    /// T new tokens at positions `cache.pos..`, or an error when they run past the model's
    /// positions.
    pub fn forward_cached(
        &self,
        idx: &[u32],
        b: usize,
        cache: &mut KvCache,
    ) -> Result<Tensor, String> {
        let t = idx.len() / b;
        if t == 0 || cache.pos + t > self.cos.shape()[0] {
            return Err(format!(
                "{} positions: the model reads 1 to {}",
                cache.pos + t,
                self.cos.shape()[0]
            ));
        }
        let graph = Graph::no_grad();
        let pass = ForwardPass::eval(&graph, &self.params);
        Ok(self.forward(&pass, idx, b, Some(cache)).value()) // (B, T, V)
    }
}
