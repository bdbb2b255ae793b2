//! bfloat16 matrix products: operands rounded to bfloat16 (round to nearest, ties to even),
//! products accumulated in float32, the result float32.
//!
//! This is what build-nanogpt's `train_gpt2.py` gets on a CPU from
//! `torch.autocast(device_type="cpu", dtype=torch.bfloat16)`, except that PyTorch's products
//! then round their float32 results to bfloat16 too; these keep them in float32.
//!
//! A bfloat16 number is the top 16 bits of a float32, so the product of two is exact in float32
//! (8 × 8 significand bits) and only the additions round. The kernel for CPUs with
//! `avx512_bf16` uses `vdpbf16ps`, which for each float32 lane adds the product of a pair's odd
//! elements, then of its even ones, each add rounded, with denormal inputs read as zero and
//! denormal results flushed to zero (measured on this machine's EPYC: every lane of 320,000
//! equals that order, `tests/bf16.rs`). The portable path adds in the same order with the same
//! flushes, so it gives the kernel's values bit for bit and every test runs on any machine.
//!
//! Layout: A is packed as pairs along k (one 32-bit word per pair, broadcast to every lane), B
//! as `[k/2][n][2]` (sixteen columns' pairs per 512-bit register); k is padded with a zero to
//! even. The kernel keeps an 8 × 32 block of C in sixteen registers (12 × 32 in 24 ran at 0.7 of
//! its speed here).

use crate::pool::{for_each_piece, SharedMut};
use ndarray::ArrayView2;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rows of C per kernel block.
const MR: usize = 8;
/// Columns of C per kernel block: two registers of sixteen.
const NR: usize = 32;
/// Rows of an operand each thread packs at a time.
const PACK_ROWS: usize = 64;

/// `x` rounded to bfloat16 (to nearest, ties to even), as its 16 bits; NaN stays NaN. A value
/// below bfloat16's smallest normal comes back as zero of its sign, as `vdpbf16ps` reads it.
pub fn to_bf16(x: f32) -> u16 {
    if x.is_nan() {
        return ((x.to_bits() >> 16) as u16) | 0x0040; // quiet
    }
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1));
    let h = (rounded >> 16) as u16;
    if h & 0x7f80 == 0 {
        h & 0x8000 // a denormal: zero, as the kernel reads it
    } else {
        h
    }
}

/// The float32 whose top 16 bits are `h`.
pub fn from_bf16(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `x` rounded to bfloat16 and back.
pub fn round_bf16(x: f32) -> f32 {
    from_bf16(to_bf16(x))
}

/// Zero of `x`'s sign where `x` is denormal, as `vdpbf16ps` flushes its results.
fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// Which path [`matmul_bf16`] takes on this machine: "avx512_bf16" or "portable".
pub fn kernel() -> &'static str {
    if has_avx512_bf16() {
        "avx512_bf16"
    } else {
        "portable"
    }
}

fn has_avx512_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A (`m × k`) packed as bfloat16 pairs along k: `[m][k/2]` words, the even element in the low
/// half.
fn pack_a(a: impl Fn(usize, usize) -> f32 + Sync, m: usize, k: usize) -> Vec<u32> {
    let kp = k.div_ceil(2);
    let mut packed = vec![0u32; m * kp];
    let out = SharedMut(packed.as_mut_ptr());
    let word = |i: usize, p: usize| {
        let even = to_bf16(a(i, 2 * p)) as u32;
        let odd = if 2 * p + 1 < k {
            to_bf16(a(i, 2 * p + 1)) as u32
        } else {
            0
        };
        // SAFETY: each piece writes only its own rows of `packed`, of length m·kp.
        unsafe { *out.ptr().add(i * kp + p) = even | odd << 16 };
    };
    for_each_piece(m.div_ceil(PACK_ROWS), |piece| {
        let rows = piece * PACK_ROWS..m.min((piece + 1) * PACK_ROWS);
        rows.for_each(|i| (0..kp).for_each(|p| word(i, p)));
    });
    packed
}

