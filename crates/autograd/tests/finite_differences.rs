//! Every backward rule against central finite differences.
//!
//! For an op `f`, the test builds `L = Σ f(x) ⊙ w` with fixed random weights `w`
//! (so every output element matters, with a different weight) and compares
//! `∂L/∂x` from the tape with `(L(x + h) − L(x − h)) / 2h`, element by element.
//! The tensors are f32, so the difference quotient carries rounding error of about
//! 1e-7·|L|/h plus truncation error h²·f'''/6. With h = 1e-2 both stay below
//! 5e-4 for these inputs; the tolerance is |fd − analytic| ≤ 2e-3 + 2e-3·|analytic|.

// `&[a.clone()]` reads better here than `std::slice::from_ref(&a)`.
#![allow(clippy::cloned_ref_to_slice_refs)]

use autograd::{Graph, Var};
use pyrandom::PyRandom;
use tensor::Tensor;

const H: f32 = 1e-2;
const ATOL: f32 = 2e-3;
const RTOL: f32 = 2e-3;

/// Uniform values in [lo, hi) from CPython's generator, for reproducible inputs.
fn uniform(seed: u64, shape: &[usize], lo: f64, hi: f64) -> Tensor {
    let mut rng = PyRandom::seed(seed);
    let n = shape.iter().product();
    Tensor::from_vec((0..n).map(|_| rng.uniform(lo, hi) as f32).collect(), shape)
}

fn weighted_sum(out: &Tensor, w: &Tensor) -> f64 {
    out.to_vec()
        .iter()
        .zip(w.to_vec())
        .map(|(&o, w)| o as f64 * w as f64)
        .sum()
}

/// Checks the gradient of `f` with respect to every input.
fn check(name: &str, inputs: &[Tensor], f: impl for<'g> Fn(&[Var<'g>]) -> Var<'g>) {
    let graph = Graph::new();
    let vars: Vec<Var> = inputs.iter().map(|x| graph.leaf(x.clone())).collect();
    let out = f(&vars);
    let w = uniform(99, &out.shape(), -1.0, 1.0);
    let loss = out.mul(graph.constant(w.clone())).sum_all();
    let grads = loss.backward();

    let eval = |xs: &[Tensor]| -> f64 {
        let g = Graph::no_grad();
        let vs: Vec<Var> = xs.iter().map(|x| g.constant(x.clone())).collect();
        weighted_sum(&f(&vs).value(), &w)
    };
    for (i, var) in vars.iter().enumerate() {
        let analytic = grads
            .of(*var)
            .unwrap_or_else(|| panic!("{name}: no gradient for input {i}"))
            .to_vec();
        assert_eq!(
            analytic.len(),
            inputs[i].len(),
            "{name}: gradient {i} has the wrong size"
        );
        for j in 0..inputs[i].len() {
            let nudged = |delta: f32| {
                let mut xs = inputs.to_vec();
                let mut values = xs[i].to_vec();
                values[j] += delta;
                xs[i] = Tensor::from_vec(values, inputs[i].shape());
                eval(&xs)
            };
            let fd = ((nudged(H) - nudged(-H)) / (2.0 * H as f64)) as f32;
            let an = analytic[j];
            assert!(
                (fd - an).abs() <= ATOL + RTOL * an.abs(),
                "{name}: d/dx{i}[{j}] analytic {an} vs finite difference {fd}"
            );
        }
    }
}

fn x(shape: &[usize]) -> Tensor {
    uniform(1, shape, -1.0, 1.0)
}
fn y(shape: &[usize]) -> Tensor {
    uniform(2, shape, -1.0, 1.0)
}
fn positive(seed: u64, shape: &[usize]) -> Tensor {
    uniform(seed, shape, 0.5, 2.0)
}

#[test]
fn binary_ops_with_broadcasting() {
    for (a, b) in [
        (vec![3, 1], vec![1, 4]),
        (vec![2, 3, 4], vec![4]),
        (vec![2, 3], vec![2, 3]),
        (vec![2, 3], vec![]),
    ] {
        let (xa, yb) = (x(&a), y(&b));
        check("add", &[xa.clone(), yb.clone()], |v| v[0] + v[1]);
        check("sub", &[xa.clone(), yb.clone()], |v| v[0] - v[1]);
        check("mul", &[xa.clone(), yb.clone()], |v| v[0] * v[1]);
        check("div", &[xa.clone(), positive(3, &b)], |v| v[0] / v[1]);
        check("pow", &[positive(4, &a), yb.clone()], |v| v[0].pow(v[1]));
    }
    // The kink of maximum is where a = b: pick values whose pairwise gaps exceed h.
    let a = Tensor::from_vec(vec![-0.5, 0.2, 0.9], &[3, 1]);
    let b = Tensor::from_vec(vec![-0.8, 0.0, 0.5, 1.2], &[1, 4]);
    check("maximum", &[a, b], |v| v[0].maximum(v[1]));
}

