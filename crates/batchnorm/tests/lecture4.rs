//! Lecture 4's first steps against PyTorch running the notebook's code
//! (`fixtures/lecture4.json`, from `fixtures/make_fixtures.py`).
//! Needs the data: set ZTH_DATA or run `cargo xtask data`.

use autograd::{Graph, Sgd};
use batchnorm::fold::folded_logits_gap;
use batchnorm::mlp::{LossLogRow, Mlp};
use batchnorm::torchified::TorchifiedMlp;
use batchnorm::train::{train_mlp, train_torchified};
use batchnorm::{sample_name, split_loss};
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
    // Through cell[7]'s loop (`train_mlp`): lr 0.1 before step 100,000.
    let want = floats(&f["model_a"]["losses"]);
    let mut stage = report::Stage::standalone("model A");
    let run = train_mlp(&mut model, &mut g, &train, want.len(), &mut stage, "A").unwrap();
    for (i, (loss, want)) in run.losses.iter().zip(want).enumerate() {
        assert!(
            (*loss as f64 - want).abs() < 1e-5,
            "step {i}: {loss} vs PyTorch {want}"
        );
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
fn model_b_after_the_lectures_1001_steps_evaluates_samples_and_folds_like_pytorch() {
    // cell[14]'s loop for 1,001 steps (`train_torchified`), then the split
    // losses PyTorch prints in evaluation mode (make_fixtures.py, which also
    // reproduces the notebook's 2.4003 / 2.3982), the 20 names cell[20]
    // prints from these weights, and E02's folded net against the unfolded one.
    let f = fixture();
    let splits = splits();
    let mut g = TorchGenerator::manual_seed(2147483647);
    let mut net = TorchifiedMlp::new(&mut g, true, 1.0);
    let mut stage = report::Stage::standalone("model B");
    let run = train_torchified(&mut net, &mut g, &splits.train, 1001, &mut stage).unwrap();
    let last = f["model_b_1001"]["last_loss"].as_f64().unwrap();
    assert!((*run.losses.last().unwrap() as f64 - last).abs() < 1e-4);
    for layer in &mut net.layers.layers {
        layer.set_training(false);
    }
    let train = split_loss(&splits.train, |graph, xb| net.forward(graph, xb));
    let val = split_loss(&splits.dev, |graph, xb| net.forward(graph, xb));
    let eval = &f["model_b_1001"]["eval"];
    for (name, ours) in [("train", train), ("val", val)] {
        let want = eval[name].as_f64().unwrap();
        assert!(
            (ours - want).abs() < 1e-5,
            "{name}: {ours} vs PyTorch {want}"
        );
    }
    let mut g = TorchGenerator::manual_seed(2147483647 + 10);
    let names: Vec<String> = (0..20)
        .map(|_| sample_name(&mut g, 3, |graph, ctx| net.forward(graph, ctx)))
        .collect();
    assert_eq!(
        names.join(" "),
        "carpah. qarlileif. jmrix. thty. sacansa. jazhnte. dpn. arciigqeiunellaia. chriiv. \
         kalein. dhlm. join. qhinn. sroin. arian. quiqaelogiearyxix. kaeklinsan. ed. ecoia. \
         gtleley."
    );
    let (folded, gap) = folded_logits_gap(&net, &splits.dev).unwrap();
    assert_eq!(folded, 6, "every Linear → BatchNorm1d pair");
    assert!(gap < 1e-5, "folded vs unfolded logits differ by {gap}");
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
