//! nanochat's `gpt.py` at 92d63d4: the GPT of the whole series, with what modded-nanogpt and
//! nanochat's own runs found since build-nanogpt.
//!
//! In `gpt.py`'s order: rotary embeddings (base 100,000, nanochat's sign) and no position
//! embeddings; RMSNorm without weights, after the token embedding too; QK norm and a 1.2 scale;
//! a ReLU² MLP; value embeddings on alternating layers (the last always) mixed into `v` through a
//! gate; the smear (the previous token's embedding mixed in); per-layer scalars on the residual
//! stream and on the first embedding `x0`; the backout (half the way up, subtracted at the end);
//! sliding-window attention by a pattern of `S` and `L` (the last layer always `L`); grouped-query
//! attention; no biases; an untied head padded to a multiple of 64, its logits soft-capped at
//! 15·tanh(z/15); the loss ignoring targets of −1.

use crate::kv_cache::KvCache;
use crate::optim::{Group, Kind, MuonAdamW};
use autograd::{ForwardPass, ParamId, Params, Var};
use serde::{Deserialize, Serialize};
use tensor::attention::Attention;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// `F.rms_norm`'s eps when none is given: `torch.finfo(torch.float32).eps`.
const RMS_EPS: f32 = f32::EPSILON;
/// `logits = 15 · tanh(logits / 15)`.
pub(crate) const SOFTCAP: f32 = 15.0;
/// The channels of `x` that the value-embedding gate reads.
const VE_GATE_CHANNELS: usize = 12;
/// The channels the smear gate reads.
pub(crate) const SMEAR_CHANNELS: usize = 24;

/// `GPTConfig`: the model's shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GptConfig {
    /// The longest context.
    pub sequence_len: usize,
    /// Tokens in the vocabulary (the tokenizer's, specials included).
    pub vocab_size: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads (grouped-query attention when fewer than `n_head`).
    pub n_kv_head: usize,
    /// Width of the residual stream.
    pub n_embd: usize,
    /// `L` (full context) and `S` (a quarter, rounded up to 128), tiled over the layers.
    /// Checkpoints older than sliding windows have none: `L` (checkpoint_manager.py's
    /// `_patch_missing_config_keys`).
    #[serde(default = "full_context")]
    pub window_pattern: String,
}

fn full_context() -> String {
    "L".into()
}

impl GptConfig {
    /// `base_train.py`'s `build_model_meta`: the width is `depth × aspect_ratio` rounded up to a
    /// multiple of `head_dim`, so every head is exactly `head_dim` wide.
    pub fn from_depth(
        depth: usize,
        aspect_ratio: usize,
        head_dim: usize,
        max_seq_len: usize,
        vocab_size: usize,
        window_pattern: &str,
    ) -> Result<GptConfig, String> {
        if depth == 0 {
            return Err("--depth must be at least 1".into());
        }
        if head_dim == 0 || aspect_ratio == 0 {
            return Err("--head-dim and --aspect-ratio must be at least 1".into());
        }
        let base_dim = depth * aspect_ratio;
        let model_dim = base_dim.div_ceil(head_dim) * head_dim;
        let num_heads = model_dim / head_dim;
        let config = GptConfig {
            sequence_len: max_seq_len,
            vocab_size,
            n_layer: depth,
            n_head: num_heads,
            n_kv_head: num_heads,
            n_embd: model_dim,
            window_pattern: window_pattern.to_string(),
        };
        config.check()?;
        Ok(config)
    }

    /// What `GPT.__init__` asserts, as errors.
    pub fn check(&self) -> Result<(), String> {
        if self.n_layer == 0 || self.n_head == 0 || self.n_kv_head == 0 || self.sequence_len < 2 {
            return Err(format!(
                "a model needs layers, heads and a context of 2 or more: {self:?}"
            ));
        }
        if !self.n_embd.is_multiple_of(self.n_head) {
            return Err(format!(
                "the width {} is not a multiple of the {} heads",
                self.n_embd, self.n_head
            ));
        }
        if self.n_kv_head > self.n_head || !self.n_head.is_multiple_of(self.n_kv_head) {
            return Err(format!(
                "{} query heads cannot share {} key/value heads",
                self.n_head, self.n_kv_head
            ));
        }
        if !self.head_dim().is_multiple_of(2) {
            return Err(format!(
                "rotary embeddings need an even head dimension, not {}",
                self.head_dim()
            ));
        }
        if self.n_embd < SMEAR_CHANNELS {
            return Err(format!(
                "the smear gate reads 24 channels; the width is {}",
                self.n_embd
            ));
        }
        self.window_sizes().map(|_| ())
    }

