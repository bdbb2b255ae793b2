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
//! Layout: A is packed as pairs along k (one 32-bit word per pair, broadcast to every lane) in
//! panels of eight rows, `[k/2][8]`, B as `[k/2][n][2]` (sixteen columns' pairs per 512-bit
//! register); k is padded with a zero to even. Each operand is packed from its own layout:
//! a linear layer's weight read as `W^T` is packed from its rows, not read across them. The kernel keeps an 8 × 32 block of C in sixteen registers (12 × 32 in 24 ran at 0.7 of
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
/// (Written without branches, so that the packers' loops over it vectorize.)
pub fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    let rounded = (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
    // A denormal: zero, as the kernel reads it.
    let flushed = if rounded & 0x7f80 == 0 {
        rounded & 0x8000
    } else {
        rounded
    };
    let quiet_nan = ((bits >> 16) as u16) | 0x0040;
    if x.is_nan() {
        quiet_nan
    } else {
        flushed
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
    let bits = x.to_bits();
    f32::from_bits(if bits & 0x7f80_0000 == 0 {
        bits & 0x8000_0000
    } else {
        bits
    })
}

/// Two elements as one packed word: the even one in the low half.
fn pair(even: f32, odd: f32) -> u32 {
    to_bf16(even) as u32 | (to_bf16(odd) as u32) << 16
}

/// `row` rounded to bfloat16 into `halves` (one more zero where the row is odd), in one
/// vectorized pass.
fn round_row(row: &[f32], halves: &mut [u16]) {
    for (h, &x) in halves.iter_mut().zip(row) {
        *h = to_bf16(x);
    }
    halves[row.len()..].fill(0);
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

/// A product this small (multiply-adds) runs on the calling thread: waking the workers costs
/// more than they save (attention's products, a small model's layers).
const THREAD_FROM: usize = 1 << 20;

/// The most packed words (16 MiB) a thread keeps between products.
const KEEP_PACKED_WORDS: usize = 1 << 22;

thread_local! {
    /// This thread's packing buffers for A and B, reused by the next product.
    static PACKED: std::cell::RefCell<(Vec<u32>, Vec<u32>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new()))
    };
}

/// The first `len` words of `buffer`, grown if needed (not cleared: packing writes every word
/// a block reads; the padding's are multiplied only into columns and rows no one keeps).
fn room(buffer: &mut Vec<u32>, len: usize) -> *mut u32 {
    if buffer.len() < len {
        buffer.resize(len, 0);
    }
    buffer.as_mut_ptr()
}

/// `run(0..pieces)`, on the workers when the product is large enough to pay for them.
fn pieces(count: usize, threaded: bool, run: impl Fn(usize) + Sync) {
    if threaded {
        for_each_piece(count, run);
    } else {
        (0..count).for_each(run);
    }
}

/// Where A's pair `p` of row `i` sits in the packed A: panels of [`MR`] rows, each `[k/2][MR]`
/// words, so that a kernel block reads its rows' words for one pair from one place.
fn a_index(i: usize, p: usize, kp: usize) -> usize {
    (i / MR) * MR * kp + p * MR + i % MR
}

