//! The regions a learner writes, `// ANCHOR: name` … `// ANCHOR_END: name`,
//! and the code inside each that `assign` blanks and `grade` swaps.
//!
//! A region holds either whole functions (a method, an `impl` of an operator,
//! a struct with its methods) or statements inside one function (micrograd's
//! `tanh` after its signature, the update inside a training loop). Its
//! *slots* are what a learner writes: each function's body between its
//! braces, or the statements themselves. Signatures, doc comments and
//! structs stay, so the blanked copy still compiles.

use std::ops::Range;

use syn::spanned::Spanned;
use syn::visit::Visit;

/// How a region is blanked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Whole functions: each body is a slot.
    Functions,
    /// Statements inside a function: one slot. `tail` when nothing follows
    /// them in their block, so that they are the block's value.
    Statements { tail: bool },
}

/// One region of one source file.
#[derive(Clone, Debug)]
pub struct Region {
    /// The anchor's name.
    pub name: String,
    /// Lines (1-based) of the `ANCHOR` and `ANCHOR_END` markers.
    pub markers: (usize, usize),
    pub shape: Shape,
    /// Byte ranges a learner writes: bodies inside their braces, or the
    /// statements' whole lines.
    pub slots: Vec<Range<usize>>,
    /// The indentation of the `ANCHOR` line.
    pub indent: String,
    /// The region this one sits in, in the same file.
    pub parent: Option<String>,
}

/// The `ANCHOR` markers of a file: (name, start line, end line), 1-based, in
/// the order the regions start.
pub fn markers(source: &str) -> Result<Vec<(String, usize, usize)>, String> {
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut found = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim_start();
        if let Some(name) = trimmed.strip_prefix("// ANCHOR: ") {
            open.push((name.trim().to_string(), line_no));
        } else if let Some(name) = trimmed.strip_prefix("// ANCHOR_END: ") {
            let name = name.trim();
            let at = open.iter().rposition(|(n, _)| n == name).ok_or_else(|| {
                format!("line {line_no}: `ANCHOR_END: {name}` has no `ANCHOR: {name}` before it")
            })?;
            let (name, start) = open.remove(at);
            found.push((name, start, line_no));
        }
    }
    if let Some((name, line)) = open.first() {
        return Err(format!("line {line}: `ANCHOR: {name}` is never closed"));
    }
    found.sort_by_key(|(_, start, _)| *start);
    Ok(found)
}

/// Every region of a Rust source file, with its slots.
pub fn regions(source: &str) -> Result<Vec<Region>, String> {
    let found = markers(source)?;
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let file = syn::parse_file(source).map_err(|e| {
        let at = e.span().start();
        format!("line {}: {e}", at.line)
    })?;
    let mut spans = Spans::default();
    spans.visit_file(&file);
    let offsets = Offsets::new(source);

    let mut out = Vec::new();
    for (name, start, end) in &found {
        let inside = |first: usize, last: usize| first > *start && last < *end;
        // The outermost functions inside the markers.
        let fns: Vec<&FnSpan> = spans
            .fns
            .iter()
            .filter(|f| inside(f.lines.0, f.lines.1))
            .collect();
        let outermost: Vec<&FnSpan> = fns
            .iter()
            .copied()
            .filter(|f| {
                !fns.iter().any(|g| {
                    !std::ptr::eq(*f, *g) && g.lines.0 <= f.lines.0 && f.lines.1 <= g.lines.1
                })
            })
            .collect();
        let line_start = |line: usize| offsets.line_starts[line - 1];
        let (shape, slots) = if !outermost.is_empty() {
            let slots = outermost
                .iter()
                .map(|f| offsets.byte(f.body.0)..offsets.byte(f.body.1))
                .collect();
            (Shape::Functions, slots)
        } else {
            // Statements: the innermost block around the markers decides
            // whether they end it.
            let block = spans
                .blocks
                .iter()
                .filter(|b| b.lines.0 < *start && b.lines.1 > *end)
                .max_by_key(|b| b.lines.0)
                .ok_or_else(|| {
                    format!("line {start}: region `{name}` holds no function and sits in none")
                })?;
            let tail = !block.stmt_starts.iter().any(|&line| line > *end);
            (
                Shape::Statements { tail },
                // One slot: the statements' lines.
                std::iter::once(line_start(start + 1)..line_start(*end)).collect(),
            )
        };
        let marker_line = &source[line_start(*start)..];
        let indent: String = marker_line
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let parent = found
            .iter()
            .filter(|(n, s, e)| n != name && s < start && e > end)
            .max_by_key(|(_, s, _)| *s)
            .map(|(n, _, _)| n.clone());
        out.push(Region {
            name: name.clone(),
            markers: (*start, *end),
            shape,
            slots,
            indent,
            parent,
        });
    }
    Ok(out)
}

