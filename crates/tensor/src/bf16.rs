//! bfloat16 matrix products: operands rounded to bfloat16 (round to nearest, ties to even),
//! products accumulated in float32, the result float32.
//!
//! This is what build-nanogpt's `train_gpt2.py` gets on a CPU from
//! `torch.autocast(device_type="cpu", dtype=torch.bfloat16)`, except that PyTorch's products
//! then round their float32 results to bfloat16 too; these keep them in float32.
//!
//! A bfloat16 number is the top 16 bits of a float32, so the product of two is exact in float32
//! (8 × 8 significand bits) unless it overflows or falls below the normal range. The kernel for
//! CPUs with `avx512_bf16` uses `vdpbf16ps`, which for each float32 lane adds the product of a
//! pair's odd elements, then of its even ones, each as a fused multiply-add (the exact product,
//! one rounding), with denormal inputs read as zero and denormal results flushed to zero
//! (measured on an EPYC with `avx512_bf16`: every lane of 320,000 equals that order, and a
//! product past float32's largest value is taken back by the next sum as a fused add takes it
//! back, `tests/bf16.rs`). The portable path adds in the same order with the same flushes, so
//! it gives the kernel's values bit for bit and every test runs on any machine. CPUs with AVX2
//! but not `avx512_bf16` take a third path: the same fused multiply-adds without the flushes,
//! where the operands' exponents show that no product or sum can be denormal (then the flushes
//! change nothing), and the portable blocks elsewhere: the same values again, at 0.78 of our
//! sgemm's speed on an AVX2 EPYC (Zen 3), where the portable blocks ran at 0.26.
//!
//! Layout: each operand is packed as pairs along k (one 32-bit word per pair; k padded with a
//! zero to even), from its own layout: A in rows row by row (a pair's word broadcast to every
//! lane), A in columns (a transposed operand) a pair's rows side by side, B in panels of 32
//! columns, `[k/2][32]` (sixteen columns' pairs per 512-bit register); a linear layer's weight
//! read as `W^T` is packed from its rows, not read across them. The kernel keeps an 8 × 32
//! block of C in sixteen registers (12 × 32 in 24 ran at 0.7 of its speed here). Around it,
//! the blocking of Goto and van de Geijn's GEMM: each piece of work packs its 128 rows of A
//! just before it multiplies them, and k goes in passes that keep B's panel in L1.

use crate::pool::{for_each_piece, in_piece, SharedMut};
use ndarray::ArrayView2;
use std::ops::Range;

/// Rows of C per kernel block.
const MR: usize = 8;
/// Columns of C per kernel block: two registers of sixteen.
const NR: usize = 32;
/// Pairs along k of an operand each thread packs at a time (B, and A in columns).
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

/// The arithmetic paths of a bfloat16 product, all giving the same values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// `vdpbf16ps`, on CPUs with `avx512_bf16`.
    Avx512Bf16,
    /// AVX2's fused multiply-adds in `vdpbf16ps`'s order, without its flushes, where the
    /// operands' exponents show that this gives the same values
    /// ([`fused_without_flushes_is_exact`]); elsewhere the portable path's blocks.
    Avx2,
    /// [`matmul_bf16_portable`]'s adds in the kernel's blocks.
    Portable,
}

impl Path {
    /// The fastest path this machine has.
    pub fn best() -> Path {
        if has_avx512_bf16() {
            Path::Avx512Bf16
        } else if has_avx2() {
            Path::Avx2
        } else {
            Path::Portable
        }
    }

    /// Whether this machine can take the path.
    pub fn available(self) -> bool {
        match self {
            Path::Avx512Bf16 => has_avx512_bf16(),
            Path::Avx2 => has_avx2(),
            Path::Portable => true,
        }
    }

    /// The path's name, as the benches and lecture runs print it.
    pub fn name(self) -> &'static str {
        match self {
            Path::Avx512Bf16 => "avx512_bf16",
            Path::Avx2 => "avx2",
            Path::Portable => "portable",
        }
    }
}

