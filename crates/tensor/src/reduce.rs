//! Reductions: sums, means, max, variance, cumulative sums and top-k.
//!
//! Sums accumulate in f64. PyTorch's f32 cascade sum is accurate to a few units
//! in the last place; a plain f32 loop over 10⁵ elements is not, and the loss of
//! a whole data set is such a sum.

use crate::shape::axis_index;
use crate::Tensor;
use ndarray::{ArrayD, Axis, IxDyn};

impl Tensor {
    /// Normalises (possibly negative) axes, sorted, without repeats.
    fn reduced_axes(&self, axes: &[isize]) -> Vec<usize> {
        let mut out: Vec<usize> = axes.iter().map(|&a| axis_index(a, self.shape())).collect();
        out.sort_unstable();
        let before = out.len();
        out.dedup();
        assert!(
            before == out.len(),
            "axis repeated in {:?} for shape {:?}",
            axes,
            self.shape()
        );
        out
    }

    /// The shape left after reducing `axes`, with 1s in their place if `keepdim`.
    fn reduced_shape(&self, axes: &[usize], keepdim: bool) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, &d) in self.shape().iter().enumerate() {
            if !axes.contains(&i) {
                out.push(d);
            } else if keepdim {
                out.push(1);
            }
        }
        out
    }

    /// Applies `f` to each lane of the reduced axes and returns one value per lane,
    /// laid out row-major over the remaining axes.
    ///
    /// The reduced axes are permuted last and the buffer made contiguous (a copy only
    /// when the layout needs one), so each lane is one slice.
    fn reduce_lanes<T>(&self, axes: &[usize], f: impl Fn(&[f32]) -> T) -> Vec<T> {
        let mut perm: Vec<usize> = (0..self.ndim()).filter(|i| !axes.contains(i)).collect();
        perm.extend_from_slice(axes);
        let lane: usize = axes.iter().map(|&a| self.shape()[a]).product();
        let view = self.data.view().permuted_axes(IxDyn(&perm));
        let contiguous = view.as_standard_layout();
        let values = contiguous.as_slice().expect("standard layout");
        if lane == 0 {
            let kept: usize = perm[..perm.len() - axes.len()]
                .iter()
                .map(|&a| self.shape()[a])
                .product();
            return (0..kept).map(|_| f(&[])).collect();
        }
        values.chunks(lane).map(f).collect()
    }

    /// When `axes` are the leading axes of a standard-layout tensor (a batch
    /// norm's `(0,)` or `(0, 1)`), the rows to combine and the row length: each
    /// output element then gathers one column, in the same order as its lane.
    fn leading_rows(&self, axes: &[usize]) -> Option<(&[f32], usize)> {
        let leading = !axes.is_empty() && axes.iter().enumerate().all(|(i, &a)| i == a);
        let row: usize = self.shape()[axes.len()..].iter().product();
        if !leading || row == 0 || self.is_empty() {
            return None;
        }
        Some((self.data.as_slice()?, row))
    }

    /// Per column over the leading axes: the f64 mean, and the f64 sum of squared
    /// deviations from it (the two passes of `variance`, column by column).
    fn column_moments(values: &[f32], row: usize, squares: bool) -> (Vec<f64>, Vec<f64>) {
        let n = (values.len() / row) as f64;
        let mut mean = vec![0f64; row];
        for chunk in values.chunks(row) {
            for (m, &x) in mean.iter_mut().zip(chunk) {
                *m += x as f64;
            }
        }
        mean.iter_mut().for_each(|m| *m /= n);
        let mut sq = vec![0f64; if squares { row } else { 0 }];
        if squares {
            for chunk in values.chunks(row) {
                for ((q, &m), &x) in sq.iter_mut().zip(&mean).zip(chunk) {
                    *q += (x as f64 - m).powi(2);
                }
            }
        }
        (mean, sq)
    }

    /// Sums over `axes` (`x.sum(dim=axes, keepdim=keepdim)`).
    pub fn sum_axes(&self, axes: &[isize], keepdim: bool) -> Tensor {
        let axes = self.reduced_axes(axes);
        let shape = self.reduced_shape(&axes, keepdim);
        let leading = axes.iter().enumerate().all(|(i, &a)| i == a);
        if leading && self.data.is_standard_layout() && !axes.is_empty() {
            // Summing leading axes (a bias gradient over the batch) adds whole rows,
            // which runs straight through memory instead of copying a transpose.
            let row: usize = self.shape()[axes.len()..].iter().product();
            let mut acc = vec![0f64; row];
            let values = self.data.as_slice().expect("standard layout");
            if row > 0 {
                for chunk in values.chunks(row) {
                    for (a, &x) in acc.iter_mut().zip(chunk) {
                        *a += x as f64;
                    }
                }
            }
            return Tensor::from_vec(acc.into_iter().map(|a| a as f32).collect(), &shape);
        }
        let last = self.ndim().checked_sub(1);
        let along_rows = axes.len() == 1 && Some(axes[0]) == last && self.shape()[axes[0]] > 0;
        if let (Some(values), true) = (self.data.as_slice(), along_rows) {
            return Tensor::from_vec(sum_rows(values, self.shape()[axes[0]]), &shape);
        }
        let values = self.reduce_lanes(&axes, |lane| {
            lane.iter().map(|&x| x as f64).sum::<f64>() as f32
        });
        Tensor::from_vec(values, &shape)
    }

    /// Sums over one axis (`x.sum(axis, keepdim)`); negative axes count from the end.
    pub fn sum(&self, axis: isize, keepdim: bool) -> Tensor {
        self.sum_axes(&[axis], keepdim)
    }

    /// The sum of every element, as a 0-d tensor.
    pub fn sum_all(&self) -> Tensor {
        let total: f64 = self.data.iter().map(|&x| x as f64).sum();
        Tensor::scalar(total as f32)
    }

    /// The mean over `axes`.
    pub fn mean_axes(&self, axes: &[isize], keepdim: bool) -> Tensor {
        let axes = self.reduced_axes(axes);
        let shape = self.reduced_shape(&axes, keepdim);
        if let Some((values, row)) = self.leading_rows(&axes) {
            let (mean, _) = Tensor::column_moments(values, row, false);
            return Tensor::from_vec(mean.into_iter().map(|m| m as f32).collect(), &shape);
        }
        let values = self.reduce_lanes(&axes, |lane| {
            (lane.iter().map(|&x| x as f64).sum::<f64>() / lane.len() as f64) as f32
        });
        Tensor::from_vec(values, &shape)
    }

    /// The mean over one axis.
    pub fn mean(&self, axis: isize, keepdim: bool) -> Tensor {
        self.mean_axes(&[axis], keepdim)
    }

    /// The mean of every element, as a 0-d tensor.
    pub fn mean_all(&self) -> Tensor {
        let total: f64 = self.data.iter().map(|&x| x as f64).sum();
        Tensor::scalar((total / self.len() as f64) as f32)
    }

    /// The largest element, as a 0-d tensor; NaN if any element is NaN.
    pub fn max_all(&self) -> Tensor {
        assert!(
            !self.is_empty(),
            "max_all of an empty tensor, shape {:?}",
            self.shape()
        );
        Tensor::scalar(self.data.iter().copied().fold(f32::NEG_INFINITY, nan_max))
    }

    /// The largest value along `axis` (the values of `x.max(axis, keepdim)`).
    pub fn max(&self, axis: isize, keepdim: bool) -> Tensor {
        let axes = self.reduced_axes(&[axis]);
        assert!(
            self.shape()[axes[0]] > 0,
            "max over an empty axis of shape {:?}",
            self.shape()
        );
        let shape = self.reduced_shape(&axes, keepdim);
        let values = self.reduce_lanes(&axes, |lane| {
            lane.iter().copied().fold(f32::NEG_INFINITY, nan_max)
        });
        Tensor::from_vec(values, &shape)
    }

    /// The smallest element, as a 0-d tensor; NaN if any element is NaN.
    pub fn min_all(&self) -> Tensor {
        assert!(
            !self.is_empty(),
            "min_all of an empty tensor, shape {:?}",
            self.shape()
        );
        Tensor::scalar(self.data.iter().copied().fold(f32::INFINITY, nan_min))
    }

    /// The smallest value along `axis` (the values of `x.min(axis, keepdim)`).
    pub fn min(&self, axis: isize, keepdim: bool) -> Tensor {
        let axes = self.reduced_axes(&[axis]);
        assert!(
            self.shape()[axes[0]] > 0,
            "min over an empty axis of shape {:?}",
            self.shape()
        );
        let shape = self.reduced_shape(&axes, keepdim);
        let values = self.reduce_lanes(&axes, |lane| {
            lane.iter().copied().fold(f32::INFINITY, nan_min)
        });
        Tensor::from_vec(values, &shape)
    }

    /// The index of the largest value along `axis`, row-major over the other axes.
    /// Ties give the first index, as `torch.argmax` does.
    pub fn argmax(&self, axis: isize) -> Vec<usize> {
        let axes = self.reduced_axes(&[axis]);
        assert!(
            self.shape()[axes[0]] > 0,
            "argmax over an empty axis of shape {:?}",
            self.shape()
        );
        self.reduce_lanes(&axes, |lane| {
            let mut best = 0;
            for (i, &x) in lane.iter().enumerate() {
                if lane[best].is_nan() {
                    break;
                }
                if x > lane[best] || x.is_nan() {
                    best = i;
                }
            }
            best
        })
    }

    /// The variance over `axes`; `unbiased` divides by `n - 1` (Bessel's correction,
    /// `torch.var`'s default), otherwise by `n`.
    pub fn var_axes(&self, axes: &[isize], keepdim: bool, unbiased: bool) -> Tensor {
        let axes = self.reduced_axes(axes);
        let shape = self.reduced_shape(&axes, keepdim);
        if let Some(var) = self.leading_variance(&axes, unbiased) {
            return Tensor::from_vec(var.into_iter().map(|v| v as f32).collect(), &shape);
        }
        let values = self.reduce_lanes(&axes, |lane| variance(lane, unbiased) as f32);
        Tensor::from_vec(values, &shape)
    }

    /// `variance` of every column over the leading axes, without transposing.
    fn leading_variance(&self, axes: &[usize], unbiased: bool) -> Option<Vec<f64>> {
        let (values, row) = self.leading_rows(axes)?;
        let n = (values.len() / row) as f64;
        let (_, squares) = Tensor::column_moments(values, row, true);
        let dof = if unbiased { n - 1.0 } else { n };
        Some(squares.into_iter().map(|q| q / dof).collect())
    }

    /// The variance over one axis.
    pub fn var(&self, axis: isize, keepdim: bool, unbiased: bool) -> Tensor {
        self.var_axes(&[axis], keepdim, unbiased)
    }

    /// The standard deviation over `axes`.
    pub fn std_axes(&self, axes: &[isize], keepdim: bool, unbiased: bool) -> Tensor {
        let axes = self.reduced_axes(axes);
        let shape = self.reduced_shape(&axes, keepdim);
        if let Some(var) = self.leading_variance(&axes, unbiased) {
            return Tensor::from_vec(var.into_iter().map(|v| v.sqrt() as f32).collect(), &shape);
        }
        let values = self.reduce_lanes(&axes, |lane| variance(lane, unbiased).sqrt() as f32);
        Tensor::from_vec(values, &shape)
    }

    /// The standard deviation over one axis.
    pub fn std(&self, axis: isize, keepdim: bool, unbiased: bool) -> Tensor {
        self.std_axes(&[axis], keepdim, unbiased)
    }

    /// Running sums along `axis` (`torch.cumsum`), accumulated in f64 as PyTorch's
    /// CPU kernel does for f32.
    pub fn cumsum(&self, axis: isize) -> Tensor {
        let axis = axis_index(axis, self.shape());
        let mut out = ArrayD::<f32>::zeros(IxDyn(self.shape()));
        for (lane_in, mut lane_out) in self
            .data
            .lanes(Axis(axis))
            .into_iter()
            .zip(out.lanes_mut(Axis(axis)))
        {
            let mut acc = 0f64;
            for (x, y) in lane_in.iter().zip(lane_out.iter_mut()) {
                acc += *x as f64;
                *y = acc as f32;
            }
        }
        Tensor::from_array(out)
    }

    /// The `k` largest values along the last axis, sorted descending, and their
    /// indices (`torch.topk(x, k)`). Both are laid out as shape `(..., k)`.
    /// Equal values keep their original order.
    pub fn topk(&self, k: usize) -> (Tensor, Vec<usize>) {
        assert!(self.ndim() > 0, "topk of a 0-d tensor");
        let last = self.ndim() - 1;
        assert!(
            k <= self.shape()[last],
            "topk: k = {k} is larger than the last axis of shape {:?}",
            self.shape()
        );
        let picks = self.reduce_lanes(&[last], |lane| {
            let mut order: Vec<usize> = (0..lane.len()).collect();
            // NaN sorts as the largest value, as in PyTorch.
            order.sort_by(|&i, &j| {
                let (a, b) = (lane[i], lane[j]);
                match (a.is_nan(), b.is_nan()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Less,
                    (false, true) => std::cmp::Ordering::Greater,
                    _ => b.partial_cmp(&a).expect("not NaN"),
                }
            });
            order.truncate(k);
            order.into_iter().map(|i| (lane[i], i)).collect::<Vec<_>>()
        });
        let mut shape = self.shape().to_vec();
        shape[last] = k;
        let values = picks.iter().flatten().map(|p| p.0).collect();
        let indices = picks.iter().flatten().map(|p| p.1).collect();
        (Tensor::from_vec(values, &shape), indices)
    }
}

fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || a >= b {
        a
    } else {
        b
    }
}

fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || a <= b {
        a
    } else {
        b
    }
}

/// Two-pass variance in f64: the mean first, then the squared deviations, which
/// avoids the cancellation of `E[x²] - E[x]²`.
fn variance(lane: &[f32], unbiased: bool) -> f64 {
    let n = lane.len() as f64;
    let mean = lane.iter().map(|&x| x as f64).sum::<f64>() / n;
    let squares: f64 = lane.iter().map(|&x| (x as f64 - mean).powi(2)).sum();
    let dof = if unbiased { n - 1.0 } else { n };
    squares / dof
}

/// The f64 sum of each row of `width` values, each in order from the first, as
/// `Iterator::sum` adds them, but eight rows side by side, so that eight
/// chains of additions overlap, and across threads.
fn sum_rows(values: &[f32], width: usize) -> Vec<f32> {
    let rows = values.len() / width;
    crate::elementwise::parallel_collect(rows, INTERLEAVED, |start, piece| {
        for (group, out) in piece.chunks_mut(INTERLEAVED).enumerate() {
            let first = (start + group * INTERLEAVED) * width;
            let sums = group_row_sums(&values[first..first + out.len() * width], width);
            for (o, &sum) in out.iter_mut().zip(&sums) {
                o.write(sum as f32);
            }
        }
    })
}