    /// Width of one head.
    pub fn head_dim(&self) -> usize {
        self.n_embd / self.n_head
    }

    /// The vocabulary padded to a multiple of 64 (`pad_vocab_size_to`); the extra logits are
    /// cropped in `forward`.
    pub fn padded_vocab_size(&self) -> usize {
        self.vocab_size.div_ceil(64) * 64
    }

    /// `_compute_window_sizes`: each layer's window (how many earlier keys a query sees), `L`
    /// the whole context, `S` a quarter of it rounded up to FA3's tile of 128; the last layer `L`.
    pub fn window_sizes(&self) -> Result<Vec<usize>, String> {
        let pattern = self.window_pattern.to_uppercase();
        if pattern.is_empty() || !pattern.chars().all(|c| c == 'S' || c == 'L') {
            return Err(format!(
                "invalid --window-pattern {:?}: use only S and L",
                self.window_pattern
            ));
        }
        let long = self.sequence_len;
        // -(-long // 4 // 128) * 128, with Python's floor division.
        let short = -((-(long as i64)).div_euclid(4).div_euclid(128)) as usize * 128;
        let chars: Vec<char> = pattern.chars().collect();
        let mut sizes: Vec<usize> = (0..self.n_layer)
            .map(|i| {
                if chars[i % chars.len()] == 'L' {
                    long
                } else {
                    short
                }
            })
            .collect();
        *sizes.last_mut().expect("at least one layer") = long;
        Ok(sizes)
    }

    /// `has_ve`: value embeddings on alternating layers, the last one always included.
    pub fn has_ve(&self, layer: usize) -> bool {
        layer % 2 == (self.n_layer - 1) % 2
    }

    /// `GPT.num_scaling_params()`, from the shapes [`Gpt::zeros`] gives each parameter, so that
    /// base_train plans its horizon without building the model: the counts by group, as
    /// base_train prints them.
    pub fn num_scaling_params(&self) -> Vec<(&'static str, usize)> {
        let (c, l, v, hd) = (
            self.n_embd,
            self.n_layer,
            self.padded_vocab_size(),
            self.head_dim(),
        );
        let kv = self.n_kv_head * hd;
        let ve_layers = (0..l).filter(|&i| self.has_ve(i)).count();
        let wte = v * c;
        let value_embeds = ve_layers * v * kv;
        let lm_head = v * c;
        // Per block: c_q, c_k, c_v, c_proj, the MLP's two (8C²); a ve_gate where the layer has one.
        let transformer_matrices = l * (self.n_head * hd * c + 2 * kv * c + c * c + 8 * c * c)
            + ve_layers * self.n_kv_head * VE_GATE_CHANNELS;
        // resid_lambdas, x0_lambdas, smear_gate, smear_lambda, backout_lambda.
        let scalars = 2 * l + SMEAR_CHANNELS + 1 + 1;
        let total = wte + value_embeds + lm_head + transformer_matrices + scalars;
        vec![
            ("wte", wte),
            ("value_embeds", value_embeds),
            ("lm_head", lm_head),
            ("transformer_matrices", transformer_matrices),
            ("scalars", scalars),
            ("total", total),
        ]
    }

    /// `get_scaling_params`: `transformer_matrices + lm_head`, what the horizon scales with.
    pub fn scaling_params(&self) -> usize {
        let count = |group| {
            self.num_scaling_params()
                .into_iter()
                .find(|&(name, _)| name == group)
                .map_or(0, |(_, n)| n)
        };
        count("transformer_matrices") + count("lm_head")
    }
}

