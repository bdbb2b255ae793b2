//! Running the tests: each in its own process with a time limit, and the
//! lecture's `--quick` targets on the student's whole crate.

use super::*;

pub(super) struct Runner<'a> {
    pub(super) opts: &'a Options,
    pub(super) crate_dir: &'a Path,
    /// Numbers each test's log file.
    pub(super) next_log: std::sync::atomic::AtomicUsize,
}

/// One test to run: in its own process, with a region switched to the
/// student's code (or none), optionally tracing the regions it reaches.
pub(super) struct Job {
    pub(super) exe: PathBuf,
    pub(super) test: String,
    pub(super) region: Option<String>,
    pub(super) trace: Option<PathBuf>,
    pub(super) limit: Duration,
}

type TestResult = (Outcome, f64, Option<String>);

impl Runner<'_> {
    /// Runs the jobs on as many workers as there are cores; the results come
    /// back in the jobs' order.
    pub(super) fn run_all(&self, jobs: Vec<&Job>) -> Result<Vec<TestResult>, String> {
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
    pub(super) fn run_test(&self, job: &Job) -> Result<TestResult, String> {
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

    pub(super) fn run(
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

pub(super) fn truncate(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(n).collect::<String>())
    }
}

/// The lecture's `--quick` run with the student's code in every region.
pub(super) fn quick_run(
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
}