/// B (`k × n`) packed as `[k/2][n_padded][2]` bfloat16, n padded to a multiple of [`NR`].
fn pack_b(b: impl Fn(usize, usize) -> f32 + Sync, k: usize, n: usize) -> (Vec<u16>, usize) {
    let (kp, np) = (k.div_ceil(2), n.div_ceil(NR) * NR);
    let mut packed = vec![0u16; kp * np * 2];
    let out = SharedMut(packed.as_mut_ptr());
    let pair = |p: usize, j: usize| {
        // SAFETY: each piece writes only its own pair rows of `packed`.
        unsafe {
            *out.ptr().add((p * np + j) * 2) = to_bf16(b(2 * p, j));
            if 2 * p + 1 < k {
                *out.ptr().add((p * np + j) * 2 + 1) = to_bf16(b(2 * p + 1, j));
            }
        }
    };
    for_each_piece(kp.div_ceil(PACK_ROWS), |piece| {
        let pairs = piece * PACK_ROWS..kp.min((piece + 1) * PACK_ROWS);
        pairs.for_each(|p| (0..n).for_each(|j| pair(p, j)));
    });
    (packed, np)
}

// ANCHOR: matmul_bf16_portable
/// C = A · B with bfloat16 operands, on any CPU: for each output, over k in pairs, the odd
/// element's product added, then the even one's, each sum rounded to float32 and flushed if
/// denormal, as `vdpbf16ps` adds.
pub fn matmul_bf16_portable(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (m * k, k * n), "matmul_bf16: shapes");
    let (pa, (pb, np)) = (
        pack_a(|i, p| a[i * k + p], m, k),
        pack_b(|p, j| b[p * n + j], k, n),
    );
    let kp = k.div_ceil(2);
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for p in 0..kp {
                let pair = pa[i * kp + p];
                let (a_even, a_odd) = (from_bf16(pair as u16), from_bf16((pair >> 16) as u16));
                let b_even = from_bf16(pb[(p * np + j) * 2]);
                let b_odd = from_bf16(pb[(p * np + j) * 2 + 1]);
                acc = flush(acc + a_odd * b_odd);
                acc = flush(acc + a_even * b_even);
            }
            c[i * n + j] = acc;
        }
    }
    c
}
// ANCHOR_END: matmul_bf16_portable

/// C = A · B (row-major, `m × k` by `k × n`) with operands rounded to bfloat16 and float32
/// sums: the `avx512_bf16` kernel where the CPU has it, the portable path (the same values)
/// elsewhere. Blocks of rows are spread over the worker threads; the values do not depend on
/// how many.
pub fn matmul_bf16(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (m * k, k * n), "matmul_bf16: shapes");
    product(|i, p| a[i * k + p], |p, j| b[p * n + j], (m, k, n))
}

/// [`matmul_bf16`] of strided views (a transposed operand is read in place), for
/// `Tensor::matmul` under [`Precision::Bfloat16`].
pub(crate) fn matmul_bf16_views(a: &ArrayView2<f32>, b: &ArrayView2<f32>) -> Vec<f32> {
    let ((m, k), n) = (a.dim(), b.dim().1);
    // SAFETY: the packers ask only for i < m, p < k, j < n, inside both views.
    product(
        |i, p| unsafe { *a.uget((i, p)) },
        |p, j| unsafe { *b.uget((p, j)) },
        (m, k, n),
    )
}

