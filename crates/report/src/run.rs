//! A lecture run: its stages, their losses and targets, and the files it writes.

use crate::plot;
use crate::progress::Progress;
use crate::target::Target;
use crate::write_atomic;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// The version of `report.json`'s layout. Readers check it.
pub const SCHEMA_VERSION: u32 = 1;

/// The flags every lecture binary takes; `cargo xtask lecture N` passes them on.
#[derive(clap::Args, Clone, Debug)]
pub struct RunArgs {
    /// Folder for report.json, loss.csv and the plots (created if missing).
    #[arg(long, alias = "out-dir")]
    pub out: PathBuf,
    /// The shortened CI run: exact init checks and a loss bound after a few steps.
    #[arg(long)]
    pub quick: bool,
    /// Seed for the run (default: the lecture's own seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Train for this many steps instead of the lecture's count; targets that
    /// need the full run are then reported as `info`.
    #[arg(long)]
    pub steps: Option<usize>,
}

/// One row of `loss.csv`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LossRow {
    /// The optimisation step (0-based).
    pub step: usize,
    /// The stage the row belongs to.
    pub stage: String,
    /// Training loss at this step (a minibatch or a full-split value).
    pub train: f64,
    /// Validation loss, where the run evaluated it at this step.
    pub val: Option<f64>,
    /// The learning rate used for this step.
    pub lr: Option<f64>,
}

/// One stage as written to `report.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageReport {
    /// The stage's name, e.g. "mlp" or "counting".
    pub name: String,
    /// Optimisation steps run (0 for stages without training).
    pub steps: usize,
    /// Wall-clock seconds of the stage.
    pub wall_seconds: f64,
    /// Milliseconds per step, when the stage has steps.
    pub ms_per_step: Option<f64>,
    /// Final losses by split ("train", "val", "test").
    #[serde(rename = "final")]
    pub final_losses: BTreeMap<String, f64>,
    /// Where the stage's expected values come from (a notebook cell, a
    /// repository file, the fixture script that ran PyTorch), unless a
    /// target's name says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The stage's targets.
    pub targets: Vec<Target>,
}

/// The whole `report.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReport {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The lecture number; 0 for a tool's run.
    pub lecture: u32,
    /// The tool that ran, for a run of a tool rather than a lecture
    /// (`makemore`): the page lists it under "Tool runs".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The crate that ran.
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// "full" or "quick".
    pub mode: String,
    /// The seed the run used.
    pub seed: u64,
    /// The run's configuration, as the lecture crate describes it.
    pub config: Value,
    /// Wall-clock seconds of the whole run.
    pub wall_seconds: f64,
    /// When the report was written, UTC, as `2026-12-01T10:58:37Z` (absent in
    /// reports from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The stages in the order they ran.
    pub stages: Vec<StageReport>,
}

/// Which training losses a loop writes to `loss.csv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogEvery {
    /// The loss of step 0, every n-th step, and the last step.
    Step(usize),
    /// The mean loss of each block of n steps, at the block's last step: the
    /// lectures' smoothed curves (`torch.tensor(lossi).view(-1, n).mean(1)`).
    Mean(usize),
    /// No per-step rows: the loop logs its evaluations with [`Stage::log`], as
    /// the scripts of lectures 7 and 9 print `estimate_loss()`.
    Evaluations,
}

/// The bookkeeping of a training loop in progress (see [`Stage::observe`]).
struct Training {
    label: String,
    steps: usize,
    log: LogEvery,
    progress: Progress,
    started: Instant,
    block_sum: f64,
    block_len: usize,
}

/// A stage being run: its clock, loss rows and targets.
pub struct Stage {
    name: String,
    steps: usize,
    started: Instant,
    wall_seconds: Option<f64>,
    final_losses: BTreeMap<String, f64>,
    targets: Vec<Target>,
    source: Option<String>,
    rows: Vec<LossRow>,
    training: Option<Training>,
    silent: bool,
}