/// A function: its lines and its body's inside.
struct FnSpan {
    lines: (usize, usize),
    body: (proc_macro2::LineColumn, proc_macro2::LineColumn),
}

/// A block: the lines of its braces and the first line of each statement.
struct BlockSpan {
    lines: (usize, usize),
    stmt_starts: Vec<usize>,
}

#[derive(Default)]
struct Spans {
    fns: Vec<FnSpan>,
    blocks: Vec<BlockSpan>,
}

impl Spans {
    /// A function from its `fn` keyword to its closing brace: its doc
    /// comment may sit above the `ANCHOR` marker.
    fn add_fn(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let braces = block.brace_token.span;
        self.fns.push(FnSpan {
            lines: (sig.fn_token.span.start().line, braces.close().end().line),
            body: (braces.open().end(), braces.close().start()),
        });
    }
}

impl<'ast> Visit<'ast> for Spans {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add_fn(&f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.add_fn(&f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.add_fn(&f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
    fn visit_block(&mut self, b: &'ast syn::Block) {
        let braces = b.brace_token.span;
        self.blocks.push(BlockSpan {
            lines: (braces.open().start().line, braces.close().end().line),
            stmt_starts: b.stmts.iter().map(|s| s.span().start().line).collect(),
        });
        syn::visit::visit_block(self, b);
    }
}

/// Line and column (in characters, as proc-macro2 counts them) to bytes.
struct Offsets<'s> {
    source: &'s str,
    line_starts: Vec<usize>,
}

impl<'s> Offsets<'s> {
    fn new(source: &'s str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        Offsets {
            source,
            line_starts,
        }
    }

    fn byte(&self, at: proc_macro2::LineColumn) -> usize {
        let start = self.line_starts[at.line - 1];
        self.source[start..]
            .char_indices()
            .nth(at.column)
            .map_or(self.source.len(), |(i, _)| start + i)
    }
}

/// The 1-based line of a byte offset.
pub fn line_of(source: &str, byte: usize) -> usize {
    source[..byte].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "\
use std::ops::Add;

// ANCHOR: add
/// Adds.
impl Add for &V {
    type Output = V;
    fn add(self, other: &V) -> V {
        V(self.0 + other.0) // a '{' in a comment, and \"}\" in a string
    }
}
// ANCHOR_END: add

impl V {
    /// tanh.
    pub fn tanh(&self) -> V {
        // ANCHOR: tanh
        let t = self.0.tanh();
        V(t)
        // ANCHOR_END: tanh
    }

    pub fn train(&mut self) {
        for _ in 0..3 {
            // ANCHOR: step
            // The update.
            self.0 -= 0.1;
            // ANCHOR_END: step
            println!(\"{}\", self.0);
        }
    }
}
";

    #[test]
    fn functions_statements_and_tails_are_told_apart() {
        let found = regions(SOURCE).unwrap();
        let names: Vec<&str> = found.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["add", "tanh", "step"]);

        let add = &found[0];
        assert_eq!(add.shape, Shape::Functions);
        assert_eq!(add.slots.len(), 1);
        let body = &SOURCE[add.slots[0].clone()];
        assert_eq!(
            body.trim(),
            "V(self.0 + other.0) // a '{' in a comment, and \"}\" in a string"
        );

        let tanh = &found[1];
        assert_eq!(tanh.shape, Shape::Statements { tail: true });
        assert_eq!(
            &SOURCE[tanh.slots[0].clone()],
            "        let t = self.0.tanh();\n        V(t)\n"
        );
        assert_eq!(tanh.indent, "        ");

        let step = &found[2];
        assert_eq!(step.shape, Shape::Statements { tail: false });
        assert_eq!(
            &SOURCE[step.slots[0].clone()],
            "            // The update.\n            self.0 -= 0.1;\n"
        );
    }

    #[test]
    fn unbalanced_markers_and_syntax_errors_name_the_line() {
        let err = regions("// ANCHOR: a\nfn f() {}\n").unwrap_err();
        assert_eq!(err, "line 1: `ANCHOR: a` is never closed");
        let err = regions("fn f() {}\n// ANCHOR_END: a\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        let err = regions("// ANCHOR: a\nfn f() { let }\n// ANCHOR_END: a\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }

    #[test]
    fn nested_regions_know_their_parent() {
        let source = "fn f() {\n    // ANCHOR: outer\n    let x = 1;\n    // ANCHOR: inner\n    let y = x;\n    // ANCHOR_END: inner\n    let _ = y;\n    // ANCHOR_END: outer\n}\n";
        let found = regions(source).unwrap();
        assert_eq!(found[0].parent, None);
        assert_eq!(found[1].parent.as_deref(), Some("outer"));
        assert_eq!(found[0].shape, Shape::Statements { tail: true });
        assert_eq!(found[1].shape, Shape::Statements { tail: false });
    }
}
