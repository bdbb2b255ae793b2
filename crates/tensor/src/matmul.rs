//! Matrix products with `torch.matmul`'s rules: 2-D products, batched products
//! whose batch axes broadcast, and 1-D operands promoted to a row (left) or a
//! column (right) and removed again afterwards.
//!
//! The arithmetic is the `gemm` crate's sgemm, which takes any row and column
//! strides, so transposed operands are never copied. On the course's machine (an
//! AVX-512 EPYC) its kernels run at about 250 GFLOP/s per core, where
//! `matrixmultiply` (ndarray's `dot`) and PyTorch 2.15's CPU build both reach
//! about 110; `benches/matmul.rs` and `benches/matmul_torch.py` measure this.
//!
//! Threads: a product of at least [`SPLIT_FROM`] multiply-adds is cut into one
//! block of columns (or rows) per thread, each block a gemm call of its own on
//! the workers of [`crate::pool`]; a batch of smaller products is divided
//! across threads instead. gemm's own threading wakes rayon's sleeping threads
//! for every product, which cost more than it saved on the lectures' small
//! products. `ZTH_THREADS=1` keeps everything on the calling thread.
//!
//! Tiny products (attention's at T = 8) skip gemm's packing and dispatch:
//! [`crate::small_matmul`] computes them with gemm's own sums, bit for bit.

use crate::pool::{for_each_piece, SharedMut};
use crate::{broadcast_shapes, small_matmul, Tensor};
use gemm::Parallelism;
use ndarray::{s, ArrayView2, ArrayView3, ArrayViewD, Axis, Ix2, IxDyn};
use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// A product of this many multiply-adds (about 7 µs on one core) or more is
/// split between threads; a batch of smaller ones is divided instead.
const SPLIT_FROM: usize = 1 << 20;
/// A product of at most this many multiply-adds (16×32×16) goes to
/// [`small_matmul`], where it takes a third to three quarters of gemm's time
/// (8×16×8 to 16×16×16, one thread); above it, gemm's packed AVX-512 kernels
/// win.
const SMALL_UP_TO: usize = 1 << 13;
/// A batch of small products with fewer multiply-adds than this stays on one thread.
const SPLIT_BATCH_FROM: usize = 1 << 18;
/// Blocks of a split product start at multiples of this many rows or columns,
/// whole register tiles of gemm's kernels.
const BLOCK_ALIGN: usize = 64;

/// The thread count, fixed on first use.
static THREADS: OnceLock<usize> = OnceLock::new();

