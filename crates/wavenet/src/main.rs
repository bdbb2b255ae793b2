//! `wavenet lecture --out DIR [--quick] [--seed S] [--steps K] [--ladder]`: lecture 6 end to end.
//!
//! Builds the hierarchical model, checks the parameter count and PyTorch's
//! step-0 loss, trains 200k steps, evaluates in eval mode, plots the loss as
//! means over blocks of 1000 steps, prints the shape walk-through and samples,
//! and checks the convolution view. `--ladder` adds the performance log.

mod stages;

use clap::Args;
use data::makemore::Splits;
use report::{Run, RunArgs};
use serde_json::{json, Value};
use stages::{fixture_row, FIXTURE, FULL_FIXTURE, SEED, STEPS};
use std::process::ExitCode;
use wavenet::train::BATCH_SIZE;
use wavenet::Config;

/// Run the lecture: the hierarchical model, 200k steps, eval, samples, the convolution view.
#[derive(Args)]
struct LectureArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Also run the lecture's performance log: five configurations, 200k steps each.
    #[arg(long)]
    ladder: bool,
}

fn main() -> ExitCode {
    let about = "Lecture 6: building a WaveNet";
    report::lecture_main(about, tensor::check_threads_env(), 1, lecture)
}

fn lecture(args: LectureArgs) -> Result<ExitCode, String> {
    let fixture: Value =
        serde_json::from_str(FIXTURE).map_err(|e| format!("lecture6.json: {e}"))?;
    report::check_out_dir("--out", &args.run.out)?;
    let cfg = Config::lecture();
    let config = json!({
        "block_size": cfg.block_size, "n_embd": cfg.n_embd, "n_hidden": cfg.n_hidden, "batch_size": BATCH_SIZE,
        "steps": STEPS, "lr": "0.1, 0.01 from 150000", "seed": "torch.manual_seed(42): layers, then minibatches",
        "batchnorm": "over (0, 1) for 3-D input, unbiased var, eps 1e-5, momentum 0.1", "ladder": args.ladder,
    });
    let mut run = Run::new(6, "wavenet", &args.run, SEED, config)?;
    let seed = run.seed();
    let gates = seed == SEED;
    let steps = stages::steps(&run);
    let splits = Splits::load(cfg.block_size).map_err(|e| e.to_string())?;
    println!(
        "examples: train {}, val {}, test {}",
        splits.train.len(),
        splits.dev.len(),
        splits.test.len()
    );
    let reference = fixture_row(&fixture, "lecture6.json", cfg.name)?;
    let full_fixture: Value = serde_json::from_str(FULL_FIXTURE).expect("fixture is JSON");
    let torch = fixture_row(&full_fixture, "lecture6_full.json", cfg.name)?;

    // The performance log's other rows train beside the lecture's model.
    let ladder = args.ladder.then(|| stages::performance_log::start(&run));
    let (trained, losses) =
        stages::hierarchical::run_stage(&mut run, &splits, steps, (reference, torch))?;
    let lecture_row = stages::performance_log::row_of(&trained, losses);
    stages::shapes::run_stage(&mut run, &splits, trained)?;
    if let Some(ladder) = ladder {
        stages::performance_log::run_stage(&mut run, &fixture, gates, ladder, lecture_row)?;
    }
    Ok(run.finish())
}