/// Which path [`matmul_bf16`] takes on this machine: "avx512_bf16", "avx2" or "portable".
pub fn kernel() -> &'static str {
    Path::best().name()
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

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A product this small (multiply-adds) runs on the calling thread: waking the workers costs
/// more than they save (attention's products, a small model's layers).
const THREAD_FROM: usize = 1 << 20;

/// Pairs along k in one pass over a block of C, at most, as Goto and van de Geijn block a GEMM
/// ("Anatomy of high-performance matrix multiplication", 2008): a B panel of 192 pairs by
/// [`NR`] columns (24 KiB) stays in L1 while a piece's rows of A pass it. Each pass adds onto
/// the sums the last one left in C, in the same order, so the blocking never changes a value.
const KC: usize = 192;
/// Rows of C in one piece of work: the piece packs these rows of A itself, just before it
/// multiplies them, so that they are read from memory once and used from L2.
const MC: usize = 128;

/// The most packed words (16 MiB) a thread keeps between products.
const KEEP_PACKED_WORDS: usize = 1 << 22;

thread_local! {
    /// The calling thread's packing buffers for B and for A in columns, reused by its next
    /// product.
    static PACKED: std::cell::RefCell<(Vec<u32>, Vec<u32>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new()))
    };
    /// A thread's buffers for a piece's rows of A (and, for the AVX2 path, their halves
    /// widened to float32), reused by its next piece.
    static PACKED_ROWS: std::cell::RefCell<(Vec<u32>, Vec<u32>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new()))
    };
}

/// The first `len` words of `buffer`, grown if needed (not cleared: packing writes every word
/// a block reads).
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

/// How a packed A lies: row `r`'s pair `p` at `r · row + p · pair` words from its panel of
/// [`MR`] rows ([`Strides::index`]).
#[derive(Clone, Copy)]
struct Strides {
    row: usize,
    pair: usize,
}

impl Strides {
    /// Where row `r`'s pair `p` lies.
    fn index(self, r: usize, p: usize) -> usize {
        r * self.row + p * self.pair
    }
}

/// `words` rounded up to 64 bytes times an odd number. Rows of a packed operand this far apart
/// fall in different cache sets: a power of two apart, the lines a kernel reads side by side
/// would share a few sets and evict each other and the other operand's panel.
fn spaced(words: usize) -> usize {
    (words.div_ceil(16) | 1) * 16
}

/// Rows `rows` of A (`m × k`), in rows in memory (`stride 1` along k) or any view but columns,
/// packed row by row as bfloat16 pairs along k: each row rounded in one pass, whose halves are
/// its words (the even element in the low half; k padded with a zero to even).
fn pack_a_rows(a: &ArrayView2<f32>, rows: Range<usize>, packed: &mut Vec<u32>) -> Strides {
    let k = a.dim().1;
    let kp = k.div_ceil(2);
    let row_words = spaced(kp);
    let out = room(packed, rows.len() * row_words);
    let (rs, cs) = (a.strides()[0], a.strides()[1]);
    // SAFETY (for `element`): only (i, p) with i in `rows` (within m) and p < k are read.
    let element =
        |i: usize, p: usize| unsafe { *a.as_ptr().offset(i as isize * rs + p as isize * cs) };
    for (r, i) in rows.enumerate() {
        // SAFETY: row r's kp words are inside `packed`.
        let words = unsafe { std::slice::from_raw_parts_mut(out.add(r * row_words), kp) };
        if cs == 1 {
            // SAFETY: row i of the view: k elements in memory.
            let row = unsafe { std::slice::from_raw_parts(a.as_ptr().offset(i as isize * rs), k) };
            round_row_into_words(row, words);
        } else {
            for (p, word) in words.iter_mut().enumerate() {
                let odd = if 2 * p + 1 < k {
                    element(i, 2 * p + 1)
                } else {
                    0.0
                };
                *word = pair(element(i, 2 * p), odd);
            }
        }
    }
    Strides {
        row: row_words,
        pair: 1,
    }
}

