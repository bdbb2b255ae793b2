//! makemore-mlp against PyTorch: the numbers in tests/fixtures/mlp_torch.json come
//! from tests/fixtures/mlp_torch.py, which follows the lecture notebook step by step.
//! Needs names.txt (ZTH_DATA or the workspace's datasets/).

use data::makemore::Splits;
use makemore_mlp::{lecture_lr, lr_find, sample, train, uniform_loss, Config, Mlp};
use serde_json::Value;
use tensor::rng::TorchGenerator;

fn fixture() -> Value {
    let text = include_str!("fixtures/mlp_torch.json");
    serde_json::from_str(text).expect("fixture parses")
}

fn f(v: &Value) -> f32 {
    v.as_f64().expect("a number") as f32
}

fn splits() -> Splits {
    Splits::load(3).expect("names.txt: set ZTH_DATA or run `cargo xtask data`")
}

fn lecture_model() -> Mlp {
    Mlp::init(
        Config::default(),
        &mut TorchGenerator::manual_seed(2147483647),
    )
}

fn assert_close(name: &str, ours: f32, theirs: f32, rel: f32) {
    let tol = rel * theirs.abs().max(1.0);
    assert!(
        (ours - theirs).abs() <= tol,
        "{name}: ours {ours} vs PyTorch {theirs} (tolerance {tol})"
    );
}

#[test]
fn parameter_count_is_the_lectures() {
    let fx = fixture();
    assert_eq!(
        lecture_model().params.count() as u64,
        fx["parameters"].as_u64().unwrap()
    );
}

#[test]
fn init_losses_on_the_full_splits_match_pytorch() {
    let fx = fixture();
    let s = splits();
    assert_eq!(
        [s.train.len() as u64, s.dev.len() as u64],
        [
            fx["examples"][0].as_u64().unwrap(),
            fx["examples"][1].as_u64().unwrap()
        ]
    );
    let model = lecture_model();
    assert_close(
        "train",
        model.loss(&s.train),
        f(&fx["init_loss_train"]),
        1e-6,
    );
    assert_close("dev", model.loss(&s.dev), f(&fx["init_loss_dev"]), 1e-6);
}

#[test]
fn fixed_init_starts_near_the_uniform_loss() {
    let fx = fixture();
    let mut model = lecture_model();
    model.fix_output_init();
    let loss = model.loss(&splits().train);
    assert_close("fixed init", loss, f(&fx["fixed_init_loss_train"]), 1e-6);
    assert!(
        (loss - uniform_loss()).abs() < 0.02,
        "{loss} is not near 3.2958"
    );
}

#[test]
fn minibatch_indices_come_from_the_global_generator() {
    let fx = fixture();
    let ix = splits()
        .train
        .minibatch_indices(&mut TorchGenerator::manual_seed(42), 32);
    let expected: Vec<usize> = fx["first_batch_ix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(ix, expected);
}

#[test]
fn first_training_steps_follow_pytorch() {
    // Through the lecture's loop (`train`), which draws each minibatch from
    // the global generator as cell[26] does.
    let fx = fixture();
    let expected = fx["train_losses_first"].as_array().unwrap();
    let mut model = lecture_model();
    let mut global = TorchGenerator::manual_seed(42);
    let mut stage = report::Stage::standalone("mlp");
    let (losses, _) = train(
        &mut model,
        &splits().train,
        &mut global,
        expected.len(),
        &mut stage,
    )
    .unwrap();
    for (i, (loss, expected)) in losses.iter().zip(expected).enumerate() {
        assert_close(&format!("step {i}"), *loss, f(expected), 1e-5);
    }
}

#[test]
fn samples_from_the_initial_net_match_pytorch() {
    // The untrained net has exactly PyTorch's weights, so multinomial must draw the
    // same characters: this checks the forward pass, softmax and the sampler together.
    let fx = fixture();
    let names = sample(
        &lecture_model(),
        &mut TorchGenerator::manual_seed(2147483647 + 10),
        20,
    );
    let expected: Vec<String> = fx["init_samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, expected);
}

#[test]
fn lr_find_rates_are_ten_to_the_linspace() {
    // The search's first steps: PyTorch's `10**torch.linspace(-3, 0, 1000)`,
    // and its first loss, before any update, is the first training step's.
    let fx = fixture();
    let mut model = lecture_model();
    let mut global = TorchGenerator::manual_seed(42);
    let points = lr_find(&mut model, &splits().train, &mut global, 1000);
    assert_eq!(points.len(), 1000);
    for (i, v) in fx["lr_find_first"].as_array().unwrap().iter().enumerate() {
        assert_close(&format!("lr {i}"), points[i].lr, f(v), 2e-7);
    }
    assert_eq!(points[999].lr, f(&fx["lr_find_last"]));
    assert_close(
        "lr_find step 0",
        points[0].loss,
        f(&fx["train_losses_first"][0]),
        1e-5,
    );
}

#[test]
fn learning_rate_decays_at_step_100000() {
    assert_eq!(lecture_lr(99_999), 0.1);
    assert_eq!(lecture_lr(100_000), 0.01);
}
