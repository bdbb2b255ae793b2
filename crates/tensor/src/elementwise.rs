//! Element-wise maths: binary ops that broadcast, 0/1 comparison masks, unary
//! functions, and the `+ - * /` operators.
//!
//! Every binary op goes through one function, [`Tensor::zip_map`], so broadcasting
//! and its error message live in one place.

use crate::numeric::{erf, normal_cdf, tanh_f32, tanh_into};
use crate::{broadcast_shapes, Tensor};
use ndarray::{IxDyn, Zip};
use std::ops::{Add, Div, Mul, Neg, Sub};

impl Tensor {
    /// Applies `f` to pairs of elements after broadcasting both operands
    /// (`torch` style). Panics naming both shapes if they do not broadcast.
    pub fn zip_map(&self, other: &Tensor, f: impl Fn(f32, f32) -> f32) -> Tensor {
        if self.shape() == other.shape() {
            let out = Zip::from(&self.data)
                .and(&other.data)
                .map_collect(|&a, &b| f(a, b));
            return Tensor::from_array(out);
        }
        let shape = broadcast_shapes(self.shape(), other.shape()).unwrap_or_else(|e| panic!("{e}"));
        // Broadcast views have stride 0 on stretched axes, so nothing is copied.
        let a = self.data.broadcast(IxDyn(&shape)).expect("checked shape");
        let b = other.data.broadcast(IxDyn(&shape)).expect("checked shape");
        Tensor::from_array(Zip::from(&a).and(&b).map_collect(|&a, &b| f(a, b)))
    }

    /// Applies `f` to every element.
    pub fn map(&self, f: impl Fn(f32) -> f32) -> Tensor {
        Tensor::from_array(self.data.map(|&x| f(x)))
    }

