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

/// Where a region's student code sits in the grading copy (for errors).
struct Placed {
    region: usize,
    /// Relative to the grading workspace (`crates/gpt/src/model.rs`).
    file: PathBuf,
    lines: (usize, usize),
}

/// Writes the grading workspace: the reference crate with each assigned
/// region behind its switch (the student's code where `code` has it, the
/// reference's twice otherwise). Files are written only when they change, so
/// that cargo rebuilds only what differs.
fn write_grading_crate(
    opts: &Options,
    grading: &Path,
    krate: &str,
    assigned: &[&CrateRegion],
    code: &[Option<&Vec<String>>],
) -> Result<Vec<Placed>, String> {
    let root = &opts.root;
    let reference_dir = root.join("crates").join(krate);
    let crate_dir = grading.join("crates").join(krate);
    let staging = grading.join("staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    }
    copy_dir(&reference_dir, &staging, &|_| false)?;

    // The switches.
    let mut placed = Vec::new();
    let mut files: Vec<&PathBuf> = assigned.iter().map(|r| &r.file).collect();
    files.sort();
    files.dedup();
    for file in files {
        let source = read(&reference_dir.join(file))?;
        let mut edits: Vec<(usize, std::ops::Range<usize>, String, String)> = Vec::new();
        for (i, r) in assigned.iter().enumerate().filter(|(_, r)| &r.file == file) {
            for (k, slot) in r.region.slots.iter().enumerate() {
                let reference = source[slot.clone()].to_string();
                let student = code[i].map_or(reference.clone(), |c| c[k].clone());
                edits.push((i, slot.clone(), student, reference));
            }
        }
        edits.sort_by_key(|(_, range, _, _)| range.start);
        let mut out = String::new();
        let mut at = 0;
        for (i, range, student, reference) in edits {
            out.push_str(&source[at..range.start]);
            let statements = matches!(assigned[i].region.shape, Shape::Statements { .. });
            let open = if statements { "\n" } else { "" };
            let start = out.len();
            out.push_str(&format!(" if crate::__classroom::student({i}) {{{open}"));
            out.push_str(&student);
            out.push_str(&format!("}} else {{{open}{reference}}}\n"));
            let end = out.len();
            placed.push(Placed {
                region: i,
                file: Path::new("crates").join(krate).join(file),
                lines: (line_of(&out, start), line_of(&out, end)),
            });
            at = range.end;
        }
        out.push_str(&source[at..]);
        write(&staging.join(file), &out)?;
    }

    // The switch itself, at the end of lib.rs.
    let lib = staging.join("src/lib.rs");
    let ids: Vec<String> = assigned.iter().map(|r| format!("{:?}", r.id)).collect();
    let module = format!(
        "\n/// Added by `cargo xtask grade`: which code each graded region runs.\n\
         #[doc(hidden)]\n\
         pub mod __classroom {{\n\
         \x20   use std::sync::atomic::{{AtomicBool, Ordering}};\n\
         \x20   use std::sync::OnceLock;\n\
         \x20   const REGIONS: [&str; {n}] = [{ids}];\n\
         \x20   static SEEN: [AtomicBool; {n}] = [const {{ AtomicBool::new(false) }}; {n}];\n\
         \x20   static SELECTED: OnceLock<Option<String>> = OnceLock::new();\n\
         \x20   /// True when `ZTH_GRADE_REGION` names region `i` or is `all`; records\n\
         \x20   /// the region in `ZTH_GRADE_TRACE` the first time it runs.\n\
         \x20   pub fn student(i: usize) -> bool {{\n\
         \x20       if !SEEN[i].load(Ordering::Relaxed) && !SEEN[i].swap(true, Ordering::Relaxed) {{\n\
         \x20           if let Some(path) = std::env::var_os(\"ZTH_GRADE_TRACE\") {{\n\
         \x20               use std::io::Write;\n\
         \x20               let file = std::fs::OpenOptions::new().create(true).append(true).open(path);\n\
         \x20               if let Ok(mut file) = file {{\n\
         \x20                   let _ = writeln!(file, \"{{}}\", REGIONS[i]);\n\
         \x20               }}\n\
         \x20           }}\n\
         \x20       }}\n\
         \x20       match SELECTED.get_or_init(|| std::env::var(\"ZTH_GRADE_REGION\").ok()).as_deref() {{\n\
         \x20           Some(\"all\") => true,\n\
         \x20           Some(name) => name == REGIONS[i],\n\
         \x20           None => false,\n\
         \x20       }}\n\
         \x20   }}\n\
         }}\n",
        n = ids.len(),
        ids = ids.join(", ")
    );
    write(&lib, &format!("{}{module}", read(&lib)?))?;

    // Binaries renamed, so that they never replace the repository's own
    // lecture binaries in the shared target folder.
    let mut bins = Vec::new();
    if staging.join("src/main.rs").is_file() {
        bins.push((krate.to_string(), "src/main.rs".to_string()));
    }
    if let Ok(entries) = std::fs::read_dir(staging.join("src/bin")) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs") {
                let stem = p
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                bins.push((stem.clone(), format!("src/bin/{stem}.rs")));
            }
        }
    }
    let manifest = staging.join("Cargo.toml");
    // A sibling path dependency (`../batchnorm`) is the repository's crate.
    let siblings = format!("path = \"{}/", root.join("crates").display());
    let mut text = read(&manifest)?
        .replacen("[package]\n", "[package]\nautobins = false\n", 1)
        .replace("path = \"../", &siblings);
    for (name, path) in &bins {
        text.push_str(&format!(
            "\n[[bin]]\nname = \"graded-{name}\"\npath = \"{path}\"\n"
        ));
    }
    write(&manifest, &text)?;
    let mut sources = Vec::new();
    collect_files(&staging.join("tests"), &mut sources);
    collect_files(&staging.join("src"), &mut sources);
    for path in sources
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
    {
        let text = read(path)?;
        let mut renamed = text.clone();
        for (name, _) in &bins {
            renamed = renamed.replace(
                &format!("CARGO_BIN_EXE_{name}\""),
                &format!("CARGO_BIN_EXE_graded-{name}\""),
            );
        }
        if renamed != text {
            write(path, &renamed)?;
        }
    }

    // The workspace around it.
    write_if_changed(
        &grading.join("Cargo.toml"),
        &crate::workspace_manifest(
            root,
            &[format!("crates/{krate}")],
            &[krate.to_string()],
            true,
        )?,
    )?;
    if !grading.join("Cargo.lock").is_file() {
        write(
            &grading.join("Cargo.lock"),
            &read(&root.join("Cargo.lock"))?,
        )?;
    }
    sync_dir(&staging, &crate_dir)?;
    std::fs::remove_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    Ok(placed)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                collect_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

