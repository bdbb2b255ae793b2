//! The numerical kernels behind some element-wise ops: a range-reduced `exp`,
//! glibc's `expf` in vector lanes ([`exp_in_place`], the same bits as `f32::exp`),
//! the error function and a fast `erfc` (GELU's gate), and a vectorizing `tanh`
//! with its AVX2 path ([`tanh`]). The ops themselves are listed in `elementwise.rs`;
//! this is how a few of them are computed fast and close to PyTorch's values.

mod expf;
mod tanh;

pub use expf::exp_in_place;

pub(crate) use tanh::{tanh_f32, tanh_into};

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

/// The standard normal CDF `Φ(x) = erfc(-x/√2) / 2` (GELU's gate), in f32:
/// [`erfc_fast`]'s fit with its exponent `−x²/2 + P(t)` carried in two parts,
/// so that rounding `x²` costs nothing in the tails. Measured against Φ in
/// f64: within 6 ulps (relative 4.2e-7) above −5.5, and relative 4.2e-7 plus
/// the fit's own 1.2e-7 down to −13, where the same fit in f64 was within
/// 1.2e-7 ([`erfc_fast`]); below −13, where Φ < 7e-39 is no longer a normal
/// f32, 0. Sixteen lanes and no f64 division: the f64 form took 6% of
/// lecture 7's `cpu` step.
#[inline(always)]
pub fn normal_cdf(x: f32) -> f32 {
    let a = x.abs().min(13.0);
    let z = a * std::f32::consts::FRAC_1_SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204
                                + t * (1.488_515_9 + t * (-0.822_152_2 + t * 0.170_872_77))))))));
    // −a²/2 = hi + (the rest): `high` keeps 12 bits of a, so its square is exact.
    let high = f32::from_bits(a.to_bits() & 0xffff_f000);
    let low = a - high;
    let hi = -0.5 * (high * high);
    let lo = p - (high * low + 0.5 * (low * low));
    let tail = 0.5 * t * exp_two_parts(hi, lo); // Φ(−a)
    let cdf = if x < 0.0 { tail } else { 1.0 - tail };
    if x.is_nan() {
        x
    } else if x < -13.0 {
        0.0
    } else {
        cdf
    }
}

/// `e^(hi + lo)` in f32 for `−90 < hi + lo ≤ 0` and `|lo| < 2`: `2^k · e^r` with
/// `r = hi − k·ln2 + lo` reduced before `lo` is added (Cody and Waite's split
/// of ln 2), and `e^r` by its Taylor series to degree 7.
#[inline(always)]
fn exp_two_parts(hi: f32, lo: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5·2^23: adding it rounds to an integer
    const LN2_HI: f32 = 0.693_359_4; // 9 bits: k·LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4;
    let shifted = (hi + lo) * std::f32::consts::LOG2_E + ROUND;
    let k = shifted - ROUND;
    let r = (hi - k * LN2_HI) - k * LN2_LO + lo;
    const INV: [f32; 8] = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
    ];
    let mut e = INV[7];
    for c in INV[..7].iter().rev() {
        e = e * r + c;
    }
    let k_int = shifted.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    e * f32::from_bits(((k_int + 127) as u32) << 23)
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

