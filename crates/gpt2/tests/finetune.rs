//! `gpt2 prepare --format nanogpt` and `gpt2 finetune` against nanoGPT:
//! `tests/fixtures/finetune.py` runs nanoGPT's `data/shakespeare/prepare.py`
//! on a text with characters beyond ASCII and Windows line endings, then
//! nanoGPT's train.py loop (karpathy/nanoGPT 3adf61e) on `transformers`'
//! `GPT2LMHeadModel` loaded from `tests/fixtures/tiny-vocab` (a random GPT-2
//! with the full vocabulary), cropped to 32 positions, for 10 iterations.

use autograd::{ForwardPass, Graph};
use gpt2::finetune::{self, Finetune, FinetuneArgs};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("finetune.json")).unwrap())
        .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpt2-finetune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn own_text() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpt/tests/fixtures/nanogpt/own_text.txt")
}

#[test]
fn prepare_writes_shakespeare_prepare_pys_files() {
    let out = temp_dir("prepare");
    gpt2::shards::prepare_nanogpt(&own_text(), &out).unwrap();
    for file in ["train.bin", "val.bin"] {
        let ours = std::fs::read(out.join(file)).unwrap();
        let theirs = std::fs::read(fixtures().join("nanogpt_bpe").join(file)).unwrap();
        assert!(ours == theirs, "{file} differs from prepare.py's");
    }
    std::fs::remove_dir_all(out).unwrap();
}

/// `gpt2 prepare` takes its folder as `--out` or as `--out-dir`, as `gpt prepare` does.
#[test]
fn prepare_takes_its_folder_in_either_spelling() {
    for flag in ["--out", "--out-dir"] {
        let out = temp_dir(&format!("spelling{flag}"));
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_gpt2"))
            .args(["prepare", "--format", "nanogpt", "--input"])
            .arg(own_text())
            .arg(flag)
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{flag}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let ours = std::fs::read(out.join("train.bin")).unwrap();
        let theirs = std::fs::read(fixtures().join("nanogpt_bpe/train.bin")).unwrap();
        assert!(
            ours == theirs,
            "{flag}: train.bin differs from prepare.py's"
        );
        std::fs::remove_dir_all(out).unwrap();
    }
}

