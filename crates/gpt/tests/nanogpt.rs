//! `gpt prepare`, `gpt train` and `gpt sample --out-dir` against nanoGPT's own
//! scripts (karpathy/nanoGPT 3adf61e, torch 2.15.0), run by
//! `tests/fixtures/nanogpt/make_fixtures.py` on a generated text with
//! characters beyond ASCII (185 of them, one outside the BMP) and Windows line
//! endings: prepare.py's files, train.py with the README's CPU line for 200
//! iterations, and sample.py on a small model that train.py trained.

use gpt::nanogpt::checkpoint::{Checkpoint, FILE};
use gpt::nanogpt::configurator::TrainArgs;
use gpt::nanogpt::prepare::{self, read_folder, read_meta};
use gpt::nanogpt::sample::{sample, SampleArgs};
use gpt::nanogpt::train::{self, Run};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nanogpt")
}

fn fixture() -> Value {
    let text = std::fs::read_to_string(fixtures().join("nanogpt.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpt-nanogpt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `gpt train`'s flags from nanoGPT's command line (`--key=value` after the config file).
fn train_args(data: &Path, out: &Path, nanogpt_args: &Value) -> TrainArgs {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: TrainArgs,
    }
    let mut argv = vec!["train".to_string()];
    for arg in nanogpt_args.as_array().unwrap() {
        let arg = arg.as_str().unwrap();
        if arg.starts_with("--dataset=") || arg.starts_with("--out_dir=") || !arg.starts_with("--")
        {
            continue; // the folders are ours; the config file's values are our defaults
        }
        argv.push(arg.to_string());
    }
    argv.push(format!("--data={}", data.display()));
    argv.push(format!("--out_dir={}", out.display()));
    flags::parse_from::<Cli>(argv).args
}

#[test]
fn prepare_writes_prepare_pys_files() {
    let out = temp_dir("prepare");
    let lines = prepare::prepare_file(&fixtures().join("own_text.txt"), &out).unwrap();
    let fx = fixture();
    for file in ["train.bin", "val.bin"] {
        let ours = std::fs::read(out.join(file)).unwrap();
        let theirs = std::fs::read(fixtures().join("prepared").join(file)).unwrap();
        assert!(ours == theirs, "{file} differs from prepare.py's");
    }
    // prepare.py's printed lines, ours adding where it wrote.
    let stdout = fx["prepare"]["stdout"].as_str().unwrap();
    assert!(
        lines.starts_with(stdout),
        "ours:\n{lines}\nprepare.py:\n{stdout}"
    );
    // meta.pkl: ours and prepare.py's load to the same vocabulary (Python
    // loads both to equal dicts: check_meta.py).
    let theirs = read_meta(
        &std::fs::read(fixtures().join("prepared/meta.pkl")).unwrap(),
        "meta.pkl",
    )
    .unwrap();
    let ours = read_meta(&std::fs::read(out.join("meta.pkl")).unwrap(), "meta.pkl").unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(
        ours.len() as u64,
        fx["prepare"]["vocab_size"].as_u64().unwrap()
    );
    // And a folder prepare.py wrote reads as ours.
    let folder = read_folder(&fixtures().join("prepared")).unwrap();
    assert_eq!(
        folder.train.len() as u64,
        fx["prepare"]["train_tokens"].as_u64().unwrap()
    );
    assert_eq!(
        folder.val.len() as u64,
        fx["prepare"]["val_tokens"].as_u64().unwrap()
    );
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn train_tracks_train_py_for_200_iterations() {
    let fx = fixture();
    let t = &fx["train"];
    let out = temp_dir("train");
    let args = train_args(&fixtures().join("prepared"), &out, &t["args"]);
    assert_eq!(
        (
            args.train_py.max_iters,
            args.train_py.eval_interval,
            args.n_embd
        ),
        (200, 100, 128)
    );
    let mut run = Run::start(args).unwrap();
    let model = run.args.model_args(run.data.vocab.len());
    assert_eq!(
        train::num_params(&run.trainer, &model) as u64,
        t["params_non_embedding"].as_u64().unwrap()
    );
    assert_eq!(
        run.trainer.params.count() as u64,
        t["params_total"].as_u64().unwrap()
    );
    train::train(&mut run, |_| Ok(())).unwrap();

    let want: Vec<f64> = t["iter_losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let got = &run.history.losses;
    assert_eq!(got.len(), want.len(), "train.py logs iterations 0..=200");
    let d0 = (got[0].1 as f64 - want[0]).abs();
    assert!(
        d0 < 1e-5,
        "iteration 0: ours {}, train.py {}",
        got[0].1,
        want[0]
    );
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g.1 as f64 - w).abs())
        .fold(0.0, f64::max);
    eprintln!("iteration 0: {d0:.2e} from train.py's loss; the farthest logged loss: {worst:.2e}");
    assert!(worst < 1.5e-4, "a logged loss is {worst} from train.py's");
    let evals = t["evals"].as_array().unwrap();
    assert_eq!(run.history.evals.len(), evals.len());
    for (ours, theirs) in run.history.evals.iter().zip(evals) {
        assert_eq!(ours.0 as u64, theirs["iter"].as_u64().unwrap());
        let tol = if ours.0 == 0 { 1e-5 } else { 1e-3 };
        for (got, key) in [(ours.1, "train"), (ours.2, "val")] {
            let want = theirs[key].as_f64().unwrap();
            eprintln!(
                "{key} loss at iteration {}: ours {got}, train.py {want}",
                ours.0
            );
            assert!(
                (got as f64 - want).abs() < tol,
                "{key} loss at iteration {}: ours {got}, train.py {want}",
                ours.0
            );
        }
    }
    // The checkpoint was written when train.py writes it, and resumes.
    let ckpt = Checkpoint::load(&out.join(FILE)).unwrap();
    assert_eq!(ckpt.iter_num, 200);
    std::fs::remove_dir_all(out).unwrap();
}

/// The small model that nanoGPT's train.py trained, exported by the fixture
/// script, put in an out dir as `gpt train` writes it.
fn out_dir_with_nanogpts_weights() -> PathBuf {
    let fx = fixture();
    let out = temp_dir("sample");
    let args = train_args(
        &fixtures().join("prepared"),
        &out,
        &fx["sample_model_train"]["args"],
    );
    let mut run = Run::start(args).unwrap();
    let bytes = std::fs::read(fixtures().join("sample_model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for (_, p) in run.trainer.params.iter_mut() {
        let view = st.tensor(&p.name).unwrap();
        assert_eq!(view.shape(), p.value.shape(), "{}", p.name);
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        p.value = tensor::Tensor::from_vec(values, view.shape());
    }
    assert_eq!(st.len(), run.trainer.params.len());
    std::fs::create_dir_all(&out).unwrap();
    run.checkpoint().save(&out.join(FILE)).unwrap();
    out
}

#[test]
fn sample_draws_sample_pys_characters() {
    let fx = fixture();
    let out = out_dir_with_nanogpts_weights();
    for case in fx["samples"].as_array().unwrap() {
        let mut args = SampleArgs::new(out.clone());
        for arg in case["args"].as_array().unwrap() {
            let (key, value) = arg.as_str().unwrap().split_once('=').unwrap();
            match key {
                "--start" => args.start = value.to_string(),
                "--seed" => args.seed = value.parse().unwrap(),
                "--num_samples" => args.num_samples = value.parse().unwrap(),
                "--max_new_tokens" => args.max_new_tokens = value.parse().unwrap(),
                "--temperature" => args.temperature = value.parse().unwrap(),
                "--top_k" => args.top_k = value.parse().unwrap(),
                _ => {}
            }
        }
        let want: Vec<&str> = case["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let got = sample(&args).unwrap();
        assert_eq!(got, want, "{:?}", case["args"]);
    }
    std::fs::remove_dir_all(out).unwrap();
}
