//! Tensors made from a shape or a range: `torch.zeros`, `ones`, `full`, `arange`,
//! `linspace` and `eye`.
//!
//! `arange` and `linspace` follow PyTorch's formulas rather than the obvious ones,
//! because the lectures plot and index with them and a last-bit difference shows.

use crate::Tensor;
use ndarray::{ArrayD, IxDyn};

impl Tensor {
    /// A tensor of zeros (`torch.zeros(shape)`).
    pub fn zeros(shape: &[usize]) -> Tensor {
        Tensor::full(shape, 0.0)
    }

    /// A tensor of ones (`torch.ones(shape)`).
    pub fn ones(shape: &[usize]) -> Tensor {
        Tensor::full(shape, 1.0)
    }

    /// A tensor with every element equal to `value` (`torch.full(shape, value)`).
    pub fn full(shape: &[usize], value: f32) -> Tensor {
        Tensor::from_array(ArrayD::from_elem(IxDyn(shape), value))
    }

    /// `torch.arange(start, end, step)`: `ceil((end - start) / step)` values
    /// `start + i * step`, computed in f64 as PyTorch does for float output.
    ///
    /// PyTorch receives Python floats, i.e. the f64 nearest the decimal the user
    /// typed. The f32 `0.7` is not that f64, and `-3 + 3 * 0.7` then rounds to
    /// `-0.90000004` instead of `-0.9`; so each argument is widened through its
    /// shortest decimal form, which is the literal the caller wrote.
    pub fn arange(start: f32, end: f32, step: f32) -> Tensor {
        assert!(
            step != 0.0 && step.is_finite(),
            "arange: step must be finite and nonzero, got {step}"
        );
        let widen = |v: f32| -> f64 { v.to_string().parse().expect("f32 prints as a number") };
        let (start, end, step) = (widen(start), widen(end), widen(step));
        let count = ((end - start) / step).ceil().max(0.0) as usize;
        let values = (0..count)
            .map(|i| (start + i as f64 * step) as f32)
            .collect::<Vec<_>>();
        Tensor::from_vec(values, &[count])
    }

    /// `torch.linspace(start, end, steps)`. The first half counts up from `start`
    /// and the second half counts down from `end`, so both ends are exact.
    pub fn linspace(start: f32, end: f32, steps: usize) -> Tensor {
        if steps == 1 {
            return Tensor::from_vec(vec![start], &[1]);
        }
        let step = (end - start) / (steps - 1) as f32;
        let halfway = steps / 2;
        let values = (0..steps)
            .map(|i| {
                if i < halfway {
                    start + step * i as f32
                } else {
                    end - step * (steps - i - 1) as f32
                }
            })
            .collect::<Vec<_>>();
        Tensor::from_vec(values, &[steps])
    }

    /// The `n × n` identity matrix (`torch.eye(n)`).
    pub fn eye(n: usize) -> Tensor {
        let mut values = vec![0.0; n * n];
        for i in 0..n {
            values[i * n + i] = 1.0;
        }
        Tensor::from_vec(values, &[n, n])
    }
}
