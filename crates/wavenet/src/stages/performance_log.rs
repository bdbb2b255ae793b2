//! `--ladder`: the lecture's performance log (cell[14]), five configurations
//! of 200k steps each, against the lecture and PyTorch's runs.
//!
//! The last row is the lecture's own model, which the first stage has just
//! trained with the same seed and steps, so its numbers are taken from there.
//! The other four train beside it (see [`batchnorm::beside`]).

use super::{
    evaluate, fixture_row, steps, torch_prints, BUG_ROW_TORCH_TOL, FULL_FIXTURE, STEPS, TORCH_TOL,
};
use batchnorm::beside::{Beside, Row};
use batchnorm::{every_10k, print_every_10k};
use data::makemore::Splits;
use report::{Run, Stage, Target};
use serde_json::Value;
use wavenet::train::train;
use wavenet::Config;

/// The row of a model trained elsewhere (the lecture's own run).
pub fn row_of(trained: &wavenet::train::Trained, (train, val): (f64, f64)) -> Row {
    Row {
        params: trained.net.params.count(),
        losses: trained.losses.clone(),
        train,
        val,
        ms_per_step: trained.ms_per_step,
    }
}

/// The rows other than the lecture's, training beside it.
pub struct Ladder {
    steps: usize,
    rows: Beside<Row>,
}

/// Trains and evaluates one row under `stage`.
fn train_row(config: Config, seed: u64, steps: usize, stage: &mut Stage) -> Result<Row, String> {
    let splits = Splits::load(config.block_size).map_err(|e| e.to_string())?;
    let mut trained = train(config, seed, &splits.train, steps, stage, config.name)?;
    let (train, val) = evaluate(&mut trained.net, &splits);
    Ok(row_of(&trained, (train, val)))
}

/// Starts the rows other than the lecture's model beside it (see
/// [`batchnorm::beside`]), the largest first.
pub fn start(run: &Run) -> Ladder {
    let (seed, steps) = (run.seed(), steps(run));
    let mut rows: Vec<(usize, &'static str)> = Config::LADDER
        .iter()
        .enumerate()
        .filter(|(_, c)| c.name != Config::lecture().name)
        .map(|(place, c)| (place, c.name))
        .collect();
    rows.reverse(); // the log grows its models as it goes
    let rows = Beside::start(rows, move |place, stage| {
        train_row(Config::LADDER[place], seed, steps, stage)
    });
    Ladder { steps, rows }
}

/// Checks every row of the performance log: the lecture's own (`lecture`,
/// from the first stage) and the others from `ladder`.
pub fn run_stage(
    run: &mut Run,
    fixture: &Value,
    gates: bool,
    ladder: Ladder,
    lecture: Row,
) -> Result<(), String> {
    let steps = ladder.steps;
    let full = steps == STEPS;
    let full_fixture: Value = serde_json::from_str(FULL_FIXTURE).expect("fixture is JSON");
    let stage = run.stage("performance log (--ladder)");
    stage.set_source("makemore_part5_cnn1.ipynb cell[14] (scaled-up row: cell[13]); PyTorch: tests/fixtures/make_fixtures.py");
    let trained = ladder.rows.finish()?;
    let mut others = Vec::new();
    for (row, rows_stage) in trained {
        stage.append_rows_of(rows_stage);
        others.push(row);
    }
    let mut others = others.into_iter();
    let mut lecture = Some(lecture);
    let mut rows = Vec::new();
    for config in Config::LADDER.iter() {
        let reference = fixture_row(fixture, "lecture6.json", config.name)?;
        let torch = fixture_row(&full_fixture, "lecture6_full.json", config.name)?;
        let row = match config.name == Config::lecture().name {
            true => lecture.take(),
            false => others.next(),
        }
        .expect("one row per configuration");
        if config.name != Config::lecture().name {
            // The lines the row's loop prints on its own (see Beside's `work`).
            println!("{}: {} parameters", config.name, row.params);
            print_every_10k(&row.losses);
        }
        let params = row.params;
        stage.target(Target::string(
            &format!("{}: parameters", config.name),
            &reference["params"].to_string(),
            &params.to_string(),
        ));
        let t = Target::exact(
            &format!("{}: step-0 loss (PyTorch)", config.name),
            reference["losses"][0].as_f64().unwrap_or(f64::NAN),
            1e-5,
            row.losses[0] as f64,
        );
        stage.target(if gates { t } else { t.ungated() });
        // See BUG_ROW_TORCH_TOL: that row's losses part from PyTorch's after step 0
        // (checked above), so only its final losses are compared, more loosely.
        let tol = if config.batchnorm_bug {
            BUG_ROW_TORCH_TOL
        } else {
            let printed = every_10k(&row.losses);
            let t = Target::all_within(
                &format!("{}: losses every 10,000 steps (PyTorch)", config.name),
                &torch_prints(torch, printed.len()),
                TORCH_TOL,
                &printed,
            );
            stage.target(if gates { t } else { t.ungated() });
            TORCH_TOL
        };
        let (train_loss, val_loss) = (row.train, row.val);
        for (split, got, expected) in [
            ("train", train_loss, config.lecture.0),
            ("val", val_loss, config.lecture.1),
        ] {
            let t = Target::band(
                &format!("{}: {split} (lecture)", config.name),
                expected,
                0.03,
                got,
            );
            stage.target(if full { t } else { t.ungated() });
            let t = Target::exact(
                &format!("{}: {split} (PyTorch, same draws)", config.name),
                torch[split].as_f64().unwrap_or(f64::NAN),
                tol,
                got,
            );
            stage.target(if full && gates { t } else { t.ungated() });
        }
        stage.target(Target::info(
            &format!("{}: ms per step", config.name),
            row.ms_per_step,
        ));
        rows.push((config, params, train_loss, val_loss));
    }
    println!("\n| run | params | ours train / val | lecture train / val |\n|---|---|---|---|");
    for (c, params, t, v) in rows {
        println!(
            "| {} | {params} | {t:.3} / {v:.3} | {:.3} / {:.3} |",
            c.name, c.lecture.0, c.lecture.1
        );
    }
    stage.set_steps(steps * Config::LADDER.len());
    Ok(())
}
