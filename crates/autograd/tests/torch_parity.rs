//! Composite ops against PyTorch: values and gradients.
//!
//! `tests/fixtures/make_autograd_fixtures.py` ran each case in PyTorch 2.15 (CPU)
//! and stored the inputs, the output, and the gradient of `sum(out ⊙ upstream)`
//! for every input. Tolerance: |ours − torch| ≤ 1e-5 + 1e-4·|torch| — float32
//! results whose reductions run in a different order than PyTorch's kernels.

use autograd::{clip_grad_norm, AdamW, AdamWConfig, Graph, Params, Var};
use serde_json::Value;
use std::collections::BTreeMap;
use tensor::Tensor;

fn fixtures() -> Value {
    let text = include_str!("fixtures/autograd_torch.json");
    serde_json::from_str(text).expect("valid fixture JSON")
}

fn tensor(v: &Value) -> Tensor {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f32> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    Tensor::from_vec(data, &shape)
}

fn indices(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn assert_close(what: &str, ours: &Tensor, torch: &Tensor) {
    assert_eq!(ours.shape(), torch.shape(), "{what}: shape");
    for (i, (a, b)) in ours.to_vec().iter().zip(torch.to_vec()).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 + 1e-4 * b.abs(),
            "{what}[{i}]: ours {a}, torch {b}"
        );
    }
}

/// Runs a case: builds leaves from the fixture's inputs, applies `f`, backpropagates
/// the stored upstream gradient, and compares the output and every input gradient.
fn run_case(name: &str, f: impl for<'g> Fn(&BTreeMap<String, Var<'g>>) -> Var<'g>) {
    let all = fixtures();
    let case = &all["cases"][name];
    let graph = Graph::new();
    let leaves: BTreeMap<String, Var> = case["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), graph.leaf(tensor(v))))
        .collect();
    let out = f(&leaves);
    assert_close(
        &format!("{name} output"),
        &out.value(),
        &tensor(&case["out"]),
    );
    let grads = out.backward_with(tensor(&case["upstream"]));
    for (k, var) in &leaves {
        assert_close(
            &format!("{name} d{k}"),
            grads.of(*var).unwrap(),
            &tensor(&case["grads"][k]),
        );
    }
}

#[test]
fn cross_entropy() {
    let targets = indices(&fixtures()["cases"]["cross_entropy"]["targets"]);
    run_case("cross_entropy", |v| v["logits"].cross_entropy(&targets));
}

#[test]
fn softmax_and_log_softmax() {
    run_case("softmax", |v| v["x"].softmax(-1));
    run_case("log_softmax", |v| v["x"].log_softmax(-1));
}

#[test]
fn layer_norm() {
    run_case("layer_norm", |v| {
        v["x"].layer_norm(Some(v["weight"]), Some(v["bias"]), 1e-5)
    });
}

#[test]
fn batch_norm_with_unbiased_variance() {
    run_case("batch_norm", |v| {
        let h = v["h"];
        let mean = h.mean(0, true);
        let var = h.var(0, true, true);
        v["gain"] * (h - mean) / (var + 1e-5).sqrt() + v["bias"]
    });
}

#[test]
fn causal_self_attention() {
    let (t, c, heads) = (8usize, 16usize, 4usize);
    let hs = c / heads;
    let mask = Tensor::tril_ones(t, t).map(|m| 1.0 - m);
    run_case("attention", |v| {
        let x = v["x"];
        let b = x.shape()[0];
        let split = |w| x.matmul(w).reshape(&[b, t, heads, hs]).transpose(1, 2);
        let (q, k, val) = (split(v["wq"]), split(v["wk"]), split(v["wv"]));
        let att = (q.matmul(k.transpose(-2, -1)) * (hs as f32).powf(-0.5))
            .masked_fill(&mask, f32::NEG_INFINITY)
            .softmax(-1);
        let y = att.matmul(val).transpose(1, 2).reshape(&[b, t, c]);
        y.matmul(v["wo"])
    });
}

#[test]
fn lecture_3_mlp_forward_and_backward() {
    let all = fixtures();
    let case = &all["cases"]["mlp"];
    let (x, y) = (indices(&case["X"]), indices(&case["Y"]));
    run_case("mlp", |v| {
        let emb = v["C"].index_rows(&x, &[32, 3]);
        let h = (emb.reshape(&[32, 30]).matmul(v["W1"]) + v["b1"]).tanh();
        (h.matmul(v["W2"]) + v["b2"]).cross_entropy(&y)
    });
}

#[test]
fn adamw_matches_torch_over_three_steps() {
    let all = fixtures();
    let case = &all["cases"]["adamw"];
    let mut params = Params::new();
    let w = params.add("w", tensor(&case["init"]["w"]));
    let b = params.add("b", tensor(&case["init"]["b"]));
    let config = AdamWConfig {
        lr: 1e-2,
        betas: (0.9, 0.99),
        eps: 1e-8,
        weight_decay: 0.1,
    };
    let mut opt = AdamW::decay_matrices_only(config, &params);
    for (grads, after) in case["grads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(case["after"].as_array().unwrap())
    {
        params.get_mut(w).grad = Some(tensor(&grads["w"]));
        params.get_mut(b).grad = Some(tensor(&grads["b"]));
        opt.step(&mut params);
        assert_close("adamw w", params.value(w), &tensor(&after["w"]));
        assert_close("adamw b", params.value(b), &tensor(&after["b"]));
    }
}

#[test]
fn clip_grad_norm_matches_torch() {
    let all = fixtures();
    let case = &all["cases"]["clip"];
    let mut params = Params::new();
    let w = params.add("w", Tensor::zeros(&[3, 4]));
    let b = params.add("b", Tensor::zeros(&[4]));
    params.get_mut(w).grad = Some(tensor(&case["grads"]["w"]));
    params.get_mut(b).grad = Some(tensor(&case["grads"]["b"]));
    let norm = clip_grad_norm(&mut params, 1.0);
    assert!((norm - case["norm"].as_f64().unwrap() as f32).abs() < 1e-5);
    assert_close(
        "clipped w",
        params.get(w).grad.as_ref().unwrap(),
        &tensor(&case["clipped"]["w"]),
    );
    assert_close(
        "clipped b",
        params.get(b).grad.as_ref().unwrap(),
        &tensor(&case["clipped"]["b"]),
    );
}
