//! backprop-ninja against PyTorch: tests/fixtures/ninja_torch.json comes from
//! tests/fixtures/ninja_torch.py, which follows the lecture notebook.

mod common;

use autograd::cmp;
use backprop_ninja::train::{calibrate, sample, train};
use backprop_ninja::Weights;
use serde_json::Value;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/ninja_torch.json")).expect("fixture parses")
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn parameter_counts_are_the_lectures() {
    let fx = fixture();
    let w64 = Weights::init(
        64,
        &mut TorchGenerator::manual_seed(2147483647),
        &mut TorchGenerator::manual_seed(42),
    );
    let w200 = Weights::init(
        200,
        &mut TorchGenerator::manual_seed(2147483647),
        &mut TorchGenerator::manual_seed(42),
    );
    assert_eq!(w64.count() as u64, fx["parameters_64"].as_u64().unwrap());
    assert_eq!(w200.count() as u64, fx["parameters_200"].as_u64().unwrap());
}

#[test]
fn the_exercise_batch_and_loss_match_pytorch() {
    let fx = fixture();
    let e = common::exercise();
    let ix: Vec<usize> = fx["batch_ix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(e.batch_ix, ix);
    let expected = fx["loss"].as_f64().unwrap() as f32;
    assert!(
        (e.atoms.loss - expected).abs() < 1e-6,
        "{} vs {expected}",
        e.atoms.loss
    );
}

#[test]
fn reference_gradients_match_pytorch_autograd() {
    let fx = fixture();
    let e = common::exercise();
    let r = &e.reference;
    for (name, ours) in [
        ("logits", &r.logits),
        ("hprebn", &r.hprebn),
        ("C", &r.c),
        ("W1", &r.w1),
        ("b1", &r.b1),
        ("W2", &r.w2),
        ("b2", &r.b2),
        ("bngain", &r.bngain),
        ("bnbias", &r.bnbias),
    ] {
        let theirs = Tensor::from_vec(floats(&fx["grads"][name]), ours.shape());
        // Two implementations sum in different orders, so elementwise allclose is too
        // strict for tiny entries; allow 16 ulps (1e-6) of the tensor's largest entry,
        // plus allclose's 1e-8 floor (dL/db1 is pure rounding noise: BN removes b1).
        let scale = theirs.abs().max_all().item();
        let r = cmp(name, ours, &theirs);
        assert!(
            r.maxdiff <= 1e-8 + 1e-6 * scale,
            "{name}: maxdiff {} vs scale {scale}",
            r.maxdiff
        );
    }
}

#[test]
fn manual_training_follows_pytorch() {
    let fx = fixture();
    let splits = common::splits();
    let mut g = TorchGenerator::manual_seed(2147483647);
    let mut w = Weights::init(200, &mut g, &mut TorchGenerator::manual_seed(42));
    // Through exercise 4's loop (`train`): a minibatch of 32 from `g`, the
    // manual step, lr 0.1 before step 100,000.
    let expected = floats(&fx["train_losses_first"]);
    let mut stage = report::Stage::standalone("manual backward");
    let (losses, _) = train(&mut w, &splits.train, &mut g, expected.len(), &mut stage).unwrap();
    for (i, (loss, expected)) in losses.into_iter().zip(expected).enumerate() {
        assert!(
            (loss - expected).abs() < 1e-5,
            "step {i}: {loss} vs {expected}"
        );
    }
}

#[test]
fn samples_of_the_calibrated_initial_net_match_pytorch() {
    let fx = fixture();
    let splits = common::splits();
    let w = Weights::init(
        200,
        &mut TorchGenerator::manual_seed(2147483647),
        &mut TorchGenerator::manual_seed(42),
    );
    let stats = calibrate(&w, &splits.train);
    let names = sample(
        &w,
        &stats,
        &mut TorchGenerator::manual_seed(2147483647 + 10),
        20,
    );
    let expected: Vec<String> = fx["init_samples_200"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, expected);
}
