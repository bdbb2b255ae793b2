//! The `makemore` program as a learner runs it: a resumed run against a
//! straight one, the files it leaves, and every kind of bad input, which must
//! get a clear error naming the file, line or flag and lose nothing in the
//! work dir.

use safetensors::SafeTensors;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs makemore with its runs-page mirror off (`ZTH_RUNS=`), so that tests
/// leave nothing in the workspace's `runs/`.
fn makemore(args: &[&str]) -> Output {
    makemore_mirroring(args, Path::new(""))
}

/// Runs makemore, mirroring its runs into the runs page folder `runs`.
fn makemore_mirroring(args: &[&str], runs: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_makemore"))
        .args(args)
        .env("ZTH_RUNS", runs)
        .output()
        .expect("makemore runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("makemore-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file of a folder with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

/// A safetensors file's tensors, name to (shape, bytes).
fn tensors(path: &Path) -> BTreeMap<String, (Vec<usize>, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    st.tensors()
        .into_iter()
        .map(|(name, v)| (name, (v.shape().to_vec(), v.data().to_vec())))
        .collect()
}

/// A file of `fixtures/claims`, what the real tools made of our files.
fn claims(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claims")
        .join(name)
}

/// An event file TensorBoard's own writer wrote: our reader takes its records
/// (and so checks their CRCs with our mask) and finds the scalars it was given.
#[test]
fn tensorboards_own_event_file_reads_back() {
    let dir = claims("events");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let ours = makemore::tensorboard::read_scalars(&file).unwrap();
    let given: Vec<(String, i64, serde_json::Value)> =
        serde_json::from_str(&std::fs::read_to_string(claims("events.json")).unwrap()).unwrap();
    assert_eq!(ours.len(), given.len());
    for ((tag, step, value), (t, s, v)) in ours.iter().zip(&given) {
        assert_eq!((tag, step), (t, s));
        match v.as_f64() {
            Some(v) => assert_eq!(*value, v as f32, "{tag} at {step}"),
            None => assert!(value.is_nan(), "{tag} at {step}: {value}"),
        }
    }
}

/// A batch of 48 takes its indices from two of the loader's draws of 32:
/// makemore.py's printed losses at that batch size
/// (`fixtures/batch48/make_batch48.sh`), within the printed rounding.
#[test]
fn a_batch_that_spans_two_index_draws_follows_makemore_py() {
    let dir = scratch("batch48");
    let input = small_input(&dir);
    let work = dir.join("work");
    let out = makemore(&[
        "-i",
        input.to_str().unwrap(),
        "-o",
        work.to_str().unwrap(),
        "--type",
        "bigram",
        "--batch-size",
        "48",
        "--max-steps",
        "101",
        "-n",
        "0",
        "-l",
        "0.05",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let loss = |line: &str| -> (String, f64) {
        let (step, loss) = line.split_once(" | loss ").expect("a step line");
        (
            step.to_string(),
            loss.split(' ').next().unwrap().parse().unwrap(),
        )
    };
    let ours: Vec<(String, f64)> = stdout(&out)
        .lines()
        .filter(|l| l.starts_with("step ") && l.contains(" | loss "))
        .map(loss)
        .collect();
    let theirs: Vec<(String, f64)> = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/batch48/steps.txt"),
    )
    .unwrap()
    .lines()
    .map(loss)
    .collect();
    assert_eq!(ours.len(), 11);
    for ((step, a), (s, b)) in ours.iter().zip(&theirs) {
        assert_eq!(step, s);
        assert!((a - b).abs() <= 1.5e-4, "{step}: {a} vs makemore.py's {b}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small file of words: names.txt's first 2,000 lines.
fn small_input(dir: &Path) -> PathBuf {
    let names = std::fs::read_to_string(data::path("names.txt").unwrap()).unwrap();
    let path = dir.join("input.txt");
    let lines: Vec<&str> = names.lines().take(2000).collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// The lines that do not depend on time, from `step 600` on.
fn lines_from_600(out: &str) -> Vec<String> {
    let start = out.find("step 600 |").expect("step 600 printed");
    out[start..]
        .lines()
        .map(|l| l.split(" | step time").next().unwrap().to_string())
        .filter(|l| !l.starts_with("interrupted"))
        .collect()
}

#[test]
fn a_resumed_run_is_the_straight_run_bit_for_bit() {
    let dir = scratch("resume");
    let input = small_input(&dir);
    let input = input.to_str().unwrap();
    let (straight, parts) = (dir.join("straight"), dir.join("parts"));
    // A batch of 20 leaves 12 of a 32-index draw pending, which the state must keep.
    let common = ["-i", input, "--type", "mlp", "-b", "20", "--seed", "7"];
    let run = |work: &Path, extra: &[&str]| {
        let mut args = common.to_vec();
        args.extend(["-o", work.to_str().unwrap()]);
        args.extend(extra);
        let out = makemore(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let whole = run(&straight, &["--max-steps", "1000"]);
    run(&parts, &["--max-steps", "600"]);
    let resumed = run(&parts, &["--max-steps", "1000", "--resume"]);
    assert!(resumed.contains("resumed at step 600"), "{resumed}");

    assert_eq!(
        lines_from_600(&resumed),
        lines_from_600(&whole),
        "the printed lines from step 600 on"
    );
    for file in ["last.safetensors", "model.safetensors"] {
        assert_eq!(
            tensors(&parts.join(file)),
            tensors(&straight.join(file)),
            "{file}"
        );
    }
    let csv = |d: &Path| std::fs::read_to_string(d.join("loss.csv")).unwrap();
    assert_eq!(
        csv(&parts),
        csv(&straight),
        "loss.csv keeps the first part's rows"
    );
    // A row for every 10th step, as makemore.py prints them: steps 0, 10, …, 990.
    assert_eq!(csv(&straight).lines().count(), 1 + 100);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_best_model_has_makemore_pys_state_dict_and_tensorboard_has_the_losses() {
    let dir = scratch("files");
    let input = small_input(&dir);
    let work = dir.join("work");
    let runs = dir.join("runs");
    let out = makemore_mirroring(
        &[
            "-i",
            input.to_str().unwrap(),
            "-o",
            work.to_str().unwrap(),
            "--type",
            "bow",
            "--max-steps",
            "501",
        ],
        &runs,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);

    // The run's record, in its work dir and on the runs page.
    let mirrored = std::fs::read_dir(runs.join("tools"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("makemore-work-")
        })
        .expect("runs/tools/makemore-work-<digest>");
    for file in [
        "report.json",
        "loss.csv",
        "loss.png",
        "loss.svg",
        "samples.txt",
    ] {
        let ours = std::fs::read(work.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(std::fs::read(mirrored.join(file)).unwrap(), ours, "{file}");
    }
    let report = report::page::read_report(&work.join("report.json")).unwrap();
    assert_eq!(report.tool.as_deref(), Some("makemore"));
    assert_eq!(report.stages[0].steps, 501);
    let page = std::fs::read_to_string(runs.join("index.html")).unwrap();
    let id = format!(
        "id=\"tool-{}\"",
        mirrored.file_name().unwrap().to_string_lossy()
    );
    assert!(page.contains("id=\"tools\"") && page.contains(&id), "{id}");
    // A row for every 10th step: 0, 10, …, 500.
    let rows = std::fs::read_to_string(work.join("loss.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(rows, 1 + 51);

    // makemore.py's BoW state_dict, its causal-mask buffer included.
    let names: Vec<String> = tensors(&work.join("model.safetensors"))
        .into_keys()
        .collect();
    let mut expected = vec![
        "wte.weight",
        "wpe.weight",
        "context_block.cbow.bias",
        "context_block.mlp.c_fc.weight",
        "context_block.mlp.c_fc.bias",
        "context_block.mlp.c_proj.weight",
        "context_block.mlp.c_proj.bias",
        "lm_head.weight",
        "lm_head.bias",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected);

    // What PyTorch made of the same run's file (fixtures/claims/make_claims.sh):
    // makemore.py's BoW took it with load_state_dict(strict=True), with these
    // keys and shapes, and its evaluate gave this test loss.
    let pytorch: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(claims("state_dict.json")).unwrap()).unwrap();
    assert_eq!(pytorch["strict_load"], "ok");
    let ours: BTreeMap<String, Vec<usize>> = tensors(&work.join("model.safetensors"))
        .into_iter()
        .map(|(name, (shape, _))| (name, shape))
        .collect();
    let theirs: BTreeMap<String, Vec<usize>> =
        serde_json::from_value(pytorch["state_dict"].clone()).unwrap();
    assert_eq!(ours, theirs, "the state_dict makemore.py's BoW loaded");

    // The events hold the two numbers of the printed line, as f32.
    let line = text
        .lines()
        .find(|l| l.starts_with("step 500 train loss:"))
        .unwrap();
    let numbers: Vec<f32> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let events = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("events.out.tfevents.")
        })
        .expect("an event file");
    let scalars = makemore::tensorboard::read_scalars(&events).unwrap();
    assert_eq!(
        scalars,
        [
            ("Loss/train".to_string(), 500, numbers[1]),
            ("Loss/test".to_string(), 500, numbers[2])
        ]
    );
    // TensorBoard's own reader (EventAccumulator) read the same two values
    // from the fixture run's event file, and PyTorch's evaluate agrees.
    let tb: BTreeMap<String, Vec<(i64, f64)>> =
        serde_json::from_str(&std::fs::read_to_string(claims("tensorboard.json")).unwrap())
            .unwrap();
    for (tag, step, value) in &scalars {
        assert_eq!(tb[tag], [(*step, *value as f64)], "TensorBoard's {tag}");
    }
    let test_loss = pytorch["test_loss"].as_f64().unwrap();
    assert!(
        ((numbers[2] as f64) - test_loss).abs() <= 1e-6,
        "makemore.py's evaluate: {test_loss}"
    );

    // --sample-only: 50 samples from the best model, and nothing written.
    let before = snapshot(&work);
    let out = makemore(&[
        "-i",
        input.to_str().unwrap(),
        "-o",
        work.to_str().unwrap(),
        "--type",
        "bow",
        "--sample-only",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let counts: usize = stdout(&out)
        .lines()
        .filter_map(|l| {
            l.strip_suffix(':')?
                .split(" samples that are ")
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum();
    assert_eq!(counts, 50);
    assert_eq!(snapshot(&work), before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs makemore with `args` in a work dir holding a trained model, and
/// checks it fails with an error containing every one of `needles`, and
/// leaves the work dir as it was.
fn refused(work: &Path, args: &[&str], needles: &[&str]) {
    let before = snapshot(work);
    let mut all = vec!["-o", work.to_str().unwrap()];
    all.extend(args);
    let out = makemore(&all);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?} should fail: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
    }
    assert_eq!(snapshot(work), before, "{args:?} changed the work dir");
}

#[test]
fn bad_input_is_refused_naming_the_file_line_or_flag() {
    let dir = scratch("bad");
    let input = small_input(&dir);
    let good = input.to_str().unwrap();
    let work = dir.join("work");
    let out = makemore(&[
        "-i",
        good,
        "-o",
        work.to_str().unwrap(),
        "--type",
        "bigram",
        "--max-steps",
        "501",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    };
    let latin1 = write("latin1.txt", b"anna\nbob\nren\xe9e\n");
    refused(
        &work,
        &["-i", &latin1],
        &["latin1.txt", "not UTF-8", "line 3, byte offset 12"],
    );
    let empty = write("empty.txt", b"");
    refused(&work, &["-i", &empty], &["empty.txt", "holds no words"]);
    let blank = write("blank.txt", b"\n \r\n\t\n");
    refused(&work, &["-i", &blank], &["blank.txt", "holds no words"]);
    let nine = write("nine.txt", b"a\nb\nc\nd\ne\nf\ng\nh\ni\n");
    refused(
        &work,
        &["-i", &nine],
        &["nine.txt", "9 words", "at least 10"],
    );
    let mut long = b"anna\nbob\n".repeat(10);
    long.extend(std::iter::repeat_n(b'x', 1_000_000));
    let long = write("long.txt", &long);
    refused(
        &work,
        &["-i", &long],
        &["long.txt", "1000000 characters", "GiB"],
    );
    refused(&work, &["-i", &dir.to_string_lossy()], &["is a folder"]);
    refused(
        &work,
        &["-i", "/nonexistent/words.txt"],
        &["/nonexistent/words.txt"],
    );

    refused(
        &work,
        &["-i", good, "--type", "gpt"],
        &[
            "--type",
            "\"gpt\"",
            "bigram|mlp|rnn|gru|bow|transformer|lstm",
        ],
    );
    refused(
        &work,
        &["-i", good, "--device", "cuda"],
        &["--device cuda", "CPU only"],
    );
    refused(&work, &["-i", good, "--top-k", "0"], &["--top-k 0"]);
    refused(
        &work,
        &["-i", good, "--top-k", "28", "--resume"],
        &["--top-k 28", "27 tokens"],
    );
    refused(
        &work,
        &["-i", good, "--n-head", "5"],
        &["--n-embd 64", "--n-head 5"],
    );
    refused(
        &work,
        &["-i", good, "-l", "-0.1"],
        &["--learning-rate -0.1"],
    );

    // A new run over a finished one, and a resume that would split the file anew.
    refused(
        &work,
        &["-i", good, "--type", "bigram"],
        &["last.safetensors", "holds a run already", "--resume"],
    );
    refused(
        &work,
        &["-i", good, "--type", "bigram", "--resume", "--seed", "1"],
        &["--seed 3407"],
    );

    // A model of another type or size in the work dir.
    refused(
        &work,
        &["-i", good, "--type", "mlp", "--resume"],
        &["last.safetensors", "bigram model", "mlp model"],
    );
    refused(
        &work,
        &["-i", good, "--type", "mlp", "--sample-only"],
        &["model.safetensors", "bigram model"],
    );
    // The same type on another file: another vocabulary, another model.
    let other = write("other.txt", "zoë\n".repeat(20).as_bytes());
    refused(
        &work,
        &["-i", &other, "--type", "bigram", "--resume"],
        &["last.safetensors"],
    );

    // No model at all.
    let fresh = dir.join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    refused(
        &fresh,
        &["-i", good, "--resume"],
        &[
            "last.safetensors",
            "does not exist",
            "no state in this work dir",
        ],
    );
    refused(
        &fresh,
        &["-i", good, "--sample-only"],
        &["model.safetensors", "does not exist"],
    );

    // A damaged checkpoint: one byte flipped in the middle of the tensors.
    let last = work.join("last.safetensors");
    let mut bytes = std::fs::read(&last).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&last, &bytes).unwrap();
    refused(
        &work,
        &["-i", good, "--type", "bigram", "--resume"],
        &["last.safetensors", "SHA-256"],
    );
    std::fs::write(&last, &bytes[..bytes.len() / 3]).unwrap();
    refused(
        &work,
        &["-i", good, "--type", "bigram", "--resume"],
        &["last.safetensors", "truncated"],
    );

    // A loss that blows up stops the run at its step, saving nothing.
    let nan = dir.join("nan");
    let out = makemore(&[
        "-i",
        good,
        "-o",
        nan.to_str().unwrap(),
        "--type",
        "bigram",
        "-l",
        "1e30",
        "--max-steps",
        "50",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the loss is") && err.contains("at step") && err.contains("no state"),
        "{err}"
    );
    assert!(!nan.join("last.safetensors").exists() && !nan.join("model.safetensors").exists());

    // An unwritable work dir is found before any training.
    refused(
        &work,
        &["-i", good, "-o", "/proc/makemore"],
        &["/proc/makemore"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
