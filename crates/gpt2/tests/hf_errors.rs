//! Bad model folders: each gets an error naming the file and the problem.

use gpt2::hf::from_pretrained;
use std::path::{Path, PathBuf};

fn tiny() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny")
}

/// A copy of the tiny model with its safetensors bytes and config changed.
fn broken(
    name: &str,
    edit_file: impl FnOnce(&mut Vec<u8>),
    edit_config: impl FnOnce(&mut serde_json::Value),
) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpt2-hf-errors-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bytes = std::fs::read(tiny().join("model.safetensors")).unwrap();
    edit_file(&mut bytes);
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tiny().join("config.json")).unwrap())
            .unwrap();
    edit_config(&mut config);
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    dir
}

fn error_of(dir: &Path) -> String {
    match from_pretrained(dir) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => e,
    }
}

fn header_len(bytes: &[u8]) -> usize {
    u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize
}

#[test]
fn a_truncated_file_names_the_tensor_past_the_end() {
    let dir = broken("truncated", |b| b.truncate(b.len() / 2), |_| {});
    let e = error_of(&dir);
    assert!(
        e.contains("model.safetensors") && e.contains("truncated"),
        "{e}"
    );
    let dir = broken("tiny-file", |b| b.truncate(5), |_| {});
    assert!(error_of(&dir).contains("less than the 8-byte header length"));
}

#[test]
fn a_header_that_claims_more_than_the_file_holds() {
    let dir = broken(
        "long-header",
        |b| b[..8].copy_from_slice(&(1u64 << 40).to_le_bytes()),
        |_| {},
    );
    let e = error_of(&dir);
    assert!(
        e.contains("model.safetensors") && e.contains("the header claims"),
        "{e}"
    );
}

#[test]
fn a_damaged_header_is_an_error_not_a_panic() {
    // A flipped byte in the JSON.
    let dir = broken("json", |b| b[8] ^= 0x40, |_| {});
    assert!(error_of(&dir).contains("damaged header"));
    // A shape that no longer matches its byte range: "[32, 96]" becomes "[32, 97]".
    let dir = broken(
        "shape",
        |b| {
            let n = header_len(b);
            let header = String::from_utf8(b[8..8 + n].to_vec()).unwrap();
            let header = header.replacen("[32,96]", "[32,97]", 1);
            assert_eq!(header.len(), n, "the edit keeps the header's length");
            b[8..8 + n].copy_from_slice(header.as_bytes());
        },
        |_| {},
    );
    let e = error_of(&dir);
    assert!(
        e.contains("damaged header") && e.contains("c_attn.weight"),
        "{e}"
    );
}

#[test]
fn a_nan_in_a_tensor_names_the_tensor() {
    let dir = broken(
        "nan",
        |b| {
            let at = b.len() - 4; // the last float of the last tensor in the data
            b[at..].copy_from_slice(&f32::NAN.to_le_bytes());
        },
        |_| {},
    );
    let e = error_of(&dir);
    // The last tensor in the data holds the NaN.
    let header = gpt2::hf::SafeTensors::open(&tiny().join("model.safetensors")).unwrap();
    let (last, _) = header.tensors.iter().max_by_key(|(_, t)| t.end).unwrap();
    assert!(e.contains(&format!("tensor {last} holds NaN")), "{e}");
}

#[test]
fn a_config_that_disagrees_with_the_tensors() {
    // More parameters than the file holds: refused before anything is allocated.
    for (name, key, value) in [
        ("n_embd", "n_embd", 64u64),
        ("more-layers", "n_layer", 4u64),
        ("huge", "vocab_size", 1u64 << 40),
    ] {
        let dir = broken(name, |_| {}, |c| c[key] = value.into());
        let e = error_of(&dir);
        assert!(
            e.contains("config.json describes") && e.contains("more than the"),
            "{name}: {e}"
        );
    }
    // Fewer: the first tensor whose shape differs is named.
    let dir = broken(
        "narrow",
        |_| {},
        |c| {
            c["n_embd"] = 16.into();
            c["n_head"] = 2.into();
        },
    );
    let e = error_of(&dir);
    assert!(
        e.contains("expected shape") && e.contains("found") && e.contains("config.json"),
        "{e}"
    );
    let dir = broken("fewer-layers", |_| {}, |c| c["n_layer"] = 2.into());
    assert!(error_of(&dir).contains("is not a GPT-2 parameter"));
    let dir = broken(
        "activation",
        |_| {},
        |c| c["activation_function"] = "relu".into(),
    );
    assert!(error_of(&dir).contains("config.json: activation_function"));
    let dir = broken("zero", |_| {}, |c| c["n_layer"] = 0.into());
    assert!(error_of(&dir).contains("config.json: n_layer is 0"));
}

#[test]
fn a_tensor_stored_twice_is_an_error() {
    // "transformer.h.0.ln_1.bias" renamed to "h.0.ln_2.bias", padded with spaces
    // to the same length: the file now holds ln_2.bias twice, under both spellings.
    let dir = broken(
        "twice",
        |b| {
            let n = header_len(b);
            let header = String::from_utf8(b[8..8 + n].to_vec()).unwrap();
            let from = "\"transformer.h.0.ln_1.bias\"";
            let to = format!("{:<width$}", "\"h.0.ln_2.bias\"", width = from.len());
            let header = header.replacen(from, &to, 1);
            b[8..8 + n].copy_from_slice(header.as_bytes());
        },
        |_| {},
    );
    assert!(error_of(&dir).contains("stored twice"));
}

#[test]
fn a_stored_head_must_be_the_tied_embedding() {
    let bytes = std::fs::read(tiny().join("model.safetensors")).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let wte = file.tensor("transformer.wte.weight").unwrap();
    let mut flipped = wte.data().to_vec();
    flipped[0] ^= 1;
    for (name, head, ok) in [
        ("head-same", wte.data().to_vec(), true),
        ("head-differs", flipped, false),
    ] {
        let mut tensors: Vec<(String, safetensors::tensor::TensorView)> =
            file.tensors().into_iter().collect();
        tensors.push((
            "lm_head.weight".into(),
            safetensors::tensor::TensorView::new(
                safetensors::Dtype::F32,
                wte.shape().to_vec(),
                &head,
            )
            .unwrap(),
        ));
        let out = safetensors::serialize(tensors, None).unwrap();
        let dir = broken(name, |b| *b = out.clone(), |_| {});
        match from_pretrained(&dir) {
            Ok(_) => assert!(ok, "{name} loaded"),
            Err(e) => assert!(
                !ok && e.contains("lm_head.weight differs from wte"),
                "{name}: {e}"
            ),
        }
    }
}

#[test]
fn an_unknown_preset_lists_the_known_ones() {
    let e = gpt2::GptConfig::preset("gpt3").unwrap_err();
    assert!(e.contains("gpt3") && e.contains("gpt2-medium"), "{e}");
    for name in gpt2::GptConfig::PRESETS {
        assert!(gpt2::GptConfig::preset(name).is_ok());
    }
}