/// A (`m × k`) packed as bfloat16 pairs along k, the even element in the low half, in panels
/// of [`MR`] rows ([`a_index`]; m padded with zero rows). Rows in memory (`stride 1` along k)
/// and columns in memory (a transposed operand, such as `dY^T` in a weight's gradient) are
/// each read in their own order; any other view element by element.
fn pack_a(a: &ArrayView2<f32>, threaded: bool, packed: &mut Vec<u32>) {
    let (m, k) = a.dim();
    let kp = k.div_ceil(2);
    let out = SharedMut(room(packed, m.div_ceil(MR) * MR * kp));
    let (rs, cs) = (a.strides()[0], a.strides()[1]);
    pieces(m.div_ceil(PACK_ROWS), threaded, |piece| {
        let rows = piece * PACK_ROWS..m.min((piece + 1) * PACK_ROWS);
        // SAFETY: each piece writes only its own rows' words (PACK_ROWS is a multiple of MR, so
        // whole panels), and reads elements (i, p) with i < m, p < k, inside the view.
        unsafe {
            let at = |i: usize, p: usize| *a.as_ptr().offset(i as isize * rs + p as isize * cs);
            if cs == 1 {
                // A panel's rows rounded in one pass each, then laid out pair by pair.
                let mut halves = vec![0u16; MR * 2 * kp];
                for first in rows.step_by(MR) {
                    let panel = first..m.min(first + MR);
                    for (r, i) in panel.clone().enumerate() {
                        let row = std::slice::from_raw_parts(a.as_ptr().offset(i as isize * rs), k);
                        round_row(row, &mut halves[r * 2 * kp..(r + 1) * 2 * kp]);
                    }
                    let words = out.ptr().add(a_index(first, 0, kp));
                    let h = halves.as_ptr();
                    for p in 0..kp {
                        for r in 0..panel.len() {
                            let at = r * 2 * kp + 2 * p; // < MR · 2kp, inside `halves`
                            *words.add(p * MR + r) =
                                *h.add(at) as u32 | (*h.add(at + 1) as u32) << 16;
                        }
                    }
                }
            } else {
                // Down the columns: two columns make one word per row.
                for p in 0..kp {
                    for i in rows.clone() {
                        let odd = if 2 * p + 1 < k { at(i, 2 * p + 1) } else { 0.0 };
                        *out.ptr().add(a_index(i, p, kp)) = pair(at(i, 2 * p), odd);
                    }
                }
            }
        }
    });
}

/// B (`k × n`) packed as `[k/2][n_padded]` words of a pair along k (the even element in the
/// low half), n padded to a multiple of [`NR`]. Row-major B (activations, `dY`) interleaves two
/// rows; column-major B (a linear layer's weight read as `W^T`) turns each weight row's pairs
/// into a column of words.
fn pack_b(b: &ArrayView2<f32>, threaded: bool, packed: &mut Vec<u32>) -> usize {
    let (k, n) = b.dim();
    let (kp, np) = (k.div_ceil(2), n.div_ceil(NR) * NR);
    let out = SharedMut(room(packed, kp * np));
    let (rs, cs) = (b.strides()[0], b.strides()[1]);
    // SAFETY (for `at`): only (p, j) with p < k, j < n are read, inside the view.
    let at = |p: usize, j: usize| unsafe { *b.as_ptr().offset(p as isize * rs + j as isize * cs) };
    if rs == 1 && cs != 1 {
        // Column-major: a panel of NR columns per piece; each column (a weight's row) is
        // rounded in one pass, then laid out pair by pair.
        pieces(np / NR, threaded, |panel| {
            let columns = panel * NR..n.min((panel + 1) * NR);
            let mut halves = vec![0u16; NR * 2 * kp];
            for (c, j) in columns.clone().enumerate() {
                // SAFETY: column j of the view: k elements in memory from (0, j).
                let column =
                    unsafe { std::slice::from_raw_parts(b.as_ptr().offset(j as isize * cs), k) };
                round_row(column, &mut halves[c * 2 * kp..(c + 1) * 2 * kp]);
            }
            let h = halves.as_ptr();
            for p in 0..kp {
                for (c, j) in columns.clone().enumerate() {
                    let at = c * 2 * kp + 2 * p; // < NR · 2kp, inside `halves`
                                                 // SAFETY: `at + 1` is inside `halves`; each piece writes only its own
                                                 // columns of `packed`.
                    unsafe {
                        *out.ptr().add(p * np + j) =
                            *h.add(at) as u32 | (*h.add(at + 1) as u32) << 16
                    };
                }
            }
        });
        return np;
    }
    pieces(kp.div_ceil(PACK_ROWS), threaded, |piece| {
        let (mut even_halves, mut odd_halves) = (vec![0u16; n], vec![0u16; n]);
        for p in piece * PACK_ROWS..kp.min((piece + 1) * PACK_ROWS) {
            // SAFETY: each piece writes only its own pair rows of `packed`.
            let words = unsafe { std::slice::from_raw_parts_mut(out.ptr().add(p * np), n) };
            if cs == 1 {
                // SAFETY: rows 2p and 2p + 1 of the view, n elements each, in memory.
                let even = unsafe {
                    std::slice::from_raw_parts(b.as_ptr().offset(2 * p as isize * rs), n)
                };
                // Each row rounded in one vectorized pass, then the two interleaved.
                round_row(even, &mut even_halves[..n]);
                if 2 * p + 1 < k {
                    let odd = unsafe {
                        std::slice::from_raw_parts(b.as_ptr().offset((2 * p + 1) as isize * rs), n)
                    };
                    round_row(odd, &mut odd_halves[..n]);
                } else {
                    odd_halves.fill(0);
                }
                for ((word, &e), &o) in words.iter_mut().zip(&even_halves).zip(&odd_halves) {
                    *word = e as u32 | (o as u32) << 16;
                }
            } else {
                for (j, word) in words.iter_mut().enumerate() {
                    let odd = if 2 * p + 1 < k { at(2 * p + 1, j) } else { 0.0 };
                    *word = pair(at(2 * p, j), odd);
                }
            }
        }
    });
    np
}

