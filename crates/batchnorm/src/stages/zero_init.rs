//! Exercise E01: every weight and bias at zero.
//!
//! Only b2 ever gets a gradient: h = tanh(0) = 0 blocks W2's gradient, W2 = 0
//! blocks everything below it. The net learns the unconditional distribution
//! of the next character and stops there.

use batchnorm::mlp::{LossLogRow, Mlp};
use batchnorm::split_loss;
use batchnorm::train::train_zero_init;
use data::makemore::Splits;
use report::{Run, Target};
use tensor::rng::TorchGenerator;

/// Trains the all-zero MLP and checks that it ends at the unigram entropy.
pub fn run_stage(run: &mut Run, splits: &Splits) -> Result<(), String> {
    let steps = if run.quick() { 2000 } else { 20_000 };
    let seed = run.seed();
    let stage = run.stage("E01: all-zero init");
    stage.set_source("exercise E01 (the video's description), derived: only b2 learns; the train split's unigram entropy");
    let mut g = TorchGenerator::manual_seed(seed);
    let mut model = Mlp::new(LossLogRow::Original, &mut g);
    for (_, p) in model.params.iter_mut() {
        p.value = p.value.mul_scalar(0.0);
    }
    let moved = train_zero_init(&mut model, &mut g, &splits.train, steps, stage)?;
    let train = split_loss(&splits.train, |graph, xb| model.forward(graph, xb, false));
    // The best constant prediction: the entropy of the next-character frequencies.
    let mut counts = [0usize; 27];
    for &y in &splits.train.y {
        counts[y] += 1;
    }
    let n = splits.train.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| -(c as f64 / n) * (c as f64 / n).ln())
        .sum();
    println!("after {steps} steps: train loss {train:.4}; entropy of the next-character frequencies {entropy:.4}");
    println!(
        "parameters that ever received a nonzero gradient: {}",
        moved.join(", ")
    );
    stage.set_steps(steps);
    stage.set_final("train", train);
    stage.target(Target::string(
        "E01: parameters with a nonzero gradient",
        "b2",
        &moved.join(","),
    ));
    stage.target(Target::band(
        "E01: train loss vs unigram entropy",
        entropy,
        0.01,
        train,
    ));
    Ok(())
}
