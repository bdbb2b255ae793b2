//! Element-wise operations: arithmetic with broadcasting, and the activations.

use crate::graph::Var;
use std::ops::{Add, Div, Mul, Neg, Sub};
use tensor::Tensor;

/// A parent's gradient, or an empty stand-in where the parent is a constant (a rotary table, a
/// mask): the backward pass drops a constant's gradient unread, so it is not worth a pass over
/// the data.
fn unless_constant(wanted: bool, grad: impl FnOnce() -> Tensor) -> Tensor {
    if wanted {
        grad()
    } else {
        Tensor::zeros(&[0])
    }
}

// The named methods hold each op's forward and backward; the operators below call them.
#[allow(clippy::should_implement_trait)]
impl<'g> Var<'g> {
    // ANCHOR: add
    /// `self + other`, broadcasting.
    pub fn add(self, other: Var<'g>) -> Var<'g> {
        let (a, b) = (self.value(), other.value());
        let (a_shape, b_shape) = (a.shape().to_vec(), b.shape().to_vec());
        self.graph.op(a.add(&b), &[self, other], move |grad| {
            vec![grad.sum_to_shape(&a_shape), grad.sum_to_shape(&b_shape)]
        })
    }
    // ANCHOR_END: add

    /// `self - other`, broadcasting.
    pub fn sub(self, other: Var<'g>) -> Var<'g> {
        let (a, b) = (self.value(), other.value());
        let (a_shape, b_shape) = (a.shape().to_vec(), b.shape().to_vec());
        self.graph.op(a.sub(&b), &[self, other], move |grad| {
            vec![
                grad.sum_to_shape(&a_shape),
                grad.neg().sum_to_shape(&b_shape),
            ]
        })
    }

    // ANCHOR: mul
    /// `self * other`, broadcasting.
    pub fn mul(self, other: Var<'g>) -> Var<'g> {
        let (a, b) = (self.value(), other.value());
        let wanted = [self.requires_grad(), other.requires_grad()];
        self.graph.op(a.mul(&b), &[self, other], move |grad| {
            vec![
                unless_constant(wanted[0], || grad.mul(&b).sum_to_shape(a.shape())),
                unless_constant(wanted[1], || grad.mul(&a).sum_to_shape(b.shape())),
            ]
        })
    }
    // ANCHOR_END: mul

    /// `self / other`, broadcasting.
    pub fn div(self, other: Var<'g>) -> Var<'g> {
        let (a, b) = (self.value(), other.value());
        self.graph.op(a.div(&b), &[self, other], move |grad| {
            let grad_a = grad.div(&b);
            // d(a/b)/db = -a/b² = -(a/b)/b, the negation in the same pass as
            // the second division.
            let grad_b = grad_a.mul(&a).zip_map(&b, |x, b| -(x / b));
            vec![
                grad_a.sum_to_shape(a.shape()),
                grad_b.sum_to_shape(b.shape()),
            ]
        })
    }

    /// `self ** exponent` with a tensor exponent, broadcasting (base > 0 for the exponent's gradient).
    pub fn pow(self, exponent: Var<'g>) -> Var<'g> {
        let (a, b) = (self.value(), exponent.value());
        let out = a.pow(&b);
        let out_saved = out.clone();
        self.graph.op(out, &[self, exponent], move |grad| {
            // d(a^b)/da = b·a^(b-1);  d(a^b)/db = a^b·ln a
            let grad_a = grad.mul(&b).mul(&a.pow(&b.add_scalar(-1.0)));
            let grad_b = grad.mul(&out_saved).mul(&a.log());
            vec![
                grad_a.sum_to_shape(a.shape()),
                grad_b.sum_to_shape(b.shape()),
            ]
        })
    }

    /// The element-wise larger of the two; ties share the gradient equally, as in PyTorch.
    pub fn maximum(self, other: Var<'g>) -> Var<'g> {
        let (a, b) = (self.value(), other.value());
        self.graph.op(a.maximum(&b), &[self, other], move |grad| {
            let half_ties = a.eq(&b).mul_scalar(0.5);
            let to_a = a.gt(&b).add(&half_ties);
            let to_b = b.gt(&a).add(&half_ties);
            vec![
                grad.mul(&to_a).sum_to_shape(a.shape()),
                grad.mul(&to_b).sum_to_shape(b.shape()),
            ]
        })
    }

    /// `self * c` for a constant.
    pub fn mul_scalar(self, c: f32) -> Var<'g> {
        let out = self.value().mul_scalar(c);
        self.graph
            .op(out, &[self], move |grad| vec![grad.mul_scalar(c)])
    }

    /// `self + c` for a constant.
    pub fn add_scalar(self, c: f32) -> Var<'g> {
        let out = self.value().add_scalar(c);
        self.graph.op(out, &[self], move |grad| vec![grad.clone()])
    }

    /// `self / c` for a constant (a true division, rounded as PyTorch rounds it).
    pub fn div_scalar(self, c: f32) -> Var<'g> {
        let out = self.value().map(|x| x / c);
        self.graph
            .op(out, &[self], move |grad| vec![grad.map(|g| g / c)])
    }

    /// `-self`.
    pub fn neg(self) -> Var<'g> {
        self.mul_scalar(-1.0)
    }

    // ANCHOR: powf
    /// `self ** k` for a constant exponent.
    pub fn powf(self, k: f32) -> Var<'g> {
        let a = self.value();
        self.graph.op(a.powf(k), &[self], move |grad| {
            vec![grad.mul(&a.powf(k - 1.0)).mul_scalar(k)]
        })
    }
    // ANCHOR_END: powf

    // ANCHOR: exp
    /// `e ** self`.
    pub fn exp(self) -> Var<'g> {
        let out = self.value().exp();
        let out_saved = out.clone();
        self.graph
            .op(out, &[self], move |grad| vec![grad.mul(&out_saved)])
    }
    // ANCHOR_END: exp

