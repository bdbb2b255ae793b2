//! The video's models, stage by stage: bigram.py's lookup table, then v2.py's
//! `BigramLanguageModel` as attention, feed-forward, blocks and LayerNorm come
//! in, ending as gpt.py (karpathy/ng-video-lecture; each stage names its commit
//! in [`crate::Stage`]).
//!
//! The layers are the video's: `Head`, `MultiHeadAttention`, `FeedFoward` and
//! `Block`. nanoGPT's tidier versions are in [`crate::model`]; the video's
//! `nn.LayerNorm` is nanoGPT's `LayerNorm` with a bias.

use crate::model::LayerNorm;
use crate::nn::{future_mask, Embedding, ForwardPass, Init, Linear};
use autograd::Var;
use serde::{Deserialize, Serialize};
use tensor::attention::Attention;

/// What sits between the embeddings and `lm_head` at each stage of the video.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VideoBody {
    /// Self-attention heads side by side, read directly by `lm_head`
    /// (stages `self-attention`, `multi-head`).
    Attention,
    /// The same, then a `Linear(C, C)` + ReLU per position (`feed-forward`).
    AttentionFeedForward,
    /// Residual blocks with projections and the 4× feed-forward (`blocks`).
    Blocks,
    /// The blocks with pre-LayerNorm, and a final LayerNorm (`layernorm`, `full`).
    PreNormBlocks,
}

/// The video's hyperparameters (gpt.py's globals).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VideoConfig {
    /// Characters in the vocabulary (65).
    pub vocab_size: usize,
    /// The longest context (8; gpt.py 256).
    pub block_size: usize,
    /// Width of the residual stream (32; gpt.py 384).
    pub n_embd: usize,
    /// Heads per attention layer (4; `self-attention` 1; gpt.py 6).
    pub n_head: usize,
    /// Blocks (3; gpt.py 6), for the bodies with blocks.
    pub n_layer: usize,
    /// Dropout probability while training (0; gpt.py 0.2).
    pub dropout: f32,
    /// The stage's body.
    pub body: VideoBody,
    /// Scale attention by head_size^-0.5 and draw every weight from N(0, 0.02),
    /// as gpt.py does after the video; otherwise the video's `C**-0.5`, C =
    /// n_embd, with PyTorch's default init.
    pub head_size_scale: bool,
    /// Each head's attention as one fused op that keeps no `(B, T, T)`
    /// weights for backward ([`Head::forward`]), as nanoGPT's `flash`: the
    /// same bits, a fraction of the memory. Only the `full` stage has it.
    #[serde(default)]
    pub flash: bool,
}

impl VideoConfig {
    /// The factor on `q @ kᵀ`.
    pub fn attention_scale(&self) -> f32 {
        let size = if self.head_size_scale {
            self.n_embd / self.n_head
        } else {
            self.n_embd // the video's C**-0.5
        };
        (size as f64).powf(-0.5) as f32
    }
}

/// bigram.py's model: each token reads the logits of the next one off a table.
#[derive(Clone, Debug)]
pub struct Bigram {
    /// `nn.Embedding(vocab, vocab)`.
    pub token_embedding_table: Embedding,
}

impl Bigram {
    /// `nn.Embedding(vocab_size, vocab_size)`.
    pub fn new(init: &mut Init, vocab_size: usize) -> Bigram {
        let token_embedding_table =
            Embedding::new(init, "token_embedding_table", vocab_size, vocab_size);
        Bigram {
            token_embedding_table,
        }
    }

    // ANCHOR: bigram
    /// `idx` `(B, T)` -> logits `(B, T, vocab)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        self.token_embedding_table.forward(pass, idx, &[b, t]) // (B, T, V)
    }
    // ANCHOR_END: bigram
}

