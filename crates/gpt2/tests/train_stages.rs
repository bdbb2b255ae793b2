//! The video's first training stages against PyTorch running build-nanogpt's
//! code at those commits (`fixtures/train_stages.py`, `train_stages.json`):
//! the step-0 loss within 1e-5 and the first five steps within 1e-4.

use gpt2::train::{train, DataLoaderLite, TrainStage};

fn fixture() -> serde_json::Value {
    serde_json::from_str(include_str!("fixtures/train_stages.json")).unwrap()
}

#[test]
fn the_first_steps_of_both_stages_follow_pytorch() {
    // One after the other: each holds a 163M-parameter model with AdamW's state (2.6 GB).
    for (stage, key) in [
        (TrainStage::OverfitBatch, "overfit-batch"),
        (TrainStage::Dataloader, "dataloader"),
    ] {
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

#[test]
fn the_loader_walks_the_tokens_in_order_and_wraps_before_the_end() {
    let tokens: Vec<usize> = (0..30).collect();
    let mut loader = DataLoaderLite::new(tokens, 2, 4).unwrap();
    let (x, y) = loader.next_batch();
    assert_eq!((x, y), ((0..8).collect(), (1..9).collect()));
    loader.next_batch(); // 8..16, then 16..24; 24 + 8 + 1 > 30 wraps
    let (x, _) = loader.next_batch();
    assert_eq!(x, (16..24).collect::<Vec<_>>());
    let (x, _) = loader.next_batch();
    assert_eq!(x, (0..8).collect::<Vec<_>>());
    assert!(DataLoaderLite::new(vec![1, 2, 3], 1, 3).is_err());
    // The whole file, as PyTorch counted it.
    let n = gpt2::train::shakespeare_tokens(None).unwrap().len() as u64;
    assert_eq!(n, fixture()["dataloader_tokens"].as_u64().unwrap());
}
