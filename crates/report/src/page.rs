//! `runs/index.html`: every lecture's runs on one page, the way the notebooks
//! show their results inline.
//!
//! One self-contained file: inline CSS, inline SVG drawn here ([`svg`]), the
//! lectures' PNG plots as `data:` URLs, and no script, so it opens offline
//! from disk. For each lecture with a `report.json` under `runs/lecture-NN/`
//! (and `runs/lecture-NN/quick/`), it shows first the headline (each final
//! loss beside the lecture's and PyTorch's numbers, PASS or FAIL), then the
//! loss curves, the samples and the lecture's own pictures:
//! `neuron.svg` and the moons boundary (1), the embedding (3), the
//! activation, gradient and update-ratio plots (4), the loss blocks (6), the
//! attention map and the generated text (7), the token view (8), and the
//! curves of `log.txt` (9); then the stages with their timings (lecture 6's
//! "performance log"); and last, folded, the configuration and every target
//! with its verdict, stage by stage, each stage's source given once.
//!
//! [`browser`] loads the page in headless Chromium and checks what a reader
//! would see.

pub mod browser;
mod svg;

use crate::run::show;
use crate::{write_atomic, LossRow, RunReport, StageReport, Target};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The pastel colours the token view cycles through, one per token, as the
/// tiktokenizer app colours a text.
pub const TOKEN_COLOURS: [&str; 6] = [
    "rgb(187, 222, 251)",
    "rgb(200, 230, 201)",
    "rgb(255, 236, 179)",
    "rgb(248, 187, 208)",
    "rgb(209, 196, 233)",
    "rgb(255, 204, 188)",
];

/// One run folder read back: `runs/lecture-07` (a full run) or
/// `runs/lecture-07/quick`.
pub struct RunFolder {
    /// The lecture's number; 0 for a tool's run.
    pub lecture: u32,
    /// A tool's run: its folder's name under `runs/tools/` (`makemore-names`).
    pub tool: Option<String>,
    /// The folder.
    pub dir: PathBuf,
    /// A `--quick` run.
    pub quick: bool,
    /// Its `report.json`, or what is wrong with it.
    pub report: Result<RunReport, String>,
}

impl RunFolder {
    /// `lecture-07-full` or `lecture-07-quick`: the run's element id.
    pub fn id(&self) -> String {
        if let Some(tool) = &self.tool {
            return format!("tool-{tool}");
        }
        format!(
            "lecture-{:02}-{}",
            self.lecture,
            if self.quick { "quick" } else { "full" }
        )
    }

    /// The page section it is shown in: `lecture-07`, or `tools`.
    pub fn section(&self) -> String {
        match self.tool {
            Some(_) => "tools".to_string(),
            None => format!("lecture-{:02}", self.lecture),
        }
    }
}

