//! The lecture's worked examples, in the order the lecture meets them.
//!
//! Each function builds the example's expression, runs backward where the lecture
//! does, and hands back the values a learner would print. The lecture binary and
//! the tests check them against the numbers the lecture, micrograd's README and
//! micrograd's tests print.

use crate::{Neuron, Value};

/// `f(x) = 3x² − 4x + 5`, the lecture's first function; `f(3) = 20`.
pub fn simple_function(x: f64) -> f64 {
    3.0 * x * x - 4.0 * x + 5.0
}

/// The slope `(f(x + h) − f(x)) / h` that the lecture computes before any calculus.
pub fn forward_difference(f: impl Fn(f64) -> f64, x: f64, h: f64) -> f64 {
    (f(x + h) - f(x)) / h
}

/// How `d = a·b + c` moves when `c` is nudged by `h`: `(d2 − d1) / h`, the
/// lecture's first look at a derivative of several inputs.
pub fn nudge_c(a: f64, b: f64, c: f64, h: f64) -> f64 {
    let d1 = a * b + c;
    let d2 = a * b + (c + h);
    (d2 - d1) / h
}

/// The symmetric difference `(f(x + h) − f(x − h)) / 2h`; its error shrinks like h².
pub fn symmetric_difference(f: impl Fn(f64) -> f64, x: f64, h: f64) -> f64 {
    (f(x + h) - f(x - h)) / (2.0 * h)
}

/// The manual backpropagation example: `L = (a*b + c) * f`.
pub struct ManualGraph {
    /// 2.0
    pub a: Value,
    /// -3.0
    pub b: Value,
    /// 10.0
    pub c: Value,
    /// `a * b` = -6
    pub e: Value,
    /// `e + c` = 4
    pub d: Value,
    /// -2.0
    pub f: Value,
    /// `d * f` = -8
    pub l: Value,
}

/// Builds the lecture's `a, b, c, e, d, f, L` graph (before backward).
pub fn manual_graph(a: f64, b: f64, c: f64, f: f64) -> ManualGraph {
    let a = Value::new(a).with_label("a");
    let b = Value::new(b).with_label("b");
    let c = Value::new(c).with_label("c");
    let e = (&a * &b).with_label("e");
    let d = (&e + &c).with_label("d");
    let f = Value::new(f).with_label("f");
    let l = (&d * &f).with_label("L");
    ManualGraph {
        a,
        b,
        c,
        e,
        d,
        f,
        l,
    }
}

/// The lecture's "one step of optimization" by hand: nudge each leaf by
/// `0.01 * grad`, then run the forward pass again. L goes from -8 to -7.286496.
pub fn manual_step() -> f64 {
    let g = manual_graph(2.0, -3.0, 10.0, -2.0);
    g.l.backward();
    let step = |v: &Value| v.data() + 0.01 * v.grad();
    manual_graph(step(&g.a), step(&g.b), step(&g.c), step(&g.f))
        .l
        .data()
}

/// micrograd's README expression, after `g.backward()`: returns `(g, a, b)`.
///
/// The README prints g = 24.7041, a.grad = 138.8338, b.grad = 645.5773.
pub fn readme_expression() -> (Value, Value, Value) {
    let a = Value::new(-4.0);
    let b = Value::new(2.0);
    let mut c = &a + &b;
    let mut d = &a * &b + b.powf(3.0);
    c += &c + 1.0;
    c += 1.0 + &c + (-&a);
    d += &d * 2.0 + (&b + &a).relu();
    d += 3.0 * &d + (&b - &a).relu();
    let e = &c - &d;
    let f = e.powf(2.0);
    let mut g = &f / 2.0;
    g += 10.0 / &f;
    g.backward();
    (g, a, b)
}

/// micrograd's `test_sanity_check` expression, after `y.backward()`: returns `(y, x)`.
///
/// `z` is used five times, which catches a backward pass that does not
/// accumulate. PyTorch in float64 gives y = -20 and dy/dx = 46 exactly.
pub fn sanity_check() -> (Value, Value) {
    let x = Value::new(-4.0);
    let z = 2.0 * &x + 2.0 + &x;
    let q = z.relu() + &z * &x;
    let h = (&z * &z).relu();
    let y = &h + &q + &q * &x;
    y.backward();
    (y, x)
}

