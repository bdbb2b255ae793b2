//! build-nanogpt's `train_gpt2.py` model (karpathy/build-nanogpt at 6104ab1):
//! `MLP`, `Block`, `GPTConfig` and `GPT`, GPT-2 exactly.
//!
//! It is nanoGPT's model (lecture 7's [`gpt::model`]) with GPT-2's choices:
//! biases in every Linear and LayerNorm, GELU with the tanh approximation
//! (`nn.GELU(approximate='tanh')`, which OpenAI used), no dropout, and the
//! LM head tied to `wte`. `CausalSelfAttention` and `LayerNorm` are nanoGPT's,
//! reused as they are; the names (`c_attn`, `c_proj`, `ln_1`, …) are OpenAI's,
//! so the parameters carry Hugging Face's names.

use autograd::{ForwardPass, Init, ParamId, Params, Var};
use gpt::model::{CausalSelfAttention, LayerNorm};
use gpt::nn::{Embedding, Linear};
use serde::{Deserialize, Serialize};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// `GPTConfig`: the model's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GptConfig {
    /// The longest context (1024).
    pub block_size: usize,
    /// Tokens in the vocabulary: 50,000 BPE merges + 256 byte tokens + `<|endoftext|>` = 50,257.
    pub vocab_size: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Heads per attention layer.
    pub n_head: usize,
    /// Width of the residual stream.
    pub n_embd: usize,
}

impl GptConfig {
    /// The four sizes OpenAI released, by Hugging Face's names (`from_pretrained`'s table).
    pub const PRESETS: [&'static str; 4] = ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"];

    /// A released size: `gpt2` (124M), `gpt2-medium` (350M), `gpt2-large` (774M), `gpt2-xl` (1558M).
    pub fn preset(name: &str) -> Result<GptConfig, String> {
        let (n_layer, n_head, n_embd) = match name {
            "gpt2" => (12, 12, 768),
            "gpt2-medium" => (24, 16, 1024),
            "gpt2-large" => (36, 20, 1280),
            "gpt2-xl" => (48, 25, 1600),
            other => {
                let known = GptConfig::PRESETS.join(", ");
                return Err(format!(
                    "unknown GPT-2 preset {other:?}; the presets are {known}"
                ));
            }
        };
        Ok(GptConfig {
            block_size: 1024,
            vocab_size: 50257,
            n_layer,
            n_head,
            n_embd,
        })
    }

    /// The number of parameters of this shape with the head tied, or `None`
    /// if it overflows (a damaged config).
    pub fn parameter_count(&self) -> Option<u64> {
        let (v, t, l, c) = (
            self.vocab_size as u64,
            self.block_size as u64,
            self.n_layer as u64,
            self.n_embd as u64,
        );
        // Per block: two LayerNorms (4C), c_attn (3C² + 3C), c_proj (C² + C), c_fc (4C² + 4C), c_proj (4C² + C).
        let block = c
            .checked_mul(c)?
            .checked_mul(12)?
            .checked_add(c.checked_mul(13)?)?;
        v.checked_mul(c)?
            .checked_add(t.checked_mul(c)?)?
            .checked_add(l.checked_mul(block)?)?
            .checked_add(2 * c)
    }

    /// nanoGPT's config for the attention and LayerNorm this model reuses: biases, no dropout.
    fn nanogpt(&self) -> gpt::model::GptConfig {
        gpt::model::GptConfig {
            block_size: self.block_size,
            vocab_size: self.vocab_size,
            n_layer: self.n_layer,
            n_head: self.n_head,
            n_embd: self.n_embd,
            dropout: 0.0,
            bias: true,
        }
    }
}

/// The per-position MLP: `c_fc` to 4C, GELU (tanh), `c_proj` back to C.
#[derive(Clone, Debug)]
pub struct Mlp {
    /// `nn.Linear(C, 4C)`.
    pub c_fc: Linear,
    /// `nn.Linear(4C, C)`, a residual projection (`NANOGPT_SCALE_INIT`).
    pub c_proj: Linear,
    /// nanoGPT's dropout after the projection (0 in build-nanogpt; `gpt2
    /// finetune --dropout`).
    pub dropout: f32,
}

impl Mlp {
    /// Draws `c_fc` then `c_proj`.
    pub fn new(init: &mut Init, name: &str, config: &GptConfig) -> Mlp {
        let c = config.n_embd;
        Mlp {
            c_fc: Linear::new(init, &format!("{name}.c_fc"), c, 4 * c, true),
            c_proj: Linear::new(init, &format!("{name}.c_proj"), 4 * c, c, true),
            dropout: 0.0,
        }
    }

