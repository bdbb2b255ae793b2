//! `gpt prepare`, `gpt train` and `gpt sample --out-dir` as a learner runs
//! them: nanoGPT's spellings of the flags, resuming, and every bad input
//! refused with a message naming the file or flag, nothing in the out dir lost.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A tiny model, so that each run takes a second.
const TINY: [&str; 9] = [
    "--n_layer=1",
    "--n_head=2",
    "--n_embd=16",
    "--block_size=8",
    "--batch_size=2",
    "--eval_iters=2",
    "--eval_interval=2",
    "--max_iters=4",
    "--lr_decay_iters=4",
];

fn gpt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpt"))
        .args(args)
        .env("ZTH_RUNS", "") // no copy onto the workspace's runs page
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = gpt(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "gpt {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs `gpt args`, expects a failure whose message holds every one of `needles`.
fn fails(args: &[&str], needles: &[&str]) {
    let out = gpt(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "gpt {args:?} succeeded");
    assert!(
        !stderr.contains("panicked"),
        "gpt {args:?} panicked:\n{stderr}"
    );
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "gpt {args:?}: no {needle:?} in:\n{stderr}"
        );
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpt-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn own_text() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nanogpt/own_text.txt")
}

#[test]
fn prepare_train_resume_sample() {
    let dir = temp("flow");
    let (data, out) = (dir.join("data"), dir.join("out"));
    let lines = ok(&["prepare", "--input", s(&own_text()), "--out-dir", s(&data)]);
    assert!(lines.contains("vocab size: 185"), "{lines}");
    // Both spellings of each flag; booleans as Python writes them.
    let mut args = vec![
        "train",
        "--data",
        s(&data),
        "--out-dir",
        s(&out),
        "--compile=False",
        "--device=cpu",
    ];
    args.extend(TINY);
    args.extend(["--always_save_checkpoint=True", "--decay-lr", "False"]);
    let first = ok(&args);
    assert!(first.contains("step 4: train loss"), "{first}");
    assert!(first.contains("saving checkpoint to"), "{first}");
    for file in [
        "ckpt.safetensors",
        "report.json",
        "loss.csv",
        "loss.png",
        "loss.svg",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    // A second scratch run would overwrite the checkpoint: refused.
    fails(&args, &["already holds a checkpoint", "--init-from resume"]);
    // Resumed, it goes on from iteration 4 to 6.
    let mut resume = args.clone();
    resume.extend(["--init-from=resume", "--max_iters=6"]);
    let resumed = ok(&resume);
    assert!(resumed.contains("Resuming training from"), "{resumed}");
    assert!(
        resumed.contains("iter 4: loss") && resumed.contains("iter 6: loss"),
        "{resumed}"
    );
    assert!(!resumed.contains("iter 3: loss"), "{resumed}");
    // loss.csv holds the whole run, the first process's rows included, with
    // one row at the resumed iteration.
    let csv = std::fs::read_to_string(out.join("loss.csv")).unwrap();
    let steps: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(steps, ["0", "1", "2", "3", "4", "5", "6"], "{csv}");
    // The optimizer's betas come from the checkpoint, as nanoGPT's resume
    // loads them with the optimizer's state.
    let mut other_beta = resume.clone();
    other_beta.extend(["--beta2=0.5", "--max_iters=8"]);
    let resumed = ok(&other_beta);
    assert!(
        resumed.contains("--beta2 0.5: the checkpoint's optimizer was built with 0.99"),
        "{resumed}"
    );
    let ckpt = out.join("ckpt.safetensors");
    let saved = gpt::nanogpt::checkpoint::Checkpoint::load(&ckpt).unwrap();
    assert_eq!((saved.iter_num, saved.config.train_py.beta2), (8, 0.99));
    // --eval-only on a checkpoint: one evaluation, no step, nothing saved.
    let before = std::fs::read(&ckpt).unwrap();
    let mut eval_only = resume.clone();
    eval_only.extend(["--max_iters=8", "--eval_only=True"]);
    let evaluated = ok(&eval_only);
    assert!(evaluated.contains("step 8: train loss"), "{evaluated}");
    assert!(!evaluated.contains("iter 8: loss"), "{evaluated}");
    assert_eq!(std::fs::read(&ckpt).unwrap(), before);
    // Another model on resume is an error naming what differs.
    let mut wider = resume.clone();
    wider.push("--n_embd=32");
    fails(&wider, &["another model", "n_embd 16 (the flags say 32)"]);
    // sample.py's output: samples separated by its dashes, the prompt first.
    let samples = ok(&[
        "sample",
        "--out-dir",
        s(&out),
        "--num_samples=2",
        "--max_new_tokens=20",
        "--start=Über",
    ]);
    assert_eq!(samples.matches("---------------\n").count(), 2, "{samples}");
    assert!(samples.starts_with("Über"), "{samples}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_inputs_are_refused_naming_the_file_or_flag() {
    let dir = temp("bad");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "a learner's file").unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // prepare: not UTF-8, empty, too many code points.
    let latin1 = write("latin1.txt", b"caf\xe9\n");
    fails(
        &["prepare", "--input", s(&latin1), "--out-dir", s(&out)],
        &["latin1.txt", "not UTF-8", "byte offset 3"],
    );
    let empty = write("empty.txt", b"");
    fails(
        &["prepare", "--input", s(&empty), "--out-dir", s(&out)],
        &["empty.txt is empty"],
    );
    let many: String = (0x4e00u32..0x4e00 + 70_000)
        .filter_map(char::from_u32)
        .collect();
    let wide = write("wide.txt", many.as_bytes());
    fails(
        &["prepare", "--input", s(&wide), "--out-dir", s(&out)],
        &["wide.txt", "distinct characters", "65536"],
    );
    let one = write("one.txt", "é".as_bytes());
    fails(
        &["prepare", "--input", s(&one), "--out-dir", s(&out)],
        &["one.txt", "single character", "train split"],
    );
    assert!(!out.join("train.bin").exists());
    // train: a val split shorter than block_size + 1.
    let short = write("short.txt", "abcdefghij".repeat(5).as_bytes());
    let data = dir.join("short");
    ok(&["prepare", "--input", s(&short), "--out-dir", s(&data)]);
    let mut args = vec!["train", "--data", s(&data), "--out-dir", s(&out)];
    args.extend(TINY);
    args.push("--block_size=16");
    fails(&args, &["val.bin holds 5 tokens", "--block-size + 1 = 17"]);
    // A meta.pkl that is not nanoGPT's.
    std::fs::write(data.join("meta.pkl"), b"\x80\x04K\x07.").unwrap();
    fails(
        &args,
        &["meta.pkl is not the meta.pkl of nanoGPT's char-level prepare.py"],
    );
    // Resume with no checkpoint.
    let prepared = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nanogpt/prepared");
    let mut resume = vec![
        "train",
        "--data",
        s(&prepared),
        "--out-dir",
        s(&out),
        "--init-from",
        "resume",
    ];
    resume.extend(TINY);
    fails(&resume, &["cannot read checkpoint", "ckpt.safetensors"]);
    // Flags: a device we do not run on, a bad boolean.
    fails(
        &["train", "--data", s(&prepared), "--device=cuda"],
        &["--device cuda"],
    );
    fails(
        &["train", "--data", s(&prepared), "--bias=maybe"],
        &["--bias", "True or False"],
    );
    // A batch far past the machine's memory, refused before any allocation.
    let huge = dir.join("huge");
    fails(
        &[
            "train",
            "--data",
            s(&prepared),
            "--out-dir",
            s(&huge),
            "--batch_size=100000000",
        ],
        &["--batch-size", "GiB to train", "this machine has"],
    );
    // A path that is not UTF-8 cannot be kept in the run's record.
    {
        use std::os::unix::ffi::OsStrExt;
        let bad = dir.join(std::ffi::OsStr::from_bytes(b"out-\xff"));
        let out = Command::new(env!("CARGO_BIN_EXE_gpt"))
            .args(["train", "--data", s(&prepared), "--out-dir"])
            .arg(&bad)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("--out-dir") && stderr.contains("not UTF-8"),
            "{stderr}"
        );
        assert!(!bad.exists());
    }
    // A thread count that is not a positive integer, refused before any work.
    for threads in ["abc", "0", ""] {
        let out = Command::new(env!("CARGO_BIN_EXE_gpt"))
            .args(["prepare", "--input", s(&own_text()), "--out-dir"])
            .arg(dir.join("threads"))
            .env("ZTH_THREADS", threads)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "ZTH_THREADS={threads:?}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("ZTH_THREADS={threads:?}")) && stderr.contains("at least 1"),
            "{stderr}"
        );
        assert!(!dir.join("threads").exists());
    }
    // An output folder that cannot be created, found before any training.
    fails(
        &[
            "train",
            "--data",
            s(&prepared),
            "--out-dir",
            "/proc/zth-gpt",
        ],
        &["cannot create --out-dir /proc/zth-gpt"],
    );
    fails(
        &["lecture", "--stage", "bigram", "--out", "/proc/zth-gpt"],
        &["cannot create --out /proc/zth-gpt"],
    );
    // A loss that turns NaN stops the run, naming the iteration.
    let mut nan = vec![
        "train",
        "--data",
        s(&prepared),
        "--out-dir",
        s(&out),
        "--learning_rate=1e30",
        "--decay_lr=False",
    ];
    nan.extend(TINY);
    fails(&nan, &["iteration", "stopping"]);
    // sample: no checkpoint; a prompt outside the vocabulary; a missing prompt file.
    let none = dir.join("none");
    fails(
        &["sample", "--out-dir", s(&none)],
        &["cannot read checkpoint", "none"],
    );
    let trained = dir.join("trained");
    let mut train = vec![
        "train",
        "--data",
        s(&prepared),
        "--out-dir",
        s(&trained),
        "--always_save_checkpoint=True",
    ];
    train.extend(TINY);
    ok(&train);
    fails(
        &["sample", "--out-dir", s(&trained), "--start=☃"],
        &["--start", "'☃'", "not in the 185-character vocabulary"],
    );
    fails(
        &[
            "sample",
            "--out-dir",
            s(&trained),
            "--start=FILE:/no/such/prompt.txt",
        ],
        &["--start FILE:/no/such/prompt.txt"],
    );
    // A prompt longer than the block size is cropped, as nanoGPT crops it.
    let long = write("long.txt", "Über ".repeat(20).as_bytes());
    let start = format!("--start=FILE:{}", s(&long));
    let cropped = ok(&[
        "sample",
        "--out-dir",
        s(&trained),
        &start,
        "--num_samples=1",
        "--max_new_tokens=5",
    ]);
    assert!(cropped.starts_with(&"Über ".repeat(20)), "{cropped}");
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "a learner's file"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