fn write_if_changed(path: &Path, contents: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    write(path, contents)
}

/// Makes `to` hold exactly `from`'s files, touching only those that differ.
fn sync_dir(from: &Path, to: &Path) -> Result<(), String> {
    let mut wanted = Vec::new();
    collect_files(from, &mut wanted);
    let mut keep = BTreeSet::new();
    for src in &wanted {
        let rel = src.strip_prefix(from).unwrap_or(src);
        let dest = to.join(rel);
        keep.insert(dest.clone());
        let new = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
        if std::fs::read(&dest).is_ok_and(|old| old == new) {
            continue;
        }
        if let Some(d) = dest.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        std::fs::write(&dest, &new).map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    let mut present = Vec::new();
    collect_files(to, &mut present);
    for p in present.into_iter().filter(|p| !keep.contains(p)) {
        std::fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// A compile error and the lines its spans point at, primary first.
struct CompileError {
    spans: Vec<(PathBuf, usize)>,
    rendered: String,
}

/// The grading build: test executables by target, the lecture binary.
struct Built {
    /// "lib", "bin/<name>", "test/<name>" → executable.
    tests: BTreeMap<String, PathBuf>,
    lecture_bin: Option<PathBuf>,
    errors: Vec<CompileError>,
}

fn build(opts: &Options, grading: &Path, krate: &str) -> Result<Built, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "test",
            "--release",
            "--no-run",
            "--message-format=json",
            "-p",
            krate,
        ])
        .current_dir(grading)
        .env("CARGO_TARGET_DIR", opts.root.join("target"))
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    let mut built = Built {
        tests: BTreeMap::new(),
        lecture_bin: None,
        errors: Vec::new(),
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match msg["reason"].as_str() {
            Some("compiler-message") if msg["message"]["level"] == "error" => {
                let m = &msg["message"];
                let rendered = m["rendered"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_end()
                    .to_string();
                let mut spans: Vec<&serde_json::Value> = m["spans"]
                    .as_array()
                    .map(|a| a.iter().collect())
                    .unwrap_or_default();
                spans.sort_by_key(|s| s["is_primary"] != true);
                let spans: Vec<(PathBuf, usize)> = spans
                    .iter()
                    .map(|s| {
                        (
                            PathBuf::from(s["file_name"].as_str().unwrap_or_default()),
                            s["line_start"].as_u64().unwrap_or(0) as usize,
                        )
                    })
                    .collect();
                if !spans.is_empty() || !rendered.starts_with("aborting") {
                    built.errors.push(CompileError { spans, rendered });
                }
            }
            Some("compiler-artifact") => {
                let Some(exe) = msg["executable"].as_str() else {
                    continue;
                };
                let name = msg["target"]["name"].as_str().unwrap_or_default();
                let kind = msg["target"]["kind"][0].as_str().unwrap_or_default();
                if msg["profile"]["test"] == true {
                    built
                        .tests
                        .insert(format!("{kind}/{name}"), PathBuf::from(exe));
                } else if kind == "bin" && name == format!("graded-{krate}") {
                    built.lecture_bin = Some(PathBuf::from(exe));
                }
            }
            _ => {}
        }
    }
    if built.errors.is_empty() && !out.status.success() {
        return Err(format!(
            "cargo test --no-run failed in {} ({})",
            grading.display(),
            out.status
        ));
    }
    Ok(built)
}

/// Every test of the grading set, the regions it reaches, and its time on
/// the reference.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Coverage {
    key: String,
    tests: Vec<CoveredTest>,
    /// Tests that fail on the reference itself, left out.
    failing: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct CoveredTest {
    target: String,
    name: String,
    regions: Vec<String>,
    seconds: f64,
}

impl CoveredTest {
    fn label(&self) -> String {
        format!("{} {}", self.target, self.name)
    }
}

/// The coverage map, from the cache when the reference and the assigned
/// regions are those it was made for.
fn coverage(
    runner: &Runner,
    grading: &Path,
    reference_dir: &Path,
    assigned: &[&CrateRegion],
    built: &Built,
) -> Result<Coverage, String> {
    let mut hash = Sha256::new();
    let mut files = Vec::new();
    collect_files(reference_dir, &mut files);
    files.sort();
    for f in &files {
        hash.update(
            f.strip_prefix(reference_dir)
                .unwrap_or(f)
                .to_string_lossy()
                .as_bytes(),
        );
        hash.update(std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    for r in assigned {
        hash.update(r.id.as_bytes());
    }
    for target in built.tests.keys() {
        hash.update(target.as_bytes());
    }
    let key: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let cache = grading.join("coverage.json");
    if let Ok(text) = std::fs::read_to_string(&cache) {
        if let Ok(c) = serde_json::from_str::<Coverage>(&text) {
            if c.key == key {
                return Ok(c);
            }
        }
    }
    eprintln!("grade: running every test once on the reference, to see which regions each reaches");
    let mut coverage = Coverage {
        key,
        tests: Vec::new(),
        failing: Vec::new(),
    };
    let traces = grading.join("traces");
    let _ = std::fs::remove_dir_all(&traces);
    std::fs::create_dir_all(&traces).map_err(|e| format!("{}: {e}", traces.display()))?;
    let mut listed = Vec::new();
    for (target, exe) in &built.tests {
        for name in list_tests(exe)? {
            let trace = traces.join(format!("{}.txt", listed.len()));
            listed.push((
                target.clone(),
                name.clone(),
                Job {
                    exe: exe.clone(),
                    test: name,
                    region: None,
                    trace: Some(trace),
                    limit: Duration::from_secs(1800),
                },
            ));
        }
    }
    let results = runner.run_all(listed.iter().map(|(_, _, job)| job).collect())?;
    for ((target, name, job), (outcome, seconds, message)) in listed.into_iter().zip(results) {
        let label = format!("{target} {name}");
        if outcome != Outcome::Passed {
            eprintln!(
                "grade: {label} fails on the reference ({outcome:?}: {}); left out",
                message.unwrap_or_default()
            );
            coverage.failing.push(label);
            continue;
        }
        let trace = job.trace.expect("every coverage job traces");
        let regions: BTreeSet<String> = std::fs::read_to_string(&trace)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        if !regions.is_empty() {
            coverage.tests.push(CoveredTest {
                target,
                name,
                regions: regions.into_iter().collect(),
                seconds,
            });
        }
    }
    let _ = std::fs::remove_dir_all(&traces);
    // A map with a test failing on the reference (missing data, a machine
    // under load) is used once, never cached.
    if coverage.failing.is_empty() {
        let json = serde_json::to_string_pretty(&coverage).map_err(|e| e.to_string())?;
        write(&cache, &json)?;
    }
    Ok(coverage)
}

/// A test this slow on the reference grades a region only when no quicker
/// test reaches it (lecture 7's training loop: 10 s, and it passes through 18
/// regions).
pub const SLOW_TEST_SECONDS: f64 = 5.0;

/// The tests that grade `region`: those that reach it, the slow ones only
/// where no other does.
fn tests_for<'c>(coverage: &'c Coverage, region: &str) -> Vec<&'c CoveredTest> {
    let reaching: Vec<&CoveredTest> = coverage
        .tests
        .iter()
        .filter(|t| t.regions.iter().any(|r| r == region))
        .collect();
    let quick: Vec<&CoveredTest> = reaching
        .iter()
        .copied()
        .filter(|t| t.seconds <= SLOW_TEST_SECONDS)
        .collect();
    if quick.is_empty() {
        reaching
    } else {
        quick
    }
}

/// The tests in a test executable, without the ignored ones.
fn list_tests(exe: &Path) -> Result<Vec<String>, String> {
    let list = |ignored: bool| -> Result<Vec<String>, String> {
        let mut cmd = Command::new(exe);
        cmd.args(["--list", "--format", "terse"]);
        if ignored {
            cmd.arg("--ignored");
        }
        let out = cmd
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_suffix(": test").map(str::to_string))
            .collect())
    };
    let ignored: BTreeSet<String> = list(true)?.into_iter().collect();
    Ok(list(false)?
        .into_iter()
        .filter(|t| !ignored.contains(t))
        .collect())
}