// ANCHOR: matmul_bf16_portable
/// C = A · B with bfloat16 operands, on any CPU: for each output, over k in pairs, the odd
/// element's product added, then the even one's, each sum rounded to float32 and flushed if
/// denormal, as `vdpbf16ps` adds.
pub fn matmul_bf16_portable(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let (a, b) = views(a, b, m, k, n);
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    pack_a(&a, false, &mut pa);
    let np = pack_b(&b, false, &mut pb);
    let kp = k.div_ceil(2);
    let halves = |word: u32| (from_bf16(word as u16), from_bf16((word >> 16) as u16));
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for p in 0..kp {
                let (a_even, a_odd) = halves(pa[a_index(i, p, kp)]);
                let (b_even, b_odd) = halves(pb[p * np + j]);
                acc = flush(acc + a_odd * b_odd);
                acc = flush(acc + a_even * b_even);
            }
            c[i * n + j] = acc;
        }
    }
    c
}
// ANCHOR_END: matmul_bf16_portable

/// Row-major slices as views, their lengths checked.
fn views<'a>(
    a: &'a [f32],
    b: &'a [f32],
    m: usize,
    k: usize,
    n: usize,
) -> (ArrayView2<'a, f32>, ArrayView2<'a, f32>) {
    assert_eq!((a.len(), b.len()), (m * k, k * n), "matmul_bf16: shapes");
    (
        ArrayView2::from_shape((m, k), a).expect("m × k"),
        ArrayView2::from_shape((k, n), b).expect("k × n"),
    )
}

/// C = A · B (row-major, `m × k` by `k × n`) with operands rounded to bfloat16 and float32
/// sums: the `avx512_bf16` kernel where the CPU has it, elsewhere the portable path's
/// arithmetic in blocks (the same values). Blocks of rows are spread over the worker threads;
/// the values do not depend on how many.
pub fn matmul_bf16(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let (a, b) = views(a, b, m, k, n);
    let mut c = vec![0f32; m * n];
    // SAFETY: `c` holds m × n floats.
    unsafe { product(&a, &b, c.as_mut_ptr(), has_avx512_bf16()) };
    c
}

/// [`matmul_bf16`] on the portable path whatever the CPU has, for the tests that hold it to
/// [`matmul_bf16_portable`].
#[doc(hidden)]
pub fn matmul_bf16_portable_blocks(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let (a, b) = views(a, b, m, k, n);
    let mut c = vec![0f32; m * n];
    // SAFETY: `c` holds m × n floats.
    unsafe { product(&a, &b, c.as_mut_ptr(), false) };
    c
}

