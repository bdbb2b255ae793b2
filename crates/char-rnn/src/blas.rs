//! numpy's matrix-vector products, in the order OpenBLAS adds them.
//!
//! min-char-rnn.py's `np.dot(Whh, h)` with a `(100, 1)` column is BLAS's
//! `dgemv`, and its sums are not added left to right: OpenBLAS's kernels for
//! AVX2 machines (`kernel/x86_64/dgemv_t_4.c`, `dgemv_n_4.c` and their
//! `_microk_haswell-4.c` micro-kernels, used for Haswell and Zen cores) keep
//! four running sums in the lanes of a register, or add four columns at a time
//! with fused multiply-adds. The order matters more than it seems: Adagrad's
//! steps amplify a last-bit difference by about ten times an iteration, so a
//! loop that adds in order follows numpy for a dozen iterations and then
//! leaves it. The fixtures were made with numpy 2.4.6's OpenBLAS 0.3.31 on
//! such a machine; here are those orders, written out.
//!
//! numpy calls `dgemv` with `alpha = 1` and `beta = 0`, so `y` starts at zero
//! and every `y += alpha * t` is `y + t`. The kernels handle lengths in
//! multiples of four; the rest is C code that adds in the order written (for
//! the gist's hidden size of 100 it never runs).

/// `np.dot(a, x)` for a C-order `(rows, x.len())` matrix: `cblas_dgemv` in row
/// major, which OpenBLAS runs as `dgemv_t`, a dot product per row.
pub fn matvec(a: &[f64], x: &[f64]) -> Vec<f64> {
    let cols = x.len();
    let rows = a.len() / cols;
    let main = cols - cols % 4;
    let row = |r: usize| &a[r * cols..r * cols + main];
    let mut y = vec![0.0; rows];
    let fours = rows - rows % 4;
    for (r, y) in y.iter_mut().enumerate().take(fours) {
        *y = 0.0 + dot_four_fma_lanes(row(r), &x[..main]); // add_y: y = 0 + t
    }
    let mut r = fours;
    if rows % 4 >= 2 {
        y[r] = dot_two_lanes(row(r), &x[..main]);
        y[r + 1] = dot_two_lanes(row(r + 1), &x[..main]);
        r += 2;
    }
    if rows % 2 == 1 {
        y[r] = dot_two_pairs(row(r), &x[..main]);
    }
    // The last cols % 4 terms, added to each row's sum as `y += a0*x0 + a1*x1 + …`.
    for (r, y) in y.iter_mut().enumerate() {
        let tail = (main..cols).fold(0.0, |s, j| s + a[r * cols + j] * x[j]);
        if main < cols {
            *y += tail;
        }
    }
    y
}

/// `np.dot(a.T, v)` for a C-order `(v.len(), cols)` matrix: `a.T` is in
/// Fortran order, so numpy calls `dgemv` in column major, OpenBLAS's `dgemv_n`,
/// which adds `a`'s rows into `y` four at a time.
pub fn matvec_transposed(a: &[f64], v: &[f64], cols: usize) -> Vec<f64> {
    let rows = v.len();
    let main = cols - cols % 4;
    let row = |r: usize| &a[r * cols..r * cols + main];
    let mut y = vec![0.0; cols];
    let fours = rows - rows % 4;
    for r in (0..fours).step_by(4) {
        let (a0, a1, a2, a3) = (row(r), row(r + 1), row(r + 2), row(r + 3));
        let (x0, x1, x2, x3) = (v[r], v[r + 1], v[r + 2], v[r + 3]);
        for (i, y) in y[..main].iter_mut().enumerate() {
            let even = a2[i].mul_add(x2, a0[i] * x0);
            let odd = a3[i].mul_add(x3, a1[i] * x1);
            *y += even + odd;
        }
    }
    let mut r = fours;
    if rows % 4 >= 2 {
        let (a0, a1, x0, x1) = (row(r), row(r + 1), v[r], v[r + 1]);
        for (i, y) in y[..main].iter_mut().enumerate() {
            *y += a0[i] * x0 + a1[i] * x1;
        }
        r += 2;
    }
    if rows % 2 == 1 {
        let (a0, x0) = (row(r), v[r]);
        for (i, y) in y[..main].iter_mut().enumerate() {
            *y += a0[i] * x0;
        }
    }
    // The last cols % 4 outputs: one running sum each, over every row.
    for (i, y) in y.iter_mut().enumerate().skip(main) {
        *y += (0..rows).fold(0.0, |s, r| s + a[r * cols + i] * v[r]);
    }
    y
}

/// `dgemv_t`'s AVX2 kernel: lane `l` sums terms `4k + l` with fused
/// multiply-adds, then the lanes are added as `(l0 + l2) + (l1 + l3)`.
fn dot_four_fma_lanes(a: &[f64], x: &[f64]) -> f64 {
    let mut lanes = [0.0; 4];
    for (a, x) in a.chunks_exact(4).zip(x.chunks_exact(4)) {
        for l in 0..4 {
            lanes[l] = a[l].mul_add(x[l], lanes[l]);
        }
    }
    (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
}

/// `dgemv_t`'s SSE2 kernel for a pair of leftover rows: two lanes (even and
/// odd terms), each multiplied then added, then `l0 + l1`.
fn dot_two_lanes(a: &[f64], x: &[f64]) -> f64 {
    let mut lanes = [0.0; 2];
    for (a, x) in a.chunks_exact(2).zip(x.chunks_exact(2)) {
        lanes[0] += a[0] * x[0];
        lanes[1] += a[1] * x[1];
    }
    lanes[0] + lanes[1]
}

/// `dgemv_t`'s SSE2 kernel for the last row: terms `4k, 4k+1` in one pair of
/// lanes and `4k+2, 4k+3` in another, then `(p0 + q0) + (p1 + q1)`.
fn dot_two_pairs(a: &[f64], x: &[f64]) -> f64 {
    let (mut p, mut q) = ([0.0; 2], [0.0; 2]);
    for (a, x) in a.chunks_exact(4).zip(x.chunks_exact(4)) {
        p[0] += a[0] * x[0];
        p[1] += a[1] * x[1];
        q[0] += a[2] * x[2];
        q[1] += a[3] * x[3];
    }
    (p[0] + q[0]) + (p[1] + q[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both products against a float64 sum in order, on shapes with every
    /// kind of leftover (rows and columns not multiples of four).
    #[test]
    fn products_are_matrix_vector_products() {
        for (rows, cols) in [(4, 4), (7, 9), (65, 100), (100, 65), (3, 2), (6, 11)] {
            let a: Vec<f64> = (0..rows * cols)
                .map(|k| ((k * 37 % 101) as f64 - 50.0) / 16.0)
                .collect();
            let x: Vec<f64> = (0..cols).map(|k| (k as f64 - 3.0) / 4.0).collect();
            let v: Vec<f64> = (0..rows).map(|k| (k as f64 + 1.0) / 8.0).collect();
            // Small multiples of 1/64: every sum is exact in any order.
            let expected: Vec<f64> = (0..rows)
                .map(|r| (0..cols).map(|c| a[r * cols + c] * x[c]).sum())
                .collect();
            assert_eq!(matvec(&a, &x), expected, "{rows}x{cols}");
            let expected_t: Vec<f64> = (0..cols)
                .map(|c| (0..rows).map(|r| a[r * cols + c] * v[r]).sum())
                .collect();
            assert_eq!(
                matvec_transposed(&a, &v, cols),
                expected_t,
                "{rows}x{cols}ᵀ"
            );
        }
    }
}
