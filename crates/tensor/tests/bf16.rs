//! bfloat16 products against a float64 reference of the bfloat16-rounded operands, and every
//! path the machine has (`avx512_bf16`, AVX2, portable) against the plain portable product, bit
//! for bit.

use tensor::bf16::{
    from_bf16, kernel, matmul_bf16, matmul_bf16_on, matmul_bf16_portable, round_bf16, to_bf16, Path,
};

/// Deterministic values in [-scale, scale).
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32 * scale
        })
        .collect()
}

#[test]
fn rounding_is_to_nearest_even_as_pytorchs_bfloat16() {
    assert_eq!(to_bf16(1.0), 0x3f80);
    assert_eq!(to_bf16(-2.0), 0xc000);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.
    assert_eq!(round_bf16(1.0 + 2f32.powi(-8)), 1.0);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even 1 + 2^-6.
    assert_eq!(round_bf16(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
    assert_eq!(
        round_bf16(1.0 + 2f32.powi(-8) + 2f32.powi(-20)),
        1.0 + 2f32.powi(-7)
    );
    assert!(from_bf16(to_bf16(f32::NAN)).is_nan());
    assert_eq!(round_bf16(f32::INFINITY), f32::INFINITY);
    assert_eq!(round_bf16(f32::MAX), f32::INFINITY); // rounds past the largest bfloat16
    assert_eq!(round_bf16(1e-40), 0.0); // denormal: read as zero, as vdpbf16ps reads it
}

/// |C − C₆₄| ≤ (k + 1) · 2⁻²⁴ · Σ|a·b| for each output: k rounded float32 additions of exact
/// products, against the float64 sum of the same bfloat16-rounded operands.
fn check_against_f64(m: usize, k: usize, n: usize, seed: u64) {
    let (a, b) = (values(m * k, seed, 3.0), values(k * n, seed + 1, 3.0));
    let c = matmul_bf16_portable(&a, &b, m, k, n);
    let mut worst: f64 = 0.0;
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut magnitude) = (0f64, 0f64);
            for p in 0..k {
                let term = round_bf16(a[i * k + p]) as f64 * round_bf16(b[p * n + j]) as f64;
                exact += term;
                magnitude += term.abs();
            }
            let bound = (k + 1) as f64 * 2f64.powi(-24) * magnitude;
            let error = (c[i * n + j] as f64 - exact).abs();
            assert!(
                error <= bound,
                "({i}, {j}): {} against {exact}, bound {bound}",
                c[i * n + j]
            );
            worst = worst.max(error / bound.max(f64::MIN_POSITIVE));
        }
    }
    println!("{m}×{k}×{n}: worst error {worst:.3} of the bound");
}

#[test]
fn the_portable_product_is_within_the_float32_sum_bound() {
    check_against_f64(7, 33, 45, 1);
    check_against_f64(64, 256, 96, 2);
    check_against_f64(3, 1, 5, 3);
}

#[test]
fn the_kernel_and_the_blocked_portable_path_equal_the_plain_one_bit_for_bit() {
    println!("kernel: {}", kernel());
    // Odd k, n not a multiple of 32, m not a multiple of 8; a large one; tiny values whose
    // products and sums are denormal (flushed by both); rows in more than one piece and k in
    // more than one pass (odd, with a remainder); few rows and a long k, where the threads
    // share the columns instead.
    let cases = [
        (0, 3, 2, 1.0),
        (2, 3, 0, 1.0),
        (1, 1, 1, 3.0),
        (9, 17, 33, 3.0),
        (130, 257, 70, 3.0),
        (256, 768, 256, 1.0),
        (5, 40, 40, 1e-19),
        (300, 1001, 70, 2.0),
        (40, 2000, 300, 1.0),
    ];
    for (seed, &(m, k, n, scale)) in cases.iter().enumerate() {
        let (a, b) = (
            values(m * k, seed as u64, scale),
            values(k * n, seed as u64 + 7, scale),
        );
        let plain = matmul_bf16_portable(&a, &b, m, k, n);
        let paths = [Path::Avx512Bf16, Path::Avx2, Path::Portable]
            .into_iter()
            .filter_map(|path| Some((path.name(), matmul_bf16_on(path, &a, &b, m, k, n)?)));
        for (path, fast) in paths {
            let same = fast
                .iter()
                .zip(&plain)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same,
                "{m}×{k}×{n} (scale {scale}): the {path} path differs from the plain portable one"
            );
        }
    }
}