/// [`matmul_bf16`] of strided views (a transposed operand is read in place) into `c`
/// (row-major, `m × n`, written whole), for `Tensor::matmul` under [`Precision::Bfloat16`].
///
/// # Safety
/// `c` must be valid for writing `m × n` floats.
pub(crate) unsafe fn matmul_bf16_views(a: &ArrayView2<f32>, b: &ArrayView2<f32>, c: *mut f32) {
    // SAFETY: as this function's.
    unsafe { product(a, b, c, has_avx512_bf16()) }
}

/// # Safety
/// `c` must be valid for writing `m × n` floats; `kernel` only where the CPU has avx512f and
/// avx512bf16.
unsafe fn product(a: &ArrayView2<f32>, b: &ArrayView2<f32>, c: *mut f32, kernel: bool) {
    let ((m, k), n) = (a.dim(), b.dim().1);
    assert_eq!(k, b.dim().0, "matmul_bf16: inner sizes");
    if k == 0 {
        // SAFETY: as this function's.
        unsafe { std::ptr::write_bytes(c, 0, m * n) };
        return;
    }
    let threaded = m * k * n >= THREAD_FROM;
    let (mut pa, mut pb) = PACKED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    pack_a(a, threaded, &mut pa);
    let np = pack_b(b, threaded, &mut pb);
    let kp = k.div_ceil(2);
    let out = SharedMut(c);
    let row_blocks = m.div_ceil(MR);
    let col_blocks = np / NR;
    // Column-block-major: consecutive pieces share B's panel, which stays in cache.
    pieces(row_blocks * col_blocks, threaded, |piece| {
        let (rb, cb) = (piece % row_blocks, piece / row_blocks);
        let (rows, cols) = (MR.min(m - rb * MR), NR.min(n - cb * NR));
        let (a, b) = (&pa[rb * MR * kp..], &pb[cb * NR..]);
        // SAFETY: each piece writes only its own rows rb·MR.. and columns cb·NR.. of C,
        // within m × n; the kernel only where the CPU has it (the caller's word).
        let c = unsafe { out.ptr().add(rb * MR * n + cb * NR) };
        #[cfg(target_arch = "x86_64")]
        if kernel {
            unsafe { avx512::block(a, kp, rows, b, np, c, n, cols) };
            return;
        }
        unsafe { portable::block(a, kp, rows, b, np, c, n, cols) };
    });
    // Kept for the next product on this thread, unless large (a GPT-2 head's weight packs to
    // 77 MB): packing into fresh pages cost a quarter of a 1024³ product in page faults.
    if pa.capacity() + pb.capacity() <= KEEP_PACKED_WORDS {
        PACKED.with(|p| *p.borrow_mut() = (pa, pb));
    }
}

/// The portable path in the kernel's blocks: [`matmul_bf16_portable`]'s adds, eight rows by
/// thirty-two columns at a time, written so that the compiler vectorizes across columns (and
/// compiled for AVX2 where the CPU has it: the same operations, so the same values).
mod portable {
    use super::{flush, from_bf16, MR, NR};

