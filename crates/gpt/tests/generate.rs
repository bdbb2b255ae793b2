//! `generate` and the training loop against PyTorch.

use gpt::{generate, Config, SampleOptions, Shakespeare, Stage, Trainer};
use serde_json::Value;

#[test]
fn the_untrained_bigram_writes_the_videos_first_sample() {
    // tests/fixtures/generate.py: torch.manual_seed(1337), the bigram model,
    // then generate(torch.zeros((1, 1)), 100), "SKIcLT;AcELMoTbvZv C?nq-QE33…"
    // as the video prints it.
    let fixture: Value = serde_json::from_str(include_str!("fixtures/generate.json")).unwrap();
    let want: Vec<usize> = fixture["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let data = Shakespeare::load().unwrap();
    let trainer = Trainer::new(Config::for_stage(Stage::Bigram));
    let ids = generate(
        &trainer.model,
        &trainer.params,
        &mut trainer.rng.borrow_mut(),
        &[0],
        100,
        SampleOptions::default(),
    );
    assert_eq!(ids, want);
    assert_eq!(
        data.vocab.decode(&ids[1..]),
        fixture["text"].as_str().unwrap()
    );
}

#[test]
fn the_cpu_recipes_loop_evaluates_where_pytorch_does() {
    // stages.py --train: nanoGPT's loop with the README's CPU flags for 100
    // iterations (the quick run), evaluated at 0 and 100; run_stage's tolerance.
    let fixture: Value = serde_json::from_str(include_str!("fixtures/stages_train.json")).unwrap();
    let want = fixture["quick"]["cpu"].as_array().unwrap();
    let data = Shakespeare::load().unwrap();
    let mut cfg = Config::for_stage(Stage::Cpu);
    cfg.train.max_iters = 100;
    cfg.train.eval_interval = 100;
    let mut trainer = Trainer::new(cfg);
    let mut stage = report::Stage::standalone("cpu");
    let dir = std::env::temp_dir().join(format!("gpt-loop-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trained = gpt::train(
        &mut trainer,
        &data,
        &mut stage,
        &dir.join("cpu.safetensors"),
        1000,
    )
    .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(trained.steps, 100);
    assert_eq!(trained.evals.len(), want.len());
    for (got, want) in trained.evals.iter().zip(want) {
        for (split, value) in [("train", got.train), ("val", got.val)] {
            let w = want[split].as_f64().unwrap();
            assert!(
                (value as f64 - w).abs() < 1e-4,
                "iteration {}: {split} loss {value}, PyTorch {w}",
                want["iter"]
            );
        }
    }
}
