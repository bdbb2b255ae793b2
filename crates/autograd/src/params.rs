//! Parameters: the tensors that persist across training steps.

use crate::graph::Grads;
use tensor::Tensor;

/// A handle to a parameter in a [`Params`] store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId(pub usize);

/// One parameter: a name, its value, and its accumulated gradient.
#[derive(Clone, Debug)]
pub struct Param {
    /// A name for reports and checkpoints, e.g. "W1".
    pub name: String,
    /// The current value.
    pub value: Tensor,
    /// The gradient accumulated since the last [`Params::zero_grad`] (`p.grad`).
    pub grad: Option<Tensor>,
}

/// The parameter registry of a model (`model.parameters()`).
#[derive(Clone, Debug, Default)]
pub struct Params {
    entries: Vec<Param>,
}

impl Params {
    /// An empty registry.
    pub fn new() -> Params {
        Params::default()
    }

    /// Registers a parameter and returns its id.
    pub fn add(&mut self, name: &str, value: Tensor) -> ParamId {
        self.entries.push(Param {
            name: name.to_string(),
            value,
            grad: None,
        });
        ParamId(self.entries.len() - 1)
    }

    /// The value of a parameter.
    pub fn value(&self, id: ParamId) -> &Tensor {
        &self.entries[id.0].value
    }

    /// The parameter itself.
    pub fn get(&self, id: ParamId) -> &Param {
        &self.entries[id.0]
    }

    /// Mutable access, e.g. to rescale an initialisation.
    pub fn get_mut(&mut self, id: ParamId) -> &mut Param {
        &mut self.entries[id.0]
    }

    /// All parameters in registration order.
    pub fn iter(&self) -> impl Iterator<Item = (ParamId, &Param)> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, p)| (ParamId(i), p))
    }

    /// The first parameter, in registration order, whose value holds a NaN
    /// or an infinity: a step can leave the weights so before any loss shows it.
    pub fn first_not_finite(&self) -> Option<&Param> {
        self.entries
            .iter()
            .find(|p| p.value.non_finite_kinds() != [false; 3])
    }

    /// All parameters, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ParamId, &mut Param)> {
        self.entries
            .iter_mut()
            .enumerate()
            .map(|(i, p)| (ParamId(i), p))
    }

    /// The number of parameters (tensors).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The total number of scalars: the lectures' "number of parameters".
    pub fn count(&self) -> usize {
        self.entries.iter().map(|p| p.value.len()).sum()
    }

    /// Forgets all gradients (`p.grad = None`).
    pub fn zero_grad(&mut self) {
        for p in &mut self.entries {
            p.grad = None;
        }
    }

    /// Adds a backward pass's parameter gradients into `p.grad`.
    pub fn accumulate(&mut self, grads: &Grads) {
        for (id, g) in grads.params() {
            let param = &mut self.entries[id.0];
            // Row-major, whatever layout backward made (a weight's gradient
            // can come out transposed), for the passes of clipping and the
            // optimizer.
            param.grad = Some(match param.grad.take() {
                Some(sum) => &sum + &g.contiguous(),
                None => g.contiguous(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_parameter_not_finite_is_found_in_order() {
        let mut params = Params::new();
        params.add("a", Tensor::from_vec(vec![1.0, 2.0], &[2]));
        assert!(params.first_not_finite().is_none());
        params.add("b", Tensor::from_vec(vec![0.0, f32::NEG_INFINITY], &[2]));
        params.add("c", Tensor::from_vec(vec![f32::NAN], &[1]));
        assert_eq!(
            params.first_not_finite().map(|p| p.name.as_str()),
            Some("b")
        );
    }
}
