//! `cargo xtask pages [--check]`: the lecture pages quote the code they explain.
//!
//! A page marks an excerpt with two HTML comments, which GitHub does not show:
//!
//! ````text
//! <!-- code: crates/wavenet/src/lib.rs:model -->
//! [`crates/wavenet/src/lib.rs`, lines 120–140](../crates/wavenet/src/lib.rs#L120-L140)
//!
//! ```rust
//! … the lines between `// ANCHOR: model` and `// ANCHOR_END: model` …
//! ```
//! <!-- end code -->
//! ````
//!
//! Everything between the two comments belongs to this task: `pages` rewrites
//! it from the source (the link to the file and its lines, then the region,
//! dedented, without any nested anchor lines), and `pages --check` fails,
//! naming the page and the region, when what the page shows differs. So the
//! pages read on GitHub as they are, and never drift from the code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::{workspace_root, TaskResult};

#[derive(clap::Args)]
pub struct Args {
    /// Only check that every excerpt equals its source; change nothing.
    #[arg(long)]
    check: bool,
}

const START: &str = "<!-- code: ";
const END: &str = "<!-- end code -->";

pub fn run(args: Args) -> TaskResult {
    let root = workspace_root();
    let mut stale = Vec::new();
    let mut excerpts = 0;
    for page in pages(&root)? {
        let text = read(&page)?;
        let (fresh, n) = refresh(&text, &page, &|path| read(&root.join(path)))?;
        excerpts += n;
        if fresh != text {
            let shown = page
                .strip_prefix(&root)
                .unwrap_or(&page)
                .display()
                .to_string();
            if args.check {
                stale.push(shown);
            } else {
                // Temp file + rename, so an interrupted run never leaves half a page.
                let tmp = page.with_extension("md.tmp");
                std::fs::write(&tmp, &fresh)
                    .and_then(|()| std::fs::rename(&tmp, &page))
                    .map_err(|e| format!("cannot write {shown}: {e}"))?;
                println!("updated {shown}");
            }
        }
    }
    if stale.is_empty() {
        println!("{excerpts} excerpts in lectures/*.md match their sources");
        Ok(ExitCode::SUCCESS)
    } else {
        Err(format!(
            "these pages quote code that has changed since: {}; run `cargo xtask pages`",
            stale.join(", ")
        ))
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// `lectures/*.md`, sorted.
fn pages(root: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = root.join("lectures");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    Ok(pages)
}

/// The page with every excerpt rewritten from its source, and how many there are.
/// `source` reads a file given relative to the workspace root.
fn refresh(
    page: &str,
    page_path: &Path,
    source: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(String, usize), String> {
    let name = page_path.display();
    let mut out = String::with_capacity(page.len());
    let mut lines = page.split_inclusive('\n').enumerate();
    let mut count = 0;
    while let Some((number, line)) = lines.next() {
        out.push_str(line);
        let Some(spec) = line.trim().strip_prefix(START) else {
            continue;
        };
        let spec = spec.strip_suffix("-->").map(str::trim).ok_or_else(|| {
            format!(
                "{name}:{}: `{START}` must end with `-->` on the same line",
                number + 1
            )
        })?;
        let (path, anchor) = spec
            .rsplit_once(':')
            .ok_or_else(|| format!("{name}:{}: expected `{START}PATH:ANCHOR -->`", number + 1))?;
        // Skip the old excerpt, up to and including the end marker.
        loop {
            match lines.next() {
                Some((_, l)) if l.trim() == END => break,
                Some(_) => {}
                None => {
                    return Err(format!(
                        "{name}:{}: `{START}{spec} -->` has no `{END}` after it",
                        number + 1
                    ))
                }
            }
        }
        let text = source(path)?;
        let region = region(&text, anchor)
            .ok_or_else(|| format!("{name}:{}: {path} has no anchor `{anchor}`", number + 1))?;
        let up = "../"; // pages live in lectures/
        let lang = if path.ends_with(".rs") { "rust" } else { "" };
        writeln!(
            out,
            "[`{path}`, lines {}–{}]({up}{path}#L{}-L{})\n\n```{lang}\n{}```\n{END}",
            region.first, region.last, region.first, region.last, region.body
        )
        .expect("writing to a String");
        count += 1;
    }
    Ok((out, count))
}

/// The lines of one anchor region.
#[derive(Debug, PartialEq)]
struct Region {
    /// First and last line (1-based) of the region's body in the file.
    first: usize,
    last: usize,
    /// The body, dedented, without nested anchor lines, ending with a newline.
    body: String,
}

/// The region between `// ANCHOR: name` and `// ANCHOR_END: name`.
fn region(text: &str, name: &str) -> Option<Region> {
    let is_marker = |line: &str, kind: &str| {
        line.trim()
            .strip_prefix("// ")
            .and_then(|l| l.strip_prefix(kind))
            .is_some_and(|n| n.trim() == name)
    };
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| is_marker(l, "ANCHOR:"))?;
    let end = start
        + lines[start..]
            .iter()
            .position(|l| is_marker(l, "ANCHOR_END:"))?;
    let body: Vec<&str> = lines[start + 1..end]
        .iter()
        .copied()
        .filter(|l| !l.trim_start().starts_with("// ANCHOR"))
        .collect();
    let indent = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for line in &body {
        out.push_str(line.get(indent..).unwrap_or("").trim_end());
        out.push('\n');
    }
    Some(Region {
        first: start + 2,
        last: end,
        body: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "fn other() {}\n\
        impl Thing {\n    // ANCHOR: step\n    /// One step.\n    fn step(&mut self) {\n\
        \x20       // ANCHOR: inner\n        self.x += 1;\n        // ANCHOR_END: inner\n    }\n\
        \x20   // ANCHOR_END: step\n}\n";

    fn files(path: &str) -> Result<String, String> {
        match path {
            "crates/demo/src/lib.rs" => Ok(SOURCE.to_string()),
            other => Err(format!("no file {other}")),
        }
    }

    fn page(excerpt: &str) -> String {
        format!(
            "# Lecture\n\nText before.\n\n<!-- code: crates/demo/src/lib.rs:step -->\n{excerpt}\
             <!-- end code -->\n\nText after.\n"
        )
    }

    #[test]
    fn a_region_is_dedented_without_its_nested_anchors() {
        let r = region(SOURCE, "step").unwrap();
        assert_eq!(
            r.body,
            "/// One step.\nfn step(&mut self) {\n    self.x += 1;\n}\n"
        );
        assert_eq!((r.first, r.last), (4, 9));
        assert_eq!(region(SOURCE, "inner").unwrap().body, "self.x += 1;\n");
        assert_eq!(region(SOURCE, "missing"), None);
    }

    #[test]
    fn refresh_writes_the_excerpt_and_a_link_and_is_stable() {
        let path = Path::new("lectures/01-demo.md");
        let (fresh, n) = refresh(&page(""), path, &files).unwrap();
        assert_eq!(n, 1);
        assert!(fresh.contains(
            "[`crates/demo/src/lib.rs`, lines 4–9](../crates/demo/src/lib.rs#L4-L9)\n\n```rust\n\
             /// One step.\nfn step(&mut self) {\n    self.x += 1;\n}\n```\n<!-- end code -->\n\nText after.\n"
        ), "{fresh}");
        assert_eq!(refresh(&fresh, path, &files).unwrap().0, fresh);
    }

    #[test]
    fn an_excerpt_that_drifts_from_its_source_is_found() {
        let path = Path::new("lectures/01-demo.md");
        let (fresh, _) = refresh(&page(""), path, &files).unwrap();
        let edited = fresh.replace("self.x += 1;", "self.x += 2;");
        assert_ne!(refresh(&edited, path, &files).unwrap().0, edited);
    }

    #[test]
    fn bad_markers_and_missing_anchors_are_named() {
        let path = Path::new("lectures/01-demo.md");
        let unclosed = "<!-- code: crates/demo/src/lib.rs:step -->\nno end\n";
        let msg = refresh(unclosed, path, &files).unwrap_err();
        assert!(
            msg.contains("lectures/01-demo.md:1") && msg.contains("no `<!-- end code -->`"),
            "{msg}"
        );
        let missing = page("").replace(":step", ":nope");
        let msg = refresh(&missing, path, &files).unwrap_err();
        assert!(msg.contains("has no anchor `nope`"), "{msg}");
        let file = page("").replace("demo/src", "gone/src");
        assert!(refresh(&file, path, &files)
            .unwrap_err()
            .contains("no file"));
    }

    #[test]
    fn the_lecture_pages_match_their_sources() {
        let root = workspace_root();
        for page in pages(&root).unwrap() {
            let text = read(&page).unwrap();
            let (fresh, _) = refresh(&text, &page, &|p| read(&root.join(p))).unwrap();
            assert!(
                fresh == text,
                "{} quotes code that has changed: run `cargo xtask pages`",
                page.display()
            );
        }
    }
}