struct Runner<'a> {
    opts: &'a Options,
    crate_dir: &'a Path,
    /// Numbers each test's log file.
    next_log: std::sync::atomic::AtomicUsize,
}

/// One test to run: in its own process, with a region switched to the
/// student's code (or none), optionally tracing the regions it reaches.
struct Job {
    exe: PathBuf,
    test: String,
    region: Option<String>,
    trace: Option<PathBuf>,
    limit: Duration,
}

type TestResult = (Outcome, f64, Option<String>);

impl Runner<'_> {
    /// Runs the jobs on as many workers as there are cores; the results come
    /// back in the jobs' order.
    fn run_all(&self, jobs: Vec<&Job>) -> Result<Vec<TestResult>, String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Mutex;
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(jobs.len().max(1));
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Result<TestResult, String>>>> =
            Mutex::new(jobs.iter().map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let (next, results, jobs) = (&next, &results, &jobs);
                scope.spawn(move || loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(k) else { break };
                    let result = self.run_test(job);
                    results.lock().expect("no worker panics holding it")[k] = Some(result);
                });
            }
        });
        results
            .into_inner()
            .expect("no worker panicked")
            .into_iter()
            .map(|r| r.expect("every job ran"))
            .collect()
    }

    /// Runs one test in its own process group, with a time limit.
    fn run_test(&self, job: &Job) -> Result<TestResult, String> {
        let mut cmd = Command::new(&job.exe);
        cmd.args([job.test.as_str(), "--exact", "--test-threads", "1"]);
        let log = format!(
            "logs/{}.log",
            self.next_log
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let (outcome, seconds, output) = self.run(
            cmd,
            job.region.as_deref(),
            job.trace.as_deref(),
            job.limit,
            &log,
        )?;
        let message = match outcome {
            Outcome::Passed => None,
            Outcome::TimedOut => Some(format!(
                "did not finish in {:.0} s",
                job.limit.as_secs_f64()
            )),
            _ => Some(panic_message(&output)),
        };
        Ok((outcome, seconds, message))
    }

    fn run(
        &self,
        mut cmd: Command,
        region: Option<&str>,
        trace: Option<&Path>,
        limit: Duration,
        log: &str,
    ) -> Result<(Outcome, f64, String), String> {
        use std::os::unix::process::CommandExt;
        let log = self.crate_dir.join("../..").join(log);
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        cmd.current_dir(self.crate_dir)
            .env(data::ENV_VAR, &self.opts.data)
            .env("CARGO_MANIFEST_DIR", self.crate_dir)
            .env("RUST_BACKTRACE", "0")
            .env_remove("ZTH_GRADE_REGION")
            .env_remove("ZTH_GRADE_TRACE")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .process_group(0);
        if let Some(r) = region {
            cmd.env("ZTH_GRADE_REGION", r);
        }
        if let Some(t) = trace {
            cmd.env("ZTH_GRADE_TRACE", t);
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break Some(status);
            }
            if started.elapsed() > limit {
                // The whole group: a test's own children go too.
                // SAFETY: kill takes no pointers; the child, not yet reaped, leads
                // its own group (process_group(0) above), so -pid names that group.
                unsafe {
                    libc::kill(-(child.id() as i32), libc::SIGKILL);
                }
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // Whatever the test started and left running goes too.
        // SAFETY: kill takes no pointers; the group's id (the child's pid) is
        // not reused while any process the test left in it still runs.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
        let seconds = started.elapsed().as_secs_f64();
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        let outcome = match status {
            None => Outcome::TimedOut,
            Some(s) if s.success() => Outcome::Passed,
            Some(s) if s.code().is_some() => Outcome::Failed,
            Some(_) => Outcome::Crashed,
        };
        Ok((outcome, seconds, output))
    }
}

/// The first panic's message (an assertion and its two sides), from a
/// test's output; a blank's `not yet implemented: tanh: see …` wherever it
/// is, since a test may meet it in a child process it starts.
pub fn panic_message(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    if let Some(todo) = lines
        .iter()
        .find(|l| l.trim_start().starts_with("not yet implemented: "))
    {
        return truncate(todo.trim(), 400);
    }
    if let Some(at) = lines.iter().position(|l| l.contains("panicked at")) {
        let message: Vec<&str> = lines[at + 1..]
            .iter()
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| {
                !l.trim().is_empty() && !l.starts_with("note:") && !l.starts_with("stack backtrace")
            })
            .take(4)
            .map(|l| l.trim())
            .collect();
        return truncate(&message.join(" / "), 400);
    }
    let tail: Vec<&str> = lines
        .iter()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .copied()
        .collect();
    truncate(&tail.into_iter().rev().collect::<Vec<_>>().join(" / "), 400)
}

