//! The numerical kernels behind some element-wise ops: a range-reduced `exp`,
//! the error function and a fast `erfc` (GELU's gate), and a vectorizing `tanh`
//! with its AVX2 path. The ops themselves are listed in `elementwise.rs`; this is
//! how a few of them are computed fast and close to PyTorch's values.

/// `erfc(x)` with relative error below 1.2e-7 for every x: the Chebyshev fit
/// `t·exp(-x² + P(t))`, `t = 1/(1 + |x|/2)`, of Numerical Recipes (`erfcc`),
/// evaluated in f64 with a single `exp`.
#[inline(always)]
pub fn erfc_fast(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * exp_nonpositive(-z * z + p);
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// `e^x` for `x <= 0` to a relative error below 1e-9: `2^k · e^r` with
/// `|r| <= ln2/2` and e^r by its Taylor series to degree 9. Unlike the libm call
/// it is plain arithmetic, which the compiler vectorises across a tensor.
#[inline(always)]
fn exp_nonpositive(x: f64) -> f64 {
    // exp(-700) ≈ 1e-304 stands in for anything smaller; no branch, so loops vectorise.
    let x = x.max(-700.0);
    // Adding 1.5·2^52 rounds to an integer k, which then sits in the low bits.
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let shifted = x * std::f64::consts::LOG2_E + ROUND;
    let k = shifted - ROUND;
    let r = x - k * std::f64::consts::LN_2;
    // 1 + r(1 + r/2(1 + r/3(… (1 + r/9)))), with the divisions as constants.
    const INV: [f64; 10] = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 3.0,
        1.0 / 4.0,
        1.0 / 5.0,
        1.0 / 6.0,
        1.0 / 7.0,
        1.0 / 8.0,
        1.0 / 9.0,
    ];
    let mut p = 1.0;
    for inv in INV[1..].iter().rev() {
        p = 1.0 + p * r * inv;
    }
    let k_int = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    p * f64::from_bits(k_int.wrapping_add(1023) << 52)
}

/// The standard normal CDF `Φ(x) = erfc(-x/√2) / 2`, to a relative error below
/// 1.2e-7 in both tails (GELU's gate).
#[inline(always)]
pub fn normal_cdf(x: f32) -> f32 {
    (0.5 * erfc_fast(-(x as f64) * std::f64::consts::FRAC_1_SQRT_2)) as f32
}

/// A compiled copy of a slice kernel ([`normal_cdf_into`], [`gelu_into`]):
/// the widest the CPU has, or a narrower one a test forces. Every copy gives
/// the same bits, because the kernels use no fused multiply-add: each path
/// rounds every operation alike, only more lanes at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdPath {
    /// Plain Rust, for any CPU (ARM, x86 without AVX2).
    Portable,
    /// x86-64 with AVX2: four f64 lanes.
    Avx2,
    /// x86-64 with AVX-512F: eight f64 lanes.
    Avx512,
}

impl SimdPath {
    /// The widest path this CPU runs.
    pub fn best() -> SimdPath {
        *SimdPath::available().last().expect("the portable path")
    }

    /// Every path this CPU runs, narrowest first.
    pub fn available() -> Vec<SimdPath> {
        let mut paths = vec![SimdPath::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                paths.push(SimdPath::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                paths.push(SimdPath::Avx512);
            }
        }
        paths
    }
}

