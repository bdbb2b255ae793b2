//! The Cephes `log`, `sin` and `cos` of `avx_mathfun.h`, one lane at a time.
//!
//! PyTorch's x86-64 wheels turn 16 uniforms into 16 normals with these
//! polynomials (`normal_fill_16_AVX2` in `ATen/native/cpu/DistributionTemplates.h`,
//! maths from `ATen/native/cpu/avx_mathfun.h`). GCC compiles that file with FMA
//! enabled and `-ffp-contract=fast`, so most `mul` + `add` pairs of the source
//! became single fused instructions. Which ones were fused was read off the
//! disassembly of `NormalFill16<float, true>` in torch 2.15's `libtorch_cpu.so`;
//! each `mul_add` below is one of those `vfmadd`/`vfnmadd`/`vfmsub`, and each
//! plain `*` then `+` stayed two roundings. Change one and about one normal in
//! a few hundred moves by an ulp.

/// `log(x)` for `x` in (0, 1], as `log256_ps` computes it after contraction.
#[inline(always)]
pub(super) fn log(x: f32) -> f32 {
    // The Cephes constants as the compiled library holds them (bit patterns, so
    // that no decimal-to-float rounding question arises).
    const SQRTHF: f32 = f32::from_bits(0x3f35_04f3); // 0.707106781186547524
    const P: [f32; 9] = [
        f32::from_bits(0x3d90_21bb), //  7.0376836292E-2
        f32::from_bits(0xbdeb_d1b8), // -1.1514610310E-1
        f32::from_bits(0x3def_251a), //  1.1676998740E-1
        f32::from_bits(0xbdfe_5d4f), // -1.2420140846E-1
        f32::from_bits(0x3e11_e9bf), //  1.4249322787E-1
        f32::from_bits(0xbe2a_ae50), // -1.6668057665E-1
        f32::from_bits(0x3e4c_ceac), //  2.0000714765E-1
        f32::from_bits(0xbe7f_fffc), // -2.4999993993E-1
        f32::from_bits(0x3eaa_aaaa), //  3.3333331174E-1
    ];
    const Q1: f32 = f32::from_bits(0xb95e_8083); // -2.12194440e-4
    const Q2: f32 = f32::from_bits(0x3f31_8000); //  0.693359375

    // x <= 0 gives NaN; callers pass 1 - u with u in [0, 1), so never.
    if x <= 0.0 {
        return f32::NAN;
    }
    let x = x.max(f32::MIN_POSITIVE);
    let bits = x.to_bits();
    // Split x = m * 2^e with m in [0.5, 1).
    let mut e = ((bits >> 23) as i32 - 0x7f) as f32 + 1.0;
    let mut m = f32::from_bits((bits & !0x7f80_0000) | 0.5f32.to_bits());
    // Below sqrt(1/2), use 2m - 1 and e - 1 so that the polynomial's argument stays small.
    let small = m < SQRTHF;
    let tmp = if small { m } else { 0.0 };
    m -= 1.0;
    e -= if small { 1.0 } else { 0.0 };
    m += tmp;

    let z = m * m;
    let mut y = P[0].mul_add(m, P[1]);
    for &p in &P[2..] {
        y = y.mul_add(m, p);
    }
    y *= m;
    y = y.mul_add(z, e * Q1);
    y = (-z).mul_add(0.5, y);
    e.mul_add(Q2, m + y)
}

/// `(sin(x), cos(x))` for `x` >= 0, as `sincos256_ps` computes them after contraction.
#[inline(always)]
pub(super) fn sincos(x: f32) -> (f32, f32) {
    const FOPI: f32 = f32::from_bits(0x3fa2_f983); // 4 / pi
                                                   // -pi/4 split in three so that j * DP1 and j * DP2 are exact.
    const DP1: f32 = f32::from_bits(0xbf49_0000); // -0.78515625
    const DP2: f32 = f32::from_bits(0xb97d_a000); // -2.4187564849853515625e-4
    const DP3: f32 = f32::from_bits(0xb322_2169); // -3.77489497744594108e-8
    const SIN_P: [f32; 3] = [
        f32::from_bits(0xb94c_a1f9), // -1.9515295891E-4
        f32::from_bits(0x3c08_839e), //  8.3321608736E-3
        f32::from_bits(0xbe2a_aaa3), // -1.6666654611E-1
    ];
    const COS_P: [f32; 3] = [
        f32::from_bits(0x37cc_f5ce), //  2.443315711809948E-005
        f32::from_bits(0xbab6_061a), // -1.388731625493765E-003
        f32::from_bits(0x3d2a_aaa5), //  4.166664568298827E-002
    ];
    const SIGN: u32 = 0x8000_0000;

    let sign_in = x.to_bits() & SIGN;
    let x = f32::from_bits(x.to_bits() & !SIGN);

    // The octant j (rounded up to even) picks the polynomial and the signs.
    let j = (((x * FOPI) as i32) + 1) & !1;
    let jf = j as f32;
    let sin_sign = sign_in ^ (((j & 4) as u32) << 29);
    let cos_sign = ((!(j - 2) & 4) as u32) << 29;
    let use_sin_poly = j & 2 == 0;

    // x - j*pi/4 in three pieces ("extended precision modular arithmetic").
    let x = jf.mul_add(DP1, x);
    let x = DP2.mul_add(jf, x);
    let x = jf.mul_add(DP3, x);
    let z = x * x;

    let mut c = COS_P[0].mul_add(z, COS_P[1]);
    c = c.mul_add(z, COS_P[2]);
    c *= z;
    c = z.mul_add(c, -(z * 0.5));
    c += 1.0;

    let mut s = SIN_P[0].mul_add(z, SIN_P[1]);
    s = s.mul_add(z, SIN_P[2]);
    s *= z;
    s = s.mul_add(x, x);

    // The AVX code selects with bit masks and subtractions; keep its +0.0 terms.
    let (s_part, c_part) = if use_sin_poly { (s, 0.0) } else { (0.0, c) };
    let sin = c_part + s_part;
    let cos = (s - s_part) + (c - c_part);
    (
        f32::from_bits(sin.to_bits() ^ sin_sign),
        f32::from_bits(cos.to_bits() ^ cos_sign),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The polynomials are float approximations: within a few ulps of the true values.
    #[test]
    fn log_is_close_to_libm() {
        for i in 1..=1000 {
            let x = i as f32 / 1000.0;
            let err = (log(x) as f64 - (x as f64).ln()).abs();
            assert!(
                err < 3e-7 * (1.0 + (x as f64).ln().abs()),
                "log({x}) off by {err}"
            );
        }
    }

    #[test]
    fn sincos_is_close_to_libm() {
        for i in 0..1000 {
            let x = i as f32 * std::f32::consts::TAU / 1000.0;
            let (s, c) = sincos(x);
            assert!((s as f64 - (x as f64).sin()).abs() < 3e-7, "sin({x})");
            assert!((c as f64 - (x as f64).cos()).abs() < 3e-7, "cos({x})");
        }
    }
}