/// A (`m × k`) in columns in memory (a transposed operand, such as `dY^T` in a weight's
/// gradient), packed whole before the product: for each chunk of [`MC`] rows, `[k/2][rows]`
/// words, a pair's rows side by side. Two of A's columns (rows of its memory, read whole) are
/// rounded in one pass each and interleaved. Returns the strides and the words per chunk.
fn pack_a_columns(a: &ArrayView2<f32>, threaded: bool, packed: &mut Vec<u32>) -> (Strides, usize) {
    let (m, k) = a.dim();
    let (kp, cs) = (k.div_ceil(2), a.strides()[1]);
    let pair_words = spaced(MC.min(m));
    let chunk_words = kp * pair_words;
    let out = SharedMut(room(packed, m.div_ceil(MC) * chunk_words));
    pieces(kp.div_ceil(PACK_ROWS), threaded, |piece| {
        let (mut even, mut odd) = (vec![0u16; m], vec![0u16; m]);
        for p in piece * PACK_ROWS..kp.min((piece + 1) * PACK_ROWS) {
            // SAFETY: column q of the view holds its m rows contiguously.
            let column = |q: usize| unsafe {
                std::slice::from_raw_parts(a.as_ptr().offset(q as isize * cs), m)
            };
            round_row(column(2 * p), &mut even);
            if 2 * p + 1 < k {
                round_row(column(2 * p + 1), &mut odd);
            } else {
                odd.fill(0);
            }
            for (chunk, first) in (0..m).step_by(MC).enumerate() {
                let rows = first..m.min(first + MC);
                // SAFETY: pair p's words of this chunk, written by this piece only.
                let words = unsafe {
                    let at = out.ptr().add(chunk * chunk_words + p * pair_words);
                    std::slice::from_raw_parts_mut(at, rows.len())
                };
                for ((word, &e), &o) in words.iter_mut().zip(&even[rows.clone()]).zip(&odd[rows]) {
                    *word = e as u32 | (o as u32) << 16;
                }
            }
        }
    });
    (
        Strides {
            row: 1,
            pair: pair_words,
        },
        chunk_words,
    )
}

/// `row` rounded to bfloat16 pairs in `words` (`row.len().div_ceil(2)` of them), in one
/// vectorized pass: the halves of a word in memory are its even element then its odd one.
fn round_row_into_words(row: &[f32], words: &mut [u32]) {
    // SAFETY: the words' memory as twice as many halves, every bit pattern a valid u16.
    let halves = unsafe {
        std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u16>(), 2 * words.len())
    };
    round_row(row, halves);
    if cfg!(target_endian = "big") {
        // The even element belongs in the low half, which big-endian stores second.
        for word in words.iter_mut() {
            *word = word.rotate_left(16);
        }
    }
}

