//! The three model families of the lecture, built from the layers in [`crate::nn`].

use crate::config::{Arch, Config, Stage};
use crate::nn::{
    Block, Embedding, FeedForward, Fwd, Init, LayerNorm, Linear, MultiHeadAttention, NanoBlock,
};
use autograd::{Params, Var};
use tensor::rng::TorchGenerator;

/// bigram.py's model: each token reads the logits of the next one off a table.
#[derive(Clone, Debug)]
pub struct Bigram {
    /// `nn.Embedding(vocab, vocab)`.
    pub token_embedding_table: Embedding,
}

/// What sits between the embeddings and the head in the video's model.
#[derive(Clone, Debug)]
pub enum Body {
    /// Attention (one head or several side by side), then optionally a
    /// feed-forward layer, with no residual connections (stages
    /// `self-attention`, `multi-head`, `feed-forward`).
    Attention {
        /// The heads.
        sa: MultiHeadAttention,
        /// `FeedFoward(n_embd)`, in the `feed-forward` stage.
        ffwd: Option<FeedForward>,
    },
    /// A stack of residual blocks (stages `blocks`, `layernorm`, `full`).
    Blocks(Vec<Block>),
}

/// The video's `BigramLanguageModel` once it has attention (v2.py, later gpt.py).
#[derive(Clone, Debug)]
pub struct VideoGpt {
    /// `nn.Embedding(vocab, n_embd)`.
    pub token_embedding_table: Embedding,
    /// `nn.Embedding(block_size, n_embd)`.
    pub position_embedding_table: Embedding,
    /// Attention and feed-forward.
    pub body: Body,
    /// The final `nn.LayerNorm(n_embd)` (`layernorm` stage on).
    pub ln_f: Option<LayerNorm>,
    /// `nn.Linear(n_embd, vocab)`.
    pub lm_head: Linear,
}

/// nanoGPT's `GPT` with `bias=False` and the LM head tied to the token embedding.
#[derive(Clone, Debug)]
pub struct NanoGpt {
    /// `wte`: token embeddings, also the LM head's weight.
    pub wte: Embedding,
    /// `wpe`: position embeddings.
    pub wpe: Embedding,
    /// `h`: the blocks.
    pub h: Vec<NanoBlock>,
    /// The final LayerNorm.
    pub ln_f: LayerNorm,
    /// `lm_head`, whose weight is `wte`'s.
    pub lm_head: Linear,
    /// Dropout on the embeddings.
    pub dropout: f32,
}

/// A model of any stage.
#[derive(Clone, Debug)]
pub enum Model {
    /// Stage `bigram`.
    Bigram(Bigram),
    /// Stages `self-attention` to `full`.
    Video(VideoGpt),
    /// Stage `cpu`.
    Nano(NanoGpt),
}

impl Model {
    /// Builds the model of `cfg` into `params`, drawing its initial values from
    /// `rng` in the order the stage's PyTorch code constructs its modules.
    pub fn build(cfg: &Config, params: &mut Params, rng: &mut TorchGenerator) -> Model {
        let mut init = Init::new(params, rng);
        let (v, c, t) = (cfg.vocab_size, cfg.n_embd, cfg.block_size);
        match cfg.arch {
            Arch::Bigram => Model::Bigram(Bigram {
                token_embedding_table: Embedding::new(&mut init, "token_embedding_table", v, v),
            }),
            Arch::Video(stage) => {
                let scale = if cfg.head_size_scale {
                    ((c / cfg.n_head) as f64).powf(-0.5)
                } else {
                    (c as f64).powf(-0.5) // the video's C**-0.5, C = n_embd
                } as f32;
                let token_embedding_table =
                    Embedding::new(&mut init, "token_embedding_table", v, c);
                let position_embedding_table =
                    Embedding::new(&mut init, "position_embedding_table", t, c);
                let (body, ln_f) = match stage {
                    Stage::SelfAttention | Stage::MultiHead | Stage::FeedForward => {
                        let hs = c / cfg.n_head;
                        let sa = MultiHeadAttention::new(
                            &mut init,
                            "sa",
                            c,
                            cfg.n_head,
                            hs,
                            scale,
                            false,
                            cfg.dropout,
                        );
                        let ffwd = (stage == Stage::FeedForward)
                            .then(|| FeedForward::new(&mut init, "ffwd", c, c, false, cfg.dropout));
                        (Body::Attention { sa, ffwd }, None)
                    }
                    _ => {
                        let layer_norm = stage != Stage::Blocks;
                        let blocks = (0..cfg.n_layer)
                            .map(|i| {
                                Block::new(
                                    &mut init,
                                    &format!("blocks.{i}"),
                                    c,
                                    cfg.n_head,
                                    scale,
                                    layer_norm,
                                    cfg.dropout,
                                )
                            })
                            .collect();
                        let ln_f = layer_norm.then(|| LayerNorm::new(&mut init, "ln_f", c, true));
                        (Body::Blocks(blocks), ln_f)
                    }
                };
                let lm_head = Linear::new(&mut init, "lm_head", c, v, true);
                if cfg.head_size_scale {
                    init.normal_reinit(0.02);
                }
                Model::Video(VideoGpt {
                    token_embedding_table,
                    position_embedding_table,
                    body,
                    ln_f,
                    lm_head,
                })
            }
            Arch::Nano => Model::Nano(NanoGpt::build(cfg, &mut init)),
        }
    }

