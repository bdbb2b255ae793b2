//! nanoGPT's `CausalSelfAttention`: exercise EX1 of the lecture. All heads are one
//! batch axis, so q, k and v come from one product (`c_attn`) and the attention
//! of every head is one batched product over `(B, nh)`.

use super::{future_mask, Fwd, Init, Linear};
use autograd::Var;

/// Multi-head causal self-attention with the heads as a batch dimension.
#[derive(Clone, Debug)]
pub struct CausalSelfAttention {
    /// `nn.Linear(C, 3C)`: q, k and v for all heads at once.
    pub c_attn: Linear,
    /// `nn.Linear(C, C)`: the output projection (scaled init).
    pub c_proj: Linear,
    /// Number of heads.
    pub n_head: usize,
    /// Dropout on the attention weights and after the projection.
    pub dropout: f32,
}

impl CausalSelfAttention {
    /// Draws `c_attn` then `c_proj`.
    pub fn new(
        init: &mut Init,
        name: &str,
        n_embd: usize,
        n_head: usize,
        bias: bool,
        dropout: f32,
    ) -> CausalSelfAttention {
        assert!(
            n_embd.is_multiple_of(n_head),
            "n_embd {n_embd} is not a multiple of n_head {n_head}"
        );
        CausalSelfAttention {
            c_attn: Linear::new(init, &format!("{name}.c_attn"), n_embd, 3 * n_embd, bias),
            c_proj: Linear::new(init, &format!("{name}.c_proj"), n_embd, n_embd, bias),
            n_head,
            dropout,
        }
    }

    // ANCHOR: causal_self_attention
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        let shape = x.shape();
        let (b, t, c) = (shape[0], shape[1], shape[2]);
        let (nh, hs) = (self.n_head, c / self.n_head);
        let qkv = self.c_attn.forward(f, x); // (B, T, 3C)
        let heads = |i: usize| {
            qkv.narrow(-1, i * c, c) // (B, T, C)
                .reshape(&[b, t, nh, hs]) // (B, T, nh, hs)
                .transpose(1, 2) // (B, nh, T, hs)
        };
        let (q, k, v) = (heads(0), heads(1), heads(2));
        let att = q.matmul(k.transpose(-2, -1)) * (1.0 / (hs as f64).sqrt()) as f32; // (B, nh, T, T)
        let att = att.masked_fill(&future_mask(t), f32::NEG_INFINITY); // (B, nh, T, T)
        let att = att.softmax(-1); // (B, nh, T, T)
        let att = f.dropout(att, self.dropout); // (B, nh, T, T)
        let y = att.matmul(v); // (B, nh, T, T) @ (B, nh, T, hs) -> (B, nh, T, hs)
        let y = y.transpose(1, 2).reshape(&[b, t, c]); // (B, T, C): heads side by side again
        f.dropout(self.c_proj.forward(f, y), self.dropout) // (B, T, C)
    }
    // ANCHOR_END: causal_self_attention
}