/// Defines `$name(args…, path)` running `$body` in a portable copy and, on
/// x86-64, copies compiled for AVX2 and AVX-512, chosen by `path`.
macro_rules! lane_kernel {
    ($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        lane_kernel!($(#[$doc])* $name($($arg: $ty),*) -> () $body);
    };
    ($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        $(#[$doc])*
        pub fn $name($($arg: $ty,)* path: SimdPath) -> $ret {
            #[inline(always)]
            fn each($($arg: $ty),*) -> $ret $body
            /// `each` compiled for AVX2.
            ///
            /// # Safety
            /// The CPU must support AVX2: the `match` below checks it before the call.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn avx2($($arg: $ty),*) -> $ret {
                each($($arg),*)
            }
            /// `each` compiled for AVX-512F.
            ///
            /// # Safety
            /// The CPU must support AVX-512F: the `match` below checks it before the call.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f")]
            fn avx512($($arg: $ty),*) -> $ret {
                each($($arg),*)
            }
            match path {
                #[cfg(target_arch = "x86_64")]
                SimdPath::Avx2 if std::arch::is_x86_feature_detected!("avx2") => {
                    // SAFETY: the CPU has AVX2, checked just above.
                    unsafe { avx2($($arg),*) }
                }
                #[cfg(target_arch = "x86_64")]
                SimdPath::Avx512 if std::arch::is_x86_feature_detected!("avx512f") => {
                    // SAFETY: the CPU has AVX-512F, checked just above.
                    unsafe { avx512($($arg),*) }
                }
                _ => each($($arg),*),
            }
        }
    };
}

/// How many partial results [`max_blocked`] and [`sum_f64_blocked`] keep:
/// two AVX-512 registers of f32 or f64 lanes, enough independent chains to
/// hide an add's latency.
const BLOCK: usize = 16;

lane_kernel!(
    /// The largest element of `xs` (NaNs skipped, `−∞` if there is none), as
    /// `xs.iter().fold(−∞, f32::max)` gives it, taken in [`BLOCK`] interleaved
    /// running maxima: the fold is one chain of dependent steps, 4 cycles
    /// each, and a 50,304-class row took 67 µs that way. The maximum of a set
    /// does not depend on the order it is taken in, so this is the same value.
    max_blocked(xs: &[f32]) -> f32 {
        let mut acc = [f32::NEG_INFINITY; BLOCK];
        let chunks = xs.chunks_exact(BLOCK);
        let rest = chunks.remainder();
        for chunk in chunks {
            for (a, &x) in acc.iter_mut().zip(chunk) {
                *a = a.max(x);
            }
        }
        for (a, &x) in acc.iter_mut().zip(rest) {
            *a = a.max(x);
        }
        acc.iter().copied().fold(f32::NEG_INFINITY, f32::max)
    }
);

/// `Σ term(x)` over `xs` in f64, in [`BLOCK`] interleaved partial sums
/// (element `i` goes to sum `i mod BLOCK`) that are then added in halves: a
/// fixed order, so the same bits on every path and thread count.
#[inline(always)]
fn blocked_sum(xs: &[f32], term: impl Fn(f32) -> f64) -> f64 {
    let mut acc = [0f64; BLOCK];
    let chunks = xs.chunks_exact(BLOCK);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += term(x);
        }
    }
    for (a, &x) in acc.iter_mut().zip(rest) {
        *a += term(x);
    }
    let mut width = BLOCK / 2;
    while width > 0 {
        for k in 0..width {
            acc[k] += acc[k + width];
        }
        width /= 2;
    }
    acc[0]
}

lane_kernel!(
    /// `Σ xs` in f64, in [`blocked_sum`]'s order. Against the in-order f64
    /// sum, the two differ by at most `n·2⁻⁵²` of the sum of magnitudes, far
    /// under an f32 ulp (`2⁻²⁴`) for any row a model has; the in-order sum is
    /// one chain of dependent adds (67 µs for a 50,304-class row).
    sum_f64_blocked(xs: &[f32]) -> f64 {
        blocked_sum(xs, |x| x as f64)
    }
);

lane_kernel!(
    /// `Σ x²` in f64 (each square exact in f64), in [`blocked_sum`]'s order.
    sum_squares_f64_blocked(xs: &[f32]) -> f64 {
        blocked_sum(xs, |x| x as f64 * x as f64)
    }
);

