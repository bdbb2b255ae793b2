//! Lecture 2 against what PyTorch prints for the lecture's code
//! (`tests/fixtures/make_bigram_fixtures.py` → `bigram_torch.json`).
//! Needs names.txt: set ZTH_DATA to the datasets folder (`cargo xtask test` does).

use data::makemore::{bigrams, context_windows, words};
use makemore_bigram::counting::{average_nll, average_nll_f32_running_sum, BigramCounts};
use makemore_bigram::exercises::TrigramCounts;
use makemore_bigram::neural::{train, Encoding, LossFormula};
use makemore_bigram::sampling::sample_names;
use makemore_bigram::LECTURE_SEED;
use serde_json::Value;
use tensor::rng::TorchGenerator;

fn torch() -> Value {
    serde_json::from_str(include_str!("fixtures/bigram_torch.json")).unwrap()
}

fn pairs() -> Vec<(usize, usize)> {
    bigrams(&words().unwrap_or_else(|e| panic!("{e}")))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn counting_model_likelihood_and_samples() {
    let pairs = pairs();
    assert_eq!(pairs.len() as u64, torch()["bigrams"].as_u64().unwrap());
    let counts = BigramCounts::from_pairs(&pairs);
    // f64 NLL: computed from the notebook's code (makemore_part1_bigrams.ipynb cell[23] and
    // cell[26]) on a fresh kernel, in f64: exact arithmetic of the same formula.
    assert!(
        (average_nll(&counts.probabilities_f64(1.0), &pairs) - 2.4545768201157023).abs() < 1e-12
    );
    let p = counts.probabilities(1.0);
    let f32_sum = average_nll_f32_running_sum(&p, &pairs) as f64;
    assert_eq!(
        f32_sum,
        torch()["counting_nll_f32_running_sum"].as_f64().unwrap()
    );
    let samples = sample_names(&mut TorchGenerator::manual_seed(LECTURE_SEED), 5, |ix| {
        p.narrow(0, ix, 1).reshape(&[27])
    });
    assert_eq!(samples, strings(&torch()["counting_samples"]));
}

/// The first `steps` losses of a training run, through the lecture's loop.
fn losses(encoding: Encoding, formula: LossFormula, steps: usize) -> Vec<f32> {
    let pairs = pairs();
    let xs: Vec<usize> = pairs.iter().map(|p| p.0).collect();
    let ys: Vec<usize> = pairs.iter().map(|p| p.1).collect();
    let mut stage = report::Stage::standalone("neural");
    let (_, losses) = train(
        LECTURE_SEED,
        &xs,
        &ys,
        steps,
        encoding,
        formula,
        &mut stage,
        "neural",
    )
    .unwrap();
    losses
}

#[test]
fn trigram_counts_give_pytorchs_likelihood() {
    // E01 by counting (tests/fixtures/trigram.py → trigram.json): every name
    // padded as `..name.`, smoothing 1, all 228,146 predictions, in f64.
    let fixture: Value = serde_json::from_str(include_str!("fixtures/trigram.json")).unwrap();
    let (x, y) = context_windows(&words().unwrap_or_else(|e| panic!("{e}")), 2);
    assert_eq!(y.len() as u64, fixture["predictions"].as_u64().unwrap());
    let nll = TrigramCounts::from_windows(&x, &y).average_nll(1.0, &x, &y);
    let want = fixture["average_nll"].as_f64().unwrap();
    assert!(
        (nll - want).abs() < 1e-12,
        "trigram NLL {nll}, PyTorch {want}"
    );
}

#[test]
fn neural_bigram_follows_torch_step_by_step() {
    let reference = torch()["neural_losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect::<Vec<_>>();
    for (step, (ours, theirs)) in losses(Encoding::OneHot, LossFormula::Lecture, 5)
        .iter()
        .zip(&reference)
        .enumerate()
    {
        assert!(
            (*ours as f64 - theirs).abs() < 1e-5,
            "step {step}: ours {ours}, torch {theirs}"
        );
    }
}

#[test]
fn row_indexing_and_cross_entropy_agree_with_the_lecture_formula() {
    let lecture = losses(Encoding::OneHot, LossFormula::Lecture, 3);
    for (encoding, formula) in [
        (Encoding::RowIndex, LossFormula::Lecture),
        (Encoding::OneHot, LossFormula::CrossEntropy),
    ] {
        for (a, b) in lecture.iter().zip(losses(encoding, formula, 3)) {
            assert!((a - b).abs() < 1e-5, "{encoding:?}/{formula:?}: {a} vs {b}");
        }
    }
}
