//! The DOT drawing of the lecture's neuron, as `draw_dot(o)` shows it.

use micrograd::{examples, to_dot, Value};

#[test]
fn neuron_drawing_has_every_value_op_and_edge() {
    let ex = examples::neuron_example();
    let dot = to_dot(&ex.o);
    // The boxes the lecture shows after o.backward().
    for record in [
        "{ x1 | data 2.0000 | grad -1.5000 }",
        "{ w1 | data -3.0000 | grad 1.0000 }",
        "{ x2 | data 0.0000 | grad 0.5000 }",
        "{ w2 | data 1.0000 | grad 0.0000 }",
        "{ b | data 6.8814 | grad 0.5000 }",
        "{ x1*w1 | data -6.0000 | grad 0.5000 }",
        "{ n | data 0.8814 | grad 0.5000 }",
        "{ o | data 0.7071 | grad 1.0000 }",
    ] {
        assert!(dot.contains(record), "missing {record} in\n{dot}");
    }
    // 10 values, 5 ops (two *, two +, tanh); each op has one edge out and one per input.
    assert_eq!(dot.matches("shape=record").count(), 10);
    assert_eq!(dot.matches("op [label=").count(), 5);
    assert_eq!(dot.matches(" -> ").count(), 5 + 9);
    assert!(dot.starts_with("digraph {\n  rankdir=LR;\n"));
}

#[test]
fn labels_are_escaped() {
    let v = Value::new(1.0).with_label("a|b {c}");
    assert!(to_dot(&v).contains(r"{ a\|b \{c\} | data 1.0000 | grad 0.0000 }"));
}

#[test]
fn the_same_expression_built_twice_draws_the_same() {
    // Nodes are numbered by position, not by address.
    let first = to_dot(&examples::readme_expression().0);
    let second = to_dot(&examples::readme_expression().0);
    assert_eq!(first, second);
    assert!(first.contains("[label=\"**-1\"]"));
}
