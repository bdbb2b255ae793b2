//! "scaling up WaveNet": the hierarchical model trained for 200k steps
//! (cells 10–12), against the notebook's prints and PyTorch's run.

use super::{evaluate, torch_prints, NOTEBOOK_PRINTS, NOTEBOOK_TOL, SEED, STEPS, TORCH_TOL};
use batchnorm::diagnostics::line_plot;
use batchnorm::every_10k;
use data::makemore::Splits;
use report::{Run, Target};
use serde_json::Value;
use wavenet::train::{train, Trained};
use wavenet::Config;

/// Trains the lecture's model and checks its losses; returns it for the next
/// stage, with its train and val losses.
pub fn run_stage(
    run: &mut Run,
    splits: &Splits,
    steps: usize,
    (reference, torch): (&Value, &Value),
) -> Result<(Trained, (f64, f64)), String> {
    let cfg = Config::lecture();
    let seed = run.seed();
    let gates = seed == SEED;
    let quick = run.quick();
    let full = steps == STEPS;
    let stage = run.stage("hierarchical model");
    stage.set_source("makemore_part5_cnn1.ipynb cells 9, 10, 13; PyTorch, same draws: tests/fixtures/make_fixtures.py");
    let Trained {
        mut net,
        g,
        losses,
        ms_per_step,
    } = train(cfg, seed, &splits.train, steps, stage, "wavenet")?;
    stage.target(Target::string(
        "parameters",
        "76579",
        &net.params.count().to_string(),
    ));
    let exact = |name: &str, expected: f64, tol: f64, got: f64| {
        let t = Target::exact(name, expected, tol, got);
        if gates {
            t
        } else {
            t.ungated()
        }
    };
    let exact_list = |name: &str, expected: &[f64], tol: f64, got: &[f64]| {
        let t = Target::all_within(name, expected, tol, got);
        if gates {
            t
        } else {
            t.ungated()
        }
    };
    stage.target(exact(
        "step-0 loss (PyTorch)",
        3.3167155,
        1e-5,
        losses[0] as f64,
    ));
    if steps >= 5 {
        stage.target(exact(
            "step-4 loss (PyTorch)",
            reference["losses"][4].as_f64().unwrap_or(f64::NAN),
            1e-4,
            losses[4] as f64,
        ));
    }
    let printed = every_10k(&losses);
    stage.target(exact_list(
        "losses printed every 10,000 steps (cell[10], 4 decimals)",
        &NOTEBOOK_PRINTS[..printed.len().min(NOTEBOOK_PRINTS.len())],
        NOTEBOOK_TOL,
        &printed,
    ));
    stage.target(exact_list(
        "losses every 10,000 steps (PyTorch, same draws)",
        &torch_prints(torch, printed.len()),
        TORCH_TOL,
        &printed,
    ));
    stage.target(Target::info("ms per training step", ms_per_step));
    let (train_loss, val_loss) = evaluate(&mut net, splits);
    println!("train {train_loss:.6}\nval   {val_loss:.6}");
    stage.set_steps(steps);
    stage.set_final("train", train_loss);
    stage.set_final("val", val_loss);
    let band = |name: &str, expected: f64, got: f64| {
        let t = Target::band(name, expected, 0.03, got);
        if full {
            t
        } else {
            t.ungated()
        }
    };
    stage.target(band("train loss (lecture)", cfg.lecture.0, train_loss));
    stage.target(band("val loss (lecture)", cfg.lecture.1, val_loss));
    for (split, got) in [("train", train_loss), ("val", val_loss)] {
        let t = Target::exact(
            &format!("{split} loss (PyTorch, same draws)"),
            torch[split].as_f64().unwrap_or(f64::NAN),
            TORCH_TOL,
            got,
        );
        stage.target(if full && gates { t } else { t.ungated() });
    }
    if quick && steps == 2000 {
        stage.target(Target::below(
            "train loss after 2000 steps",
            2.45,
            train_loss,
        ));
    }

    // The loss curve as the lecture plots it: means over blocks of 1000 steps.
    let blocks: Vec<(f64, f64)> = losses
        .chunks_exact(1000)
        .enumerate()
        .map(|(k, c)| {
            (
                k as f64,
                c.iter().map(|&l| (l as f64).log10()).sum::<f64>() / 1000.0,
            )
        })
        .collect();
    if !blocks.is_empty() {
        line_plot(
            &run.out_dir().join("loss-blocks.png"),
            "log10 loss, mean over blocks of 1000 steps",
            "block of 1000 steps",
            &[("train".to_string(), blocks)],
            None,
        )?;
    }

    let trained = Trained {
        net,
        g,
        losses,
        ms_per_step,
    };
    Ok((trained, (train_loss, val_loss)))
}
