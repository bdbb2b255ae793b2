//! `f32::exp` of many values at once, with the C library's bits.
//!
//! A softmax computes one exponential per logit, and Rust's `f32::exp` is a
//! call into the C library's `expf`, one value at a time: it took most of the
//! softmax in lecture 7's attention. Every lecture's numbers hang on those
//! bits, so the vector form here is glibc's `expf` itself
//! (`sysdeps/ieee754/flt-32/e_expf.c` since glibc 2.27, with the table of
//! `e_exp2f_data.c`), four lanes of f64 at a time. On x86-64, glibc runs the
//! copy of that file compiled with FMA (`__expf_fma`) wherever the CPU has FMA
//! and AVX2, and GCC fused its multiply-adds there as `exp4` below does: the
//! same operations, rounded alike, so the same bits.
//!
//! Used only where that holds: glibc on x86-64 Linux, a CPU with AVX2 and
//! FMA, and a check at first use that `exp4` and `f32::exp` agree on a spread
//! of inputs (another C library, or another compilation of this one, fails it
//! and keeps `f32::exp`). The tests compare every 61st float of all 2³²
//! (`every_float_has_libms_bits` compares all of them).

/// `values[i] = values[i].exp()`, each with `f32::exp`'s bits.
pub fn exp_in_place(values: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    if glibc::usable() {
        // SAFETY: `usable` found AVX2 and FMA.
        unsafe { glibc::exp_in_place(values) };
        return;
    }
    for v in values {
        *v = v.exp();
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// `__exp2f_data.invln2_scaled`: 32/ln 2, so that `k = round(x·32/ln 2)`.
    const INV_LN2_N: f64 = f64::from_bits(0x4047_1547_652b_82fe);
    /// `__exp2f_data.shift`: 1.5·2⁵², whose addition rounds to an integer.
    const SHIFT: f64 = f64::from_bits(0x4338_0000_0000_0000);
    /// `__exp2f_data.poly_scaled`: 2^(r/32) ≈ C0·r³ + C1·r² + C2·r + 1.
    const C0: f64 = f64::from_bits(0x3ebc_6af8_4b91_2394);
    const C1: f64 = f64::from_bits(0x3f2e_bfce_50fa_c4f3);
    const C2: f64 = f64::from_bits(0x3f96_2e42_ff0c_52d6);
    /// `__exp2f_data.tab`: the bits of 2^(i/32) less `i << 47`, so that adding
    /// `k << 47` gives 2^(k/32).
    const TABLE: [u64; 32] = [
        0x3ff0000000000000,
        0x3fefd9b0d3158574,
        0x3fefb5586cf9890f,
        0x3fef9301d0125b51,
        0x3fef72b83c7d517b,
        0x3fef54873168b9aa,
        0x3fef387a6e756238,
        0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715,
        0x3feef1a7373aa9cb,
        0x3feedea64c123422,
        0x3feece086061892d,
        0x3feebfdad5362a27,
        0x3feeb42b569d4f82,
        0x3feeab07dd485429,
        0x3feea47eb03a5585,
        0x3feea09e667f3bcd,
        0x3fee9f75e8ec5f74,
        0x3feea11473eb0187,
        0x3feea589994cce13,
        0x3feeace5422aa0db,
        0x3feeb737b0cdc5e5,
        0x3feec49182a3f090,
        0x3feed503b23e255d,
        0x3feee89f995ad3ad,
        0x3feeff76f2fb5e47,
        0x3fef199bdd85529c,
        0x3fef3720dcef9069,
        0x3fef5818dcfba487,
        0x3fef7c97337b9b5f,
        0x3fefa4afa2a490da,
        0x3fefd0765b6e4540,
    ];
    /// `top12(88.0)`: from here (|x| ≥ 88, infinities, NaN) glibc takes its
    /// special cases, which stay with `f32::exp`.
    const SPECIAL_TOP: u32 = 0x42b;

    /// Whether the vector form may stand in for `f32::exp` here.
    pub(super) fn usable() -> bool {
        static USABLE: OnceLock<bool> = OnceLock::new();
        *USABLE.get_or_init(|| {
            is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                // SAFETY: AVX2 and FMA checked just above.
                && unsafe { agrees_with_libm() }
        })
    }

    /// `exp4` against `f32::exp` on every 4099th float and around 0: a C library
    /// computed otherwise differs somewhere among these.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn agrees_with_libm() -> bool {
        let mut values: Vec<f32> = (0..=u32::MAX / 4099)
            .map(|i| f32::from_bits(i * 4099))
            .collect();
        values.extend((-4000..4000).map(|i| i as f32 / 1000.0));
        let expected: Vec<u32> = values.iter().map(|v| v.exp().to_bits()).collect();
        // SAFETY: AVX2 and FMA, as this function's.
        unsafe { exp_in_place(&mut values) };
        values
            .iter()
            .zip(&expected)
            .all(|(v, &e)| v.to_bits() == e || (v.is_nan() && f32::from_bits(e).is_nan()))
    }

    /// [`super::exp_in_place`], four values at a time; any four that include a
    /// special case one at a time by `f32::exp`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn exp_in_place(values: &mut [f32]) {
        let mut fours = values.chunks_exact_mut(4);
        for four in &mut fours {
            // SAFETY: `four` holds four floats.
            let x = unsafe { _mm_loadu_ps(four.as_ptr()) };
            let top = _mm_and_si128(
                _mm_srli_epi32::<20>(_mm_castps_si128(x)),
                _mm_set1_epi32(0x7ff),
            );
            let special = _mm_cmpgt_epi32(top, _mm_set1_epi32(SPECIAL_TOP as i32 - 1));
            if _mm_movemask_epi8(special) != 0 {
                for v in four.iter_mut() {
                    *v = v.exp();
                }
                continue;
            }
            // SAFETY: as above.
            unsafe { _mm_storeu_ps(four.as_mut_ptr(), exp4(x)) };
        }
        for v in fours.into_remainder() {
            *v = v.exp();
        }
    }

    /// e^x for four floats none of which is special, as `__expf_fma` computes it.
    #[inline(always)]
    unsafe fn exp4(x: __m128) -> __m128 {
        // SAFETY (of each intrinsic): only called from `exp_in_place`, which has AVX2 and FMA.
        unsafe {
            let xd = _mm256_cvtps_pd(x);
            let scale = _mm256_set1_pd(INV_LN2_N);
            // k = round(x·32/ln 2) and r = x·32/ln 2 − k, the product not rounded in either.
            let shifted = _mm256_fmadd_pd(scale, xd, _mm256_set1_pd(SHIFT));
            let ki = _mm256_castpd_si256(shifted);
            let kd = _mm256_sub_pd(shifted, _mm256_set1_pd(SHIFT));
            let r = _mm256_fmsub_pd(scale, xd, kd);
            // s = 2^(k/32): the table's entry for k mod 32, k's high bits in the exponent.
            let index = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
            let entry = _mm256_i64gather_epi64::<8>(TABLE.as_ptr() as *const i64, index);
            let s = _mm256_castsi256_pd(_mm256_add_epi64(entry, _mm256_slli_epi64::<47>(ki)));
            // 2^(r/32) ≈ (C0·r + C1)·r² + (C2·r + 1).
            let z = _mm256_fmadd_pd(_mm256_set1_pd(C0), r, _mm256_set1_pd(C1));
            let r2 = _mm256_mul_pd(r, r);
            let y = _mm256_fmadd_pd(_mm256_set1_pd(C2), r, _mm256_set1_pd(1.0));
            let y = _mm256_fmadd_pd(z, r2, y);
            _mm256_cvtpd_ps(_mm256_mul_pd(y, s))
        }
    }
}

