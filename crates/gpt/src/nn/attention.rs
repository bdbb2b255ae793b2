//! Self-attention as the video builds it: one `Head`, then several heads side by
//! side (`MultiHeadAttention`), each its own key, query and value projections.

use super::{future_mask, Fwd, Init, Linear};
use autograd::Var;

/// One head of causal self-attention.
#[derive(Clone, Debug)]
pub struct Head {
    /// `nn.Linear(n_embd, head_size, bias=False)`.
    pub key: Linear,
    /// `nn.Linear(n_embd, head_size, bias=False)`.
    pub query: Linear,
    /// `nn.Linear(n_embd, head_size, bias=False)`.
    pub value: Linear,
    /// The factor on `q·kᵀ`: `n_embd^-0.5` in the video, `head_size^-0.5` after the fix.
    pub scale: f32,
    /// Dropout on the attention weights (gpt.py: 0.2).
    pub dropout: f32,
}

impl Head {
    /// Key, query, value, drawn in that order as `Head.__init__` does.
    pub fn new(
        init: &mut Init,
        name: &str,
        n_embd: usize,
        head_size: usize,
        scale: f32,
        dropout: f32,
    ) -> Head {
        Head {
            key: Linear::new(init, &format!("{name}.key"), n_embd, head_size, false),
            query: Linear::new(init, &format!("{name}.query"), n_embd, head_size, false),
            value: Linear::new(init, &format!("{name}.value"), n_embd, head_size, false),
            scale,
            dropout,
        }
    }

    // ANCHOR: head
    /// `(B, T, C) -> (B, T, head_size)`: every position takes a weighted average of
    /// the values at or before it, weighted by softmax(q·k · scale).
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        let t = x.shape()[1];
        let k = self.key.forward(f, x); // (B, T, hs)
        let q = self.query.forward(f, x); // (B, T, hs)
        let wei = q.matmul(k.transpose(-2, -1)) * self.scale; // (B, T, hs) @ (B, hs, T) -> (B, T, T)
        let wei = wei.masked_fill(&future_mask(t), f32::NEG_INFINITY); // (B, T, T)
        let wei = wei.softmax(-1); // (B, T, T)
        let wei = f.dropout(wei, self.dropout); // (B, T, T)
        let v = self.value.forward(f, x); // (B, T, hs)
        wei.matmul(v) // (B, T, T) @ (B, T, hs) -> (B, T, hs)
    }
    // ANCHOR_END: head
}

/// Several heads in parallel, their outputs concatenated, then (from the
/// `blocks` stage on) a projection back into the residual stream.
#[derive(Clone, Debug)]
pub struct MultiHeadAttention {
    /// The heads, each `head_size` wide.
    pub heads: Vec<Head>,
    /// `nn.Linear(n_embd, n_embd)`, from the `blocks` stage on.
    pub proj: Option<Linear>,
    /// Dropout after the projection (gpt.py: 0.2).
    pub dropout: f32,
}

impl MultiHeadAttention {
    /// `num_heads` heads of `head_size`, then the projection if `proj`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        init: &mut Init,
        name: &str,
        n_embd: usize,
        num_heads: usize,
        head_size: usize,
        scale: f32,
        proj: bool,
        dropout: f32,
    ) -> MultiHeadAttention {
        let heads = (0..num_heads)
            .map(|h| {
                Head::new(
                    init,
                    &format!("{name}.heads.{h}"),
                    n_embd,
                    head_size,
                    scale,
                    dropout,
                )
            })
            .collect();
        let proj = proj.then(|| Linear::new(init, &format!("{name}.proj"), n_embd, n_embd, true));
        MultiHeadAttention {
            heads,
            proj,
            dropout,
        }
    }

    // ANCHOR: multi_head
    /// `(B, T, C) -> (B, T, num_heads·head_size)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        let outs: Vec<Var<'g>> = self.heads.iter().map(|h| h.forward(f, x)).collect(); // each (B, T, hs)
        let out = Var::concat(&outs, -1); // (B, T, nh·hs)
        match &self.proj {
            Some(proj) => f.dropout(proj.forward(f, out), self.dropout), // (B, T, C)
            None => out,
        }
    }
    // ANCHOR_END: multi_head
}
