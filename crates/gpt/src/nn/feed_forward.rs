//! The per-position computation after attention: the video's `FeedFoward`
//! (ReLU) and nanoGPT's `MLP` (GELU, no bias).

use super::{Fwd, Init, Linear};
use autograd::Var;

/// gpt.py's `FeedFoward`: `Linear(C, hidden)`, ReLU, then (from the `blocks`
/// stage on) `Linear(hidden, C)` and dropout.
#[derive(Clone, Debug)]
pub struct FeedForward {
    /// `nn.Linear(n_embd, hidden)`.
    pub fc: Linear,
    /// `nn.Linear(hidden, n_embd)`, from the `blocks` stage on.
    pub proj: Option<Linear>,
    /// Dropout at the end (gpt.py: 0.2).
    pub dropout: f32,
}

impl FeedForward {
    /// `hidden` is `n_embd` in the `feed-forward` stage, `4·n_embd` from `blocks` on.
    pub fn new(
        init: &mut Init,
        name: &str,
        n_embd: usize,
        hidden: usize,
        proj: bool,
        dropout: f32,
    ) -> FeedForward {
        let fc = Linear::new(init, &format!("{name}.net.0"), n_embd, hidden, true);
        let proj = proj.then(|| Linear::new(init, &format!("{name}.net.2"), hidden, n_embd, true));
        FeedForward { fc, proj, dropout }
    }

    // ANCHOR: feed_forward
    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        let h = self.fc.forward(f, x).relu(); // (B, T, hidden)
        match &self.proj {
            Some(proj) => f.dropout(proj.forward(f, h), self.dropout), // (B, T, C)
            None => h,
        }
    }
    // ANCHOR_END: feed_forward
}

/// nanoGPT's `MLP`: `c_fc` to 4·C, exact GELU, `c_proj` back to C, dropout.
#[derive(Clone, Debug)]
pub struct Mlp {
    /// `nn.Linear(C, 4C, bias=False)`.
    pub c_fc: Linear,
    /// `nn.Linear(4C, C, bias=False)`; a residual projection (scaled init).
    pub c_proj: Linear,
    /// Dropout after `c_proj`.
    pub dropout: f32,
}

impl Mlp {
    /// Draws `c_fc` then `c_proj`, as `MLP.__init__`.
    pub fn new(init: &mut Init, name: &str, n_embd: usize, bias: bool, dropout: f32) -> Mlp {
        Mlp {
            c_fc: Linear::new(init, &format!("{name}.c_fc"), n_embd, 4 * n_embd, bias),
            c_proj: Linear::new(init, &format!("{name}.c_proj"), 4 * n_embd, n_embd, bias),
            dropout,
        }
    }

    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, f: &Fwd<'g>, x: Var<'g>) -> Var<'g> {
        let h = self.c_fc.forward(f, x).gelu(); // (B, T, 4C)
        f.dropout(self.c_proj.forward(f, h), self.dropout) // (B, T, C)
    }
}