/// One head of self-attention.
#[derive(Clone, Debug)]
pub struct Head {
    /// `nn.Linear(n_embd, head_size, bias=False)`.
    pub key: Linear,
    /// `nn.Linear(n_embd, head_size, bias=False)`.
    pub query: Linear,
    /// `nn.Linear(n_embd, head_size, bias=False)`.
    pub value: Linear,
    /// The factor on `q @ kᵀ`.
    pub scale: f32,
    /// Dropout on the attention weights.
    pub dropout: f32,
    /// The fused op instead of the lines ([`VideoConfig::flash`]).
    pub flash: bool,
}

impl Head {
    /// Draws key, query, value, as `Head.__init__`.
    pub fn new(init: &mut Init, name: &str, config: &VideoConfig, head_size: usize) -> Head {
        let c = config.n_embd;
        Head {
            key: Linear::new(init, &format!("{name}.key"), c, head_size, false),
            query: Linear::new(init, &format!("{name}.query"), c, head_size, false),
            value: Linear::new(init, &format!("{name}.value"), c, head_size, false),
            scale: config.attention_scale(),
            dropout: config.dropout,
            flash: config.flash,
        }
    }

    // ANCHOR: head
    /// `(B, T, C) -> (B, T, hs)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        if self.flash && pass.dropout_inputs.is_none() {
            return self.forward_fused(pass, x); // the lines below as one op: the same bits
        }
        let t = x.shape()[1];
        let k = self.key.forward(pass, x); // (B, T, hs)
        let q = self.query.forward(pass, x); // (B, T, hs)
        let wei = q.matmul(k.transpose(-2, -1)) * self.scale; // (B, T, hs) @ (B, hs, T) -> (B, T, T)
        let wei = wei.masked_fill(&future_mask(t), f32::NEG_INFINITY); // (B, T, T)
        let wei = wei.softmax(-1); // (B, T, T)
        let wei = pass.dropout(wei, self.dropout); // (B, T, T)
        let v = self.value.forward(pass, x); // (B, T, hs)
        wei.matmul(v) // (B, T, T) @ (B, T, hs) -> (B, T, hs)
    }
    // ANCHOR_END: head

    /// [`Head::forward`]'s lines as one op ([`Var::attention`]), which keeps
    /// no `(B, T, T)` weights for backward but recomputes them: the same
    /// scale, and the same keep mask drawn from the same generator at the
    /// same point (the projections draw nothing), so the same bits.
    fn forward_fused<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let (b, t) = (x.shape()[0], x.shape()[1]);
        let k = self.key.forward(pass, x); // (B, T, hs)
        let q = self.query.forward(pass, x); // (B, T, hs)
        let v = self.value.forward(pass, x); // (B, T, hs)
        let op = Attention {
            causal: true,
            scale: self.scale,
            window: None,
            dropout: pass.weight_dropout(self.dropout, &[b, 1, t, t]), // (B, 1, T, T) bits
        };
        let y = q.unsqueeze(1).attention(k.unsqueeze(1), v.unsqueeze(1), op); // (B, 1, T, hs): one head
        y.squeeze(1) // (B, T, hs)
    }
}

/// Several heads side by side, their outputs concatenated.
#[derive(Clone, Debug)]
pub struct MultiHeadAttention {
    /// The heads.
    pub heads: Vec<Head>,
    /// `nn.Linear(n_embd, n_embd)` back into the residual stream, from the `blocks` stage on.
    pub proj: Option<Linear>,
    /// Dropout after the projection.
    pub dropout: f32,
}

impl MultiHeadAttention {
    /// The heads alone, as the stages before residual connections have them.
    pub fn side_by_side(init: &mut Init, name: &str, config: &VideoConfig) -> MultiHeadAttention {
        let head_size = config.n_embd / config.n_head;
        let heads = (0..config.n_head)
            .map(|h| Head::new(init, &format!("{name}.heads.{h}"), config, head_size))
            .collect();
        MultiHeadAttention {
            heads,
            proj: None,
            dropout: config.dropout,
        }
    }

