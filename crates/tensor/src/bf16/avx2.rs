use super::{Block, NR};
use std::arch::x86_64::*;

/// One block of C.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `block.a` must point into A widened by [`super::widen`] (row
/// `r`'s pair `p` at `2 · strides.index(r, p)` words), and the pointers reach the block's
/// rows, pairs and columns; its operands must pass [`super::fused_without_flushes_is_exact`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn block(block: Block) {
    for first_col in (0..block.cols).step_by(16) {
        for first_row in (0..block.rows).step_by(4) {
            // SAFETY: as this function's, for a part of the block.
            unsafe {
                match block.rows - first_row {
                    1 => rows_of::<1>(&block, first_row, first_col),
                    2 => rows_of::<2>(&block, first_row, first_col),
                    3 => rows_of::<3>(&block, first_row, first_col),
                    _ => rows_of::<4>(&block, first_row, first_col),
                }
            }
        }
    }
}

/// `ROWS` rows of the block from `first_row`, sixteen columns (or the block's last ones)
/// from `first_col`.
#[inline(always)]
unsafe fn rows_of<const ROWS: usize>(block: &Block, first_row: usize, first_col: usize) {
    let cols = (block.cols - first_col).min(16);
    let odd_half = _mm256_set1_epi32(0xffff_0000_u32 as i32);
    // A row of C (`cols` floats) as two registers, through a buffer where it is short.
    let row_of_c = |r: usize| block.c.add((first_row + r) * block.ldc + first_col);
    let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
    if block.onto {
        for (r, acc_r) in acc.iter_mut().enumerate() {
            let mut line = [0f32; 16];
            std::ptr::copy_nonoverlapping(row_of_c(r), line.as_mut_ptr(), cols);
            acc_r[0] = _mm256_loadu_ps(line.as_ptr());
            acc_r[1] = _mm256_loadu_ps(line.as_ptr().add(8));
        }
    }
    for p in 0..block.pairs {
        let words = block.b.add(p * NR + first_col) as *const __m256i;
        let (w0, w1) = (_mm256_loadu_si256(words), _mm256_loadu_si256(words.add(1)));
        // A pair's even element is its word's low half, the odd one its high half.
        let b_even = [
            _mm256_castsi256_ps(_mm256_slli_epi32::<16>(w0)),
            _mm256_castsi256_ps(_mm256_slli_epi32::<16>(w1)),
        ];
        let b_odd = [
            _mm256_castsi256_ps(_mm256_and_si256(w0, odd_half)),
            _mm256_castsi256_ps(_mm256_and_si256(w1, odd_half)),
        ];
        for (r, acc_r) in acc.iter_mut().enumerate() {
            let halves = block.a.add(2 * block.strides.index(first_row + r, p)) as *const f32;
            let (a_even, a_odd) = (
                _mm256_broadcast_ss(&*halves),
                _mm256_broadcast_ss(&*halves.add(1)),
            );
            for h in 0..2 {
                let sum = _mm256_fmadd_ps(a_odd, b_odd[h], acc_r[h]);
                acc_r[h] = _mm256_fmadd_ps(a_even, b_even[h], sum);
            }
        }
    }
    for (r, acc_r) in acc.iter().enumerate() {
        let mut line = [0f32; 16];
        _mm256_storeu_ps(line.as_mut_ptr(), acc_r[0]);
        _mm256_storeu_ps(line.as_mut_ptr().add(8), acc_r[1]);
        std::ptr::copy_nonoverlapping(line.as_ptr(), row_of_c(r), cols);
    }
}
