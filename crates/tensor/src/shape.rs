//! Shape changes: reshape, transpose, permute, flatten, (un)squeeze, narrow,
//! concatenation, stacking and splitting.
//!
//! Transposes, permutes, narrows and (un)squeezes share the buffer and only change
//! strides, as in PyTorch; every op reads any layout. `reshape` and `view_shape`
//! copy only when the layout is not row-major, and `contiguous` makes it so.

use crate::Tensor;
use ndarray::{ArrayViewD, Axis, IxDyn, Slice};

/// Turns a PyTorch axis (negative counts from the end) into an index into `shape`.
pub(crate) fn axis_index(axis: isize, shape: &[usize]) -> usize {
    let ndim = shape.len() as isize;
    let a = if axis < 0 { axis + ndim } else { axis };
    assert!(
        (0..ndim).contains(&a),
        "axis {axis} is out of range for shape {shape:?}"
    );
    a as usize
}

impl Tensor {
    /// The same values in a new shape with the same element count
    /// (`x.reshape(shape)`). Panics naming both shapes if the counts differ.
    pub fn reshape(&self, shape: &[usize]) -> Tensor {
        let count: usize = shape.iter().product();
        assert!(
            count == self.len(),
            "cannot reshape {:?} ({} elements) into {:?} ({} elements)",
            self.shape(),
            self.len(),
            shape,
            count
        );
        // A view is copied first (heads transposed back: whole rows at a time).
        let data = self.contiguous().data;
        Tensor {
            data: data
                .into_shape_with_order(IxDyn(shape))
                .expect("standard layout, same count"),
        }
    }

    /// `x.view(shape)`: a reshape where one axis may be `-1`, inferred from the
    /// element count.
    pub fn view_shape(&self, shape: &[isize]) -> Tensor {
        let known: usize = shape
            .iter()
            .filter(|&&d| d >= 0)
            .map(|&d| d as usize)
            .product();
        let inferred = shape.iter().filter(|&&d| d == -1).count();
        assert!(
            inferred <= 1 && shape.iter().all(|&d| d >= -1),
            "view: only one -1 allowed in {shape:?}"
        );
        let resolved: Vec<usize> = shape
            .iter()
            .map(|&d| {
                if d >= 0 {
                    d as usize
                } else {
                    assert!(
                        known > 0 && self.len().is_multiple_of(known),
                        "cannot view {:?} ({} elements) as {:?}",
                        self.shape(),
                        self.len(),
                        shape
                    );
                    self.len() / known
                }
            })
            .collect();
        self.reshape(&resolved)
    }

    /// Swaps two axes (`x.transpose(a, b)`), sharing the buffer.
    pub fn transpose(&self, a: isize, b: isize) -> Tensor {
        let (a, b) = (axis_index(a, self.shape()), axis_index(b, self.shape()));
        let mut data = self.data.clone();
        data.swap_axes(a, b);
        Tensor { data }
    }

    /// The transpose of a 2-D tensor (`x.t()` / `x.T`).
    pub fn t(&self) -> Tensor {
        assert!(
            self.ndim() == 2,
            "t() needs a 2-D tensor, the shape is {:?}",
            self.shape()
        );
        self.transpose(0, 1)
    }

    /// Reorders the axes (`x.permute(order)`): axis `i` of the result is axis
    /// `order[i]` of `self`.
    pub fn permute(&self, order: &[usize]) -> Tensor {
        let mut seen = vec![false; self.ndim()];
        let valid = order.len() == self.ndim()
            && order
                .iter()
                .all(|&a| a < self.ndim() && !std::mem::replace(&mut seen[a], true));
        assert!(
            valid,
            "permute: {order:?} is not an order of the axes of shape {:?}",
            self.shape()
        );
        Tensor {
            data: self.data.clone().permuted_axes(IxDyn(order)),
        }
    }

    /// Merges axes `start..=end` into one (`x.flatten(start, end)`).
    pub fn flatten(&self, start: isize, end: isize) -> Tensor {
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        let (s, e) = (
            axis_index(start, self.shape()),
            axis_index(end, self.shape()),
        );
        assert!(
            s <= e,
            "flatten: start {start} comes after end {end} for shape {:?}",
            self.shape()
        );
        let mut shape = self.shape()[..s].to_vec();
        shape.push(self.shape()[s..=e].iter().product());
        shape.extend_from_slice(&self.shape()[e + 1..]);
        self.reshape(&shape)
    }

    /// Inserts an axis of size 1 at `axis` (`x.unsqueeze(axis)`); `-1` appends it.
    pub fn unsqueeze(&self, axis: isize) -> Tensor {
        let ndim = self.ndim() as isize;
        let a = if axis < 0 { axis + ndim + 1 } else { axis };
        assert!(
            (0..=ndim).contains(&a),
            "unsqueeze: axis {axis} is out of range for shape {:?}",
            self.shape()
        );
        Tensor {
            data: self.data.clone().insert_axis(Axis(a as usize)),
        }
    }

