//! `nanochat base-train` as a whole: its printed lines against base_train.py's (the fixture's
//! `printed`, from `tests/fixtures/base_train/make_fixtures.py`), a resumed run equal bit for
//! bit to one that never stopped, the same bits on 1 thread and on 2, and bad input refused
//! with an error naming the file, the flag or the step.

use clap::Parser;
use nanochat::base_train::run::base_train;
use nanochat::base_train::BaseTrainArgs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BaseTrainArgs,
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/base_train")
}

/// A fresh nanochat base folder holding the fixtures' 4,096-token tokenizer.
fn base_folder(name: &str) -> PathBuf {
    let base =
        std::env::temp_dir().join(format!("nanochat-base-train-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("tokenizer")).unwrap();
    std::fs::copy(
        fixtures().join("tokenizer_4096.pkl"),
        base.join("tokenizer/tokenizer.pkl"),
    )
    .unwrap();
    base
}

fn shakespeare() -> PathBuf {
    data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"))
}

fn args(argv: &[&str]) -> BaseTrainArgs {
    flags::try_parse_from::<Cli>(std::iter::once("base_train").chain(argv.iter().copied()))
        .unwrap_or_else(|e| panic!("{e}"))
        .args
}

/// The fixture run's flags, on tiny Shakespeare.
fn d2_flags(data: &Path, extra: &[&str]) -> Vec<String> {
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("shakespeare_d2_L.json")).unwrap(),
    )
    .unwrap();
    let mut flags: Vec<String> = record["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    flags.push(format!("--input={}", data.display()));
    flags.extend(extra.iter().map(|s| s.to_string()));
    flags
}

fn run(base: &Path, flags: &[String]) -> Result<Vec<String>, String> {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut lines = Vec::new();
    base_train(&args(&flags), base, &mut |line: String| {
        lines.extend(line.lines().map(str::to_string))
    })?;
    Ok(lines)
}

#[test]
fn the_printed_lines_are_base_trains() {
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("shakespeare_d2_L.json")).unwrap(),
    )
    .unwrap();
    let theirs: Vec<String> = record["printed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    // From "Vocab size" on: before it come the banner and FA3's GPU warnings.
    let start = theirs
        .iter()
        .position(|l| l.starts_with("Vocab size"))
        .unwrap();
    let theirs: Vec<&String> = theirs[start..]
        .iter()
        .filter(|l| !l.starts_with("Peak memory usage") && !l.starts_with("Total training time"))
        .collect();
    let base = base_folder("printed");
    let ours = run(&base, &d2_flags(&shakespeare(), &[])).unwrap();
    let ours: Vec<&String> = ours
        .iter()
        .filter(|l| !l.starts_with("step ") && !l.starts_with("Total training time"))
        .collect();
    assert_eq!(
        ours.len(),
        theirs.len(),
        "ours:\n{ours:#?}\ntheirs:\n{theirs:#?}"
    );
    for (o, t) in ours.iter().zip(&theirs) {
        // The bpb lines: the value within 1e-4 (its 6th decimal is float noise), the rest equal.
        match (o.rsplit_once(": "), t.rsplit_once(": ")) {
            (Some((ol, ov)), Some((tl, tv))) if tl.ends_with("bpb") => {
                assert_eq!(ol, tl);
                let (ov, tv): (f64, f64) = (ov.parse().unwrap(), tv.parse().unwrap());
                assert!((ov - tv).abs() <= 1e-4, "{o} vs {t}");
            }
            _ => assert_eq!(o, t),
        }
    }
    let dir = base.join("base_checkpoints/shakespeare_d2_L");
    for file in [
        "model_000050.safetensors",
        "optim_000050_rank0.safetensors",
        "meta_000050.json",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_resumed_run_is_the_run_that_never_stopped() {
    let base = base_folder("resume");
    let data = shakespeare();
    let whole = [
        "--num-iterations=12",
        "--save-every=6",
        "--eval-every=6",
        "--model-tag=whole",
    ];
    run(&base, &d2_flags(&data, &whole)).unwrap();
    let (whole_dir, resumed_dir) = (
        base.join("base_checkpoints/whole"),
        base.join("base_checkpoints/resumed"),
    );
    std::fs::create_dir_all(&resumed_dir).unwrap();
    for file in [
        "model_000006.safetensors",
        "optim_000006_rank0.safetensors",
        "meta_000006.json",
    ] {
        std::fs::copy(whole_dir.join(file), resumed_dir.join(file)).unwrap();
    }
    let resumed = [
        "--num-iterations=12",
        "--save-every=6",
        "--eval-every=6",
        "--model-tag=resumed",
        "--resume-from-step=6",
    ];
    let lines = run(&base, &d2_flags(&data, &resumed)).unwrap();
    assert!(lines
        .iter()
        .any(|l| l == "Resuming optimization from step 6"));
    assert!(
        weights(&whole_dir, 12) == weights(&resumed_dir, 12),
        "the resumed run's weights differ from the uninterrupted run's"
    );
    let meta = |dir: &Path| nanochat::checkpoint::load_meta(dir, 12).unwrap();
    let (a, b) = (meta(&whole_dir), meta(&resumed_dir));
    assert_eq!(a.losses, b.losses);
    assert_eq!(a.evals, b.evals);
    assert_eq!(
        a.loop_state.smooth_train_loss,
        b.loop_state.smooth_train_loss
    );
    assert_eq!(a.batches_drawn, b.batches_drawn);
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn one_thread_and_two_give_the_same_bits() {
    let base = base_folder("threads");
    let data = shakespeare();
    let mut models = Vec::new();
    for threads in ["1", "2"] {
        let mut flags = d2_flags(&data, &["--num-iterations=4", "--window-pattern=SL"]);
        flags.push(format!("--model-tag=t{threads}"));
        let out = Command::new(env!("CARGO_BIN_EXE_nanochat"))
            .arg("base-train")
            .args(&flags)
            .env("NANOCHAT_BASE_DIR", &base)
            .env("ZTH_THREADS", threads)
            .env("ZTH_RUNS", "")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        models.push(weights(
            &base.join(format!("base_checkpoints/t{threads}")),
            4,
        ));
    }
    assert!(
        models[0] == models[1],
        "1 thread and 2 threads trained different weights"
    );
    // The run's loss.csv ends with the evaluation after the last step: a val and no train loss.
    let rows = report::read_loss_csv(&base.join("base_checkpoints/t1/loss.csv")).unwrap();
    let last = rows.last().unwrap();
    assert_eq!((last.step, last.train.is_nan()), (4, true));
    let meta = nanochat::checkpoint::load_meta(&base.join("base_checkpoints/t1"), 4).unwrap();
    assert_eq!(last.val, meta.val_bpb);
    std::fs::remove_dir_all(&base).unwrap();
}

/// Copies the CORE fixture's eval bundle into `base`, where base_eval.py looks for it.
fn place_eval_bundle(base: &Path) {
    let from =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/core_eval/eval_bundle");
    let to = base.join("eval_bundle");
    std::fs::create_dir_all(to.join("eval_data/shakespeare")).unwrap();
    for file in ["core.yaml", "eval_meta_data.csv"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    for entry in std::fs::read_dir(from.join("eval_data/shakespeare")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            to.join("eval_data/shakespeare")
                .join(path.file_name().unwrap()),
        )
        .unwrap();
    }
}

#[test]
fn base_eval_reads_what_base_train_saved() {
    let base = base_folder("eval");
    let data = shakespeare();
    let flags = [
        "--num-iterations=6",
        "--eval-every=6",
        "--core-metric-every=3",
        "--core-metric-max-per-task=4",
    ];
    let tagged = |tag: &str| {
        let mut flags = d2_flags(&data, &flags);
        flags.push(format!("--model-tag={tag}"));
        run(&base, &flags).unwrap()
    };
    let lines = tagged("evald");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("CORE metric skipped: ") && l.contains("eval_bundle.zip")),
        "{lines:#?}"
    );
    let trained_bpb = lines
        .iter()
        .filter_map(|l| l.strip_prefix("Step 00006 | Validation bpb: "))
        .next()
        .unwrap()
        .to_string();
    let base_eval = || {
        Command::new(env!("CARGO_BIN_EXE_nanochat"))
            .args(["base-eval", "--model-tag=evald", "--eval=bpb,core"])
            .args([
                "--device-batch-size=2",
                "--split-tokens=1024",
                "--max-per-task=4",
            ])
            .arg(format!("--input={}", data.display()))
            .env("NANOCHAT_BASE_DIR", &base)
            .env("ZTH_RUNS", "")
            .output()
            .unwrap()
    };
    let out = base_eval();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "core ran without its bundle");
    assert!(stderr.contains("eval_bundle.zip"), "{stderr}");

    place_eval_bundle(&base);
    let out = base_eval();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same loader over the same val text, the same weights: base_train's last bpb.
    assert!(
        stdout
            .lines()
            .any(|l| l == format!("val bpb: {trained_bpb}")),
        "{stdout}"
    );
    let core_lines = stdout
        .lines()
        .filter(|l| l.starts_with("Evaluating: "))
        .count();
    assert_eq!(core_lines, 5, "{stdout}");
    let csv = std::fs::read_to_string(base.join("base_eval/base_model_000006.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    let core = stdout
        .lines()
        .find_map(|l| l.strip_prefix("CORE metric: "))
        .unwrap();
    assert!(csv.lines().last().unwrap().contains(&core[..5]), "{csv}");
    // base_train.py's CORE lines, now that the bundle is there: at step 3 and at the last,
    // the last equal to base-eval's on the saved model (the same run again: the same bits).
    let lines = tagged("evald_again");
    let at = |step: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("Step {step} | CORE metric: ")))
            .unwrap_or_else(|| panic!("no CORE at {step}: {lines:#?}"))
            .to_string()
    };
    at("00003");
    assert_eq!(at("00006"), core);
    std::fs::remove_dir_all(&base).unwrap();
}

