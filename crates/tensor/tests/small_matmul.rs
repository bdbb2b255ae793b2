//! The small products' kernels against gemm, bit for bit: every kernel this
//! machine can run, forced in turn, on the shapes and layouts they take.
//! The one that matches gemm's arithmetic here must give gemm's bits; the
//! fused kernels must agree with each other; the unfused one must give the
//! sum of rounded products in order, which is gemm's scalar fallback.

use tensor::rng::TorchGenerator;
use tensor::small_matmul::{gemm_2d, matmul_2d, Kernel};
use tensor::Tensor;

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec().iter().map(|v| v.to_bits()).collect()
}

/// The shapes: attention's at T = 8 (the batched benchmark's), odd sizes,
/// the largest sides, and the deepest K.
const SHAPES: [(usize, usize, usize); 9] = [
    (8, 16, 8),
    (8, 8, 16),
    (2, 3, 2),
    (5, 7, 3),
    (13, 33, 29),
    (64, 64, 64),
    (64, 3, 2),
    (2, 512, 64),
    (17, 300, 9),
];

/// `(a, b)` for one shape: row-major, and with `a` a transposed view.
fn operands(gen: &mut TorchGenerator, (m, k, n): (usize, usize, usize)) -> Vec<(Tensor, Tensor)> {
    let (a, b) = (gen.randn(&[m, k]), gen.randn(&[k, n]));
    let a_transposed = gen.randn(&[k, m]).transpose(0, 1);
    vec![(a, b.clone()), (a_transposed, b)]
}

/// `Σ_k a[i, k] · b[k, j]`, each product rounded, then each sum, in order.
fn unfused_reference(a: &Tensor, b: &Tensor) -> Vec<u32> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let (a, b) = (a.contiguous().to_vec(), b.to_vec());
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let sum = (0..k).fold(0.0f32, |sum, p| sum + a[i * k + p] * b[p * n + j]);
            out.push(sum.to_bits());
        }
    }
    out
}

#[test]
fn this_machines_kernel_gives_gemms_bits() {
    let kernel = Kernel::for_this_machine();
    let mut gen = TorchGenerator::manual_seed(7);
    for shape in SHAPES {
        for (a, b) in operands(&mut gen, shape) {
            let small = matmul_2d(&a, &b, kernel).expect("an eligible product");
            let gemm = gemm_2d(&a, &b);
            assert_eq!(bits(&small), bits(&gemm), "{shape:?} with {kernel:?}");
        }
    }
}

#[test]
fn the_fused_kernels_agree_and_the_unfused_one_rounds_each_product() {
    let mut gen = TorchGenerator::manual_seed(8);
    for shape in SHAPES {
        for (a, b) in operands(&mut gen, shape) {
            let portable = matmul_2d(&a, &b, Kernel::PortableFused).expect("eligible");
            if Kernel::Avx2Fma.available() {
                let avx2 = matmul_2d(&a, &b, Kernel::Avx2Fma).expect("eligible");
                assert_eq!(
                    bits(&avx2),
                    bits(&portable),
                    "{shape:?}: AVX2 against portable"
                );
            }
            let unfused = matmul_2d(&a, &b, Kernel::PortableUnfused).expect("eligible");
            assert_eq!(
                bits(&unfused),
                unfused_reference(&a, &b),
                "{shape:?}: unfused"
            );
            if shape.1 > 4 {
                assert_ne!(bits(&unfused), bits(&portable), "{shape:?}: fusing shows");
            }
        }
    }
}

#[test]
fn shapes_gemm_sends_elsewhere_are_refused() {
    let kernel = Kernel::PortableFused;
    let m = |shape: &[usize]| Tensor::ones(shape);
    // K ≤ 2 (gevv), a side of 1 (gemv), wider than 64, deeper than 512.
    for (a, b) in [
        (m(&[8, 2]), m(&[2, 8])),
        (m(&[1, 8]), m(&[8, 8])),
        (m(&[8, 8]), m(&[8, 1])),
        (m(&[8, 8]), m(&[8, 65])),
        (m(&[8, 513]), m(&[513, 8])),
    ] {
        assert!(
            matmul_2d(&a, &b, kernel).is_none(),
            "{:?} @ {:?}",
            a.shape(),
            b.shape()
        );
    }
    // A column-major `b` (gemm's dot products when M·N ≤ 256).
    let b_columns = m(&[8, 8]).transpose(0, 1);
    assert!(matmul_2d(&m(&[8, 8]), &b_columns, kernel).is_none());
    // K walked backwards, which gemm reverses.
    let mut reversed = ndarray::ArrayD::<f32>::ones(ndarray::IxDyn(&[8, 8]));
    reversed.invert_axis(ndarray::Axis(0));
    let b_reversed = Tensor::from_array(reversed);
    assert!(matmul_2d(&m(&[8, 8]), &b_reversed, kernel).is_none());
}

#[test]
fn operands_with_gaps_between_rows_give_gemms_bits() {
    // `b` narrowed out of a wider matrix; `a` rows of a taller one, or
    // columns of a wider one (rows 30 apart).
    let kernel = Kernel::for_this_machine();
    let mut gen = TorchGenerator::manual_seed(9);
    let b = gen.randn(&[16, 40]).narrow(1, 3, 8); // (16, 8), rows 40 apart
    let a = gen.randn(&[14, 16]).narrow(0, 2, 7); // (7, 16)
    let a_gaps = gen.randn(&[7, 30]).narrow(1, 5, 16); // (7, 16)
    for a in [a, a_gaps] {
        let small = matmul_2d(&a, &b, kernel).expect("an eligible product");
        assert_eq!(bits(&small), bits(&gemm_2d(&a, &b)), "{:?}", a.shape());
    }
}