impl Stage {
    /// A stage outside any run: what tests and benchmarks hand a lecture's
    /// training loop. Its rows and targets go nowhere.
    pub fn standalone(name: &str) -> Stage {
        Stage {
            name: name.to_string(),
            steps: 0,
            started: Instant::now(),
            wall_seconds: None,
            final_losses: BTreeMap::new(),
            targets: Vec::new(),
            source: None,
            rows: Vec::new(),
            training: None,
            silent: false,
        }
    }

    /// This stage without its progress report (a data-parallel run's ranks
    /// other than 0, a loop run on another thread beside the lecture's).
    pub fn silent(mut self) -> Stage {
        self.silent = true;
        self
    }

    /// Whether this stage keeps quiet: no progress report, and loops that
    /// print as the lecture does print nothing (see [`Stage::silent`]).
    pub fn is_silent(&self) -> bool {
        self.silent
    }

    /// Takes over the loss rows of a stage that ran elsewhere (a training
    /// loop on another thread, given a [`Stage::standalone`]), as this
    /// stage's rows, after the ones it has.
    pub fn append_rows_of(&mut self, other: Stage) {
        self.rows.extend(other.rows.into_iter().map(|row| LossRow {
            stage: self.name.clone(),
            ..row
        }));
    }

    /// Starts a training loop of `steps` steps, called `label` in the progress
    /// report and in errors: its progress report and its clock.
    pub fn start_training(&mut self, label: &str, steps: usize, log: LogEvery) {
        self.training = Some(Training {
            label: label.to_string(),
            steps,
            log,
            progress: match self.silent {
                true => Progress::silent(steps, label),
                false => Progress::new(steps, label),
            },
            started: Instant::now(),
            block_sum: 0.0,
            block_len: 0,
        });
    }

    /// What every training loop does after a step, besides the step itself: stop
    /// on a loss that is not finite (naming the loop and the step), report
    /// progress, and write the loss to `loss.csv` as [`LogEvery`] says.
    pub fn observe(
        &mut self,
        step: usize,
        loss: impl Into<f64>,
        lr: impl Into<f64>,
    ) -> Result<(), String> {
        let (loss, lr): (f64, f64) = (loss.into(), lr.into());
        let training = self
            .training
            .as_mut()
            .expect("Stage::start_training before Stage::observe");
        if !loss.is_finite() {
            return Err(format!(
                "{}: the loss is {loss} at step {step}; stopping",
                training.label
            ));
        }
        training.progress.set(step, loss);
        let last = step + 1 == training.steps;
        let row = match training.log {
            LogEvery::Step(n) => (step.is_multiple_of(n) || last).then_some(loss),
            LogEvery::Mean(n) => {
                training.block_sum += loss;
                training.block_len += 1;
                (training.block_len == n || last).then(|| {
                    let mean = training.block_sum / training.block_len as f64;
                    training.block_sum = 0.0;
                    training.block_len = 0;
                    mean
                })
            }
            LogEvery::Evaluations => None,
        };
        if let Some(train) = row {
            self.log(step, train, None, Some(lr));
        }
        Ok(())
    }

    /// Ends the training loop: clears the progress bar, records the steps, and
    /// returns the loop's own milliseconds per step (the stage's `ms_per_step`
    /// also counts what comes after, such as the evaluation).
    pub fn finish_training(&mut self) -> f64 {
        let training = self
            .training
            .take()
            .expect("Stage::start_training before Stage::finish_training");
        training.progress.finish();
        self.steps = training.steps;
        training.started.elapsed().as_secs_f64() * 1e3 / training.steps.max(1) as f64
    }

    /// Appends a row to the loss log.
    pub fn log(&mut self, step: usize, train: f64, val: Option<f64>, lr: Option<f64>) {
        self.rows.push(LossRow {
            step,
            stage: self.name.clone(),
            train,
            val,
            lr,
        });
    }

