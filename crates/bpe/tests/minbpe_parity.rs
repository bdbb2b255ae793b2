//! Our trainers and encoders against minbpe's Python (fixtures from tests/fixtures/make_fixtures.py).

mod common;

use bpe::{
    Algorithm, AllowedSpecial, BasicTokenizer, RegexTokenizer, GPT2_SPLIT_PATTERN,
    GPT4_SPECIAL_TOKENS, GPT4_SPLIT_PATTERN,
};
use common::*;

fn pattern(name: &str) -> &'static str {
    match name {
        "gpt4" => GPT4_SPLIT_PATTERN,
        "gpt2" => GPT2_SPLIT_PATTERN,
        "none" => "",
        other => panic!("unknown pattern {other}"),
    }
}

#[test]
fn training_cases_give_minbpes_merges_and_ids() {
    let cases = fixture_json("minbpe_cases.json");
    for case in cases["training"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let text = case["text"].as_str().unwrap();
        let vocab_size = case["vocab_size"].as_u64().unwrap() as usize;
        let want_merges = pairs(&case["merges"]);
        let want_ids = ids(&case["ids"]);
        for algo in [Algorithm::Plain, Algorithm::Incremental] {
            let (merges, got) = if case["pattern"] == "none" {
                let mut t = BasicTokenizer::new();
                t.train_with(text, vocab_size, algo).unwrap();
                (t.merges().list().to_vec(), t.encode(text))
            } else {
                let mut t =
                    RegexTokenizer::new(pattern(case["pattern"].as_str().unwrap())).unwrap();
                t.train_with(text, vocab_size, algo).unwrap();
                let got = t.encode(text, &AllowedSpecial::None).unwrap();
                (t.merges().list().to_vec(), got)
            };
            assert_eq!(merges, want_merges, "{name} {algo:?}: merges");
            assert_eq!(got, want_ids, "{name} {algo:?}: ids");
        }
    }
}

#[test]
fn taylorswift_512_is_minbpes_train_py() {
    let text = data_text("taylorswift.txt");
    let dir = std::env::temp_dir().join(format!("bpe-train-py-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let mut basic = BasicTokenizer::new();
    basic.train(&text, 512, false).unwrap();
    let ids = basic.encode(&text);
    assert_eq!(ids.len(), 78_746);
    assert_eq!(basic.decode(&ids).unwrap(), text);
    basic.save(dir.join("basic")).unwrap();

    let mut regex = RegexTokenizer::default();
    regex.train(&text, 512, false).unwrap();
    let ids = regex.encode(&text, &AllowedSpecial::NoneRaise).unwrap();
    assert_eq!(ids.len(), 87_339);
    assert_eq!(regex.decode(&ids).unwrap(), text);
    regex.save(dir.join("regex")).unwrap();

    // The whole model and vocab files, byte for byte, as minbpe's train.py wrote them.
    for f in ["basic.model", "basic.vocab", "regex.model", "regex.vocab"] {
        let ours = std::fs::read_to_string(dir.join(f)).unwrap();
        let theirs = std::fs::read_to_string(fixture_path(&format!("minbpe/{f}"))).unwrap();
        assert!(ours == theirs, "{f} differs from minbpe's");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn save_load_round_trip_matches_minbpe() {
    // minbpe test_save_load: 64 merges on llama_text, the GPT-4 specials registered.
    let cases = fixture_json("minbpe_cases.json");
    let case = &cases["save_load"];
    let text = case["text"].as_str().unwrap();

    let loaded = RegexTokenizer::load(fixture_path("minbpe/llama.model")).unwrap();
    let all = loaded.encode(text, &AllowedSpecial::All).unwrap();
    assert_eq!(all, ids(&case["ids_all"]));
    assert_eq!(
        loaded.encode(text, &AllowedSpecial::None).unwrap(),
        ids(&case["ids_none"])
    );
    let set = AllowedSpecial::Set(
        ["<|fim_prefix|>", "<|endofprompt|>"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    );
    assert_eq!(loaded.encode(text, &set).unwrap(), ids(&case["ids_set"]));
    assert_eq!(loaded.decode(&all).unwrap(), text);
    assert!(matches!(
        loaded.encode(text, &AllowedSpecial::NoneRaise),
        Err(bpe::Error::DisallowedSpecial(_))
    ));

    // Trained here and saved: the same file minbpe saved.
    let mut ours = RegexTokenizer::default();
    ours.train(text, 256 + 64, false).unwrap();
    ours.register_special_tokens(&GPT4_SPECIAL_TOKENS).unwrap();
    let prefix = std::env::temp_dir().join(format!("bpe-llama-{}", std::process::id()));
    let (model, vocab) = ours.save(&prefix).unwrap();
    let saved = std::fs::read_to_string(&model).unwrap();
    let theirs = std::fs::read_to_string(fixture_path("minbpe/llama.model")).unwrap();
    assert_eq!(saved, theirs);
    let reloaded = RegexTokenizer::load(&model).unwrap();
    assert_eq!(reloaded.encode(text, &AllowedSpecial::All).unwrap(), all);
    std::fs::remove_file(model).unwrap();
    std::fs::remove_file(vocab).unwrap();
}

#[test]
fn models_trained_here_give_the_same_ids_in_minbpes_python() {
    // rust/*.model were written by `bpe train`; make_fixtures.py loaded them in minbpe and
    // encoded the probe text.
    let fx = fixture_json("rust_model_in_python.json");
    let probe = fx["probe"].as_str().unwrap();
    let models = fx["models"].as_object().unwrap();
    assert!(
        models.len() >= 3,
        "expected the basic, gpt2 and gpt4 models"
    );
    for (name, want) in models {
        assert_eq!(want["decoded_ok"], true, "{name}: Python round trip");
        let t = RegexTokenizer::load(fixture_path(&format!("rust/{name}"))).unwrap();
        let got = t.encode(probe, &AllowedSpecial::None).unwrap();
        assert_eq!(got, ids(&want["ids"]), "{name}");
        assert_eq!(t.decode(&got).unwrap(), probe);
    }
}

#[test]
fn malformed_model_files_name_file_and_line() {
    let dir = std::env::temp_dir().join(format!("bpe-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.model");
    std::fs::write(&bad, "minbpe v1\n\n0\n97 97\n256 x\n").unwrap();
    let err = RegexTokenizer::load(&bad).unwrap_err().to_string();
    assert!(err.contains("bad.model:5"), "{err}");
    assert!(err.contains("expected a merge"), "{err}");

    let vocab = dir.join("bad.vocab");
    std::fs::write(&vocab, "[a] 97\n").unwrap();
    let err = RegexTokenizer::load(&vocab).unwrap_err().to_string();
    assert!(err.contains("expected a .model file"), "{err}");

    let err = RegexTokenizer::load(dir.join("missing.model"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.model"), "{err}");

    // A Regex model is not a Basic model.
    std::fs::write(&bad, format!("minbpe v1\n{GPT4_SPLIT_PATTERN}\n0\n")).unwrap();
    assert!(BasicTokenizer::load(&bad).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