/// One block's weights: attention's `c_q`, `c_k`, `c_v`, `c_proj` and `ve_gate`, the MLP's `c_fc`
/// and `c_proj`.
#[derive(Clone, Debug)]
pub struct Block {
    /// `attn.c_q`: (n_head·head_dim, n_embd).
    pub c_q: ParamId,
    /// `attn.c_k`: (n_kv_head·head_dim, n_embd).
    pub c_k: ParamId,
    /// `attn.c_v`: (n_kv_head·head_dim, n_embd).
    pub c_v: ParamId,
    /// `attn.c_proj`: (n_embd, n_embd).
    pub c_proj: ParamId,
    /// `attn.ve_gate`: (n_kv_head, 12), on the layers with value embeddings.
    pub ve_gate: Option<ParamId>,
    /// `mlp.c_fc`: (4·n_embd, n_embd).
    pub c_fc: ParamId,
    /// `mlp.c_proj`: (n_embd, 4·n_embd).
    pub mlp_c_proj: ParamId,
}

/// `GPT`: its parameters (in a [`Params`] of their own, by PyTorch's names) and the rotary tables.
pub struct Gpt {
    /// The model's shape.
    pub config: GptConfig,
    /// The parameters, in `named_parameters()` order.
    pub params: Params,
    /// `resid_lambdas`: (n_layer,).
    pub resid_lambdas: ParamId,
    /// `x0_lambdas`: (n_layer,).
    pub x0_lambdas: ParamId,
    /// `smear_lambda`: (1,).
    pub smear_lambda: ParamId,
    /// `backout_lambda`: (1,).
    pub backout_lambda: ParamId,
    /// `transformer.wte`: (padded_vocab, n_embd).
    pub wte: ParamId,
    /// `transformer.h`.
    pub blocks: Vec<Block>,
    /// `lm_head`: (padded_vocab, n_embd).
    pub lm_head: ParamId,
    /// `smear_gate`: (1, 24).
    pub smear_gate: ParamId,
    /// `value_embeds.{i}`: (padded_vocab, n_kv_head·head_dim), on the layers that have one.
    pub value_embeds: Vec<Option<ParamId>>,
    /// Each layer's attention window.
    pub window_sizes: Vec<usize>,
    /// `cos` and `sin`: (rotary_seq_len, head_dim/2).
    pub cos: Tensor,
    /// See `cos`.
    pub sin: Tensor,
}

/// `_precompute_rotary_embeddings(seq_len, head_dim, base=100000)` in float32:
/// `(cos, sin)`, each (seq_len, head_dim/2).
pub fn rotary_tables(seq_len: usize, head_dim: usize) -> (Tensor, Tensor) {
    let half = head_dim / 2;
    let inv_freq: Vec<f32> = (0..half)
        .map(|i| 1.0 / 100000f32.powf((2 * i) as f32 / head_dim as f32))
        .collect();
    let mut cos = Vec::with_capacity(seq_len * half);
    let mut sin = Vec::with_capacity(seq_len * half);
    for t in 0..seq_len {
        for &f in &inv_freq {
            let angle = t as f32 * f;
            cos.push(angle.cos());
            sin.push(angle.sin());
        }
    }
    (
        Tensor::from_vec(cos, &[seq_len, half]),
        Tensor::from_vec(sin, &[seq_len, half]),
    )
}

// ANCHOR: norm
/// `norm(x)`: `F.rms_norm` over the last axis, with no weight: `x / √(mean(x²) + eps)`.
pub fn norm<'g>(x: Var<'g>) -> Var<'g> {
    let ms = x.mul(x).mean_axes(&[-1], true); // (…, 1)
    x.div(ms.add_scalar(RMS_EPS).sqrt()) // (…, C)
}
// ANCHOR_END: norm

/// `F.linear(x, w)` with no bias, for `x` of shape (…, in) and `w` of (out, in).
pub(crate) fn linear<'g>(pass: &ForwardPass<'g, '_>, x: Var<'g>, w: ParamId) -> Var<'g> {
    let shape = x.shape();
    let fan_in = *shape.last().expect("an input axis");
    let w = pass.param(w); // (out, in)
    let rows = shape.iter().product::<usize>() / fan_in.max(1);
    let y = x.reshape(&[rows, fan_in]).linear(w, None); // (N, out)
    let mut out = shape;
    *out.last_mut().unwrap() = w.shape()[0];
    y.reshape(&out) // (…, out)
}

