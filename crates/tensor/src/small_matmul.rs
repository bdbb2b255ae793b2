//! Products too small for gemm's packing and dispatch to pay for themselves,
//! such as a batch of attention's `(T, T) @ (T, hs)` at T = 8: the same sums
//! as gemm's, in the same order and rounding, so the bits do not depend on
//! which of the two ran.
//!
//! For the shapes sent here (see [`eligible`]), gemm 0.19 computes every
//! element with its vertical microkernel: the K terms in order, each added
//! with one multiply-add into an accumulator that starts at `+0`
//! (`gemm-common`'s `gemm_basic_generic`; `kc = K` when M, N ≤ 64 and
//! K ≤ 512). Whether that multiply-add is fused depends on the machine, as
//! gemm's own dispatch (`init_gemm_fn`) decides: fused with FMA (AVX2 or
//! AVX-512) and on NEON, a product then a sum on its scalar fallback.
//! [`Kernel::for_this_machine`] makes the same choice; `tests/small_matmul.rs`
//! forces every kernel and compares it with gemm and with the others.

use crate::Tensor;
use ndarray::{ArrayView2, Ix2};

/// The widest output row this path takes.
const MAX_N: usize = 64;
/// Output rows computed together, so that their sums run side by side.
const ROWS: usize = 4;

/// Which arithmetic a small product uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Fused multiply-adds, vectorised with AVX2 and FMA (x86-64 only).
    Avx2Fma,
    /// Fused multiply-adds (`f32::mul_add`) in portable code.
    PortableFused,
    /// A rounded product, then a rounded sum: gemm's scalar fallback.
    PortableUnfused,
}

impl Kernel {
    /// The kernel whose bits match gemm's on this machine.
    pub fn for_this_machine() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Kernel::Avx2Fma;
            }
            if std::arch::is_x86_feature_detected!("fma") {
                return Kernel::PortableFused;
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if std::arch::is_aarch64_feature_detected!("neon") {
                return Kernel::PortableFused;
            }
        }
        Kernel::PortableUnfused
    }

    /// Whether this machine can run the kernel.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2Fma => false,
            Kernel::PortableFused | Kernel::PortableUnfused => true,
        }
    }
}

/// Whether `a @ b` goes this way: both sides of the output at most 64 and more
/// than 1, K from 3 to 512, `b`'s rows contiguous (so never gemm's dot-product
/// kernel, which takes a column-major `b`), both operands stepping forward
/// along K (gemm reverses K for a negative stride), and not a shape gemm sends
/// to its other kernels (K ≤ 2 to `gevv`, a side of 1 to `gemv`). Only
/// products of at most `max_work` multiply-adds are taken: above that, gemm's
/// packed kernels are faster.
pub fn eligible(a: &ArrayView2<f32>, b: &ArrayView2<f32>, max_work: usize) -> bool {
    let ((m, k), n) = (a.dim(), b.dim().1);
    (2..=MAX_N).contains(&m)
        && (2..=MAX_N).contains(&n)
        && (3..=512).contains(&k)
        && m * k * n <= max_work
        && b.strides()[1] == 1
        && a.strides()[1] > 0
        && b.strides()[0] > 0
}

/// `a @ b` for matrices through `kernel`, for the tests that force each path;
/// `None` if the product is not [`eligible`] (with no limit on its size) or
/// the machine lacks the kernel.
pub fn matmul_2d(a: &Tensor, b: &Tensor, kernel: Kernel) -> Option<Tensor> {
    let a2 = a.data.view().into_dimensionality::<Ix2>().ok()?;
    let b2 = b.data.view().into_dimensionality::<Ix2>().ok()?;
    if a2.dim().1 != b2.dim().0 || !eligible(&a2, &b2, usize::MAX) || !kernel.available() {
        return None;
    }
    let (m, n) = (a2.dim().0, b2.dim().1);
    let mut c = vec![0.0; m * n];
    // SAFETY: eligible, available, and `c` holds M rows of N.
    unsafe { product(kernel, &a2, &b2, c.as_mut_ptr(), n) };
    Some(Tensor::from_vec(c, &[m, n]))
}

/// `a @ b` for matrices through gemm's own kernels, never this path: what
/// the tests compare it with.
pub fn gemm_2d(a: &Tensor, b: &Tensor) -> Tensor {
    let a2 = a
        .data
        .view()
        .into_dimensionality::<Ix2>()
        .expect("a matrix");
    let b2 = b
        .data
        .view()
        .into_dimensionality::<Ix2>()
        .expect("a matrix");
    assert_eq!(a2.dim().1, b2.dim().0, "gemm_2d: inner sizes");
    let (m, n) = (a2.dim().0, b2.dim().1);
    let mut c = vec![0.0; m * n];
    // SAFETY: `c` holds M rows of N.
    unsafe { crate::matmul::gemm_only(&a2, &b2, c.as_mut_ptr(), n) };
    Tensor::from_vec(c, &[m, n])
}