    /// The longest context the model reads.
    pub fn block_size(&self, cfg: &Config) -> usize {
        match self {
            Model::Bigram(_) => usize::MAX,
            _ => cfg.block_size,
        }
    }

    // ANCHOR: forward
    /// `idx` `(B, T)` row-major -> logits `(B, T, vocab)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, idx: &[usize], b: usize, t: usize) -> Var<'g> {
        match self {
            Model::Bigram(m) => m.token_embedding_table.forward(f, idx, &[b, t]), // (B, T, V)
            Model::Video(m) => {
                let positions: Vec<usize> = (0..t).collect();
                let tok_emb = m.token_embedding_table.forward(f, idx, &[b, t]); // (B, T, C)
                let pos_emb = m.position_embedding_table.forward(f, &positions, &[t]); // (T, C)
                let mut x = tok_emb + pos_emb; // (B, T, C)
                match &m.body {
                    Body::Attention { sa, ffwd } => {
                        x = sa.forward(f, x); // (B, T, C)
                        if let Some(ffwd) = ffwd {
                            x = ffwd.forward(f, x); // (B, T, C)
                        }
                    }
                    Body::Blocks(blocks) => {
                        for block in blocks {
                            x = block.forward(f, x); // (B, T, C)
                        }
                    }
                }
                if let Some(ln) = &m.ln_f {
                    x = ln.forward(f, x); // (B, T, C)
                }
                m.lm_head.forward(f, x) // (B, T, V)
            }
            Model::Nano(m) => m.forward(f, idx, b, t),
        }
    }
    // ANCHOR_END: forward

    // ANCHOR: loss
    /// The mean cross-entropy of the logits against the targets `y` `(B, T)`.
    pub fn loss<'g>(&self, f: &Fwd<'g>, x: &[usize], y: &[usize], b: usize, t: usize) -> Var<'g> {
        let logits = self.forward(f, x, b, t); // (B, T, V)
        let v = logits.shape()[2];
        logits.reshape(&[b * t, v]).cross_entropy(y) // scalar
    }
    // ANCHOR_END: loss
}

impl NanoGpt {
    fn build(cfg: &Config, init: &mut Init) -> NanoGpt {
        let (v, c, t) = (cfg.vocab_size, cfg.n_embd, cfg.block_size);
        let wte = Embedding::new(init, "transformer.wte", v, c);
        let wpe = Embedding::new(init, "transformer.wpe", t, c);
        let h: Vec<NanoBlock> = (0..cfg.n_layer)
            .map(|i| {
                NanoBlock::new(
                    init,
                    &format!("transformer.h.{i}"),
                    c,
                    cfg.n_head,
                    false,
                    cfg.dropout,
                )
            })
            .collect();
        let ln_f = LayerNorm::new(init, "transformer.ln_f", c, false);
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
        let std = (0.02 / (2.0 * cfg.n_layer as f64).sqrt()) as f32;
        for block in &h {
            for id in [block.attn.c_proj.weight, block.mlp.c_proj.weight] {
                let shape = init.params.value(id).shape().to_vec();
                init.params.get_mut(id).value = init.rng.normal(0.0, std, &shape);
            }
        }
        NanoGpt {
            wte,
            wpe,
            h,
            ln_f,
            lm_head,
            dropout: cfg.dropout,
        }
    }

    /// `idx` `(B, T)` -> logits `(B, T, vocab)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, idx: &[usize], b: usize, t: usize) -> Var<'g> {
        let positions: Vec<usize> = (0..t).collect();
        let tok_emb = self.wte.forward(f, idx, &[b, t]); // (B, T, C)
        let pos_emb = self.wpe.forward(f, &positions, &[t]); // (T, C)
        let mut x = f.dropout(tok_emb + pos_emb, self.dropout); // (B, T, C)
        for block in &self.h {
            x = block.forward(f, x); // (B, T, C)
        }
        let x = self.ln_f.forward(f, x); // (B, T, C)
        self.lm_head.forward(f, x) // (B, T, V)
    }
}