// ANCHOR: apply_rotary_emb
/// `apply_rotary_emb`: each pair (x1, x2) of the two halves of a head rotated by −θ, the
/// transpose of the textbook's (nanochat keeps it for its checkpoints; only relative rotations
/// matter). `x` is (B, T, H, D); `cos`, `sin` are (1, T, 1, D/2).
pub fn apply_rotary_emb<'g>(x: Var<'g>, cos: Var<'g>, sin: Var<'g>) -> Var<'g> {
    let d = x.shape()[3] / 2;
    let (x1, x2) = (x.narrow(3, 0, d), x.narrow(3, d, d)); // (B, T, H, D/2) each
    let y1 = x1.mul(cos).add(x2.mul(sin)); // (B, T, H, D/2)
    let y2 = x2.mul(cos).sub(x1.mul(sin)); // (B, T, H, D/2)
    Var::concat(&[y1, y2], 3) // (B, T, H, D)
}
// ANCHOR_END: apply_rotary_emb

impl Gpt {
    /// `GPT(config)` then `init_weights()`, drawing from `rng` (base_train seeds it with
    /// `torch.manual_seed(42)`) in `init_weights`' order.
    pub fn new(config: GptConfig, rng: &mut TorchGenerator) -> Result<Gpt, String> {
        config.check()?;
        let mut gpt = Gpt::zeros(config)?;
        gpt.init_weights(rng);
        Ok(gpt)
    }

    /// The parameters with their shapes and names, all zero (`GPT.__init__` on the meta device).
    pub fn zeros(config: GptConfig) -> Result<Gpt, String> {
        config.check()?;
        let (c, l, v) = (config.n_embd, config.n_layer, config.padded_vocab_size());
        let hd = config.head_dim();
        let kv = config.n_kv_head * hd;
        let mut params = Params::new();
        let mut add = |name: &str, shape: &[usize]| params.add(name, Tensor::zeros(shape));
        // GPT's own parameters come first in named_parameters(), then its modules'.
        let resid_lambdas = add("resid_lambdas", &[l]);
        let x0_lambdas = add("x0_lambdas", &[l]);
        let smear_lambda = add("smear_lambda", &[1]);
        let backout_lambda = add("backout_lambda", &[1]);
        let wte = add("transformer.wte.weight", &[v, c]);
        let blocks = (0..l)
            .map(|i| {
                let p = format!("transformer.h.{i}");
                Block {
                    c_q: add(&format!("{p}.attn.c_q.weight"), &[config.n_head * hd, c]),
                    c_k: add(&format!("{p}.attn.c_k.weight"), &[kv, c]),
                    c_v: add(&format!("{p}.attn.c_v.weight"), &[kv, c]),
                    c_proj: add(&format!("{p}.attn.c_proj.weight"), &[c, c]),
                    ve_gate: config.has_ve(i).then(|| {
                        add(
                            &format!("{p}.attn.ve_gate.weight"),
                            &[config.n_kv_head, VE_GATE_CHANNELS],
                        )
                    }),
                    c_fc: add(&format!("{p}.mlp.c_fc.weight"), &[4 * c, c]),
                    mlp_c_proj: add(&format!("{p}.mlp.c_proj.weight"), &[c, 4 * c]),
                }
            })
            .collect();
        let lm_head = add("lm_head.weight", &[v, c]);
        let smear_gate = add("smear_gate.weight", &[1, SMEAR_CHANNELS]);
        let value_embeds = (0..l)
            .map(|i| {
                config
                    .has_ve(i)
                    .then(|| add(&format!("value_embeds.{i}.weight"), &[v, kv]))
            })
            .collect();
        let window_sizes = config.window_sizes()?;
        // 10× the context, as gpt.py over-computes them.
        let (cos, sin) = rotary_tables(config.sequence_len * 10, hd);
        Ok(Gpt {
            config,
            params,
            resid_lambdas,
            x0_lambdas,
            smear_lambda,
            backout_lambda,
            wte,
            blocks,
            lm_head,
            smear_gate,
            value_embeds,
            window_sizes,
            cos,
            sin,
        })
    }