    /// The heads and the projection back into the residual stream (`blocks` on).
    pub fn projected(init: &mut Init, name: &str, config: &VideoConfig) -> MultiHeadAttention {
        let heads = MultiHeadAttention::side_by_side(init, name, config);
        let c = config.n_embd;
        let proj = Linear::new(init, &format!("{name}.proj"), c, c, true);
        MultiHeadAttention {
            proj: Some(proj),
            ..heads
        }
    }

    // ANCHOR: multi_head
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let outs: Vec<Var<'g>> = self.heads.iter().map(|h| h.forward(pass, x)).collect(); // each (B, T, hs)
        let out = Var::concat(&outs, -1); // (B, T, nh·hs)
        match &self.proj {
            Some(proj) => pass.dropout(proj.forward(pass, out), self.dropout), // (B, T, C)
            None => out,
        }
    }
    // ANCHOR_END: multi_head
}

/// The video's `FeedFoward`: a Linear and a ReLU per position, then (from the
/// `blocks` stage on) a projection back into the residual stream.
#[derive(Clone, Debug)]
pub struct FeedForward {
    /// `net[0]`: `nn.Linear(n_embd, hidden)`.
    pub fc: Linear,
    /// `net[2]`: `nn.Linear(hidden, n_embd)`, from the `blocks` stage on.
    pub proj: Option<Linear>,
    /// Dropout after the projection.
    pub dropout: f32,
}

impl FeedForward {
    /// 97dd3f9's `nn.Sequential(nn.Linear(n_embd, n_embd), nn.ReLU())`.
    pub fn relu(init: &mut Init, name: &str, config: &VideoConfig) -> FeedForward {
        let c = config.n_embd;
        FeedForward {
            fc: Linear::new(init, &format!("{name}.net.0"), c, c, true),
            proj: None,
            dropout: 0.0,
        }
    }

    /// 5c3a2d2 on: `Linear(C, 4C)`, ReLU, `Linear(4C, C)`, dropout.
    pub fn projected(init: &mut Init, name: &str, config: &VideoConfig) -> FeedForward {
        let c = config.n_embd;
        let fc = Linear::new(init, &format!("{name}.net.0"), c, 4 * c, true);
        let proj = Linear::new(init, &format!("{name}.net.2"), 4 * c, c, true);
        FeedForward {
            fc,
            proj: Some(proj),
            dropout: config.dropout,
        }
    }

    // ANCHOR: feed_forward
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let h = self.fc.forward(pass, x).relu(); // (B, T, hidden)
        match &self.proj {
            Some(proj) => pass.dropout(proj.forward(pass, h), self.dropout), // (B, T, C)
            None => h,
        }
    }
    // ANCHOR_END: feed_forward
}

/// The video's `Block`: communication, then computation, each added to the
/// residual stream; with pre-LayerNorm from the `layernorm` stage on.
#[derive(Clone, Debug)]
pub struct Block {
    /// `MultiHeadAttention(n_head, n_embd // n_head)` with its projection.
    pub sa: MultiHeadAttention,
    /// `FeedFoward(n_embd)` with the 4× hidden layer.
    pub ffwd: FeedForward,
    /// `nn.LayerNorm(n_embd)` before attention (`layernorm` stage on).
    pub ln1: Option<LayerNorm>,
    /// `nn.LayerNorm(n_embd)` before the feed-forward.
    pub ln2: Option<LayerNorm>,
}

impl Block {
    /// Draws sa, then ffwd, then the layer norms, as `Block.__init__`.
    pub fn new(init: &mut Init, name: &str, config: &VideoConfig) -> Block {
        let sa = MultiHeadAttention::projected(init, &format!("{name}.sa"), config);
        let ffwd = FeedForward::projected(init, &format!("{name}.ffwd"), config);
        let pre_norm = config.body == VideoBody::PreNormBlocks;
        let layer_norm = |init: &mut Init, which: &str| {
            pre_norm.then(|| LayerNorm::new(init, &format!("{name}.{which}"), config.n_embd, true))
        };
        let ln1 = layer_norm(init, "ln1");
        let ln2 = layer_norm(init, "ln2");
        Block { sa, ffwd, ln1, ln2 }
    }

