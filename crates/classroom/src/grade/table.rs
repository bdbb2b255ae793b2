//! The table a student reads: one row a region.

use super::*;

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
