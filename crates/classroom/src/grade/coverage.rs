//! Coverage: which tests reach which region, from one traced run of every
//! test on the reference.

use super::*;

/// Every test of the grading set, the regions it reaches, and its time on
/// the reference.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Coverage {
    pub(super) key: String,
    pub(super) tests: Vec<CoveredTest>,
    /// Tests that fail on the reference itself, left out.
    pub(super) failing: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct CoveredTest {
    pub(super) target: String,
    pub(super) name: String,
    pub(super) regions: Vec<String>,
    pub(super) seconds: f64,
}

impl CoveredTest {
    pub(super) fn label(&self) -> String {
        format!("{} {}", self.target, self.name)
    }
}

/// The coverage map, from the cache when the reference and the assigned
/// regions are those it was made for.
pub(super) fn coverage(
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
pub(super) fn tests_for<'c>(coverage: &'c Coverage, region: &str) -> Vec<&'c CoveredTest> {
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
pub(super) fn list_tests(exe: &Path) -> Result<Vec<String>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