    // ANCHOR: block
    /// `(B, T, C) -> (B, T, C)`: `x = x + sa(ln1(x)); x = x + ffwd(ln2(x))`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let h = match &self.ln1 {
            Some(ln) => ln.forward(pass, x),
            None => x,
        }; // (B, T, C)
        let x = x + self.sa.forward(pass, h); // (B, T, C)
        let h = match &self.ln2 {
            Some(ln) => ln.forward(pass, x),
            None => x,
        }; // (B, T, C)
        x + self.ffwd.forward(pass, h) // (B, T, C)
    }
    // ANCHOR_END: block
}

/// The layers between the embeddings and the head.
#[derive(Clone, Debug)]
pub enum Body {
    /// Attention, then a feed-forward layer in the `feed-forward` stage; no
    /// residual connections.
    Attention {
        /// The heads.
        sa: MultiHeadAttention,
        /// `FeedFoward(n_embd)`, in the `feed-forward` stage.
        ffwd: Option<FeedForward>,
    },
    /// A stack of residual blocks.
    Blocks(Vec<Block>),
}

/// The video's `BigramLanguageModel` once it has attention (v2.py, later gpt.py).
#[derive(Clone, Debug)]
pub struct VideoGpt {
    /// The stage's hyperparameters.
    pub config: VideoConfig,
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

impl VideoGpt {
    /// Builds the modules in `__init__`'s order; with `head_size_scale`, then
    /// redraws every weight as gpt.py's `_init_weights` does.
    pub fn new(init: &mut Init, config: VideoConfig) -> VideoGpt {
        let (v, c) = (config.vocab_size, config.n_embd);
        let token_embedding_table = Embedding::new(init, "token_embedding_table", v, c);
        let position_embedding_table =
            Embedding::new(init, "position_embedding_table", config.block_size, c);
        let body = match config.body {
            VideoBody::Attention | VideoBody::AttentionFeedForward => {
                let sa = MultiHeadAttention::side_by_side(init, "sa", &config);
                let ffwd = (config.body == VideoBody::AttentionFeedForward)
                    .then(|| FeedForward::relu(init, "ffwd", &config));
                Body::Attention { sa, ffwd }
            }
            VideoBody::Blocks | VideoBody::PreNormBlocks => {
                let blocks =
                    (0..config.n_layer).map(|i| Block::new(init, &format!("blocks.{i}"), &config));
                Body::Blocks(blocks.collect())
            }
        };
        let ln_f = (config.body == VideoBody::PreNormBlocks)
            .then(|| LayerNorm::new(init, "ln_f", c, true));
        let lm_head = Linear::new(init, "lm_head", c, v, true);
        if config.head_size_scale {
            init.normal_reinit(0.02);
        }
        VideoGpt {
            config,
            token_embedding_table,
            position_embedding_table,
            body,
            ln_f,
            lm_head,
        }
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
        let positions: Vec<usize> = (0..t).collect(); // (T,)
        let tok_emb = self.token_embedding_table.forward(pass, idx, &[b, t]); // (B, T, C)
        let pos_emb = self
            .position_embedding_table
            .forward(pass, &positions, &[t]); // (T, C)
        let mut x = tok_emb + pos_emb; // (B, T, C)
        match &self.body {
            Body::Attention { sa, ffwd } => {
                x = sa.forward(pass, x); // (B, T, C)
                if let Some(ffwd) = ffwd {
                    x = ffwd.forward(pass, x); // (B, T, C)
                }
            }
            Body::Blocks(blocks) => {
                for block in blocks {
                    x = pass.scope(|| block.forward(pass, x)); // (B, T, C): its locals die here
                }
            }
        }
        if let Some(ln) = &self.ln_f {
            x = ln.forward(pass, x); // (B, T, C)
        }
        self.lm_head.forward(pass, x) // (B, T, V)
    }
    // ANCHOR_END: forward
}
