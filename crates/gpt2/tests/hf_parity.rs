//! A random GPT-2 saved by `transformers` (`fixtures/tiny/`), loaded here and
//! run against what `transformers` computed for it (`fixtures/tiny_expected.safetensors`,
//! made by `fixtures/make_fixtures.py`).

use autograd::{ForwardPass, Graph};
use safetensors::SafeTensors;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn floats(st: &SafeTensors, name: &str) -> Vec<f32> {
    let t = st.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    t.data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn ints(st: &SafeTensors, name: &str) -> Vec<usize> {
    let t = st.tensor(name).unwrap();
    t.data()
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

#[test]
fn logits_match_transformers() {
    let bytes = std::fs::read(fixtures().join("tiny_expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&bytes).unwrap();
    let (model, params) = gpt2::hf::from_pretrained(&fixtures().join("tiny")).unwrap();
    let x = ints(&expected, "x");
    let graph = Graph::no_grad();
    let logits = model.forward(&ForwardPass::eval(&graph, &params), &x, 2, 16); // (2, 16, 64)
    let diff = max_abs_diff(&logits.value().to_vec(), &floats(&expected, "logits"));
    assert!(diff < 1e-4, "logits differ from transformers' by {diff}");
}

#[test]
fn the_full_vocabulary_model_gives_transformers_prompt_logits() {
    let bytes = std::fs::read(fixtures().join("tiny_vocab_expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&bytes).unwrap();
    let (model, params) = gpt2::hf::from_pretrained(&fixtures().join("tiny-vocab")).unwrap();
    assert_eq!(model.config.vocab_size, 50257);
    let prompt = ints(&expected, "prompt");
    let graph = Graph::no_grad();
    let logits = model.forward(
        &ForwardPass::eval(&graph, &params),
        &prompt,
        1,
        prompt.len(),
    );
    let diff = max_abs_diff(
        &logits.value().to_vec(),
        &floats(&expected, "prompt_logits"),
    );
    assert!(
        diff < 1e-4,
        "prompt logits differ from transformers' by {diff}"
    );
}

#[test]
fn the_sampling_demo_draws_pytorchs_tokens() {
    let bytes = std::fs::read(fixtures().join("tiny_vocab_expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&bytes).unwrap();
    let (model, params) = gpt2::hf::from_pretrained(&fixtures().join("tiny-vocab")).unwrap();
    let prompt = ints(&expected, "prompt");
    let mut rng = tensor::rng::TorchGenerator::manual_seed(42);
    let rows = gpt2::sample::generate(&model, &params, &prompt, 5, 30, 50, &mut rng).unwrap();
    let want = ints(&expected, "samples");
    assert_eq!(
        rows.concat(),
        want,
        "5 × 30 tokens, top-k 50, manual_seed(42)"
    );
}