/// B (`k × n`) packed as bfloat16 pairs along k (the even element in the low half), in
/// panels of [`NR`] columns, each `[k/2][NR]` words and contiguous, so that a kernel reads its
/// panel in order (n padded to a multiple of NR). Row-major B (activations, `dY`) interleaves
/// two rows; column-major B (a linear layer's weight read as `W^T`) rounds each weight row in
/// one pass and turns its pairs into a column of words; any other view element by element.
/// Returns the words from one panel to the next.
fn pack_b(b: &ArrayView2<f32>, threaded: bool, packed: &mut Vec<u32>) -> usize {
    let (k, n) = b.dim();
    let (kp, np) = (k.div_ceil(2), n.div_ceil(NR) * NR);
    let panel_words = spaced(kp * NR);
    let out = SharedMut(room(packed, np / NR * panel_words));
    // Where pair row p of column j lies.
    let index = move |p: usize, j: usize| (j / NR) * panel_words + p * NR + j % NR;
    let (rs, cs) = (b.strides()[0], b.strides()[1]);
    // SAFETY (for `at`): only (p, j) with p < k, j < n are read, inside the view.
    let at = |p: usize, j: usize| unsafe { *b.as_ptr().offset(p as isize * rs + j as isize * cs) };
    if rs == 1 && cs != 1 {
        pieces(np / NR, threaded, |panel| {
            let columns = panel * NR..n.min((panel + 1) * NR);
            let mut words = vec![0u32; NR * kp]; // [column][pair]
            for (c, j) in columns.clone().enumerate() {
                // SAFETY: column j of the view: k elements in memory from (0, j).
                let column =
                    unsafe { std::slice::from_raw_parts(b.as_ptr().offset(j as isize * cs), k) };
                round_row_into_words(column, &mut words[c * kp..(c + 1) * kp]);
            }
            // SAFETY: the panel's kp · NR words, written by this piece only.
            let panel_words = unsafe {
                std::slice::from_raw_parts_mut(out.ptr().add(panel * panel_words), kp * NR)
            };
            for (p, line) in panel_words.chunks_exact_mut(NR).enumerate() {
                for (c, word) in line.iter_mut().enumerate().take(columns.len()) {
                    *word = words[c * kp + p];
                }
            }
        });
        return panel_words;
    }
    pieces(kp.div_ceil(PACK_ROWS), threaded, |piece| {
        let (mut even_halves, mut odd_halves) = (vec![0u16; n], vec![0u16; n]);
        for p in piece * PACK_ROWS..kp.min((piece + 1) * PACK_ROWS) {
            if cs == 1 {
                // SAFETY: rows 2p and 2p + 1 of the view, n elements each, in memory.
                let row = |q: usize| unsafe {
                    std::slice::from_raw_parts(b.as_ptr().offset(q as isize * rs), n)
                };
                // Each row rounded in one vectorized pass, then the two interleaved.
                round_row(row(2 * p), &mut even_halves);
                if 2 * p + 1 < k {
                    round_row(row(2 * p + 1), &mut odd_halves);
                } else {
                    odd_halves.fill(0);
                }
            } else {
                for j in 0..n {
                    even_halves[j] = to_bf16(at(2 * p, j));
                    odd_halves[j] = if 2 * p + 1 < k {
                        to_bf16(at(2 * p + 1, j))
                    } else {
                        0
                    };
                }
            }
            for first in (0..n).step_by(NR) {
                let columns = first..n.min(first + NR);
                // SAFETY: pair row p of one panel, written by this piece only.
                let words = unsafe {
                    std::slice::from_raw_parts_mut(out.ptr().add(index(p, first)), columns.len())
                };
                let (even, odd) = (&even_halves[columns.clone()], &odd_halves[columns]);
                for ((word, &e), &o) in words.iter_mut().zip(even).zip(odd) {
                    *word = e as u32 | (o as u32) << 16;
                }
            }
        }
    });
    panel_words
}

