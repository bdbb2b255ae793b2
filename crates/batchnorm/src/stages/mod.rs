//! The lecture's stages as `main.rs` runs them: each trains with the library
//! and checks its numbers against the lecture and PyTorch.

pub mod gains;
pub mod loss_log;
pub mod mlp;
pub mod torchified;
pub mod zero_init;

use report::Target;
use serde_json::Value;

/// The lecture's generator seed, `torch.Generator().manual_seed(2147483647)`.
pub const SEED: u64 = 2147483647;
/// PyTorch's numbers for the same draws (`tests/fixtures/make_fixtures.py`).
pub const FIXTURE: &str = include_str!("../../tests/fixtures/lecture4.json");
/// PyTorch's 200k-step runs of the MLP and the loss log (`make_fixtures.py --full`).
pub const FULL_FIXTURE: &str = include_str!("../../tests/fixtures/lecture4_full.json");
/// How far our final losses may be from PyTorch's for the same seeded 200k-step
/// run: the two runs make the same draws and track each other to about 1e-6.
pub const TORCH_TOL: f64 = 1e-4;

/// A number of a fixture.
pub fn num(v: &Value) -> f64 {
    v.as_f64().expect("a number in lecture4.json")
}

/// A target that gates only in the run it describes (full length, lecture seed).
pub fn gate_full(gates: bool, t: Target) -> Target {
    if gates {
        t
    } else {
        t.ungated()
    }
}

/// [`Target::all_within`] that only gates with the lecture's seed.
pub fn exact_list(gates: bool, name: &str, expected: &[f64], tol: f64, got: &[f64]) -> Target {
    gate_full(gates, Target::all_within(name, expected, tol, got))
}

/// An exact target that only gates with the lecture's seed.
pub fn exact(gates: bool, name: &str, expected: f64, tol: f64, got: f64) -> Target {
    gate_full(gates, Target::exact(name, expected, tol, got))
}
