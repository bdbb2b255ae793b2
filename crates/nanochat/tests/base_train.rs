//! nanochat's GPT and base_train.py against nanochat's own code at 92d63d4 (fixtures made by
//! `tests/fixtures/base_train/make_fixtures.py`: base_train.py run on a CPU in float32, eager).
//!
//! Eight runs: tiny Shakespeare and a text in five scripts, depths 2 and 4, window patterns `SL`
//! and `L`. For each: every parameter's name, shape and initial bytes (seed 42), and the first
//! batch's loss.

use std::path::PathBuf;

use autograd::{ForwardPass, Graph};
use nanochat::gpt::{Gpt, GptConfig};
use nanochat::pickle;
use nanochat::tokenizer::Tokenizer;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tensor::rng::TorchGenerator;

const RUNS: [&str; 8] = [
    "shakespeare_d2_SL",
    "shakespeare_d2_L",
    "shakespeare_d4_SL",
    "shakespeare_d4_L",
    "own_text_d2_SL",
    "own_text_d2_L",
    "own_text_d4_SL",
    "own_text_d4_L",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/base_train")
}

fn record(run: &str) -> Value {
    let path = fixtures().join(format!("{run}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn tokenizer() -> Tokenizer {
    let path = fixtures().join("tokenizer_4096.pkl");
    let state = pickle::loads(&std::fs::read(&path).unwrap()).unwrap();
    Tokenizer::from_state(state, "tokenizer_4096.pkl").unwrap()
}

/// The value of `--name=value` in the run's argv.
fn flag(record: &Value, name: &str) -> String {
    let prefix = format!("--{name}=");
    record["argv"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str().unwrap().strip_prefix(&prefix))
        .next()
        .unwrap_or_else(|| panic!("no --{name}"))
        .to_string()
}

/// base_train's model: depth and window pattern from the run, nanochat's defaults otherwise
/// (aspect ratio 64, head dimension 128).
fn model_of(record: &Value, vocab_size: usize) -> Gpt {
    let depth: usize = flag(record, "depth").parse().unwrap();
    let seq: usize = flag(record, "max-seq-len").parse().unwrap();
    let config = GptConfig::from_depth(
        depth,
        64,
        128,
        seq,
        vocab_size,
        &flag(record, "window-pattern"),
    )
    .unwrap();
    let mut rng = TorchGenerator::manual_seed(42);
    Gpt::new(config, &mut rng).unwrap()
}

fn rows(v: &Value) -> (Vec<u32>, Vec<i32>, usize) {
    let inputs = v["inputs"].as_array().unwrap();
    let flat = |key: &str| -> Vec<i64> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap().iter().map(|x| x.as_i64().unwrap()))
            .collect()
    };
    let idx = flat("inputs").into_iter().map(|x| x as u32).collect();
    let targets = flat("targets").into_iter().map(|x| x as i32).collect();
    (idx, targets, inputs.len())
}

#[test]
fn the_initial_weights_are_nanochats_bit_for_bit() {
    let vocab = tokenizer().vocab_size();
    for run in RUNS {
        let record = record(run);
        let model = model_of(&record, vocab);
        let expected = record["params"].as_array().unwrap();
        let ours: Vec<_> = model.params.iter().collect();
        assert_eq!(
            ours.len(),
            expected.len(),
            "{run}: the number of parameters"
        );
        for ((_, p), e) in ours.iter().zip(expected) {
            let name = e[0].as_str().unwrap();
            assert_eq!(p.name, name, "{run}");
            let shape: Vec<usize> = e[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(p.value.shape(), &shape[..], "{run} {name}");
            let bytes: Vec<u8> = p
                .value
                .to_vec()
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            let sha = format!("{:x}", Sha256::digest(&bytes));
            assert_eq!(
                sha,
                e[2].as_str().unwrap(),
                "{run} {name}: the initial values differ"
            );
        }
    }
}

#[test]
fn the_first_loss_is_nanochats() {
    let vocab = tokenizer().vocab_size();
    for run in RUNS {
        let record = record(run);
        let model = model_of(&record, vocab);
        let (idx, targets, b) = rows(&record);
        let graph = Graph::new();
        let pass = ForwardPass::eval(&graph, &model.params);
        let loss = model.loss(&pass, &idx, &targets, b).item();
        let expected = record["losses"][0].as_f64().unwrap();
        let gap = (loss as f64 - expected).abs();
        assert!(
            gap <= 1e-5,
            "{run}: first loss {loss} vs nanochat's {expected} (gap {gap:.2e})"
        );
        eprintln!("{run}: first loss {loss} vs {expected} (gap {gap:.1e})");
    }
}
