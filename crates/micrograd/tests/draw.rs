//! The drawings of the lecture's neuron, as `draw_dot(o)` shows it: DOT, and
//! the SVG laid out without Graphviz.

use micrograd::draw::layout;
use micrograd::{examples, to_dot, to_svg, Value};

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

#[test]
fn neuron_svg_has_every_box_left_to_right_without_overlaps() {
    let ex = examples::neuron_example();
    let g = layout(&ex.o);
    let values: Vec<_> = g.nodes.iter().filter(|n| n.record.is_some()).collect();
    assert_eq!(values.len(), 10);
    assert_eq!(g.nodes.len() - values.len(), 5);
    assert_eq!(g.edges.len(), 5 + 9);
    // Every edge runs left to right, out of one box's right side into the next's left.
    for &(from, to) in &g.edges {
        let (a, b) = (&g.nodes[from], &g.nodes[to]);
        assert!(a.x + a.width / 2.0 < b.x - b.width / 2.0, "{a:?} -> {b:?}");
    }
    // No two boxes overlap, and all lie inside the drawing.
    for (i, a) in g.nodes.iter().enumerate() {
        assert!(a.x - a.width / 2.0 >= 0.0 && a.x + a.width / 2.0 <= g.width);
        assert!(a.y - a.height / 2.0 >= 0.0 && a.y + a.height / 2.0 <= g.height);
        for b in &g.nodes[i + 1..] {
            let apart = (a.x - b.x).abs() * 2.0 >= a.width + b.width
                || (a.y - b.y).abs() * 2.0 >= a.height + b.height;
            assert!(apart, "{a:?} overlaps {b:?}");
        }
    }
    // o is rightmost: tanh is the last op.
    let o = values.iter().max_by(|a, b| a.x.total_cmp(&b.x)).unwrap();
    assert_eq!(o.record.as_ref().unwrap().0, "o");

    let svg = to_svg(&ex.o);
    assert_eq!(svg.matches("<g class=\"value\">").count(), 10);
    assert_eq!(svg.matches("<g class=\"op\">").count(), 5);
    assert_eq!(svg.matches("<path class=\"edge\"").count(), 14);
    for cell in ["x1*w1", "data 0.7071", "grad -1.5000", ">tanh<"] {
        assert!(svg.contains(cell), "missing {cell}");
    }
}

#[test]
fn svg_text_is_escaped() {
    let v = Value::new(1.0).with_label("a<b & \"c\"");
    assert!(to_svg(&v).contains(">a&lt;b &amp; &quot;c&quot;<"));
}
