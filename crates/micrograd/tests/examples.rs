//! The lecture's worked examples against the numbers the lecture, micrograd's README,
//! micrograd's tests and the exercise notebook print.

use micrograd::examples;

fn assert_close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, want {want} (tolerance {tol})"
    );
}

#[test]
fn simple_function_and_its_slope() {
    assert_eq!(examples::simple_function(3.0), 20.0);
    // f'(x) = 6x − 4 = 14 at x = 3; the forward difference is off by about 3h.
    let slope = examples::forward_difference(examples::simple_function, 3.0, 1e-6);
    assert_close("forward difference", slope, 14.0, 1e-5);
    // The notebook's cell[4] prints the slope at x = 2/3 as 2.999378523327323e-06,
    // and cell[6] the slope of d = a·b + c in c as 0.9999999999976694.
    let at_two_thirds = examples::forward_difference(examples::simple_function, 2.0 / 3.0, 1e-6);
    assert_eq!(at_two_thirds, 2.999378523327323e-06);
    assert_eq!(examples::nudge_c(2.0, -3.0, 10.0, 1e-4), 0.9999999999976694);
}

#[test]
fn manual_graph_and_one_step_by_hand() {
    let g = examples::manual_graph(2.0, -3.0, 10.0, -2.0);
    assert_eq!(g.l.data(), -8.0);
    g.l.backward();
    // The grads the lecture fills in by hand: dL/dd = f, dL/df = d, then the chain rule.
    let grads = [&g.a, &g.b, &g.c, &g.e, &g.d, &g.f].map(|v| v.grad());
    assert_eq!(grads, [6.0, -4.0, -2.0, -2.0, -2.0, 4.0]);
    // The lecture prints -7.286496 after nudging every leaf along its gradient.
    assert_close(
        "L after one step",
        examples::manual_step(),
        -7.286496,
        1e-12,
    );
}

#[test]
fn readme_expression() {
    let (g, a, b) = examples::readme_expression();
    assert_close("g", g.data(), 24.70408163265306, 1e-12);
    assert_close("a.grad", a.grad(), 138.83381924198252, 1e-12);
    assert_close("b.grad", b.grad(), 645.5772594752186, 1e-12);
}

#[test]
fn micrograd_sanity_check_is_exact() {
    let (y, x) = examples::sanity_check();
    assert_eq!(y.data(), -20.0);
    assert_eq!(x.grad(), 46.0);
}

#[test]
// 0.7071067811865476 is 1/√2, but the lecture prints it as this number.
#[allow(clippy::approx_constant)]
fn the_lecture_neuron() {
    let ex = examples::neuron_example();
    assert_close("o", ex.o.data(), 0.7071067811865476, 1e-12);
    let [x1, x2] = &ex.x;
    let [w1, w2] = [&ex.neuron.w[0], &ex.neuron.w[1]];
    assert_close("x1.grad", x1.grad(), -1.5, 1e-6);
    assert_close("w1.grad", w1.grad(), 1.0, 1e-6);
    assert_close("x2.grad", x2.grad(), 0.5, 1e-6);
    assert_close("w2.grad", w2.grad(), 0.0, 1e-6);
    // do/dn = 1 − o², which the lecture prints as 0.4999999999999999.
    assert_close("b.grad", ex.neuron.b.grad(), 0.5, 1e-12);
}

#[test]
fn exercise_function_and_gradient() {
    let want = [-12.353553390593273, 10.25699027111255, 0.0625];
    let (f, grad) = examples::exercise_gradient(2.0, 3.0, 4.0);
    assert_close("f(2, 3, 4)", f, 6.336362190988558, 1e-12);
    let by_hand = examples::exercise_gradient_by_hand(2.0, 3.0, 4.0);
    let numerical = examples::exercise_gradient_numerical(2.0, 3.0, 4.0, 1e-6);
    for i in 0..3 {
        assert_close(&format!("backward grad[{i}]"), grad[i], want[i], 1e-12);
        assert_close(&format!("by-hand grad[{i}]"), by_hand[i], want[i], 1e-12);
        // The symmetric difference's error is about h² f''' plus rounding/h.
        assert_close(&format!("numerical grad[{i}]"), numerical[i], want[i], 1e-7);
    }
}

#[test]
fn softmax_and_negative_log_likelihood() {
    let (loss, logits) = examples::softmax_nll(&[0.0, 3.0, -2.0, 1.0], 3);
    assert_close("loss", loss.data(), 2.1755153626167147, 1e-12);
    let want = [
        0.04177257051535045,
        0.8390245074625319,
        0.005653302662216329,
        -0.8864503806400987,
    ];
    for (i, (logit, want)) in logits.iter().zip(want).enumerate() {
        assert_close(&format!("logit {i} grad"), logit.grad(), want, 1e-12);
    }
}
