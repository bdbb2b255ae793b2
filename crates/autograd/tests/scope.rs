//! `Graph::scope`: the values a layer made are freed when it returns, as
//! Python frees a function's locals when `block(x)` returns, and nothing else
//! changes: the same loss and gradients, bit for bit, and the same NaN
//! diagnosis.

use autograd::{Graph, Params, Var};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// A residual feed-forward block, `x + relu(x @ w1).view(N, 4C) @ w2`, and its
/// locals: the product before the relu, the relu's output and its view.
fn block<'g>(x: Var<'g>, w1: Var<'g>, w2: Var<'g>) -> (Var<'g>, [Var<'g>; 3]) {
    let [n, c] = x.shape()[..] else {
        panic!("a matrix")
    };
    let pre = x.matmul(w1); // (N, 4C)
    let act = pre.relu(); // (N, 4C)
    let rows = act.reshape(&[n, 4 * c]); // (N, 4C), a view
    (x + rows.matmul(w2), [pre, act, rows]) // (N, C)
}

struct Step {
    loss: f32,
    grads: Vec<Tensor>,
    /// Whether each block's locals and output were freed.
    freed: Vec<[bool; 4]>,
}

/// Two blocks, each in a scope or not, then `(out · seed).sum()` and backward.
fn step(scoped: bool) -> Step {
    let (n, c) = (6, 5);
    let mut gen = TorchGenerator::manual_seed(42);
    let graph = Graph::new();
    let x = graph.leaf(gen.randn(&[n, c]));
    let weights: Vec<_> = (0..2)
        .map(|_| {
            (
                graph.leaf(gen.randn(&[c, 4 * c])),
                graph.leaf(gen.randn(&[4 * c, c])),
            )
        })
        .collect();
    let mut h = x;
    let mut blocks = Vec::new();
    for &(w1, w2) in &weights {
        let mut locals = None;
        h = if scoped {
            graph.scope(|| {
                let (out, kept) = block(h, w1, w2);
                locals = Some(kept);
                out
            })
        } else {
            let (out, kept) = block(h, w1, w2);
            locals = Some(kept);
            out
        };
        blocks.push((locals.expect("the block ran"), h));
    }
    let loss = (h * graph.constant(gen.randn(&[n, c]))).sum_all();
    let grads = loss.backward();
    let mut leaves = vec![x];
    leaves.extend(weights.iter().flat_map(|&(w1, w2)| [w1, w2]));
    Step {
        loss: loss.item(),
        grads: leaves
            .iter()
            .map(|&v| grads.of(v).expect("a leaf's gradient").clone())
            .collect(),
        freed: blocks
            .iter()
            .map(|([pre, act, rows], out)| {
                [
                    pre.is_freed(),
                    act.is_freed(),
                    rows.is_freed(),
                    out.is_freed(),
                ]
            })
            .collect(),
    }
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn a_scope_frees_a_blocks_locals_and_changes_no_bit() {
    let (plain, scoped) = (step(false), step(true));
    assert_eq!(plain.loss.to_bits(), scoped.loss.to_bits(), "loss");
    for (i, (a, b)) in plain.grads.iter().zip(&scoped.grads).enumerate() {
        assert_eq!(bits(a), bits(b), "gradient of leaf {i}");
    }
    assert!(
        plain.freed.iter().flatten().all(|&f| !f),
        "no scope, nothing freed"
    );
    for freed in &scoped.freed {
        // The product before the relu is freed: relu's backward keeps its
        // output. The relu's output stays (both backward rules after it hold
        // it, so freeing it would free nothing); its view is freed; the
        // block's output is returned, so it stays.
        assert_eq!(freed, &[true, false, true, false], "pre, act, rows, out");
    }
}

#[test]
#[should_panic(expected = "was freed when the Graph::scope that made it returned")]
fn reading_a_freed_value_names_the_op() {
    let graph = Graph::new();
    let x = graph.leaf(Tensor::ones(&[2, 3]));
    let w = graph.leaf(Tensor::ones(&[3, 3]));
    let mut local = None;
    graph.scope(|| {
        let pre = x.matmul(w); // (2, 3)
        local = Some(pre);
        pre.relu() // (2, 3)
    });
    let local = local.expect("the scope ran");
    assert_eq!(local.shape(), [2, 3], "a freed value keeps its shape");
    local.value();
}

/// The diagnosis of a NaN that appears inside a block, with or without a scope.
fn diagnosis(scoped: bool) -> Option<String> {
    let graph = Graph::new();
    let x = graph.leaf(Tensor::from_vec(vec![1.0, -1.0, 2.0, 3.0], &[2, 2]));
    let w = graph.leaf(Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], &[2, 2]));
    let body = || {
        let prod = x.matmul(w); // (2, 2)
        let logs = prod.log(); // (2, 2): log(-1) is NaN
        logs.reshape(&[4]).sum_all() // ()
    };
    let loss = if scoped { graph.scope(body) } else { body() };
    assert!(loss.item().is_nan());
    graph.first_non_finite(&Params::new())
}

#[test]
fn a_nan_made_inside_a_scope_is_still_traced_to_its_op() {
    let plain = diagnosis(false);
    assert_eq!(
        plain.as_deref(),
        Some("the output of op 1 (shape [2, 2]) holds NaN"),
        "without a scope"
    );
    assert_eq!(diagnosis(true), plain, "with a scope");
}
