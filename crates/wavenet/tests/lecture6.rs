//! Lecture 6 against PyTorch running the notebook's code (`fixtures/lecture6.json`,
//! from `fixtures/make_fixtures.py`). Needs the data: set ZTH_DATA or run `cargo xtask data`.

use autograd::Graph;
use data::makemore::Splits;
use serde_json::Value;
use tensor::rng::TorchGenerator;
use wavenet::train::train;
use wavenet::{conv_logits, Config, WaveNet};

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/lecture6.json")).expect("lecture6.json parses")
}

/// Trains `steps` steps from `manual_seed(42)` through the lecture's loop
/// (`wavenet::train::train`: SGD at 0.1 before step 150,000) and returns the
/// net and the losses.
fn first_steps(config: Config, splits: &Splits, steps: usize) -> (WaveNet, Vec<f32>) {
    let mut stage = report::Stage::standalone(config.name);
    let trained = train(config, 42, &splits.train, steps, &mut stage, config.name).unwrap();
    (trained.net, trained.losses)
}

#[test]
fn every_performance_log_row_matches_pytorch_for_five_steps() {
    let f = fixture();
    for (config, row) in Config::LADDER.iter().zip(f["rows"].as_array().unwrap()) {
        let splits = Splits::load(config.block_size).unwrap_or_else(|e| panic!("{e}"));
        let (net, losses) = first_steps(*config, &splits, 5);
        assert_eq!(
            net.params.count() as u64,
            row["params"].as_u64().unwrap(),
            "{}: parameters",
            config.name
        );
        for (i, (got, want)) in losses
            .iter()
            .zip(row["losses"].as_array().unwrap())
            .enumerate()
        {
            let want = want.as_f64().unwrap();
            assert!(
                (*got as f64 - want).abs() < 1e-5,
                "{} step {i}: {got} vs PyTorch {want}",
                config.name
            );
        }
    }
}

#[test]
fn convolution_view_gives_the_eight_forward_passes_and_pytorchs_logits() {
    let f = fixture();
    let splits = Splits::load(8).unwrap_or_else(|e| panic!("{e}"));
    let (mut net, _) = first_steps(Config::lecture(), &splits, 5);
    net.set_training(false);
    // Xtr[7:15]: the 8 contexts of "diondre", each forwarded on its own.
    let mut separate = Vec::new();
    for i in 7..15 {
        let (x, _) = splits.train.range(i, i + 1);
        let graph = Graph::no_grad();
        separate.extend(net.forward(&graph, &x).value().to_vec());
    }
    let want: Vec<f64> = f["rows"][4]["logits_xtr_7_15"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    for (k, (s, w)) in separate.iter().zip(&want).enumerate() {
        assert!(
            (*s as f64 - w).abs() < 1e-5,
            "logit {k}: ours {s}, PyTorch {w}"
        );
    }
    // One pass over the padded word "........diondre" gives all 8 at once.
    let (x7, _) = splits.train.range(7, 8);
    let mut word = x7;
    word.extend(&splits.train.y[7..14]);
    let conv = conv_logits(&net, &word).to_vec();
    assert_eq!(conv.len(), 8 * 27);
    for (k, (c, s)) in conv.iter().zip(&separate).enumerate() {
        assert!(
            (c - s).abs() < 1e-5,
            "logit {k}: convolution {c}, separate {s}"
        );
    }
}

#[test]
fn the_walk_through_flattens_pairs_and_drops_the_last_time_axis() {
    let splits = Splits::load(8).unwrap_or_else(|e| panic!("{e}"));
    let mut net = WaveNet::new(Config::lecture(), &mut TorchGenerator::manual_seed(42));
    let (x, _) = splits.train.range(0, 4);
    let shapes = net.shapes(&x);
    assert_eq!(shapes[1], ("FlattenConsecutive", vec![4, 4, 48]));
    assert_eq!(shapes[5], ("FlattenConsecutive", vec![4, 2, 256]));
    assert_eq!(shapes[9], ("FlattenConsecutive", vec![4, 256]));
    assert_eq!(shapes.last().unwrap(), &("Linear", vec![4, 27]));
}