    /// Removes `axis` if its size is 1, and otherwise returns the tensor unchanged
    /// (`x.squeeze(axis)`).
    pub fn squeeze(&self, axis: isize) -> Tensor {
        let a = axis_index(axis, self.shape());
        if self.shape()[a] != 1 {
            return self.clone();
        }
        Tensor {
            data: self.data.clone().index_axis_move(Axis(a), 0),
        }
    }

    /// `len` consecutive entries along `axis` from `start` (`x.narrow(axis, start, len)`),
    /// sharing the buffer.
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Tensor {
        let a = axis_index(axis, self.shape());
        assert!(
            start + len <= self.shape()[a],
            "narrow: {start}..{} is out of range for axis {axis} of shape {:?}",
            start + len,
            self.shape()
        );
        let mut data = self.data.clone();
        data.slice_axis_inplace(Axis(a), Slice::from(start..start + len));
        Tensor { data }
    }

    /// Joins tensors along an existing axis (`torch.cat(tensors, axis)`).
    /// Panics naming the shapes if the other axes differ.
    pub fn concat(tensors: &[&Tensor], axis: isize) -> Tensor {
        assert!(!tensors.is_empty(), "concat of no tensors");
        let a = axis_index(axis, tensors[0].shape());
        if let Some(joined) = concat_last_axis(tensors, a) {
            return joined;
        }
        let views: Vec<ArrayViewD<f32>> = tensors.iter().map(|t| t.data.view()).collect();
        let joined = ndarray::concatenate(Axis(a), &views).unwrap_or_else(|_| {
            let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape()).collect();
            panic!("cannot concatenate shapes {shapes:?} along axis {axis}")
        });
        Tensor::from_array(joined)
    }

    /// Joins same-shaped tensors along a new axis (`torch.stack(tensors, axis)`).
    pub fn stack(tensors: &[&Tensor], axis: isize) -> Tensor {
        assert!(!tensors.is_empty(), "stack of no tensors");
        let ndim = tensors[0].ndim() as isize;
        let a = if axis < 0 { axis + ndim + 1 } else { axis };
        assert!(
            (0..=ndim).contains(&a),
            "stack: axis {axis} is out of range for {ndim}-d tensors"
        );
        let views: Vec<ArrayViewD<f32>> = tensors.iter().map(|t| t.data.view()).collect();
        let joined = ndarray::stack(Axis(a as usize), &views).unwrap_or_else(|_| {
            let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape()).collect();
            panic!("cannot stack shapes {shapes:?}: they differ")
        });
        Tensor::from_array(joined)
    }

    /// Pieces of `size` entries along `axis`, the last one shorter if needed
    /// (`torch.split(x, size, axis)`).
    pub fn split(&self, size: usize, axis: isize) -> Vec<Tensor> {
        assert!(size > 0, "split size must be positive");
        let a = axis_index(axis, self.shape());
        let n = self.shape()[a];
        (0..n)
            .step_by(size)
            .map(|start| self.narrow(axis, start, size.min(n - start)))
            .collect()
    }

    /// The same values in a row-major buffer of their own, copied only if the
    /// layout is not row-major already (`x.contiguous()`).
    pub fn contiguous(&self) -> Tensor {
        if self.data.is_standard_layout() {
            self.clone()
        } else if let Some(copy) = self.copy_rows() {
            copy
        } else if let Some(copy) = self.copy_transposed() {
            copy
        } else {
            Tensor::from_array(self.data.as_standard_layout().into_owned())
        }
    }

    /// [`Tensor::contiguous`] for a view whose last axis is unit-strided (a
    /// narrowed last axis, heads transposed back beside each other): whole
    /// rows copied in parallel, where ndarray copies one element at a time.
    /// `None` for any other layout.
    fn copy_rows(&self) -> Option<Tensor> {
        let (shape, strides) = (self.shape(), self.data.strides());
        let last = shape.len().checked_sub(1)?;
        let width = shape[last];
        if last == 0 || strides[last] != 1 || width < 2 || self.is_empty() {
            return None;
        }
        // Each row of the view is a slice of the buffer, in row-major order.
        let rows: Vec<&[f32]> = self
            .data
            .rows()
            .into_iter()
            .map(|row| row.to_slice())
            .collect::<Option<_>>()?;
        let out = crate::elementwise::parallel_collect(self.len(), width, |start, piece| {
            for (row, source) in piece.chunks_mut(width).zip(&rows[start / width..]) {
                for (o, &v) in row.iter_mut().zip(*source) {
                    o.write(v);
                }
            }
        });
        Some(Tensor::from_vec(out, shape))
    }

    /// [`Tensor::contiguous`] for a matrix (or a stack of them) whose last two
    /// axes are swapped from a row-major buffer, as a weight's gradient comes
    /// out of a matrix product: sixteen output rows at a time, so that each
    /// read takes a whole cache line, in parallel. `None` for any other layout.
    fn copy_transposed(&self) -> Option<Tensor> {
        let shape = self.shape();
        let nd = shape.len();
        if nd < 2 || self.is_empty() {
            return None;
        }
        let mut source = self.data.view();
        source.swap_axes(nd - 2, nd - 1);
        let values = source.as_slice()?; // (…, C, R), row-major
        let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
        const TILE: usize = 16;
        let out = crate::elementwise::parallel_collect(self.len(), cols, |start, piece| {
            let first_row = start / cols;
            for (t, tile) in piece.chunks_mut(TILE * cols).enumerate() {
                let first = first_row + t * TILE;
                if tile.len() == TILE * cols && first % rows + TILE <= rows {
                    // Sixteen whole rows of one matrix: 16×16 blocks through
                    // registers, read and written sixteen values at a time.
                    let base = (first / rows) * cols * rows + first % rows;
                    transpose_block_rows(&values[base..], rows, cols, tile);
                    continue;
                }
                // Output row g is row i of matrix b: column i of that
                // matrix's source, which starts at `column[k]`.
                let mut column = [0; TILE];
                for (k, start) in column.iter_mut().enumerate() {
                    let g = first_row + t * TILE + k;
                    *start = (g / rows) * cols * rows + g % rows;
                }
                let column = &column[..tile.len() / cols];
                for j in 0..cols {
                    for (k, &start) in column.iter().enumerate() {
                        tile[k * cols + j].write(values[start + j * rows]);
                    }
                }
            }
        });
        Some(Tensor::from_vec(out, shape))
    }

    /// Whether the buffer is row-major with no gaps.
    pub fn is_contiguous(&self) -> bool {
        self.data.is_standard_layout()
    }
}

