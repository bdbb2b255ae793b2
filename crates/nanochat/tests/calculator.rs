//! The calculator against nanochat's own `use_calculator` (engine.py at 92d63d4, fixtures by
//! `tests/fixtures/calculator/make_fixtures.py`): 93 expressions, each with the same answer or
//! the same refusal but for the two that the Rust calculator leaves out on purpose. Then hostile
//! input, each refused: huge numbers and powers, deep nesting, long input, names and dunders;
//! and 20,000 random expressions over the calculator's own alphabets, none of which may panic.

use nanochat::calculator::{python_float_repr, use_calculator, MAX_INPUT};
use serde_json::Value;
use std::path::Path;

/// Python evaluates these; the calculator leaves them out (see its docs).
const LEFT_OUT: [&str; 2] = ["()", "\"abc\".upper().count(\"A\")"];

#[test]
fn answers_as_nanochats_use_calculator() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calculator/expected.json");
    let cases: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(cases.len(), 93);
    for case in &cases {
        let expr = case["expr"].as_str().unwrap();
        let theirs = case["result"].as_str();
        let ours = use_calculator(expr);
        if LEFT_OUT.contains(&expr) {
            assert!(theirs.is_some() && ours.is_none(), "{expr}");
        } else {
            assert_eq!(ours.as_deref(), theirs, "{expr}");
        }
    }
}

#[test]
fn python_float_repr_switches_to_exponents_where_python_does() {
    // Printed by CPython 3.11: repr() of each.
    for (x, repr) in [
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (1.5e-4, "0.00015"),
        (1.5e-5, "1.5e-05"),
        (123456789012345680.0, "1.2345678901234568e+17"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-2.5, "-2.5"),
        (0.0, "0.0"),
        (f64::INFINITY, "inf"),
    ] {
        assert_eq!(python_float_repr(x), repr, "{x:e}");
    }
}

#[test]
fn hostile_expressions_are_refused() {
    let deep = format!("{}1{}", "(".repeat(150), ")".repeat(150));
    let long_sum = vec!["1"; MAX_INPUT / 2 + 1].join("+");
    let huge = format!("{}*{}", "9".repeat(60), "9".repeat(60));
    let hostile = [
        "9**9**9".to_string(),
        "2**100000".to_string(),
        deep,
        long_sum,
        huge,
        "9".repeat(40),
        "-".repeat(200) + "1",
        "'a'*10**9".to_string(),
        "\"x\".count(\"x\")".repeat(100),
        "(\"a\" \"a\").count(\"a\"".to_string(),
        "__import__('os').system('ls')".to_string(),
        "open('x').read().count('a')".to_string(),
        "\"a\".count(\"a\"); import os".to_string(),
        "'\u{0}'.count('a')".to_string(),
    ];
    for expr in &hostile {
        assert_eq!(use_calculator(expr), None, "{expr}");
    }
    // Just inside the bounds, the answer comes.
    let near = format!("{}1{}", "(".repeat(40), ")".repeat(40));
    assert_eq!(use_calculator(&near).as_deref(), Some("1"));
    let sum = vec!["1"; MAX_INPUT / 2].join("+");
    assert_eq!(use_calculator(&sum).as_deref(), Some("500"));
}

#[test]
fn random_expressions_never_panic() {
    let mut rng = pyrandom::PyRandom::seed(2026);
    let alphabets = [
        "0123456789*+-/.() ,",
        "abcxyz'\"()._ 0123456789count",
        "12+-*/().'\"c",
    ];
    for i in 0..20_000 {
        let alphabet: Vec<char> = alphabets[i % 3].chars().collect();
        let len = rng.randbelow(40) as usize;
        let expr: String = (0..len)
            .map(|_| alphabet[rng.randbelow(alphabet.len() as u64) as usize])
            .collect();
        let _ = use_calculator(&expr); // an answer or None, never a panic
    }
}

/// The 4,096-token tokenizer of the base_train fixtures.
fn tokenizer() -> nanochat::Tokenizer {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/base_train/tokenizer_4096.pkl");
    let state = nanochat::pickle::loads(&std::fs::read(&path).unwrap()).unwrap();
    nanochat::Tokenizer::from_state(state, "tokenizer_4096.pkl").unwrap()
}

#[test]
fn the_engine_forces_the_calculators_answer_after_python_end() {
    use nanochat::engine::{RowState, ToolTokens};
    let tokenizer = tokenizer();
    let tools = ToolTokens::of(&tokenizer).unwrap();
    let filler = tokenizer.encode(" so")[0];
    let mut row = RowState::default();
    let mut feed = |sampled: u32| row.next(sampled, &tools, &tokenizer).unwrap();
    // The model writes <|python_start|>1,000*3+12<|python_end|>; what it samples next is
    // ignored while the answer is forced in, each forced token marked 0.
    let mut written = vec![tools.python_start];
    written.extend(tokenizer.encode("1,000*3+12"));
    written.push(tools.python_end);
    for &token in &written {
        assert_eq!(feed(token), (token, true));
    }
    let mut forced = vec![tools.output_start];
    forced.extend(tokenizer.encode("3012"));
    forced.push(tools.output_end);
    for &token in &forced {
        assert_eq!(feed(filler), (token, false));
    }
    assert_eq!(feed(filler), (filler, true));
    // A refused expression forces nothing; a stray <|python_end|> does nothing.
    for token in [tools.python_start, tokenizer.encode("2**10")[0]] {
        feed(token);
    }
    for token in tokenizer.encode("2**10").into_iter().skip(1) {
        feed(token);
    }
    assert_eq!(feed(tools.python_end), (tools.python_end, true));
    assert_eq!(feed(filler), (filler, true));
    assert_eq!(feed(tools.python_end), (tools.python_end, true));
    assert_eq!(feed(filler), (filler, true));
}
