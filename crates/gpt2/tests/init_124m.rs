//! The 124M model at init against PyTorch running build-nanogpt's `GPT`
//! (`fixtures/make_fixtures.py`, `gpt2_124m_init.json`): every tensor's
//! SHA-256, the parameter count, and the loss on the lecture's first batch.

use autograd::{ForwardPass, Graph};
use bpe::{AllowedSpecial, Gpt2Tokenizer};
use gpt2::{Gpt, GptConfig, InitScheme};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/gpt2_124m_init.json")).unwrap()
}

/// The lecture's first batch: the first 4·32+1 GPT-2 tokens of tiny Shakespeare's
/// first 1,000 characters (build-nanogpt 92b5bf9), encoded by `bpe`'s r50k.
fn first_batch() -> Vec<usize> {
    let text = std::fs::read_to_string(data::path("tinyshakespeare.txt").unwrap()).unwrap();
    let text: String = text.chars().take(1000).collect();
    let tok = Gpt2Tokenizer::from_data_dir().unwrap().into_inner();
    let ids = tok.encode(&text, &AllowedSpecial::NoneRaise).unwrap();
    ids[..4 * 32 + 1].iter().map(|&i| i as usize).collect()
}

fn check(key: &str, scheme: InitScheme) {
    let fx = &fixture()[key];
    let (model, params) = Gpt::seeded(GptConfig::preset("gpt2").unwrap(), scheme, 1337);
    assert_eq!(
        params.count() as u64,
        fx["parameters"].as_u64().unwrap(),
        "{key}: parameters"
    );
    let hashes = fx["sha256"].as_object().unwrap();
    assert_eq!(params.len(), hashes.len(), "{key}: tensors");
    for (_, p) in params.iter() {
        let bytes: Vec<u8> = p
            .value
            .to_vec()
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let got = format!("{:x}", Sha256::digest(&bytes));
        let want = hashes
            .get(&p.name)
            .unwrap_or_else(|| panic!("{key}: PyTorch has no {}", p.name));
        assert_eq!(
            got,
            want.as_str().unwrap(),
            "{key}: {} differs from PyTorch's init",
            p.name
        );
    }
    let tokens = first_batch();
    let batch: Vec<usize> = fixture()["batch_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(
        tokens, batch,
        "bpe's r50k and tiktoken's gpt2 tokens of the first batch"
    );
    let (x, y) = (&tokens[..128], &tokens[1..]);
    let graph = Graph::no_grad();
    let loss = model
        .loss(&ForwardPass::eval(&graph, &params), x, y, 4, 32)
        .item() as f64;
    let want = fx["loss"].as_f64().unwrap();
    assert!(
        (loss - want).abs() < 1e-5,
        "{key}: loss {loss}, PyTorch {want}"
    );
}

#[test]
fn gpt2_init_equals_pytorchs_tensor_for_tensor_and_gives_its_loss() {
    check("gpt2_init", InitScheme::Gpt2);
}

#[test]
fn default_init_untied_equals_pytorchs_tensor_for_tensor_and_gives_its_loss() {
    check("default_init_untied", InitScheme::PyTorchDefaultUntied);
}

#[test]
fn parameter_counts_at_both_vocab_sizes() {
    // The padded vocabulary of build-nanogpt 7230096 ("vocab size 50257 -> 50304 nice").
    for (vocab, want) in [(50257, 124_439_808), (50304, 124_475_904)] {
        let config = GptConfig {
            vocab_size: vocab,
            ..GptConfig::preset("gpt2").unwrap()
        };
        let c = config.n_embd;
        // Count without drawing: wte, wpe, 12 blocks, ln_f.
        let block = 2 * c
            + (3 * c * c + 3 * c)
            + (c * c + c)
            + 2 * c
            + (4 * c * c + 4 * c)
            + (4 * c * c + c);
        let count = vocab * c + config.block_size * c + config.n_layer * block + 2 * c;
        assert_eq!(count, want, "formula at vocab {vocab}");
        assert_eq!(
            config.parameter_count(),
            Some(want as u64),
            "GptConfig::parameter_count"
        );
        let (_, params) = Gpt::seeded(config, InitScheme::Gpt2, 0);
        assert_eq!(params.count(), want, "built model at vocab {vocab}");
    }
}
