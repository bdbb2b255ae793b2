//! nanoGPT's `model.py` (karpathy/nanoGPT at 3adf61e), in its order:
//! `LayerNorm`, `CausalSelfAttention`, `MLP`, `Block`, `GPTConfig`, `GPT`.
//!
//! The lecture ends by pointing at it: the same decoder-only Transformer as
//! the video's `gpt.py`, with the heads batched into one product (exercise
//! EX1), GELU, pre-LayerNorm without biases, and the LM head tied to the token
//! embedding. Stage `cpu` trains it with nanoGPT's CPU recipe, and lecture 9's
//! GPT-2 is this file at GPT-2's sizes. `nn.Linear` and `nn.Embedding` are
//! PyTorch's own modules: here they are [`crate::nn`]'s.

use crate::nn::{future_mask, Embedding, ForwardPass, Init, Linear};
use autograd::{Graph, ParamId, Params, Var};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use tensor::attention::Attention;
use tensor::Tensor;

// ANCHOR: layer_norm
/// LayerNorm with an optional bias (PyTorch's had no `bias=False` when nanoGPT
/// was written); eps 1e-5.
#[derive(Clone, Debug)]
pub struct LayerNorm {
    /// `(ndim,)`, ones at init.
    pub weight: ParamId,
    /// `(ndim,)`, zeros at init, if the layer has a bias.
    pub bias: Option<ParamId>,
}

impl LayerNorm {
    /// `LayerNorm(ndim, bias)`; draws nothing from the generator.
    pub fn new(init: &mut Init, name: &str, ndim: usize, bias: bool) -> LayerNorm {
        let weight = init
            .params
            .add(&format!("{name}.weight"), Tensor::ones(&[ndim]));
        let bias = bias.then(|| {
            init.params
                .add(&format!("{name}.bias"), Tensor::zeros(&[ndim]))
        });
        LayerNorm { weight, bias }
    }

    /// `(…, C) -> (…, C)`: each position normalised over its features.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let bias = self.bias.map(|b| pass.param(b)); // (C,)
        x.layer_norm(Some(pass.param(self.weight)), bias, 1e-5) // (…, C)
    }
}
// ANCHOR_END: layer_norm

/// Multi-head causal self-attention with the heads as a batch axis: q, k and v
/// of every head come from one product (`c_attn`), and attention is one
/// batched product over `(B, nh)`.
#[derive(Clone, Debug)]
pub struct CausalSelfAttention {
    /// `nn.Linear(C, 3C)`: key, query, value projections for all heads.
    pub c_attn: Linear,
    /// `nn.Linear(C, C)`: the output projection (scaled init).
    pub c_proj: Linear,
    /// Number of heads.
    pub n_head: usize,
    /// Dropout on the attention weights and after the projection.
    pub dropout: f32,
    /// nanoGPT's `self.flash`: attention as one fused op,
    /// [`Var::attention`], which never stores the
    /// `(B, nh, T, T)` weights, dropout on them included. Off in lecture 7's
    /// stages, which teach the lines it replaces.
    pub flash: bool,
}

impl CausalSelfAttention {
    /// Draws `c_attn` then `c_proj`.
    pub fn new(init: &mut Init, name: &str, config: &GptConfig) -> CausalSelfAttention {
        let (c, bias) = (config.n_embd, config.bias);
        assert!(
            c.is_multiple_of(config.n_head),
            "n_embd {c} is not a multiple of n_head {}",
            config.n_head
        );
        CausalSelfAttention {
            c_attn: Linear::new(init, &format!("{name}.c_attn"), c, 3 * c, bias),
            c_proj: Linear::new(init, &format!("{name}.c_proj"), c, c, bias),
            n_head: config.n_head,
            dropout: config.dropout,
            flash: false,
        }
    }