#[test]
fn scalar_ops() {
    let a = x(&[2, 3]);
    check("mul_scalar", &[a.clone()], |v| v[0] * 3.0);
    check("add_scalar", &[a.clone()], |v| v[0] + 3.0);
    check("div_scalar", &[a.clone()], |v| v[0] / 3.0);
    check("scalar - var", &[a.clone()], |v| 1.0 - v[0]);
    check("scalar / var", &[positive(5, &[2, 3])], |v| 2.0 / v[0]);
    check("neg", &[a], |v| -v[0]);
}

#[test]
fn unary_ops() {
    let a = x(&[3, 4]);
    let p = positive(6, &[3, 4]);
    check("powf", &[p.clone()], |v| v[0].powf(2.5));
    check("powf negative", &[p.clone()], |v| v[0].powf(-1.0));
    check("exp", &[a.clone()], |v| v[0].exp());
    check("log", &[p.clone()], |v| v[0].log());
    check("log1p", &[p.clone()], |v| v[0].log1p());
    check("sqrt", &[p], |v| v[0].sqrt());
    check("sin", &[a.clone()], |v| v[0].sin());
    check("cos", &[a.clone()], |v| v[0].cos());
    check("tanh", &[a.clone()], |v| v[0].tanh());
    check("sigmoid", &[a.clone()], |v| v[0].sigmoid());
    check("gelu", &[a.mul_scalar(3.0)], |v| v[0].gelu());
    check("gelu_tanh", &[a.mul_scalar(3.0)], |v| v[0].gelu_tanh());
    // Kinks at 0: keep the inputs away from them (|x| ≥ 0.1 > h).
    let away = a.map(|v| {
        if v.abs() < 0.1 {
            v.signum() * 0.1 + v
        } else {
            v
        }
    });
    check("relu", &[away.clone()], |v| v[0].relu());
    check("abs", &[away], |v| v[0].abs());
}

#[test]
fn reductions() {
    let a = x(&[2, 3, 4]);
    check("sum_all", &[a.clone()], |v| v[0].sum_all());
    check("sum", &[a.clone()], |v| v[0].sum(1, false));
    check("sum keepdim", &[a.clone()], |v| v[0].sum(-1, true));
    check("sum_axes (0, 1)", &[a.clone()], |v| {
        v[0].sum_axes(&[0, 1], true)
    });
    check("mean_all", &[a.clone()], |v| v[0].mean_all());
    check("mean", &[a.clone()], |v| v[0].mean(0, false));
    check("mean_axes", &[a.clone()], |v| {
        v[0].mean_axes(&[0, 2], false)
    });
    check("max", &[a.clone()], |v| v[0].max(1, false));
    check("max keepdim last", &[a.clone()], |v| v[0].max(-1, true));
    check("var unbiased", &[a.clone()], |v| v[0].var(0, true, true));
    check("var biased", &[a.clone()], |v| v[0].var(-1, false, false));
    check("var_axes (0, 1)", &[a.clone()], |v| {
        v[0].var_axes(&[0, 1], true, true)
    });
    check("std", &[a], |v| v[0].std(2, true, true));
}

#[test]
fn matmul() {
    check("2-D", &[x(&[3, 4]), y(&[4, 5])], |v| v[0].matmul(v[1]));
    check("batched @ 2-D", &[x(&[2, 3, 4]), y(&[4, 5])], |v| {
        v[0].matmul(v[1])
    });
    check("batched @ batched", &[x(&[2, 3, 4]), y(&[2, 4, 5])], |v| {
        v[0].matmul(v[1])
    });
    check("broadcast batch", &[x(&[2, 1, 3, 4]), y(&[3, 4, 2])], |v| {
        v[0].matmul(v[1])
    });
}

