//! `cargo xtask assign N --out DIR [--regions a,b,…]`: a student's copy of
//! lecture N.
//!
//! DIR is a standalone workspace: the lecture crate and the shared crates it
//! needs under `crates/`, the repository's `Cargo.lock`, the lecture page
//! under `lectures/`, a README with the data instructions, and
//! `.classroom/assignment.json`, which `grade` reads. Each chosen region's
//! code becomes `todo!("<region>: see lectures/NN-….md, <section>")`. Doc
//! comments and signatures stay as the task statement; for statements, their
//! leading comment lines stay. The shared crates stay filled in.
//!
//! The integration tests that compare against fixtures (PyTorch's tensors,
//! the notebook's numbers) are the hidden grading set: the copy keeps
//! `tests/fixtures/`, which the lecture binary reads for its targets, and
//! the tests that check behaviour without them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::regions::Shape;
use crate::{
    copy_dir, crate_regions, path_crates, read, section, write, CrateRegion, Lecture, NO_SECTION,
};

/// What `grade` needs to know about a student's copy.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Assignment {
    pub lecture: u32,
    #[serde(rename = "crate")]
    pub krate: String,
    pub page: PathBuf,
    /// The regions blanked, in the crate's order.
    pub regions: Vec<Assigned>,
    /// The repository commit the copy was made from.
    pub source_commit: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Assigned {
    pub id: String,
    /// Relative to the crate's folder.
    pub file: PathBuf,
    pub name: String,
    /// Where the page explains it.
    pub section: String,
}

/// Where `assign` writes the assignment's description inside DIR.
pub const MANIFEST: &str = ".classroom/assignment.json";

/// Chooses the regions to blank: `wanted` (ids or unambiguous names), or
/// all. A region inside a chosen one goes with it.
pub fn choose<'r>(
    all: &'r [CrateRegion],
    wanted: Option<&[String]>,
) -> Result<Vec<&'r CrateRegion>, String> {
    let mut chosen: Vec<&CrateRegion> = match wanted {
        None => all.iter().collect(),
        Some(names) => {
            let mut out = Vec::new();
            for name in names {
                let hits: Vec<&CrateRegion> = all
                    .iter()
                    .filter(|r| &r.id == name || &r.region.name == name)
                    .collect();
                match hits.len() {
                    0 => {
                        let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
                        return Err(format!(
                            "no region `{name}` in this crate; its regions are: {}",
                            ids.join(", ")
                        ));
                    }
                    1 => out.push(hits[0]),
                    _ => {
                        let ids: Vec<&str> = hits.iter().map(|r| r.id.as_str()).collect();
                        return Err(format!(
                            "`{name}` names {} regions; say which: {}",
                            hits.len(),
                            ids.join(", ")
                        ));
                    }
                }
            }
            out
        }
    };
    // A region nested in a chosen one is blanked with it.
    let snapshot = chosen.clone();
    chosen.retain(|r| {
        let mut parent = r.region.parent.clone();
        while let Some(p) = parent {
            let outer = all.iter().find(|o| o.file == r.file && o.region.name == p);
            if snapshot
                .iter()
                .any(|c| c.file == r.file && c.region.name == p)
            {
                return false;
            }
            parent = outer.and_then(|o| o.region.parent.clone());
        }
        true
    });
    Ok(chosen)
}

/// The `todo!` a blank holds: its region, and where the page explains it.
pub fn todo_call(id: &str, page: &Path, section: &str) -> String {
    let message = if section == NO_SECTION {
        format!("{id}: see {}", page.display())
    } else {
        format!("{id}: see {}, {section}", page.display())
    };
    // todo!'s one argument is a format string.
    let literal = format!("{:?}", message.replace('{', "{{").replace('}', "}}"));
    format!("todo!({literal})")
}

/// `source` with the given regions' slots blanked.
pub fn blank(source: &str, regions: &[(&CrateRegion, String)]) -> String {
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (r, todo) in regions {
        match r.region.shape {
            Shape::Functions => {
                for slot in &r.region.slots {
                    let line_start = source[..slot.end].rfind('\n').map_or(0, |i| i + 1);
                    let indent: String = source[line_start..]
                        .chars()
                        .take_while(|c| *c == ' ' || *c == '\t')
                        .collect();
                    edits.push((slot.clone(), format!("\n{indent}    {todo}\n{indent}")));
                }
            }
            Shape::Statements { tail } => {
                let slot = r.region.slots[0].clone();
                let kept: String = source[slot.clone()]
                    .lines()
                    .take_while(|l| {
                        let t = l.trim_start();
                        t.starts_with("//") && !t.starts_with("// ANCHOR")
                    })
                    .map(|l| format!("{l}\n"))
                    .collect();
                let end = if tail { "" } else { ";" };
                edits.push((slot, format!("{kept}{}{todo}{end}\n", r.region.indent)));
            }
        }
    }
    edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    let mut out = source.to_string();
    for (range, text) in edits {
        out.replace_range(range, &text);
    }
    out
}

