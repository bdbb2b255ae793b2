//! A random GPT-2 saved by `transformers` (`fixtures/tiny/`), loaded here and
//! run against what `transformers` computed for it (`fixtures/tiny_expected.safetensors`,
//! made by `fixtures/make_fixtures.py`): logits, loss and every gradient.

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
fn logits_loss_and_every_gradient_match_transformers() {
    let bytes = std::fs::read(fixtures().join("tiny_expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&bytes).unwrap();
    let (model, mut params) = gpt2::hf::from_pretrained(&fixtures().join("tiny")).unwrap();
    let (x, y) = (ints(&expected, "x"), ints(&expected, "y"));
    let graph = Graph::new();
    let pass = ForwardPass::eval(&graph, &params);
    let logits = model.forward(&pass, &x, 2, 16); // (2, 16, 64)
    let diff = max_abs_diff(&logits.value().to_vec(), &floats(&expected, "logits"));
    assert!(diff < 1e-4, "logits differ from transformers' by {diff}");
    let loss = logits.reshape(&[32, 64]).cross_entropy(&y);
    let want = floats(&expected, "loss")[0];
    assert!(
        (loss.item() - want).abs() < 1e-4,
        "loss {} vs transformers' {want}",
        loss.item()
    );
    params.zero_grad();
    loss.backward_into(&mut params);
    let mut checked = 0;
    for (_, p) in params.iter() {
        let key = format!("grad.{}", p.name);
        let grad = p
            .grad
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no gradient", p.name));
        // transformers' Conv1D weights are (in, out); ours are (out, in).
        let conv1d = p.name.ends_with("c_attn.weight")
            || p.name.ends_with("c_proj.weight")
            || p.name.ends_with("c_fc.weight");
        let ours = if conv1d {
            grad.transpose(0, 1).contiguous()
        } else {
            grad.clone()
        };
        let theirs = floats(&expected, &key);
        let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = max_abs_diff(&ours.to_vec(), &theirs);
        assert!(
            diff <= 1e-4 * scale,
            "{}: gradient differs by {diff}, largest entry {scale}",
            p.name
        );
        checked += 1;
    }
    assert_eq!(
        checked,
        2 + 3 * 12 + 2,
        "every parameter's gradient was compared"
    );
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

#[test]
fn the_kv_cache_draws_the_same_tokens() {
    let bytes = std::fs::read(fixtures().join("tiny_vocab_expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&bytes).unwrap();
    let (model, params) = gpt2::hf::from_pretrained(&fixtures().join("tiny-vocab")).unwrap();
    let prompt = ints(&expected, "prompt");
    // The demo, and a longer run that fills the 64-position context.
    for (rows, length, seed) in [(5, 30, 42), (3, 64, 7)] {
        let plain = gpt2::sample::generate(
            &model,
            &params,
            &prompt,
            rows,
            length,
            50,
            &mut tensor::rng::TorchGenerator::manual_seed(seed),
        )
        .unwrap();
        let cached = gpt2::kv_cache::generate(
            &model,
            &params,
            &prompt,
            rows,
            length,
            50,
            &mut tensor::rng::TorchGenerator::manual_seed(seed),
        )
        .unwrap();
        assert_eq!(plain, cached, "{rows} × {length}, seed {seed}");
    }
    let want = ints(&expected, "samples");
    let cached = gpt2::kv_cache::generate(
        &model,
        &params,
        &prompt,
        5,
        30,
        50,
        &mut tensor::rng::TorchGenerator::manual_seed(42),
    )
    .unwrap();
    assert_eq!(cached.concat(), want, "PyTorch's tokens");
}

#[test]
fn cached_logits_equal_the_full_forwards() {
    let (model, params) = gpt2::hf::from_pretrained(&fixtures().join("tiny")).unwrap();
    let ids: Vec<usize> = (0..16).map(|i| (i * 7 + 3) % 64).collect();
    let full = gpt2::sample::logits(&model, &params, &ids)
        .unwrap()
        .to_vec(); // (16, 64)
                   // A 5-token prefill, a 3-token chunk on top of it, then one token at a time.
    let mut cache = gpt2::kv_cache::KvCache::new(model.config.n_layer);
    let mut cached = Vec::new();
    let mut at = 0;
    for chunk in [5, 3, 1, 1, 1, 1, 1, 1, 1, 1] {
        let step = gpt2::kv_cache::forward_cached(
            &model,
            &params,
            &ids[at..at + chunk],
            1,
            chunk,
            &mut cache,
        )
        .unwrap();
        cached.extend(step.to_vec());
        at += chunk;
    }
    assert_eq!(at, 16);
    assert!(
        max_abs_diff(&full, &cached) < 1e-5,
        "{}",
        max_abs_diff(&full, &cached)
    );
    // The context is full: one more position is an error, not a panic.
    let e = gpt2::kv_cache::forward_cached(&model, &params, &[1], 1, 1, &mut cache).unwrap_err();
    assert!(e.contains("after 16 cached: the context holds 16"), "{e}");
    let mut fresh = gpt2::kv_cache::KvCache::new(model.config.n_layer);
    gpt2::kv_cache::forward_cached(&model, &params, &[1, 2], 2, 1, &mut fresh).unwrap();
    let e = gpt2::kv_cache::forward_cached(&model, &params, &[1], 1, 1, &mut fresh).unwrap_err();
    assert!(e.contains("a batch of 1 rows on a cache of 2"), "{e}");
}

/// A loaded GPT-2 attends with the fused op (`flash`); at GPT-2's whole
/// context, T = 1024, it gives the lecture's lines' logits and gradients bit
/// for bit, on a small model of full context.
#[test]
fn flash_attention_gives_the_lines_bits_at_t_1024() {
    use autograd::{Init, Params};
    use gpt2::model::{Gpt, GptConfig, InitScheme};
    let config = GptConfig {
        block_size: 1024,
        vocab_size: 96,
        n_layer: 2,
        n_head: 4,
        n_embd: 32,
    };
    let mut rng = tensor::rng::TorchGenerator::manual_seed(1024);
    let mut params = Params::new();
    let mut model = Gpt::new(
        &mut Init::new(&mut params, &mut rng),
        config,
        InitScheme::Gpt2,
    );
    let tokens = rng.randint(0, 96, &[1025]);
    let x: Vec<usize> = tokens[..1024].iter().map(|&t| t as usize).collect();
    let y: Vec<usize> = tokens[1..].iter().map(|&t| t as usize).collect();
    let mut run = |flash: bool| {
        model.set_flash(flash);
        params.zero_grad();
        let graph = Graph::new();
        let pass = ForwardPass::eval(&graph, &params);
        let logits = model.forward(&pass, &x, 1, 1024); // (1, 1024, 96)
        let values = logits.value().to_vec();
        logits
            .reshape(&[1024, 96])
            .cross_entropy(&y)
            .backward_into(&mut params);
        let grads: Vec<Vec<f32>> = params
            .iter()
            .map(|(_, p)| p.grad.as_ref().expect("a gradient").to_vec())
            .collect();
        (values, grads)
    };
    let (lines, lines_grads) = run(false);
    let (fused, fused_grads) = run(true);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&fused), bits(&lines), "logits at T = 1024");
    for (i, (f, l)) in fused_grads.iter().zip(&lines_grads).enumerate() {
        assert_eq!(bits(f), bits(l), "gradient of parameter {i}");
    }
}