    /// Names where this stage's expected values come from, for the report
    /// and the runs page: `"makemore_part1_bigrams.ipynb cell[30]; PyTorch
    /// via tests/fixtures/bigram.py"`. A target whose name ends in its own
    /// source, "(PyTorch, same draws)", keeps that.
    pub fn set_source(&mut self, source: &str) {
        self.source = Some(source.to_string());
    }

    /// Records how many optimisation steps the stage ran.
    pub fn set_steps(&mut self, steps: usize) {
        self.steps = steps;
    }

    /// Records a final loss on a split.
    pub fn set_final(&mut self, split: &str, loss: f64) {
        self.final_losses.insert(split.to_string(), loss);
    }

    /// Adds a target and prints its verdict at once.
    pub fn target(&mut self, target: Target) {
        println!("{}", format_target_row(&self.name, &target));
        self.targets.push(target);
    }

    /// Stops the stage's clock (the next stage or `finish` does it too).
    pub fn end(&mut self) {
        if self.wall_seconds.is_none() {
            self.wall_seconds = Some(self.started.elapsed().as_secs_f64());
        }
    }

    /// The targets so far.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    fn report(&self) -> StageReport {
        let wall = self
            .wall_seconds
            .unwrap_or_else(|| self.started.elapsed().as_secs_f64());
        StageReport {
            name: self.name.clone(),
            steps: self.steps,
            wall_seconds: wall,
            ms_per_step: (self.steps > 0).then(|| wall * 1000.0 / self.steps as f64),
            final_losses: self.final_losses.clone(),
            source: self.source.clone(),
            targets: self.targets.clone(),
        }
    }
}

/// A lecture run. Create it first, add stages as they run, and `finish` it.
pub struct Run {
    lecture: u32,
    crate_name: String,
    args: RunArgs,
    seed: u64,
    config: Value,
    started: Instant,
    stages: Vec<Stage>,
}

impl Run {
    /// Starts a run. `default_seed` is the lecture's own seed, used unless
    /// `--seed` is given. Fails, before any work, if `--out` cannot be
    /// created and written.
    pub fn new(
        lecture: u32,
        crate_name: &str,
        args: &RunArgs,
        default_seed: u64,
        config: Value,
    ) -> Result<Run, String> {
        crate::check_out_dir("--out", &args.out)?;
        let seed = args.seed.unwrap_or(default_seed);
        let mode = if args.quick { "quick" } else { "full" };
        println!("lecture {lecture} ({crate_name}), {mode} run, seed {seed}");
        Ok(Run {
            lecture,
            crate_name: crate_name.to_string(),
            args: args.clone(),
            seed,
            config,
            started: Instant::now(),
            stages: Vec::new(),
        })
    }

    /// The seed in force.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether this is the shortened CI run.
    pub fn quick(&self) -> bool {
        self.args.quick
    }

    /// `--steps`, if given.
    pub fn steps_override(&self) -> Option<usize> {
        self.args.steps
    }

    /// The output folder.
    pub fn out_dir(&self) -> &Path {
        &self.args.out
    }

    /// Replaces the configuration recorded in the report.
    pub fn set_config(&mut self, config: Value) {
        self.config = config;
    }

    /// Ends the current stage and starts a new one.
    pub fn stage(&mut self, name: &str) -> &mut Stage {
        if let Some(last) = self.stages.last_mut() {
            last.end();
        }
        println!("\n== {name}");
        self.stages.push(Stage::standalone(name));
        self.stages.last_mut().expect("just pushed")
    }

