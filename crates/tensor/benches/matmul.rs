//! Matrix-product speed at the course's shapes, reported as GFLOP/s (criterion's
//! "elem/s" with one element per floating-point operation, 2·M·K·N per product).
//!
//! Three backends: `gemm/…` is `Tensor::matmul` (the gemm crate), `mm/…` is
//! ndarray's `general_mat_mul` (matrixmultiply), kept for comparison, and `bf16/…` is
//! [`tensor::bf16::matmul_bf16`] (bfloat16 operands, float32 sums; packing included).
//! Run `cargo bench -p tensor --features criterion --bench matmul` once with
//! `ZTH_THREADS=1 MATMUL_NUM_THREADS=1` and once with both set to 2, and compare
//! with `benches/matmul_torch.py`.
//! Shapes: makemore's MLP layer (32×30×200), GPT-2-small projections at B·T = 256
//! (256×768×768, 256×768×3072), the classic 1024³, and lecture 7's feed-forward
//! at B·T = 768 (768×128×384). A batched case stands for attention scores.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, Ix2};
use std::hint::black_box;
use tensor::Tensor;

/// Deterministic values in [-1, 1); the speed does not depend on them.
fn filled(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed) % 2001) as f32) / 1000.0 - 1.0)
        .collect();
    Tensor::from_vec(values, shape)
}

fn products(c: &mut Criterion) {
    let shapes = [
        (32, 30, 200),
        (256, 768, 768),
        (256, 768, 3072),
        (1024, 1024, 1024),
        (768, 128, 384),
    ];
    let mut group = c.benchmark_group("matmul");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(3));
    for (m, k, n) in shapes {
        let (a, b) = (filled(&[m, k], 1), filled(&[k, n], 2));
        group.throughput(Throughput::Elements(2 * (m * k * n) as u64));
        group.bench_function(format!("gemm/{m}x{k}x{n}"), |bench| {
            bench.iter(|| black_box(a.matmul(black_box(&b))))
        });
        let (av, bv) = (a.to_vec(), b.to_vec());
        group.bench_function(format!("bf16/{m}x{k}x{n}"), |bench| {
            bench.iter(|| black_box(tensor::bf16::matmul_bf16(&av, black_box(&bv), m, k, n)))
        });
        let a2 = a.view().into_dimensionality::<Ix2>().unwrap();
        let b2 = b.view().into_dimensionality::<Ix2>().unwrap();
        let mut c2 = Array2::<f32>::zeros((m, n));
        group.bench_function(format!("mm/{m}x{k}x{n}"), |bench| {
            bench.iter(|| general_mat_mul(1.0, &a2, black_box(&b2), 0.0, &mut c2))
        });
    }
    // Attention scores of lecture 7: (B·heads, T, hs) @ (B·heads, hs, T), 64·6 heads.
    let (batch, t, hs) = (384, 256, 64);
    let (q, k) = (filled(&[batch, t, hs], 3), filled(&[batch, hs, t], 4));
    group.throughput(Throughput::Elements(2 * (batch * t * hs * t) as u64));
    group.bench_function(format!("gemm/batched {batch}x{t}x{hs}x{t}"), |bench| {
        bench.iter(|| black_box(q.matmul(black_box(&k))))
    });
    // Many tiny products, where splitting the batch is the only parallelism.
    let (batch, t, hs) = (4096, 8, 16);
    let (q, k) = (filled(&[batch, t, hs], 5), filled(&[batch, hs, t], 6));
    group.throughput(Throughput::Elements(2 * (batch * t * hs * t) as u64));
    group.bench_function(format!("gemm/batched {batch}x{t}x{hs}x{t}"), |bench| {
        bench.iter(|| black_box(q.matmul(black_box(&k))))
    });
    group.finish();
}

criterion_group!(benches, products);
criterion_main!(benches);