/// `Iterator::sum`'s starting value for f64, whichever zero it is: the row sums
/// start there to give its bits.
const SUM_START: f64 = -0.0;

/// How many rows [`interleaved_row_sums`] takes at once.
pub(crate) const INTERLEAVED: usize = 8;

/// The f64 sum of each of [`INTERLEAVED`] rows of `width` values, stored one after
/// another in `rows`. Each row is still one chain of adds in index order
/// as `Iterator::sum` adds it (from [`SUM_START`]), so every sum has the same bits; but the rows' chains
/// run side by side, where one row's chain waits out each add's latency (a 128-wide
/// layer norm spent most of its time so). With AVX2 the eight rows are read eight
/// columns at a time and transposed in registers, so that one add takes a column of
/// four rows: gathering a column element by element cost as much as the adds again.
pub(crate) fn interleaved_row_sums(rows: &[f32], width: usize) -> [f64; INTERLEAVED] {
    assert_eq!(
        rows.len(),
        INTERLEAVED * width,
        "interleaved_row_sums: not eight rows"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { transposed::row_sums(rows, width) };
    }
    row_sums_from(rows, width, 0, [SUM_START; INTERLEAVED])
}

/// The f64 sum of each row of `rows`, up to [`INTERLEAVED`] rows of `width` values
/// (`rows.len() / width` of them), each as `Iterator::sum` adds it: a full group of eight
/// through [`interleaved_row_sums`], a shorter one row by row (the same bits either way). The
/// sums past the last row are zero.
pub(crate) fn group_row_sums(rows: &[f32], width: usize) -> [f64; INTERLEAVED] {
    if rows.len() == INTERLEAVED * width {
        return interleaved_row_sums(rows, width);
    }
    let mut sums = [0f64; INTERLEAVED];
    if width > 0 {
        for (sum, row) in sums.iter_mut().zip(rows.chunks(width)) {
            *sum = row.iter().map(|&v| v as f64).sum();
        }
    }
    sums
}