    /// One block, with [`super::avx512::block`]'s arguments.
    ///
    /// # Safety
    /// As [`super::avx512::block`]'s, without the CPU features.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn block(
        a: &[u32],
        kp: usize,
        rows: usize,
        b: &[u32],
        np: usize,
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2; the rest as this function's.
            return unsafe { block_avx2(a, kp, rows, b, np, c, ldc, cols) };
        }
        // SAFETY: as this function's.
        unsafe { block_any(a, kp, rows, b, np, c, ldc, cols) }
    }

    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2")]
    unsafe fn block_avx2(
        a: &[u32],
        kp: usize,
        rows: usize,
        b: &[u32],
        np: usize,
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        // SAFETY: as the caller's.
        unsafe { block_any(a, kp, rows, b, np, c, ldc, cols) }
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block_any(
        a: &[u32],
        kp: usize,
        rows: usize,
        b: &[u32],
        np: usize,
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        let mut acc = [[0f32; NR]; MR];
        for p in 0..kp {
            let words = &b[p * np..p * np + NR];
            let b_even: [f32; NR] = std::array::from_fn(|j| from_bf16(words[j] as u16));
            let b_odd: [f32; NR] = std::array::from_fn(|j| from_bf16((words[j] >> 16) as u16));
            for (r, acc_r) in acc.iter_mut().enumerate().take(rows) {
                let word = a[p * MR + r];
                let (a_even, a_odd) = (from_bf16(word as u16), from_bf16((word >> 16) as u16));
                for j in 0..NR {
                    let sum = flush(acc_r[j] + a_odd * b_odd[j]);
                    acc_r[j] = flush(sum + a_even * b_even[j]);
                }
            }
        }
        for (r, acc_r) in acc.iter().enumerate().take(rows) {
            // SAFETY: row r of the block has `cols` floats to write (the caller's word).
            unsafe { std::ptr::copy_nonoverlapping(acc_r.as_ptr(), c.add(r * ldc), cols) };
        }
    }
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
/// Measured on this machine (2 threads, `cargo xtask bench`, one round): GPT-2 124M steps take
/// 0.85× and 0.79× their float32 time (B4 T64, B1 T1024), lecture 7's `full` step 1.09×:
/// small products (attention's) and everything that is not a product do not get faster.
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

    /// One block of C: `rows ≤ MR` rows of a packed A panel (`[kp][MR]` words) times the packed B
    /// columns starting at `b` (row stride `np` pairs), into `c` (row stride `ldc`), of which
    /// the first `cols ≤ NR` columns are written.
    ///
    /// # Safety
    /// The CPU must have avx512f and avx512bf16; `a` must hold a panel of `kp × MR` words, `b` the
    /// `kp` rows of [`NR`] pair words, `c` `rows` rows of `cols` floats.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn block(
        a: &[u32],
        kp: usize,
        rows: usize,
        b: &[u32],
        np: usize,
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        // A full block's row count known to the compiler keeps all sixteen sums in registers.
        match rows {
            MR => unsafe { rows_of::<MR>(a, kp, b, np, c, ldc, cols) },
            7 => unsafe { rows_of::<7>(a, kp, b, np, c, ldc, cols) },
            6 => unsafe { rows_of::<6>(a, kp, b, np, c, ldc, cols) },
            5 => unsafe { rows_of::<5>(a, kp, b, np, c, ldc, cols) },
            4 => unsafe { rows_of::<4>(a, kp, b, np, c, ldc, cols) },
            3 => unsafe { rows_of::<3>(a, kp, b, np, c, ldc, cols) },
            2 => unsafe { rows_of::<2>(a, kp, b, np, c, ldc, cols) },
            _ => unsafe { rows_of::<1>(a, kp, b, np, c, ldc, cols) },
        }
    }

    /// [`block`] with `ROWS` rows.
    #[inline(always)]
    unsafe fn rows_of<const ROWS: usize>(
        a: &[u32],
        kp: usize,
        b: &[u32],
        np: usize,
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        assert!(a.len() >= kp * MR && b.len() >= (kp - 1) * np + NR);
        let (a, b) = (a.as_ptr(), b.as_ptr());
        let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
        for p in 0..kp {
            let row = b.add(p * np);
            let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(row as *const __m512i));
            let b1: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(row.add(16) as *const __m512i));
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let pair: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*a.add(p * MR + r) as i32));
                acc_r[0] = _mm512_dpbf16_ps(acc_r[0], pair, b0);
                acc_r[1] = _mm512_dpbf16_ps(acc_r[1], pair, b1);
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
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
