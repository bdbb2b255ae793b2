//! micrograd's `demo.ipynb`: a binary classifier for two interleaving half-moons.
//!
//! `MLP(2, [16, 16, 1])` (337 parameters, ReLU, linear output) scores each point;
//! the sign of the score is the class. The loss is the SVM max-margin loss
//! `mean(max(0, 1 − y·score))` plus `1e-4 · Σ p²`, and 100 full-batch SGD steps use
//! the learning rate `1.0 − 0.9·k/100`. Karpathy's run ends at loss 0.011 and 100%
//! accuracy.
//!
//! The 100 points are `tests/fixtures/moons.json`, made by `make_moons.py` there
//! with `np.random.seed(1337); make_moons(n_samples=100, noise=0.1)`. With those
//! points and `random.seed(1337)` weights, pip micrograd prints exactly the
//! losses of Karpathy's notebook (0.8958441028683222 at step 0).

use pyrandom::PyRandom;
use serde::Deserialize;

use crate::{values, Module, Value, MLP};

/// Points in the plane, each labelled -1 or +1.
#[derive(Clone, Debug)]
pub struct Moons {
    /// The points.
    pub x: Vec<[f64; 2]>,
    /// Their labels, -1.0 or 1.0.
    pub y: Vec<f64>,
}

#[derive(Deserialize)]
struct MoonsFile {
    x: Vec<[f64; 2]>,
    y: Vec<i64>,
}

impl Moons {
    /// The committed 100-point fixture, compiled into the crate.
    pub fn fixture() -> Moons {
        Moons::from_json(include_str!("../tests/fixtures/moons.json"))
            .expect("the committed moons.json is valid")
    }

    /// Reads the fixture's format: `{"x": [[x0, x1], ...], "y": [-1, 1, ...]}`.
    pub fn from_json(text: &str) -> Result<Moons, String> {
        let file: MoonsFile = serde_json::from_str(text).map_err(|e| format!("moons JSON: {e}"))?;
        if file.x.len() != file.y.len() {
            return Err(format!(
                "moons JSON: {} points but {} labels",
                file.x.len(),
                file.y.len()
            ));
        }
        if let Some(bad) = file.y.iter().find(|&&y| y != -1 && y != 1) {
            return Err(format!("moons JSON: label {bad} is not -1 or 1"));
        }
        let y = file.y.iter().map(|&y| y as f64).collect();
        Ok(Moons { x: file.x, y })
    }
}

/// The demo's model, `MLP(2, [16, 16, 1])` with weights from `random.seed(seed)`.
pub fn model(seed: u64) -> MLP {
    let mut rng = PyRandom::seed(seed);
    MLP::new(2, &[16, 16, 1], &mut rng)
}

/// The model's score for one point; its sign is the predicted class.
pub fn score(model: &MLP, point: [f64; 2]) -> Value {
    model.forward(&values(&point)).remove(0)
}

/// The total loss over all points and the fraction classified correctly.
// ANCHOR: moons_loss
pub fn loss(model: &MLP, data: &Moons) -> (Value, f64) {
    let mut losses = Vec::new();
    let mut correct = 0;
    for (&point, &y) in data.x.iter().zip(&data.y) {
        let score = score(model, point);
        // Zero once the point is on the right side with a margin of 1.
        losses.push((1.0 + -y * &score).relu());
        if (y > 0.0) == (score.data() > 0.0) {
            correct += 1;
        }
    }
    let n = losses.len() as f64;
    // `* (1.0 / n)` rather than `/ n`, as the notebook does: the same rounding.
    let data_loss = losses.into_iter().sum::<Value>() * (1.0 / n);
    let alpha = 1e-4;
    let reg_loss = alpha * model.parameters().iter().map(|p| p * p).sum::<Value>();
    (data_loss + reg_loss, correct as f64 / n)
}
// ANCHOR_END: moons_loss

/// The learning rate of step `k`: from 1.0 down to 0.1 over 100 steps.
pub fn learning_rate(k: usize) -> f64 {
    1.0 - 0.9 * k as f64 / 100.0
}

/// One full-batch SGD step: forward, backward, update. Returns the loss and the
/// accuracy measured before the update, as the notebook prints them.
// ANCHOR: moons_step
pub fn step(model: &MLP, data: &Moons, k: usize) -> (f64, f64) {
    let (total_loss, accuracy) = loss(model, data);
    model.zero_grad();
    total_loss.backward();
    let lr = learning_rate(k);
    for p in model.parameters() {
        p.set_data(p.data() - lr * p.grad());
    }
    (total_loss.data(), accuracy)
}
// ANCHOR_END: moons_step

/// What a training run of the moons classifier produced.
pub struct Trained {
    /// The loss before each step's update.
    pub losses: Vec<f64>,
    /// The accuracy measured before the last update.
    pub accuracy: f64,
    /// Milliseconds per step.
    pub ms_per_step: f64,
}

// ANCHOR: moons_train
/// The notebook's loop: `for k in range(100)`, one [`step`] each, printing
/// the loss and accuracy (here: the progress report and `loss.csv`).
pub fn train(
    model: &MLP,
    data: &Moons,
    steps: usize,
    stage: &mut report::Stage,
) -> Result<Trained, String> {
    stage.start_training("moons", steps, report::LogEvery::Step(1));
    let mut losses = Vec::with_capacity(steps);
    let mut accuracy = 0.0;
    for k in 0..steps {
        let (loss, acc) = step(model, data, k);
        stage.observe(k, loss, learning_rate(k))?;
        losses.push(loss);
        accuracy = acc;
    }
    let ms_per_step = stage.finish_training();
    Ok(Trained {
        losses,
        accuracy,
        ms_per_step,
    })
}
// ANCHOR_END: moons_train
