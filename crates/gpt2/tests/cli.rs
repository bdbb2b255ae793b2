//! The `gpt2` command: its JSON logits against `transformers`', and its errors.

use safetensors::SafeTensors;
use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn gpt2(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn logits_prints_transformers_logits_as_json_rows() {
    let bytes = std::fs::read(fixtures().join("tiny_vocab_expected.safetensors")).unwrap();
    let expected = SafeTensors::deserialize(&bytes).unwrap();
    let prompt: Vec<String> = expected
        .tensor("prompt")
        .unwrap()
        .data()
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_string())
        .collect();
    let model = fixtures().join("tiny-vocab");
    let (ok, stdout, stderr) = gpt2(&[
        "logits",
        "--model",
        model.to_str().unwrap(),
        "--ids",
        &prompt.join(","),
    ]);
    assert!(ok, "{stderr}");
    let rows: Vec<Vec<f32>> = serde_json::from_str(&stdout).unwrap();
    let want: Vec<f32> = expected
        .tensor("prompt_logits")
        .unwrap()
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!((rows.len(), rows[0].len()), (prompt.len(), 50257));
    let diff = rows
        .concat()
        .iter()
        .zip(&want)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        diff < 1e-4,
        "gpt2 logits differs from transformers by {diff}"
    );
}

#[test]
fn requests_the_model_cannot_serve_are_clear_errors() {
    let model = fixtures().join("tiny-vocab");
    let model = model.to_str().unwrap();
    // The tiny model's context is 64 tokens.
    let long: Vec<String> = (0..65).map(|i| i.to_string()).collect();
    let (ok, _, stderr) = gpt2(&["logits", "--model", model, "--ids", &long.join(",")]);
    assert!(
        !ok && stderr.contains("65 tokens: the context holds 1 to 64"),
        "{stderr}"
    );
    let (ok, _, stderr) = gpt2(&["sample", "--model", model, "--max-length", "65"]);
    assert!(
        !ok && stderr.contains("cannot generate 65 tokens"),
        "{stderr}"
    );
    let (ok, _, stderr) = gpt2(&["sample", "--model", model, "--num-return-sequences", "0"]);
    assert!(!ok && stderr.contains("asked for 0 sequences"), "{stderr}");
    let (ok, _, stderr) = gpt2(&["logits", "--model", "/nonexistent", "--ids", "1"]);
    assert!(
        !ok && stderr.contains("/nonexistent/config.json"),
        "{stderr}"
    );
}

#[test]
fn ddp_flags_are_errors_where_they_cannot_work() {
    // The video's stages take none of the recipe's flags.
    let (ok, _, stderr) = gpt2(&["train", "--stage", "init", "--ddp"]);
    assert!(!ok);
    assert!(stderr.contains("are for --stage cpu"), "{stderr}");
    // Started by mpirun as one of two, without --ddp: both would write the same files.
    let out = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["train", "--stage", "cpu", "--steps", "1"])
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .env("OMPI_COMM_WORLD_RANK", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("one of 2 that a launcher started") && stderr.contains("add --ddp"),
        "{stderr}"
    );
}

#[cfg(not(feature = "mpi"))]
#[test]
fn ddp_without_the_mpi_feature_says_how_to_build_it() {
    let (ok, _, stderr) = gpt2(&["train", "--stage", "cpu", "--ddp"]);
    assert!(!ok);
    assert!(
        stderr.contains("--features mpi") && stderr.contains("libopenmpi-dev"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_the_program_quietly_not_in_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let out = std::env::temp_dir().join(format!("gpt2-pipe-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args([
            "train",
            "--stage",
            "cpu",
            "--steps",
            "2",
            "--val-steps",
            "1",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the first line, as `| head -0` would.
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(
        done.status.signal(),
        Some(13),
        "SIGPIPE, as `cat` ends: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(out);
}