fn truncate(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(n).collect::<String>())
    }
}

/// The lecture's `--quick` run with the student's code in every region.
fn quick_run(
    runner: &Runner,
    built: &Built,
    assignment: &Assignment,
    student: &Path,
) -> Result<QuickRun, String> {
    let Some(bin) = &built.lecture_bin else {
        return Err(format!("crates/{} has no lecture binary", assignment.krate));
    };
    let out = student
        .join("runs")
        .join(format!("lecture-{:02}", assignment.lecture))
        .join("graded-quick");
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(bin);
    cmd.arg("lecture").arg("--out").arg(&out).arg("--quick");
    eprintln!("grade: the lecture's --quick run on the student's whole crate");
    let (outcome, seconds, output) = runner.run(
        cmd,
        Some("all"),
        None,
        Duration::from_secs(1200),
        "quick.log",
    )?;
    let report = std::fs::read_to_string(out.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    let mut targets = Vec::new();
    if let Some(report) = &report {
        for stage in report["stages"].as_array().into_iter().flatten() {
            for t in stage["targets"].as_array().into_iter().flatten() {
                targets.push(QuickTarget {
                    stage: stage["name"].as_str().unwrap_or_default().to_string(),
                    name: t["name"].as_str().unwrap_or_default().to_string(),
                    expected: t["expected"].clone(),
                    measured: t["measured"].clone(),
                    pass: t["pass"] == true,
                    gated: t["kind"] != "info",
                });
            }
        }
    }
    let error = match (outcome, &report) {
        (Outcome::TimedOut, _) => Some("did not finish in 20 minutes".to_string()),
        (_, None) => Some(panic_message(&output)),
        _ => None,
    };
    let gated: Vec<&QuickTarget> = targets.iter().filter(|t| t.gated).collect();
    let passed = outcome == Outcome::Passed
        && error.is_none()
        && !gated.is_empty()
        && gated.iter().all(|t| t.pass);
    Ok(QuickRun {
        passed,
        seconds,
        error,
        targets,
    })
}

/// The table `grade` prints.
pub fn table(g: &Grade) -> String {
    let mut s = format!(
        "lecture {} (crates/{}): {}/{} regions pass\n\n",
        g.lecture, g.krate, g.passed, g.assigned
    );
    let width = g
        .regions
        .iter()
        .map(|r| r.id.len())
        .max()
        .unwrap_or(6)
        .max(6);
    s.push_str(&format!(
        "{:<width$}  {:<16}  {:>6}  {:>6}  {:>7}  first failure\n",
        "region", "status", "passed", "failed", "seconds"
    ));
    for r in &g.regions {
        let status = match r.status {
            Status::Passed => "PASS",
            Status::Failed => "FAIL",
            Status::DoesNotCompile => "does not compile",
            Status::NotGraded => "not graded",
            Status::NoTest => "no test",
        };
        let first = r
            .first_failure
            .as_deref()
            .map(|f| truncate(&f.replace('\n', " / "), 160))
            .unwrap_or_default();
        s.push_str(&format!(
            "{:<width$}  {:<16}  {:>6}  {:>6}  {:>7.1}  {first}\n",
            r.id, status, r.tests_passed, r.tests_failed, r.seconds
        ));
    }
    if let Some(q) = &g.quick {
        s.push_str(&format!(
            "\nthe lecture's --quick run on the whole crate ({:.1} s): {}\n",
            q.seconds,
            if q.passed { "PASS" } else { "FAIL" }
        ));
        if let Some(e) = &q.error {
            s.push_str(&format!("  stopped: {e}\n"));
        }
        for t in &q.targets {
            s.push_str(&format!(
                "  {:<14} {:<40} expected {:<22} got {:<22} {}\n",
                t.stage,
                truncate(&t.name, 40),
                truncate(&t.expected.to_string(), 22),
                truncate(&t.measured.to_string(), 22),
                match (t.pass, t.gated) {
                    (true, _) => "PASS",
                    (false, true) => "FAIL",
                    (false, false) => "FAIL (not gated)",
                }
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panic_message_is_the_lines_after_panicked_at() {
        let output = "running 1 test\n\
            thread 'draws' (123) panicked at crates/x/src/a.rs:3:5:\n\
            not yet implemented: tanh: see lectures/01-micrograd.md\n\
            note: run with `RUST_BACKTRACE=1` to show a backtrace\n\
            test draws ... FAILED\n";
        assert_eq!(
            panic_message(output),
            "not yet implemented: tanh: see lectures/01-micrograd.md"
        );
        let assertion = "thread 't' panicked at tests/a.rs:9:5:\n\
            assertion `left == right` failed\n  left: 1\n right: 2\n\n";
        assert_eq!(
            panic_message(assertion),
            "assertion `left == right` failed / left: 1 / right: 2"
        );
        // A blank met in a child process, under the test's own assertion.
        let child = "thread 'cli' panicked at tests/cli.rs:39:5:\n\nthread 'main' panicked at src/hf.rs:9:5:\n\
            not yet implemented: from_pretrained: see p.md\n";
        assert_eq!(
            panic_message(child),
            "not yet implemented: from_pretrained: see p.md"
        );
        // No panic (a crash): the output's last lines.
        assert_eq!(panic_message("a\nb\n\nc\nd\n"), "b / c / d");
    }

    fn covered(name: &str, regions: &[&str], seconds: f64) -> CoveredTest {
        CoveredTest {
            target: "test/t".into(),
            name: name.into(),
            regions: regions.iter().map(|r| r.to_string()).collect(),
            seconds,
        }
    }

    #[test]
    fn a_slow_test_grades_a_region_only_when_nothing_quicker_reaches_it() {
        let coverage = Coverage {
            key: String::new(),
            failing: Vec::new(),
            tests: vec![
                covered("quick", &["forward"], 0.5),
                covered("loop", &["forward", "train"], 10.0),
            ],
        };
        let names = |region| -> Vec<String> {
            tests_for(&coverage, region)
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        assert_eq!(names("forward"), ["quick"]);
        assert_eq!(names("train"), ["loop"]);
        assert!(names("init").is_empty());
    }
}
