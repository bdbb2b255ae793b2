//! "MLP revisited" through "batch normalization": the MLP with one batch norm,
//! 200,000 steps (cells 6, 7 and 10).

use super::{exact, exact_list, gate_full, loss_log, num, FULL_FIXTURE, TORCH_TOL};
use batchnorm::beside::Row;
use batchnorm::every_10k;
use batchnorm::mlp::{LossLogRow, Mlp};
use batchnorm::train::{mlp_split_losses, train_mlp};
use data::makemore::Splits;
use report::{Run, Target};
use serde_json::Value;
use tensor::rng::TorchGenerator;

/// The minibatch losses cell[7] prints every 10,000 steps (`{loss.item():.4f}`).
const NOTEBOOK_PRINTS: [f64; 20] = [
    3.3239, 2.0322, 2.5675, 2.0125, 2.2446, 1.8897, 2.0785, 2.3681, 2.2918, 2.0238, 2.3673, 2.3132,
    1.6414, 1.9311, 2.2231, 2.0027, 2.0997, 2.4949, 2.0199, 2.1707,
];

/// The PyTorch row of `lecture4_full.json` for one row of the loss log.
pub fn torch_row(full: &Value, row: LossLogRow) -> &Value {
    let name = match row {
        LossLogRow::Original => "original",
        LossLogRow::FixSoftmax => "fix softmax",
        LossLogRow::FixTanh => "fix tanh",
        LossLogRow::Kaiming => "kaiming",
        LossLogRow::BatchNorm => "batch norm",
    };
    full["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["row"] == name))
        .unwrap_or_else(|| panic!("lecture4_full.json has no row {name:?}"))
}

/// Trains the MLP with batch norm and checks its losses; returns it as the
/// loss log's last row.
pub fn run_stage(run: &mut Run, splits: &Splits, fx: &Value, gates: bool) -> Result<Row, String> {
    let quick = run.quick();
    let steps = loss_log::steps(run);
    let full = steps == 200_000;
    let seed = run.seed();
    let stage = run.stage("model A: MLP + batch norm");
    stage.set_source("makemore_part3_bn.ipynb cells 6, 7, 10; PyTorch, same draws: tests/fixtures/make_fixtures.py");
    let mut g = TorchGenerator::manual_seed(seed);
    let mut model = Mlp::new(LossLogRow::BatchNorm, &mut g);
    println!("parameters: {}", model.params.count());
    stage.target(Target::string(
        "model A parameters",
        "12097",
        &model.params.count().to_string(),
    ));
    let trained = train_mlp(&mut model, &mut g, &splits.train, steps, stage, "model A")?;
    let losses = &trained.losses;
    let reference = fx["model_a"]["losses"].as_array().expect("losses");
    stage.target(exact(
        gates,
        "model A step-0 loss (PyTorch)",
        3.3238626,
        1e-5,
        losses[0] as f64,
    ));
    if steps >= 5 {
        let step4 = num(&reference[4]);
        stage.target(exact(
            gates,
            "model A step-4 loss (PyTorch)",
            step4,
            1e-4,
            losses[4] as f64,
        ));
    }
    // The prints fall at steps 0, 10,000, …; a shorter run checks the ones it reaches.
    let printed = every_10k(losses);
    let notebook = &NOTEBOOK_PRINTS[..printed.len().min(NOTEBOOK_PRINTS.len())];
    stage.target(exact_list(
        gates,
        "model A losses printed every 10,000 steps (cell[7], 4 decimals)",
        notebook,
        5e-5,
        &printed,
    ));
    let (train, val) = mlp_split_losses(&mut model, splits);
    println!("train {train:.6}\nval   {val:.6}");
    stage.set_steps(steps);
    stage.set_final("train", train);
    stage.set_final("val", val);
    stage.target(Target::info(
        "model A ms per training step",
        trained.ms_per_step,
    ));
    let band = |name: &str, expected: f64, got: f64| {
        gate_full(full, Target::band(name, expected, 0.03, got))
    };
    stage.target(band(
        "model A train loss (lecture)",
        2.0674145221710205,
        train,
    ));
    stage.target(band("model A val loss (lecture)", 2.1056840419769287, val));
    let full_fixture: Value = serde_json::from_str(FULL_FIXTURE).expect("JSON");
    let torch = torch_row(&full_fixture, LossLogRow::BatchNorm);
    for (split, got) in [("train", train), ("val", val)] {
        let name = format!("model A {split} loss (PyTorch, same draws)");
        stage.target(gate_full(
            full && gates,
            Target::exact(&name, num(&torch[split]), TORCH_TOL, got),
        ));
    }
    if quick && steps == 3000 {
        stage.target(Target::below(
            "model A train loss after 3000 steps",
            2.45,
            train,
        ));
    }
    Ok(loss_log::row_of(&model, trained, (train, val)))
}