/// `vdpbf16ps`'s order as fused multiply-adds without its flushes, as the AVX2 path adds
/// where its operands allow. k must be even: the pairs are whole, as the test's shapes make them.
fn fused_unflushed(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert!(
        k.is_multiple_of(2),
        "fused_unflushed takes whole pairs: k = {k} is odd"
    );
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for p in (0..k).step_by(2) {
                let (a_odd, b_odd) = (round_bf16(a[i * k + p + 1]), round_bf16(b[(p + 1) * n + j]));
                acc = a_odd.mul_add(b_odd, acc);
                acc = round_bf16(a[i * k + p]).mul_add(round_bf16(b[p * n + j]), acc);
            }
            c[i * n + j] = acc;
        }
    }
    c
}

/// Equal bits, or both NaN (an infinity minus an infinity).
fn same_values(x: &[f32], y: &[f32]) -> bool {
    x.iter()
        .zip(y)
        .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// The AVX2 path skips the flushes only where the exponents of A's and B's elements add to at
/// least −112 (every product and sum is a multiple of 2⁻¹²⁶). On that line's good side the
/// fused, unflushed sums equal the plain ones everywhere; one past it they do not (sums cancel
/// to denormals); and every path equals the plain portable one on both sides. Products past
/// float32's largest value (exponents 64 and 63) are taken back by the next sum, in the kernel
/// as in a fused multiply-add, on every path.
#[test]
fn the_avx2_path_fuses_only_where_that_changes_nothing() {
    let (m, k, n) = (24, 64, 40);
    // Elements ±(1 + i/128) · 2^e, exact in bfloat16, signs mixed so that sums cancel.
    let filled = |len: usize, exponent: i32, seed: u64| -> Vec<f32> {
        values(len, seed, 1.0)
            .iter()
            .map(|&u| {
                let significand = 1.0 + ((u.abs() * 128.0) as i32 % 128) as f32 / 128.0;
                significand.copysign(u) * 2f32.powi(exponent)
            })
            .collect()
    };
    let cases = [
        (-56, -56, true),
        (-57, -56, false),
        (63, 63, true),
        (64, 63, true),
    ];
    for (exponent_a, exponent_b, fused_is_exact) in cases {
        let (a, b) = (filled(m * k, exponent_a, 1), filled(k * n, exponent_b, 2));
        let plain = matmul_bf16_portable(&a, &b, m, k, n);
        assert_eq!(
            same_values(&fused_unflushed(&a, &b, m, k, n), &plain),
            fused_is_exact,
            "exponents {exponent_a} and {exponent_b}: fusing without flushes should {}change values",
            if fused_is_exact { "not " } else { "" }
        );
        for path in [Path::Avx512Bf16, Path::Avx2, Path::Portable] {
            if let Some(c) = matmul_bf16_on(path, &a, &b, m, k, n) {
                let same = same_values(&c, &plain);
                assert!(
                    same,
                    "exponents {exponent_a} and {exponent_b}: {} differs",
                    path.name()
                );
            }
        }
    }
}

/// Under `Precision::Bfloat16`, `Tensor::matmul` (2-D, with a transposed operand, and batched)
/// gives `matmul_bf16` of its operands, bit for bit; back under float32, sgemm again.
#[test]
fn the_precision_switch_sends_every_product_through_bfloat16() {
    use tensor::bf16::{precision, precision_scope, Precision};
    use tensor::Tensor;
    let (m, k, n) = (37, 70, 45);
    let a = Tensor::from_vec(values(m * k, 11, 2.0), &[m, k]);
    let bt = Tensor::from_vec(values(n * k, 12, 2.0), &[n, k]);
    let b = bt.transpose(0, 1); // (k, n), read in place
    let b_dense = b.contiguous().to_vec();
    let float32 = a.matmul(&b).to_vec();
    let scope = precision_scope(Precision::Bfloat16);
    assert_eq!(precision(), Precision::Bfloat16);
    let bf16 = a.matmul(&b).to_vec();
    let batched = Tensor::from_vec([a.to_vec(), a.to_vec()].concat(), &[2, m, k])
        .matmul(&b)
        .to_vec();
    drop(scope);
    assert_eq!(
        precision(),
        Precision::Float32,
        "the scope's end restores float32"
    );
    let want = matmul_bf16(&a.to_vec(), &b_dense, m, k, n);
    assert!(bf16
        .iter()
        .zip(&want)
        .all(|(x, y)| x.to_bits() == y.to_bits()));
    assert!(batched[..m * n]
        .iter()
        .chain(&batched[m * n..])
        .zip(want.iter().cycle())
        .all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_ne!(bf16, float32, "bfloat16 operands change the product");
    assert_eq!(a.matmul(&b).to_vec(), float32, "float32 again");
    assert!("float16".parse::<Precision>().is_err());
}

/// A scope is this thread's: another thread's products stay float32 meanwhile, and a nested
/// scope gives back the outer one's precision.
#[test]
fn a_precision_scope_holds_on_its_own_thread_only() {
    use tensor::bf16::{precision, precision_scope, Precision};
    let outer = precision_scope(Precision::Bfloat16);
    let elsewhere = std::thread::spawn(precision).join().unwrap();
    assert_eq!(elsewhere, Precision::Float32);
    {
        let _inner = precision_scope(Precision::Float32);
        assert_eq!(precision(), Precision::Float32);
    }
    assert_eq!(precision(), Precision::Bfloat16, "the inner scope's end");
    drop(outer);
    assert_eq!(precision(), Precision::Float32);
}

/// Each operand in memory by rows or by columns (a weight read as `W^T`, `dY^T` in a weight's
/// gradient) is packed from its own layout; all four give the plain path's values.
#[test]
fn transposed_operands_are_packed_to_the_same_values() {
    use tensor::bf16::{precision_scope, Precision};
    use tensor::Tensor;
    // Rows in two pieces, k in two passes, and large enough to be shared among the threads.
    let (m, k, n) = (150, 451, 41);
    let (a, b) = (values(m * k, 21, 2.0), values(k * n, 22, 2.0));
    let want = matmul_bf16_portable(&a, &b, m, k, n);
    let a_rows = Tensor::from_vec(a.clone(), &[m, k]);
    let b_rows = Tensor::from_vec(b.clone(), &[k, n]);
    // The same matrices, stored transposed and read through a transposed view.
    let a_cols = a_rows.transpose(0, 1).contiguous().transpose(0, 1);
    let b_cols = b_rows.transpose(0, 1).contiguous().transpose(0, 1);
    let scope = precision_scope(Precision::Bfloat16);
    let products = [
        ("rows @ rows", a_rows.matmul(&b_rows).to_vec()),
        ("rows @ columns", a_rows.matmul(&b_cols).to_vec()),
        ("columns @ rows", a_cols.matmul(&b_rows).to_vec()),
        ("columns @ columns", a_cols.matmul(&b_cols).to_vec()),
    ];
    // A batch of eight, which the threads divide among themselves.
    let eight = |x: &Tensor| Tensor::stack(&[x; 8], 0);
    let batched = eight(&a_cols).matmul(&eight(&b_rows)).to_vec();
    drop(scope);
    for (layout, got) in products {
        assert!(
            got.iter()
                .zip(&want)
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "{layout}: differs from the plain portable path"
        );
    }
    for (i, product) in batched.chunks(m * n).enumerate() {
        let same = product
            .iter()
            .zip(&want)
            .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(
            same,
            "batch of eight, product {i}: differs from the plain portable path"
        );
    }
}
