use super::{Block, MR, NR};
use std::arch::x86_64::*;

/// One block of C with `vdpbf16ps`.
///
/// # Safety
/// The CPU must have avx512f and avx512bf16; `block`'s pointers must reach its rows, pairs
/// and columns.
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn block(block: Block) {
    // A row count and layout known to the compiler keep all sixteen sums in registers.
    let panel = block.strides.row == 1;
    macro_rules! rows {
        ($($n:literal)*) => {
            match (block.rows, panel) {
                $(($n, true) => unsafe { rows_of::<$n, true>(block) },
                  ($n, false) => unsafe { rows_of::<$n, false>(block) },)*
                _ => unreachable!("a block has 1 to {MR} rows"),
            }
        };
    }
    rows!(8 7 6 5 4 3 2 1)
}

/// [`block`] with `ROWS` rows, A in panels (`PANEL`: a pair's rows side by side) or in rows.
#[inline(always)]
unsafe fn rows_of<const ROWS: usize, const PANEL: bool>(block: Block) {
    let Block {
        a,
        strides,
        pairs,
        b,
        c,
        ldc,
        cols,
        onto,
        ..
    } = block;
    // The block's columns as two masks of sixteen lanes.
    let lanes = |from: usize| -> __mmask16 {
        let count = cols.saturating_sub(from).min(16);
        ((1u32 << count) - 1) as __mmask16
    };
    let (mask0, mask1) = (lanes(0), lanes(16));
    let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
    if onto {
        for (r, acc_r) in acc.iter_mut().enumerate() {
            let row = c.add(r * ldc);
            acc_r[0] = _mm512_maskz_loadu_ps(mask0, row);
            acc_r[1] = _mm512_maskz_loadu_ps(mask1, row.add(16));
        }
    }
    // Each row's words, for A in rows: eight streams along k.
    let row_start: [*const u32; ROWS] = std::array::from_fn(|r| a.add(r * strides.row));
    for p in 0..pairs {
        let words = b.add(p * NR);
        let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(words as *const __m512i));
        let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(words.add(16) as *const __m512i));
        for (r, acc_r) in acc.iter_mut().enumerate() {
            let word = if PANEL {
                *a.add(p * strides.pair + r)
            } else {
                *row_start[r].add(p)
            };
            let pair: __m512bh = std::mem::transmute(_mm512_set1_epi32(word as i32));
            acc_r[0] = _mm512_dpbf16_ps(acc_r[0], pair, b0);
            acc_r[1] = _mm512_dpbf16_ps(acc_r[1], pair, b1);
        }
    }
    for (r, acc_r) in acc.iter().enumerate() {
        let row = c.add(r * ldc);
        if cols == NR {
            _mm512_storeu_ps(row, acc_r[0]);
            _mm512_storeu_ps(row.add(16), acc_r[1]);
        } else {
            _mm512_mask_storeu_ps(row, mask0, acc_r[0]);
            _mm512_mask_storeu_ps(row.add(16), mask1, acc_r[1]);
        }
    }
}
