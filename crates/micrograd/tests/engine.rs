//! The engine against central finite differences, reuse in both operand orders,
//! and graphs too deep for a recursive backward or drop.

use micrograd::Value;

const H: f64 = 1e-6;

/// `(f(x + h) − f(x − h)) / 2h`.
fn central_difference(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    (f(x + H) - f(x - H)) / (2.0 * H)
}

/// Checks d op(x)/dx from `backward()` against the finite difference of the same op
/// on plain numbers.
fn check_unary(name: &str, op: impl Fn(&Value) -> Value, plain: impl Fn(f64) -> f64, x: f64) {
    let v = Value::new(x);
    let out = op(&v);
    out.backward();
    assert_eq!(out.data(), plain(x), "{name}({x}) forward");
    let numerical = central_difference(&plain, x);
    assert!(
        (v.grad() - numerical).abs() <= 1e-6 * numerical.abs().max(1.0),
        "{name}'({x}): backward {} vs finite difference {numerical}",
        v.grad()
    );
}

/// The same for both inputs of a binary op.
fn check_binary(
    name: &str,
    op: impl Fn(&Value, &Value) -> Value,
    plain: impl Fn(f64, f64) -> f64,
    x: f64,
    y: f64,
) {
    let (a, b) = (Value::new(x), Value::new(y));
    let out = op(&a, &b);
    out.backward();
    assert!(
        (out.data() - plain(x, y)).abs() <= 1e-15 * plain(x, y).abs(),
        "{name}({x}, {y}) forward"
    );
    let da = central_difference(|x| plain(x, y), x);
    let db = central_difference(|y| plain(x, y), y);
    for (which, got, want) in [("a", a.grad(), da), ("b", b.grad(), db)] {
        assert!(
            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
            "d{name}/d{which} at ({x}, {y}): backward {got} vs finite difference {want}"
        );
    }
}

#[test]
fn binary_ops_match_finite_differences() {
    for (x, y) in [(1.5, -0.7), (-2.25, 3.5), (0.3, 0.9)] {
        check_binary("add", |a, b| a + b, |a, b| a + b, x, y);
        check_binary("sub", |a, b| a - b, |a, b| a - b, x, y);
        check_binary("mul", |a, b| a * b, |a, b| a * b, x, y);
        check_binary("div", |a, b| a / b, |a, b| a / b, x, y);
    }
}

#[test]
fn unary_ops_match_finite_differences() {
    for x in [-1.7, -0.4, 0.35, 2.2] {
        check_unary("neg", |v| -v, |x| -x, x);
        check_unary("exp", |v| v.exp(), f64::exp, x);
        check_unary("tanh", |v| v.tanh(), f64::tanh, x);
        check_unary("sin", |v| v.sin(), f64::sin, x);
        check_unary("relu", |v| v.relu(), |x| x.max(0.0), x);
        check_unary("pow2", |v| v.powf(2.0), |x| x.powf(2.0), x);
        check_unary("pow3", |v| v.powf(3.0), |x| x.powf(3.0), x);
        check_unary("pow-1", |v| v.powf(-1.0), |x| x.powf(-1.0), x);
    }
    for x in [0.35, 1.0, 2.2, 7.5] {
        check_unary("log", |v| v.log(), f64::ln, x);
        check_unary("pow0.5", |v| v.powf(0.5), |x| x.powf(0.5), x);
        check_unary("pow2.5", |v| v.powf(2.5), |x| x.powf(2.5), x);
    }
}

#[test]
fn a_number_on_either_side_of_an_op() {
    let x = 1.25;
    check_unary("2*x", |v| 2.0 * v, |x| 2.0 * x, x);
    check_unary("x*2", |v| v * 2.0, |x| x * 2.0, x);
    check_unary("x+1", |v| v + 1.0, |x| x + 1.0, x);
    check_unary("1+x", |v| 1.0 + v, |x| 1.0 + x, x);
    check_unary("x-3", |v| v - 3.0, |x| x - 3.0, x);
    check_unary("3-x", |v| 3.0 - v, |x| 3.0 - x, x);
    check_unary("x/4", |v| v / 4.0, |x| x / 4.0, x);
    check_unary("4/x", |v| 4.0 / v, |x| 4.0 / x, x);
}

#[test]
fn relu_passes_no_gradient_below_zero() {
    for x in [-3.0, -1e-9, 0.0] {
        let v = Value::new(x);
        let out = v.relu();
        out.backward();
        assert_eq!((out.data(), v.grad()), (0.0, 0.0), "relu at {x}");
    }
}