    // ANCHOR: log
    /// The natural logarithm.
    pub fn log(self) -> Var<'g> {
        let a = self.value();
        self.graph
            .op(a.log(), &[self], move |grad| vec![grad.div(&a)])
    }
    // ANCHOR_END: log

    /// `ln(1 + self)`.
    pub fn log1p(self) -> Var<'g> {
        let a = self.value();
        self.graph.op(a.log1p(), &[self], move |grad| {
            vec![grad.div(&a.add_scalar(1.0))]
        })
    }

    /// Sine.
    pub fn sin(self) -> Var<'g> {
        let a = self.value();
        self.graph
            .op(a.sin(), &[self], move |grad| vec![grad.mul(&a.cos())])
    }

    /// Cosine.
    pub fn cos(self) -> Var<'g> {
        let a = self.value();
        self.graph
            .op(a.cos(), &[self], move |grad| vec![grad.mul(&a.sin()).neg()])
    }

    /// Absolute value (gradient 0 at 0, as PyTorch's sign).
    pub fn abs(self) -> Var<'g> {
        let a = self.value();
        self.graph.op(a.abs(), &[self], move |grad| {
            vec![grad.mul(&a.map(|x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }))]
        })
    }

    /// Square root.
    pub fn sqrt(self) -> Var<'g> {
        let out = self.value().sqrt();
        let out_saved = out.clone();
        self.graph.op(out, &[self], move |grad| {
            vec![grad.div(&out_saved.mul_scalar(2.0))]
        })
    }

    // ANCHOR: tanh
    /// The hyperbolic tangent; its local gradient is `1 - tanh²`.
    pub fn tanh(self) -> Var<'g> {
        let out = self.value().tanh();
        let t = out.clone();
        self.graph.op(out, &[self], move |grad| {
            vec![grad.mul(&t.mul(&t).neg().add_scalar(1.0))]
        })
    }
    // ANCHOR_END: tanh

    // ANCHOR: relu
    /// `max(0, self)`; the gradient passes where the input was positive.
    pub fn relu(self) -> Var<'g> {
        let out = self.value().relu();
        // The output, not the input, is kept, as PyTorch's `threshold_backward`
        // does: 1[relu(x) > 0] = 1[x > 0], and the input can then be freed.
        let kept = out.clone();
        self.graph.op(out, &[self], move |grad| {
            // grad · 1[y > 0], in one pass over both.
            vec![grad.zip_map(&kept, |g, y| g * if y > 0.0 { 1.0 } else { 0.0 })]
        })
    }
    // ANCHOR_END: relu

    /// The logistic sigmoid.
    pub fn sigmoid(self) -> Var<'g> {
        let out = self.value().sigmoid();
        let s = out.clone();
        self.graph.op(out, &[self], move |grad| {
            vec![grad.mul(&s.mul(&s.neg().add_scalar(1.0)))]
        })
    }

    /// GELU, exact form `x·Φ(x)` (PyTorch's default, used by nanoGPT).
    pub fn gelu(self) -> Var<'g> {
        let a = self.value();
        // Φ(x) is kept for backward, which then needs only φ(x), one exp.
        let (out, cdf) = a.gelu_and_cdf(); // x·Φ(x) and Φ(x), one pass
        self.graph.op(out, &[self], move |grad| {
            // d/dx x·Φ(x) = Φ(x) + x·φ(x), times grad in the same pass (tensor::gelu_grad).
            vec![a.gelu_backward(&cdf, grad)]
        })
    }

    /// GELU, tanh approximation (GPT-2, build-nanogpt, llm.c).
    pub fn gelu_tanh(self) -> Var<'g> {
        let a = self.value();
        self.graph.op(a.gelu_tanh(), &[self], move |grad| {
            // d/dx of x/2·(1 + tanh u), vectorised in f64 (tensor::gelu_tanh_grad).
            vec![grad.mul(&a.gelu_tanh_grad())]
        })
    }
}

