//! Indexing with integer index lists: embedding lookups (`C[X]`), picking one
//! entry per row (`probs[arange(n), ys]`), their scatter-add backwards, one-hot
//! encoding, lower-triangular masks and `masked_fill`.
//!
//! Index lists are `&[usize]` in row-major order; where their shape matters it is
//! passed beside them.

use crate::{broadcast_shapes, Tensor};

impl Tensor {
    /// Rows of `self` picked by index (`C[X]`): `self` is `(V, D…)`, the result is
    /// `idx_shape + (D…)`. Panics naming an index that is out of range.
    pub fn index_rows(&self, idx: &[usize], idx_shape: &[usize]) -> Tensor {
        assert!(self.ndim() >= 1, "index_rows of a 0-d tensor");
        assert!(
            idx.len() == idx_shape.iter().product::<usize>(),
            "index_rows: {} indices do not fill index shape {:?}",
            idx.len(),
            idx_shape
        );
        let rows = self.shape()[0];
        let table = self.contiguous();
        let values = table.data.as_slice().expect("contiguous");
        let width = self.shape()[1..].iter().product::<usize>();
        let mut out = Vec::with_capacity(idx.len() * width);
        for &i in idx {
            assert!(
                i < rows,
                "index {i} is out of range for {rows} rows (shape {:?})",
                self.shape()
            );
            out.extend_from_slice(&values[i * width..(i + 1) * width]);
        }
        let mut shape = idx_shape.to_vec();
        shape.extend_from_slice(&self.shape()[1..]);
        Tensor::from_vec(out, &shape)
    }

    /// The backward of [`Tensor::index_rows`]: a `(rows, D…)` tensor of zeros with
    /// `src`'s row `i` added into row `idx[i]` (repeated indices accumulate).
    ///
    /// `src` is `(idx.len(), D…)` or `idx_shape + (D…)`; `D…` are the axes of `src`
    /// after the shortest leading run whose sizes multiply to `idx.len()`.
    pub fn scatter_add_rows(rows: usize, idx: &[usize], src: &Tensor) -> Tensor {
        let mut split = 0;
        let mut count = 1;
        while count != idx.len() && split < src.ndim() {
            count *= src.shape()[split];
            split += 1;
        }
        assert!(
            count == idx.len(),
            "scatter_add_rows: source shape {:?} does not start with {} index positions",
            src.shape(),
            idx.len()
        );
        let row_shape = &src.shape()[split..];
        let width: usize = row_shape.iter().product();
        let src = src.contiguous();
        let values = src.data.as_slice().expect("contiguous");
        // A row looked up thousands of times (lecture 2 looks up each of 27 rows
        // ~8,000 times) sums that many values; accumulate in f64, as the
        // reductions do, so the result does not drift with the count.
        // Only the rows looked up get sums (GPT-2's 50,304 × 768 table holds
        // a few hundred per micro-batch); the rest are zero.
        let mut slot_of_row = vec![usize::MAX; rows];
        let mut looked_up = Vec::new();
        for &i in idx {
            assert!(i < rows, "index {i} is out of range for {rows} rows");
            if slot_of_row[i] == usize::MAX {
                slot_of_row[i] = looked_up.len();
                looked_up.push(i);
            }
        }
        let mut sums = vec![0f64; looked_up.len() * width];
        for (n, &i) in idx.iter().enumerate() {
            let slot = slot_of_row[i];
            let target = &mut sums[slot * width..(slot + 1) * width];
            for (t, &v) in target.iter_mut().zip(&values[n * width..(n + 1) * width]) {
                *t += v as f64;
            }
        }
        let mut out = vec![0f32; rows * width];
        for (slot, &i) in looked_up.iter().enumerate() {
            let sum = &sums[slot * width..(slot + 1) * width];
            for (o, &s) in out[i * width..(i + 1) * width].iter_mut().zip(sum) {
                *o = s as f32;
            }
        }
        let mut shape = vec![rows];
        shape.extend_from_slice(row_shape);
        Tensor::from_vec(out, &shape)
    }