/// The lecture's two-input neuron, after `o.backward()`.
pub struct NeuronExample {
    /// The neuron: weights [-3, 1], bias 6.8813735870195432, tanh.
    pub neuron: Neuron,
    /// Inputs [2, 0].
    pub x: [Value; 2],
    /// `tanh(n)` = 0.7071067811865476.
    pub o: Value,
}

/// Builds the lecture's neuron `o = tanh(x1*w1 + x2*w2 + b)` and runs backward.
///
/// The bias is chosen so that `n = 0.8813735870195432` and `o = 1/√2`, which
/// makes the local gradient `1 − o² = 0.5`.
pub fn neuron_example() -> NeuronExample {
    let x1 = Value::new(2.0).with_label("x1");
    let x2 = Value::new(0.0).with_label("x2");
    let w1 = Value::new(-3.0).with_label("w1");
    let w2 = Value::new(1.0).with_label("w2");
    // The lecture's literal, digit for digit (one more than an f64 holds).
    #[allow(clippy::excessive_precision)]
    let b = Value::new(6.881_373_587_019_543_2).with_label("b");
    // Written out as in the lecture, so that the drawing shows every step.
    let x1w1 = (&x1 * &w1).with_label("x1*w1");
    let x2w2 = (&x2 * &w2).with_label("x2*w2");
    let x1w1x2w2 = (&x1w1 + &x2w2).with_label("x1*w1 + x2*w2");
    let n = (&x1w1x2w2 + &b).with_label("n");
    let o = n.tanh().with_label("o");
    o.backward();
    let neuron = Neuron {
        w: vec![w1, w2],
        b,
        activation: crate::Activation::Tanh,
    };
    NeuronExample {
        neuron,
        x: [x1, x2],
        o,
    }
}

/// The exercise notebook's `f(a, b, c) = −a³ + sin(3b) − 1/c + b^2.5 − a^0.5`.
pub fn exercise_f(a: &Value, b: &Value, c: &Value) -> Value {
    -a.powf(3.0) + (3.0 * b).sin() - 1.0 / c + b.powf(2.5) - a.powf(0.5)
}

/// The same `f` on plain numbers, for finite differences.
pub fn exercise_f64(a: f64, b: f64, c: f64) -> f64 {
    -a.powi(3) + (3.0 * b).sin() - 1.0 / c + b.powf(2.5) - a.powf(0.5)
}

/// The exercise's gradient worked out by hand:
/// `[−3a² − 0.5/√a, 3cos(3b) + 2.5·b^1.5, 1/c²]`.
pub fn exercise_gradient_by_hand(a: f64, b: f64, c: f64) -> [f64; 3] {
    [
        -3.0 * a * a - 0.5 * a.powf(-0.5),
        3.0 * (3.0 * b).cos() + 2.5 * b.powf(1.5),
        1.0 / (c * c),
    ]
}

/// `f` and its gradient from [`Value::backward`] at `(a, b, c)`.
pub fn exercise_gradient(a: f64, b: f64, c: f64) -> (f64, [f64; 3]) {
    let (a, b, c) = (Value::new(a), Value::new(b), Value::new(c));
    let f = exercise_f(&a, &b, &c);
    f.backward();
    (f.data(), [a.grad(), b.grad(), c.grad()])
}

/// The exercise's gradient by symmetric differences, one input at a time.
pub fn exercise_gradient_numerical(a: f64, b: f64, c: f64, h: f64) -> [f64; 3] {
    [
        symmetric_difference(|a| exercise_f64(a, b, c), a, h),
        symmetric_difference(|b| exercise_f64(a, b, c), b, h),
        symmetric_difference(|c| exercise_f64(a, b, c), c, h),
    ]
}

/// `softmax(logits)` as the exercise writes it: exp, sum, divide.
// ANCHOR: softmax
pub fn softmax(logits: &[Value]) -> Vec<Value> {
    let counts: Vec<Value> = logits.iter().map(|l| l.exp()).collect();
    let denominator: Value = counts.iter().sum();
    counts.iter().map(|c| c / &denominator).collect()
}
// ANCHOR_END: softmax

/// The exercise's negative log likelihood `−log softmax(logits)[label]`, after
/// backward: returns the loss and the logits (with their gradients).
///
/// Panics if `label` is not an index into `logits`.
pub fn softmax_nll(logits: &[f64], label: usize) -> (Value, Vec<Value>) {
    let logits: Vec<Value> = logits.iter().map(|&l| Value::new(l)).collect();
    let probs = softmax(&logits);
    let loss = -probs[label].log();
    loss.backward();
    (loss, logits)
}