    // ANCHOR: init_weights
    /// `init_weights`: embeddings N(0, 0.8²), the head N(0, 0.001²), the block matrices uniform
    /// with the standard deviation of N(0, 1/n_embd) (`c_fc` at 0.4 of it), the projections zero,
    /// the per-layer scalars on their ramps, the gates U(0, 0.02), the value embeddings like `c_v`.
    pub fn init_weights(&mut self, rng: &mut TorchGenerator) {
        let c = self.config.n_embd;
        let l = self.config.n_layer;
        let set =
            |params: &mut Params, id: ParamId, value: Tensor| params.get_mut(id).value = value;
        let shape = |params: &Params, id: ParamId| params.value(id).shape().to_vec();
        let p = &mut self.params;
        set(p, self.wte, rng.normal(0.0, 0.8, &shape(p, self.wte)));
        set(
            p,
            self.lm_head,
            rng.normal(0.0, 0.001, &shape(p, self.lm_head)),
        );
        // Uniform's bound √3·σ gives it σ's standard deviation: σ = 1/√n_embd.
        let s = 3f64.sqrt() * (c as f64).powf(-0.5);
        for block in &self.blocks {
            for id in [block.c_q, block.c_k, block.c_v] {
                set(p, id, rng.uniform(-s as f32, s as f32, &shape(p, id)));
            }
            set(p, block.c_proj, Tensor::zeros(&shape(p, block.c_proj)));
            let fc = (-s * 0.4, s * 0.4);
            set(
                p,
                block.c_fc,
                rng.uniform(fc.0 as f32, fc.1 as f32, &shape(p, block.c_fc)),
            );
            set(
                p,
                block.mlp_c_proj,
                Tensor::zeros(&shape(p, block.mlp_c_proj)),
            );
        }
        // Stronger residual and more of x0 at the early layers.
        let ramp = |top: f64, drop: f64| -> Tensor {
            let v = (0..l).map(|i| (top - drop * i as f64 / (l.max(2) - 1) as f64) as f32);
            Tensor::from_vec(v.collect(), &[l])
        };
        set(p, self.resid_lambdas, ramp(1.15, 0.10));
        set(p, self.x0_lambdas, ramp(0.20, 0.15));
        set(p, self.smear_lambda, Tensor::zeros(&[1]));
        set(p, self.backout_lambda, Tensor::full(&[1], 0.2));
        set(
            p,
            self.smear_gate,
            rng.uniform(0.0, 0.02, &shape(p, self.smear_gate)),
        );
        for &id in self.value_embeds.iter().flatten() {
            set(p, id, rng.uniform(-s as f32, s as f32, &shape(p, id)));
        }
        for block in &self.blocks {
            if let Some(id) = block.ve_gate {
                set(p, id, rng.uniform(0.0, 0.02, &shape(p, id)));
            }
        }
    }
    // ANCHOR_END: init_weights