    /// Writes a file into the output folder atomically and returns its path.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.args.out.join(name);
        write_atomic(&path, bytes)?;
        Ok(path)
    }

    /// The report as it stands.
    pub fn report(&self) -> RunReport {
        RunReport {
            schema_version: SCHEMA_VERSION,
            lecture: self.lecture,
            tool: None,
            crate_name: self.crate_name.clone(),
            mode: if self.args.quick { "quick" } else { "full" }.to_string(),
            seed: self.seed,
            config: self.config.clone(),
            wall_seconds: self.started.elapsed().as_secs_f64(),
            finished_at: Some(utc_now()),
            stages: self.stages.iter().map(Stage::report).collect(),
        }
    }

    /// Writes report.json, loss.csv and the plots, prints the targets table, and
    /// returns exit code 1 if a gating target failed (2 if the files could not be written).
    pub fn finish(mut self) -> ExitCode {
        if let Some(last) = self.stages.last_mut() {
            last.end();
        }
        let report = self.report();
        let rows: Vec<&LossRow> = self.stages.iter().flat_map(|s| &s.rows).collect();
        if let Err(e) = self.write_outputs(&report, &rows) {
            eprintln!(
                "error: could not write the run's files under {}: {e}",
                self.args.out.display()
            );
            return ExitCode::from(2);
        }
        println!("\n{}", targets_table(&report));
        let failed: Vec<String> = report
            .stages
            .iter()
            .flat_map(|s| {
                s.targets
                    .iter()
                    .filter(|t| t.gates() && !t.pass)
                    .map(move |t| format!("{}: {}", s.name, t.name))
            })
            .collect();
        println!("wrote {}", self.args.out.join("report.json").display());
        if failed.is_empty() {
            println!("all targets passed ({:.1} s)", report.wall_seconds);
            ExitCode::SUCCESS
        } else {
            println!("{} target(s) FAILED: {}", failed.len(), failed.join("; "));
            ExitCode::from(1)
        }
    }

    fn write_outputs(&self, report: &RunReport, rows: &[&LossRow]) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(report).map_err(std::io::Error::other)?;
        self.write_file("report.json", &json)?;
        if !rows.is_empty() {
            self.write_file("loss.csv", &loss_csv(rows)?)?;
            let title = format!("lecture {} ({}): loss", self.lecture, self.crate_name);
            let png = self.args.out.join("loss.png");
            let svg = self.args.out.join("loss.svg");
            plot::loss_curves(&title, rows, &png, &svg).map_err(std::io::Error::other)?;
        }
        Ok(())
    }
}

/// The current time in UTC as RFC 3339 (`2026-12-01T10:58:37Z`).
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_from_unix(secs)
}

/// Seconds since 1970 as an RFC 3339 UTC time, by Howard Hinnant's
/// `civil_from_days` (the proleptic Gregorian calendar, no time zone database).
fn utc_from_unix(secs: u64) -> String {
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], from March
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rest / 3600, rest / 60 % 60, rest % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// The bytes of `loss.csv` for `rows`: a header line, then one line a row.
pub fn loss_csv(rows: &[&LossRow]) -> std::io::Result<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(["step", "stage", "train", "val", "lr"])?;
    let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for row in rows {
        writer.write_record([
            row.step.to_string(),
            row.stage.clone(),
            row.train.to_string(),
            opt(row.val),
            opt(row.lr),
        ])?;
    }
    writer
        .into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
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

pub(crate) fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        // A list (all_within): its ends and its length, so the table stays readable.
        Value::Array(xs) if xs.len() > 3 => {
            format!(
                "[{}, {}, …, {}] ({})",
                xs[0],
                xs[1],
                xs[xs.len() - 1],
                xs.len()
            )
        }
        other => other.to_string(),
    }
}

fn format_target_row(stage: &str, t: &Target) -> String {
    let expected = match t.tolerance {
        Some(tol) => format!("{} ±{}", show(&t.expected), tol),
        None if t.kind == crate::Kind::Below => format!("< {}", show(&t.expected)),
        None => show(&t.expected),
    };
    let verdict = match (t.gates(), t.pass) {
        (true, true) => "PASS",
        (true, false) => "FAIL",
        (false, true) => "info",
        (false, false) => "info (miss)",
    };
    format!(
        "{stage:<14} {:<34} {:>24} {:>24}  {verdict}",
        t.name,
        expected,
        show(&t.measured)
    )
}