// ANCHOR: matmul_bf16_portable
/// C = A · B with bfloat16 operands, on any CPU: for each output, over k in pairs, the odd
/// element's product added, then the even one's, each by a fused multiply-add (one rounding to
/// float32) and flushed if denormal, as `vdpbf16ps` adds.
pub fn matmul_bf16_portable(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (m * k, k * n), "matmul_bf16: shapes");
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for p in (0..k).step_by(2) {
                let (a_even, b_even) = (round_bf16(a[i * k + p]), round_bf16(b[p * n + j]));
                // An odd k's last pair is padded with a zero.
                let (a_odd, b_odd) = match p + 1 < k {
                    true => (round_bf16(a[i * k + p + 1]), round_bf16(b[(p + 1) * n + j])),
                    false => (0.0, 0.0),
                };
                acc = flush(a_odd.mul_add(b_odd, acc));
                acc = flush(a_even.mul_add(b_even, acc));
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
/// sums, on this machine's best [`Path`] (all give the same values). Blocks of rows are spread
/// over the worker threads; the values do not depend on how many.
pub fn matmul_bf16(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    matmul_bf16_on(Path::best(), a, b, m, k, n).expect("the best path is available")
}

/// [`matmul_bf16`] on the given path, or `None` where this machine lacks it: for the tests
/// that hold each path to [`matmul_bf16_portable`].
#[doc(hidden)]
pub fn matmul_bf16_on(
    path: Path,
    a: &[f32],
    b: &[f32],
    m: usize,
    k: usize,
    n: usize,
) -> Option<Vec<f32>> {
    if !path.available() {
        return None;
    }
    let (a, b) = views(a, b, m, k, n);
    let mut c = vec![0f32; m * n];
    // SAFETY: `c` holds m × n floats; the path is available.
    unsafe { product(&a, &b, c.as_mut_ptr(), path) };
    Some(c)
}

/// [`matmul_bf16`] of strided views (a transposed operand is read in place) into `c`
/// (row-major, `m × n`, written whole), for `Tensor::matmul` under [`Precision::Bfloat16`].
///
/// # Safety
/// `c` must be valid for writing `m × n` floats.
pub(crate) unsafe fn matmul_bf16_views(a: &ArrayView2<f32>, b: &ArrayView2<f32>, c: *mut f32) {
    // SAFETY: as this function's.
    unsafe { product(a, b, c, Path::best()) }
}

/// # Safety
/// `c` must be valid for writing `m × n` floats; `path` must be available.
unsafe fn product(a: &ArrayView2<f32>, b: &ArrayView2<f32>, c: *mut f32, path: Path) {
    let ((m, k), n) = (a.dim(), b.dim().1);
    assert_eq!(k, b.dim().0, "matmul_bf16: inner sizes");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        // SAFETY: as this function's.
        unsafe { std::ptr::write_bytes(c, 0, m * n) };
        return;
    }
    let threaded = m * k * n >= THREAD_FROM && crate::max_threads() > 1 && !in_piece();
    let (mut pb, mut pa) = PACKED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let panel_words = pack_b(b, threaded, &mut pb);
    let (kp, np) = (k.div_ceil(2), n.div_ceil(NR) * NR);
    // The AVX2 path skips the flushes where the exponents show they change nothing.
    let range_b = match path {
        Path::Avx2 => exponent_range_of_b(&pb, k, n, panel_words),
        _ => (0, 255),
    };
    // A in columns is packed whole, its memory read in long rows; A in rows is packed by each
    // piece just before it multiplies them, so that they are read from memory once and used
    // from L2.
    let (rs, cs) = (a.strides()[0], a.strides()[1]);
    let columns = (rs == 1 && cs != 1).then(|| pack_a_columns(a, threaded, &mut pa));
    // Along k in passes of at most KC pairs, evened out.
    let kc = kp.div_ceil(kp.div_ceil(KC));
    let col_panels = np / NR;
    let row_chunks = m.div_ceil(MC);
    // Only when the row chunks are too few to share among the threads (a head's weight
    // gradient: 64 rows, k = 16384) are the columns divided too, the pieces of one row chunk
    // each packing its rows.
    let wanted = if threaded {
        4 * crate::max_threads()
    } else {
        1
    };
    let col_chunks = wanted.div_ceil(row_chunks).min(col_panels);
    let chunk_cols = col_panels.div_ceil(col_chunks); // column panels per piece
    let col_chunks = col_panels.div_ceil(chunk_cols);
    let (a_words, b_words, out) = (
        SharedMut(pa.as_mut_ptr()),
        SharedMut(pb.as_mut_ptr()),
        SharedMut(c),
    );
    pieces(row_chunks * col_chunks, threaded, |piece| {
        let (rc, cc) = (piece % row_chunks, piece / row_chunks);
        let rows = rc * MC..m.min((rc + 1) * MC);
        PACKED_ROWS.with(|buffers| {
            let (own, wide) = &mut *buffers.borrow_mut();
            let (a_chunk, strides) = match columns {
                // SAFETY: chunk rc of the packed columns.
                Some((strides, chunk_words)) => {
                    (unsafe { a_words.ptr().add(rc * chunk_words) }, strides)
                }
                None => {
                    let strides = pack_a_rows(a, rows.clone(), own);
                    (own.as_mut_ptr(), strides)
                }
            };
            // SAFETY: this piece's rows of the packed A, all kp pairs.
            let unflushed = path == Path::Avx2
                && fused_without_flushes_is_exact(
                    unsafe { exponent_range_of_a(a_chunk, strides, rows.len(), kp) },
                    range_b,
                );
            // The AVX2 kernel reads A's halves as float32, widened once per piece.
            let a_wide = match unflushed {
                true => {
                    let words = match strides.pair {
                        1 => rows.len() * strides.row,
                        _ => kp * strides.pair,
                    };
                    // SAFETY: the piece's packed A spans `words` words from a_chunk.
                    widen(unsafe { std::slice::from_raw_parts(a_chunk, words) }, wide)
                }
                false => std::ptr::null(),
            };
            for cb in cc * chunk_cols..col_panels.min((cc + 1) * chunk_cols) {
                for k0 in (0..kp).step_by(kc) {
                    let pairs = kc.min(kp - k0);
                    for first in rows.clone().step_by(MR) {
                        let cols = NR.min(n - cb * NR);
                        // SAFETY: the packed words of rows first.. from pair k0, and of B's
                        // panel cb from pair row k0; each piece writes only its own rows and
                        // columns of C, within m × n; a path only where the CPU has it (the
                        // caller's word).
                        unsafe {
                            let block = Block {
                                a: a_chunk.add(strides.index(first - rows.start, k0)),
                                strides,
                                pairs,
                                rows: MR.min(rows.end - first),
                                b: b_words.ptr().add(cb * panel_words + k0 * NR),
                                c: out.ptr().add(first * n + cb * NR),
                                ldc: n,
                                cols,
                                onto: k0 > 0,
                            };
                            #[cfg(target_arch = "x86_64")]
                            match path {
                                Path::Avx512Bf16 => {
                                    avx512::block(block);
                                    continue;
                                }
                                Path::Avx2 if unflushed => {
                                    let at = 2 * strides.index(first - rows.start, k0);
                                    avx2::block(Block {
                                        a: a_wide.add(at),
                                        ..block
                                    });
                                    continue;
                                }
                                _ => {}
                            }
                            portable::block(block);
                        }
                    }
                }
            }
            for buffer in [own, wide] {
                if buffer.capacity() > KEEP_PACKED_WORDS {
                    *buffer = Vec::new();
                }
            }
        });
    });
    // Kept for the next product on this thread, unless large (a GPT-2 head's weight packs to
    // 77 MB): packing into fresh pages cost a quarter of a 1024³ product in page faults.
    if pa.capacity() + pb.capacity() <= KEEP_PACKED_WORDS {
        PACKED.with(|p| *p.borrow_mut() = (pb, pa));
    }
}