/// Every run folder under `runs` with a `report.json`: by lecture, full runs
/// first, then the tools' runs (`runs/tools/<name>/`) by name.
pub fn collect(runs: &Path) -> Vec<RunFolder> {
    let mut folders = Vec::new();
    for lecture in course::LECTURES.iter().map(|l| l.number) {
        let full = runs.join(format!("lecture-{lecture:02}"));
        for (dir, quick) in [(full.clone(), false), (full.join("quick"), true)] {
            let file = dir.join("report.json");
            if !file.exists() {
                continue;
            }
            let report = read_report(&file);
            folders.push(RunFolder {
                lecture,
                tool: None,
                dir,
                quick,
                report,
            });
        }
    }
    let tools = runs.join("tools");
    let mut names: Vec<String> = std::fs::read_dir(&tools)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().join("report.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                // The name becomes an element id and a link: plain names only.
                .filter(|name| {
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        let dir = tools.join(&name);
        let report = read_report(&dir.join("report.json"));
        folders.push(RunFolder {
            lecture: 0,
            tool: Some(name),
            dir,
            quick: false,
            report,
        });
    }
    folders
}

/// Whether the page shows this run's pictures: a quick run beside a full one
/// is folded away without them.
pub fn shows_pictures(folder: &RunFolder, folders: &[RunFolder]) -> bool {
    !folder.quick
        || !folders
            .iter()
            .any(|f| f.lecture == folder.lecture && !f.quick)
}

/// Reads and parses a `report.json`, naming the file in any error.
pub fn read_report(file: &Path) -> Result<RunReport, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let report: RunReport = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a report.json: {e}", file.display()))?;
    if report.schema_version != crate::SCHEMA_VERSION {
        return Err(format!(
            "{}: schema version {}, this page reads {}",
            file.display(),
            report.schema_version,
            crate::SCHEMA_VERSION
        ));
    }
    Ok(report)
}

/// Builds `runs/index.html` from what is under `runs` and writes it atomically.
pub fn write_index(runs: &Path) -> Result<PathBuf, String> {
    let folders = collect(runs);
    let html = render(&folders);
    let path = runs.join("index.html");
    std::fs::create_dir_all(runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    write_atomic(&path, html.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The whole page.
pub fn render(folders: &[RunFolder]) -> String {
    let mut html = String::from(HEAD);
    html.push_str("<header><h1>Neural Networks: Zero to Hero, in Rust: the runs</h1>\n");
    writeln!(
        html,
        "<p class=\"meta\">Built {} from <code>runs/</code> by <code>cargo xtask report</code>.</p>",
        crate::utc_now()
    )
    .unwrap();
    html.push_str(&summary(folders));
    html.push_str("</header>\n<main>\n");
    if folders.is_empty() {
        html.push_str(
            "<p>No runs yet: <code>cargo xtask lecture 1</code> makes the first one.</p>\n",
        );
    }
    for course::Lecture {
        number: lecture,
        video,
        ..
    } in course::LECTURES
    {
        let lecture = *lecture;
        let mine: Vec<&RunFolder> = folders
            .iter()
            .filter(|f| f.lecture == lecture && f.tool.is_none())
            .collect();
        if mine.is_empty() {
            continue;
        }
        writeln!(
            html,
            "<section id=\"lecture-{lecture:02}\" class=\"lecture\">\n<h2>{lecture} · {}</h2>",
            escape(video)
        )
        .unwrap();
        for folder in mine {
            html.push_str(&run_article(folder, !shows_pictures(folder, folders)));
        }
        html.push_str("</section>\n");
    }
    let tools: Vec<&RunFolder> = folders.iter().filter(|f| f.tool.is_some()).collect();
    if !tools.is_empty() {
        html.push_str(
            "<section id=\"tools\" class=\"lecture\">\n<h2>Tool runs</h2>\n\
             <p class=\"meta\">Runs of the tools on a learner's own data (<code>makemore</code>, \
             <code>gpt train</code>, <code>gpt2 finetune</code>, <code>char-rnn train</code>), each mirrored here from its work dir.</p>\n",
        );
        for folder in tools {
            html.push_str(&run_article(folder, false));
        }
        html.push_str("</section>\n");
    }
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

/// The table at the top: one row per run, and the failed targets, if any.
fn summary(folders: &[RunFolder]) -> String {
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

/// One run: its header, targets, stages, loss curves, and (unless folded) pictures.
fn run_article(folder: &RunFolder, folded: bool) -> String {
    let mode = match &folder.tool {
        Some(tool) => escape(tool),
        None if folder.quick => "quick run (--quick)".to_string(),
        None => "full run".to_string(),
    };
    let id = folder.id();
    let mut html = String::new();
    let report = match &folder.report {
        Ok(r) => r,
        Err(e) => {
            writeln!(
                html,
                "<article id=\"{id}\" class=\"run\"><h3>{mode}</h3><p class=\"error\">{}</p></article>",
                escape(e)
            )
            .unwrap();
            return html;
        }
    };
    let failed = report
        .stages
        .iter()
        .flat_map(|s| &s.targets)
        .filter(|t| t.gates() && !t.pass)
        .count();
    let verdict = if failed == 0 {
        "<span class=\"badge pass\">all targets pass</span>".to_string()
    } else {
        format!("<span class=\"badge fail\">{failed} target(s) FAILED</span>")
    };
    let (open, close) = if folded {
        (
            format!("<details id=\"{id}\" class=\"run quick\"><summary>{mode} {verdict}</summary>"),
            "</details>\n",
        )
    } else {
        (
            format!("<article id=\"{id}\" class=\"run\"><h3>{mode} {verdict}</h3>"),
            "</article>\n",
        )
    };
    html.push_str(&open);
    // What a learner looks for first: the final losses against the lecture's
    // and PyTorch's, then the curves, pictures and samples; the details last.
    html.push_str(&headline(report));
    html.push_str(&loss_figure(&folder.dir));
    if !folded {
        html.push_str(&pictures(folder.lecture, &folder.dir));
    }
    html.push_str(&stages_table(report));
    writeln!(
        html,
        "<p class=\"meta\">crate <code>{}</code> · seed {} · wall time {} · finished {} · <code>{}</code></p>",
        escape(&report.crate_name),
        report.seed,
        duration(report.wall_seconds),
        finished(report),
        escape(&folder.dir.display().to_string())
    )
    .unwrap();
    writeln!(
        html,
        "<details><summary>configuration</summary><pre>{}</pre></details>",
        escape(&serde_json::to_string_pretty(&report.config).unwrap_or_default())
    )
    .unwrap();
    html.push_str(&targets_table(report, failed));
    html.push_str(close);
    html
}

/// The run's headline: each stage's final losses beside the lecture's and
/// PyTorch's numbers for them, with the verdict.
fn headline(report: &RunReport) -> String {
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
fn verdict_row(open: &str, cells: &[String]) -> String {
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
fn headline_expected(t: &Target) -> String {
    match (t.expected.as_f64(), t.tolerance) {
        (None, _) => show(&t.expected),
        (Some(x), Some(tol)) => format!("{x:.4} ± {}", tolerance_text(tol)),
        (Some(x), None) => format!("{x:.4}"),
    }
}

/// A tolerance as the tables show it: "0.03", "1e-4".
fn tolerance_text(tol: f64) -> String {
    if tol > 0.0 && tol < 1e-3 {
        format!("{tol:e}")
    } else {
        format!("{tol}")
    }
}

/// Every target, stage by stage: a heading row with the stage's source, then
/// each target's name, expected, measured and verdict. Folded, unless a
/// target failed.
fn targets_table(report: &RunReport, failed: usize) -> String {
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
const REFERENCES: [&str; 16] = [
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
fn stages_table(report: &RunReport) -> String {
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

/// The loss curves of `loss.csv`: per stage, train as a line and val as dots.
fn loss_figure(dir: &Path) -> String {
    let path = dir.join("loss.csv");
    if !path.exists() {
        return String::new();
    }
    let rows = match read_loss_csv(&path) {
        Ok(rows) => rows,
        Err(e) => return format!("<p class=\"error\">{}</p>\n", escape(&e)),
    };
    let mut stages: Vec<&str> = Vec::new();
    for r in &rows {
        if !stages.contains(&r.stage.as_str()) {
            stages.push(&r.stage);
        }
    }
    let mut series = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let mine = rows.iter().filter(|r| r.stage == *stage);
        series.push(svg::Series {
            label: format!("{stage} train"),
            points: mine.clone().map(|r| (r.step as f64, r.train)).collect(),
            dots: false,
            colour: i,
        });
        let val: Vec<(f64, f64)> = mine
            .filter_map(|r| r.val.map(|v| (r.step as f64, v)))
            .collect();
        if !val.is_empty() {
            series.push(svg::Series {
                label: format!("{stage} val"),
                points: val,
                dots: true,
                colour: i,
            });
        }
    }
    figure(
        &svg::line_chart(&series, "step", "loss", wide_range(&series)),
        "Loss (loss.csv)",
    )
}

/// Whether the largest value is more than ten times the smallest: then a log
/// axis shows the whole fall.
fn wide_range(series: &[svg::Series]) -> bool {
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite() && *y > 0.0);
    let (lo, hi) = ys.fold((f64::MAX, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    hi > 10.0 * lo
}

/// Reads `loss.csv` as [`crate::Run`] writes it.
pub fn read_loss_csv(path: &Path) -> Result<Vec<LossRow>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    // The writer ends every row with a newline: without one, the last row was
    // cut, perhaps inside a number ("3." from "3.25").
    if !bytes.ends_with(b"\n") {
        return Err(format!(
            "{}: not a loss.csv: it ends in the middle of a row (was it truncated?)",
            path.display()
        ));
    }
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    reader
        .deserialize()
        .collect::<Result<Vec<LossRow>, _>>()
        .map_err(|e| format!("{}: not a loss.csv: {e}", path.display()))
}

/// The lecture's own pictures and texts found in its run folder.
fn pictures(lecture: u32, dir: &Path) -> String {
    let mut html = String::new();
    // The drawing goes in as an image, so that nothing in the file can reach
    // the page (a script, a style), and the browser check sees it decode.
    let neuron = dir.join("neuron.svg");
    if neuron.exists() {
        html.push_str(&match std::fs::read_to_string(&neuron) {
            // At its own size, in a box that scrolls: scaled down, its text is unreadable.
            Ok(svg) if svg.contains("<svg") => format!(
                "<figure class=\"scroll\"><img class=\"drawing\" alt=\"neuron.svg\" src=\"data:image/svg+xml;base64,{}\">\
                 <figcaption>The neuron's expression graph (draw_dot)</figcaption></figure>\n",
                base64(svg.as_bytes())
            ),
            Ok(_) => error_note(&neuron, "not an SVG drawing (no <svg> element)"),
            Err(e) => error_note(&neuron, &e.to_string()),
        });
    }
    let pngs: Vec<PathBuf> = picture_files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .collect();
    if !pngs.is_empty() {
        html.push_str("<div class=\"gallery\">\n");
        for png in &pngs {
            let name = png.file_name().unwrap_or_default().to_string_lossy();
            match std::fs::read(png) {
                Ok(bytes) if bytes.starts_with(b"\x89PNG\r\n\x1a\n") => writeln!(
                    html,
                    "<figure><img alt=\"{0}\" src=\"data:image/png;base64,{1}\"><figcaption>{0}</figcaption></figure>",
                    escape(&name),
                    base64(&bytes)
                )
                .unwrap(),
                Ok(_) => html.push_str(&error_note(png, "not a PNG file")),
                Err(e) => html.push_str(&error_note(png, &e.to_string())),
            }
        }
        html.push_str("</div>\n");
    }
    let attention = dir.join("attention.json");
    if attention.exists() {
        html.push_str(&match attention_map(&attention) {
            Ok(fig) => fig,
            Err(e) => error_note(&attention, &e),
        });
    }
    let tokens = dir.join("tokens.json");
    if tokens.exists() {
        html.push_str(&match token_view(&tokens) {
            Ok(view) => view,
            Err(e) => error_note(&tokens, &e),
        });
    }
    for (name, caption) in [
        ("samples.txt", "Samples"),
        (
            "more.txt",
            "Generated text (more.txt, the first 1,500 characters)",
        ),
    ] {
        let path = dir.join(name);
        if !path.exists() {
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let text: String = text.chars().take(1500).collect();
                writeln!(
                    html,
                    "<h4>{caption}</h4><pre class=\"samples\">{}</pre>",
                    escape(&text)
                )
                .unwrap();
            }
            Err(e) => html.push_str(&error_note(&path, &e.to_string())),
        }
    }
    if lecture == 9 {
        html.push_str(&nanogpt_log(dir));
    }
    html
}

/// The images [`pictures`] puts on the page for this folder: its PNGs but
/// `loss.png`, and `neuron.svg`. The browser check expects each to decode.
pub fn picture_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .filter(|p| {
                    let name = p.file_name().unwrap_or_default().to_string_lossy();
                    (name.ends_with(".png") && name != "loss.png") || name == "neuron.svg"
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Lecture 7's attention map from `attention.json`.
fn attention_map(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let map: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let tokens: Vec<String> = map["tokens"]
        .as_array()
        .ok_or("no \"tokens\" list")?
        .iter()
        .map(|t| {
            t.as_str()
                .map(str::to_string)
                .ok_or("a token is not a string")
        })
        .collect::<Result<_, _>>()?;
    let weights: Vec<Vec<f64>> = map["weights"]
        .as_array()
        .ok_or("no \"weights\" rows")?
        .iter()
        .map(|row| {
            row.as_array()
                .ok_or("a row is not a list")?
                .iter()
                .map(|w| w.as_f64().ok_or("a weight is not a number"))
                .collect::<Result<Vec<f64>, _>>()
        })
        .collect::<Result<_, _>>()?;
    if weights.len() != tokens.len() || weights.iter().any(|r| r.len() != tokens.len()) {
        return Err(format!(
            "{} tokens but the weights are not {0}×{0}",
            tokens.len()
        ));
    }
    let caption = format!(
        "Attention of block {}, head {}, on the first {} characters of the sample: row i is what position i takes from positions 0..=i",
        map["layer"], map["head"], tokens.len()
    );
    Ok(figure(&svg::heatmap(&tokens, &weights), &caption))
}

/// Lecture 8's token view from `tokens.json`: each text as every tokenizer
/// splits it, one colour per token, with the ids below.
fn token_view(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let view: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let texts = view["texts"].as_array().ok_or("no \"texts\" list")?;
    let mut html = String::from("<h4>Token view (tiktokenizer)</h4>\n<div class=\"token-view\">\n");
    for entry in texts {
        let text = entry["text"].as_str().ok_or("a text is not a string")?;
        writeln!(
            html,
            "<div class=\"token-text\" data-text=\"{}\"><p class=\"quote\">{}</p><div class=\"tokenizers\">",
            escape(text),
            escape(&visible(text))
        )
        .unwrap();
        for tok in entry["tokenizers"]
            .as_array()
            .ok_or("no \"tokenizers\" list")?
        {
            let name = tok["name"].as_str().ok_or("a tokenizer has no name")?;
            let ids = tok["ids"].as_array().ok_or("no \"ids\"")?;
            let pieces = tok["pieces"].as_array().ok_or("no \"pieces\"")?;
            if ids.len() != pieces.len() {
                return Err(format!(
                    "{name}: {} ids but {} pieces",
                    ids.len(),
                    pieces.len()
                ));
            }
            // No line break after <p>: the pieces keep their whitespace (pre-wrap).
            write!(
                html,
                "<div class=\"tokenizer\" data-name=\"{}\"><h5>{} · {} tokens</h5><p class=\"pieces\">",
                escape(name),
                escape(name),
                ids.len()
            )
            .unwrap();
            for (j, (id, piece)) in ids.iter().zip(pieces).enumerate() {
                let id = id.as_u64().ok_or("an id is not a number")?;
                let bytes: Vec<u8> = piece
                    .as_array()
                    .ok_or("a piece is not a list of bytes")?
                    .iter()
                    .map(|b| {
                        b.as_u64()
                            .and_then(|b| u8::try_from(b).ok())
                            .ok_or("a byte is not 0..=255")
                    })
                    .collect::<Result<_, _>>()?;
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                write!(
                    html,
                    "<span class=\"tok\" data-id=\"{id}\" data-bytes=\"{hex}\" title=\"{id}\" style=\"background:{}\">{}</span>",
                    TOKEN_COLOURS[j % TOKEN_COLOURS.len()],
                    escape(&visible(&String::from_utf8_lossy(&bytes)))
                )
                .unwrap();
            }
            let id_list: Vec<String> = ids.iter().map(|v| v.to_string()).collect();
            writeln!(
                html,
                "</p><p class=\"ids\">{}</p></div>",
                id_list.join(", ")
            )
            .unwrap();
        }
        html.push_str("</div></div>\n");
    }
    html.push_str("</div>\n");
    Ok(html)
}

/// Whitespace made visible as the tiktokenizer app shows it: newlines as ↵
/// (followed by a real break), tabs as →.
pub(crate) fn visible(text: &str) -> String {
    text.replace('\n', "↵\n").replace('\t', "→")
}

/// Lecture 9's `log.txt` (build-nanogpt's format: `step val|train|hella value`)
/// from the run's stage folders: the loss curves and, where the run evaluated
/// it, HellaSwag's accuracy.
fn nanogpt_log(dir: &Path) -> String {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path().join("log.txt")))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    let mut html = String::new();
    for log in logs {
        let stage = log
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(&log) else {
            html.push_str(&error_note(&log, "cannot read"));
            continue;
        };
        let mut curves: Vec<(&str, Vec<(f64, f64)>)> =
            vec![("train", vec![]), ("val", vec![]), ("hella", vec![])];
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(step), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(step), Ok(value)) = (step.parse::<f64>(), value.parse::<f64>()) else {
                continue;
            };
            if let Some(curve) = curves.iter_mut().find(|c| c.0 == kind) {
                curve.1.push((step, value));
            }
        }
        let [train, val, hella] = [0, 1, 2].map(|i| std::mem::take(&mut curves[i].1));
        let series = vec![
            svg::Series {
                label: "train".into(),
                points: train,
                dots: false,
                colour: 0,
            },
            svg::Series {
                label: "val".into(),
                points: val,
                dots: true,
                colour: 1,
            },
        ];
        html.push_str(&figure(
            &svg::line_chart(&series, "step", "loss", false),
            &format!("{stage}/log.txt: loss, as build-nanogpt logs it"),
        ));
        if hella.is_empty() {
            writeln!(
                html,
                "<p class=\"note\">HellaSwag: not evaluated in this run ({stage}/log.txt has no <code>hella</code> lines).</p>"
            )
            .unwrap();
        } else {
            let series = [svg::Series {
                label: "HellaSwag acc_norm".into(),
                points: hella,
                dots: false,
                colour: 2,
            }];
            html.push_str(&figure(
                &svg::line_chart(&series, "step", "accuracy", false),
                &format!("{stage}/log.txt: HellaSwag"),
            ));
        }
    }
    html
}

/// When the run finished, as "2026-12-01 10:58 UTC".
fn finished(report: &RunReport) -> String {
    match report.finished_at.as_deref() {
        Some(t) => match (t.get(..10), t.get(11..16)) {
            (Some(day), Some(time)) => format!("{} {} UTC", escape(day), escape(time)),
            _ => escape(t),
        },
        None => "(time not recorded)".to_string(),
    }
}

fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
        escape(caption)
    )
}

fn error_note(path: &Path, problem: &str) -> String {
    format!(
        "<p class=\"error\">{}: {}</p>\n",
        escape(&path.display().to_string()),
        escape(problem)
    )
}

/// Seconds as "0.9 s", "5 min 12 s" or "1 h 02 min".
fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else if seconds < 3600.0 {
        format!(
            "{} min {:02} s",
            (seconds / 60.0) as u64,
            seconds as u64 % 60
        )
    } else {
        format!(
            "{} h {:02} min",
            (seconds / 3600.0) as u64,
            (seconds / 60.0) as u64 % 60
        )
    }
}

/// Escapes text for HTML and SVG, in element content and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 with padding (RFC 4648), for `data:` URLs.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const HEAD: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Zero to Hero in Rust: runs</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1100px; padding: 0 12px 48px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 2px solid #ddd; font-size: 1.25em; }
h3 { font-size: 1.1em; } h4 { margin: 1.2em 0 0.4em; } h5 { margin: 0.6em 0 0.2em; font-size: 0.95em; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 8px; }
pre.samples { max-height: 24em; overflow-y: auto; }
.meta, .note { color: #555; font-size: 0.9em; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
td { overflow-wrap: break-word; }
th { background: #f0f0f0; }
.pass { background: #d8f5d8; } .fail { background: #ffd6d6; font-weight: bold; } .info { color: #666; }
.badge { font-size: 0.8em; padding: 2px 8px; border-radius: 8px; margin-left: 8px; white-space: nowrap; }
.failures { background: #ffd6d6; border: 2px solid #c00; padding: 8px 12px; margin: 12px 0; overflow-wrap: anywhere; }
.error { color: #a00; overflow-wrap: anywhere; }
figure { margin: 12px 0; max-width: 100%; }
figure svg, figure img { max-width: 100%; height: auto; display: block; }
figure img.drawing { background: #fff; max-width: none; }
figure svg.chart { width: 720px; }
figure svg.heatmap { width: 600px; }
figcaption { color: #555; font-size: 0.85em; }
.gallery { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(320px, 100%), 1fr)); gap: 8px; }
.gallery figure { margin: 0; min-width: 0; }
details.run { margin: 12px 0; padding: 4px 8px; border: 1px solid #ddd; }
details.run > summary, details.targets > summary { cursor: pointer; font-weight: bold; }
.headline { margin: 8px 0 12px; } .headline p { margin: 0; }
.headline table { width: 100%; table-layout: fixed; font-size: 0.9em; }
.headline th, .headline td { padding: 3px 4px; overflow-wrap: anywhere; }
.headline th:nth-child(1) { width: 30%; } .headline th:nth-child(2) { width: 16%; }
.headline th:nth-child(3), .headline th:nth-child(4) { width: 20%; } .headline th:nth-child(5) { width: 14%; }
@media (max-width: 600px) { .headline table { font-size: 0.78em; } }
tr.stage th { background: #e8eef8; font-weight: normal; overflow-wrap: anywhere; }
.token-view { display: flex; flex-direction: column; gap: 12px; }
.tokenizers { display: grid; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); gap: 8px; }
.tokenizer { border: 1px solid #ddd; padding: 4px 8px; min-width: 0; }
.pieces { font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.8; margin: 0; }
.tok { border-radius: 3px; padding: 1px 0; }
.ids { font-size: 0.75em; color: #555; overflow-wrap: anywhere; }
.quote { font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
</style>
</head>
<body>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_test_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

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

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
    }

    #[test]
    fn durations_read_as_a_person_would_say_them() {
        assert_eq!(duration(0.94), "0.9 s");
        assert_eq!(duration(312.0), "5 min 12 s");
        assert_eq!(duration(3725.0), "1 h 02 min");
    }
}
