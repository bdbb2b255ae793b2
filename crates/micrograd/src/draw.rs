//! The graph of a [`Value`] as Graphviz DOT, like the lecture's `draw_dot`.
//!
//! Each value is a record box `{ label | data 2.0000 | grad -1.5000 }`. A value
//! made by an op gets a small oval for the op in front of it, and the op's inputs
//! point at that oval. `dot -Tsvg graph.dot -o graph.svg` renders it.

use std::collections::HashMap;
use std::fmt::Write;

use crate::engine::Node;
use crate::Value;

/// The graph that produced `root`, left to right, as DOT source.
pub fn to_dot(root: &Value) -> String {
    let nodes = root.topological_order();
    // Numbered in topological order, so the same graph always gives the same text.
    let ids: HashMap<*const Node, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, &node)| (node as *const Node, i))
        .collect();

    let mut dot = String::from("digraph {\n  rankdir=LR;\n");
    for (id, node) in nodes.iter().enumerate() {
        let label = escape_record(&node.label.borrow());
        writeln!(
            dot,
            "  v{id} [shape=record, label=\"{{ {label} | data {:.4} | grad {:.4} }}\"];",
            node.data(),
            node.grad()
        )
        .unwrap();
        if !node.op.is_empty() {
            let op = escape_record(&node.op);
            writeln!(dot, "  v{id}op [label=\"{op}\"];").unwrap();
            writeln!(dot, "  v{id}op -> v{id};").unwrap();
            for child in &node.prev {
                let child_id = ids[&child.node_ptr()];
                writeln!(dot, "  v{child_id} -> v{id}op;").unwrap();
            }
        }
    }
    dot.push_str("}\n");
    dot
}

/// Backslash-escapes the characters that structure a record label or end a string.
fn escape_record(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '{' | '}' | '|' | '<' | '>' | '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
