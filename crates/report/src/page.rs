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
mod html;
mod pictures;
mod svg;
mod tables;

pub use html::{base64, escape};
pub use pictures::picture_files;
pub(crate) use pictures::visible;
pub use tables::{headline_rows, source, stage_heading, target_cells};

use html::{duration, finished, HEAD};
use pictures::loss_figure;
use tables::{headline, stages_table, summary, targets_table};

use crate::{write_atomic, RunReport};
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
        html.push_str(&pictures::pictures(folder.lecture, &folder.dir));
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