/// The table printed at the end of a run: stage, target, expected, got, verdict.
pub fn targets_table(report: &RunReport) -> String {
    let mut out = format!(
        "{:<14} {:<34} {:>24} {:>24}  result\n",
        "stage", "target", "expected", "got"
    );
    for stage in &report.stages {
        for t in &stage.targets {
            out.push_str(&format_target_row(&stage.name, t));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path) -> RunArgs {
        RunArgs {
            out: dir.to_path_buf(),
            quick: true,
            seed: None,
            steps: None,
        }
    }

    #[test]
    fn utc_times_match_known_dates() {
        // `date -u -d @SECS +%FT%TZ` for each.
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_from_unix(1_796_122_717), "2026-12-01T10:58:37Z");
        assert_eq!(utc_from_unix(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn observe_logs_as_asked_and_stops_on_nan_naming_the_step() {
        let dir = std::env::temp_dir().join(format!("report-observe-{}", std::process::id()));
        let mut run = Run::new(3, "makemore-mlp", &args(&dir), 42, serde_json::json!({})).unwrap();
        let stage = run.stage("every");
        stage.start_training("every", 5, LogEvery::Step(2));
        for step in 0..5 {
            stage.observe(step, step as f32, 0.1f32).unwrap();
        }
        assert!(stage.finish_training() >= 0.0);
        let logged: Vec<(usize, f64)> = stage.rows.iter().map(|r| (r.step, r.train)).collect();
        assert_eq!(logged, [(0, 0.0), (2, 2.0), (4, 4.0)]);
        assert_eq!(stage.steps, 5);

        let stage = run.stage("mean");
        stage.start_training("mean", 5, LogEvery::Mean(2));
        for step in 0..5 {
            stage.observe(step, step as f32, 0.1f32).unwrap();
        }
        stage.finish_training();
        let logged: Vec<(usize, f64)> = stage.rows.iter().map(|r| (r.step, r.train)).collect();
        assert_eq!(logged, [(1, 0.5), (3, 2.5), (4, 4.0)]);

        let stage = run.stage("nan");
        stage.start_training("nan", 5, LogEvery::Step(1));
        stage.observe(0, 1.0, 0.1).unwrap();
        let msg = stage.observe(1, f64::NAN, 0.1).unwrap_err();
        assert_eq!(msg, "nan: the loss is NaN at step 1; stopping");
        let msg = stage.observe(2, f32::INFINITY, 0.1f32).unwrap_err();
        assert!(msg.contains("inf at step 2"), "{msg}");
    }

    #[test]
    fn writes_the_schema_and_fails_on_a_missed_target() {
        let dir = std::env::temp_dir().join(format!("report-run-{}", std::process::id()));
        let mut run = Run::new(
            2,
            "makemore-bigram",
            &args(&dir),
            2147483647,
            serde_json::json!({"lr": 50}),
        )
        .unwrap();
        let stage = run.stage("neural");
        for step in 0..3 {
            stage.log(step, 3.0 - step as f64 * 0.1, None, Some(50.0));
        }
        stage.set_steps(3);
        stage.set_final("train", 2.8);
        stage.target(Target::exact("step-0 loss", 3.0, 1e-5, 3.0));
        stage.target(Target::band("final loss", 2.48, 0.01, 2.8));
        assert_eq!(run.finish(), ExitCode::from(1));

        let report: Value =
            serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
        assert_eq!(report["schema_version"], 1);
        assert_eq!(report["crate"], "makemore-bigram");
        assert_eq!(report["mode"], "quick");
        assert_eq!(report["seed"], 2147483647u64);
        assert_eq!(report["stages"][0]["final"]["train"], 2.8);
        assert_eq!(report["stages"][0]["targets"][1]["pass"], false);
        let csv = std::fs::read_to_string(dir.join("loss.csv")).unwrap();
        assert_eq!(csv.lines().next(), Some("step,stage,train,val,lr"));
        assert_eq!(csv.lines().count(), 4);
        assert!(std::fs::metadata(dir.join("loss.png")).unwrap().len() > 1000);
        assert!(std::fs::read_to_string(dir.join("loss.svg"))
            .unwrap()
            .contains("<svg"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