/// The chains of [`interleaved_row_sums`] continued from column `first` with `sums`.
#[inline(always)]
fn row_sums_from(
    rows: &[f32],
    width: usize,
    first: usize,
    mut sums: [f64; INTERLEAVED],
) -> [f64; INTERLEAVED] {
    for j in first..width {
        for (r, sum) in sums.iter_mut().enumerate() {
            *sum += rows[r * width + j] as f64;
        }
    }
    sums
}

#[cfg(target_arch = "x86_64")]
mod transposed {
    use super::{row_sums_from, INTERLEAVED};
    use std::arch::x86_64::*;

    /// [`super::interleaved_row_sums`], eight columns at a time, the rest as the portable
    /// loop: the same adds in the same order.
    ///
    /// # Safety
    /// The CPU must have AVX2; `rows` holds eight rows of `width` values (checked by the
    /// caller).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn row_sums(rows: &[f32], width: usize) -> [f64; INTERLEAVED] {
        let mut first_four = _mm256_set1_pd(super::SUM_START); // rows 0 to 3
        let mut last_four = _mm256_set1_pd(super::SUM_START); // rows 4 to 7
        let mut j = 0;
        while j + 8 <= width {
            // SAFETY: row r's columns j..j + 8 lie inside `rows`.
            let block: [__m256; 8] = std::array::from_fn(|r| unsafe {
                _mm256_loadu_ps(rows.as_ptr().add(r * width + j))
            });
            for column in transpose(block) {
                first_four =
                    _mm256_add_pd(first_four, _mm256_cvtps_pd(_mm256_castps256_ps128(column)));
                last_four =
                    _mm256_add_pd(last_four, _mm256_cvtps_pd(_mm256_extractf128_ps(column, 1)));
            }
            j += 8;
        }
        let mut sums = [0f64; INTERLEAVED];
        // SAFETY: `sums` holds eight f64.
        unsafe {
            _mm256_storeu_pd(sums.as_mut_ptr(), first_four);
            _mm256_storeu_pd(sums.as_mut_ptr().add(4), last_four);
        }
        row_sums_from(rows, width, j, sums)
    }

    /// An 8×8 block of rows as its eight columns.
    #[inline(always)]
    fn transpose(r: [__m256; 8]) -> [__m256; 8] {
        // SAFETY (of each intrinsic): only called from `row_sums`, which has AVX2.
        unsafe {
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            [
                _mm256_permute2f128_ps::<0x20>(s0, s4),
                _mm256_permute2f128_ps::<0x20>(s1, s5),
                _mm256_permute2f128_ps::<0x20>(s2, s6),
                _mm256_permute2f128_ps::<0x20>(s3, s7),
                _mm256_permute2f128_ps::<0x31>(s0, s4),
                _mm256_permute2f128_ps::<0x31>(s1, s5),
                _mm256_permute2f128_ps::<0x31>(s2, s6),
                _mm256_permute2f128_ps::<0x31>(s3, s7),
            ]
        }
    }
}