/// What a blank leaves unused until it is filled in; `assign` allows it in
/// the student's lib.rs so that the build shows only what matters.
const ALLOW: &str = "// Added by `cargo xtask assign`: until a blank is filled in, its arguments\n\
// and the code after it go unused.\n\
#![allow(unused_variables, unused_mut, unused_imports, unreachable_code, dead_code)]\n";

/// Puts [`ALLOW`] after the crate's inner doc comment and attributes.
fn allow_unused(lib: &str) -> String {
    let mut at = 0;
    for line in lib.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("//!") || t.starts_with("#![") || t.is_empty() {
            at += line.len();
        } else {
            break;
        }
    }
    format!("{}{ALLOW}\n{}", &lib[..at], &lib[at..])
}

/// Integration tests that read `tests/fixtures/`: the hidden grading set.
pub fn is_hidden_test(crate_dir: &Path, rel: &Path) -> bool {
    let mut parts = rel.components();
    let in_tests = parts.next().is_some_and(|c| c.as_os_str() == "tests");
    let file = parts.next();
    let top_level_rs = parts.next().is_none() && rel.extension().is_some_and(|e| e == "rs");
    in_tests
        && file.is_some()
        && top_level_rs
        && read(&crate_dir.join(rel)).is_ok_and(|t| t.contains("fixtures"))
}

/// Writes the student's copy of `lecture` into `out`.
pub fn assign(
    root: &Path,
    lecture: &Lecture,
    out: &Path,
    wanted: Option<&[String]>,
) -> Result<Assignment, String> {
    if out.exists()
        && std::fs::read_dir(out)
            .map_err(|e| format!("{}: {e}", out.display()))?
            .next()
            .is_some()
    {
        return Err(format!(
            "{} is not empty; assign writes a fresh copy and never overwrites a student's work",
            out.display()
        ));
    }
    let krate = &lecture.krate;
    let crate_dir = root.join("crates").join(krate);
    let page_path = lecture.page(root)?;
    let page = read(&root.join(&page_path))?;
    let all = crate_regions(&crate_dir)?;
    let chosen = choose(&all, wanted)?;
    if chosen.is_empty() {
        return Err(format!("crates/{krate} has no region to blank"));
    }

    let crates = path_crates(root, krate)?;
    for name in &crates {
        let from = root.join("crates").join(name);
        let to = out.join("crates").join(name);
        if name == krate {
            copy_dir(&from, &to, &|rel| is_hidden_test(&from, rel))?;
        } else {
            copy_dir(&from, &to, &|_| false)?;
        }
    }

    // Blank the chosen regions, file by file.
    let mut assigned = Vec::new();
    let mut files: Vec<&PathBuf> = chosen.iter().map(|r| &r.file).collect();
    files.sort();
    files.dedup();
    for file in files {
        let source = read(&crate_dir.join(file))?;
        let in_file: Vec<(&CrateRegion, String)> = chosen
            .iter()
            .filter(|r| &r.file == file)
            .map(|r| {
                let section = section(&page, krate, r);
                let todo = todo_call(&r.id, &page_path, &section);
                assigned.push(Assigned {
                    id: r.id.clone(),
                    file: r.file.clone(),
                    name: r.region.name.clone(),
                    section,
                });
                (*r, todo)
            })
            .collect();
        write(
            &out.join("crates").join(krate).join(file),
            &blank(&source, &in_file),
        )?;
    }
    let lib = out.join("crates").join(krate).join("src/lib.rs");
    write(&lib, &allow_unused(&read(&lib)?))?;
    let order: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    assigned.sort_by_key(|a| order.iter().position(|o| *o == a.id));

    write(
        &out.join("Cargo.toml"),
        &crate::workspace_manifest(root, &["crates/*".to_string()], &crates, false)?,
    )?;
    write(&out.join("Cargo.lock"), &read(&root.join("Cargo.lock"))?)?;
    write(&out.join(".gitignore"), "/target\n/runs\n/datasets\n")?;
    write(&out.join(&page_path), &page)?;
    let assignment = Assignment {
        lecture: lecture.number,
        krate: krate.clone(),
        page: page_path,
        regions: assigned,
        source_commit: crate::source_commit(root),
    };
    write(&out.join("README.md"), &readme(&assignment, lecture))?;
    let json = serde_json::to_string_pretty(&assignment).map_err(|e| e.to_string())?;
    write(&out.join(MANIFEST), &format!("{json}\n"))?;
    Ok(assignment)
}