    // ANCHOR: attention
    /// The queries, keys and values of layer `i` for `x` (B, T, C), already normed: projected,
    /// the value embedding `ve` (B, T, kv_dim) gated in where the layer has one, rotated by
    /// `cos_sin` (the rows of the positions), QK-normed. Returns (B, T, H, D) and twice
    /// (B, T, KVH, D).
    pub(crate) fn qkv<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        i: usize,
        x: Var<'g>,
        ve: Option<Var<'g>>,
        cos_sin: (Var<'g>, Var<'g>),
    ) -> (Var<'g>, Var<'g>, Var<'g>) {
        let block = &self.blocks[i];
        let (b, t) = (x.shape()[0], x.shape()[1]);
        let (h, kvh, d) = (
            self.config.n_head,
            self.config.n_kv_head,
            self.config.head_dim(),
        );
        let q = linear(pass, x, block.c_q).reshape(&[b, t, h, d]); // (B, T, H, D)
        let k = linear(pass, x, block.c_k).reshape(&[b, t, kvh, d]); // (B, T, KVH, D)
        let mut v = linear(pass, x, block.c_v).reshape(&[b, t, kvh, d]); // (B, T, KVH, D)
                                                                         // Value residual (ResFormer): the value embedding, through a gate in (0, 3) per head.
        if let (Some(ve), Some(gate)) = (ve, block.ve_gate) {
            let ve = ve.reshape(&[b, t, kvh, d]); // (B, T, KVH, D)
            let g = linear(pass, x.narrow(2, 0, VE_GATE_CHANNELS), gate); // (B, T, KVH)
            let g = g.sigmoid().mul_scalar(3.0).unsqueeze(-1); // (B, T, KVH, 1)
            v = v.add(g.mul(ve)); // (B, T, KVH, D)
        }
        let (cos, sin) = cos_sin;
        let (q, k) = (apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)); // (B, T, H|KVH, D)
        let q = norm(q).mul_scalar(1.2); // (B, T, H, D): QK norm, then sharper attention
        let k = norm(k).mul_scalar(1.2); // (B, T, KVH, D)
        (q, k, v)
    }

    /// `CausalSelfAttention.forward` of layer `i` on `x` (B, T, C), already normed, with the
    /// layer's value embedding `ve` (B, T, kv_dim) if it has one. With a cache, the T
    /// positions are new ones: their keys and values join the cache, and they attend to it.
    fn attention<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        i: usize,
        x: Var<'g>,
        ve: Option<Var<'g>>,
        cos_sin: (Var<'g>, Var<'g>),
        cache: Option<&mut KvCache>,
    ) -> Var<'g> {
        let (b, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let (h, d) = (self.config.n_head, self.config.head_dim());
        let (q, k, v) = self.qkv(pass, i, x, ve, cos_sin); // (B, T, H|KVH, D)
        let window = self.window_sizes[i];
        let y = match cache {
            Some(cache) => cache.attend(pass.graph, i, q, k, v, window), // (B, H, T, D)
            None => {
                let q = q.transpose(1, 2); // (B, H, T, D)
                let (k, v) = (
                    repeat_kv(k.transpose(1, 2), h),
                    repeat_kv(v.transpose(1, 2), h),
                ); // (B, H, T, D)
                let op = Attention {
                    // A window that covers the whole sequence is plain causal attention.
                    window: (window < t).then_some(window),
                    ..Attention::scaled_dot_product(true, d)
                };
                q.attention(k, v, op) // (B, H, T, D)
            }
        };
        let y = y.transpose(1, 2).reshape(&[b, t, c]); // (B, T, C)
        linear(pass, y, self.blocks[i].c_proj) // (B, T, C)
    }
    // ANCHOR_END: attention

    // ANCHOR: mlp
    /// `MLP.forward`: `c_fc`, ReLU², `c_proj`.
    pub(crate) fn mlp<'g>(&self, pass: &ForwardPass<'g, '_>, i: usize, x: Var<'g>) -> Var<'g> {
        let x = linear(pass, x, self.blocks[i].c_fc).relu(); // (B, T, 4C)
        let x = x.mul(x); // (B, T, 4C): .square()
        linear(pass, x, self.blocks[i].mlp_c_proj) // (B, T, C)
    }
    // ANCHOR_END: mlp

    // ANCHOR: smear
    /// The smear: the previous token's embedding, through a gate, into each position after the
    /// first, (B, T, C) to (B, T, C).
    pub(crate) fn smear<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let t = x.shape()[1];
        let rest = x.narrow(1, 1, t - 1); // (B, T-1, C)
        let gate = linear(pass, rest.narrow(2, 0, SMEAR_CHANNELS), self.smear_gate).sigmoid(); // (B, T-1, 1)
        let gate = pass.param(self.smear_lambda).mul(gate); // (B, T-1, 1)
        let smeared = rest.add(gate.mul(x.narrow(1, 0, t - 1))); // (B, T-1, C)
        Var::concat(&[x.narrow(1, 0, 1), smeared], 1) // (B, T, C)
    }
    // ANCHOR_END: smear

    // ANCHOR: forward
    /// `GPT.forward(idx, kv_cache=cache)`: the soft-capped logits, (B, T, vocab_size), for
    /// `idx` given as B rows of T token ids. With a cache, the tokens are new ones at positions
    /// `cache.pos..`, which read the cache and join it.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[u32],
        b: usize,
        mut cache: Option<&mut KvCache>,
    ) -> Var<'g> {
        let t = idx.len() / b;
        let p = cache.as_ref().map_or(0, |c| c.pos);
        assert!(
            t >= 1 && p + t <= self.cos.shape()[0],
            "a forward needs 1 <= T and P + T <= 10·sequence_len, not T = {t}, P = {p}"
        );
        let rows: Vec<usize> = idx.iter().map(|&i| i as usize).collect();
        let half = self.config.head_dim() / 2;
        let graph = pass.graph;
        let cos = graph.constant(self.cos.narrow(0, p, t).reshape(&[1, t, 1, half])); // (1, T, 1, D/2)
        let sin = graph.constant(self.sin.narrow(0, p, t).reshape(&[1, t, 1, half])); // (1, T, 1, D/2)

        let x = pass.param(self.wte).index_rows(&rows, &[b, t]); // (B, T, C)
        let x = norm(x); // (B, T, C)
        let cached = cache.as_mut().and_then(|c| c.swap_last_embedding(&x)); // (B, 1, C)
        let x = match cached {
            _ if t > 1 => self.smear(pass, x),             // (B, T, C)
            Some(prev) => self.smear_after(pass, x, prev), // (B, 1, C)
            // A lone token (sampling from <|bos|>) has no previous one to smear in.
            None => x,
        };

        let x0 = x; // the normed embedding, blended back in at every layer
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
            let layer_cache = cache.as_deref_mut();
            x = x.add(self.attention(pass, i, norm(x), ve, (cos, sin), layer_cache)); // (B, T, C)
            x = x.add(self.mlp(pass, i, norm(x))); // (B, T, C)
            if i == backout_layer {
                x_backout = Some(x);
            }
        }
        if let Some(cache) = cache {
            cache.pos += t;
        }
        // Backout: take away some of the mid-layer residual before the head.
        if let Some(mid) = x_backout {
            x = x.sub(pass.param(self.backout_lambda).mul(mid)); // (B, T, C)
        }
        let x = norm(x); // (B, T, C)
        let logits = linear(pass, x, self.lm_head); // (B, T, padded_vocab)
        let logits = logits.narrow(2, 0, self.config.vocab_size); // (B, T, V)
        logits.div_scalar(SOFTCAP).tanh().mul_scalar(SOFTCAP) // (B, T, V): within (−15, 15)
    }
    // ANCHOR_END: forward

    // ANCHOR: loss
    /// `GPT.forward(idx, targets)`: the mean cross-entropy over the targets that are not −1
    /// (`ignore_index=-1`).
    pub fn loss<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[u32],
        targets: &[i32],
        b: usize,
    ) -> Var<'g> {
        let v = self.config.vocab_size;
        let logits = self
            .forward(pass, idx, b, None)
            .reshape(&[targets.len(), v]); // (B·T, V)
        if targets.iter().all(|&y| y >= 0) {
            let ys: Vec<usize> = targets.iter().map(|&y| y as usize).collect();
            return logits.cross_entropy_fast(&ys); // ()
        }
        let kept: Vec<usize> = (0..targets.len()).filter(|&i| targets[i] >= 0).collect();
        let ys: Vec<usize> = kept.iter().map(|&i| targets[i] as usize).collect();
        logits
            .index_rows(&kept, &[kept.len()])
            .cross_entropy_fast(&ys) // (): over the kept rows
    }
    // ANCHOR_END: loss

    /// `loss_reduction='none'` without a graph: each position's loss, (B·T), 0 where the target
    /// is −1.
    pub fn token_losses(&self, idx: &[u32], targets: &[i32], b: usize) -> Vec<f32> {
        let graph = autograd::Graph::no_grad();
        let pass = ForwardPass::eval(&graph, &self.params);
        let v = self.config.vocab_size;
        let logp = self
            .forward(&pass, idx, b, None)
            .value()
            .reshape(&[targets.len(), v])
            .log_softmax(-1);
        let ys: Vec<usize> = targets.iter().map(|&y| y.max(0) as usize).collect();
        let picked = logp.gather_last(&ys).to_vec();
        picked
            .iter()
            .zip(targets)
            .map(|(&lp, &y)| if y < 0 { 0.0 } else { -lp })
            .collect()
    }

    /// `num_scaling_params`: the parameter counts by group, as base_train prints them
    /// ([`GptConfig::num_scaling_params`]).
    pub fn num_scaling_params(&self) -> Vec<(&'static str, usize)> {
        self.config.num_scaling_params()
    }

    /// The blocks' matrices (`transformer.h.parameters()`), in order: what Muon trains.
    pub fn matrix_params(&self) -> Vec<ParamId> {
        let mut out = Vec::new();
        for b in &self.blocks {
            out.extend([b.c_q, b.c_k, b.c_v, b.c_proj]);
            out.extend(b.ve_gate);
            out.extend([b.c_fc, b.mlp_c_proj]);
        }
        out
    }

    /// `num_matmul_params`: every `Linear`'s weight.
    pub fn num_matmul_params(&self) -> usize {
        let n = |id: ParamId| self.params.value(id).len();
        self.matrix_params().iter().map(|&id| n(id)).sum::<usize>()
            + n(self.lm_head)
            + n(self.smear_gate)
    }

    /// `estimate_flops`: per token, forward and backward: 6 per matmul parameter, and
    /// 12·h·q·(window) for attention.
    pub fn estimate_flops(&self) -> f64 {
        let (h, q, t) = (
            self.config.n_head,
            self.config.head_dim(),
            self.config.sequence_len,
        );
        let attn: usize = self
            .window_sizes
            .iter()
            .map(|&w| 12 * h * q * w.min(t))
            .sum();
        (6 * self.num_matmul_params() + attn) as f64
    }
}