#[cfg(test)]
mod tests {
    /// The vector form itself where the CPU has it (not `exp_in_place`, which
    /// would fall back to `f32::exp` if its check failed), else the fallback.
    fn exp_in_place(values: &mut [f32]) {
        #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: AVX2 and FMA checked just above.
            return unsafe { super::glibc::exp_in_place(values) };
        }
        super::exp_in_place(values)
    }

    /// Where the lanes agree with this machine's C library, `exp_in_place` takes them.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    fn the_lanes_are_taken_where_the_c_library_is_glibcs() {
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            assert!(
                super::glibc::usable(),
                "the check at first use rejected the lanes"
            );
        }
    }

    /// Every float from `first` in steps of `step`, through the lanes and
    /// `f32::exp`: the same bits (NaN as NaN).
    fn compare(first: u32, step: u32) {
        let mut bits = first as u64;
        let mut batch = Vec::with_capacity(1 << 16);
        while bits <= u32::MAX as u64 {
            batch.push(f32::from_bits(bits as u32));
            bits += step as u64;
            if batch.len() == batch.capacity() || bits > u32::MAX as u64 {
                let mut got = batch.clone();
                exp_in_place(&mut got);
                for (x, y) in batch.iter().zip(&got) {
                    let e = x.exp();
                    assert!(
                        e.to_bits() == y.to_bits() || (e.is_nan() && y.is_nan()),
                        "exp({x:e}) = {e:e} from libm, {y:e} in lanes"
                    );
                }
                batch.clear();
            }
        }
    }

    #[test]
    fn every_61st_float_has_libms_bits() {
        compare(17, 61);
    }

    /// All 2³² floats: `cargo test --release -p tensor every_float -- --ignored` (a minute).
    #[test]
    #[ignore]
    fn every_float_has_libms_bits() {
        compare(0, 1);
    }
}
