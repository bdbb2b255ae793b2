use super::{flush, from_bf16, Block, NR};

/// One block of C.
///
/// # Safety
/// `block`'s pointers must reach its rows, pairs and columns.
pub(super) unsafe fn block(block: Block) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; the rest as this function's.
        return unsafe { block_avx2(block) };
    }
    // SAFETY: as this function's.
    unsafe { block_any(block) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_avx2(block: Block) {
    // SAFETY: as the caller's.
    unsafe { block_any(block) }
}

#[inline(always)]
unsafe fn block_any(block: Block) {
    let Block {
        a,
        strides,
        pairs,
        rows,
        b,
        c,
        ldc,
        cols,
        onto,
    } = block;
    let mut acc = [[0f32; NR]; super::MR];
    for (r, acc_r) in acc.iter_mut().enumerate().take(rows) {
        if onto {
            // SAFETY: row r of the block has `cols` floats (the caller's word).
            unsafe { std::ptr::copy_nonoverlapping(c.add(r * ldc), acc_r.as_mut_ptr(), cols) };
        }
    }
    for p in 0..pairs {
        // SAFETY: pair row p has NR words from `b`; row r's pair p is in A (the caller's word).
        let words = unsafe { std::slice::from_raw_parts(b.add(p * NR), NR) };
        let b_even: [f32; NR] = std::array::from_fn(|j| from_bf16(words[j] as u16));
        let b_odd: [f32; NR] = std::array::from_fn(|j| from_bf16((words[j] >> 16) as u16));
        for (r, acc_r) in acc.iter_mut().enumerate().take(rows) {
            let word = unsafe { *a.add(r * strides.row + p * strides.pair) };
            let (a_even, a_odd) = (from_bf16(word as u16), from_bf16((word >> 16) as u16));
            for j in 0..NR {
                let sum = flush(a_odd.mul_add(b_odd[j], acc_r[j]));
                acc_r[j] = flush(a_even.mul_add(b_even[j], sum));
            }
        }
    }
    for (r, acc_r) in acc.iter().enumerate().take(rows) {
        // SAFETY: row r of the block has `cols` floats to write (the caller's word).
        unsafe { std::ptr::copy_nonoverlapping(acc_r.as_ptr(), c.add(r * ldc), cols) };
    }
}