    // ANCHOR: causal_self_attention
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let shape = x.shape();
        let (b, t, c) = (shape[0], shape[1], shape[2]); // batch size, sequence length, n_embd
        let (nh, hs) = (self.n_head, c / self.n_head);
        let qkv = self.c_attn.forward(pass, x); // (B, T, 3C)
        let heads = |i: usize| {
            qkv.narrow(-1, i * c, c) // (B, T, C)
                .reshape(&[b, t, nh, hs]) // (B, T, nh, hs)
                .transpose(1, 2) // (B, nh, T, hs)
        };
        let (q, k, v) = (heads(0), heads(1), heads(2)); // each (B, nh, T, hs)
        let y = if self.flash && pass.dropout_inputs.is_none() {
            // The lines below as one op that keeps no (B, nh, T, T) weights; the same bits.
            let dropout = pass.weight_dropout(self.dropout, &[b, nh, t, t]); // (B, nh, T, T) bits
            let op = Attention {
                dropout,
                ..Attention::scaled_dot_product(true, hs)
            };
            q.attention(k, v, op) // (B, nh, T, hs)
        } else {
            let att = q.matmul(k.transpose(-2, -1)) * (1.0 / (hs as f64).sqrt()) as f32; // (B, nh, T, T)
            let att = att.masked_fill(&future_mask(t), f32::NEG_INFINITY); // (B, nh, T, T)
            let att = att.softmax(-1); // (B, nh, T, T)
            let att = pass.dropout(att, self.dropout); // (B, nh, T, T)
            att.matmul(v) // (B, nh, T, T) @ (B, nh, T, hs) -> (B, nh, T, hs)
        };
        let y = y.transpose(1, 2).reshape(&[b, t, c]); // (B, T, C): heads side by side again
        pass.dropout(self.c_proj.forward(pass, y), self.dropout) // (B, T, C)
    }
    // ANCHOR_END: causal_self_attention
}

/// The per-position MLP: `c_fc` to 4C, GELU, `c_proj` back to C.
#[derive(Clone, Debug)]
pub struct Mlp {
    /// `nn.Linear(C, 4C)`.
    pub c_fc: Linear,
    /// `nn.Linear(4C, C)` (scaled init).
    pub c_proj: Linear,
    /// Dropout after the projection.
    pub dropout: f32,
}

impl Mlp {
    /// Draws `c_fc` then `c_proj`.
    pub fn new(init: &mut Init, name: &str, config: &GptConfig) -> Mlp {
        let (c, bias) = (config.n_embd, config.bias);
        Mlp {
            c_fc: Linear::new(init, &format!("{name}.c_fc"), c, 4 * c, bias),
            c_proj: Linear::new(init, &format!("{name}.c_proj"), 4 * c, c, bias),
            dropout: config.dropout,
        }
    }

    // ANCHOR: mlp
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let h = self.c_fc.forward(pass, x).gelu(); // (B, T, 4C)
        pass.dropout(self.c_proj.forward(pass, h), self.dropout) // (B, T, C)
    }
    // ANCHOR_END: mlp
}

/// A Transformer block: communication (attention) then computation (the MLP),
/// each on a LayerNorm of the residual stream and added back to it.
#[derive(Clone, Debug)]
pub struct Block {
    /// Before attention.
    pub ln_1: LayerNorm,
    /// All heads in one batched product.
    pub attn: CausalSelfAttention,
    /// Before the MLP.
    pub ln_2: LayerNorm,
    /// The GELU MLP.
    pub mlp: Mlp,
}

impl Block {
    /// In `Block.__init__` order: ln_1, attn, ln_2, mlp.
    pub fn new(init: &mut Init, name: &str, config: &GptConfig) -> Block {
        Block {
            ln_1: LayerNorm::new(init, &format!("{name}.ln_1"), config.n_embd, config.bias),
            attn: CausalSelfAttention::new(init, &format!("{name}.attn"), config),
            ln_2: LayerNorm::new(init, &format!("{name}.ln_2"), config.n_embd, config.bias),
            mlp: Mlp::new(init, &format!("{name}.mlp"), config),
        }
    }

    // ANCHOR: block
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let x = x + self.attn.forward(pass, self.ln_1.forward(pass, x)); // (B, T, C)
        x + self.mlp.forward(pass, self.ln_2.forward(pass, x)) // (B, T, C)
    }
    // ANCHOR_END: block
}

/// `GPTConfig`: the model's shape.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GptConfig {
    /// The longest context (T).
    pub block_size: usize,
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Heads per attention layer.
    pub n_head: usize,
    /// Width of the residual stream (C).
    pub n_embd: usize,
    /// Dropout probability while training.
    pub dropout: f32,
    /// Biases in the Linears and LayerNorms (GPT-2 has them; nanoGPT's recipes turn them off).
    pub bias: bool,
}

