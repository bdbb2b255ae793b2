//! `cargo xtask grade DIR [--json FILE]`: grade a student's copy, region by
//! region.
//!
//! The grader never builds the student's crate as it stands: one blank would
//! then fail every test that passes through it. It copies the reference
//! crate, with all its tests (the hidden ones too), into
//! `target/classroom/grade-<crate>/` and puts each region's code there twice:
//!
//! ```text
//! if crate::__classroom::student(3) { /* the student's code */ } else { /* the reference's */ }
//! ```
//!
//! One build then grades every region. `ZTH_GRADE_REGION=<id>` runs the
//! student's code in that region and the reference everywhere else;
//! `ZTH_GRADE_REGION=all` runs the student's whole crate, for the lecture's
//! `--quick` targets. A region whose code doesn't compile is reported as
//! such and built from the reference, so the others are still graded.
//!
//! Which tests grade a region? Those that reach it: every test runs once on
//! the reference with `ZTH_GRADE_TRACE` set, and the switch records each
//! region it passes through (a test's child processes too). Each test runs
//! in its own process with a time limit, so a panic or an endless loop is a
//! row, never a crashed grader.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod build;
mod copy;
mod coverage;
mod run;
mod table;

use build::*;
use copy::*;
use coverage::*;
pub use run::panic_message;
use run::*;
pub use table::table;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::assign::{Assignment, MANIFEST};
use crate::regions::{line_of, Shape};
use crate::{copy_dir, crate_regions, read, write, CrateRegion};

/// The grade of a whole copy: a row per region, and the quick run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Grade {
    pub lecture: u32,
    #[serde(rename = "crate")]
    pub krate: String,
    pub regions: Vec<RegionGrade>,
    pub quick: Option<QuickRun>,
    /// Regions passed, of those assigned.
    pub passed: usize,
    pub assigned: usize,
}

/// One region's row.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegionGrade {
    pub id: String,
    pub status: Status,
    pub tests_passed: usize,
    pub tests_failed: usize,
    /// The first failing test and what it said, or why nothing ran.
    pub first_failure: Option<String>,
    pub seconds: f64,
    pub tests: Vec<TestRun>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    DoesNotCompile,
    /// The markers are gone, the file doesn't parse, or the region's shape
    /// changed (a function added or removed).
    NotGraded,
    /// No test reaches the region: a gap in the grading set.
    NoTest,
}

/// One test of one region.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TestRun {
    pub test: String,
    pub outcome: Outcome,
    pub seconds: f64,
    pub message: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    TimedOut,
    /// Killed by a signal (a stack overflow, an abort).
    Crashed,
}

/// The lecture's `--quick` run on the student's whole crate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QuickRun {
    /// Finished with every target passing.
    pub passed: bool,
    pub seconds: f64,
    /// Why it stopped, when it did not finish.
    pub error: Option<String>,
    pub targets: Vec<QuickTarget>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QuickTarget {
    pub stage: String,
    pub name: String,
    pub expected: serde_json::Value,
    pub measured: serde_json::Value,
    pub pass: bool,
    /// Whether it decides the run's verdict (`info` targets don't).
    pub gated: bool,
}

/// How to grade.
#[derive(Clone, Debug)]
pub struct Options {
    /// The repository: the reference crates and the shared `target/`.
    pub root: PathBuf,
    /// The data folder (`ZTH_DATA`) the tests and the quick run read.
    pub data: PathBuf,
    /// Skip the quick run.
    pub no_quick: bool,
    /// A test's time limit: this many times its time on the reference, plus
    /// `timeout_floor`.
    pub timeout_factor: f64,
    pub timeout_floor: Duration,
    /// Print a line per test as it runs.
    pub verbose: bool,
}

impl Options {
    pub fn new(root: PathBuf, data: PathBuf) -> Self {
        Options {
            root,
            data,
            no_quick: false,
            timeout_factor: 5.0,
            timeout_floor: Duration::from_secs(30),
            verbose: false,
        }
    }
}

/// The student's code for a region, or why there is none.
enum Submitted {
    Code(Vec<String>),
    Problem(Status, String),
}

