//! `cargo xtask grade DIR [--json FILE]`: grade a student's copy region by
//! region, each with every other region as the reference wrote it, then run
//! the lecture's `--quick` targets on the student's whole crate.
//!
//! `cargo xtask grade --self-test [N …]` is the round trip for lectures N
//! (default: all): the reference pasted back gets full marks, a planted bug
//! fails exactly its region, the blanks fail region by region, and the
//! student's copy builds with its tests failing only at the blanks.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::assign::{build_classroom, classroom, lecture_flags};
use crate::lecture::{find, LECTURES};
use crate::{run_child, TaskResult};

#[derive(clap::Args)]
pub struct Args {
    /// The student's copy (made by `cargo xtask assign`).
    #[arg(required_unless_present = "self_test")]
    dir: Option<PathBuf>,
    /// Where to write the grade (default DIR/grade.json).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Skip the lecture's --quick run.
    #[arg(long)]
    no_quick: bool,
    /// Print a line per test as it runs.
    #[arg(long)]
    verbose: bool,
    /// The round trip for these lectures (default: every lecture).
    #[arg(long, num_args = 0.., value_name = "N")]
    self_test: Option<Vec<String>>,
}

pub fn run(args: Args) -> TaskResult {
    build_classroom()?;
    if let Some(numbers) = args.self_test {
        return self_test(&numbers);
    }
    let dir = args.dir.expect("clap requires DIR without --self-test");
    let cwd = std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?;
    let dir = cwd.join(dir);
    let manifest = dir.join(".classroom/assignment.json");
    let text = std::fs::read_to_string(&manifest).map_err(|e| {
        format!(
            "{}: {e} (is {} a copy made by `cargo xtask assign`?)",
            manifest.display(),
            dir.display()
        )
    })?;
    let number = text
        .split("\"lecture\":")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .map(|n| n.trim().to_string())
        .ok_or_else(|| format!("{}: no \"lecture\" number", manifest.display()))?;
    let lecture = find(&number)?;
    let data = crate::data::ensure(lecture.data)?;
    let mut cmd = classroom()?;
    cmd.env(::data::ENV_VAR, &data.path).arg("grade").arg(&dir);
    if let Some(json) = args.json {
        cmd.arg("--json").arg(cwd.join(json));
    }
    if args.no_quick {
        cmd.arg("--no-quick");
    }
    if args.verbose {
        cmd.arg("--verbose");
    }
    run_child(cmd)
}

fn self_test(numbers: &[String]) -> TaskResult {
    let lectures = if numbers.is_empty() {
        LECTURES.iter().collect::<Vec<_>>()
    } else {
        numbers
            .iter()
            .map(|n| find(n))
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut failed = Vec::new();
    let mut times = Vec::new();
    for lecture in lectures {
        println!(
            "=== round trip: lecture {} (crates/{})",
            lecture.number, lecture.krate
        );
        let started = Instant::now();
        let data = crate::data::ensure(lecture.data)?;
        let mut cmd = classroom()?;
        cmd.env(::data::ENV_VAR, &data.path)
            .arg("self-test")
            .args(lecture_flags(lecture))
            .arg("--student-build");
        if run_child(cmd)? != ExitCode::SUCCESS {
            failed.push(lecture.number);
        }
        times.push(format!(
            "{} {:.0} s",
            lecture.number,
            started.elapsed().as_secs_f64()
        ));
    }
    println!("round trip times: {}", times.join(", "));
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(format!("the round trip fails for lectures {failed:?}"))
    }
}