/// The least and the greatest exponent fields (biased, 1 to 255) among the nonzero bfloat16
/// halves of `words`; (255, 0) where all are zero. (No half is denormal: [`to_bf16`] flushes
/// them.)
fn exponent_range(words: &[u32]) -> (u32, u32) {
    let field = |half: u32| half & 0xff;
    let least = |half: u32| match field(half) {
        0 => 255,
        e => e,
    };
    words.iter().fold((255, 0), |(low, high), &w| {
        let (even, odd) = (w >> 7, w >> 23);
        (
            low.min(least(even)).min(least(odd)),
            high.max(field(even)).max(field(odd)),
        )
    })
}

/// Two exponent ranges as one.
fn joined((low, high): (u32, u32), (low2, high2): (u32, u32)) -> (u32, u32) {
    (low.min(low2), high.max(high2))
}

/// [`exponent_range`] of a packed A's `rows` rows by `pairs` pairs from `a`.
///
/// # Safety
/// `a` and `strides` must reach those rows and pairs.
unsafe fn exponent_range_of_a(
    a: *const u32,
    strides: Strides,
    rows: usize,
    pairs: usize,
) -> (u32, u32) {
    // SAFETY (both arms): rows or pairs lying side by side, inside the packed A.
    let line = |at: usize, len: usize| unsafe { std::slice::from_raw_parts(a.add(at), len) };
    match strides.pair {
        1 => (0..rows)
            .map(|r| exponent_range(line(r * strides.row, pairs)))
            .fold((255, 0), joined),
        _ => (0..pairs)
            .map(|p| exponent_range(line(p * strides.pair, rows)))
            .fold((255, 0), joined),
    }
}

