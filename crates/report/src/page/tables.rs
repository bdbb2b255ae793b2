//! The page's tables: the summary of every run, each run's headline (its
//! final losses beside the lecture's and PyTorch's), its targets and its
//! stages.

use super::html::{duration, escape, finished};
use super::RunFolder;
use crate::run::show;
use crate::{RunReport, StageReport, Target};
use std::fmt::Write;

/// The table at the top: one row per run, and the failed targets, if any.
pub(super) fn summary(folders: &[RunFolder]) -> String {
    let mut html = String::from(
        "<div class=\"scroll\"><table class=\"summary\"><thead><tr><th>lecture / tool</th><th>run</th>\
         <th>targets passed</th><th>wall time</th><th>finished</th></tr></thead><tbody>\n",
    );
    let mut failures = Vec::new();
    for f in folders {
        let label = match (&f.tool, f.quick) {
            (Some(_), _) => "tool",
            (None, true) => "quick",
            (None, false) => "full",
        };
        // What the first column names and links to: the lecture, or the tool run.
        let (place, section) = match &f.tool {
            Some(tool) => (tool.clone(), f.section()),
            None => (f.lecture.to_string(), f.section()),
        };
        match &f.report {
            Ok(r) => {
                let gated: Vec<(&str, &Target)> = r
                    .stages
                    .iter()
                    .flat_map(|s| s.targets.iter().map(move |t| (s.name.as_str(), t)))
                    .filter(|(_, t)| t.gates())
                    .collect();
                let passed = gated.iter().filter(|(_, t)| t.pass).count();
                for (stage, t) in gated.iter().filter(|(_, t)| !t.pass) {
                    failures.push(format!(
                        "<li><a href=\"#{}\">{} ({label})</a>: {}: {}</li>",
                        f.id(),
                        match &f.tool {
                            Some(tool) => escape(tool),
                            None => format!("lecture {}", f.lecture),
                        },
                        escape(stage),
                        escape(&t.name)
                    ));
                }
                let class = if passed == gated.len() {
                    "pass"
                } else {
                    "fail"
                };
                writeln!(
                    html,
                    "<tr><td><a href=\"#{section}\">{}</a></td><td><a href=\"#{}\">{label}</a></td>\
                     <td class=\"{class}\">{passed}/{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&place),
                    f.id(),
                    gated.len(),
                    duration(r.wall_seconds),
                    finished(r)
                )
                .unwrap();
            }
            Err(e) => {
                failures.push(format!("<li>{}</li>", escape(e)));
                writeln!(
                    html,
                    "<tr><td>{}</td><td>{label}</td><td class=\"fail\" colspan=\"3\">unreadable report</td></tr>",
                    escape(&place)
                )
                .unwrap();
            }
        }
    }
    html.push_str("</tbody></table></div>\n");
    if !failures.is_empty() {
        writeln!(
            html,
            "<div class=\"failures\" id=\"failures\"><strong>{} target(s) failed or a report is unreadable:</strong><ul>{}</ul></div>",
            failures.len(),
            failures.join("")
        )
        .unwrap();
    }
    html
}

/// The run's headline: each stage's final losses beside the lecture's and
/// PyTorch's numbers for them, with the verdict.
pub(super) fn headline(report: &RunReport) -> String {
    let rows = headline_rows(report);
    if rows.is_empty() {
        let gated = report
            .stages
            .iter()
            .flat_map(|s| &s.targets)
            .filter(|t| t.gates());
        let (passed, total) = gated.fold((0, 0), |(p, n), t| (p + usize::from(t.pass), n + 1));
        return format!(
            "<div class=\"headline\"><p>No losses in this run: {passed} of {total} gated targets pass.</p></div>\n"
        );
    }
    let mut html = String::from(
        "<div class=\"headline\"><table><thead><tr><th>final loss</th><th>ours</th>\
         <th>lecture</th><th>PyTorch</th><th>result</th></tr></thead><tbody>\n",
    );
    for cells in rows {
        html.push_str(&verdict_row("<tr>", &cells));
    }
    html.push_str("</tbody></table></div>\n");
    html
}

