//! The video's first training stages against PyTorch running build-nanogpt's
//! code at those commits (`fixtures/train_stages.py`, `train_stages.json`):
//! the step-0 loss within 1e-5 and the first five steps within 1e-4.

use gpt2::train::{train, TrainStage};

fn fixture() -> serde_json::Value {
    serde_json::from_str(include_str!("fixtures/train_stages.json")).unwrap()
}

#[test]
fn the_first_steps_follow_pytorch() {
    for (stage, key) in [(TrainStage::OverfitBatch, "overfit-batch")] {
        let want: Vec<f64> = fixture()[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let losses = train(stage, 5, &mut report::Stage::standalone(key)).unwrap();
        assert!(
            (losses[0] as f64 - want[0]).abs() < 1e-5,
            "{key} step 0: {} vs PyTorch {}",
            losses[0],
            want[0]
        );
        for (i, (&ours, &theirs)) in losses.iter().zip(&want).enumerate() {
            assert!(
                (ours as f64 - theirs).abs() < 1e-4,
                "{key} step {i}: {ours} vs PyTorch {theirs}"
            );
        }
    }
}
