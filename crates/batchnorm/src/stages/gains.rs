//! "calculating the init scale": the deep Linear/Tanh stack without batch
//! norm at gains 1, 5/3 and 3, one step each, with the first three
//! visualisations (cells 15–17 before batch norm is added).

use super::{exact, num};
use batchnorm::diagnostics::{
    mean_std, plot_snapshot, print_snapshot, saturated_percent, snapshot_step,
};
use batchnorm::torchified::TorchifiedMlp;
use batchnorm::train::BATCH_SIZE;
use data::makemore::Splits;
use report::{Run, Target};
use serde_json::Value;
use tensor::rng::TorchGenerator;

/// Runs each gain's first step and checks its statistics against PyTorch's.
pub fn run_stage(run: &mut Run, splits: &Splits, fx: &Value, gates: bool) -> Result<(), String> {
    let seed = run.seed();
    let mut plots = Vec::new();
    let stage = run.stage("gain experiments: deep Linear/Tanh stack without batch norm, at init");
    stage.set_source("PyTorch, same draws: tests/fixtures/make_fixtures.py; the statistics of makemore_part3_bn.ipynb cells 15–17");
    for reference in fx["gains"].as_array().expect("gains") {
        let name = reference["gain"].as_str().expect("gain");
        let gain = match name {
            "5/3" => (5.0f64 / 3.0) as f32,
            other => other.parse::<f32>().map_err(|e| e.to_string())?,
        };
        let mut g = TorchGenerator::manual_seed(seed);
        let mut net = TorchifiedMlp::new(&mut g, false, gain);
        let (xb, yb) = splits.train.minibatch(&mut g, BATCH_SIZE);
        let (loss, snap) = snapshot_step(&mut net, &xb, &yb);
        println!("-- gain {name}: step-0 loss {loss:.4}");
        print_snapshot(&snap);
        let expected_loss = num(&reference["loss"]);
        stage.target(exact(
            gates,
            &format!("gain {name}: step-0 loss"),
            expected_loss,
            1e-5,
            loss as f64,
        ));
        let reference_tanh = reference["step0"]["tanh"].as_array().expect("tanh");
        stage.target(Target::string(
            &format!("gain {name}: tanh layers"),
            &reference_tanh.len().to_string(),
            &snap.tanh.len().to_string(),
        ));
        for (t, r) in snap.tanh.iter().zip(reference_tanh) {
            let i = t.layer;
            let (_, s) = mean_std(&t.out);
            let (_, gs) = mean_std(&t.grad);
            stage.target(exact(
                gates,
                &format!("gain {name}: layer {i} tanh std"),
                num(&r["std"]),
                1e-4,
                s,
            ));
            stage.target(exact(
                gates,
                &format!("gain {name}: layer {i} saturated %"),
                num(&r["saturated_percent"]),
                0.1,
                saturated_percent(&t.out),
            ));
            let expected = num(&r["grad_std"]);
            let what = format!("gain {name}: layer {i} tanh grad std");
            stage.target(exact(gates, &what, expected, 1e-3 * expected, gs));
        }
        plots.push((name.to_string(), snap));
    }
    for (name, snap) in &plots {
        let file = name.replace('/', "-");
        let title = format!("gain {name}, no batch norm: ");
        plot_snapshot(run.out_dir(), &format!("gain-{file}-"), &title, snap)?;
    }
    Ok(())
}
