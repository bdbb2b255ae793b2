//! Exercise 4 as `main.rs` runs it: training with the manual backward pass,
//! checked against the lecture and PyTorch's run with the same draws.

use crate::{
    BAND, FULL_TOL, INIT_SEED, QUICK_STEPS, QUICK_TOL, STEP0_LOSS_200, TORCH, TORCH_FULL, TRAIN,
    VAL,
};
use backprop_ninja::train::{calibrate, sample, split_loss, train};
use backprop_ninja::Weights;
use data::makemore::Splits;
use report::{Run, Target};
use tensor::rng::TorchGenerator;

/// Exercise 4: the whole net trained with the manual backward pass; returns the samples.
pub fn exercise4(
    run: &mut Run,
    splits: &Splits,
    steps: usize,
    full: bool,
) -> Result<Vec<String>, String> {
    let (seed, quick) = (run.seed(), run.quick());
    let lecture_seed = seed == 42;
    let stage = run.stage("exercise 4");
    stage.set_source("makemore_part4_backprop.ipynb cells 22, 25; PyTorch, same draws: tests/fixtures/ninja_torch.py");
    let mut g = TorchGenerator::manual_seed(INIT_SEED);
    let mut w = Weights::init(200, &mut g, &mut TorchGenerator::manual_seed(seed));
    stage.target(Target::string(
        "parameters",
        "12297",
        &w.count().to_string(),
    ));
    let (losses, loop_ms) = train(&mut w, &splits.train, &mut g, steps, stage)?;
    if lecture_seed {
        if let Some(&first) = losses.first() {
            stage.target(Target::exact(
                "step-0 loss (PyTorch, global seed 42)",
                STEP0_LOSS_200,
                1e-4,
                first as f64,
            ));
        }
    }
    // The stage's own ms_per_step also counts the full-split evaluation below.
    stage.target(Target::info("ms per training step (loop only)", loop_ms));
    let stats = calibrate(&w, &splits.train);
    let train = split_loss(&w, &stats, &splits.train) as f64;
    let val = split_loss(&w, &stats, &splits.dev) as f64;
    println!("train {train}\nval {val}");
    stage.set_final("train", train);
    stage.set_final("val", val);
    let names = sample(
        &w,
        &stats,
        &mut TorchGenerator::manual_seed(INIT_SEED + 10),
        20,
    );
    for name in &names {
        println!("{name}");
    }
    let torch: serde_json::Value = serde_json::from_str(TORCH).expect("fixture is JSON");
    let torch_full: serde_json::Value = serde_json::from_str(TORCH_FULL).expect("fixture is JSON");
    let number = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let words = |v: &serde_json::Value| {
        let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
        list.iter()
            .filter_map(|w| w.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let gate = |gates: bool, t: Target| if gates { t } else { t.ungated() };
    if quick && steps == QUICK_STEPS {
        for (split, got) in [("train", train), ("val", val)] {
            stage.target(gate(
                lecture_seed,
                Target::exact(
                    &format!("{split} loss after 5000 steps (PyTorch, same draws)"),
                    number(&torch[format!("quick_{split}")]),
                    QUICK_TOL,
                    got,
                ),
            ));
        }
        stage.target(gate(
            lecture_seed,
            Target::string(
                "samples after 5000 steps (PyTorch)",
                &words(&torch["quick_samples"]),
                &names.join(" "),
            ),
        ));
    } else if !quick {
        for (split, lecture, got) in [("train", TRAIN, train), ("val", VAL, val)] {
            stage.target(gate(
                full,
                Target::band(&format!("{split} loss"), lecture, BAND, got),
            ));
            stage.target(gate(
                full && lecture_seed,
                Target::exact(
                    &format!("{split} loss (PyTorch, same draws)"),
                    number(&torch_full[split]),
                    FULL_TOL,
                    got,
                ),
            ));
        }
    }
    stage.end();
    Ok(names)
}
