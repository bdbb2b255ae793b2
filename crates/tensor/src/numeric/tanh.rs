//! `tanh` on f32: one value evaluated in f64 and rounded once, and a slice of
//! them with AVX2 when the CPU has it.

use super::exp_taylor;

/// `tanh` of one `f32`, evaluated in f64 and rounded once.
///
/// Why not `f32::tanh`: glibc's `tanhf` is one ulp off the correctly rounded
/// value for about a quarter of inputs, and slow (an `expm1f` per call), while
/// PyTorch's SLEEF `tanh` is nearly always correctly rounded. The lectures'
/// nets call tanh thousands of times per step, so both the speed and the
/// agreement with PyTorch show.
///
/// There are no branches and no library calls, so a loop over a slice
/// vectorizes ([`Tensor::tanh`]): `tanh|x| = (1 − t)/(1 + t)` with
/// `t = e^{−2|x|}`, the exponential by range reduction (`e^y = 2^k·e^r`,
/// |r| ≤ ln2/2) and its Taylor series to r¹¹; the cases are selects. f64 carries
/// enough digits that `1 − t` loses nothing that matters down to |x| = 1e-4;
/// below that `x − x³/3` is exact to f64 precision.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    const SIGN: u64 = 1 << 63;
    let xd = x as f64;
    let abs = f64::from_bits(xd.to_bits() & !SIGN);
    // 1 − tanh(9.1) ≈ 2.5e-8 is under half an ulp of 1.0f32: clamping changes no result.
    let a = if abs < 9.1 { abs } else { 9.1 };
    let t = exp_taylor(-2.0 * a); // e^{-2|x|}, from e^{-18.2} to 1
    let big = (1.0 - t) / (1.0 + t);
    let small = a * (1.0 - a * a / 3.0);
    let magnitude = if a < 1e-4 { small } else { big };
    let out = f64::from_bits(magnitude.to_bits() | (xd.to_bits() & SIGN)) as f32;
    if x.is_nan() {
        x
    } else {
        out
    }
}

/// `dst[i] = tanh_f32(src[i])`, with AVX2 when the CPU has it (the same bits either way).
pub(crate) fn tanh_into(src: &[f32], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { tanh_slice_avx2(src, dst) };
        return;
    }
    tanh_slice(src, dst);
}

fn tanh_slice(src: &[f32], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = tanh_f32(s);
    }
}

/// The same loop compiled for AVX2, four f64 lanes at a time. No `mul_add` is
/// involved, so the results are the same bits as the plain loop's.
///
/// # Safety
/// The CPU must support AVX2 (the caller checks with `is_x86_feature_detected!`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tanh_slice_avx2(src: &[f32], dst: &mut [f32]) {
    tanh_slice(src, dst)
}

#[cfg(test)]
mod tanh_tests {
    use super::tanh_f32;

    /// The reference: libm's f64 tanh, rounded to f32 (correct except in rare ties).
    fn reference(x: f32) -> f32 {
        (x as f64).tanh() as f32
    }

    #[test]
    fn tanh_is_the_rounded_f64_value_nearly_everywhere() {
        let (mut total, mut exact) = (0u32, 0u32);
        let mut x = 1e-8f32;
        while x < 12.0 {
            for v in [x, -x] {
                let (got, want) = (tanh_f32(v), reference(v));
                assert!(
                    (got.to_bits() as i64 - want.to_bits() as i64).abs() <= 1,
                    "tanh({v}) = {got}, want {want}"
                );
                total += 1;
                exact += (got == want) as u32;
            }
            x = f32::from_bits(x.to_bits() + 101);
        }
        assert!(
            total - exact <= total / 100_000,
            "{} of {total} off by one ulp",
            total - exact
        );
    }

    #[test]
    fn tensor_tanh_equals_the_scalar_function() {
        // Whichever loop runs (AVX2 or not), each element is tanh_f32's bits.
        let xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.021).collect();
        let t = crate::Tensor::from_vec(xs.clone(), &[10, 100]);
        for (x, y) in xs.iter().zip(t.tanh().to_vec()) {
            assert_eq!(y.to_bits(), tanh_f32(*x).to_bits(), "at {x}");
        }
    }

    #[test]
    fn tanh_keeps_signed_zeros_saturates_and_passes_nan() {
        assert_eq!(tanh_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh_f32(1e-30), 1e-30);
        assert_eq!(tanh_f32(50.0), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }
}
