//! Indexing: embedding lookups, picking one entry per row, masking.

use crate::graph::Var;
use tensor::Tensor;

impl<'g> Var<'g> {
    // ANCHOR: index_rows
    /// The lecture's `C[X]`: rows of a table by index. `self` is (V, D…), `idx`
    /// has shape `idx_shape`, the result is `idx_shape + (D…)`.
    ///
    /// Backward adds each row's gradient into the row it came from; a row looked
    /// up twice receives both contributions.
    pub fn index_rows(self, idx: &[usize], idx_shape: &[usize]) -> Var<'g> {
        let table = self.value();
        let rows = table.shape()[0];
        let row_shape = table.shape()[1..].to_vec();
        let idx = idx.to_vec();
        let out = table.index_rows(&idx, idx_shape);
        self.graph.op(out, &[self], move |grad| {
            let flat: Vec<usize> = std::iter::once(idx.len())
                .chain(row_shape.iter().copied())
                .collect();
            vec![Tensor::scatter_add_rows(rows, &idx, &grad.reshape(&flat))]
        })
    }
    // ANCHOR_END: index_rows

    /// One entry per position along the last axis: `probs[arange(n), ys]`.
    pub fn gather_last(self, idx: &[usize]) -> Var<'g> {
        let a = self.value();
        let shape = a.shape().to_vec();
        let idx = idx.to_vec();
        let out = a.gather_last(&idx);
        self.graph.op(out, &[self], move |grad| {
            vec![Tensor::scatter_last(&shape, &idx, grad)]
        })
    }

    /// Replaces entries where `mask` (broadcastable, nonzero = fill) is set; no
    /// gradient flows through the filled entries.
    pub fn masked_fill(self, mask: &Tensor, value: f32) -> Var<'g> {
        let out = self.value().masked_fill(mask, value);
        let mask = mask.clone();
        self.graph
            .op(out, &[self], move |grad| vec![grad.masked_fill(&mask, 0.0)])
    }
}