/// Grades the student's copy in `student`.
pub fn grade(opts: &Options, student: &Path) -> Result<Grade, String> {
    let manifest = student.join(MANIFEST);
    let assignment: Assignment = serde_json::from_str(&read(&manifest)?)
        .map_err(|e| format!("{}: not an assignment: {e}", manifest.display()))?;
    let krate = assignment.krate.clone();
    let reference_dir = opts.root.join("crates").join(&krate);
    let all = crate_regions(&reference_dir)?;
    let mut assigned: Vec<&CrateRegion> = Vec::new();
    for a in &assignment.regions {
        let r = all.iter().find(|r| r.id == a.id).ok_or_else(|| {
            format!(
                "{}: region `{}` is not in crates/{krate} any more; was the copy made from another version?",
                manifest.display(),
                a.id
            )
        })?;
        if assigned
            .iter()
            .any(|a| a.file == r.file && a.region.name == r.region.name)
        {
            return Err(format!(
                "{}: region `{}` is listed twice",
                manifest.display(),
                a.id
            ));
        }
        assigned.push(r);
    }
    for r in &assigned {
        if let Some(parent) = &r.region.parent {
            if assigned
                .iter()
                .any(|a| a.file == r.file && &a.region.name == parent)
            {
                return Err(format!(
                    "{}: region `{}` sits inside `{parent}`, which is listed too",
                    manifest.display(),
                    r.id
                ));
            }
        }
    }

    // The student's code, region by region.
    let mut submitted: Vec<Submitted> = Vec::new();
    let mut parsed: BTreeMap<PathBuf, Result<(String, Vec<crate::regions::Region>), String>> =
        BTreeMap::new();
    for r in &assigned {
        let path = student.join("crates").join(&krate).join(&r.file);
        let entry = parsed.entry(r.file.clone()).or_insert_with(|| {
            let source = read(&path)?;
            let regions = crate::regions::regions(&source)?;
            Ok((source, regions))
        });
        submitted.push(match entry {
            Err(e) => {
                // The file doesn't parse: the region the error sits in does
                // not compile; the file's other regions can't be read.
                let line: Option<usize> = e
                    .strip_prefix("line ")
                    .and_then(|rest| rest.split(':').next())
                    .and_then(|n| n.parse().ok());
                let markers = read(&path)
                    .ok()
                    .and_then(|src| crate::regions::markers(&src).ok());
                let inside = match (line, markers) {
                    (Some(line), Some(markers)) => markers
                        .iter()
                        .any(|(name, a, b)| name == &r.region.name && *a <= line && line <= *b),
                    _ => false,
                };
                let status = if inside {
                    Status::DoesNotCompile
                } else {
                    Status::NotGraded
                };
                Submitted::Problem(status, format!("crates/{krate}/{}: {e}", r.file.display()))
            }
            Ok((source, regions)) => match regions.iter().find(|s| s.name == r.region.name) {
                None => Submitted::Problem(
                    Status::NotGraded,
                    format!(
                    "crates/{krate}/{}: the markers `// ANCHOR: {}` … `// ANCHOR_END: {}` are gone",
                    r.file.display(),
                    r.region.name,
                    r.region.name
                ),
                ),
                Some(s) if s.slots.len() != r.region.slots.len() || s.shape != r.region.shape => {
                    Submitted::Problem(
                        Status::NotGraded,
                        format!(
                        "crates/{krate}/{}: region `{}` should hold {} as the copy did; found {}",
                        r.file.display(),
                        r.region.name,
                        describe(r.region.shape, r.region.slots.len()),
                        describe(s.shape, s.slots.len())
                    ),
                    )
                }
                Some(s) => Submitted::Code(
                    s.slots
                        .iter()
                        .map(|slot| source[slot.clone()].to_string())
                        .collect(),
                ),
            },
        });
    }

    let grading = opts
        .root
        .join("target/classroom")
        .join(format!("grade-{krate}"));
    let mut rows: Vec<Option<RegionGrade>> = submitted
        .iter()
        .zip(&assigned)
        .map(|(s, r)| match s {
            Submitted::Problem(status, why) => Some(RegionGrade {
                id: r.id.clone(),
                status: *status,
                tests_passed: 0,
                tests_failed: 0,
                first_failure: Some(why.clone()),
                seconds: 0.0,
                tests: Vec::new(),
            }),
            Submitted::Code(_) => None,
        })
        .collect();

    // Build, turning each region that doesn't compile back into the reference.
    let built = loop {
        let code: Vec<Option<&Vec<String>>> = submitted
            .iter()
            .zip(&rows)
            .map(|(s, row)| match (s, row) {
                (Submitted::Code(c), None) => Some(c),
                _ => None,
            })
            .collect();
        let placed = write_grading_crate(opts, &grading, &krate, &assigned, &code)?;
        let build = build(opts, &grading, &krate)?;
        if build.errors.is_empty() {
            break build;
        }
        let mut blamed = false;
        for error in &build.errors {
            // Any of the error's spans inside a region's switch, the
            // reference's half too (an `if`/`else` type mismatch points there).
            let hit = placed.iter().find(|p| {
                error.spans.iter().any(|(file, line)| {
                    file.ends_with(&p.file) && p.lines.0 <= *line && *line <= p.lines.1
                }) && rows[p.region].is_none()
            });
            if let Some(p) = hit {
                rows[p.region] = Some(RegionGrade {
                    id: assigned[p.region].id.clone(),
                    status: Status::DoesNotCompile,
                    tests_passed: 0,
                    tests_failed: 0,
                    first_failure: Some(error.rendered.clone()),
                    seconds: 0.0,
                    tests: Vec::new(),
                });
                blamed = true;
            }
        }
        if !blamed {
            // An error outside every region: build each remaining region
            // from the reference, so that the others are graded...
            let open: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].is_none()).collect();
            if open.is_empty() {
                return Err(format!(
                    "the grading copy of crates/{krate} does not compile with the reference's code:\n{}",
                    build.errors[0].rendered
                ));
            }
            for i in open {
                rows[i] = Some(RegionGrade {
                    id: assigned[i].id.clone(),
                    status: Status::DoesNotCompile,
                    tests_passed: 0,
                    tests_failed: 0,
                    first_failure: Some(format!(
                        "the crate does not compile, at a line outside every region:\n{}",
                        build.errors[0].rendered
                    )),
                    seconds: 0.0,
                    tests: Vec::new(),
                });
            }
        }
    };

    let crate_dir = grading.join("crates").join(&krate);
    let logs = grading.join("logs");
    let _ = std::fs::remove_dir_all(&logs);
    let runner = Runner {
        opts,
        crate_dir: &crate_dir,
        next_log: std::sync::atomic::AtomicUsize::new(0),
    };
    let coverage = coverage(&runner, &grading, &reference_dir, &assigned, &built)?;

    // Every region's tests, run side by side on the available cores.
    let mut jobs = Vec::new();
    for (i, r) in assigned.iter().enumerate() {
        if rows[i].is_some() {
            continue;
        }
        for t in tests_for(&coverage, &r.id) {
            jobs.push((
                i,
                t.label(),
                Job {
                    exe: built.tests[&t.target].clone(),
                    test: t.name.clone(),
                    region: Some(r.id.clone()),
                    trace: None,
                    limit: Duration::from_secs_f64(t.seconds * opts.timeout_factor)
                        + opts.timeout_floor,
                },
            ));
        }
    }
    let results = runner.run_all(jobs.iter().map(|(_, _, job)| job).collect())?;
    for (i, r) in assigned.iter().enumerate() {
        if rows[i].is_some() {
            continue;
        }
        let tests: Vec<TestRun> = jobs
            .iter()
            .zip(&results)
            .filter(|((region, _, _), _)| *region == i)
            .map(|((_, label, _), (outcome, seconds, message))| TestRun {
                test: label.clone(),
                outcome: *outcome,
                seconds: *seconds,
                message: message.clone(),
            })
            .collect();
        if opts.verbose {
            for t in &tests {
                eprintln!("  {:<24} {:<60} {:?}", r.id, t.test, t.outcome);
            }
        }
        let passed = tests
            .iter()
            .filter(|t| t.outcome == Outcome::Passed)
            .count();
        let failed = tests.len() - passed;
        let first_failure = tests
            .iter()
            .find(|t| t.outcome != Outcome::Passed)
            .map(|t| format!("{}: {}", t.test, t.message.as_deref().unwrap_or("")));
        rows[i] = Some(RegionGrade {
            id: r.id.clone(),
            status: if tests.is_empty() {
                Status::NoTest
            } else if failed == 0 {
                Status::Passed
            } else {
                Status::Failed
            },
            tests_passed: passed,
            tests_failed: failed,
            first_failure: if tests.is_empty() {
                Some("no test of the grading set reaches this region".into())
            } else {
                first_failure
            },
            seconds: tests.iter().fold(0.0, |sum, t| sum + t.seconds),
            tests,
        });
    }

    let quick = if opts.no_quick {
        None
    } else {
        let fell_back = rows
            .iter()
            .flatten()
            .any(|r| matches!(r.status, Status::DoesNotCompile | Status::NotGraded));
        let mut q = quick_run(&runner, &built, &assignment, student).unwrap_or_else(|e| QuickRun {
            passed: false,
            seconds: 0.0,
            error: Some(e),
            targets: Vec::new(),
        });
        if fell_back && q.passed {
            q.passed = false;
            q.error = Some(
                "not counted: some regions ran the reference's code (they do not compile or were not graded)"
                    .into(),
            );
        }
        Some(q)
    };
    let regions: Vec<RegionGrade> = rows
        .into_iter()
        .map(|r| r.expect("every row is filled"))
        .collect();
    let passed = regions
        .iter()
        .filter(|r| r.status == Status::Passed)
        .count();
    Ok(Grade {
        lecture: assignment.lecture,
        krate,
        assigned: regions.len(),
        passed,
        regions,
        quick,
    })
}

fn describe(shape: Shape, slots: usize) -> String {
    match shape {
        Shape::Functions if slots == 1 => "1 function".into(),
        Shape::Functions => format!("{slots} functions"),
        Shape::Statements { .. } => "statements inside a function".into(),
    }
}