/// How many threads matrix products may use: `ZTH_THREADS` if it is set,
/// otherwise the number of available cores (or what [`set_max_threads`]
/// set). A `ZTH_THREADS` that is not a positive integer ends the program
/// with an error naming it: a run on a thread count nobody asked for would
/// be a silent wrong answer to the question the variable asks. Binaries call
/// [`check_threads_env`] first, so the error comes before any work.
pub fn max_threads() -> usize {
    *THREADS.get_or_init(|| match threads_from_env() {
        Ok(Some(n)) => n,
        Ok(None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    })
}

/// `ZTH_THREADS` read: `None` when unset, an error naming it when it is not
/// a positive integer.
pub fn threads_from_env() -> Result<Option<usize>, String> {
    match std::env::var_os("ZTH_THREADS") {
        None => Ok(None),
        Some(os) => match os.to_str().map(|t| t.trim().parse::<usize>()) {
            Some(Ok(n)) if n > 0 => Ok(Some(n)),
            _ => Err(format!(
                "ZTH_THREADS={:?}: it takes the number of threads, a whole number of at \
                 least 1 (unset it to use every core)",
                os.to_string_lossy()
            )),
        },
    }
}

/// Checks `ZTH_THREADS` without fixing the thread count: the first thing a
/// binary does, so that a bad value is refused before any work.
pub fn check_threads_env() -> Result<(), String> {
    threads_from_env().map(|_| ())
}

/// Fixes the thread count before the first product, as a program does that
/// shares the machine with other processes; `ZTH_THREADS` still wins. Returns
/// the count in force, which is the earlier one if products already ran.
pub fn set_max_threads(threads: usize) -> usize {
    match std::env::var_os("ZTH_THREADS") {
        Some(_) => max_threads(),
        None => *THREADS.get_or_init(|| threads.max(1)),
    }
}

impl Tensor {
    /// `self @ other` (`torch.matmul`). Shapes: `(M,K)@(K,N)`, `(…,M,K)@(K,N)`,
    /// `(…,M,K)@(…,K,N)` with broadcast batch axes, and 1-D on either side.
    /// Panics naming both shapes if the inner sizes or batch axes disagree.
    pub fn matmul(&self, other: &Tensor) -> Tensor {
        assert!(
            self.ndim() >= 1 && other.ndim() >= 1,
            "matmul: cannot multiply {:?} by {:?}: 0-d operand",
            self.shape(),
            other.shape()
        );
        let left_vector = self.ndim() == 1;
        let right_vector = other.ndim() == 1;
        let a = if left_vector {
            self.unsqueeze(0)
        } else {
            self.clone()
        };
        let b = if right_vector {
            other.unsqueeze(-1)
        } else {
            other.clone()
        };
        let (ra, rb) = (a.ndim(), b.ndim());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        assert!(
            k == k2,
            "matmul: cannot multiply {:?} by {:?}: inner sizes {k} and {k2} differ",
            self.shape(),
            other.shape()
        );
        let batch =
            broadcast_shapes(&a.shape()[..ra - 2], &b.shape()[..rb - 2]).unwrap_or_else(|_| {
                panic!(
                    "matmul: cannot multiply {:?} by {:?}: batch axes do not broadcast",
                    self.shape(),
                    other.shape()
                )
            });
        let count: usize = batch.iter().product();

        let mut out_shape = batch.clone();
        out_shape.extend([m, n]);
        let len = count * m * n;
        // gemm overwrites every element, so the output is not zeroed first.
        let mut values: Vec<f32> = Vec::with_capacity(len);
        let c = &mut values.spare_capacity_mut()[..len];
        if c.is_empty() || k == 0 {
            // Nothing to compute: an empty result, or sums of zero terms.
            c.fill(MaybeUninit::new(0.0));
        } else if rb == 2 {
            // A stack of matrices times one matrix is one tall product: (B·M, K) @ (K, N).
            let rows = if ra == 2 {
                a
            } else {
                a.reshape(&[count * m, k])
            };
            let a2 = rows.data.view().into_dimensionality::<Ix2>().expect("2-D");
            let b2 = b.data.view().into_dimensionality::<Ix2>().expect("2-D");
            product(&a2, &b2, c, max_threads());
        } else {
            let mut a_shape = batch.clone();
            a_shape.extend([m, k]);
            let mut b_shape = batch.clone();
            b_shape.extend([k, n]);
            // Broadcast views repeat an operand along batch axes without copying it.
            let av = a.data.broadcast(IxDyn(&a_shape)).expect("checked batch");
            let bv = b.data.broadcast(IxDyn(&b_shape)).expect("checked batch");
            let (a3, b3) = (stack_of_matrices(&av, count), stack_of_matrices(&bv, count));
            let threads = max_threads().min(count);
            // A bfloat16 product's values do not depend on how it is split, and splitting one
            // costs each piece a packing of its rows: a batch of four or more per thread is
            // divided even when each product is large (attention's, B × nh of them).
            let bf16 = crate::bf16::precision() == crate::bf16::Precision::Bfloat16;
            let small = m * k * n < SPLIT_FROM || bf16 && count >= 4 * threads;
            if threads > 1 && small && count * m * k * n > SPLIT_BATCH_FROM {
                // Products too small to split: the batch is divided instead.
                let per_piece = count.div_ceil(threads);
                let out = SharedMut(c.as_mut_ptr());
                for_each_piece(threads, |piece| {
                    for i in piece * per_piece..count.min((piece + 1) * per_piece) {
                        // SAFETY: matrix i of the output, written by this piece only.
                        let ci = unsafe {
                            std::slice::from_raw_parts_mut(out.ptr().add(i * m * n), m * n)
                        };
                        product(&a3.matrix(i), &b3.matrix(i), ci, 1);
                    }
                });
            } else {
                for (i, ci) in c.chunks_mut(m * n).enumerate() {
                    product(&a3.matrix(i), &b3.matrix(i), ci, max_threads());
                }
            }
        }

        // SAFETY: every branch above wrote all `len` elements.
        unsafe { values.set_len(len) };
        let mut result = Tensor::from_vec(values, &out_shape);
        let last = result.ndim() as isize - 1;
        if right_vector {
            result = result.squeeze(last);
        }
        if left_vector {
            result = result.squeeze(last - 1);
        }
        result
    }
}

/// `c = a @ b`, with `c` a row-major `(M, N)` buffer that this writes whole
/// (it need not hold values before). A product of at least
/// [`SPLIT_FROM`] multiply-adds is cut into one block of columns (or of rows,
/// when it is tall) per thread.
fn product(a: &ArrayView2<f32>, b: &ArrayView2<f32>, c: &mut [MaybeUninit<f32>], threads: usize) {
    let ((m, k), (k2, n)) = (a.dim(), b.dim());
    assert!(
        k == k2 && c.len() == m * n,
        "product: {:?} @ {:?} into {}",
        a.dim(),
        b.dim(),
        c.len()
    );
    if crate::bf16::precision() == crate::bf16::Precision::Bfloat16 {
        // SAFETY: `c` holds exactly M·N elements, which this writes whole.
        unsafe { crate::bf16::matmul_bf16_views(a, b, c.as_mut_ptr().cast()) };
        return;
    }
    let pieces = if threads > 1 && m * k * n >= SPLIT_FROM {
        threads
    } else {
        1
    };
    let split_columns = n >= m;
    let long_side = if split_columns { n } else { m };
    let block = long_side.div_ceil(pieces).next_multiple_of(BLOCK_ALIGN);
    let (short_side, last_block) = (if split_columns { m } else { n }, long_side % block);
    // gemm sums K in blocks of a size that depends on the shape only through
    // "both sides at most 64" (and sends tiny outputs to other kernels), so a
    // block that keeps a side over 64 gives the bits of the whole product.
    let same_sums =
        short_side > 64 || short_side > 1 && block > 64 && (last_block == 0 || last_block > 64);
    if pieces == 1 || block >= long_side || !same_sums {
        // SAFETY: `c` holds exactly M·N elements, row-major.
        unsafe { gemm_into(a, b, c.as_mut_ptr().cast(), n) };
        return;
    }
    let out = SharedMut(c.as_mut_ptr().cast::<f32>());
    for_each_piece(long_side.div_ceil(block), |piece| {
        let range = piece * block..long_side.min((piece + 1) * block);
        // SAFETY: each piece writes its own columns (or rows) of `c`.
        unsafe {
            if split_columns {
                let b_part = b.slice(s![.., range.clone()]);
                gemm_into(a, &b_part, out.ptr().add(range.start), n);
            } else {
                let a_part = a.slice(s![range.clone(), ..]);
                gemm_into(&a_part, b, out.ptr().add(range.start * n), n);
            }
        }
    });
}

/// `dst = a @ b` on the calling thread, with `dst` row-major with rows `row_stride` apart.
///
/// # Safety
/// `dst` must be valid for writes at `i·row_stride + j` for every row `i` of `a`
/// and column `j` of `b`.
unsafe fn gemm_into(a: &ArrayView2<f32>, b: &ArrayView2<f32>, dst: *mut f32, row_stride: usize) {
    if small_matmul::eligible(a, b, SMALL_UP_TO) {
        // SAFETY: eligible, the kernel is this machine's, and the caller vouches for `dst`.
        unsafe { small_matmul::product(small_kernel(), a, b, dst, row_stride) };
        return;
    }
    // SAFETY: as this function's.
    unsafe { gemm_only(a, b, dst, row_stride) }
}

/// [`gemm_into`] without the small path: gemm's own kernels.
///
/// # Safety
/// As [`gemm_into`].
pub(crate) unsafe fn gemm_only(
    a: &ArrayView2<f32>,
    b: &ArrayView2<f32>,
    dst: *mut f32,
    row_stride: usize,
) {
    let ((m, k), n) = (a.dim(), b.dim().1);
    // SAFETY: the views guarantee that every element at `ptr + i·row_stride +
    // j·col_stride` inside their dimensions is readable; the caller vouches for
    // `dst`. With read_dst = false gemm overwrites `dst` (alpha, the factor of
    // the old `dst`, is unused) with 1.0 · a @ b.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            row_stride as isize,
            false,
            a.as_ptr(),
            a.strides()[1],
            a.strides()[0],
            b.as_ptr(),
            b.strides()[1],
            b.strides()[0],
            0.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// The small products' kernel for this machine, chosen once.
fn small_kernel() -> small_matmul::Kernel {
    static KERNEL: OnceLock<small_matmul::Kernel> = OnceLock::new();
    *KERNEL.get_or_init(small_matmul::Kernel::for_this_machine)
}

/// The operand of a batched product, as `count` matrices.
enum Stack<'a> {
    /// Batch axes merged into one: the usual case of a row-major operand.
    Flat(ArrayView3<'a, f32>),
    /// Broadcast or strided batch axes, indexed one axis at a time.
    Nested(ArrayViewD<'a, f32>),
}

/// Merges the batch axes of `view` into one when the layout allows it, so that
/// picking a matrix costs a multiplication instead of one step per axis.
fn stack_of_matrices<'a>(view: &ArrayViewD<'a, f32>, count: usize) -> Stack<'a> {
    let (rows, cols) = (view.shape()[view.ndim() - 2], view.shape()[view.ndim() - 1]);
    match view.clone().into_shape_with_order((count, rows, cols)) {
        Ok(flat) => Stack::Flat(flat),
        Err(_) => Stack::Nested(view.clone()),
    }
}

impl<'a> Stack<'a> {
    /// The matrix at flat batch position `index` (row-major over the batch axes).
    fn matrix(&self, mut index: usize) -> ArrayView2<'a, f32> {
        match self {
            Stack::Flat(flat) => (*flat).index_axis_move(Axis(0), index),
            Stack::Nested(view) => {
                let batch = &view.shape()[..view.ndim() - 2];
                let mut coords = vec![0; batch.len()];
                for (c, &d) in coords.iter_mut().zip(batch).rev() {
                    *c = index % d;
                    index /= d;
                }
                let mut m = view.clone();
                for c in coords {
                    m = m.index_axis_move(Axis(0), c);
                }
                m.into_dimensionality::<Ix2>()
                    .expect("2-D after the batch axes")
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// Values in [-1, 1) from a hash of the position, different per `seed`.
    fn filled(shape: &[usize], seed: u64) -> Tensor {
        let n: usize = shape.iter().product();
        let values = (0..n as u64)
            .map(|i| {
                ((i.wrapping_mul(2654435761).wrapping_add(seed * 7919) % 2001) as f32) / 1000.0
                    - 1.0
            })
            .collect();
        Tensor::from_vec(values, shape)
    }

    /// `a @ b` for 2-D tensors by the textbook triple loop in f64.
    fn naive(a: &Tensor, b: &Tensor) -> Vec<f64> {
        let (a, b) = (a.view(), b.view());
        let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
        let mut out = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| a[[i, p]] as f64 * b[[p, j]] as f64).sum();
            }
        }
        out
    }

    /// Each result within `1e-6 · sqrt(K) · Σ|a||b|` of the exact product, the
    /// f32 rounding bound used by the parity tests.
    fn assert_product(got: &[f32], want: &[f64], a: &Tensor, b: &Tensor) {
        let scale = naive(&a.abs(), &b.abs());
        let k = a.shape()[1] as f64;
        for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(&scale).enumerate() {
            let tol = 1e-6 * k.sqrt() * s.max(1.0);
            assert!((g as f64 - w).abs() <= tol, "[{i}]: got {g}, exact {w}");
        }
    }

    #[test]
    fn large_product_split_across_threads_is_exact_enough() {
        // 128·256·96 multiply-adds is above gemm's threading threshold.
        let (a, b) = (filled(&[128, 256], 1), filled(&[96, 256], 2).t());
        let got = a.matmul(&b);
        assert_eq!(got.shape(), &[128, 96]);
        assert_product(&got.to_vec(), &naive(&a, &b), &a, &b);
    }

    #[test]
    fn thread_count_does_not_change_a_single_bit() {
        // A split product runs gemm on blocks of columns (or rows) and never
        // splits the K sum, so a run with ZTH_THREADS=1 reproduces a run with 2
        // exactly. Shapes: rows split with a short last block; K over gemm's
        // 512-long sums with a side of at most 64; one whose blocks would have
        // both sides at most 64, and so other sums (it stays whole; splitting
        // it changes bits); a tall product; and a transposed right operand.
        for (m, k, n, transposed) in [
            (40, 2000, 100, false),
            (300, 500, 200, false),
            (300, 1000, 200, false),
            (40, 2000, 700, false),
            (4096, 48, 70, false),
            (768, 768, 129, true),
        ] {
            let a = filled(&[m, k], 5);
            let b = if transposed {
                filled(&[n, k], 6).transpose(0, 1)
            } else {
                filled(&[k, n], 6)
            };
            let (a2, b2) = (
                a.data.view().into_dimensionality::<Ix2>().unwrap(),
                b.data.view().into_dimensionality::<Ix2>().unwrap(),
            );
            let run = |threads| {
                let mut c = vec![MaybeUninit::new(f32::NAN); m * n];
                product(&a2, &b2, &mut c, threads);
                c.iter()
                    // SAFETY: `c` was filled with NaN above, so every element is initialized.
                    .map(|x| unsafe { x.assume_init() })
                    .collect::<Vec<f32>>()
            };
            let (one, two) = (run(1), run(2));
            assert!(
                one.iter()
                    .zip(&two)
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{m}x{k}x{n}: threads changed the bits"
            );
        }
    }

    #[test]
    fn batch_of_small_products_split_across_threads() {
        // 512 products of 8·16·8: each too small for gemm to split, so the batch is.
        let (a, b) = (filled(&[512, 8, 16], 3), filled(&[512, 16, 8], 4));
        let got = a.matmul(&b);
        assert_eq!(got.shape(), &[512, 8, 8]);
        for i in [0, 1, 255, 256, 511] {
            let (ai, bi) = (a.narrow(0, i, 1).squeeze(0), b.narrow(0, i, 1).squeeze(0));
            let gi = got.narrow(0, i, 1).to_vec();
            assert_product(&gi, &naive(&ai, &bi), &ai, &bi);
        }
    }
}
