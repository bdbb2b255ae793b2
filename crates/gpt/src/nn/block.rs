//! Transformer blocks: communication (attention) then computation (feed-forward),
//! each added to the residual stream.

use super::{CausalSelfAttention, FeedForward, Fwd, Init, LayerNorm, Mlp, MultiHeadAttention};
use autograd::Var;

/// The video's `Block`, with pre-LayerNorm from the `layernorm` stage on.
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
    pub fn new(
        init: &mut Init,
        name: &str,
        n_embd: usize,
        n_head: usize,
        scale: f32,
        layer_norm: bool,
        dropout: f32,
    ) -> Block {
        let head_size = n_embd / n_head;
        let sa = MultiHeadAttention::new(
            init,
            &format!("{name}.sa"),
            n_embd,
            n_head,
            head_size,
            scale,
            true,
            dropout,
        );
        let ffwd = FeedForward::new(
            init,
            &format!("{name}.ffwd"),
            n_embd,
            4 * n_embd,
            true,
            dropout,
        );
        let ln1 = layer_norm.then(|| LayerNorm::new(init, &format!("{name}.ln1"), n_embd, true));
        let ln2 = layer_norm.then(|| LayerNorm::new(init, &format!("{name}.ln2"), n_embd, true));
        Block { sa, ffwd, ln1, ln2 }
    }

    // ANCHOR: block
    /// `(B, T, C) -> (B, T, C)`: `x = x + sa(ln1(x)); x = x + ffwd(ln2(x))`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        let h = match &self.ln1 {
            Some(ln) => ln.forward(f, x),
            None => x,
        }; // (B, T, C)
        let x = x + self.sa.forward(f, h); // (B, T, C)
        let h = match &self.ln2 {
            Some(ln) => ln.forward(f, x),
            None => x,
        }; // (B, T, C)
        x + self.ffwd.forward(f, h) // (B, T, C)
    }
    // ANCHOR_END: block
}

/// nanoGPT's `Block`: `x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))`.
#[derive(Clone, Debug)]
pub struct NanoBlock {
    /// Pre-attention LayerNorm (no bias).
    pub ln_1: LayerNorm,
    /// All heads in one batched product (exercise EX1).
    pub attn: CausalSelfAttention,
    /// Pre-MLP LayerNorm (no bias).
    pub ln_2: LayerNorm,
    /// The GELU MLP.
    pub mlp: Mlp,
}

impl NanoBlock {
    /// In `Block.__init__` order: ln_1, attn, ln_2, mlp.
    pub fn new(
        init: &mut Init,
        name: &str,
        n_embd: usize,
        n_head: usize,
        bias: bool,
        dropout: f32,
    ) -> NanoBlock {
        NanoBlock {
            ln_1: LayerNorm::new(init, &format!("{name}.ln_1"), n_embd, bias),
            attn: CausalSelfAttention::new(
                init,
                &format!("{name}.attn"),
                n_embd,
                n_head,
                bias,
                dropout,
            ),
            ln_2: LayerNorm::new(init, &format!("{name}.ln_2"), n_embd, bias),
            mlp: Mlp::new(init, &format!("{name}.mlp"), n_embd, bias, dropout),
        }
    }

    // ANCHOR: nano_block
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        let x = x + self.attn.forward(f, self.ln_1.forward(f, x)); // (B, T, C)
        x + self.mlp.forward(f, self.ln_2.forward(f, x)) // (B, T, C)
    }
    // ANCHOR_END: nano_block
}
