//! `cargo xtask assign N --out DIR [--regions a,b,…]`: a student's copy of
//! lecture N, with the code between each `// ANCHOR:` pair blanked to a
//! `todo!` that names its region and the page section that explains it.
//!
//! The work is done by `crates/classroom` (it parses Rust with `syn`, which
//! this task runner does without); this task finds the lecture and starts it.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::lecture::{find, Lecture};
use crate::{cargo, run_child, workspace_root, TaskResult};

#[derive(clap::Args)]
pub struct Args {
    /// The lecture's number (1 to 9).
    number: String,
    /// The folder to write the student's workspace into (new or empty).
    #[arg(long)]
    out: PathBuf,
    /// Only these regions, comma-separated (default: every region of the crate).
    #[arg(long, value_delimiter = ',')]
    regions: Vec<String>,
}

pub fn run(args: Args) -> TaskResult {
    let lecture = find(&args.number)?;
    build_classroom()?;
    let out = std::env::current_dir()
        .map_err(|e| format!("the current folder: {e}"))?
        .join(&args.out);
    let mut cmd = classroom()?;
    cmd.arg("assign")
        .args(lecture_flags(lecture))
        .arg("--out")
        .arg(out);
    if !args.regions.is_empty() {
        cmd.arg("--regions").arg(args.regions.join(","));
    }
    run_child(cmd)
}

/// Builds `crates/classroom` in release.
pub fn build_classroom() -> Result<(), String> {
    let mut build = cargo();
    build.args(["build", "--release", "-p", "classroom"]);
    if run_child(build)? != ExitCode::SUCCESS {
        return Err("building crates/classroom failed".into());
    }
    Ok(())
}

/// The `classroom` binary that [`build_classroom`] built, given the
/// repository it grades against.
pub fn classroom() -> Result<Command, String> {
    let mut cmd = Command::new(crate::target_dir()?.join("release/classroom"));
    cmd.arg("--root").arg(workspace_root());
    Ok(cmd)
}

/// `--lecture N --crate NAME --data FILE …`
pub fn lecture_flags(lecture: &Lecture) -> Vec<String> {
    let mut v = vec![
        "--lecture".to_string(),
        lecture.number.to_string(),
        "--crate".to_string(),
        lecture.krate.to_string(),
    ];
    for d in lecture.data {
        v.extend(["--data".to_string(), d.to_string()]);
    }
    v
}