fn product(
    a: impl Fn(usize, usize) -> f32 + Sync,
    b: impl Fn(usize, usize) -> f32 + Sync,
    (m, k, n): (usize, usize, usize),
) -> Vec<f32> {
    if !has_avx512_bf16() {
        let (dense_a, dense_b) = dense(&a, m, k, &b, n);
        return matmul_bf16_portable(&dense_a, &dense_b, m, k, n);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let (pa, (pb, np)) = (pack_a(a, m, k), pack_b(b, k, n));
        let kp = k.div_ceil(2);
        let mut c = vec![0f32; m * n];
        let out = SharedMut(c.as_mut_ptr());
        let row_blocks = m.div_ceil(MR);
        let col_blocks = np / NR;
        // Column-block-major: consecutive pieces share B's panel, which stays in cache.
        for_each_piece(row_blocks * col_blocks, |piece| {
            let (rb, cb) = (piece % row_blocks, piece / row_blocks);
            let rows = MR.min(m - rb * MR);
            // SAFETY: the CPU has avx512f and avx512bf16 (checked above); each piece writes
            // only its own rows rb·MR.. and columns cb·NR.. of C, within m × n.
            unsafe {
                avx512::block(
                    &pa[rb * MR * kp..],
                    kp,
                    rows,
                    &pb[cb * NR * 2..],
                    np,
                    out.ptr().add(rb * MR * n + cb * NR),
                    n,
                    NR.min(n - cb * NR),
                )
            };
        });
        c
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("no avx512_bf16 outside x86_64")
}

/// The operands as row-major vectors, for the portable path.
fn dense(
    a: &impl Fn(usize, usize) -> f32,
    m: usize,
    k: usize,
    b: &impl Fn(usize, usize) -> f32,
    n: usize,
) -> (Vec<f32>, Vec<f32>) {
    let dense_a = (0..m * k).map(|x| a(x / k, x % k)).collect();
    let dense_b = (0..k * n).map(|x| b(x / n, x % n)).collect();
    (dense_a, dense_b)
}

/// The arithmetic of matrix products: float32 (the lectures' default), or bfloat16 operands
/// with float32 sums, as under `torch.autocast("cpu", dtype=torch.bfloat16)` but with float32
/// results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// gemm's sgemm, every lecture's arithmetic.
    Float32,
    /// [`matmul_bf16`].
    Bfloat16,
}

static BFLOAT16: AtomicBool = AtomicBool::new(false);

/// Sets the precision of every `Tensor::matmul` in this process from now on (linear layers,
/// batched products, attention's two products, and their gradients).
///
/// Measured on this machine (2 threads, one run each) it does not yet pay: every product packs
/// its operands anew and small products lose gemm's fast path. GPT-2 124M steps took 1.12× and
/// 0.99× their float32 time (B4 T64, B1 T1024), lecture 7's `full` step 1.49×.
pub fn set_precision(precision: Precision) {
    BFLOAT16.store(precision == Precision::Bfloat16, Ordering::SeqCst);
}

/// The precision `Tensor::matmul` uses now.
pub fn precision() -> Precision {
    if BFLOAT16.load(Ordering::Relaxed) {
        Precision::Bfloat16
    } else {
        Precision::Float32
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    /// nanoGPT's `--dtype` names: float32 or bfloat16 (float16 is refused: a CPU has no
    /// float16 products worth having).
    fn from_str(s: &str) -> Result<Precision, String> {
        match s {
            "float32" => Ok(Precision::Float32),
            "bfloat16" => Ok(Precision::Bfloat16),
            other => Err(format!("--dtype {other}: float32 or bfloat16")),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// One block of C: `rows ≤ MR` rows of packed A (`kp` words each) times the packed B
    /// columns starting at `b` (row stride `np` pairs), into `c` (row stride `ldc`), of which
    /// the first `cols ≤ NR` columns are written.
    ///
    /// # Safety
    /// The CPU must have avx512f and avx512bf16; `a` must hold `rows × kp` words, `b` the
    /// `kp` rows of [`NR`] pairs, `c` `rows` rows of `cols` floats.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn block(
        a: &[u32],
        kp: usize,
        rows: usize,
        b: &[u16],
        np: usize,
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for p in 0..kp {
            let row = b.as_ptr().add(p * np * 2);
            let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(row as *const __m512i));
            let b1: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(row.add(32) as *const __m512i));
            for (r, acc_r) in acc.iter_mut().enumerate().take(rows) {
                let pair = _mm512_set1_epi32(a[r * kp + p] as i32);
                let pair: __m512bh = std::mem::transmute(pair);
                acc_r[0] = _mm512_dpbf16_ps(acc_r[0], pair, b0);
                acc_r[1] = _mm512_dpbf16_ps(acc_r[1], pair, b1);
            }
        }
        for (r, acc_r) in acc.iter().enumerate().take(rows) {
            let out = c.add(r * ldc);
            if cols == NR {
                _mm512_storeu_ps(out, acc_r[0]);
                _mm512_storeu_ps(out.add(16), acc_r[1]);
            } else {
                let mut tmp = [0f32; NR];
                _mm512_storeu_ps(tmp.as_mut_ptr(), acc_r[0]);
                _mm512_storeu_ps(tmp.as_mut_ptr().add(16), acc_r[1]);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), out, cols);
            }
        }
    }
}
