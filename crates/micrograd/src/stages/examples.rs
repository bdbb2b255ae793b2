//! The lecture's worked examples: the derivative of a function by hand, the
//! expression graph `L`, the neuron, and its PyTorch check.

use micrograd::examples;
use micrograd::{to_dot, to_svg};
use report::{Run, Target};

/// The worked examples, each against the value the lecture prints, and the
/// neuron's graph as `neuron.svg` (laid out by `draw::layout`) and `neuron.dot`.
pub fn run_stage(run: &mut Run) {
    let stage = run.stage("examples");
    stage.set_source("micrograd lecture notebooks (first half cells 2, 4, 6, 7, 10, 16; second half cell[13]); micrograd's README and test_engine.py; the exercise Colab linked from the video");
    let exact = |name: &str, want: f64, got: f64| Target::exact(name, want, 1e-12, got);

    stage.target(Target::exact(
        "f(3)",
        20.0,
        0.0,
        examples::simple_function(3.0),
    ));
    // The notebook's cell[4] evaluates the slope at x = 2/3, where it vanishes.
    let slope = examples::forward_difference(examples::simple_function, 2.0 / 3.0, 1e-6);
    stage.target(Target::exact(
        "slope at x = 2/3, h = 1e-6 (notebook cell[4])",
        2.999378523327323e-06,
        0.0,
        slope,
    ));
    let slope = examples::forward_difference(examples::simple_function, 3.0, 1e-6);
    stage.target(Target::exact(
        "f'(3) by (f(3+h)-f(3))/h, h = 1e-6 (derived: 6x − 4)",
        14.0,
        1e-5,
        slope,
    ));
    stage.target(Target::exact(
        "slope of d = a·b + c in c, h = 1e-4 (notebook cell[6])",
        0.9999999999976694,
        0.0,
        examples::nudge_c(2.0, -3.0, 10.0, 1e-4),
    ));

    let graph = examples::manual_graph(2.0, -3.0, 10.0, -2.0);
    stage.target(Target::exact("L", -8.0, 0.0, graph.l.data()));
    stage.target(exact(
        "L after one step",
        -7.286496,
        examples::manual_step(),
    ));

    let (g, a, b) = examples::readme_expression();
    stage.target(exact("README g", 24.70408163265306, g.data()));
    stage.target(exact("README a.grad", 138.83381924198252, a.grad()));
    stage.target(exact("README b.grad", 645.5772594752186, b.grad()));

    let (y, x) = examples::sanity_check();
    stage.target(Target::exact("sanity check y", -20.0, 0.0, y.data()));
    stage.target(Target::exact("sanity check dy/dx", 46.0, 0.0, x.grad()));

    let neuron = examples::neuron_example();
    let [x1, x2] = &neuron.x;
    let [w1, w2] = [&neuron.neuron.w[0], &neuron.neuron.w[1]];
    #[allow(clippy::approx_constant)] // the lecture prints 1/√2 this way
    stage.target(exact("neuron o", 0.7071067811865476, neuron.o.data()));
    for (name, want, got) in [
        ("neuron x1.grad", -1.5, x1.grad()),
        ("neuron w1.grad", 1.0, w1.grad()),
        ("neuron x2.grad", 0.5, x2.grad()),
        ("neuron w2.grad", 0.0, w2.grad()),
    ] {
        stage.target(Target::exact(name, want, 1e-6, got));
    }

    let want = [-12.353553390593273, 10.25699027111255, 0.0625];
    let (f, grad) = examples::exercise_gradient(2.0, 3.0, 4.0);
    let by_hand = examples::exercise_gradient_by_hand(2.0, 3.0, 4.0);
    let numerical = examples::exercise_gradient_numerical(2.0, 3.0, 4.0, 1e-6);
    stage.target(exact(
        "exercise f(2, 3, 4) (exercise Colab)",
        6.336362190988558,
        f,
    ));
    for (i, input) in ["a", "b", "c"].iter().enumerate() {
        stage.target(exact(
            &format!("exercise df/d{input} backward (exercise Colab)"),
            want[i],
            grad[i],
        ));
        stage.target(exact(
            &format!("exercise df/d{input} by hand (exercise Colab)"),
            want[i],
            by_hand[i],
        ));
        stage.target(Target::exact(
            &format!("exercise df/d{input} symmetric difference (exercise Colab)"),
            want[i],
            1e-7,
            numerical[i],
        ));
    }

    let (loss, logits) = examples::softmax_nll(&[0.0, 3.0, -2.0, 1.0], 3);
    stage.target(exact(
        "softmax NLL loss (exercise Colab)",
        2.1755153626167147,
        loss.data(),
    ));
    // softmax − one_hot in f64; the Colab's `ans` differs in the last bit of
    // logits 0 and 3 (0.041772570515350445, -0.8864503806400986).
    let want = [
        0.04177257051535045,
        0.8390245074625319,
        0.005653302662216329,
        -0.8864503806400987,
    ];
    for (i, (logit, want)) in logits.iter().zip(want).enumerate() {
        stage.target(exact(
            &format!("softmax logit {i} grad (derived: softmax − one_hot)"),
            want,
            logit.grad(),
        ));
    }

    // The picture, laid out here; the DOT beside it for those with Graphviz.
    for (name, text) in [
        ("neuron.svg", to_svg(&neuron.o)),
        ("neuron.dot", to_dot(&neuron.o)),
    ] {
        if let Err(e) = run.write_file(name, text.as_bytes()) {
            eprintln!("warning: could not write {name}: {e}");
        }
    }
}
