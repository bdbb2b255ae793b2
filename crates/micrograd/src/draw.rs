//! The graph of a [`Value`] drawn as the lecture's `draw_dot` draws it: as
//! Graphviz DOT ([`to_dot`]), and as an SVG laid out here ([`to_svg`]), so the
//! picture needs no Graphviz.
//!
//! Each value is a record box `{ label | data 2.0000 | grad -1.5000 }`. A value
//! made by an op gets a small oval for the op in front of it, and the op's inputs
//! point at that oval. `dot -Tsvg graph.dot -o graph.svg` renders the DOT.

use std::collections::HashMap;
use std::fmt::Write;

use crate::engine::Node;
use crate::Value;

/// The graph that produced `root`, left to right, as DOT source.
pub fn to_dot(root: &Value) -> String {
    let nodes = root.topological_order();
    let ids = numbered(&nodes);

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

/// Each node's number: its place in topological order, so that the same
/// graph always gives the same drawing, whatever the nodes' addresses.
fn numbered(order: &[&Node]) -> HashMap<*const Node, usize> {
    order
        .iter()
        .enumerate()
        .map(|(i, &node)| (node as *const Node, i))
        .collect()
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

/// Where [`layout`] puts one box or oval: its centre, its size, and its text.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    /// Left to right: each op one column right of its rightmost input, each
    /// value one column right of its op, each leaf just left of its first reader.
    pub column: usize,
    /// Centre, in SVG units.
    pub x: f64,
    /// Centre, in SVG units.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
    /// `Some((label, data, grad))` for a value's record box, `None` for an op's oval.
    pub record: Option<(String, f64, f64)>,
    /// The op's symbol, for an oval.
    pub op: String,
}

/// A laid-out graph: the boxes and ovals, and the edges between them as
/// (from, to) indices into `nodes`.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Values and ops.
    pub nodes: Vec<Placed>,
    /// `(from, to)`: an input value to its op's oval, an oval to its value.
    pub edges: Vec<(usize, usize)>,
    /// The drawing's size.
    pub width: f64,
    /// The drawing's size.
    pub height: f64,
}

const RECORD_HEIGHT: f64 = 30.0;
const NUMBER_CELL: f64 = 100.0;
const OVAL: (f64, f64) = (40.0, 26.0);
const GAP: (f64, f64) = (40.0, 14.0);

/// Lays out the graph that produced `root` left to right in columns, as
/// Graphviz's `rankdir=LR` does: each column's nodes stacked in topological
/// order and centred vertically.
pub fn layout(root: &Value) -> Layout {
    let order = root.topological_order();
    let ids = numbered(&order);
    // Column of each value, and of the op in front of it.
    let mut value_column = vec![0usize; order.len()];
    let mut nodes: Vec<Placed> = Vec::new();
    let mut edges = Vec::new();
    let mut value_slot = vec![0usize; order.len()];
    let mut is_leaf: Vec<bool> = Vec::new(); // per entry of `nodes`
    for (i, node) in order.iter().enumerate() {
        let record = Some((node.label.borrow().clone(), node.data(), node.grad()));
        let placed = |column, record: Option<(String, f64, f64)>, op: &str| Placed {
            column,
            x: 0.0,
            y: 0.0,
            width: record.as_ref().map_or(OVAL.0, |(label, _, _)| {
                label_cell(label) + 2.0 * NUMBER_CELL
            }),
            height: if record.is_some() {
                RECORD_HEIGHT
            } else {
                OVAL.1
            },
            record,
            op: op.to_string(),
        };
        is_leaf.push(node.op.is_empty());
        if node.op.is_empty() {
            value_slot[i] = nodes.len();
            nodes.push(placed(0, record, ""));
            continue;
        }
        let inputs: Vec<usize> = node.prev.iter().map(|c| ids[&c.node_ptr()]).collect();
        let op_column = 1 + inputs.iter().map(|&c| value_column[c]).max().unwrap_or(0);
        value_column[i] = op_column + 1;
        let op_slot = nodes.len();
        nodes.push(placed(op_column, None, &node.op));
        is_leaf.push(false);
        value_slot[i] = nodes.len();
        nodes.push(placed(op_column + 1, record, ""));
        edges.extend(inputs.iter().map(|&c| (value_slot[c], op_slot)));
        edges.push((op_slot, value_slot[i]));
    }

    // A leaf sits just left of the first op that reads it, as Graphviz puts it,
    // so its edge never runs behind the boxes of the columns in between.
    for leaf in (0..nodes.len()).filter(|&i| is_leaf[i]) {
        let first_reader = edges
            .iter()
            .filter(|e| e.0 == leaf)
            .map(|e| nodes[e.1].column)
            .min();
        if let Some(column) = first_reader {
            nodes[leaf].column = column - 1;
        }
    }
    // Columns alternate between values (wide) and ops (narrow).
    let columns = nodes.iter().map(|n| n.column + 1).max().unwrap_or(0);
    let mut left = vec![0.0; columns + 1];
    for c in 0..columns {
        let widest = nodes
            .iter()
            .filter(|n| n.column == c)
            .map(|n| n.width)
            .fold(0.0, f64::max);
        left[c + 1] = left[c] + widest + GAP.0;
    }
    let column_height: Vec<f64> = (0..columns)
        .map(|c| {
            nodes
                .iter()
                .filter(|n| n.column == c)
                .map(|n| n.height + GAP.1)
                .sum()
        })
        .collect();
    let height = column_height.iter().copied().fold(0.0, f64::max) + GAP.1;
    for c in 0..columns {
        let mut y = (height - column_height[c]) / 2.0 + GAP.1;
        let widest = left[c + 1] - left[c] - GAP.0;
        for node in nodes.iter_mut().filter(|n| n.column == c) {
            node.x = GAP.0 / 2.0 + left[c] + widest / 2.0;
            node.y = y + node.height / 2.0;
            y += node.height + GAP.1;
        }
    }
    Layout {
        nodes,
        edges,
        width: left[columns],
        height,
    }
}