// Operators, so that model code reads like the lecture: `(x.matmul(w1) + b1).tanh()`.
macro_rules! binary_operator {
    ($trait:ident, $method:ident, $scalar:expr, $scalar_left:expr) => {
        impl<'g> $trait<Var<'g>> for Var<'g> {
            type Output = Var<'g>;
            fn $method(self, rhs: Var<'g>) -> Var<'g> {
                Var::$method(self, rhs)
            }
        }
        impl<'g> $trait<f32> for Var<'g> {
            type Output = Var<'g>;
            fn $method(self, rhs: f32) -> Var<'g> {
                #[allow(clippy::redundant_closure_call)]
                ($scalar)(self, rhs)
            }
        }
        impl<'g> $trait<Var<'g>> for f32 {
            type Output = Var<'g>;
            fn $method(self, rhs: Var<'g>) -> Var<'g> {
                #[allow(clippy::redundant_closure_call)]
                ($scalar_left)(self, rhs)
            }
        }
    };
}

binary_operator!(
    Add,
    add,
    |v: Var<'g>, c| v.add_scalar(c),
    |c, v: Var<'g>| v.add_scalar(c)
);
binary_operator!(Sub, sub, |v: Var<'g>, c: f32| v.add_scalar(-c), |c,
                                                                   v: Var<
    'g,
>| v
    .neg()
    .add_scalar(c));
binary_operator!(
    Mul,
    mul,
    |v: Var<'g>, c| v.mul_scalar(c),
    |c, v: Var<'g>| v.mul_scalar(c)
);
binary_operator!(Div, div, |v: Var<'g>, c: f32| v.div_scalar(c), |c,
                                                                  v: Var<
    'g,
>| v
    .powf(-1.0)
    .mul_scalar(c));

impl<'g> Neg for Var<'g> {
    type Output = Var<'g>;
    fn neg(self) -> Var<'g> {
        Var::neg(self)
    }
}