/// `enable_gqa`: each key/value head serves `h / kvh` query heads in a row, (B, KVH, T, D) ->
/// (B, H, T, D).
pub(crate) fn repeat_kv<'g>(x: Var<'g>, h: usize) -> Var<'g> {
    let kvh = x.shape()[1];
    if kvh == h {
        return x;
    }
    let group = h / kvh;
    let heads: Vec<Var<'g>> = (0..h).map(|j| x.narrow(1, j / group, 1)).collect();
    Var::concat(&heads, 1) // (B, H, T, D)
}

impl Gpt {
    // ANCHOR: setup_optimizer
    /// `setup_optimizer`: six AdamW groups (the head, the embedding, the value embeddings, the
    /// two per-layer scalars, the smear and backout scalars), their rates scaled by
    /// 1/√(n_embd/768), then one Muon group per matrix shape, shapes in sorted order.
    pub fn setup_optimizer(
        &self,
        unembedding_lr: f64,
        embedding_lr: f64,
        matrix_lr: f64,
        weight_decay: f64,
        scalar_lr: f64,
    ) -> MuonAdamW {
        let dmodel_lr_scale = (self.config.n_embd as f64 / 768.0).powf(-0.5);
        let adamw = |params: Vec<ParamId>, lr: f64, betas: (f64, f64), weight_decay: f64| Group {
            params,
            lr,
            initial_lr: lr,
            kind: Kind::AdamW {
                betas,
                eps: 1e-10,
                weight_decay,
            },
        };
        let value_embeds: Vec<ParamId> = self.value_embeds.iter().flatten().copied().collect();
        let mut groups = vec![
            adamw(
                vec![self.lm_head],
                unembedding_lr * dmodel_lr_scale,
                (0.8, 0.96),
                0.01,
            ),
            adamw(
                vec![self.wte],
                embedding_lr * dmodel_lr_scale,
                (0.8, 0.995),
                0.001,
            ),
            adamw(
                value_embeds,
                embedding_lr * dmodel_lr_scale * 0.5,
                (0.8, 0.995),
                0.01,
            ),
            adamw(
                vec![self.resid_lambdas],
                scalar_lr * 0.01,
                (0.8, 0.95),
                0.05,
            ),
            adamw(vec![self.x0_lambdas], scalar_lr, (0.96, 0.95), 0.0),
            adamw(
                vec![self.smear_gate, self.smear_lambda, self.backout_lambda],
                0.2,
                (0.8, 0.95),
                0.0,
            ),
        ];
        let matrices = self.matrix_params();
        let shape = |id: ParamId| self.params.value(id).shape().to_vec();
        let mut shapes: Vec<Vec<usize>> = matrices.iter().map(|&id| shape(id)).collect();
        shapes.sort();
        shapes.dedup();
        for s in shapes {
            groups.push(Group {
                params: matrices
                    .iter()
                    .copied()
                    .filter(|&id| shape(id) == s)
                    .collect(),
                lr: matrix_lr,
                initial_lr: matrix_lr,
                kind: Kind::Muon {
                    momentum: 0.95,
                    ns_steps: 5,
                    beta2: 0.9,
                    weight_decay,
                },
            });
        }
        MuonAdamW::new(groups, &self.params)
    }
    // ANCHOR_END: setup_optimizer
}
