//! `Var::linear` (`F.linear` as one op) against the two ops it replaces,
//! `x.matmul(w.transpose(0, 1)) + b`: the output and the gradients of x, w and
//! b, bit for bit, since it runs the same products and sums.

use autograd::Graph;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// Output, dx, dw (and db) through the fused op or the two ops.
fn run(fused: bool, x: &Tensor, w: &Tensor, b: Option<&Tensor>, seed: &Tensor) -> Vec<Tensor> {
    let graph = Graph::new();
    let (xv, wv) = (graph.leaf(x.clone()), graph.leaf(w.clone()));
    let bv = b.map(|b| graph.leaf(b.clone()));
    let y = if fused {
        xv.linear(wv, bv) // (N, out)
    } else {
        let y = xv.matmul(wv.transpose(0, 1)); // (N, out)
        match bv {
            Some(bv) => y + bv,
            None => y,
        }
    };
    let grads = (y * graph.constant(seed.clone())).sum_all().backward();
    let grad = |v| grads.of(v).expect("a gradient").clone();
    let mut out = vec![y.value(), grad(xv), grad(wv)];
    out.extend(bv.map(grad));
    out
}

#[test]
fn linear_gives_the_bits_of_matmul_then_add() {
    let mut gen = TorchGenerator::manual_seed(1337);
    // lecture 7's cpu shape, its full one with fewer rows, GPT-2's c_fc at T = 64, and odd ones.
    for (n, fan_in, fan_out) in [
        (768, 128, 384),
        (1024, 384, 1536),
        (64, 768, 3072),
        (5, 3, 7),
        (1, 1, 1),
    ] {
        let (x, w) = (gen.randn(&[n, fan_in]), gen.randn(&[fan_out, fan_in]));
        let b = gen.randn(&[fan_out]);
        let seed = gen.randn(&[n, fan_out]);
        for bias in [Some(&b), None] {
            let fused = run(true, &x, &w, bias, &seed);
            let plain = run(false, &x, &w, bias, &seed);
            assert_eq!(fused.len(), plain.len());
            for (i, (f, p)) in fused.iter().zip(&plain).enumerate() {
                let name = ["output", "dx", "dw", "db"][i];
                assert_eq!(f.shape(), p.shape(), "{n}×{fan_in}→{fan_out} {name}");
                assert!(
                    f.to_vec()
                        .iter()
                        .zip(p.to_vec())
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{n}×{fan_in}→{fan_out} bias={} {name}: fused and plain differ",
                    bias.is_some()
                );
            }
        }
    }
}

#[test]
#[should_panic(expected = "linear: x [4, 3] and weight [5, 2] must be (N, in) and (out, in)")]
fn linear_names_mismatched_shapes() {
    let graph = Graph::new();
    let x = graph.leaf(Tensor::ones(&[4, 3]));
    x.linear(graph.leaf(Tensor::ones(&[5, 2])), None);
}