#[test]
fn a_reused_node_gets_both_contributions_in_either_order() {
    // z = a + b with a = 2w and b = 3a = 6w, so dz/dw = 2 + 6 = 8. A backward pass
    // without a topological sort visits `a` before `b` has handed it its share in one
    // of the two orders.
    for a_first in [true, false] {
        let w = Value::new(1.5);
        let a = &w * 2.0;
        let b = &a * 3.0;
        let z = if a_first { &a + &b } else { &b + &a };
        z.backward();
        assert_eq!(w.grad(), 8.0, "a_first = {a_first}");
        assert_eq!(a.grad(), 4.0, "a_first = {a_first}");
    }
}

#[test]
fn a_node_used_twice_by_one_op() {
    let a = Value::new(3.0);
    let b = &a * &a;
    let c = &a + &a;
    b.backward();
    assert_eq!(a.grad(), 6.0);
    a.set_grad(0.0);
    c.backward();
    assert_eq!(a.grad(), 2.0);
}

#[test]
fn compound_assignment_rebinds_like_python() {
    // Python: c = a; c += c + 1; c *= 2  gives c = 2(2a + 1), dc/da = 4.
    let a = Value::new(5.0);
    let mut c = a.clone();
    c += &c + 1.0;
    c *= 2.0;
    c.backward();
    assert_eq!(c.data(), 22.0);
    assert_eq!(a.grad(), 4.0);
}

#[test]
fn sum_of_values() {
    let xs = micrograd::values(&[1.0, 2.0, 4.0]);
    let total: Value = xs.iter().sum();
    let weighted: Value = xs.iter().map(|x| x * x).sum();
    let out = &total + &weighted;
    out.backward();
    assert_eq!(out.data(), 7.0 + 21.0);
    let grads: Vec<f64> = xs.iter().map(|x| x.grad()).collect();
    assert_eq!(grads, [3.0, 5.0, 9.0]);
}

/// Runs `f` on a thread with cargo test's default 2 MiB stack, whatever
/// RUST_MIN_STACK says.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the thread finished without overflowing its stack");
}

#[test]
fn a_chain_of_100_000_nodes_builds_backprops_and_drops() {
    on_small_stack(|| {
        let a = Value::new(0.5);
        let mut v = a.clone();
        for _ in 0..100_000 {
            v = &v + &a;
        }
        v.backward();
        assert_eq!(v.data(), 100_001.0 * 0.5);
        assert_eq!(a.grad(), 100_001.0);
        drop(v);
        // The leaf outlives the graph it fed.
        assert_eq!(a.data(), 0.5);
    });
}

#[test]
fn a_deep_chain_of_unary_ops() {
    // tanh(tanh(...)) 100,000 deep: each link multiplies the gradient by 1 − t², so
    // the product must equal a running product computed on plain numbers.
    on_small_stack(|| {
        let x = Value::new(0.9);
        let mut v = x.clone();
        let mut t = 0.9_f64;
        let mut expected = 1.0;
        for _ in 0..100_000 {
            v = v.tanh();
            t = t.tanh();
            expected *= 1.0 - t * t;
        }
        v.backward();
        assert_eq!(v.data(), t);
        assert!(
            (x.grad() - expected).abs() <= 1e-12 * expected.abs(),
            "{} vs {expected}",
            x.grad()
        );
    });
}

#[test]
fn backward_runs_each_rule_once() {
    // 20 diamonds in a row: c = 2c + 3c. There are 2^20 paths from x to the output;
    // a sort that lists a shared node twice runs its rule twice and overcounts.
    on_small_stack(|| {
        let x = Value::new(1.0);
        let mut c = x.clone();
        for _ in 0..20 {
            c = &(&c * 2.0) + &(&c * 3.0);
        }
        c.backward();
        assert_eq!(c.data(), 5f64.powi(20));
        assert_eq!(x.grad(), 5f64.powi(20));
    });
}

#[test]
fn debug_shows_data_and_grad() {
    let v = Value::new(2.5);
    v.set_grad(-1.0);
    assert_eq!(format!("{v:?}"), "Value(data=2.5, grad=-1)");
}

#[test]
fn a_second_backward_adds_to_the_gradients() {
    // The sort's visited flags are cleared after each pass, so the second pass sees
    // the whole graph again, and gradients accumulate without zero_grad.
    let a = Value::new(3.0);
    let b = Value::new(-2.0);
    let c = &a * &b;
    c.backward();
    assert_eq!((a.grad(), b.grad()), (-2.0, 3.0));
    c.backward();
    assert_eq!((a.grad(), b.grad()), (-4.0, 6.0));
    // Only the output's gradient is set, not added: intermediate nodes keep theirs,
    // as in micrograd, so a deeper graph would need zero_grad on every node.
    // A new graph over the same leaves still reaches them.
    let e = (&a * &b).tanh();
    a.set_grad(0.0);
    e.backward();
    assert_eq!(a.grad(), -2.0 * (1.0 - e.data() * e.data()));
}
