//! The fused `scaled_dot_product_attention` (nanoGPT's `flash` branch) against
//! the lecture's own lines, `q @ kᵀ · scale`, `masked_fill`, `softmax`, `@ v`:
//! forward and the gradients of q, k and v.
//!
//! The fused op goes through the same ops a few batch rows at a time (at most
//! 2²² floats of weights in a chunk), and recomputes the weights in backward instead of keeping them, so the two
//! agree bit for bit: no rounding is allowed to differ. (Only a zero's sign
//! may: at T = 1 the plain tape adds a gradient of −0 into +0, the fused op
//! hands it on as it is, so the values are compared with `==`.)

use autograd::Graph;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// `1` above the diagonal: the future a query may not see.
fn future_mask(t: usize) -> Tensor {
    Tensor::ones(&[t, t]).sub(&Tensor::tril_ones(t, t)) // (T, T)
}

/// Output, dq, dk, dv through the fused op or the lecture's lines.
fn run(
    fused: bool,
    causal: bool,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    seed: &Tensor,
) -> [Tensor; 4] {
    let graph = Graph::new();
    let (qv, kv, vv) = (
        graph.leaf(q.clone()),
        graph.leaf(k.clone()),
        graph.leaf(v.clone()),
    );
    let (t, hs) = (q.shape()[2], q.shape()[3]);
    let y = if fused {
        qv.scaled_dot_product_attention(kv, vv, causal) // (B, nh, T, hs)
    } else {
        let att = qv.matmul(kv.transpose(-2, -1)) * (1.0 / (hs as f64).sqrt()) as f32; // (B, nh, T, T)
        let att = if causal {
            att.masked_fill(&future_mask(t), f32::NEG_INFINITY) // (B, nh, T, T)
        } else {
            att
        };
        att.softmax(-1).matmul(vv) // (B, nh, T, hs)
    };
    let grads = (y * graph.constant(seed.clone())).sum_all().backward();
    let grad = |x| grads.of(x).expect("a gradient").clone();
    [y.value(), grad(qv), grad(kv), grad(vv)]
}

/// Equal as floats: the same bits, or zeros of either sign.
fn same(a: &Tensor, b: &Tensor) -> bool {
    a.to_vec()
        .iter()
        .zip(b.to_vec())
        .all(|(x, y)| *x == y && !x.is_nan())
}

#[test]
fn fused_attention_gives_the_lectures_lines_bits() {
    let mut gen = TorchGenerator::manual_seed(1337);
    // Lecture 7's cpu stage (B12 T64, 4 heads of 32) among them; T = 1024, one
    // batch row over the chunk size (a chunk of its own); and B3 with 8 heads
    // of T = 512, 2²¹ weights a row, which the fused op cuts into chunks of
    // 2 + 1 rows.
    for shape in [
        [2, 3, 17, 16],
        [12, 4, 64, 32],
        [3, 1, 9, 12],
        [1, 4, 1, 8],
        [1, 6, 1024, 8],
        [3, 8, 512, 8],
    ] {
        let (q, k, v) = (gen.randn(&shape), gen.randn(&shape), gen.randn(&shape));
        let seed = gen.randn(&shape);
        for causal in [true, false] {
            let fused = run(true, causal, &q, &k, &v, &seed);
            let plain = run(false, causal, &q, &k, &v, &seed);
            for (n, (f, p)) in fused.iter().zip(&plain).enumerate() {
                let name = ["output", "dq", "dk", "dv"][n];
                assert_eq!(f.shape(), p.shape(), "{shape:?} {name}");
                assert!(
                    same(f, p),
                    "{shape:?} causal={causal} {name}: fused and plain differ, by up to {:e}",
                    f.sub(p).to_vec().iter().fold(0.0f32, |m, d| m.max(d.abs()))
                );
            }
        }
    }
}