    /// One entry of the last axis per leading position (`probs[arange(n), ys]`):
    /// `self` is `(…, C)`, `idx` has one entry per position of `(…)`, and so does
    /// the result.
    pub fn gather_last(&self, idx: &[usize]) -> Tensor {
        assert!(self.ndim() >= 1, "gather_last of a 0-d tensor");
        let last = self.ndim() - 1;
        let classes = self.shape()[last];
        let lead = &self.shape()[..last];
        assert!(
            idx.len() == lead.iter().product::<usize>(),
            "gather_last: {} indices for shape {:?} (need one per row)",
            idx.len(),
            self.shape()
        );
        let table = self.contiguous();
        let values = table.data.as_slice().expect("contiguous");
        let out = idx
            .iter()
            .enumerate()
            .map(|(row, &i)| {
                assert!(
                    i < classes,
                    "index {i} is out of range for last axis of shape {:?}",
                    self.shape()
                );
                values[row * classes + i]
            })
            .collect();
        Tensor::from_vec(out, lead)
    }

    /// The backward of [`Tensor::gather_last`]: zeros of `shape` `(…, C)` with
    /// `src[p]` added at `(p, idx[p])` for each leading position `p`.
    pub fn scatter_last(shape: &[usize], idx: &[usize], src: &Tensor) -> Tensor {
        assert!(!shape.is_empty(), "scatter_last into a 0-d shape");
        let classes = shape[shape.len() - 1];
        let lead: usize = shape[..shape.len() - 1].iter().product();
        assert!(
            idx.len() == lead && src.len() == lead,
            "scatter_last: {} indices and source shape {:?} for shape {:?} (need one per row)",
            idx.len(),
            src.shape(),
            shape
        );
        let mut out = vec![0f32; lead * classes];
        for ((row, &i), v) in idx.iter().enumerate().zip(src.data.iter()) {
            assert!(
                i < classes,
                "index {i} is out of range for last axis of shape {shape:?}"
            );
            out[row * classes + i] += *v;
        }
        Tensor::from_vec(out, shape)
    }

    /// `F.one_hot(idx, num_classes)` as f32: shape `(idx.len(), num_classes)`.
    pub fn one_hot(idx: &[usize], num_classes: usize) -> Tensor {
        let mut out = vec![0f32; idx.len() * num_classes];
        for (row, &i) in idx.iter().enumerate() {
            assert!(
                i < num_classes,
                "one_hot: index {i} is out of range for {num_classes} classes"
            );
            out[row * num_classes + i] = 1.0;
        }
        Tensor::from_vec(out, &[idx.len(), num_classes])
    }

    /// Zeros above the `diagonal`-th diagonal of the last two axes (`torch.tril`);
    /// `diagonal = 0` keeps the main diagonal, positive keeps more.
    pub fn tril(&self, diagonal: i64) -> Tensor {
        assert!(
            self.ndim() >= 2,
            "tril needs at least 2 axes, the shape is {:?}",
            self.shape()
        );
        let cols = self.shape()[self.ndim() - 1];
        let rows = self.shape()[self.ndim() - 2];
        let mut out = self.contiguous().data.into_owned();
        let values = out.as_slice_mut().expect("contiguous");
        for (n, v) in values.iter_mut().enumerate() {
            let (i, j) = ((n / cols.max(1)) % rows.max(1), n % cols.max(1));
            if j as i64 - i as i64 > diagonal {
                *v = 0.0;
            }
        }
        Tensor::from_array(out)
    }

    /// `torch.tril(torch.ones(rows, cols))`: the causal mask of self-attention.
    pub fn tril_ones(rows: usize, cols: usize) -> Tensor {
        Tensor::ones(&[rows, cols]).tril(0)
    }

    /// `x.masked_fill(mask, value)`: `value` where `mask` (broadcast to `self`'s
    /// shape) is nonzero, `self` elsewhere.
    pub fn masked_fill(&self, mask: &Tensor, value: f32) -> Tensor {
        let fits = broadcast_shapes(self.shape(), mask.shape()).is_ok_and(|s| s == self.shape());
        assert!(
            fits,
            "masked_fill: cannot broadcast mask {:?} to {:?}",
            mask.shape(),
            self.shape()
        );
        self.zip_map(mask, |x, m| if m != 0.0 { value } else { x })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_add_rows_does_not_drift_over_many_repeats() {
        // 100,000 × 0.1 summed in f32 one by one gives 9998.557; the exact sum
        // of the f32 value 0.1 is 10000.000149, which rounds to 10000.0.
        let n = 100_000;
        let src = Tensor::full(&[n, 1], 0.1);
        let out = Tensor::scatter_add_rows(2, &vec![1; n], &src);
        assert_eq!(out.to_vec(), vec![0.0, 10000.0]);
    }
}
