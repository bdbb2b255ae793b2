//! The `char-rnn` binary: both spellings of the flags, `-init_from`, and bad
//! input (each a clear error naming the file or the flag, and nothing lost).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs char-rnn with its runs-page mirror off (`ZTH_RUNS=`), so that tests
/// leave the workspace's runs page alone.
fn char_rnn(args: &[&str]) -> Output {
    char_rnn_with_runs(args, "")
}

fn char_rnn_with_runs(args: &[&str], runs: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_char-rnn"))
        .args(args)
        .env("ZTH_RUNS", runs)
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

/// The checkpoints of a run in `dir/cv`, by name (`lm_lstm_epoch…`).
fn checkpoints(dir: &Path) -> Vec<PathBuf> {
    let files = dir.join("cv").read_dir().unwrap();
    let mut saved: Vec<PathBuf> = files
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("lm_"))
        .collect();
    saved.sort();
    saved
}

/// The checkpoint `small_run` saved last.
fn last_checkpoint(dir: &Path) -> PathBuf {
    checkpoints(dir).pop().unwrap()
}

/// A small model for a few iterations, in char-rnn's spelling or ours.
fn small_run(dir: &Path, torch_spelling: bool) -> String {
    let out = small_run_with_runs(dir, torch_spelling, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// [`small_run`] with its runs page in `runs` (empty: none).
fn small_run_with_runs(dir: &Path, torch_spelling: bool, runs: &str) -> Output {
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
    char_rnn_with_runs(&[&["train"], flags].concat(), runs)
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
    assert_eq!(checkpoints(&a).len(), 2, "two evaluations, two checkpoints");
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

#[test]
fn a_run_keeps_its_record_and_shows_on_the_runs_page() {
    let dir = shakespeare_dir("record");
    let runs = dir.join("runs");
    let cv = dir.join("cv");
    let out = small_run_with_runs(&dir, true, s(&runs)); // into dir/cv
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8(out.stdout).unwrap();
    let printed: Vec<f64> = log
        .lines()
        .filter_map(|l| l.split("train_loss = ").nth(1))
        .map(|l| l[..10].parse().unwrap())
        .collect();

    // report.json: the last train loss as printed, the last val loss as the
    // last checkpoint's name gives it.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cv.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["tool"], "char-rnn");
    assert!(report["finished_at"].is_string(), "{report}");
    let stage = &report["stages"][0];
    assert_eq!(stage["steps"], 6);
    let last_train = stage["final"]["train"].as_f64().unwrap();
    assert!(
        (last_train - printed[5]).abs() < 1e-8,
        "{last_train} vs {printed:?}"
    );
    let val = stage["final"]["val"].as_f64().unwrap();
    let saved = last_checkpoint(&dir);
    let name = saved.file_name().unwrap().to_str().unwrap();
    assert!(
        name.ends_with(&format!("_{val:.4}.safetensors")),
        "{name} vs {val}"
    );

    // loss.csv: one row per iteration, the val losses at iterations 3 and 6.
    let csv = std::fs::read_to_string(cv.join("loss.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 6, "{csv}");
    let with_val: Vec<&str> = rows
        .iter()
        .filter(|r| r.split(',').nth(3).is_some_and(|v| !v.is_empty()))
        .map(|r| r.split(',').next().unwrap())
        .collect();
    assert_eq!(with_val, ["2", "5"], "0-based steps: {csv}");

    // samples.txt: sample.lua's 200 bytes at temperature 0.8 from the last
    // checkpoint, with the run's seed.
    let samples = std::fs::read_to_string(cv.join("samples.txt")).unwrap();
    let (head, text) = samples.split_once('\n').unwrap();
    assert_eq!(head, "iteration 6, temperature 0.8, seed 123:");
    let sampled = ok(&[
        "sample",
        s(&saved),
        "-length",
        "200",
        "-temperature",
        "0.8",
        "-verbose",
        "0",
    ]);
    assert_eq!(text.len(), 201, "{text:?}");
    assert_eq!(text, sampled);

    // The runs page has the run among the tools' runs.
    let tools: Vec<PathBuf> = runs
        .join("tools")
        .read_dir()
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert!(tools[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("char-rnn-cv-"));
    for file in ["report.json", "loss.csv", "loss.png", "samples.txt"] {
        assert!(tools[0].join(file).is_file(), "{file} is not on the page");
    }
    let page = std::fs::read_to_string(runs.join("index.html")).unwrap();
    assert!(
        page.contains("char-rnn-cv-"),
        "the page does not list the run"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
