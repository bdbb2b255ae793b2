//! The base folder, end to end, as a new user builds it: `nanochat data` (the shards served on
//! 127.0.0.1), then `tok-train`, then `base-train --format pt`, each the binary itself. The
//! folder it leaves is laid out file for file as nanochat's own dataset.py, tok_train.py and
//! base_train.py leave theirs (`tests/fixtures/base_folder/listing.txt`, made by them with
//! the same shards and flags), with our run files beside the checkpoint; the tokenizer is
//! theirs byte for byte, and `token_bytes.pt` holds their counts.

mod shard_server;

use nanochat::pt;
use shard_server::{serve, Answer};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `nanochat <argv>` with `base` as its base folder; panics with its output if it fails.
fn nanochat(base: &Path, argv: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_nanochat"))
        .args(argv)
        .env("NANOCHAT_BASE_DIR", base)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nanochat {}:\n{}{}",
        argv.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap();
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn data_then_tok_train_then_base_train_leave_nanochats_folder() {
    let shard = |i: usize| std::fs::read(fixtures().join(format!("shards/shard_{i:05}.parquet")));
    let files = vec![
        ("/shard_00000.parquet".to_string(), shard(0).unwrap()),
        ("/shard_06542.parquet".to_string(), shard(1).unwrap()),
    ];
    let server = serve(files, 2, vec![Answer::Whole; 2]);
    let base = std::env::temp_dir().join(format!("nanochat-base-folder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let url = format!("--base-url={}", server.base);
    nanochat(&base, &["data", "-n", "1", "-w", "1", &url]);
    server.handle.join().unwrap();
    nanochat(&base, &["tok-train", "--vocab-size=512"]);
    nanochat(
        &base,
        &[
            "base-train",
            "--depth=2",
            "--aspect-ratio=16",
            "--head-dim=32",
            "--max-seq-len=64",
            "--device-batch-size=2",
            "--total-batch-size=128",
            "--num-iterations=4",
            "--eval-every=-1",
            "--core-metric-every=-1",
            "--sample-every=-1",
            "--device-type=cpu",
            "--format=pt",
        ],
    );

    let theirs: Vec<String> = std::fs::read_to_string(fixtures().join("base_folder/listing.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let ours = listing(&base);
    let missing: Vec<&String> = theirs.iter().filter(|f| !ours.contains(f)).collect();
    assert!(
        missing.is_empty(),
        "nanochat's files we do not leave: {missing:?}"
    );
    // Beside the checkpoint, the run files every trainer here writes (README, "Runs").
    let extra: Vec<&String> = ours.iter().filter(|f| !theirs.contains(f)).collect();
    let run_files = ["loss.csv", "loss.png", "loss.svg", "report.json"];
    let expected_extra: Vec<String> = run_files
        .iter()
        .map(|f| format!("base_checkpoints/d2/{f}"))
        .collect();
    assert_eq!(extra, expected_extra.iter().collect::<Vec<_>>());

    let read = |path: PathBuf| std::fs::read(path).unwrap();
    assert!(
        read(base.join("tokenizer/tokenizer.pkl"))
            == read(fixtures().join("base_folder/tokenizer.pkl")),
        "tok-train on the shards is not tok_train.py's tokenizer"
    );
    assert_eq!(
        pt::load(&read(base.join("tokenizer/token_bytes.pt"))).unwrap(),
        pt::load(&read(fixtures().join("base_folder/token_bytes.pt"))).unwrap()
    );
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn tok_train_on_a_text_file_sees_only_the_documents_base_train_trains_on() {
    let shakespeare = data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"));
    let base = std::env::temp_dir().join(format!("nanochat-tok-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let input = format!("--input={}", shakespeare.display());
    nanochat(&base, &["tok-train", "--vocab-size=512", &input]);
    assert!(
        std::fs::read(base.join("tokenizer/tokenizer.pkl")).unwrap()
            == std::fs::read(fixtures().join("base_folder/shakespeare_tokenizer.pkl")).unwrap(),
        "tok-train --input is not tok_train.py on the text's train shard"
    );
    let _ = std::fs::remove_dir_all(&base);
}
