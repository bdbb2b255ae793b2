//! The matmul rows of `cargo xtask bench`'s table (issue 16): the sgemm peak
//! (1024³, the figure every other row's "fraction of peak" divides by) and
//! many tiny batched products, 4096 × (8×16 @ 16×8), lecture 7's attention at
//! its smallest; and the bfloat16 product at 1024³ (`bf16-1024`: operands rounded to bfloat16,
//! float32 sums, packing included), whose speedup over our sgemm the table gives.
//! `rows_torch.py` beside this file times the same products in PyTorch (its bfloat16 row:
//! `torch.matmul` of bfloat16 tensors). Each result is one `bench-row NAME ms=… gflop=…` line, which
//! xtask reads; `ZTH_THREADS` sets the thread count.

use std::hint::black_box;
use std::time::Instant;
use tensor::Tensor;

/// Deterministic values in [-1, 1); the speed does not depend on them.
fn filled(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed) % 2001) as f32) / 1000.0 - 1.0)
        .collect();
    Tensor::from_vec(values, shape)
}

/// The best of 7 rounds, each long enough (~0.2 s) that the timer doesn't count.
fn best_ms(flop: f64, mut product: impl FnMut()) -> f64 {
    let reps = (2e10 / flop).max(1.0) as usize;
    for _ in 0..3 {
        product();
    }
    (0..7)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..reps {
                product();
            }
            t0.elapsed().as_secs_f64() * 1e3 / reps as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let threads = tensor::max_threads();
    for (name, batch, m, k, n) in [
        ("sgemm-1024", 1, 1024, 1024, 1024),
        ("bf16-1024", 1, 1024, 1024, 1024),
        ("batched-4096x8x16x8", 4096, 8, 16, 8),
    ] {
        let _precision = tensor::bf16::precision_scope(match name {
            "bf16-1024" => tensor::bf16::Precision::Bfloat16,
            _ => tensor::bf16::Precision::Float32,
        });
        let lead: &[usize] = if batch == 1 { &[] } else { &[batch] };
        let a = filled(&[lead, &[m, k]].concat(), 1);
        let b = filled(&[lead, &[k, n]].concat(), 2);
        let gflop = 2.0 * (batch * m * k * n) as f64 / 1e9;
        let ms = best_ms(gflop * 1e9, || {
            black_box(a.matmul(black_box(&b)));
        });
        println!(
            "rust {name}: {ms:.4} ms, {:.1} GFLOP/s, {threads} thread(s){}",
            gflop / ms * 1e3,
            match name {
                "bf16-1024" => format!(", {}", tensor::bf16::kernel()),
                _ => String::new(),
            }
        );
        println!("bench-row {name} ms={ms} gflop={gflop}");
    }
}