    // ANCHOR: mlp
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let x = self.c_fc.forward(pass, x); // (B, T, 4C)
        let x = x.gelu_tanh(); // (B, T, 4C)
        pass.dropout(self.c_proj.forward(pass, x), self.dropout) // (B, T, C)
    }
    // ANCHOR_END: mlp
}

/// A pre-LayerNorm Transformer block.
#[derive(Clone, Debug)]
pub struct Block {
    /// Before attention.
    pub ln_1: LayerNorm,
    /// nanoGPT's batched causal self-attention, with biases.
    pub attn: CausalSelfAttention,
    /// Before the MLP.
    pub ln_2: LayerNorm,
    /// The tanh-GELU MLP.
    pub mlp: Mlp,
}

impl Block {
    /// In `Block.__init__` order: ln_1, attn, ln_2, mlp.
    pub fn new(init: &mut Init, name: &str, config: &GptConfig) -> Block {
        let c = config.n_embd;
        Block {
            ln_1: LayerNorm::new(init, &format!("{name}.ln_1"), c, true),
            attn: CausalSelfAttention::new(init, &format!("{name}.attn"), &config.nanogpt()),
            ln_2: LayerNorm::new(init, &format!("{name}.ln_2"), c, true),
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

/// How the weights start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitScheme {
    /// build-nanogpt from 9ac321e ("gpt-2 initialization"): the head tied to
    /// `wte`, N(0, 0.02) for every Linear and Embedding weight, the residual
    /// projections at 0.02·(2·n_layer)^-½, zero biases.
    Gpt2,
    /// The commits before ec39245 ("weight tie the embedding and unembedding
    /// matrix"): PyTorch's default init and an untied head; 163,037,184
    /// parameters at GPT-2's size.
    PyTorchDefaultUntied,
}

/// `GPT`: embeddings, blocks, a final LayerNorm and the LM head.
#[derive(Clone, Debug)]
pub struct Gpt {
    /// The model's shape.
    pub config: GptConfig,
    /// `transformer.wte`: token embeddings.
    pub wte: Embedding,
    /// `transformer.wpe`: position embeddings.
    pub wpe: Embedding,
    /// `transformer.h`: the blocks.
    pub h: Vec<Block>,
    /// `transformer.ln_f`.
    pub ln_f: LayerNorm,
    /// `lm_head`, no bias; its weight is `wte`'s when tied.
    pub lm_head: Linear,
    /// nanoGPT's dropout on the embeddings, the attention and the residual
    /// branches ([`Gpt::set_dropout`]); 0 everywhere in build-nanogpt.
    pub dropout: f32,
}

impl Gpt {
    /// nanoGPT's `dropout` (its `from_pretrained` override): on the embeddings,
    /// the attention weights and each residual branch, while training.
    pub fn set_dropout(&mut self, p: f32) {
        self.dropout = p;
        for block in &mut self.h {
            block.attn.dropout = p;
            block.mlp.dropout = p;
        }
    }

    /// nanoGPT's `crop_block_size`: keep the first `block_size` position
    /// embeddings, so the model reads at most that many tokens.
    pub fn crop_block_size(&mut self, params: &mut Params, block_size: usize) {
        assert!(block_size <= self.config.block_size, "crop only shrinks");
        let wpe = params.get_mut(self.wpe.weight);
        wpe.value = wpe.value.narrow(0, 0, block_size); // (block_size, C)
        self.config.block_size = block_size;
    }

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
    /// `GPT(config)`: the modules in `__init__`'s order, each drawing PyTorch's
    /// default init from `init.rng` as it is built; then, for
    /// [`InitScheme::Gpt2`], the tie and `self.apply(self._init_weights)`.
    pub fn new(init: &mut Init, config: GptConfig, scheme: InitScheme) -> Gpt {
        let (v, c) = (config.vocab_size, config.n_embd);
        let wte = Embedding::new(init, "transformer.wte", v, c);
        let wpe = Embedding::new(init, "transformer.wpe", config.block_size, c);
        let h: Vec<Block> = (0..config.n_layer)
            .map(|i| Block::new(init, &format!("transformer.h.{i}"), &config))
            .collect();
        let ln_f = LayerNorm::new(init, "transformer.ln_f", c, true);
        let mut model = match scheme {
            InitScheme::PyTorchDefaultUntied => {
                let lm_head = Linear::new(init, "lm_head", c, v, false);
                Gpt {
                    config,
                    wte,
                    wpe,
                    h,
                    ln_f,
                    lm_head,
                    dropout: 0.0,
                }
            }
            InitScheme::Gpt2 => {
                // nn.Linear(C, V, bias=False) draws its default init; then
                // `wte.weight = lm_head.weight` makes one tensor of the two.
                let bound = Linear::default_bound(c) as f32;
                init.params.get_mut(wte.weight).value = init.rng.uniform(-bound, bound, &[v, c]);
                let lm_head = Linear {
                    weight: wte.weight,
                    bias: None,
                };
                Gpt {
                    config,
                    wte,
                    wpe,
                    h,
                    ln_f,
                    lm_head,
                    dropout: 0.0,
                }
            }
        };
        if scheme == InitScheme::Gpt2 {
            model.init_weights(init);
        }
        model
    }

    /// The model of `config` with every parameter zero, drawing nothing: the
    /// frame [`crate::hf::from_pretrained`] and [`crate::llmc::read_model`]
    /// fill. Zeroed memory is not touched until it is written, so a load
    /// holds about one copy of the weights, not two. Its attention is the
    /// fused op (`flash`), as in the GPT that build-nanogpt ends with.
    pub fn zeros(params: &mut Params, config: GptConfig) -> Gpt {
        let (v, c) = (config.vocab_size, config.n_embd);
        let mut add = |name: &str, shape: &[usize]| params.add(name, Tensor::zeros(shape));
        let linear = |add: &mut dyn FnMut(&str, &[usize]) -> ParamId,
                      name: &str,
                      fan_in: usize,
                      fan_out: usize| Linear {
            weight: add(&format!("{name}.weight"), &[fan_out, fan_in]),
            bias: Some(add(&format!("{name}.bias"), &[fan_out])),
        };
        let layer_norm = |add: &mut dyn FnMut(&str, &[usize]) -> ParamId, name: &str| LayerNorm {
            weight: add(&format!("{name}.weight"), &[c]),
            bias: Some(add(&format!("{name}.bias"), &[c])),
        };
        let wte = Embedding {
            weight: add("transformer.wte.weight", &[v, c]),
        };
        let wpe = Embedding {
            weight: add("transformer.wpe.weight", &[config.block_size, c]),
        };
        let h = (0..config.n_layer)
            .map(|i| {
                let name = format!("transformer.h.{i}");
                Block {
                    ln_1: layer_norm(&mut add, &format!("{name}.ln_1")),
                    attn: CausalSelfAttention {
                        c_attn: linear(&mut add, &format!("{name}.attn.c_attn"), c, 3 * c),
                        c_proj: linear(&mut add, &format!("{name}.attn.c_proj"), c, c),
                        n_head: config.n_head,
                        dropout: 0.0,
                        // As build-nanogpt's final GPT, which loads OpenAI's
                        // weights: the fused op, with the lines' bits.
                        flash: true,
                    },
                    ln_2: layer_norm(&mut add, &format!("{name}.ln_2")),
                    mlp: Mlp {
                        c_fc: linear(&mut add, &format!("{name}.mlp.c_fc"), c, 4 * c),
                        c_proj: linear(&mut add, &format!("{name}.mlp.c_proj"), 4 * c, c),
                        dropout: 0.0,
                    },
                }
            })
            .collect();
        let ln_f = layer_norm(&mut add, "transformer.ln_f");
        let lm_head = Linear {
            weight: wte.weight,
            bias: None,
        };
        Gpt {
            config,
            wte,
            wpe,
            h,
            ln_f,
            lm_head,
            dropout: 0.0,
        }
    }

    /// `self.apply(self._init_weights)`: PyTorch's `apply` visits the modules
    /// depth first, in registration order: wte, wpe, each block's c_attn,
    /// c_proj, c_fc, c_proj, then lm_head, whose weight is `wte`'s, so the
    /// tied matrix is drawn twice and keeps the second draw.
    fn init_weights(&mut self, init: &mut Init) {
        let std = 0.02;
        let scaled = (0.02 * (2.0 * self.config.n_layer as f64).powf(-0.5)) as f32; // NANOGPT_SCALE_INIT
        let mut normal = |id, std: f32| {
            let shape = init.params.value(id).shape().to_vec();
            init.params.get_mut(id).value = init.rng.normal(0.0, std, &shape);
        };
        normal(self.wte.weight, std);
        normal(self.wpe.weight, std);
        let mut biases = Vec::new();
        for block in &self.h {
            for (linear, std) in [
                (&block.attn.c_attn, std),
                (&block.attn.c_proj, scaled),
                (&block.mlp.c_fc, std),
                (&block.mlp.c_proj, scaled),
            ] {
                normal(linear.weight, std);
                biases.extend(linear.bias);
            }
        }
        normal(self.lm_head.weight, std);
        for id in biases {
            let shape = init.params.value(id).shape().to_vec();
            init.params.get_mut(id).value = Tensor::zeros(&shape); // torch.nn.init.zeros_
        }
    }
    // ANCHOR_END: init

    /// `torch.manual_seed(seed); model = GPT(config)` with `scheme`: the model
    /// and its parameters.
    pub fn seeded(config: GptConfig, scheme: InitScheme, seed: u64) -> (Gpt, Params) {
        let mut params = Params::new();
        let mut rng = TorchGenerator::manual_seed(seed);
        let model = Gpt::new(&mut Init::new(&mut params, &mut rng), config, scheme);
        (model, params)
    }

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
            "cannot forward a sequence of {t} tokens: the block size is {}",
            self.config.block_size
        );
        let pos: Vec<usize> = (0..t).collect(); // (T,)
        let pos_emb = self.wpe.forward(pass, &pos, &[t]); // (T, C)
        let tok_emb = self.wte.forward(pass, idx, &[b, t]); // (B, T, C)
        let mut x = pass.dropout(tok_emb + pos_emb, self.dropout); // (B, T, C)
        for block in &self.h {
            x = pass.scope(|| block.forward(pass, x)); // (B, T, C): its locals die here
        }
        let x = self.ln_f.forward(pass, x); // (B, T, C)
        self.lm_head.forward(pass, x) // (B, T, V)
    }
    // ANCHOR_END: forward

    // ANCHOR: loss
    /// `F.cross_entropy(logits.view(-1, V), targets.view(-1))`: the mean loss of
    /// predicting each `targets` `(B, T)` from the tokens up to it.
    pub fn loss<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        targets: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        let logits = self.forward(pass, idx, b, t); // (B, T, V)
        logits
            .reshape(&[b * t, self.config.vocab_size])
            .cross_entropy_fast(targets) // scalar (F.cross_entropy, exps in f64 lanes)
    }
    // ANCHOR_END: loss
}