#[cfg(test)]
mod row_sum_tests {
    use super::*;

    #[test]
    fn the_row_sums_start_where_iterator_sum_does() {
        let start: f64 = std::iter::empty::<f64>().sum();
        assert_eq!(SUM_START.to_bits(), start.to_bits());
    }

    /// A group of one to eight rows: each row's `Iterator::sum` bit for bit, zeros after.
    #[test]
    fn a_group_of_any_size_sums_each_row_in_order() {
        let width = 37;
        let values: Vec<f32> = (0..INTERLEAVED * width)
            .map(|i| ((i * 7919 % 2001) as f32 - 1000.0) * 2f32.powi((i as i32 * 13) % 40 - 20))
            .collect();
        for count in 1..=INTERLEAVED {
            let rows = &values[..count * width];
            let sums = group_row_sums(rows, width);
            for (r, sum) in sums.iter().enumerate() {
                let want: f64 = match r < count {
                    true => rows[r * width..][..width].iter().map(|&v| v as f64).sum(),
                    false => 0.0,
                };
                assert_eq!(sum.to_bits(), want.to_bits(), "{count} rows, row {r}");
            }
        }
    }

    /// Every width, with its tail after the last eight columns, gives each row's
    /// `Iterator::sum` bit for bit: values of many magnitudes, so that the order shows.
    #[test]
    fn eight_rows_side_by_side_sum_each_row_in_order() {
        for width in [1, 7, 8, 9, 16, 65, 128, 131] {
            let rows: Vec<f32> = (0..INTERLEAVED * width)
                .map(|i| {
                    let i = i as i32;
                    ((i * 7919 % 2001) - 1000) as f32 * 2f32.powi((i * 13) % 40 - 20)
                })
                .collect();
            let sums = interleaved_row_sums(&rows, width);
            for (r, row) in rows.chunks(width).enumerate() {
                let plain: f64 = row.iter().map(|&v| v as f64).sum();
                assert_eq!(sums[r].to_bits(), plain.to_bits(), "width {width}, row {r}");
            }
        }
    }
}