/// A table row of `cells`, the last one the verdict, coloured by it.
pub(super) fn verdict_row(open: &str, cells: &[String]) -> String {
    let (verdict, rest) = cells.split_last().expect("a verdict cell");
    let class = match verdict.as_str() {
        "PASS" => "pass",
        "FAIL" => "fail",
        _ => "info",
    };
    let mut html = open.to_string();
    for cell in rest {
        write!(html, "<td>{}</td>", escape(cell)).unwrap();
    }
    writeln!(html, "<td class=\"result {class}\">{verdict}</td></tr>").unwrap();
    html
}

/// The headline's rows, one per final loss (`mlp · val`): ours (with any
/// bound it must stay below), the lecture's and PyTorch's numbers for it (the
/// gated targets that measured exactly this loss, split by whether their name
/// credits PyTorch), and PASS, FAIL, or "–" where nothing judges it. The
/// browser check expects exactly these.
pub fn headline_rows(report: &RunReport) -> Vec<[String; 5]> {
    let mut rows = Vec::new();
    for stage in &report.stages {
        for (split, &loss) in &stage.final_losses {
            let judges: Vec<&Target> = stage
                .targets
                .iter()
                .filter(|t| t.gates() && t.measured.as_f64() == Some(loss))
                .collect();
            // A bound on our own loss (a quick run's sanity limit) is no
            // one's number: it goes beside ours, "0.0110 (< 0.0500)".
            let bounds: String = judges
                .iter()
                .filter(|t| t.kind == crate::Kind::Below)
                .filter_map(|t| t.expected.as_f64())
                .map(|bound| format!(" (< {bound:.4})"))
                .collect();
            let column = |pytorch: bool| {
                let shown: Vec<String> = judges
                    .iter()
                    .filter(|t| t.kind != crate::Kind::Below)
                    .filter(|t| source(&t.name, None).contains("PyTorch") == pytorch)
                    .map(|t| headline_expected(t))
                    .collect();
                if shown.is_empty() {
                    "–".to_string()
                } else {
                    shown.join("; ")
                }
            };
            let verdict = match (judges.is_empty(), judges.iter().all(|t| t.pass)) {
                (true, _) => "–",
                (false, true) => "PASS",
                (false, false) => "FAIL",
            };
            rows.push([
                format!("{} · {split}", stage.name),
                format!("{loss:.4}{bounds}"),
                column(false),
                column(true),
                verdict.to_string(),
            ]);
        }
    }
    rows
}

/// A target's expected value as the headline shows it, to 4 decimals as the
/// notebooks print losses: "2.1260 ± 0.03".
pub(super) fn headline_expected(t: &Target) -> String {
    match (t.expected.as_f64(), t.tolerance) {
        (None, _) => show(&t.expected),
        (Some(x), Some(tol)) => format!("{x:.4} ± {}", tolerance_text(tol)),
        (Some(x), None) => format!("{x:.4}"),
    }
}

/// A tolerance as the tables show it: "0.03", "1e-4".
pub(super) fn tolerance_text(tol: f64) -> String {
    if tol > 0.0 && tol < 1e-3 {
        format!("{tol:e}")
    } else {
        format!("{tol}")
    }
}

/// Every target, stage by stage: a heading row with the stage's source, then
/// each target's name, expected, measured and verdict. Folded, unless a
/// target failed.
pub(super) fn targets_table(report: &RunReport, failed: usize) -> String {
    let count: usize = report.stages.iter().map(|s| s.targets.len()).sum();
    let state = if failed == 0 {
        "all gated pass".to_string()
    } else {
        format!("{failed} FAILED")
    };
    let mut html = format!(
        "<details class=\"targets\"{}><summary>Targets ({count}, {state})</summary>\
         <div class=\"scroll\"><table class=\"targets\"><thead><tr>\
         <th>target</th><th>expected</th><th>measured</th><th>result</th></tr></thead>\n",
        if failed == 0 { "" } else { " open" }
    );
    for stage in report.stages.iter().filter(|s| !s.targets.is_empty()) {
        writeln!(
            html,
            "<tbody><tr class=\"stage\"><th colspan=\"4\">{}</th></tr>",
            escape(&stage_heading(stage))
        )
        .unwrap();
        for t in &stage.targets {
            html.push_str(&verdict_row("<tr class=\"target\">", &target_cells(t)));
        }
        html.push_str("</tbody>\n");
    }
    html.push_str("</table></div></details>\n");
    html
}