/// The graph that produced `root` as a standalone SVG: [`layout`], drawn.
pub fn to_svg(root: &Value) -> String {
    let g = layout(root);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {:.0} {:.0}\" \
         width=\"{:.0}\" height=\"{:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        g.width, g.height, g.width, g.height
    );
    for &(from, to) in &g.edges {
        let (a, b) = (&g.nodes[from], &g.nodes[to]);
        let (x1, y1, x2, y2) = (a.x + a.width / 2.0, a.y, b.x - b.width / 2.0, b.y);
        let mid = (x1 + x2) / 2.0;
        writeln!(
            svg,
            "<path class=\"edge\" d=\"M{x1:.1},{y1:.1} C{mid:.1},{y1:.1} {mid:.1},{y2:.1} \
             {x2:.1},{y2:.1}\" fill=\"none\" stroke=\"#555\"/>"
        )
        .unwrap();
    }
    for n in &g.nodes {
        let (x0, y0) = (n.x - n.width / 2.0, n.y - n.height / 2.0);
        match &n.record {
            Some((label, data, grad)) => {
                // The record's three cells: label, data, grad.
                let cells = [
                    (label_cell(label), xml_escape(label)),
                    (NUMBER_CELL, format!("data {data:.4}")),
                    (NUMBER_CELL, format!("grad {grad:.4}")),
                ];
                writeln!(
                    svg,
                    "<g class=\"value\"><rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.0}\" \
                     height=\"{:.0}\" fill=\"#fff\" stroke=\"#222\"/>",
                    n.width, n.height
                )
                .unwrap();
                let mut x = x0;
                for (i, (w, text)) in cells.iter().enumerate() {
                    if i > 0 {
                        writeln!(
                            svg,
                            "<line x1=\"{x:.1}\" y1=\"{y0:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" \
                             stroke=\"#222\"/>",
                            y0 + n.height
                        )
                        .unwrap();
                    }
                    writeln!(
                        svg,
                        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{text}</text>",
                        x + w / 2.0,
                        n.y + 4.0
                    )
                    .unwrap();
                    x += w;
                }
                svg.push_str("</g>\n");
            }
            None => writeln!(
                svg,
                "<g class=\"op\"><ellipse cx=\"{:.1}\" cy=\"{:.1}\" rx=\"{:.1}\" ry=\"{:.1}\" \
                 fill=\"#eef\" stroke=\"#222\"/><text x=\"{:.1}\" y=\"{:.1}\" \
                 text-anchor=\"middle\">{}</text></g>",
                n.x,
                n.y,
                n.width / 2.0,
                n.height / 2.0,
                n.x,
                n.y + 4.0,
                xml_escape(&n.op)
            )
            .unwrap(),
        }
    }
    svg.push_str("</svg>\n");
    svg
}

/// The width of a record's label cell: about 7 units per character at font size 12.
fn label_cell(label: &str) -> f64 {
    (7.0 * label.chars().count() as f64 + 12.0).max(30.0)
}

/// Escapes the characters that would end or open markup in SVG text.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
