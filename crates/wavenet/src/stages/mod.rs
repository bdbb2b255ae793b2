//! The lecture's stages as `main.rs` runs them, each checking its numbers
//! against the notebook and PyTorch.

pub mod hierarchical;
pub mod performance_log;
pub mod shapes;

use batchnorm::split_loss;
use data::makemore::Splits;
use serde_json::Value;
use wavenet::WaveNet;

pub const SEED: u64 = 42;
pub const STEPS: usize = 200_000;
/// What cell[15] prints after the 200k-step run.
pub const LECTURE_SAMPLES: &str =
    "arlij. chetta. heago. rocklei. hendrix. jamylie. broxin. denish. anslibt. marianah. \
astavia. annayve. aniah. jayce. nodiel. remita. niyelle. jaylene. aiyan. aubreana.";
pub const FIXTURE: &str = include_str!("../../tests/fixtures/lecture6.json");
/// PyTorch's 200k-step runs of every row of the performance log (`make_fixtures.py --full`).
pub const FULL_FIXTURE: &str = include_str!("../../tests/fixtures/lecture6_full.json");
/// The minibatch losses cell[10] prints every 10,000 steps (`{loss.item():.4f}`).
pub const NOTEBOOK_PRINTS: [f64; 20] = [
    3.3167, 2.0576, 2.0723, 2.5134, 2.1476, 1.7836, 2.2592, 1.9331, 1.6875, 2.0395, 1.7736, 1.9570,
    1.7465, 1.8126, 1.7406, 1.7466, 1.8806, 1.6266, 1.6476, 1.8555,
];
/// How far our losses may be from PyTorch's for the same seeded run: the two
/// make the same draws and stay within about 1e-5 of each other for 200k steps.
pub const TORCH_TOL: f64 = 1e-4;
/// The exception is the performance log's row with the batch-norm bug. Its
/// statistics run over the 32 examples of each position, and where a whole batch
/// starts with the same context (the leading `.`s) the batch variance is nearly
/// zero, so `1/sqrt(var + eps)` magnifies the last bit of every sum. The two runs
/// part within the first 1,000 steps (mean loss 2.50200 against 2.50177) and end
/// at train 1.93961 / val 2.02611 against PyTorch's 1.94070 / 2.02945, measured at
/// seed 42, the same on 1 and 2 threads. The gap, 0.0034, rounded up; the fixed
/// row ends 0.009 lower.
pub const BUG_ROW_TORCH_TOL: f64 = 0.005;
/// The notebook prints 4 decimals. Two of its twenty values sit on a rounding
/// boundary: PyTorch 2.15 running the same code here prints 1.9569 and 1.8805
/// where the notebook shows 1.9570 and 1.8806. So: within one unit of the last digit.
pub const NOTEBOOK_TOL: f64 = 1e-4;

/// The steps the lecture's model and every row of the performance log train:
/// the lecture's 200k, or what `--quick` and `--steps` say.
pub fn steps(run: &report::Run) -> usize {
    run.steps_override()
        .unwrap_or(if run.quick() { 2000 } else { STEPS })
}

/// The row of a fixture's `rows` with this name (the performance log's rows).
pub fn fixture_row<'a>(fixture: &'a Value, file: &str, name: &str) -> Result<&'a Value, String> {
    fixture["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name))
        .ok_or_else(|| format!("{file} has no row named {name:?}"))
}

/// PyTorch's prints for the steps this run reached.
pub fn torch_prints(row: &Value, n: usize) -> Vec<f64> {
    row["printed"]
        .as_array()
        .map(|xs| {
            xs.iter()
                .take(n)
                .map(|x| x.as_f64().unwrap_or(f64::NAN))
                .collect()
        })
        .unwrap_or_default()
}

/// The loss on the whole train and val splits, in eval mode.
pub fn evaluate(net: &mut WaveNet, splits: &Splits) -> (f64, f64) {
    net.set_training(false);
    let train = split_loss(&splits.train, |graph, xb| net.forward(graph, xb));
    let val = split_loss(&splits.dev, |graph, xb| net.forward(graph, xb));
    (train, val)
}