#[test]
fn shape_ops() {
    let a = x(&[2, 3, 4]);
    check("reshape", &[a.clone()], |v| {
        v[0].reshape(&[6, 4]) * v[0].reshape(&[6, 4])
    });
    check("view", &[a.clone()], |v| v[0].view(&[-1, 2]).exp());
    check("transpose", &[a.clone()], |v| v[0].transpose(0, 2).exp());
    check("permute", &[a.clone()], |v| v[0].permute(&[1, 2, 0]).sin());
    check("flatten", &[a.clone()], |v| v[0].flatten(1, 2).tanh());
    check("unsqueeze/squeeze", &[a.clone()], |v| {
        v[0].unsqueeze(1).exp().squeeze(1)
    });
    check("narrow", &[a.clone()], |v| v[0].narrow(1, 1, 2).exp());
    check("concat", &[a.clone(), y(&[2, 1, 4])], |v| {
        Var::concat(&[v[0], v[1]], 1).exp()
    });
    check("stack", &[a.clone(), y(&[2, 3, 4])], |v| {
        Var::stack(&[v[0], v[1]], 0).exp()
    });
    check("split", &[a], |v| {
        let parts = v[0].split(2, -1);
        parts[0] * parts[1]
    });
}

#[test]
fn indexing() {
    // Row 1 is looked up three times: its gradient is the sum of three rows.
    check("index_rows", &[x(&[5, 3])], |v| {
        v[0].index_rows(&[1, 4, 1, 0, 1, 2], &[2, 3]).tanh()
    });
    check("gather_last", &[x(&[4, 5])], |v| {
        v[0].gather_last(&[0, 4, 2, 2]).exp()
    });
    let mask = Tensor::tril_ones(3, 3).map(|m| 1.0 - m);
    check("masked_fill", &[x(&[2, 3, 3])], move |v| {
        v[0].masked_fill(&mask, -1e9).softmax(-1)
    });
}

#[test]
fn neural_net_ops() {
    let logits = x(&[4, 5]).mul_scalar(3.0);
    check("softmax", &[logits.clone()], |v| v[0].softmax(-1));
    check("softmax axis 0", &[logits.clone()], |v| v[0].softmax(0));
    check("log_softmax", &[logits.clone()], |v| v[0].log_softmax(-1));
    check("cross_entropy", &[logits.clone()], |v| {
        v[0].cross_entropy(&[1, 0, 4, 4])
    });
    check(
        "layer_norm",
        &[x(&[2, 3, 6]), positive(7, &[6]), y(&[6])],
        |v| v[0].layer_norm(Some(v[1]), Some(v[2]), 1e-5),
    );
    check("layer_norm without affine", &[x(&[3, 6])], |v| {
        v[0].layer_norm(None, None, 1e-5)
    });
    let mask = Tensor::from_vec(vec![1.0, 0.0, 1.0, 1.0, 0.0, 1.0], &[2, 3]);
    check("dropout_with_mask", &[x(&[2, 3])], move |v| {
        v[0].dropout_with_mask(&mask, 0.2)
    });
}

#[test]
fn a_node_used_twice_gets_both_contributions_in_either_order() {
    for order in 0..2 {
        let graph = Graph::new();
        let w = graph.leaf(Tensor::from_vec(vec![1.5], &[1]));
        let a = w * 2.0;
        let b = a * 3.0;
        let z = if order == 0 { a + b } else { b + a };
        let grads = z.sum_all().backward();
        assert_eq!(grads.of(w).unwrap().to_vec(), vec![8.0], "order {order}");
    }
}

#[test]
fn no_grad_records_nothing_to_differentiate() {
    let graph = Graph::no_grad();
    let w = graph.leaf(Tensor::ones(&[2]));
    let y = (w * 3.0).sum_all();
    assert!(!y.requires_grad());
    assert_eq!(y.item(), 6.0);
}

#[test]
fn dropout_draws_its_mask_from_the_generator() {
    use tensor::rng::TorchGenerator;
    let input = x(&[4, 8]);
    let graph = Graph::new();
    let v = graph.leaf(input.clone());
    let out = v.dropout(0.25, &mut TorchGenerator::manual_seed(7));
    let mask = TorchGenerator::manual_seed(7).bernoulli_keep_mask(0.25, &[4, 8]);
    assert_eq!(
        out.value().to_vec(),
        input.dropout_with_mask(&mask, 0.25).to_vec()
    );
    let mask_again = mask.clone();
    check("dropout", &[input], move |v| {
        v[0].dropout_with_mask(&mask_again, 0.25)
    });
}