/// Defines `$name(src, dst, path)`: `dst[i] = $body` with `$x = src[i]`, a
/// [`lane_kernel!`] over one slice.
macro_rules! slice_kernel {
    ($(#[$doc:meta])* $name:ident, |$x:ident| $body:expr) => {
        lane_kernel!(
            $(#[$doc])*
            $name(src: &[f32], dst: &mut [f32]) {
                assert_eq!(src.len(), dst.len(), "{}: lengths differ", stringify!($name));
                for (d, &$x) in dst.iter_mut().zip(src) {
                    *d = $body;
                }
            }
        );
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

/// `e^y` for `y` in [-700, 0] to about 1e-14 relative, with no branch or
/// library call: `2^k·e^r`, |r| ≤ ln2/2, and e^r by its Taylor series to r¹¹.
#[inline(always)]
pub(super) fn exp_taylor(y: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1; // ln 2 split so k·LN2_HI is exact
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    // Adding 1.5·2^52 rounds to an integer and leaves it in the low mantissa bits.
    const SHIFTER: f64 = 6_755_399_441_055_744.0;
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
    let kd = y * std::f64::consts::LOG2_E + SHIFTER;
    let k = kd - SHIFTER; // round(y / ln 2), in -1010..=0
    let r = y - k * LN2_HI - k * LN2_LO;
    let mut p = C[0];
    for &c in &C[1..] {
        p = p * r + c;
    }
    // 2^k from k's bits in kd: k + 1023 is the biased exponent.
    p * f64::from_bits(kd.to_bits().wrapping_add(1023) << 52)
}

/// `√(2/π)` as PyTorch builds it for the tanh GELU: `√2 · (2/√π) · 0.5` in f32.
const GELU_TANH_BETA: f32 = std::f32::consts::SQRT_2 * std::f32::consts::FRAC_2_SQRT_PI * 0.5;
/// The cubic's coefficient in the tanh GELU.
const GELU_TANH_KAPPA: f32 = 0.044715;

/// GPT-2's GELU, `F.gelu(x, approximate='tanh')`:
/// `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`, in f32 steps as PyTorch's.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    let inner = GELU_TANH_BETA * (x + GELU_TANH_KAPPA * (x * x * x));
    0.5 * x * (1.0 + tanh_f32(inner))
}

/// The tanh GELU's derivative,
/// `(1 + t)/2 + x/2 · sech²(u) · √(2/π) · (1 + 3·0.044715 x²)` with
/// `u = √(2/π)(x + 0.044715 x³)` and `t = tanh u`, in f64 and rounded once.
/// `1 + t` and `sech² u` come from `e = e^{−2|u|}` without cancellation
/// (`2/(1 + e)` or `2e/(1 + e)`, and `4e/(1 + e)²`), so the far negative
/// tail, where `1 + tanh u` in f64 is only noise, is right too. Within one
/// ulp of the form through libm's f64 `tanh` where that form is itself
/// accurate (`tests::gelu_tanh_grad_*`).
#[inline(always)]
pub fn gelu_tanh_grad(x: f32) -> f32 {
    let x = x as f64;
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let u = c * (x + 0.044715 * x * x * x);
    // exp_taylor's range; e^{-700} is far below anything an f32 keeps.
    let e = exp_taylor((-2.0 * u.abs()).max(-700.0));
    let one_plus_t = if u >= 0.0 {
        2.0 / (1.0 + e)
    } else {
        2.0 * e / (1.0 + e)
    };
    let sech2 = 4.0 * e / ((1.0 + e) * (1.0 + e));
    let grad = 0.5 * one_plus_t + 0.5 * x * sech2 * c * (1.0 + 3.0 * 0.044715 * x * x);
    // NaN in, NaN out (the selects above would give a number), and ±∞ gives
    // NaN, as PyTorch's `x/2·sech²u·…` does (∞·0).
    if x.is_finite() {
        grad as f32
    } else {
        f32::NAN
    }
}

/// `e^(x − shift)` rounded to f32, for `x ≤ shift` (a softmax's lane less its
/// maximum), through [`exp_taylor`] in f64: the correctly rounded value but
/// for rare near-ties, so within one ulp of `f32::exp` and nearly always
/// equal. Below −700 it is 0, as `expf` gives; NaN stays NaN.
#[inline(always)]
pub fn exp_shifted(x: f32, shift: f32) -> f32 {
    let y = (x - shift) as f64;
    // A comparison, not `max`, so that NaN passes through.
    let y = if y < -700.0 { -700.0 } else { y };
    exp_taylor(y) as f32
}

lane_kernel!(
    /// [`exp_shifted`] of every element of `src` into `dst`, on `path`; every
    /// path gives the same bits (no fused multiply-add).
    exp_shifted_into(src: &[f32], shift: f32, dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len(), "exp_shifted_into: lengths differ");
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = exp_shifted(x, shift);
        }
    }
);

/// Exact GELU's derivative `Φ(x) + x·φ(x)` given `Φ(x)` (kept from the
/// forward pass), with `φ(x) = e^{−x²/2}/√(2π)` in f32 ([`normal_cdf`]'s
/// exponential, its argument in two parts) and the sum in f64, rounded once.
/// Measured against the sum with φ in f64: off by at most 1.5e-7·|x·φ(x)|
/// beyond the final rounding (φ's relative error; many ulps of the result only
/// where the sum cancels to 0, near x = −0.75, as 3.7e-8). Past |x| = 13,
/// φ(x) < 2e-38 is taken as 0.
#[inline(always)]
pub fn gelu_grad(x: f32, cdf: f32) -> f32 {
    const INV_SQRT_2PI: f32 = 0.398_942_3;
    let a = x.abs().min(13.0);
    // −a²/2 = hi + lo, as in `normal_cdf`.
    let high = f32::from_bits(a.to_bits() & 0xffff_f000);
    let low = a - high;
    let pdf = exp_two_parts(-0.5 * (high * high), -(high * low + 0.5 * (low * low))) * INV_SQRT_2PI;
    let pdf = if x.abs() > 13.0 { 0.0 } else { pdf };
    let grad = (cdf as f64 + x as f64 * pdf as f64) as f32;
    // ±∞ gives NaN, as PyTorch's `cdf + x·pdf` does (∞·0); NaN stays NaN.
    if x.is_finite() {
        grad
    } else {
        f32::NAN
    }
}

lane_kernel!(
    /// [`gelu_grad`] of every `(x, cdf)` pair into `dst`, on `path`; every path
    /// gives the same bits.
    gelu_grad_into(x: &[f32], cdf: &[f32], dst: &mut [f32]) {
        assert!(
            x.len() == dst.len() && cdf.len() == dst.len(),
            "gelu_grad_into: lengths differ"
        );
        for ((d, &x), &c) in dst.iter_mut().zip(x).zip(cdf) {
            *d = gelu_grad(x, c);
        }
    }
);

lane_kernel!(
    /// `x·Φ(x)` into `out` and `Φ(x)` into `cdf` for every element, in one pass: exact
    /// GELU's forward and what its backward keeps ([`gelu_into`]'s and
    /// [`normal_cdf_into`]'s bits).
    gelu_and_cdf_into(src: &[f32], out: &mut [f32], cdf: &mut [f32]) {
        assert!(
            src.len() == out.len() && src.len() == cdf.len(),
            "gelu_and_cdf_into: lengths differ"
        );
        for ((o, c), &x) in out.iter_mut().zip(cdf.iter_mut()).zip(src) {
            *c = normal_cdf(x);
            *o = x * *c;
        }
    }
);

lane_kernel!(
    /// `grad · gelu_grad(x, cdf)` for every element, in one pass: exact GELU's backward
    /// ([`gelu_grad_into`], then the product, rounded alike).
    gelu_backward_into(x: &[f32], cdf: &[f32], grad: &[f32], dst: &mut [f32]) {
        assert!(
            x.len() == dst.len() && cdf.len() == dst.len() && grad.len() == dst.len(),
            "gelu_backward_into: lengths differ"
        );
        for (((d, &x), &c), &g) in dst.iter_mut().zip(x).zip(cdf).zip(grad) {
            *d = g * gelu_grad(x, c);
        }
    }
);

slice_kernel!(
    /// [`gelu_tanh`] of every element.
    gelu_tanh_into,
    |x| gelu_tanh(x)
);

slice_kernel!(
    /// [`gelu_tanh_grad`] of every element.
    gelu_tanh_grad_into,
    |x| gelu_tanh_grad(x)
);

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

    /// Ulps between two finite f32s of one sign; 0 for ±0 (an underflowed
    /// gradient's sign is noise).
    fn ulps(a: f32, b: f32) -> i64 {
        if a == b {
            0
        } else {
            (a.to_bits() as i32 as i64 - b.to_bits() as i32 as i64).abs()
        }
    }

    /// The backward's plain form, as it was written before the kernel: libm's
    /// f64 `tanh`, `1 + t` and `1 − t²` as they stand.
    fn gelu_tanh_grad_libm(x: f32) -> f32 {
        let x = x as f64;
        let c = (2.0 / std::f64::consts::PI).sqrt();
        let t = (c * (x + 0.044715 * x * x * x)).tanh();
        (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)) as f32
    }

    // Where `1 + tanh u` keeps its digits (x ≥ −4: 1 + t ≥ 1e-5), the kernel
    // is within one ulp of the plain form, and equal nearly everywhere.
    #[test]
    fn gelu_tanh_grad_is_within_one_ulp_of_the_libm_form() {
        let (mut total, mut off) = (0u32, 0u32);
        for i in -400_000..=1_200_000 {
            let x = i as f32 * 1e-5;
            let (got, want) = (gelu_tanh_grad(x), gelu_tanh_grad_libm(x));
            assert!(
                ulps(got, want) <= 1,
                "gelu_tanh_grad({x}) = {got}, plain {want}"
            );
            total += 1;
            off += (got != want) as u32;
        }
        assert!(off <= total / 1000, "{off} of {total} off by one ulp");
    }

    // Past that, the plain form's `1 + t` is rounding noise; the kernel
    // matches the same cancellation-free formula with libm's `exp`, to one ulp,
    // all the way to where the gradient underflows.
    #[test]
    fn gelu_tanh_grad_keeps_the_far_negative_tail() {
        for i in 0..=200_000 {
            let x = -4.0 - i as f32 * 1e-4; // down to −24
            let xd = x as f64;
            let c = (2.0 / std::f64::consts::PI).sqrt();
            let u = c * (xd + 0.044715 * xd * xd * xd);
            let e = (2.0 * u).exp(); // u < 0
            let want = (e / (1.0 + e)
                + 0.5 * xd * 4.0 * e / ((1.0 + e) * (1.0 + e))
                    * c
                    * (1.0 + 3.0 * 0.044715 * xd * xd)) as f32;
            let got = gelu_tanh_grad(x);
            assert!(
                ulps(got, want) <= 1,
                "gelu_tanh_grad({x}) = {got}, want {want}"
            );
        }
        assert!(gelu_tanh_grad(f32::NAN).is_nan());
        assert!(gelu_tanh_grad(f32::INFINITY).is_nan());
        assert!(gelu_grad(f32::NEG_INFINITY, 0.0).is_nan());
        assert_eq!(gelu_tanh_grad(f32::MAX), 1.0);
        assert_eq!(gelu_tanh_grad(-1e6), 0.0);
    }

    // GELU's derivative against the same sum in f64 with libm's `exp`: φ's
    // error in f32 (relative, `normal_cdf`'s exponential) shows in x·φ(x),
    // and the sum adds half an ulp; where the sum cancels (near x ≈ −0.75)
    // that is many of the result's ulps. The bound in `gelu_grad`'s doc.
    #[test]
    fn gelu_grad_is_within_its_stated_error() {
        let mut worst = 0f64;
        for i in -120_000..=120_000 {
            let x = i as f32 * 1e-4;
            let cdf = normal_cdf(x);
            let got = gelu_grad(x, cdf) as f64;
            let xd = x as f64;
            let x_pdf = xd * ((-0.5 * xd * xd).exp() / (2.0 * std::f64::consts::PI).sqrt());
            let want = cdf as f64 + x_pdf;
            let half_ulp = (want as f32).abs() as f64 * f32::EPSILON as f64 / 2.0;
            let beyond_rounding = ((got - want).abs() - half_ulp).max(0.0);
            worst = worst.max(beyond_rounding / x_pdf.abs().max(f64::MIN_POSITIVE));
        }
        assert!(
            worst <= 1.5e-7,
            "{worst:e} of |x·φ(x)| beyond the sum's rounding"
        );
    }

    // Softmax's exp against libm's `expf`: within one ulp over the whole range
    // where e^y is a normal f32, and equal but for one in a thousand (measured:
    // 968 of 1,412,792, 0.07%); 0 below, as `expf` underflows.
    #[test]
    fn exp_shifted_is_within_one_ulp_of_expf() {
        let (mut total, mut off) = (0u32, 0u32);
        let mut y = -87.0f32;
        while y <= 0.0 {
            let (got, want) = (exp_shifted(y, 0.0), y.exp());
            assert!(ulps(got, want) <= 1, "exp({y}) = {got}, expf {want}");
            total += 1;
            off += (got != want) as u32;
            y = if y < -1e-3 {
                f32::from_bits(y.to_bits() - 97)
            } else {
                y + 1e-5
            };
        }
        assert!(off <= total / 1000, "{off} of {total} off by one ulp");
        assert_eq!(exp_shifted(-1e4, 0.0), 0.0);
        assert_eq!(exp_shifted(f32::NEG_INFINITY, 0.0), 0.0);
        assert!(exp_shifted(f32::NAN, 0.0).is_nan());
        assert_eq!(exp_shifted(3.5, 3.5), 1.0);
    }

    // Φ in f32 against Φ in f64: from the series (1 − erf(x/√2) loses
    // nothing above −5.5 at this bound), and below from `erfc_fast` in f64,
    // whose own error (1.2e-7) the bound there adds. The bound in the doc.
    #[test]
    fn normal_cdf_is_within_its_stated_error() {
        let (mut worst_ulps, mut worst_body, mut worst_tail) = (0i64, 0f64, 0f64);
        let mut x = -13.0f32;
        while x <= 13.0 {
            let xd = x as f64 * std::f64::consts::FRAC_1_SQRT_2;
            let got = normal_cdf(x);
            if x > -5.5 {
                let want = 0.5 * (1.0 + erf(xd));
                worst_body = worst_body.max((got as f64 - want).abs() / want);
                worst_ulps = worst_ulps.max(ulps(got, want as f32));
            } else {
                let want = 0.5 * erfc_fast(-xd);
                worst_tail = worst_tail.max((got as f64 - want).abs() / want);
            }
            x += 1.3e-4;
        }
        assert!(
            worst_ulps <= 6 && worst_body <= 4.2e-7 && worst_tail <= 4.2e-7 + 1.2e-7,
            "{worst_ulps} ulps, relative {worst_body:e}; below -5.5 {worst_tail:e}"
        );
        assert_eq!(normal_cdf(-13.5), 0.0);
        assert_eq!(normal_cdf(f32::NEG_INFINITY), 0.0);
        assert_eq!(normal_cdf(f32::INFINITY), 1.0);
        assert_eq!(normal_cdf(30.0), 1.0);
        assert!(normal_cdf(f32::NAN).is_nan());
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
        // gelu_grad takes Φ(x) beside x: here Φ of the same sweep.
        let cdf: Vec<f32> = x.iter().map(|&x| normal_cdf(x)).collect();
        let want: Vec<u32> = x
            .iter()
            .zip(&cdf)
            .map(|(&x, &c)| gelu_grad(x, c).to_bits())
            .collect();
        for path in SimdPath::available() {
            let mut out = vec![0f32; x.len()];
            gelu_grad_into(&x, &cdf, &mut out, path);
            let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            assert_eq!(
                first,
                None,
                "gelu_grad on {path:?} differs at x = {:?}",
                first.map(|i| x[i])
            );
        }
        let kernels: [Row; 5] = [
            (
                "exp_shifted",
                |s, d, p| exp_shifted_into(s, 12.0, d, p),
                |x| exp_shifted(x, 12.0),
            ),
            ("normal_cdf", normal_cdf_into, normal_cdf),
            ("gelu", gelu_into, |x| x * normal_cdf(x)),
            ("gelu_tanh", gelu_tanh_into, gelu_tanh),
            ("gelu_tanh_grad", gelu_tanh_grad_into, gelu_tanh_grad),
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

    /// The blocked maximum is the fold's value, NaNs and all; the blocked f64
    /// sum is within `n·2⁻⁵²` of the in-order one (relative to the sum of
    /// magnitudes) and has the same bits on every path. Rows of every length
    /// up to 3 blocks and a 50,304-class one.
    #[test]
    fn blocked_max_and_sum_agree_with_the_in_order_ones() {
        let mut g = crate::rng::TorchGenerator::manual_seed(7);
        let mut rows: Vec<Vec<f32>> = (0..=3 * BLOCK).map(|n| g.randn(&[n]).to_vec()).collect();
        rows.push(g.randn(&[50_304]).mul_scalar(8.0).to_vec());
        let mut special = rows[40].clone();
        special[3] = f32::NAN;
        special[17] = f32::INFINITY;
        rows.push(special);
        rows.push(vec![f32::NAN; 20]);
        rows.push(vec![f32::NEG_INFINITY, -0.0, 0.0, -1.0]);
        for row in &rows {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let in_order: f64 = row.iter().map(|&x| x as f64).sum();
            let magnitude: f64 = row.iter().map(|&x| (x as f64).abs()).sum();
            let portable = sum_f64_blocked(row, SimdPath::Portable);
            for path in SimdPath::available() {
                let got = max_blocked(row, path);
                assert!(
                    got.to_bits() == max.to_bits() || (got == 0.0 && max == 0.0),
                    "max of {} elements on {path:?}: {got} vs {max}",
                    row.len()
                );
                let sum = sum_f64_blocked(row, path);
                assert_eq!(sum.to_bits(), portable.to_bits(), "sum on {path:?}");
                let bound = row.len() as f64 * f64::EPSILON * magnitude;
                assert!(
                    (sum - in_order).abs() <= bound
                        || sum.to_bits() == in_order.to_bits()
                        || (sum.is_nan() && in_order.is_nan()),
                    "sum of {} elements: {sum} vs {in_order} in order",
                    row.len()
                );
            }
        }
    }
}
