//! Lecture 4's first steps against PyTorch running the notebook's code
//! (`fixtures/lecture4.json`, from `fixtures/make_fixtures.py`).
//! Needs the data: set ZTH_DATA or run `cargo xtask data`.

use autograd::{Graph, Sgd};
use batchnorm::mlp::{LossLogRow, Mlp};
use batchnorm::torchified::TorchifiedMlp;
use data::makemore::Splits;
use serde_json::Value;
use tensor::rng::TorchGenerator;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/lecture4.json")).expect("lecture4.json parses")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn splits() -> Splits {
    Splits::load(3).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn model_a_first_five_steps_and_running_stats_match_pytorch() {
    let f = fixture();
    let train = splits().train;
    let mut g = TorchGenerator::manual_seed(2147483647);
    let mut model = Mlp::new(LossLogRow::BatchNorm, &mut g);
    assert_eq!(model.params.count(), 12_097);
    for (i, want) in floats(&f["model_a"]["losses"]).into_iter().enumerate() {
        let (xb, yb) = train.minibatch(&mut g, 32);
        let graph = Graph::new();
        let loss = model.forward(&graph, &xb, true).cross_entropy(&yb);
        assert!(
            (loss.item() as f64 - want).abs() < 1e-5,
            "step {i}: {} vs PyTorch {want}",
            loss.item()
        );
        let grads = loss.backward();
        model.params.zero_grad();
        model.params.accumulate(&grads);
        Sgd::new(0.1).step(&mut model.params);
    }
    let mean = model.bnmean_running.to_vec();
    let std = model.bnstd_running.to_vec();
    for (k, want) in floats(&f["model_a"]["running_mean_first8"])
        .into_iter()
        .enumerate()
    {
        assert!((mean[k] as f64 - want).abs() < 1e-6, "bnmean_running[{k}]");
    }
    for (k, want) in floats(&f["model_a"]["running_std_first8"])
        .into_iter()
        .enumerate()
    {
        assert!((std[k] as f64 - want).abs() < 1e-6, "bnstd_running[{k}]");
    }
}

#[test]
fn model_b_first_five_steps_match_pytorch() {
    let f = fixture();
    let train = splits().train;
    let mut g = TorchGenerator::manual_seed(2147483647);
    let mut net = TorchifiedMlp::new(&mut g, true, 1.0);
    assert_eq!(net.params.count(), 47_024);
    for (i, want) in floats(&f["model_b"]["losses"]).into_iter().enumerate() {
        let (xb, yb) = train.minibatch(&mut g, 32);
        let graph = Graph::new();
        let loss = net.forward(&graph, &xb).cross_entropy(&yb);
        assert!(
            (loss.item() as f64 - want).abs() < 1e-5,
            "step {i}: {} vs PyTorch {want}",
            loss.item()
        );
        let grads = loss.backward();
        net.params.zero_grad();
        net.params.accumulate(&grads);
        Sgd::new(0.1).step(&mut net.params);
    }
}

#[test]
fn ladder_rows_have_the_lectures_parameter_counts() {
    let count = |init| {
        Mlp::new(init, &mut TorchGenerator::manual_seed(1))
            .params
            .count()
    };
    assert_eq!(count(LossLogRow::Original), 11_897);
    assert_eq!(count(LossLogRow::Kaiming), 11_897);
    assert_eq!(count(LossLogRow::BatchNorm), 12_097);
}
