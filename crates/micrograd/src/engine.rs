//! `Value`: one scalar, its gradient, and the op that made it (micrograd's `engine.py`).
//!
//! Every op builds a new node that remembers its inputs and a small closure, its
//! backward rule. The rule sits right below the forward computation, as in
//! `engine.py`: `+` passes the output's gradient through to both inputs, `*` scales
//! it by the other input, and so on. [`Value::backward`] orders the graph so that
//! every node comes after all of its inputs, then runs the rules from the output
//! back to the leaves.
//!
//! Rules *add* to an input's gradient (`+=` in Python). A node used twice, such as
//! `a` in `a + a * 3`, receives one contribution per use; assigning instead of adding
//! is the classic micrograd bug.
//!
//! Subtraction, division and negation are built from the primitives, as micrograd
//! does: `a - b` is `a + (-b)`, `-a` is `a * -1` and `a / b` is `a * b^-1`. So only
//! `+`, `*`, `powf`, `relu`, `tanh`, `exp`, `log` and `sin` carry a backward rule.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};
use std::rc::Rc;

/// A scalar in an expression graph, with the gradient of the graph's output with
/// respect to it.
///
/// Cloning a `Value` is cheap and shares the node: `let b = a.clone()` is the same
/// node as `a`, just as `b = a` is in Python.
///
/// ```
/// use micrograd::Value;
///
/// let a = Value::new(-4.0);
/// let b = Value::new(2.0);
/// let c = &a * &b + b.powf(3.0); // -8 + 8
/// c.backward();
/// assert_eq!(c.data(), 0.0);
/// assert_eq!(a.grad(), 2.0); // dc/da = b
/// assert_eq!(b.grad(), -4.0 + 3.0 * 4.0); // dc/db = a + 3b²
/// ```
#[derive(Clone)]
pub struct Value(Rc<Node>);

/// The rule that sends a node's gradient back to its inputs (`out._backward`).
type Backward = Box<dyn Fn(&Node)>;

/// One node of the graph. Data and gradient are `Cell`s, so backward rules can
/// update them through shared references; nothing is ever borrowed across a call.
pub(crate) struct Node {
    data: Cell<f64>,
    grad: Cell<f64>,
    /// The inputs of the op that made this node (`_prev`), in operand order.
    pub(crate) prev: Vec<Value>,
    /// The op's name for drawings (`_op`): "+", "*", "**2", "tanh", or "" for a leaf.
    pub(crate) op: Cow<'static, str>,
    pub(crate) label: RefCell<String>,
    /// `None` for leaves. The closures of all ops but `powf` capture nothing, and a
    /// boxed zero-sized closure does not allocate.
    backward: Option<Backward>,
    /// Set while a topological sort is under way and has reached this node.
    visited: Cell<bool>,
}

impl Node {
    pub(crate) fn data(&self) -> f64 {
        self.data.get()
    }

    pub(crate) fn grad(&self) -> f64 {
        self.grad.get()
    }
}

impl Value {
    /// A leaf: a number that no op produced, such as an input or a weight.
    pub fn new(data: f64) -> Value {
        Value(Rc::new(Node {
            data: Cell::new(data),
            grad: Cell::new(0.0),
            prev: Vec::new(),
            op: Cow::Borrowed(""),
            label: RefCell::new(String::new()),
            backward: None,
            visited: Cell::new(false),
        }))
    }

    /// The result of an op: its value, its inputs, its name and its backward rule.
    fn from_op(
        data: f64,
        prev: Vec<Value>,
        op: impl Into<Cow<'static, str>>,
        backward: impl Fn(&Node) + 'static,
    ) -> Value {
        Value(Rc::new(Node {
            data: Cell::new(data),
            grad: Cell::new(0.0),
            prev,
            op: op.into(),
            label: RefCell::new(String::new()),
            backward: Some(Box::new(backward)),
            visited: Cell::new(false),
        }))
    }
}

