//! HellaSwag scored as build-nanogpt's hellaswag.py scores it, against
//! PyTorch running that method on the same model (`fixtures/hellaswag_expected.json`).

use gpt2::hellaswag::{evaluate, read_examples, render, score};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[test]
fn every_examples_losses_and_picks_match_pytorch() {
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("hellaswag_expected.json")).unwrap(),
    )
    .unwrap();
    let examples = read_examples(&fixtures().join("hellaswag_small.jsonl")).unwrap();
    let (model, params) = gpt2::hf::from_pretrained(&fixtures().join("tiny-vocab")).unwrap();
    let tok = bpe::Gpt2Tokenizer::from_data_dir().unwrap().into_inner();
    assert_eq!(examples.len(), 6);
    for (i, (example, want)) in examples
        .iter()
        .zip(expected.as_array().unwrap())
        .enumerate()
    {
        let rendered = render(example, &tok).unwrap();
        let want_rows: Vec<Vec<usize>> = serde_json::from_value(want["tokens"].clone()).unwrap();
        assert_eq!(rendered.rows, want_rows, "example {i}: tiktoken's tokens");
        let scores = score(&model, &params, &rendered);
        for k in 0..4 {
            for (ours, key) in [
                (scores.sum_loss[k], "sum_loss"),
                (scores.avg_loss[k], "avg_loss"),
            ] {
                let theirs = want[key][k].as_f64().unwrap() as f32;
                // The mean losses (about 11) within 1e-5. The sums reach 170, where one
                // f32 step is 1.5e-5: within 1e-5 of their size.
                let tol = if key == "sum_loss" {
                    1e-5 * theirs.abs()
                } else {
                    1e-5
                };
                assert!(
                    (ours - theirs).abs() <= tol,
                    "example {i} ending {k} {key}: {ours} vs PyTorch {theirs}"
                );
            }
        }
        assert_eq!(
            scores.pred(),
            want["pred"].as_u64().unwrap() as usize,
            "example {i}: acc's pick"
        );
        assert_eq!(
            scores.pred_norm(),
            want["pred_norm"].as_u64().unwrap() as usize,
            "example {i}: acc_norm's pick"
        );
    }
    let acc = evaluate(&model, &params, &tok, &examples, |_| {}).unwrap();
    let right = |key: &str| {
        expected
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e[key] == e["label"])
            .count()
    };
    assert_eq!(
        (acc.total, acc.correct, acc.correct_norm),
        (6, right("pred"), right("pred_norm"))
    );
    // The random model picks no right ending; relabel so both counters must move.
    let mut relabelled = examples.clone();
    for (i, (example, want)) in relabelled
        .iter_mut()
        .zip(expected.as_array().unwrap())
        .enumerate()
    {
        let key = if i < 4 { "pred" } else { "pred_norm" };
        example.label = want[key].as_u64().unwrap() as usize;
    }
    let acc = evaluate(&model, &params, &tok, &relabelled, |_| {}).unwrap();
    let agree = |a: &str, b: &str, range: std::ops::Range<usize>| {
        expected.as_array().unwrap()[range]
            .iter()
            .filter(|e| e[a] == e[b])
            .count()
    };
    assert_eq!(acc.correct, 4 + agree("pred", "pred_norm", 4..6));
    assert_eq!(acc.correct_norm, 2 + agree("pred_norm", "pred", 0..4));
}

#[test]
fn examples_the_model_cannot_score_are_errors() {
    let examples = read_examples(&fixtures().join("hellaswag_small.jsonl")).unwrap();
    let tok = bpe::Gpt2Tokenizer::from_data_dir().unwrap().into_inner();
    // The tiny model's vocabulary has 64 tokens: GPT-2's ids do not fit it.
    let (small, params) = gpt2::hf::from_pretrained(&fixtures().join("tiny")).unwrap();
    let e = evaluate(&small, &params, &tok, &examples, |_| {}).unwrap_err();
    assert!(e.contains("outside the model's vocabulary of 64"), "{e}");
    let mut empty = examples[0].clone();
    empty.ctx = String::new();
    assert!(render(&empty, &tok).unwrap_err().contains("empty context"));
}

#[test]
fn a_bad_line_names_the_file_and_line() {
    let path = std::env::temp_dir().join(format!("gpt2-hellaswag-{}.jsonl", std::process::id()));
    let good = std::fs::read_to_string(fixtures().join("hellaswag_small.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    for (bad, want) in [
        (
            first.replace("\"label\": 2", "\"label\": 7"),
            "label is not 0, 1, 2 or 3",
        ),
        (first.replace("\"ctx\":", "\"context\":"), "no string ctx"),
        ("{not json".to_string(), "not JSON"),
    ] {
        std::fs::write(&path, format!("{first}\n{bad}\n")).unwrap();
        let e = read_examples(&path).unwrap_err();
        assert!(
            e.contains(&format!("{}:2:", path.display())) && e.contains(want),
            "{e}"
        );
    }
}