#[cfg(test)]
mod leading_axes_tests {
    use crate::Tensor;

    /// The row-wise path for leading axes must give the lane path's values bit for bit:
    /// a transposed copy of the same data goes through the lanes.
    #[test]
    fn leading_axes_match_the_lane_path_exactly() {
        let values: Vec<f32> = (0..3 * 4 * 5)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.37)
            .collect();
        let x = Tensor::from_vec(values, &[3, 4, 5]);
        // Same logical tensor, stored transposed: its axes (0, 1) are not leading in memory.
        let xt = x.permute(&[2, 1, 0]).contiguous().permute(&[2, 1, 0]);
        for axes in [&[0isize][..], &[0, 1]] {
            let pairs = [
                (x.mean_axes(axes, true), xt.mean_axes(axes, true)),
                (x.var_axes(axes, true, true), xt.var_axes(axes, true, true)),
                (
                    x.var_axes(axes, false, false),
                    xt.var_axes(axes, false, false),
                ),
                (x.std_axes(axes, true, true), xt.std_axes(axes, true, true)),
            ];
            for (fast, lanes) in pairs {
                assert_eq!(fast.shape(), lanes.shape());
                assert_eq!(fast.to_vec(), lanes.to_vec(), "axes {axes:?}");
            }
        }
    }
}
