//! The `bpe` command line: train, encode, decode, stats, and its error messages.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bpe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpe"))
        .args(args)
        .output()
        .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bpe-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// An empty input file.
fn empty() -> String {
    let p = tmp("empty.txt");
    std::fs::write(&p, "").unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn train_encode_decode_round_trip_with_invalid_utf8() {
    let input = tmp("input.txt");
    let mut text = b"the cat sat on the mat; the cat ate the rat. ".repeat(20);
    text.extend_from_slice(b"\xff\xfe not utf-8 \xe2\x82");
    std::fs::write(&input, &text).unwrap();
    let prefix = tmp("model");
    let out = bpe(&[
        "train",
        "--vocab-size",
        "270",
        "--pattern",
        "gpt2",
        "--input",
        input.to_str().unwrap(),
        "--out",
        prefix.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model = format!("{}.model", prefix.display());
    assert!(std::fs::read_to_string(&model)
        .unwrap()
        .starts_with("minbpe v1\n"));

    let out = bpe(&["encode", "--model", &model, input.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Vec<u32> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(ids.len() < text.len());
    let ids_file = tmp("ids.json");
    std::fs::write(&ids_file, &out.stdout).unwrap();

    let out = bpe(&["decode", "--model", &model, ids_file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, text);

    let out = bpe(&["stats", "--model", &model, input.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("tokens:            {}", ids.len())),
        "{stdout}"
    );
    assert!(stdout.contains("round trip:        exact"), "{stdout}");
}

#[test]
fn clear_errors() {
    let out = bpe(&["encode", "--model", "/nonexistent/x.model", &empty()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.model"));

    // Neither --model nor --encoding: clap says so.
    let out = bpe(&["encode", &empty()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model"));

    let bad = tmp("bad.json");
    std::fs::write(&bad, "[1, 2, \"x\"]").unwrap();
    let model = tmp("empty");
    let input = tmp("tiny.txt");
    std::fs::write(&input, "abab").unwrap();
    let out = bpe(&[
        "train",
        "--vocab-size",
        "257",
        "--pattern",
        "none",
        "--input",
        input.to_str().unwrap(),
        "--out",
        model.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model = format!("{}.model", model.display());
    let out = bpe(&["decode", "--model", &model, bad.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected a JSON array of token ids"));

    // A text too short for the vocabulary asked for.
    let out = bpe(&[
        "train",
        "--vocab-size",
        "300",
        "--input",
        input.to_str().unwrap(),
        "--out",
        tmp("short").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("only allows"));
}

#[test]
fn missing_data_names_the_file_and_the_fix() {
    let no_data = tmp("no-data");
    std::fs::create_dir_all(&no_data).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bpe"))
        .args(["encode", "--encoding", "cl100k_base", &empty()])
        .env("ZTH_DATA", &no_data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tokenizers/cl100k_base.tiktoken"), "{err}");
    assert!(
        err.contains("cargo xtask data") && err.contains("ZTH_DATA=DIR"),
        "{err}"
    );
}

#[test]
fn an_out_prefix_that_cannot_be_written_is_refused_before_training() {
    let input = tmp("unwritable.txt");
    std::fs::write(&input, "aaab".repeat(50)).unwrap();
    let out = bpe(&[
        "train",
        "--vocab-size",
        "258",
        "--input",
        input.to_str().unwrap(),
        "--out",
        "/proc/zth-bpe/model",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot create --out /proc/zth-bpe") && !stderr.contains("trained"),
        "{stderr}"
    );
}