/// Defines `$name(src, dst, path)`: `dst[i] = $body` with `$x = src[i]`, in a
/// portable copy and, on x86-64, copies compiled for AVX2 and AVX-512.
macro_rules! slice_kernel {
    ($(#[$doc:meta])* $name:ident, |$x:ident| $body:expr) => {
        $(#[$doc])*
        pub fn $name(src: &[f32], dst: &mut [f32], path: SimdPath) {
            assert_eq!(src.len(), dst.len(), "{}: lengths differ", stringify!($name));
            #[inline(always)]
            fn each(src: &[f32], dst: &mut [f32]) {
                for (d, &$x) in dst.iter_mut().zip(src) {
                    *d = $body;
                }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn avx2(src: &[f32], dst: &mut [f32]) {
                each(src, dst)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f")]
            fn avx512(src: &[f32], dst: &mut [f32]) {
                each(src, dst)
            }
            match path {
                #[cfg(target_arch = "x86_64")]
                SimdPath::Avx2 if std::arch::is_x86_feature_detected!("avx2") => {
                    // SAFETY: the CPU has AVX2, checked just above.
                    unsafe { avx2(src, dst) }
                }
                #[cfg(target_arch = "x86_64")]
                SimdPath::Avx512 if std::arch::is_x86_feature_detected!("avx512f") => {
                    // SAFETY: the CPU has AVX-512F, checked just above.
                    unsafe { avx512(src, dst) }
                }
                _ => each(src, dst),
            }
        }
    };
}

slice_kernel!(
    /// [`normal_cdf`] of every element.
    normal_cdf_into,
    |x| normal_cdf(x)
);

slice_kernel!(
    /// `x·Φ(x)`, exact GELU, of every element.
    gelu_into,
    |x| x * normal_cdf(x)
);

/// The error function in f64, accurate to about 1e-15, so rounding it to f32 gives
/// the correctly rounded value almost always. Rust's standard library has no `erf`.
///
/// Below 3 it sums the series `erf(x) = 2/√π · e^(-x²) · Σ (2x²)^n x / (1·3·…·(2n+1))`,
/// whose terms are all positive (no cancellation). From 3 up it evaluates the
/// continued fraction `erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))`.
pub fn erf(x: f64) -> f64 {
    let ax = x.abs();
    if ax.is_nan() {
        return x;
    }
    let x2 = ax * ax;
    let value = if ax < 3.0 {
        let mut term = ax;
        let mut sum = ax;
        let mut n = 0.0;
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * x2 / (2.0 * n + 1.0);
            sum += term;
        }
        std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp() * sum
    } else if ax < 7.0 {
        let mut fraction = ax;
        for k in (1..=60).rev() {
            fraction = ax + (k as f64 * 0.5) / fraction;
        }
        // 1/√π = (2/√π) / 2
        1.0 - 0.5 * std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp() / fraction
    } else {
        1.0
    };
    value.copysign(x)
}

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
    const LN2_HI: f64 = 6.931_471_803_691_238e-1; // ln 2 split so k·LN2_HI is exact
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    // Adding 1.5·2^52 rounds to an integer and leaves it in the low mantissa bits.
    const SHIFTER: f64 = 6_755_399_441_055_744.0;
    const SIGN: u64 = 1 << 63;
    // 1/11!, 1/10!, …, 1/1!, 1/0!: Horner's coefficients for e^r.
    const C: [f64; 12] = [
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ];
    let xd = x as f64;
    let abs = f64::from_bits(xd.to_bits() & !SIGN);
    // 1 − tanh(9.1) ≈ 2.5e-8 is under half an ulp of 1.0f32: clamping changes no result.
    let a = if abs < 9.1 { abs } else { 9.1 };
    let y = -2.0 * a; // in [-18.2, 0]
    let kd = y * std::f64::consts::LOG2_E + SHIFTER;
    let k = kd - SHIFTER; // round(y / ln 2), in -26..=0
    let r = y - k * LN2_HI - k * LN2_LO;
    let mut p = C[0];
    for &c in &C[1..] {
        p = p * r + c;
    }
    // 2^k from k's bits in kd: k + 1023 is the biased exponent.
    let scale = f64::from_bits(kd.to_bits().wrapping_add(1023) << 52);
    let t = p * scale; // e^{-2|x|}
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_nonpositive_is_within_1e_9() {
        for i in 0..=70_000 {
            let x = -(i as f64) / 1000.0;
            let (got, want) = (exp_nonpositive(x), x.exp());
            assert!(
                ((got - want) / want).abs() < 1e-9,
                "exp({x}): {got} vs {want}"
            );
        }
    }

    // The fast erfc against 1 - erf(x) from the f64 series. That reference has
    // an absolute error near 1e-16, hence the floor, which matters only past x ≈ 3.
    #[test]
    fn erfc_fast_is_within_its_stated_error() {
        for i in -6000..=6000 {
            let x = i as f64 / 1000.0;
            let want = 1.0 - erf(x);
            let got = erfc_fast(x);
            assert!(
                (got - want).abs() <= 1.2e-7 * want + 1e-15,
                "erfc({x}): {got} vs {want}"
            );
        }
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;

    /// Each compiled path of each kernel gives the portable path's bits, and
    /// the portable path gives the scalar function's, over a sweep of
    /// [-12, 12] and the special values.
    #[test]
    fn every_path_gives_the_portable_bits() {
        let mut x: Vec<f32> = (0..48_001).map(|i| i as f32 / 2000.0 - 12.0).collect();
        x.extend([0.0, -0.0, f32::MIN_POSITIVE, 1e-30, -1e-30, 40.0, -40.0]);
        x.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN,
        ]);
        type Kernel = fn(&[f32], &mut [f32], SimdPath);
        type Row = (&'static str, Kernel, fn(f32) -> f32);
        let kernels: [Row; 2] = [
            ("normal_cdf", normal_cdf_into, normal_cdf),
            ("gelu", gelu_into, |x| x * normal_cdf(x)),
        ];
        for (name, kernel, scalar) in kernels {
            let want: Vec<u32> = x.iter().map(|&x| scalar(x).to_bits()).collect();
            for path in SimdPath::available() {
                let mut out = vec![0f32; x.len()];
                kernel(&x, &mut out, path);
                let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                let first = got.iter().zip(&want).position(|(a, b)| a != b);
                assert_eq!(
                    first,
                    None,
                    "{name} on {path:?} differs at x = {:?}",
                    first.map(|i| x[i])
                );
            }
        }
    }
}
