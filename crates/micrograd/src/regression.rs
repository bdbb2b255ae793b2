//! The lecture's first training run: `MLP(3, [4, 4, 1])` fitted to four examples.
//!
//! Tanh neurons with random biases, loss `Σ (yout − ygt)²`, full-batch gradient
//! descent at learning rate 0.1, 20 steps (second-half notebook, cell 17).

use pyrandom::PyRandom;

use crate::{values, Module, Value, MLP};

/// The four inputs of the lecture.
pub const XS: [[f64; 3]; 4] = [
    [2.0, 3.0, -1.0],
    [3.0, -1.0, 0.5],
    [0.5, 1.0, 1.0],
    [1.0, 1.0, -1.0],
];

/// The desired outputs.
pub const YS: [f64; 4] = [1.0, -1.0, -1.0, 1.0];

/// What a regression run produced.
pub struct RegressionRun {
    /// The number of parameters (41).
    pub parameters: usize,
    /// The loss at each step, computed before that step's update.
    pub losses: Vec<f64>,
    /// The model's outputs on the four inputs after the last update.
    pub predictions: Vec<f64>,
}

/// The squared-error loss over the four examples.
pub fn loss(model: &MLP) -> Value {
    let mut ypred = Vec::new();
    for x in XS {
        ypred.push(model.forward(&values(&x)).remove(0));
    }
    ypred
        .iter()
        .zip(YS)
        .map(|(yout, ygt)| (yout - ygt).powf(2.0))
        .sum()
}

/// Trains `MLP::lecture(3, [4, 4, 1])`, drawn from `PyRandom::seed(seed)`;
/// `stage` reports progress and stops on a loss that is not finite.
pub fn run(
    seed: u64,
    steps: usize,
    learning_rate: f64,
    stage: &mut report::Stage,
) -> Result<RegressionRun, String> {
    let mut rng = PyRandom::seed(seed);
    let model = MLP::lecture(3, &[4, 4, 1], &mut rng);
    let mut losses = Vec::new();
    stage.start_training("regression", steps, report::LogEvery::Step(1));
    // ANCHOR: regression_step
    for k in 0..steps {
        let loss = loss(&model);
        model.zero_grad();
        loss.backward();
        for p in model.parameters() {
            p.set_data(p.data() + -learning_rate * p.grad());
        }
        stage.observe(k, loss.data(), learning_rate)?;
        losses.push(loss.data());
    }
    // ANCHOR_END: regression_step
    stage.finish_training();
    let predictions = XS
        .iter()
        .map(|x| model.forward(&values(x))[0].data())
        .collect();
    Ok(RegressionRun {
        parameters: model.parameters().len(),
        losses,
        predictions,
    })
}
