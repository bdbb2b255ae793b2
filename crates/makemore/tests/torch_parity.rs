//! makemore against PyTorch running makemore.py itself, unmodified
//! (`tests/fixtures/makemore_torch.py`, torch 2.15, `--max-steps 501
//! --num-workers 0`, seed 3407), and against its driver for the LSTM.
//!
//! For every type: the split, `vocab_size`, `block_size`, the parameter count
//! and the `state_dict` names and shapes exactly; the step-0 loss within 1e-5;
//! the losses of steps 0–200 within 1.5e-4 of makemore.py's printed values
//! and within 1e-5 of its full-precision ones (measured: 9.6e-7 at most); the
//! ten samples at step 200 word for word.

use makemore::data::words_from_bytes;
use makemore::model::state_dict;
use makemore::{ModelType, TrainConfig, Trainer};
use serde_json::Value;
use std::path::Path;

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn words(input: &str) -> Vec<String> {
    let bytes = match input {
        "names" => std::fs::read(data::path("names.txt").unwrap()).unwrap(),
        _ => std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/words_unicode.txt"),
        )
        .unwrap(),
    };
    words_from_bytes(&bytes, input).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Trains `kind` on `input` for 201 steps beside the fixture.
fn tracks_makemore_py(input: &str, kind: ModelType) {
    let fx = fixture(&format!("{input}_{}.json", kind.name()));
    let cfg = TrainConfig {
        kind,
        ..TrainConfig::default()
    };
    let mut trainer = Trainer::new(cfg, words(input)).unwrap();

    assert_eq!(
        trainer.data.all_words,
        fx["num_examples"].as_u64().unwrap() as usize
    );
    assert_eq!(
        trainer.data.train.len(),
        fx["train_size"].as_u64().unwrap() as usize
    );
    assert_eq!(
        trainer.data.test.len(),
        fx["test_size"].as_u64().unwrap() as usize
    );
    let vocab: String = trainer.data.vocab.chars().iter().collect();
    assert_eq!(vocab, fx["vocab"].as_str().unwrap());
    assert_eq!(
        trainer.config.vocab_size,
        fx["vocab_size"].as_u64().unwrap() as usize
    );
    assert_eq!(
        trainer.config.block_size,
        fx["block_size"].as_u64().unwrap() as usize
    );
    assert_eq!(
        trainer.params.count(),
        fx["n_params"].as_u64().unwrap() as usize
    );
    if kind == ModelType::Transformer {
        let line = format!(
            "number of parameters: {:.2}M",
            trainer.transformer_params() as f64 / 1e6
        );
        assert_eq!(line, fx["params_line"].as_str().unwrap());
    }
    let ours: Vec<(String, Vec<usize>)> = state_dict(kind, &trainer.config, &trainer.params)
        .into_iter()
        .map(|(name, t)| (name, t.shape().to_vec()))
        .collect();
    let theirs: Vec<(String, Vec<usize>)> =
        serde_json::from_value(fx["state_dict"].clone()).unwrap();
    assert_eq!(ours, theirs, "state_dict names and shapes");

    let full: Vec<f64> = serde_json::from_value(fx["losses"].clone()).unwrap();
    let printed: Vec<(usize, String)> =
        serde_json::from_value(fx["printed_losses"].clone()).unwrap();
    let mut worst = 0f64;
    for step in 0..=200 {
        let loss = trainer.step() as f64;
        if step == 0 {
            assert!(
                (loss - full[0]).abs() <= 1e-5,
                "{kind} step 0: {loss} against PyTorch's {}",
                full[0]
            );
        }
        worst = worst.max((loss - full[step]).abs());
        if let Some((_, p)) = printed.iter().find(|(s, _)| *s == step) {
            let p: f64 = p.parse().unwrap();
            assert!(
                (loss - p).abs() <= 1.5e-4,
                "{kind} step {step}: {loss:.6} against makemore.py's {p}"
            );
        }
    }
    assert!(
        worst <= 1e-5,
        "{kind}: a loss of steps 0-200 is {worst:e} from PyTorch's"
    );
    eprintln!("{input} {kind}: steps 0-200 within {worst:e} of PyTorch's full-precision losses");

    let samples = trainer.samples(10);
    let at_200 = &fx["samples"]["200"];
    assert_eq!(
        samples.in_train,
        strings(&at_200["train"]),
        "{kind}: samples in train at step 200"
    );
    assert_eq!(
        samples.in_test,
        strings(&at_200["test"]),
        "{kind}: samples in test at step 200"
    );
    assert_eq!(
        samples.new,
        strings(&at_200["new"]),
        "{kind}: new samples at step 200"
    );
}

#[test]
fn bigram_tracks_makemore_py() {
    tracks_makemore_py("names", ModelType::Bigram);
}

#[test]
fn mlp_tracks_makemore_py() {
    tracks_makemore_py("names", ModelType::Mlp);
}

#[test]
fn rnn_tracks_makemore_py() {
    tracks_makemore_py("names", ModelType::Rnn);
}

#[test]
fn gru_tracks_makemore_py() {
    tracks_makemore_py("names", ModelType::Gru);
}

#[test]
fn bow_tracks_makemore_py() {
    tracks_makemore_py("names", ModelType::Bow);
}

#[test]
fn transformer_tracks_makemore_py() {
    tracks_makemore_py("names", ModelType::Transformer);
}

#[test]
fn lstm_tracks_the_torch_driver() {
    tracks_makemore_py("names", ModelType::Lstm);
}

#[test]
fn unicode_crlf_file_bigram_tracks_makemore_py() {
    tracks_makemore_py("unicode", ModelType::Bigram);
}

#[test]
fn unicode_crlf_file_mlp_tracks_makemore_py() {
    tracks_makemore_py("unicode", ModelType::Mlp);
}

#[test]
fn unicode_crlf_file_transformer_tracks_makemore_py() {
    tracks_makemore_py("unicode", ModelType::Transformer);
}