/// Every weight of the model saved at `step` in `dir`, by name, as bits.
fn weights(dir: &Path, step: usize) -> Vec<(String, Vec<u32>)> {
    let (model, _) = nanochat::checkpoint::load_model(dir, step).unwrap();
    model
        .params
        .iter()
        .map(|(_, p)| {
            (
                p.name.clone(),
                p.value.to_vec().iter().map(|v| v.to_bits()).collect(),
            )
        })
        .collect()
}

fn refused(base: &Path, flags: &[String]) -> String {
    match run(base, flags) {
        Ok(_) => panic!("{flags:?} trained"),
        Err(e) => e,
    }
}

#[test]
fn bad_input_is_refused_naming_what_is_wrong() {
    let base = base_folder("bad");
    let tmp = base.join("data");
    std::fs::create_dir_all(&tmp).unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let path = tmp.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let e = refused(&base, &d2_flags(&file("empty.txt", b""), &[]));
    assert!(e.contains("empty.txt") && e.contains("no text"), "{e}");
    let e = refused(
        &base,
        &d2_flags(&file("latin1.txt", b"caf\xe9 au lait\n\nsecond"), &[]),
    );
    assert!(
        e.contains("latin1.txt") && e.contains("not UTF-8") && e.contains("offset 3"),
        "{e}"
    );
    let empty_folder = tmp.join("no_text");
    std::fs::create_dir_all(empty_folder.join("sub")).unwrap();
    std::fs::write(empty_folder.join("notes.bin"), b"\x00").unwrap();
    let e = refused(&base, &d2_flags(&empty_folder, &[]));
    assert!(e.contains("no_text") && e.contains("no .txt"), "{e}");
    let e = refused(
        &base,
        &d2_flags(&file("short.txt", b"To be.\n\nOr not."), &[]),
    );
    assert!(
        e.contains("short.txt") && e.contains("fewer than one row of 257"),
        "{e}"
    );
    let e = refused(&base, &d2_flags(&shakespeare(), &["--depth=0"]));
    assert!(e.contains("--depth"), "{e}");
    let e = refused(&base, &d2_flags(&shakespeare(), &["--head-dim=33"]));
    assert!(e.contains("head"), "{e}");
    let e = refused(&base, &d2_flags(&shakespeare(), &["--device-type=cuda"]));
    assert!(e.contains("--device-type"), "{e}");
    let e = refused(
        &base,
        &d2_flags(&shakespeare(), &["--depth=400", "--device-batch-size=4096"]),
    );
    assert!(e.contains("GiB"), "{e}");

    // A run that never evaluated (its lowest bpb still infinite) resumes.
    let no_eval = [
        "--num-iterations=2",
        "--eval-every=-1",
        "--model-tag=no_eval",
    ];
    run(&base, &d2_flags(&shakespeare(), &no_eval)).unwrap();
    let resumed = [
        "--num-iterations=3",
        "--eval-every=-1",
        "--model-tag=no_eval",
        "--resume-from-step=2",
    ];
    run(&base, &d2_flags(&shakespeare(), &resumed)).unwrap();

    // A checkpoint damaged after it was written, and one from another model.
    run(
        &base,
        &d2_flags(&shakespeare(), &["--num-iterations=2", "--model-tag=ok"]),
    )
    .unwrap();
    let dir = base.join("base_checkpoints/ok");
    let model = dir.join("model_000002.safetensors");
    let mut bytes = std::fs::read(&model).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x40;
    std::fs::write(&model, &bytes).unwrap();
    let e = refused(
        &base,
        &d2_flags(
            &shakespeare(),
            &[
                "--num-iterations=4",
                "--model-tag=ok",
                "--resume-from-step=2",
            ],
        ),
    );
    assert!(
        e.contains("model_000002.safetensors") && e.contains("SHA-256"),
        "{e}"
    );
    let e = refused(
        &base,
        &d2_flags(
            &shakespeare(),
            &[
                "--num-iterations=4",
                "--model-tag=ok",
                "--resume-from-step=3",
            ],
        ),
    );
    assert!(e.contains("meta_000003.json"), "{e}");
    run(
        &base,
        &d2_flags(
            &shakespeare(),
            &[
                "--num-iterations=2",
                "--model-tag=wide",
                "--aspect-ratio=128",
            ],
        ),
    )
    .unwrap();
    let e = refused(
        &base,
        &d2_flags(
            &shakespeare(),
            &[
                "--num-iterations=4",
                "--model-tag=wide",
                "--resume-from-step=2",
            ],
        ),
    );
    assert!(e.contains("another shape"), "{e}");
    std::fs::remove_dir_all(&base).unwrap();
}
