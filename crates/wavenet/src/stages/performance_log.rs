//! `--ladder`: the lecture's performance log (cell[14]), five configurations
//! of 200k steps each, against the lecture and PyTorch's runs.

use super::{
    evaluate, fixture_row, torch_prints, BUG_ROW_TORCH_TOL, FULL_FIXTURE, STEPS, TORCH_TOL,
};
use batchnorm::every_10k;
use data::makemore::Splits;
use report::{Run, Target};
use serde_json::Value;
use wavenet::train::train;
use wavenet::Config;

/// Trains every row of the performance log.
pub fn run_stage(run: &mut Run, fixture: &Value, gates: bool) -> Result<(), String> {
    let steps = run
        .steps_override()
        .unwrap_or(if run.quick() { 2000 } else { STEPS });
    let full = steps == STEPS;
    let seed = run.seed();
    let full_fixture: Value = serde_json::from_str(FULL_FIXTURE).expect("fixture is JSON");
    let stage = run.stage("performance log (--ladder)");
    stage.set_source("makemore_part5_cnn1.ipynb cell[14] (scaled-up row: cell[13]); PyTorch: tests/fixtures/make_fixtures.py");
    let mut rows = Vec::new();
    for config in Config::LADDER.iter() {
        let reference = fixture_row(fixture, "lecture6.json", config.name)?;
        let torch = fixture_row(&full_fixture, "lecture6_full.json", config.name)?;
        let splits = Splits::load(config.block_size).map_err(|e| e.to_string())?;
        let mut trained = train(*config, seed, &splits.train, steps, stage, config.name)?;
        let params = trained.net.params.count();
        stage.target(Target::string(
            &format!("{}: parameters", config.name),
            &reference["params"].to_string(),
            &params.to_string(),
        ));
        let t = Target::exact(
            &format!("{}: step-0 loss (PyTorch)", config.name),
            reference["losses"][0].as_f64().unwrap_or(f64::NAN),
            1e-5,
            trained.losses[0] as f64,
        );
        stage.target(if gates { t } else { t.ungated() });
        // See BUG_ROW_TORCH_TOL: that row's losses part from PyTorch's after step 0
        // (checked above), so only its final losses are compared, more loosely.
        let tol = if config.batchnorm_bug {
            BUG_ROW_TORCH_TOL
        } else {
            let printed = every_10k(&trained.losses);
            let t = Target::all_within(
                &format!("{}: losses every 10,000 steps (PyTorch)", config.name),
                &torch_prints(torch, printed.len()),
                TORCH_TOL,
                &printed,
            );
            stage.target(if gates { t } else { t.ungated() });
            TORCH_TOL
        };
        let (train_loss, val_loss) = evaluate(&mut trained.net, &splits);
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
            trained.ms_per_step,
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