// ANCHOR: add
impl Add<&Value> for &Value {
    type Output = Value;

    fn add(self, other: &Value) -> Value {
        let out = self.data() + other.data();
        Value::from_op(out, vec![self.clone(), other.clone()], "+", |out| {
            let (a, b) = (&out.prev[0], &out.prev[1]);
            a.add_grad(out.grad());
            b.add_grad(out.grad());
        })
    }
}
// ANCHOR_END: add

// ANCHOR: mul
impl Mul<&Value> for &Value {
    type Output = Value;

    fn mul(self, other: &Value) -> Value {
        let out = self.data() * other.data();
        Value::from_op(out, vec![self.clone(), other.clone()], "*", |out| {
            let (a, b) = (&out.prev[0], &out.prev[1]);
            a.add_grad(b.data() * out.grad());
            b.add_grad(a.data() * out.grad());
        })
    }
}
// ANCHOR_END: mul

/// The other primitives, each with its backward rule, and the backward pass.
impl Value {
    /// `self ** exponent` for a constant exponent.
    pub fn powf(&self, exponent: f64) -> Value {
        // ANCHOR: pow
        let out = self.data().powf(exponent);
        Value::from_op(
            out,
            vec![self.clone()],
            format!("**{exponent}"),
            move |out| {
                let x = &out.prev[0];
                x.add_grad(exponent * x.data().powf(exponent - 1.0) * out.grad());
            },
        )
        // ANCHOR_END: pow
    }

    /// `max(0, self)`.
    pub fn relu(&self) -> Value {
        // ANCHOR: relu
        let out = if self.data() < 0.0 { 0.0 } else { self.data() };
        Value::from_op(out, vec![self.clone()], "ReLU", |out| {
            let x = &out.prev[0];
            if out.data() > 0.0 {
                x.add_grad(out.grad());
            }
        })
        // ANCHOR_END: relu
    }

    /// The hyperbolic tangent, the lecture's neuron activation. Its value is
    /// `f64::tanh`, as `torch.tanh` computes it: the tests compare it bit for
    /// bit, and the video's `(e^2x - 1) / (e^2x + 1)` differs in the last digit.
    pub fn tanh(&self) -> Value {
        // ANCHOR: tanh
        let t = self.data().tanh();
        Value::from_op(t, vec![self.clone()], "tanh", |out| {
            let x = &out.prev[0];
            let t = out.data();
            x.add_grad((1.0 - t * t) * out.grad());
        })
        // ANCHOR_END: tanh
    }

    /// `e^self`.
    pub fn exp(&self) -> Value {
        // ANCHOR: exp
        let out = self.data().exp();
        Value::from_op(out, vec![self.clone()], "exp", |out| {
            // d/dx e^x is e^x itself, the output.
            out.prev[0].add_grad(out.data() * out.grad());
        })
        // ANCHOR_END: exp
    }

    /// The natural logarithm.
    pub fn log(&self) -> Value {
        // ANCHOR: log
        let out = self.data().ln();
        Value::from_op(out, vec![self.clone()], "log", |out| {
            let x = &out.prev[0];
            x.add_grad(out.grad() / x.data());
        })
        // ANCHOR_END: log
    }

    /// The sine, which the lecture's exercise notebook needs.
    pub fn sin(&self) -> Value {
        // ANCHOR: sin
        let out = self.data().sin();
        Value::from_op(out, vec![self.clone()], "sin", |out| {
            let x = &out.prev[0];
            x.add_grad(x.data().cos() * out.grad());
        })
        // ANCHOR_END: sin
    }

    /// Fills in the gradient of `self` with respect to every node of its graph.
    ///
    /// Gradients add up, so call [`crate::Module::zero_grad`] (or `set_grad(0.0)`)
    /// before a second backward pass over the same leaves.
    // ANCHOR: backward
    pub fn backward(&self) {
        let topo = self.topological_order();
        self.set_grad(1.0);
        for node in topo.iter().rev() {
            if let Some(backward) = &node.backward {
                backward(node);
            }
        }
    }
    // ANCHOR_END: backward

