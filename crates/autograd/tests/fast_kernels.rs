//! The fast kernels that the GPT models use (issue 35) against the plain ops
//! the earlier lectures keep: the loss and gradients of `cross_entropy_fast`
//! against `cross_entropy`, and the tanh GELU's backward against its plain
//! f64 form, each within a stated number of ulps. (That the thread count
//! changes no bit of the fast cross-entropy is a unit test in `tensor`,
//! which can set the count per call.)

use autograd::Graph;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// Ulps between two f32s of one sign; 0 when they compare equal (±0).
fn ulps(a: f32, b: f32) -> u32 {
    if a == b {
        0
    } else {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }
}

/// The loss and the logits' gradient through the plain op or the fast one.
fn loss_and_grad(fast: bool, logits: &Tensor, targets: &[usize], scale: f32) -> (f32, Tensor) {
    let graph = Graph::new();
    let x = graph.leaf(logits.clone());
    let loss = if fast {
        x.cross_entropy_fast(targets)
    } else {
        x.cross_entropy(targets)
    };
    let grads = (loss * scale).backward();
    (
        loss.value().item(),
        grads.of(x).expect("a gradient").clone(),
    )
}

/// GPT-2's 50,304 classes (a few rows), lecture 7's 65 and makemore's 27:
/// the loss within 2 ulps; every gradient element off the target within 3
/// ulps (an exp one ulp off moves the row's sum, so `1/sum` too, and then
/// three roundings follow: `· 1/sum`, `/ N`, `· scale`; 3 is also the most
/// measured); the target's `p − 1`, whose ulp can be far finer than p's,
/// within 3 ulps of `scale / N` (p is at most 1); and at most one element
/// in a thousand not equal (measured: 129 of 301,824 at 50,304 classes).
#[test]
fn fast_cross_entropy_is_within_a_few_ulps_of_the_plain_one() {
    let mut gen = TorchGenerator::manual_seed(35);
    for (n, classes, spread) in [(6, 50_304, 3.0), (768, 65, 2.0), (2_000, 27, 8.0)] {
        let logits = gen.randn(&[n, classes]).mul_scalar(spread);
        let targets: Vec<usize> = (0..n).map(|i| (i * 7919) % classes).collect();
        let scale = 0.5;
        let (plain_loss, plain_grad) = loss_and_grad(false, &logits, &targets, scale);
        let (fast_loss, fast_grad) = loss_and_grad(true, &logits, &targets, scale);
        assert!(
            ulps(plain_loss, fast_loss) <= 2,
            "{n}×{classes}: loss {fast_loss} vs plain {plain_loss}"
        );
        let (plain, fast) = (plain_grad.to_vec(), fast_grad.to_vec());
        // 3 ulps of scale / N, the largest a probability's term can be.
        let target_bound = 3.0 * f32::EPSILON * scale / n as f32;
        let mut off = 0;
        for (i, (p, f)) in plain.iter().zip(&fast).enumerate() {
            if i % classes == targets[i / classes] {
                assert!(
                    (p - f).abs() <= target_bound,
                    "{n}×{classes}: grad[{i}] (a target) {f} vs plain {p}"
                );
            } else {
                assert!(
                    ulps(*p, *f) <= 3,
                    "{n}×{classes}: grad[{i}] {f} vs plain {p}"
                );
            }
            off += (p != f) as usize;
        }
        assert!(
            off <= plain.len() / 1000,
            "{n}×{classes}: {off} of {} gradient elements differ",
            plain.len()
        );
    }
}

/// A NaN among the logits makes the loss NaN, so that training stops there,
/// as the plain op's does.
#[test]
fn fast_cross_entropy_passes_a_nan_on() {
    let mut values = vec![0.5f32; 3 * 10];
    values[14] = f32::NAN; // row 1, not its target
    let logits = Tensor::from_vec(values, &[3, 10]);
    let targets = [0, 1, 2];
    assert!(logits.cross_entropy(&targets).item().is_nan());
    assert!(logits.cross_entropy_fast(&targets).item().is_nan());
}

/// The tanh GELU's gradient on the tape: the incoming gradient times the
/// vectorised derivative, within an ulp of the plain f64 form (libm's `tanh`)
/// over the range activations take.
#[test]
fn gelu_tanh_backward_is_within_an_ulp_of_the_plain_form() {
    let xs: Vec<f32> = (0..=16_000).map(|i| i as f32 * 1e-3 - 6.0).collect();
    let graph = Graph::new();
    let x = graph.leaf(Tensor::from_vec(xs.clone(), &[xs.len()]));
    let grads = x.gelu_tanh().sum_all().backward();
    let got = grads.of(x).expect("a gradient").to_vec();
    let c = (2.0 / std::f64::consts::PI).sqrt();
    for (&x, g) in xs.iter().zip(got) {
        let xd = x as f64;
        let t = (c * (xd + 0.044715 * xd * xd * xd)).tanh();
        let want = (0.5 * (1.0 + t)
            + 0.5 * xd * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * xd * xd))
            as f32;
        // Below x ≈ −4 the plain form's 1 + t has lost its digits; there the
        // kernel is checked in `tensor` against a cancellation-free form.
        if x >= -4.0 {
            assert!(ulps(g, want) <= 1, "gelu_tanh'({x}) = {g}, plain {want}");
        } else {
            assert!(
                (g - want).abs() < 1e-6,
                "gelu_tanh'({x}) = {g}, plain {want}"
            );
        }
    }
}