/// A stage's heading row in the targets table: its name and, once, its source.
pub fn stage_heading(stage: &StageReport) -> String {
    match &stage.source {
        Some(source) => format!("{} — {source}", stage.name),
        None => stage.name.clone(),
    }
}

/// The text of a target's row: name, expected (with the tolerance), measured,
/// and the verdict (PASS, FAIL, or info for a target that does not gate). The
/// name carries the target's own source where it has one ("val loss
/// (lecture)"); the stage's heading row carries the rest. The browser check
/// expects exactly these.
pub fn target_cells(t: &Target) -> [String; 4] {
    let verdict = match (t.gates(), t.pass) {
        (false, _) => "info",
        (true, true) => "PASS",
        (true, false) => "FAIL",
    };
    let expected = match t.tolerance {
        Some(tol) => format!("{} ± {}", show(&t.expected), tolerance_text(tol)),
        None => show(&t.expected),
    };
    [
        t.name.clone(),
        expected,
        show(&t.measured),
        verdict.to_string(),
    ]
}

/// Words that name a reference in a target's name.
pub(super) const REFERENCES: [&str; 16] = [
    "PyTorch",
    "lecture",
    "video",
    "commit",
    "derived",
    "Colab",
    "notebook",
    "cell[",
    "Karpathy",
    "tiktoken",
    "minbpe",
    "transformers",
    "nanoGPT",
    "build-nanogpt",
    "llm.c",
    "pip micrograd",
];

/// A target's source: the parenthesis that ends its name when it names a
/// reference ("val loss (PyTorch, same draws)" -> "PyTorch, same draws"),
/// else a reference named in it ("step-0 loss vs PyTorch" -> "PyTorch"),
/// else its stage's source; "-" where there is none.
pub fn source<'a>(name: &'a str, stage_source: Option<&'a str>) -> &'a str {
    let names_one = |text: &str| REFERENCES.iter().find(|r| text.contains(*r)).copied();
    let parenthesis = name
        .strip_suffix(')')
        .and_then(|rest| rest.rfind(" (").map(|i| &rest[i + 2..]));
    match parenthesis {
        Some(p) if names_one(p).is_some() => p,
        _ => names_one(name).or(stage_source).unwrap_or("-"),
    }
}

/// The stages with their steps, time per step and final losses: lecture 6's
/// "performance log", and every other lecture's.
pub(super) fn stages_table(report: &RunReport) -> String {
    let mut splits: Vec<&str> = Vec::new();
    for s in &report.stages {
        for split in s.final_losses.keys() {
            if !splits.contains(&split.as_str()) {
                splits.push(split);
            }
        }
    }
    let title = if report.lecture == 6 {
        "Performance log"
    } else {
        "Stages"
    };
    let mut html = format!(
        "<h4>{title}</h4><div class=\"scroll\"><table class=\"stages\"><thead><tr><th>stage</th>\
         <th>steps</th><th>ms/step</th><th>wall</th>"
    );
    for split in &splits {
        write!(html, "<th>{} loss</th>", escape(split)).unwrap();
    }
    html.push_str("</tr></thead><tbody>\n");
    for s in &report.stages {
        write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            escape(&s.name),
            s.steps,
            s.ms_per_step.map_or("-".into(), |ms| format!("{ms:.3}")),
            duration(s.wall_seconds)
        )
        .unwrap();
        for split in &splits {
            let loss = s.final_losses.get(*split);
            write!(
                html,
                "<td>{}</td>",
                loss.map_or("-".into(), |l| format!("{l:.4}"))
            )
            .unwrap();
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody></table></div>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_come_from_the_name_else_from_the_stage() {
        let notebook = "makemore_part1_bigrams.ipynb cell[30]";
        let stage = Some(notebook);
        assert_eq!(source("val loss (lecture)", stage), "lecture");
        assert_eq!(
            source("val loss after 3000 iterations (PyTorch, same draws)", None),
            "PyTorch, same draws"
        );
        assert_eq!(source("cpu: step-0 loss vs PyTorch", stage), "PyTorch");
        // A parenthesis that names no reference is not a source.
        assert_eq!(source("GPT-2 124M parameters (tied head)", stage), notebook);
        assert_eq!(source("encode(\"hii there\")", None), "-");
    }
}
