//! The `char-rnn` binary: both spellings of the flags, `-init_from`, and bad
//! input (each a clear error naming the file or the flag, and nothing lost).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn char_rnn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_char-rnn"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = char_rnn(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = char_rnn(args);
    assert!(!out.status.success(), "{args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn folder(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("char-rnn-cli-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A folder with the first 40,000 bytes of tiny Shakespeare as input.txt.
fn shakespeare_dir(label: &str) -> PathBuf {
    let dir = folder(label);
    let text =
        std::fs::read(data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"))).unwrap();
    std::fs::write(dir.join("input.txt"), &text[..40_000]).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The checkpoint `small_run` saved last (`lm_lstm_epoch…`, by name).
fn last_checkpoint(dir: &Path) -> PathBuf {
    let files = dir.join("cv").read_dir().unwrap();
    files.map(|e| e.unwrap().path()).max().unwrap()
}

/// A small model for a few iterations, in char-rnn's spelling or ours.
fn small_run(dir: &Path, torch_spelling: bool) -> String {
    let cv = dir.join("cv");
    let torch = [
        "-data_dir",
        s(dir),
        "-rnn_size",
        "32",
        "-batch_size",
        "10",
        "-seq_length",
        "20",
        "-max_iters",
        "6",
        "-eval_val_every",
        "3",
        "-checkpoint_dir",
        s(&cv),
        "-gpuid",
        "-1",
    ];
    let ours = [
        "--data-dir",
        s(dir),
        "--rnn-size",
        "32",
        "--batch-size",
        "10",
        "--seq-length",
        "20",
        "--max-iters",
        "6",
        "--eval-val-every",
        "3",
        "--checkpoint-dir",
        s(&cv),
        "--gpuid=-1",
    ];
    let flags: &[&str] = if torch_spelling { &torch } else { &ours };
    ok(&[&["train"], flags].concat())
}

#[test]
fn flags_in_either_spelling_train_the_same_model() {
    let a = shakespeare_dir("spelling-a");
    let b = shakespeare_dir("spelling-b");
    let losses = |log: String| -> Vec<String> {
        log.lines()
            .filter_map(|l| l.split("train_loss = ").nth(1))
            .map(|l| l[..10].to_string())
            .collect()
    };
    let (torch, ours) = (small_run(&a, true), small_run(&b, false));
    assert_eq!(losses(torch.clone()).len(), 6, "{torch}");
    assert_eq!(losses(torch), losses(ours));
    assert!(
        a.join("cv").read_dir().unwrap().count() == 2,
        "two evaluations, two checkpoints"
    );
    for d in [a, b] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn init_from_resumes_the_weights_and_overrides_the_model_flags() {
    let dir = shakespeare_dir("init-from");
    small_run(&dir, true);
    let saved = last_checkpoint(&dir);
    let first_fresh: f64 = {
        let log = small_run(&shakespeare_dir("init-from-fresh"), true);
        log.lines()
            .find_map(|l| l.split("train_loss = ").nth(1))
            .unwrap()[..10]
            .parse()
            .unwrap()
    };
    let cv2 = dir.join("cv2");
    let log = ok(&[
        "train",
        "-data_dir",
        s(&dir),
        "-init_from",
        s(&saved),
        "-rnn_size",
        "64",
        "-model",
        "gru",
        "-batch_size",
        "10",
        "-seq_length",
        "20",
        "-max_iters",
        "2",
        "-checkpoint_dir",
        s(&cv2),
    ]);
    assert!(
        log.contains("overwriting rnn_size=32, num_layers=2, model=lstm based on the checkpoint."),
        "{log}"
    );
    let first: f64 = log
        .lines()
        .find_map(|l| l.split("train_loss = ").nth(1))
        .unwrap()[..10]
        .parse()
        .unwrap();
    assert!(
        first < first_fresh - 0.2,
        "resumed at {first}, a fresh model starts at {first_fresh}"
    );

    // Another text's vocabulary is refused, naming the checkpoint.
    let other = folder("init-from-other");
    std::fs::write(other.join("input.txt"), "abc".repeat(1000)).unwrap();
    let err = fails(&[
        "train",
        "-data_dir",
        s(&other),
        "-init_from",
        s(&saved),
        "-batch_size",
        "10",
        "-seq_length",
        "20",
    ]);
    assert!(
        err.contains(s(&saved)) && err.contains("vocabulary"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_data_is_refused_by_name() {
    let dir = folder("bad-data");
    let err = fails(&["train", "-data_dir", s(&dir)]);
    assert!(err.contains("no input.txt"), "{err}");
    std::fs::write(dir.join("input.txt"), "").unwrap();
    let err = fails(&["train", "-data_dir", s(&dir)]);
    assert!(
        err.contains("input.txt") && err.contains("fewer than one batch"),
        "{err}"
    );
    std::fs::write(dir.join("input.txt"), "a short text").unwrap();
    let err = fails(&["train", "-data_dir", s(&dir)]);
    assert!(
        err.contains("12 bytes, fewer than one batch of 50 x 50"),
        "{err}"
    );
    std::fs::write(dir.join("input.txt"), "x".repeat(10_000)).unwrap();
    for (flags, says) in [
        (
            &["-train_frac", "0.9", "-val_frac", "0.2"][..],
            "add up to more than 1",
        ),
        (&["-seq_length", "0"][..], "-seq_length must be at least 1"),
        (
            &["-batch_size", "0"][..],
            "-batch_size and -seq_length must be at least 1",
        ),
        (
            &["-model", "transformer"][..],
            "unknown -model \"transformer\"",
        ),
        (&["-gpuid", "0"][..], "-gpuid 0"),
        (&["-opencl", "1"][..], "-opencl 1"),
    ] {
        let err = fails(&[&["train", "-data_dir", s(&dir)], flags].concat());
        assert!(err.contains(says), "{flags:?}: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn damaged_or_foreign_checkpoints_are_refused_by_name() {
    let dir = shakespeare_dir("damaged");
    small_run(&dir, false);
    let saved = last_checkpoint(&dir);
    let mut bytes = std::fs::read(&saved).unwrap();
    let damaged = dir.join("damaged.safetensors");
    let at = bytes.len() - 100;
    bytes[at] ^= 0x40;
    std::fs::write(&damaged, &bytes).unwrap();
    let err = fails(&["sample", s(&damaged)]);
    assert!(
        err.contains(s(&damaged)) && err.contains("damaged or edited"),
        "{err}"
    );
    let cut = dir.join("cut.safetensors");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = fails(&["sample", s(&cut)]);
    assert!(err.contains(s(&cut)) && err.contains("truncated"), "{err}");
    let foreign = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../gpt/tests/fixtures/nanogpt/sample_model.safetensors");
    let err = fails(&["sample", s(&foreign)]);
    assert!(
        err.contains("sample_model.safetensors") && err.contains("char-rnn"),
        "{err}"
    );

    // A prime text with a byte the model never saw: skipped, and said on stderr.
    let out = char_rnn(&[
        "sample",
        s(&saved),
        "-primetext",
        "TheZ~é",
        "-length",
        "5",
        "-verbose",
        "0",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in the model's vocabulary"));
    std::fs::remove_dir_all(dir).unwrap();
}
