//! The CORE metric against nanochat's own `core_eval.py` and base_eval.py's `evaluate_core` at
//! 92d63d4, on a small eval bundle in nanochat's format (fixtures made by
//! `tests/fixtures/core_eval/make_fixtures.py`): five tasks of the three kinds, zero-shot and
//! few-shot, with custom delimiters, contexts to trim and text beyond ASCII. Every example's
//! token rows and scored spans equal, every choice's mean loss within 1e-5, every verdict,
//! accuracy, centered result, the CORE metric, the printed lines and the CSV equal. From the
//! same weights, base_eval.py's samples token for token as nanochat's `Engine.generate_batch`
//! gives them. Then the bundle's bad inputs, each refused naming the file.

use nanochat::base_train::run::greedy_sample;
use nanochat::core_eval::{evaluate_core, results_csv, Bundle};
use nanochat::engine::{generate_batch, Sampling};
use nanochat::gpt::{Gpt, GptConfig};
use nanochat::pickle;
use nanochat::tokenizer::Tokenizer;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tensor::rng::TorchGenerator;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn expected() -> Value {
    let path = fixtures().join("core_eval/expected.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn tokenizer() -> Tokenizer {
    let path = fixtures().join("base_train/tokenizer_4096.pkl");
    let state = pickle::loads(&std::fs::read(&path).unwrap()).unwrap();
    Tokenizer::from_state(state, "tokenizer_4096.pkl").unwrap()
}

/// The fixture's model: base_train's init after `torch.manual_seed(42)`, then each parameter
/// in `named_parameters()` order plus `std · randn` from a generator of its own.
fn model(recipe: &Value, vocab_size: usize) -> Gpt {
    let n = |key: &str| recipe[key].as_u64().unwrap() as usize;
    let config = GptConfig::from_depth(
        n("depth"),
        n("aspect_ratio"),
        n("head_dim"),
        n("max_seq_len"),
        vocab_size,
        recipe["window_pattern"].as_str().unwrap(),
    )
    .unwrap();
    let mut model = Gpt::new(config, &mut TorchGenerator::manual_seed(42)).unwrap();
    let ids: HashMap<String, _> = model
        .params
        .iter()
        .map(|(id, p)| (p.name.clone(), id))
        .collect();
    let mut noise = TorchGenerator::manual_seed(recipe["noise_seed"].as_u64().unwrap());
    let std = recipe["noise_std"].as_f64().unwrap() as f32;
    let order = recipe["parameter_order"].as_array().unwrap();
    assert_eq!(order.len(), ids.len(), "parameters");
    for name in order {
        let param = model.params.get_mut(ids[name.as_str().unwrap()]);
        let shape = param.value.shape().to_vec();
        let draws = noise.randn(&shape).to_vec();
        let values: Vec<f32> = param
            .value
            .to_vec()
            .iter()
            .zip(&draws)
            .map(|(&w, &r)| w + r * std) // p.add_(torch.randn(shape) * std): two roundings
            .collect();
        param.value = tensor::Tensor::from_vec(values, &shape);
    }
    model
}

fn without_time(line: &str) -> &str {
    line.split(" | time: ").next().unwrap()
}

#[test]
fn core_metric_equals_nanochats_on_a_small_bundle() {
    let expected = expected();
    let tokenizer = tokenizer();
    let model = model(&expected["model"], tokenizer.vocab_size());
    let bundle = Bundle::open(&fixtures().join("core_eval/eval_bundle")).unwrap();
    let mut printed = Vec::new();
    let results = evaluate_core(&model, &tokenizer, &bundle, -1, &mut |l| printed.push(l)).unwrap();

    let tasks = expected["tasks"].as_array().unwrap();
    assert_eq!(results.tasks.len(), tasks.len());
    let mut largest_gap = 0f64;
    for (ours, theirs) in results.tasks.iter().zip(tasks) {
        let label = &ours.label;
        assert_eq!(label, theirs["label"].as_str().unwrap());
        let examples = theirs["examples"].as_array().unwrap();
        assert_eq!(ours.verdicts.len(), examples.len(), "{label}: examples");
        for (i, (verdict, example)) in ours.verdicts.iter().zip(examples).enumerate() {
            let rows: Vec<Vec<u32>> = serde_json::from_value(example["tokens"].clone()).unwrap();
            let start: Vec<usize> = serde_json::from_value(example["start"].clone()).unwrap();
            let end: Vec<usize> = serde_json::from_value(example["end"].clone()).unwrap();
            assert_eq!(verdict.batch.tokens, rows, "{label} {i}: tokens");
            assert_eq!(
                (&verdict.batch.start, &verdict.batch.end),
                (&start, &end),
                "{label} {i}: spans"
            );
            let means: Vec<f64> = serde_json::from_value(example["mean_losses"].clone()).unwrap();
            assert_eq!(verdict.mean_losses.len(), means.len(), "{label} {i}");
            for (a, b) in verdict.mean_losses.iter().zip(&means) {
                let gap = (a - b).abs();
                largest_gap = largest_gap.max(gap);
                assert!(gap <= 1e-5, "{label} {i}: mean loss {a} vs nanochat's {b}");
            }
            assert_eq!(
                verdict.correct,
                example["correct"].as_bool().unwrap(),
                "{label} {i}: verdict"
            );
        }
        assert_eq!(
            ours.accuracy,
            theirs["accuracy"].as_f64().unwrap(),
            "{label}"
        );
        assert_eq!(
            ours.centered,
            theirs["centered"].as_f64().unwrap(),
            "{label}"
        );
    }
    assert_eq!(
        results.core_metric,
        expected["core_metric"].as_f64().unwrap()
    );
    let printed: Vec<&str> = printed.iter().map(|l| without_time(l)).collect();
    let theirs: Vec<&str> = expected["printed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(printed, theirs);
    assert_eq!(results_csv(&results), expected["csv"].as_str().unwrap());
    eprintln!(
        "CORE {:.4} as nanochat's; mean losses within {largest_gap:.1e}",
        results.core_metric
    );
}

fn token_rows(v: &Value) -> Vec<Vec<u32>> {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn samples_equal_nanochats_engine() {
    let expected = expected();
    let tokenizer = tokenizer();
    let model = model(&expected["model"], tokenizer.vocab_size());
    let samples = &expected["samples"];
    // base_eval.py's conditioned samples: 16 tokens at temperature 0.
    let prompts = samples["greedy"]["prompts"].as_array().unwrap();
    let greedy = token_rows(&samples["greedy"]["tokens"]);
    for (prompt, theirs) in prompts.iter().zip(&greedy) {
        let ours = greedy_sample(&model, &tokenizer, prompt.as_str().unwrap(), 16).unwrap();
        assert_eq!(&ours, theirs, "{prompt}");
    }
    // The unconditioned samples: 8 rows of 128 tokens at temperature 1, seed 42.
    let bos = [tokenizer.bos_token_id()];
    for kv_cache in [true, false] {
        let sampling = Sampling {
            kv_cache,
            ..Sampling::UNCONDITIONED
        };
        let ours = generate_batch(&model, &tokenizer, &bos, sampling).unwrap();
        assert_eq!(
            ours,
            token_rows(&samples["unconditioned"]),
            "cache {kv_cache}"
        );
    }
    // Top-k at a lower temperature, another seed.
    let top_k = &samples["top_k"];
    let n = |key: &str| top_k[key].as_u64().unwrap() as usize;
    let mut prompt = bos.to_vec();
    prompt.extend(tokenizer.encode(top_k["prompt"].as_str().unwrap()));
    for kv_cache in [true, false] {
        let sampling = Sampling {
            num_samples: n("num_samples"),
            max_tokens: n("max_tokens"),
            temperature: top_k["temperature"].as_f64().unwrap() as f32,
            top_k: Some(n("top_k")),
            seed: top_k["seed"].as_u64().unwrap(),
            kv_cache,
        };
        let ours = generate_batch(&model, &tokenizer, &prompt, sampling).unwrap();
        assert_eq!(ours, token_rows(&top_k["tokens"]), "cache {kv_cache}");
    }
}

#[test]
fn the_cache_gives_the_logits_of_the_whole_sequence() {
    use nanochat::kv_cache::KvCache;
    let expected = expected();
    let tokenizer = tokenizer();
    let model = model(&expected["model"], tokenizer.vocab_size());
    // 70 tokens: past the short windows (32) of the fixture's SL pattern.
    let mut ids = vec![tokenizer.bos_token_id()];
    let text = "First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. ";
    ids.extend(tokenizer.encode(&text.repeat(3)));
    let t = ids.len();
    assert!(t > 64, "{t}");
    let v = model.config.vocab_size;
    let graph = autograd::Graph::no_grad();
    let pass = autograd::ForwardPass::eval(&graph, &model.params);
    let whole = model.forward(&pass, &ids, 1, None).value().to_vec(); // (1, T, V)
                                                                      // A prefill of 20 tokens, then one token at a time.
    let mut cache = KvCache::new(model.config.n_layer);
    let mut cached = model
        .forward_cached(&ids[..20], 1, &mut cache)
        .unwrap()
        .to_vec();
    for &id in &ids[20..] {
        cached.extend(model.forward_cached(&[id], 1, &mut cache).unwrap().to_vec());
    }
    assert_eq!(cached.len(), t * v);
    let gap = whole
        .iter()
        .zip(&cached)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    eprintln!("cached and whole-sequence logits part by {gap:.1e} at most over {t} positions");
    assert!(gap <= 1e-5, "{gap}");
}

/// A copy of the fixture bundle in a fresh folder, for damaging.
fn bundle_copy(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("core-eval-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let from = fixtures().join("core_eval/eval_bundle");
    std::fs::create_dir_all(dir.join("eval_data/shakespeare")).unwrap();
    for file in ["core.yaml", "eval_meta_data.csv"] {
        std::fs::copy(from.join(file), dir.join(file)).unwrap();
    }
    for entry in std::fs::read_dir(from.join("eval_data/shakespeare")).unwrap() {
        let path = entry.unwrap().path();
        let to = dir
            .join("eval_data/shakespeare")
            .join(path.file_name().unwrap());
        std::fs::copy(&path, to).unwrap();
    }
    dir
}

#[test]
fn a_missing_or_damaged_bundle_is_refused_naming_the_file() {
    let absent = std::env::temp_dir().join("no-such-eval-bundle");
    let e = Bundle::open(&absent).unwrap_err();
    assert!(
        e.contains("no-such-eval-bundle") && e.contains("eval_bundle.zip"),
        "{e}"
    );

    let dir = bundle_copy("type");
    let yaml = std::fs::read_to_string(dir.join("core.yaml")).unwrap();
    std::fs::write(
        dir.join("core.yaml"),
        yaml.replacen("icl_task_type: schema", "icl_task_type: generation", 1),
    )
    .unwrap();
    let e = Bundle::open(&dir).unwrap_err();
    assert!(e.contains("core.yaml") && e.contains("generation"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();

    let dir = bundle_copy("baseline");
    let csv = std::fs::read_to_string(dir.join("eval_meta_data.csv")).unwrap();
    std::fs::write(
        dir.join("eval_meta_data.csv"),
        csv.replacen(",25.0,", ",many,", 1),
    )
    .unwrap();
    let e = Bundle::open(&dir).unwrap_err();
    assert!(
        e.contains("eval_meta_data.csv") && e.contains("line 2"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let dir = bundle_copy("data");
    let bundle = Bundle::open(&dir).unwrap();
    let data = dir.join("eval_data/shakespeare/mc_speaker.jsonl");
    let text = std::fs::read_to_string(&data).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = r#"{"query": "Who speaks?", "choices": ["A", "B"], "gold": 2}"#;
    std::fs::write(&data, lines.join("\n")).unwrap();
    let e = bundle.examples(&bundle.tasks[1]).unwrap_err();
    assert!(
        e.contains("mc_speaker.jsonl: line 3") && e.contains("gold"),
        "{e}"
    );
    lines[2] = "{\"query\": \"Who";
    std::fs::write(&data, lines.join("\n")).unwrap();
    let e = bundle.examples(&bundle.tasks[1]).unwrap_err();
    assert!(e.contains("mc_speaker.jsonl: line 3: not JSON"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