#[test]
fn finetune_tracks_nanogpts_loop_on_transformers_gpt2() {
    let fx = fixture();
    let c = &fx["config"];
    let int = |key: &str| c[key].as_u64().unwrap_or_else(|| panic!("config {key}")) as usize;
    let float = |key: &str| c[key].as_f64().unwrap_or_else(|| panic!("config {key}")) as f32;
    let out = temp_dir("run");
    let args = {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: FinetuneArgs,
        }
        let model = fixtures().join("tiny-vocab");
        let data = fixtures().join("nanogpt_bpe");
        flags::parse_from::<Cli>([
            "finetune".to_string(),
            format!("--model={}", model.display()),
            format!("--data={}", data.display()),
            format!("--out={}", out.display()),
        ])
        .args
    };
    let mut args = args;
    let t = &mut args.train_py;
    t.batch_size = int("batch_size");
    t.block_size = int("block_size");
    t.gradient_accumulation_steps = int("gradient_accumulation_steps");
    t.max_iters = int("max_iters");
    t.eval_interval = int("eval_interval");
    t.eval_iters = int("eval_iters");
    t.learning_rate = float("learning_rate");
    assert!(!t.decay_lr && t.grad_clip == 1.0 && t.weight_decay == 0.1);
    assert_eq!((t.beta1, t.beta2), (0.9, 0.95));
    let mut ft = Finetune::start(args).unwrap();
    gpt::nanogpt::train::train(&mut ft, |_| Ok(())).unwrap();

    let want: Vec<f64> = fx["iter_losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(
        ft.history.losses.len(),
        want.len(),
        "nanoGPT steps at 0..=max_iters"
    );
    let mut worst = 0f64;
    for (&(iter, got), want) in ft.history.losses.iter().zip(&want) {
        let gap = (got as f64 - want).abs();
        worst = worst.max(gap);
        assert!(gap < 1e-4, "iteration {iter}: ours {got}, PyTorch {want}");
    }
    eprintln!(
        "the farthest of {} losses from PyTorch's: {worst:.2e}",
        want.len()
    );
    let evals = fx["evals"].as_array().unwrap();
    assert_eq!(ft.history.evals.len(), evals.len());
    for (&(iter, train, val), e) in ft.history.evals.iter().zip(evals) {
        assert_eq!(iter as u64, e["iter"].as_u64().unwrap());
        for (got, key) in [(train, "train"), (val, "val")] {
            let want = e[key].as_f64().unwrap();
            assert!(
                (got as f64 - want).abs() < 1e-4,
                "{key} at {iter}: ours {got}, PyTorch {want}"
            );
        }
    }
    let saves: Vec<usize> = fx["saves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(ft.saves, saves, "saved when nanoGPT saves");

    // The saved model, read back from Hugging Face's layout: the logits of
    // the PyTorch model at the same iteration, on the first 16 val tokens.
    let (model, params) = gpt2::hf::from_pretrained(&out).unwrap();
    assert_eq!(
        model.config.block_size, ft.args.train_py.block_size,
        "cropped, as saved"
    );
    let val = std::fs::read(fixtures().join("nanogpt_bpe/val.bin")).unwrap();
    let ids: Vec<usize> = val[..32]
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
        .collect();
    let graph = Graph::no_grad();
    let pass = ForwardPass::eval(&graph, &params);
    let logits = model.forward(&pass, &ids, 1, 16).value().to_vec(); // (1, 16, V)
    let v = model.config.vocab_size;
    let saved = &fx["saved_logits"];
    for (t, row) in saved["first64"].as_array().unwrap().iter().enumerate() {
        for (j, want) in row.as_array().unwrap().iter().enumerate() {
            let got = logits[t * v + j] as f64;
            let want = want.as_f64().unwrap();
            assert!(
                (got - want).abs() < 1e-4,
                "logit ({t}, {j}): ours {got}, transformers {want}"
            );
        }
    }
    for (t, want) in saved["logsumexp"].as_array().unwrap().iter().enumerate() {
        let row = &logits[t * v..(t + 1) * v];
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
        let lse = max
            + row
                .iter()
                .map(|&x| (x as f64 - max).exp())
                .sum::<f64>()
                .ln();
        let want = want.as_f64().unwrap();
        assert!(
            (lse - want).abs() < 1e-4,
            "logsumexp at {t}: ours {lse}, transformers {want}"
        );
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn bad_inputs_are_refused_naming_the_folder_or_flag() {
    let dir = temp_dir("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("data");
    gpt2::shards::prepare_nanogpt(&own_text(), &data).unwrap();
    let base = |model: &Path, data: &Path, out: &Path| {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: FinetuneArgs,
        }
        flags::parse_from::<Cli>([
            "finetune".to_string(),
            format!("--model={}", model.display()),
            format!("--data={}", data.display()),
            format!("--out={}", out.display()),
            "--block_size=16".into(),
            "--eval_iters=1".into(),
            "--max_iters=0".into(),
        ])
        .args
    };
    let tiny = fixtures().join("tiny-vocab");
    let err = |args: FinetuneArgs| match Finetune::start(args) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    };
    // A --model folder that is not a GPT-2: no config.json; another architecture.
    let e = err(base(&dir, &data, &dir.join("out")));
    assert!(e.contains("config.json"), "{e}");
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let config = std::fs::read_to_string(tiny.join("config.json")).unwrap();
    std::fs::write(
        other.join("config.json"),
        config.replace("gelu_new", "relu"),
    )
    .unwrap();
    let e = err(base(&other, &data, &dir.join("out")));
    assert!(e.contains("other/config.json"), "{e}");
    // A block size past the model's positions.
    let mut args = base(&tiny, &data, &dir.join("out"));
    args.train_py.block_size = 65;
    let e = err(args);
    assert!(
        e.contains("--block-size 65") && e.contains("64 positions"),
        "{e}"
    );
    // A data folder with neither layout; a val split too short for a batch.
    let e = err(base(&tiny, &dir, &dir.join("out")));
    assert!(
        e.contains("holds no tokens") && e.contains("--format nanogpt"),
        "{e}"
    );
    let short = dir.join("short");
    std::fs::create_dir_all(&short).unwrap();
    std::fs::copy(data.join("train.bin"), short.join("train.bin")).unwrap();
    std::fs::write(short.join("val.bin"), [1u8, 0, 2, 0]).unwrap();
    let e = err(base(&tiny, &short, &dir.join("out")));
    assert!(e.contains("val.bin holds 2 tokens"), "{e}");
    // A character-level folder (`gpt prepare`): its ids are not GPT-2's tokens.
    std::fs::write(short.join("meta.pkl"), b"").unwrap();
    let e = err(base(&tiny, &short, &dir.join("out")));
    assert!(e.contains("meta.pkl") && e.contains("character ids"), "{e}");
    // A batch far past any machine's memory is refused before it is allocated.
    let mut args = base(&tiny, &data, &dir.join("out"));
    args.train_py.batch_size = 1 << 40;
    let e = err(args);
    assert!(e.contains("--batch-size") && e.contains("GiB"), "{e}");
    // --out that already holds a model is not overwritten.
    let out = dir.join("taken");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("model.safetensors"), b"a learner's model").unwrap();
    let e = finetune::run(base(&tiny, &data, &out)).unwrap_err();
    assert!(e.contains("already holds a model"), "{e}");
    assert_eq!(
        std::fs::read(out.join("model.safetensors")).unwrap(),
        b"a learner's model"
    );
    // An empty text is not prepared.
    std::fs::write(dir.join("empty.txt"), b"").unwrap();
    let e = gpt2::shards::prepare_nanogpt(&dir.join("empty.txt"), &dir.join("e")).unwrap_err();
    assert!(
        e.contains("empty.txt") && e.contains("holds no tokens"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
