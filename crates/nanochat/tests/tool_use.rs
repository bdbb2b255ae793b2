//! The gated number of tool use: a model trained from scratch on the arithmetic conversations
//! alone (GSM8K's form, `<<12+30=42>>` as a python call and its output) answers held-out
//! problems by calling the calculator; an answer counts when the integer before
//! `<|assistant_end|>` is right. Three seeds (the model's initialisation); each must clear the
//! floor. The model: depth 2 (128 channels, two heads of 64), a 512-token tokenizer trained on
//! the problems, rows of 128 tokens, 8 rows a step, nanochat's optimizer and SFT schedule.

mod common;

use nanochat::chat_eval::{accuracy, final_integer, run_generative_eval};
use nanochat::tasks::{Arithmetic, Split};

const HELD_OUT: usize = 100;
/// Steps of 8 rows × 128 tokens. At 220 steps the three seeds scored 1.00, 0.98 and 0.98; at
/// 150, 0.00, 0.72 and 0.94 (seed 1 still learning the copy); at 300, 1.00 each.
const STEPS: usize = 250;
/// The floor every seed must clear.
const FLOOR: f64 = 0.9;

fn train_and_evaluate(seed: u64, tokenizer: &nanochat::Tokenizer) -> f64 {
    let steps = std::env::var("TOOL_USE_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(STEPS);
    let (model, last) = common::train_arithmetic(seed, steps, tokenizer);
    let held_out = Arithmetic::new(HELD_OUT, Split::Test);
    let outcomes = run_generative_eval(&model, tokenizer, &held_out, HELD_OUT, 64).unwrap();
    let called = outcomes.iter().filter(|o| o.called_tool).count();
    let acc = accuracy(&outcomes);
    println!(
        "seed {seed}: {steps} steps, last loss {last:.4}, {called}/{HELD_OUT} called the calculator, accuracy {acc:.2}"
    );
    for o in outcomes.iter().take(2) {
        println!(
            "  Q: {}\n  A: {:?} ({})",
            o.question, o.completion, o.correct
        );
    }
    assert!(
        called >= 90,
        "seed {seed}: {called} of {HELD_OUT} answers called the calculator"
    );
    acc
}

#[test]
fn final_integer_reads_gsm8ks_answer() {
    assert_eq!(final_integer("#### 42"), Some(42));
    assert_eq!(final_integer("so 1,234 apples.\n#### 1,234"), Some(1234));
    assert_eq!(final_integer("It is -7."), Some(-7));
    assert_eq!(final_integer("no number"), None);
}

#[test]
fn a_model_trained_on_arithmetic_answers_with_the_calculator() {
    let tokenizer = common::arithmetic_tokenizer();
    let accuracies: Vec<f64> = [1, 2, 3]
        .iter()
        .map(|&seed| train_and_evaluate(seed, &tokenizer))
        .collect();
    println!("accuracies over seeds 1, 2, 3: {accuracies:?}");
    for (seed, acc) in [1, 2, 3].iter().zip(&accuracies) {
        assert!(
            *acc >= FLOOR,
            "seed {seed}: accuracy {acc}, below the floor {FLOOR}"
        );
    }
}