    /// Every node of the graph, each after all of its inputs (`build_topo`).
    ///
    /// A depth-first search, like micrograd's, but with an explicit stack: the
    /// recursive version overflows on deep graphs (micrograd PR #90 hits Python's
    /// recursion limit at depth 1000). Each node is pushed twice: first to visit its
    /// inputs, then, once they are all placed, to be placed itself.
    ///
    /// Python keeps a `visited` set; a flag on each node does the same job without
    /// hashing 65,000 addresses per moons step (which took half of the step's time).
    // ANCHOR: topo
    pub(crate) fn topological_order(&self) -> Vec<&Node> {
        let mut topo = Vec::new();
        let mut stack: Vec<(&Node, bool)> = vec![(&self.0, false)];
        while let Some((node, inputs_placed)) = stack.pop() {
            if inputs_placed {
                topo.push(node);
                continue;
            }
            if node.visited.replace(true) {
                continue;
            }
            stack.push((node, true));
            // Reversed, so the first operand is explored first, as in Python.
            for child in node.prev.iter().rev() {
                stack.push((&child.0, false));
            }
        }
        // Every visited node was placed, so this clears all the flags for next time.
        for node in &topo {
            node.visited.set(false);
        }
        topo
    }
    // ANCHOR_END: topo
}

// ANCHOR: derived
impl Neg for &Value {
    type Output = Value;

    fn neg(self) -> Value {
        self * -1.0
    }
}

impl Sub<&Value> for &Value {
    type Output = Value;

    fn sub(self, other: &Value) -> Value {
        self + &(-other)
    }
}

impl Div<&Value> for &Value {
    type Output = Value;

    fn div(self, other: &Value) -> Value {
        self * &other.powf(-1.0)
    }
}
// ANCHOR_END: derived

/// Names, accessors and the handles a training loop needs.
impl Value {
    /// The same value with a name, for drawings: `Value::new(2.0).with_label("x1")`.
    pub fn with_label(self, label: &str) -> Value {
        self.set_label(label);
        self
    }

    /// Names the node, for drawings.
    pub fn set_label(&self, label: &str) {
        *self.0.label.borrow_mut() = label.to_string();
    }

    /// The node's name ("" unless one was set).
    pub fn label(&self) -> String {
        self.0.label.borrow().clone()
    }

    /// The name of the op that made this value ("" for a leaf).
    pub fn op(&self) -> &str {
        &self.0.op
    }

    /// The inputs of the op that made this value, in operand order.
    pub fn prev(&self) -> &[Value] {
        &self.0.prev
    }

    /// The number this node holds.
    pub fn data(&self) -> f64 {
        self.0.data()
    }

    /// Overwrites the number, as a training step does with `p.data -= lr * p.grad`.
    pub fn set_data(&self, data: f64) {
        self.0.data.set(data);
    }

    /// d(output)/d(self), filled in by the last [`Value::backward`] on a graph that
    /// uses this node.
    pub fn grad(&self) -> f64 {
        self.0.grad()
    }

    /// Overwrites the gradient; `set_grad(0.0)` is `zero_grad` for one node.
    pub fn set_grad(&self, grad: f64) {
        self.0.grad.set(grad);
    }

    /// `self.grad += delta`: how every backward rule hands a gradient to an input.
    fn add_grad(&self, delta: f64) {
        self.0.grad.set(self.0.grad.get() + delta);
    }

    /// Whether two handles share one node (Python's `a is b`).
    pub fn same_node(&self, other: &Value) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// The node's address, which identifies it in a drawing.
    pub(crate) fn node_ptr(&self) -> *const Node {
        Rc::as_ptr(&self.0)
    }
}

