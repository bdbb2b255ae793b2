//! `torch.nn`-style modules, one small file per layer, as the lectures write them.
//!
//! Lecture 4 ("PyTorch-ifying the code") writes [`Linear`], [`BatchNorm1d`] and
//! [`Tanh`]; lecture 6 copies them ("near copy paste of the layers we have
//! developed in Part 3") and adds [`Embedding`], [`FlattenConsecutive`],
//! [`Sequential`] and batch norm over `(0, 1)` for 3-D input. They all live
//! here so both lectures run the same code and one set of PyTorch fixtures
//! (`tests/modules.rs`) checks it.
//!
//! The layer convention is the one every `torch.nn`-style lecture shares
//! (`autograd::{Init, ForwardPass}`): `Layer::new(init, name, …)` registers
//! the parameters and draws them from the lecture's generator, and
//! `layer.forward(pass, x)` runs it on the step's graph. A module owns the ids
//! of its parameters (trained by backprop) and its buffers (plain tensors,
//! updated by a running average, never by the optimizer); every step builds a
//! fresh graph, so modules hold no graph state. Unlike lecture 7's layers,
//! these take `&mut self`: batch norm updates its buffers in the forward pass,
//! as `torch.nn.BatchNorm1d` does.

mod batch_norm;
mod embedding;
mod flatten_consecutive;
mod linear;
mod sequential;
mod tanh;

pub use batch_norm::BatchNorm1d;
pub use embedding::Embedding;
pub use flatten_consecutive::FlattenConsecutive;
pub use linear::Linear;
pub use sequential::Sequential;
pub use tanh::Tanh;

use autograd::{ForwardPass, ParamId, Var};

/// What every layer provides: the lecture's `__call__`, `parameters()` and `training`.
pub trait Module: AsAny {
    /// The layer's forward pass (`layer(x)`); batch norm also updates its running statistics in training mode.
    fn forward<'g>(&mut self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g>;

    /// The layer's parameters, in the lecture's order (`layer.parameters()`).
    fn parameters(&self) -> Vec<ParamId> {
        Vec::new()
    }

    /// Switches between training (batch statistics) and evaluation (running statistics).
    fn set_training(&mut self, _training: bool) {}

    /// The class name the lecture prints, e.g. `Tanh`.
    fn name(&self) -> &'static str;
}

/// The concrete layer behind a `dyn Module`, e.g. to fold a `BatchNorm1d` into the `Linear`
/// before it: every module has it, so no layer writes it out.
pub trait AsAny {
    /// `self` as `Any`, for `downcast_ref`.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: Module + 'static> AsAny for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    //! `tests/fixtures/modules.json`: PyTorch's forward and backward of each
    //! module on small inputs (made by `tests/fixtures/make_fixtures.py`).
    use serde_json::Value;
    use tensor::Tensor;

    pub fn load(name: &str) -> Value {
        let all: Value = serde_json::from_str(include_str!("../../tests/fixtures/modules.json"))
            .expect("modules.json parses");
        all[name].clone()
    }

    pub fn floats(v: &Value) -> Vec<f32> {
        v.as_array()
            .expect("an array")
            .iter()
            .map(|x| x.as_f64().expect("a number") as f32)
            .collect()
    }

    pub fn tensor(v: &Value, shape: &[usize]) -> Tensor {
        Tensor::from_vec(floats(v), shape)
    }

    /// Every element within `tol` (absolute) of PyTorch's.
    pub fn assert_close(what: &str, got: &Tensor, want: &Value, tol: f32) {
        let want = floats(want);
        let got = got.to_vec();
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= tol, "{what}[{i}]: got {g}, PyTorch {w}");
        }
    }
}
