//! The fused `layer_norm` (and the forward-only `Tensor::layer_norm`) against
//! the op-by-op `layer_norm_plain`: the same bits forward and backward, for
//! every input, weight and bias gradient.
//! `torch_parity.rs` and `finite_differences.rs` check the numbers themselves.

use autograd::Graph;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec().iter().map(|v| v.to_bits()).collect()
}

/// The output and the gradients of x, weight and bias, fused or plain.
fn run(
    fused: bool,
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    seed: &Tensor,
) -> Vec<Tensor> {
    let graph = Graph::new();
    let xv = graph.leaf(x.clone());
    let wv = w.map(|w| graph.leaf(w.clone()));
    let bv = b.map(|b| graph.leaf(b.clone()));
    let y = if fused {
        xv.layer_norm(wv, bv, 1e-5)
    } else {
        xv.layer_norm_plain(wv, bv, 1e-5)
    };
    // A weighted sum, so that every output has its own gradient.
    let grads = (y * graph.constant(seed.clone())).sum_all().backward();
    let mut out = vec![y.value(), grads.of(xv).expect("dx").clone()];
    out.extend(wv.map(|w| grads.of(w).expect("dw").clone()));
    out.extend(bv.map(|b| grads.of(b).expect("db").clone()));
    out
}

#[test]
fn fused_layer_norm_gives_the_plain_ops_bits() {
    let mut gen = TorchGenerator::manual_seed(42);
    for shape in [
        vec![4, 16, 128],
        vec![7, 33],
        vec![2, 3, 5, 64],
        vec![300, 384],
    ] {
        let c = *shape.last().unwrap();
        // An offset and a scale, so that the mean and variance matter.
        let x = gen.randn(&shape).mul_scalar(3.0).add_scalar(0.7);
        let seed = gen.randn(&shape);
        let w = gen.randn(&[c]);
        let b = gen.randn(&[c]);
        for (w, b) in [(Some(&w), Some(&b)), (Some(&w), None), (None, None)] {
            let fused = run(true, &x, w, b, &seed);
            let plain = run(false, &x, w, b, &seed);
            // The forward-only `Tensor::layer_norm` shares the kernels.
            let forward = x.layer_norm(w, b, 1e-5);
            assert!(
                bits(&forward) == bits(&plain[0]),
                "{shape:?}: Tensor::layer_norm differs"
            );
            let names = ["output", "dx", "dweight", "dbias"];
            for ((f, p), name) in fused.iter().zip(&plain).zip(names) {
                assert_eq!(f.shape(), p.shape(), "{shape:?} {name}");
                assert!(
                    bits(f) == bits(p),
                    "{shape:?}, weight {}, bias {}: {name} differs",
                    w.is_some(),
                    b.is_some()
                );
            }
        }
    }
}
