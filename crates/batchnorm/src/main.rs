//! `batchnorm lecture --out DIR [--quick] [--steps K] [--ladder] [--full]`: lecture 4 end to end.
//!
//! Stages ([`stages`]): the MLP with batch norm (step-0 loss, 200k steps,
//! train/val bands), the gain experiments and E01, the torchified net (1,001
//! steps with the diagnostics PNGs, or 200k with `--full`), and E02.
//! `--ladder` adds the lecture's loss log. Exact targets are PyTorch's numbers
//! for the same draws (`tests/fixtures/lecture4.json`, made by
//! `make_fixtures.py` beside it).

mod stages;

use batchnorm::train::BATCH_SIZE;
use clap::Args;
use data::makemore::Splits;
use report::{Run, RunArgs};
use serde_json::{json, Value};
use stages::{FIXTURE, SEED};
use std::process::ExitCode;

/// Run the lecture: model A, gain experiments, E01, model B with diagnostics, E02.
#[derive(Args)]
struct LectureArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Also run the lecture's loss log: five inits, 200k steps each.
    #[arg(long)]
    ladder: bool,
    /// Train model B for the full 200k steps (lr 0.01 from 150k) instead of the lecture's 1,001.
    #[arg(long)]
    full: bool,
}

fn main() -> ExitCode {
    let about = "Lecture 4: activations, gradients, BatchNorm";
    report::lecture_main(about, tensor::check_threads_env(), 1, lecture)
}

fn lecture(args: LectureArgs) -> Result<ExitCode, String> {
    let fixture: Value =
        serde_json::from_str(FIXTURE).map_err(|e| format!("lecture4.json: {e}"))?;
    report::check_out_dir("--out", &args.run.out)?;
    let config = json!({
        "block_size": 3, "batch_size": BATCH_SIZE, "generator_seed": SEED,
        "model_a": {"n_embd": 10, "n_hidden": 200, "steps": 200000, "lr": "0.1, 0.01 from 100000",
                    "batchnorm": "unbiased std, no eps, momentum 0.001"},
        "model_b": {"n_embd": 10, "n_hidden": 100, "hidden_layers": 5, "steps": if args.full { 200000 } else { 1001 },
                    "lr": "0.1, 0.01 from 150000", "batchnorm": "unbiased var, eps 1e-5, momentum 0.1"},
        "ladder": args.ladder,
    });
    let mut run = Run::new(4, "batchnorm", &args.run, SEED, config)?;
    if run.seed() != SEED {
        println!("note: the lecture's generator seed is {SEED}; exact targets assume it");
    }
    let splits = Splits::load(3).map_err(|e| e.to_string())?;
    println!(
        "examples: train {}, val {}, test {}",
        splits.train.len(),
        splits.dev.len(),
        splits.test.len()
    );
    let exact_gates = run.seed() == SEED;

    // The loss log's other rows train beside the lecture's stages.
    let ladder = args.ladder.then(|| stages::loss_log::start(&run, &splits));
    let model_a = stages::mlp::run_stage(&mut run, &splits, &fixture, exact_gates)?;
    stages::gains::run_stage(&mut run, &splits, &fixture, exact_gates)?;
    stages::zero_init::run_stage(&mut run, &splits)?;
    stages::torchified::run_stage(&mut run, &splits, &fixture, exact_gates, args.full)?;
    if let Some(ladder) = ladder {
        stages::loss_log::run_stage(&mut run, ladder, model_a)?;
    }
    Ok(run.finish())
}