impl Drop for Node {
    /// Drops a graph without recursion.
    ///
    /// The default drop of a node drops its inputs, which drop theirs, one stack
    /// frame per node: a chain of 100,000 nodes overflows the stack. Instead the
    /// inputs move to a local stack, and a node whose last handle we hold gives up
    /// its own inputs to that stack before it goes.
    fn drop(&mut self) {
        let mut stack = std::mem::take(&mut self.prev);
        while let Some(value) = stack.pop() {
            if let Ok(mut node) = Rc::try_unwrap(value.0) {
                stack.append(&mut node.prev);
            }
        }
    }
}

impl From<f64> for Value {
    fn from(data: f64) -> Value {
        Value::new(data)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Value(data={}, grad={})", self.data(), self.grad())
    }
}

impl Neg for Value {
    type Output = Value;

    fn neg(self) -> Value {
        -&self
    }
}

/// The other operand shapes, all through `&Value op &Value`: owned values, and a
/// plain number on either side (`2.0 * &a`, `&a + 1.0`), which becomes a leaf as
/// Python's `Value(other)` does.
macro_rules! forward_binary_op {
    ($Trait:ident, $method:ident) => {
        impl $Trait<Value> for Value {
            type Output = Value;
            fn $method(self, other: Value) -> Value {
                (&self).$method(&other)
            }
        }
        impl $Trait<&Value> for Value {
            type Output = Value;
            fn $method(self, other: &Value) -> Value {
                (&self).$method(other)
            }
        }
        impl $Trait<Value> for &Value {
            type Output = Value;
            fn $method(self, other: Value) -> Value {
                self.$method(&other)
            }
        }
        impl $Trait<f64> for &Value {
            type Output = Value;
            fn $method(self, other: f64) -> Value {
                self.$method(&Value::new(other))
            }
        }
        impl $Trait<f64> for Value {
            type Output = Value;
            fn $method(self, other: f64) -> Value {
                (&self).$method(&Value::new(other))
            }
        }
        impl $Trait<&Value> for f64 {
            type Output = Value;
            fn $method(self, other: &Value) -> Value {
                (&Value::new(self)).$method(other)
            }
        }
        impl $Trait<Value> for f64 {
            type Output = Value;
            fn $method(self, other: Value) -> Value {
                (&Value::new(self)).$method(&other)
            }
        }
    };
}

forward_binary_op!(Add, add);
forward_binary_op!(Sub, sub);
forward_binary_op!(Mul, mul);
forward_binary_op!(Div, div);

/// `c += expr` rebinds `c` to a new node, as in Python; the old node stays in the
/// graph as an input of the new one.
macro_rules! assign_op {
    ($Trait:ident, $method:ident, $Op:ident, $op:ident) => {
        impl<T> $Trait<T> for Value
        where
            for<'a> &'a Value: $Op<T, Output = Value>,
        {
            fn $method(&mut self, other: T) {
                *self = (&*self).$op(other);
            }
        }
    };
}

assign_op!(AddAssign, add_assign, Add, add);
assign_op!(SubAssign, sub_assign, Sub, sub);
assign_op!(MulAssign, mul_assign, Mul, mul);
assign_op!(DivAssign, div_assign, Div, div);

/// Python's `sum(values)`: starts from a leaf 0 and adds each value in turn.
impl Sum<Value> for Value {
    fn sum<I: Iterator<Item = Value>>(iter: I) -> Value {
        iter.fold(Value::new(0.0), |acc, v| &acc + &v)
    }
}

impl<'a> Sum<&'a Value> for Value {
    fn sum<I: Iterator<Item = &'a Value>>(iter: I) -> Value {
        iter.fold(Value::new(0.0), |acc, v| &acc + v)
    }
}

/// A leaf for each number: Python's `list(map(Value, xs))`.
pub fn values(data: &[f64]) -> Vec<Value> {
    data.iter().map(|&x| Value::new(x)).collect()
}
