//! Determinism: every lecture's `--quick` run, twice with the same seed, gives
//! the same loss curve (`loss.csv`, byte for byte), the same final losses and
//! the same measured value for every target but the timings; and the same
//! again on one thread instead of two, where the maths allows (see the
//! README's "Determinism" section for where it does not).

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// One comparison of two runs of a lecture.
#[derive(Debug)]
pub struct Check {
    /// The lecture.
    pub lecture: u32,
    /// "run twice" or "1 thread against 2".
    pub what: &'static str,
    /// `None` if the runs agree; otherwise the first difference.
    pub difference: Option<String>,
}

fn quick_run(binary: &Path, out: &Path, threads: Option<&str>) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(out);
    let mut cmd = Command::new(binary);
    cmd.args(["lecture", "--quick", "--out"]).arg(out);
    if let Some(n) = threads {
        cmd.env("ZTH_THREADS", n);
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} lecture --quick failed: {}",
            binary.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

/// What must repeat: the loss curve, and per stage the final losses and the
/// measured value of every target that is not a timing (`info`).
fn results(out: &Path) -> Result<(Vec<u8>, Vec<Value>), String> {
    // Lecture 8 trains tokenizers, not in steps: it has no loss curve.
    let curve = match std::fs::read(out.join("loss.csv")) {
        Ok(bytes) => bytes,
        Err(_) if out.to_string_lossy().contains("lecture-08") => Vec::new(),
        Err(e) => return Err(format!("{}: {e}", out.join("loss.csv").display())),
    };
    let report = report::page::read_report(&out.join("report.json"))?;
    let stages = report
        .stages
        .iter()
        .map(|s| {
            let targets: Vec<Value> = s
                .targets
                .iter()
                .filter(|t| t.kind != report::Kind::Info)
                .map(|t| serde_json::json!([t.name, t.measured]))
                .collect();
            serde_json::json!({"stage": s.name, "final": s.final_losses, "targets": targets})
        })
        .collect();
    Ok((curve, stages))
}

fn difference(a: &Path, b: &Path) -> Result<Option<String>, String> {
    let (curve_a, stages_a) = results(a)?;
    let (curve_b, stages_b) = results(b)?;
    if curve_a != curve_b {
        let line = String::from_utf8_lossy(&curve_a)
            .lines()
            .zip(String::from_utf8_lossy(&curve_b).lines())
            .find(|(x, y)| x != y)
            .map(|(x, y)| format!("{x} against {y}"))
            .unwrap_or_else(|| "a different number of rows".into());
        return Ok(Some(format!("loss.csv differs: {line}")));
    }
    if stages_a.len() != stages_b.len() {
        return Ok(Some(format!(
            "{} stages against {}",
            stages_a.len(),
            stages_b.len()
        )));
    }
    Ok(stages_a
        .iter()
        .zip(&stages_b)
        .find(|(x, y)| x != y)
        .map(|(x, y)| format!("{x} against {y}")))
}

/// Runs `lectures`' quick runs from the binaries in `bin_dir`, twice each,
/// and once more on one thread when `threads` is set.
pub fn run(
    bin_dir: &Path,
    lectures: &[u32],
    threads: bool,
    scratch: &Path,
) -> Result<Vec<Check>, String> {
    let mut checks = Vec::new();
    for l in course::LECTURES
        .iter()
        .filter(|l| lectures.contains(&l.number))
    {
        let (lecture, binary) = (l.number, bin_dir.join(l.krate));
        let [first, second, one] = ["first", "second", "one-thread"]
            .map(|run| scratch.join(format!("lecture-{lecture:02}-{run}")));
        quick_run(&binary, &first, Some("2"))?;
        quick_run(&binary, &second, Some("2"))?;
        checks.push(Check {
            lecture,
            what: "run twice",
            difference: difference(&first, &second)?,
        });
        if threads {
            quick_run(&binary, &one, Some("1"))?;
            checks.push(Check {
                lecture,
                what: "1 thread against 2",
                difference: difference(&first, &one)?,
            });
        }
        for dir in [first, second, one] {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    Ok(checks)
}
