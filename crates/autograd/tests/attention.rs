//! The fused `scaled_dot_product_attention` (nanoGPT's `flash` branch) against
//! the lecture's own lines, `q @ kᵀ · scale`, `masked_fill`, `softmax`, `@ v`:
//! forward and the gradients of q, k and v.
//!
//! The fused op goes through the same arithmetic in the same order a few
//! batch rows at a time (at most 2²² floats of weights in a chunk), and
//! recomputes the weights in backward instead of keeping them, so the two
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

/// Output, dq, dk, dv of the video's head (`gpt.py`'s `Head.forward`, one
/// head, `(B, T, hs)`): its lines with dropout on the weights, or the fused op
/// given the same keep mask, drawn from the same generator.
fn run_head(fused: bool, p: f32, scale: f32, qkv: [&Tensor; 3], seed: &Tensor) -> [Tensor; 4] {
    use tensor::attention::{Attention, WeightDropout};
    let graph = Graph::new();
    let [q, k, v] = qkv.map(|x| graph.leaf(x.clone()));
    let (b, t) = (q.shape()[0], q.shape()[1]);
    let mut gen = TorchGenerator::manual_seed(42);
    let y = if fused {
        let keep = gen.bernoulli_keep_mask(p, &[b, 1, t, t]); // (B, 1, T, T)
        let op = Attention {
            causal: true,
            scale,
            window: None,
            dropout: Some(WeightDropout {
                keep: tensor::KeepMask::pack(&keep),
                p,
            }),
        };
        let y = q.unsqueeze(1).attention(k.unsqueeze(1), v.unsqueeze(1), op); // (B, 1, T, hs)
        y.squeeze(1) // (B, T, hs)
    } else {
        let wei = q.matmul(k.transpose(-2, -1)) * scale; // (B, T, T)
        let wei = wei.masked_fill(&future_mask(t), f32::NEG_INFINITY); // (B, T, T)
        let wei = wei.softmax(-1); // (B, T, T)
        let wei = wei.dropout(p, &mut gen); // (B, T, T)
        wei.matmul(v) // (B, T, hs)
    };
    let grads = (y * graph.constant(seed.clone())).sum_all().backward();
    let grad = |x| grads.of(x).expect("a gradient").clone();
    [y.value(), grad(q), grad(k), grad(v)]
}

#[test]
fn fused_attention_with_dropout_gives_the_video_heads_bits() {
    let mut gen = TorchGenerator::manual_seed(1337);
    // gpt.py's full stage (B64 T256, heads of 64, scale 64^-0.5 as
    // `k.shape[-1]**-0.5` rounds it) and small odd shapes with the video's
    // early C^-0.5 scale; p = 0.2 as gpt.py, and the edge cases 0 and 1.
    let full_scale = 64f64.powf(-0.5) as f32;
    for (shape, scale) in [
        ([64, 256, 64], full_scale),
        ([3, 17, 16], 32f64.powf(-0.5) as f32),
        ([2, 1, 8], 0.3),
        // 2^16 weights a batch row: chunks of 64 + 1 rows, the second one's
        // mask taken from row 64 on.
        ([65, 256, 8], 8f64.powf(-0.5) as f32),
    ] {
        let (q, k, v) = (gen.randn(&shape), gen.randn(&shape), gen.randn(&shape));
        let seed = gen.randn(&shape);
        for p in [0.2, 0.0, 1.0] {
            let fused = run_head(true, p, scale, [&q, &k, &v], &seed);
            let plain = run_head(false, p, scale, [&q, &k, &v], &seed);
            for (n, (f, pl)) in fused.iter().zip(&plain).enumerate() {
                let name = ["output", "dq", "dk", "dv"][n];
                assert_eq!(f.shape(), pl.shape(), "{shape:?} {name}");
                assert!(
                    same(f, pl),
                    "{shape:?} p={p} {name}: fused and plain differ, by up to {:e}",
                    f.sub(pl)
                        .to_vec()
                        .iter()
                        .fold(0.0f32, |m, d| m.max(d.abs()))
                );
            }
        }
    }
}

/// The op checks that the keep mask covers its weights.
#[test]
#[should_panic(expected = "a keep mask of [2, 1, 5, 5] for weights of [2, 1, 4, 4]")]
fn fused_attention_rejects_a_keep_mask_of_another_shape() {
    use tensor::attention::{Attention, WeightDropout};
    let x = Tensor::ones(&[2, 1, 4, 8]);
    let keep = tensor::KeepMask::pack(&Tensor::ones(&[2, 1, 5, 5]));
    let op = Attention {
        causal: true,
        scale: 0.5,
        window: None,
        dropout: Some(WeightDropout { keep, p: 0.1 }),
    };
    op.forward(&x, &x, &x);
}

/// Output, dq, dk, dv of causal attention with a sliding window of `w` earlier
/// keys: the fused op, or the lines with nanochat's SDPA mask
/// (`col <= row & row - col <= w`, everything else −∞).
fn run_window(fused: bool, w: usize, qkv: [&Tensor; 3], seed: &Tensor) -> [Tensor; 4] {
    let graph = Graph::new();
    let [qv, kv, vv] = qkv.map(|x| graph.leaf(x.clone()));
    let (t, hs) = (qkv[0].shape()[2], qkv[0].shape()[3]);
    let y = if fused {
        let op = tensor::attention::Attention {
            window: Some(w),
            ..tensor::attention::Attention::scaled_dot_product(true, hs)
        };
        qv.attention(kv, vv, op) // (B, nh, T, hs)
    } else {
        let hidden: Vec<f32> = (0..t * t)
            .map(|n| (n % t > n / t || n / t - n % t > w) as u8 as f32)
            .collect();
        let att = qv.matmul(kv.transpose(-2, -1)) * (1.0 / (hs as f64).sqrt()) as f32; // (B, nh, T, T)
        let att = att.masked_fill(&Tensor::from_vec(hidden, &[t, t]), f32::NEG_INFINITY); // (B, nh, T, T)
        att.softmax(-1).matmul(vv) // (B, nh, T, hs)
    };
    let grads = (y * graph.constant(seed.clone())).sum_all().backward();
    let grad = |x| grads.of(x).expect("a gradient").clone();
    [y.value(), grad(qv), grad(kv), grad(vv)]
}

#[test]
fn a_sliding_window_gives_the_masked_lines_bits() {
    let mut gen = TorchGenerator::manual_seed(42);
    for (shape, w) in [
        ([2, 3, 17, 16], 4),
        ([1, 2, 40, 8], 0),
        ([2, 2, 9, 4], 8),
        ([1, 1, 5, 4], 20),
    ] {
        let (q, k, v) = (gen.randn(&shape), gen.randn(&shape), gen.randn(&shape));
        let seed = gen.randn(&shape);
        let fused = run_window(true, w, [&q, &k, &v], &seed);
        let plain = run_window(false, w, [&q, &k, &v], &seed);
        for (n, (f, p)) in fused.iter().zip(&plain).enumerate() {
            let name = ["output", "dq", "dk", "dv"][n];
            assert!(
                same(f, p),
                "{shape:?} window {w} {name}: fused and plain differ"
            );
        }
    }
}