/// `c = a @ b`, with `c` row-major with rows `row_stride` apart.
///
/// # Safety
/// `a @ b` must be [`eligible`], `kernel` [`available`](Kernel::available),
/// and `c` valid for writes at `i·row_stride + j` for every row `i` of `a` and
/// column `j` of `b`.
pub(crate) unsafe fn product(
    kernel: Kernel,
    a: &ArrayView2<f32>,
    b: &ArrayView2<f32>,
    c: *mut f32,
    row_stride: usize,
) {
    let operands = Operands {
        a: a.as_ptr(),
        a_strides: [a.strides()[0], a.strides()[1]],
        b: b.as_ptr(),
        b_row_stride: b.strides()[0],
        m: a.dim().0,
        k: a.dim().1,
        n: b.dim().1,
        c,
        row_stride,
    };
    // SAFETY: the caller vouches for the operands and the kernel.
    unsafe {
        match kernel {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => rows_avx2_fma(&operands),
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2Fma => unreachable!("AVX2 is x86-64's"),
            Kernel::PortableFused => rows::<true>(&operands),
            Kernel::PortableUnfused => rows::<false>(&operands),
        }
    }
}

/// A small product's pointers, strides and sizes.
struct Operands {
    a: *const f32,
    a_strides: [isize; 2],
    b: *const f32,
    b_row_stride: isize,
    m: usize,
    k: usize,
    n: usize,
    c: *mut f32,
    row_stride: usize,
}

/// [`rows`] with AVX2 and FMA: eight output rows by eight columns at a time in
/// eight registers, so that eight sums run side by side; the columns past the
/// last multiple of eight one at a time. Each element is the same chain of
/// fused multiply-adds as in [`rows`].
///
/// # Safety
/// As [`product`], on a machine with AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2_fma(x: &Operands) {
    use std::arch::x86_64::{_mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps};
    use std::arch::x86_64::{_mm256_setzero_ps, _mm256_storeu_ps};
    const BLOCK: usize = 8;
    let (n, [a_rs, a_cs]) = (x.n, x.a_strides);
    let mut first = 0;
    while first < x.m {
        // Past the last row, the block repeats it and does not write it.
        // SAFETY: the start of row min(first + r, M - 1) of a, an element of the
        // view, so the offset stays inside a's allocation.
        let a_rows: [*const f32; BLOCK] = std::array::from_fn(|r| unsafe {
            x.a.offset((first + r).min(x.m - 1) as isize * a_rs)
        });
        let written = BLOCK.min(x.m - first);
        let mut j = 0;
        while j + 8 <= n {
            let mut acc = [_mm256_setzero_ps(); BLOCK];
            for p in 0..x.k {
                // SAFETY: eight elements of row p of b from column j, and
                // element p of each row of a, are inside the views.
                unsafe {
                    let b_pj = _mm256_loadu_ps(x.b.offset(p as isize * x.b_row_stride).add(j));
                    for (sum, a_row) in acc.iter_mut().zip(a_rows) {
                        let a_ip = _mm256_set1_ps(*a_row.offset(p as isize * a_cs));
                        *sum = _mm256_fmadd_ps(a_ip, b_pj, *sum);
                    }
                }
            }
            for (r, sum) in acc.iter().enumerate().take(written) {
                // SAFETY: row first + r of c, columns j..j + 8.
                unsafe { _mm256_storeu_ps(x.c.add((first + r) * x.row_stride + j), *sum) };
            }
            j += 8;
        }
        for j in j..n {
            for (r, a_row) in a_rows.iter().enumerate().take(written) {
                let mut sum = 0.0f32;
                for p in 0..x.k {
                    // SAFETY: as above, one column.
                    unsafe {
                        let b_pj = *x.b.offset(p as isize * x.b_row_stride).add(j);
                        sum = (*a_row.offset(p as isize * a_cs)).mul_add(b_pj, sum);
                    }
                }
                // SAFETY: element (first + r, j) of c.
                unsafe { *x.c.add((first + r) * x.row_stride + j) = sum };
            }
        }
        first += BLOCK;
    }
}

/// `ROWS` output rows at a time: for each k in order, every row's accumulators
/// take `a[i, k] · b[k, :]`. Each element is one sum in gemm's order.
///
/// # Safety
/// As [`product`].
#[inline(always)]
unsafe fn rows<const FUSED: bool>(x: &Operands) {
    let (n, [a_rs, a_cs]) = (x.n, x.a_strides);
    let mut first = 0;
    while first < x.m {
        let mut acc = [[0.0f32; MAX_N]; ROWS];
        // Past the last row, the block repeats it and does not write it.
        let row = |r: usize| (first + r).min(x.m - 1) as isize;
        for p in 0..x.k {
            // SAFETY: p < K and b's rows are contiguous (eligible), so row p of b
            // is N elements of the view, which nothing writes.
            let b_row =
                unsafe { std::slice::from_raw_parts(x.b.offset(p as isize * x.b_row_stride), n) };
            for (r, sums) in acc.iter_mut().enumerate() {
                // SAFETY: row(r) < M and p < K, so this is element (row(r), p) of a.
                let a_ip = unsafe { *x.a.offset(row(r) * a_rs + p as isize * a_cs) };
                for (sum, &b_pj) in sums[..n].iter_mut().zip(b_row) {
                    *sum = if FUSED {
                        a_ip.mul_add(b_pj, *sum)
                    } else {
                        *sum + a_ip * b_pj
                    };
                }
            }
        }
        for (r, sums) in acc.iter().enumerate().take(x.m - first) {
            // SAFETY: row first + r of c, inside the caller's buffer.
            let c_row =
                unsafe { std::slice::from_raw_parts_mut(x.c.add((first + r) * x.row_stride), n) };
            c_row.copy_from_slice(&sums[..n]);
        }
        first += ROWS;
    }
}
