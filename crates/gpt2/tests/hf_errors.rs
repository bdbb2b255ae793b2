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
    assert!(e.contains("NaN") && e.contains("tensor"), "{e}");
}

#[test]
fn a_config_that_disagrees_with_the_tensors() {
    let dir = broken("n_embd", |_| {}, |c| c["n_embd"] = 64.into());
    let e = error_of(&dir);
    assert!(
        e.contains("expected shape") && e.contains("found") && e.contains("config.json"),
        "{e}"
    );
    let dir = broken("fewer-layers", |_| {}, |c| c["n_layer"] = 2.into());
    assert!(error_of(&dir).contains("is not a GPT-2 parameter"));
    let dir = broken("more-layers", |_| {}, |c| c["n_layer"] = 4.into());
    assert!(error_of(&dir).contains("missing tensor transformer.h.3"));
    let dir = broken(
        "activation",
        |_| {},
        |c| c["activation_function"] = "relu".into(),
    );
    assert!(error_of(&dir).contains("config.json: activation_function"));
}

#[test]
fn an_unknown_preset_lists_the_known_ones() {
    let e = gpt2::GptConfig::preset("gpt3").unwrap_err();
    assert!(e.contains("gpt3") && e.contains("gpt2-medium"), "{e}");
    for name in gpt2::GptConfig::PRESETS {
        assert!(gpt2::GptConfig::preset(name).is_ok());
    }
}