/// `GPT`: embeddings, blocks, a final LayerNorm and the tied LM head.
#[derive(Clone, Debug)]
pub struct Gpt {
    /// The model's shape.
    pub config: GptConfig,
    /// `transformer.wte`: token embeddings, also the LM head's weight.
    pub wte: Embedding,
    /// `transformer.wpe`: position embeddings.
    pub wpe: Embedding,
    /// `transformer.h`: the blocks.
    pub h: Vec<Block>,
    /// `transformer.ln_f`.
    pub ln_f: LayerNorm,
    /// `lm_head`, whose weight is `wte`'s.
    pub lm_head: Linear,
}

impl Gpt {
    /// nanoGPT's `flash` switch for every block's attention (see
    /// [`CausalSelfAttention::flash`]): the fused op instead of the lecture's lines.
    pub fn set_flash(&mut self, on: bool) {
        for block in &mut self.h {
            block.attn.flash = on;
        }
    }
}

impl Gpt {
    // ANCHOR: init
    /// Builds the modules in `GPT.__init__`'s order and then redraws the
    /// weights as `self.apply(self._init_weights)` and the scaled init of the
    /// residual projections do.
    pub fn new(init: &mut Init, config: GptConfig) -> Gpt {
        let (v, c) = (config.vocab_size, config.n_embd);
        let wte = Embedding::new(init, "transformer.wte", v, c);
        let wpe = Embedding::new(init, "transformer.wpe", config.block_size, c);
        let h: Vec<Block> = (0..config.n_layer)
            .map(|i| Block::new(init, &format!("transformer.h.{i}"), &config))
            .collect();
        let ln_f = LayerNorm::new(init, "transformer.ln_f", c, config.bias);
        // nn.Linear(C, V, bias=False) draws its default init before `wte.weight =
        // lm_head.weight` ties the two; the draws are spent, the tensor is shared.
        let bound = Linear::default_bound(c);
        init.rng.uniform(-bound as f32, bound as f32, &[v, c]);
        let lm_head = Linear {
            weight: wte.weight,
            bias: None,
        };
        // self.apply(self._init_weights) visits lm_head last: the tied weight is drawn twice.
        init.weights.push(wte.weight);
        init.normal_reinit(0.02);
        // Then every residual projection again, at 0.02/√(2·n_layer) (GPT-2's scaled init).
        let std = (0.02 / (2.0 * config.n_layer as f64).sqrt()) as f32;
        for block in &h {
            for id in [block.attn.c_proj.weight, block.mlp.c_proj.weight] {
                let shape = init.params.value(id).shape().to_vec();
                init.params.get_mut(id).value = init.rng.normal(0.0, std, &shape);
            }
        }
        Gpt {
            config,
            wte,
            wpe,
            h,
            ln_f,
            lm_head,
        }
    }
    // ANCHOR_END: init

    // ANCHOR: forward
    /// `idx` `(B, T)` row-major -> logits `(B, T, vocab)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        assert!(
            t <= self.config.block_size,
            "sequence of {t} tokens, block size {}",
            self.config.block_size
        );
        let pos: Vec<usize> = (0..t).collect(); // (T,)
        let tok_emb = self.wte.forward(pass, idx, &[b, t]); // (B, T, C)
        let pos_emb = self.wpe.forward(pass, &pos, &[t]); // (T, C)
        let mut x = pass.dropout(tok_emb + pos_emb, self.config.dropout); // (B, T, C)
        for block in &self.h {
            x = pass.scope(|| block.forward(pass, x)); // (B, T, C): its locals die here
        }
        let x = self.ln_f.forward(pass, x); // (B, T, C)
        self.lm_head.forward(pass, x) // (B, T, V)
    }
    // ANCHOR_END: forward

    /// The attention weights of every block on one sequence `idx` `(T,)`,
    /// each `(nh, T, T)`: row i holds what position i takes from positions
    /// 0..=i. They are the inputs of each block's `attn_dropout`, kept by a
    /// forward hook during an eval-mode [`forward`](Self::forward), as one
    /// would hook `attn_dropout` in PyTorch.
    pub fn attention_weights(&self, params: &Params, idx: &[usize]) -> Vec<Tensor> {
        let (t, nh) = (idx.len(), self.config.n_head);
        let graph = Graph::no_grad();
        let kept = RefCell::new(Vec::new());
        let pass = ForwardPass::eval_keeping_dropout_inputs(&graph, params, &kept);
        self.forward(&pass, idx, 1, t); // (1, T, V)
        kept.into_inner()
            .into_iter()
            .filter(|x| x.shape() == [1, nh, t, t]) // attn_dropout's, not the residual ones
            .map(|att| att.reshape(&[nh, t, t])) // (nh, T, T)
            .collect()
    }
}