/// The student's README: what to fill in, the data, how to check.
fn readme(a: &Assignment, lecture: &Lecture) -> String {
    let mut s = format!(
        "# Lecture {}: `crates/{}`, your copy\n\n\
         Fill in each `todo!` below. Every blank sits between `// ANCHOR: name` and\n\
         `// ANCHOR_END: name`; keep those two lines, since grading finds your code by\n\
         them. The doc comment above a blank is the task, the signature stays as it is,\n\
         and [`{page}`]({page}) explains each region in the section named.\n\n\
         | region | file | where the page explains it |\n|---|---|---|\n",
        a.lecture,
        a.krate,
        page = a.page.display()
    );
    for r in &a.regions {
        s.push_str(&format!(
            "| `{}` | `crates/{}/{}` | {} |\n",
            r.id,
            a.krate,
            r.file.display(),
            r.section
        ));
    }
    s.push_str(&format!(
        "\n## Check your work\n\n\
         ```sh\n\
         cargo test --release -p {k}        # fails at each todo! not yet filled in\n\
         cargo run --release -p {k} -- lecture --out runs/lecture-{n:02}/quick --quick\n\
         ```\n\n\
         The second command trains the lecture's quick run and prints each target\n\
         (expected, got, PASS/FAIL). Grading runs further tests, hidden from this copy,\n\
         on each region by itself, with every other region filled in as the reference\n\
         wrote it.\n",
        k = a.krate,
        n = a.lecture
    ));
    let files: Vec<&data::DataFile> = lecture
        .data
        .iter()
        .filter_map(|name| data::FILES.iter().find(|f| f.name == name))
        .collect();
    s.push_str("\n## Data\n\n");
    if files.is_empty() {
        s.push_str("This lecture reads no data file.\n");
    } else {
        s.push_str(
            "The lecture reads these files from `datasets/` (or from the folder that\n\
             `ZTH_DATA` names). Download each one there and check its SHA-256:\n\n",
        );
        for f in files {
            s.push_str(&format!(
                "- `{}`: <{}>, SHA-256 `{}`\n",
                f.name, f.url, f.sha256
            ));
        }
        s.push_str(
            "\n```sh\nmkdir -p datasets && cd datasets\ncurl -LO <url>   # each file above\nsha256sum <file>\n```\n",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regions::regions;

    #[test]
    fn a_todo_escapes_braces_and_quotes() {
        let todo = todo_call("a/b", Path::new("lectures/07-gpt.md"), "\"{x} (00:01)\"");
        assert_eq!(
            todo,
            r#"todo!("a/b: see lectures/07-gpt.md, \"{{x}} (00:01)\"")"#
        );
        assert_eq!(
            todo_call("a", Path::new("p.md"), NO_SECTION),
            r#"todo!("a: see p.md")"#
        );
    }

    fn crate_region(source: &str, name: &str) -> CrateRegion {
        let region = regions(source)
            .unwrap()
            .into_iter()
            .find(|r| r.name == name)
            .unwrap();
        CrateRegion {
            id: name.to_string(),
            file: PathBuf::from("src/lib.rs"),
            region,
        }
    }

    const SOURCE: &str = "fn train() {\n\
        \x20   // ANCHOR: train\n\
        \x20   for _ in 0..3 {\n\
        \x20       // ANCHOR: step\n\
        \x20       // The update.\n\
        \x20       step();\n\
        \x20       // ANCHOR_END: step\n\
        \x20       log();\n\
        \x20   }\n\
        \x20   // ANCHOR_END: train\n\
        }\n";

    #[test]
    fn a_region_inside_a_chosen_one_goes_with_it() {
        let all = vec![crate_region(SOURCE, "train"), crate_region(SOURCE, "step")];
        let ids = |chosen: Vec<&CrateRegion>| -> Vec<String> {
            chosen.iter().map(|r| r.id.clone()).collect()
        };
        assert_eq!(ids(choose(&all, None).unwrap()), ["train"]);
        let step = ["step".to_string()];
        assert_eq!(ids(choose(&all, Some(&step)).unwrap()), ["step"]);
        let err = choose(&all, Some(&["nope".to_string()])).unwrap_err();
        assert!(err.contains("its regions are: train, step"), "{err}");
    }

    #[test]
    fn statements_keep_their_comment_and_end_with_a_semicolon_mid_block() {
        let step = crate_region(SOURCE, "step");
        let blanked = blank(SOURCE, &[(&step, "todo!(\"step\")".to_string())]);
        assert!(
            blanked.contains("// ANCHOR: step\n        // The update.\n        todo!(\"step\");\n        // ANCHOR_END: step\n        log();"),
            "{blanked}"
        );
        let train = crate_region(SOURCE, "train");
        let blanked = blank(SOURCE, &[(&train, "todo!(\"train\")".to_string())]);
        assert!(
            blanked.contains("// ANCHOR: train\n    todo!(\"train\")\n    // ANCHOR_END: train"),
            "{blanked}"
        );
    }
}