/// [`exponent_range`] of a packed B (`k × n`), its panels `panel_words` apart (the columns
/// past n in the last panel are not B's).
fn exponent_range_of_b(packed: &[u32], k: usize, n: usize, panel_words: usize) -> (u32, u32) {
    let kp = k.div_ceil(2);
    (0..n.div_ceil(NR))
        .flat_map(|panel| {
            let cols = NR.min(n - panel * NR);
            (0..kp).map(move |p| (panel * panel_words + p * NR, cols))
        })
        .map(|(at, cols)| exponent_range(&packed[at..at + cols]))
        .fold((255, 0), joined)
}

/// Whether operands with these exponent ranges (A's and B's nonzero bfloat16 elements) let a
/// fused multiply-add without flushes give `vdpbf16ps`'s values: no partial sum can be
/// denormal, so its flushes change nothing.
///
/// A bfloat16 number is an integer below 256 times 2^(e − 7), so each product is a multiple
/// of 2^q, q = e_a + e_b − 14, and so is each sum of products, rounded or not (rounding lands
/// on a coarser grid, or the sum is exact); a nonzero multiple of 2^q is normal when
/// q ≥ −126, that is, with biased fields, `least_a + least_b − 268 ≥ −126`. Infinities and
/// NaNs (field 255) go the flushing way.
fn fused_without_flushes_is_exact(
    (least_a, most_a): (u32, u32),
    (least_b, most_b): (u32, u32),
) -> bool {
    least_a + least_b >= 142 && most_a < 255 && most_b < 255
}

/// Each packed word's halves as float32 bit patterns, the even one first, into `wide`
/// (grown if needed); returns where they start.
fn widen(words: &[u32], wide: &mut Vec<u32>) -> *const u32 {
    if wide.len() < 2 * words.len() {
        wide.resize(2 * words.len(), 0);
    }
    for (halves, &w) in wide.chunks_exact_mut(2).zip(words) {
        halves[0] = w << 16;
        halves[1] = w & 0xffff_0000;
    }
    wide.as_ptr()
}

/// One kernel call: `rows ≤ MR` rows of C by `cols ≤ NR` columns, over `pairs` pairs along k.
struct Block {
    /// Row 0's first pair in the packed A; row `r`'s pair `p` at `r · row + p · pair` words.
    a: *const u32,
    strides: Strides,
    pairs: usize,
    rows: usize,
    /// The packed B's panel, from the first pair row; pair rows [`NR`] words apart.
    b: *const u32,
    /// C's first element; rows `ldc` floats apart.
    c: *mut f32,
    ldc: usize,
    cols: usize,
    /// Add onto the sums in C (a later pass along k) rather than start from zero.
    onto: bool,
}

/// The portable path in the kernel's blocks: [`matmul_bf16_portable`]'s adds, eight rows by
/// thirty-two columns at a time, written so that the compiler vectorizes across columns (and
/// compiled for AVX2 where the CPU has it: the same operations, so the same values).
mod portable;

/// The AVX2 path's kernel: `vdpbf16ps`'s order, each pair's odd product added and then its
/// even one, as fused multiply-adds without the flushes, only for operands whose exponents
/// show that this gives the same values ([`fused_without_flushes_is_exact`]). A's pairs come
/// widened to float32 (a broadcast load each); B's are split in registers, once for four rows.
/// Blocks of four rows by sixteen columns keep eight sums, both halves of B's pairs and a
/// row's pair in fifteen of the sixteen registers.
#[cfg(target_arch = "x86_64")]
mod avx2;

mod precision;
pub use precision::{precision, precision_scope, Precision, PrecisionScope};

#[cfg(target_arch = "x86_64")]
mod avx512;