    /// `self + other`, broadcasting.
    pub fn add(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a + b)
    }

    /// `self - other`, broadcasting.
    pub fn sub(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a - b)
    }

    /// `self * other`, broadcasting.
    pub fn mul(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a * b)
    }

    /// `self / other`, broadcasting.
    pub fn div(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a / b)
    }

    /// `torch.pow(self, other)` with a tensor exponent, broadcasting.
    pub fn pow(&self, exponent: &Tensor) -> Tensor {
        self.zip_map(exponent, f32::powf)
    }

    /// `torch.maximum`: the larger element; NaN wins, as in PyTorch.
    pub fn maximum(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| if a.is_nan() || a > b { a } else { b })
    }

    /// `torch.minimum`: the smaller element; NaN wins, as in PyTorch.
    pub fn minimum(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| if a.is_nan() || a < b { a } else { b })
    }

    /// `self == other` as a 1.0/0.0 mask.
    pub fn eq(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a == b))
    }

    /// `self != other` as a 1.0/0.0 mask.
    pub fn ne(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a != b))
    }

    /// `self < other` as a 1.0/0.0 mask.
    pub fn lt(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a < b))
    }

    /// `self <= other` as a 1.0/0.0 mask.
    pub fn le(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a <= b))
    }

    /// `self > other` as a 1.0/0.0 mask.
    pub fn gt(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a > b))
    }

    /// `self >= other` as a 1.0/0.0 mask.
    pub fn ge(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a >= b))
    }

    /// `self + value`.
    pub fn add_scalar(&self, value: f32) -> Tensor {
        self.map(|x| x + value)
    }

    /// `self * value`.
    pub fn mul_scalar(&self, value: f32) -> Tensor {
        self.map(|x| x * value)
    }

    /// `-self`.
    pub fn neg(&self) -> Tensor {
        self.map(|x| -x)
    }

    /// `|self|`.
    pub fn abs(&self) -> Tensor {
        self.map(f32::abs)
    }

    /// `self ** exponent`. Like PyTorch, the common exponents use exact
    /// multiplications or `sqrt` instead of the general `pow`.
    pub fn powf(&self, exponent: f32) -> Tensor {
        match exponent {
            0.5 => self.map(f32::sqrt),
            2.0 => self.map(|x| x * x),
            3.0 => self.map(|x| x * x * x),
            -0.5 => self.map(|x| 1.0 / x.sqrt()),
            -1.0 => self.map(|x| 1.0 / x),
            -2.0 => self.map(|x| 1.0 / (x * x)),
            _ => self.map(|x| x.powf(exponent)),
        }
    }

    /// `e ** self`.
    pub fn exp(&self) -> Tensor {
        self.map(f32::exp)
    }

    /// The natural logarithm.
    pub fn log(&self) -> Tensor {
        self.map(f32::ln)
    }

    /// `log(1 + self)`, accurate near zero.
    pub fn log1p(&self) -> Tensor {
        self.map(f32::ln_1p)
    }

    /// The sine.
    pub fn sin(&self) -> Tensor {
        self.map(f32::sin)
    }

    /// The cosine.
    pub fn cos(&self) -> Tensor {
        self.map(f32::cos)
    }

    /// The hyperbolic tangent.
    pub fn tanh(&self) -> Tensor {
        let src = self.contiguous();
        let values = src.data.as_slice().expect("contiguous");
        let mut out = vec![0.0f32; values.len()];
        tanh_into(values, &mut out);
        Tensor::from_vec(out, self.shape())
    }

    /// The square root.
    pub fn sqrt(&self) -> Tensor {
        self.map(f32::sqrt)
    }

    /// `max(self, 0)`; NaN stays NaN as in PyTorch.
    pub fn relu(&self) -> Tensor {
        self.map(|x| if x > 0.0 || x.is_nan() { x } else { 0.0 })
    }

    /// `1 / (1 + e ** -self)`.
    pub fn sigmoid(&self) -> Tensor {
        self.map(|x| 1.0 / (1.0 + (-x).exp()))
    }

    /// The error function, element-wise.
    pub fn erf(&self) -> Tensor {
        self.map(|x| erf(x as f64) as f32)
    }

    /// `F.gelu(x)`: `x * Φ(x) = x/2 * (1 + erf(x/√2))`, with `Φ` from [`normal_cdf`]
    /// (relative error below 1.2e-7, one `exp`), since GELU runs on every hidden
    /// unit of a transformer and the series of [`erf`] is too slow for that.
    pub fn gelu(&self) -> Tensor {
        self.map(|x| x * normal_cdf(x))
    }

    /// `Φ(x)`, the standard normal CDF, element-wise ([`normal_cdf`]).
    pub fn normal_cdf(&self) -> Tensor {
        self.map(normal_cdf)
    }

    /// `F.gelu(x, approximate='tanh')`, GPT-2's activation:
    /// `x/2 * (1 + tanh(√(2/π) * (x + 0.044715 x³)))`.
    pub fn gelu_tanh(&self) -> Tensor {
        // PyTorch builds √(2/π) as √2 · (2/√π) · 0.5 in f32; the same here.
        let beta = std::f32::consts::SQRT_2 * std::f32::consts::FRAC_2_SQRT_PI * 0.5;
        let kappa = 0.044715f32;
        self.map(|x| {
            let inner = beta * (x + kappa * (x * x * x));
            0.5 * x * (1.0 + tanh_f32(inner))
        })
    }
}

// Operators take the left-hand tensor by reference only. An impl for an owned
// `Tensor` receiver would shadow the inherent `a.mul(&b)`: method lookup tries
// by-value trait methods before by-reference inherent ones, and would move `a`.
macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:tt) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.zip_map(rhs, |a, b| a $op b)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self $op &rhs
            }
        }
        impl $trait<f32> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f32) -> Tensor {
                self.map(|a| a $op rhs)
            }
        }
        impl $trait<&Tensor> for f32 {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                rhs.map(|b| self $op b)
            }
        }
        impl $trait<Tensor> for f32 {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self $op &rhs
            }
        }
    };
}

binary_operator!(Add, add, +);
binary_operator!(Sub, sub, -);
binary_operator!(Mul, mul, *);
binary_operator!(Div, div, /);

impl Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        self.map(|x| -x)
    }
}

fn mask(condition: bool) -> f32 {
    if condition {
        1.0
    } else {
        0.0
    }
}