/// Sixteen output rows of a transposed copy: `tile[k·cols + j] =
/// source[j·stride + k]` for `k < 16`, `j < cols`, a 16×16 block at a time
/// (sixteen contiguous reads, then sixteen contiguous writes).
fn transpose_block_rows(
    source: &[f32],
    stride: usize,
    cols: usize,
    tile: &mut [std::mem::MaybeUninit<f32>],
) {
    const TILE: usize = 16;
    let mut j0 = 0;
    while j0 < cols {
        let width = TILE.min(cols - j0);
        let mut block = [[0f32; TILE]; TILE];
        for (jj, line) in block.iter_mut().enumerate().take(width) {
            line.copy_from_slice(&source[(j0 + jj) * stride..][..TILE]);
        }
        for (k, row) in tile.chunks_exact_mut(cols).enumerate() {
            for (jj, out) in row[j0..j0 + width].iter_mut().enumerate() {
                out.write(block[jj][k]);
            }
        }
        j0 += width;
    }
}

/// Contiguous tensors side by side along their last axis (the video's heads
/// into one `(B, T, C)`), row by row in parallel: ndarray's general
/// `concatenate` walks the strided output one element at a time. `None` for
/// any other case, which goes the general way.
fn concat_last_axis(tensors: &[&Tensor], axis: usize) -> Option<Tensor> {
    let first = tensors[0].shape();
    let last = first.len().checked_sub(1)?;
    let lead = &first[..last];
    let fits = axis == last
        && tensors.iter().all(|t| {
            t.ndim() == first.len() && &t.shape()[..last] == lead && t.data.as_slice().is_some()
        });
    if !fits {
        return None;
    }
    let widths: Vec<usize> = tensors.iter().map(|t| t.shape()[last]).collect();
    let width: usize = widths.iter().sum();
    let rows: usize = lead.iter().product();
    if width == 0 || rows == 0 {
        return None;
    }
    let sources: Vec<&[f32]> = tensors
        .iter()
        .map(|t| t.data.as_slice().expect("contiguous"))
        .collect();
    let out = crate::elementwise::parallel_collect(rows * width, width, |start, piece| {
        for (r, row) in piece.chunks_mut(width).enumerate() {
            let row_index = start / width + r;
            let mut offset = 0;
            for (source, &w) in sources.iter().zip(&widths) {
                for (o, &v) in row[offset..offset + w]
                    .iter_mut()
                    .zip(&source[row_index * w..])
                {
                    o.write(v);
                }
                offset += w;
            }
        }
    });
    let mut shape = first.to_vec();
    shape[last] = width;
    Some(Tensor::from_vec(out, &shape))
}
