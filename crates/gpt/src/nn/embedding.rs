//! `nn.Embedding`: a table of rows looked up by index (the lecture's `C[X]`).

use super::{ForwardPass, Init};
use autograd::{ParamId, Var};

/// A lookup table of `num` vectors of width `dim`.
#[derive(Clone, Debug)]
pub struct Embedding {
    /// `(num, dim)`.
    pub weight: ParamId,
}

impl Embedding {
    /// `nn.Embedding(num, dim)`, initialised N(0, 1) as PyTorch does.
    pub fn new(init: &mut Init, name: &str, num: usize, dim: usize) -> Embedding {
        let w = init.rng.randn(&[num, dim]);
        let weight = init.params.add(&format!("{name}.weight"), w);
        init.weights.push(weight);
        Embedding { weight }
    }

    /// Rows `idx` of the table; `idx` has shape `idx_shape`, the result `idx_shape + (dim,)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        idx_shape: &[usize],
    ) -> Var<'g> {
        pass.param(self.weight).index_rows(idx, idx_shape)
    }
}
