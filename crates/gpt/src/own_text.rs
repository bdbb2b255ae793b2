//! `gpt train`: runs nanoGPT's train.py ([`gpt::nanogpt::train`]) and keeps its
//! record: `report.json`, `loss.csv` and the loss plot in the out dir after
//! every evaluation and at the end, mirrored onto the runs page.

use gpt::nanogpt::configurator::TrainArgs;
use gpt::nanogpt::train::{self, Run};
use report::tool_run::{self, ToolReport};
use std::process::ExitCode;
use std::time::Instant;

/// The files of a run that the runs page shows.
const RECORD: [&str; 4] = ["report.json", "loss.csv", "loss.png", "loss.svg"];

pub fn train(args: TrainArgs) -> Result<ExitCode, String> {
    if args.train_py.compile {
        println!("--compile=True: there is nothing to compile here; ignored");
    }
    let _precision = tensor::bf16::precision_scope(args.train_py.precision()?);
    let started = Instant::now();
    let mut run = Run::start(args)?;
    let first_iter = run.trainer.iter;
    let result = train::train(&mut run, |run| {
        write_record(run, first_iter, started, false)
    });
    let finished = write_record(&run, first_iter, started, true);
    result.and(finished)?;
    Ok(ExitCode::SUCCESS)
}

/// `report.json`, `loss.csv` and the plots into the out dir, then the runs page.
fn write_record(run: &Run, first_iter: usize, started: Instant, done: bool) -> Result<(), String> {
    let dir = &run.args.out_dir;
    let h = &run.history;
    let rows = train::loss_rows(&h.losses, &h.evals, "train", run.args.train_py.schedule());
    tool_run::write_loss_files(dir, "nanoGPT train", &rows)?;
    let (final_losses, mut targets) = train::eval_figures(&h.evals);
    if run.best_val_loss < 1e9 {
        targets.push(report::Target::info(
            "best val loss (ckpt.safetensors)",
            run.best_val_loss as f64,
        ));
    }
    let step_ms = &run.history.step_ms;
    ToolReport {
        tool: "nanogpt".into(),
        crate_name: "gpt".into(),
        seed: run.args.train_py.seed,
        config: serde_json::to_value(&run.args).map_err(|e| e.to_string())?,
        stage: "train".into(),
        steps: run.trainer.iter,
        ms_per_step: (!step_ms.is_empty())
            .then(|| step_ms.iter().sum::<f64>() / step_ms.len() as f64),
        final_losses,
        source: format!(
            "nanoGPT's train.py (karpathy/nanoGPT 3adf61e) on {}, iterations 0 to {}{}",
            run.args.data.display(),
            run.trainer.iter,
            if first_iter > 0 {
                format!(", resumed at {first_iter}")
            } else {
                String::new()
            }
        ),
        targets,
    }
    .write(dir, started.elapsed().as_secs_f64(), done)?;
    tool_run::mirror_to_runs_page(
        tool_run::runs_folder(&data::workspace_root()),
        "nanogpt",
        dir,
        &RECORD,
    );
    Ok(())
}
