//! Lecture 9's `cpu` recipe with bfloat16 products (`gpt2 lecture --quick --dtype bfloat16`):
//! its first five losses against PyTorch's run under bfloat16 autocast
//! (tests/fixtures/cpu_stage.py), the same on one thread and on two.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// The report of a quick bfloat16 lecture run on `threads` threads.
fn quick_run(threads: usize) -> Value {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("bfloat16-{threads}"));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["lecture", "--quick", "--dtype", "bfloat16", "--out"])
        .arg(&out)
        .env("ZTH_THREADS", threads.to_string())
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        run.status.success(),
        "{}\n{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    let report = std::fs::read_to_string(out.join("bfloat16/report.json")).unwrap();
    serde_json::from_str(&report).unwrap()
}

/// The first-five-losses target of a report.
fn first_steps(report: &Value) -> Value {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["targets"].as_array().unwrap())
        .find(|t| t["name"].as_str().unwrap().contains("first 5 losses"))
        .cloned()
        .expect("a first-steps target")
}

#[test]
fn the_cpu_recipe_in_bfloat16_meets_pytorchs_autocast_and_is_the_same_on_one_thread_and_two() {
    let (one, two) = (first_steps(&quick_run(1)), first_steps(&quick_run(2)));
    println!("{one}");
    assert_eq!(one["pass"], true, "against PyTorch's autocast: {one}");
    assert_eq!(one["measured"], two["measured"], "1 thread against 2");
    assert_eq!(one["measured"].as_array().unwrap().len(), 5);
}
