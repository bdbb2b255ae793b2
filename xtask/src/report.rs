//! `cargo xtask report [--check]`: rebuilds `runs/index.html`, one page with
//! every lecture's runs and the tools' runs (`runs/tools/`, which `makemore`
//! fills), from whatever is under `runs/` (`cargo xtask lecture N` and
//! `makemore` rebuild it after each run).
//!
//! With `--check`, headless Chromium loads the page and the `report` crate's
//! `page::browser` compares what it shows with each `report.json`, and the
//! GPT-2 and GPT-4 token views with tiktoken's ids; it saves a screenshot of
//! each section (each lecture's, and `tools`) in `runs/screenshots/`. CI runs it after the
//! lectures. Without Chromium the check is skipped with a message, except
//! in CI, where it fails.

use crate::{cargo, run_child, TaskResult};
use std::process::ExitCode;

/// tiktoken's ids of the test strings, which the token view is checked against.
const TIKTOKEN_CASES: &str = "crates/bpe/tests/fixtures/tiktoken_cases.json";

#[derive(clap::Args)]
pub struct Args {
    /// Check the page in headless Chromium, and save screenshots in runs/screenshots.
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> TaskResult {
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "-q",
        "-p",
        "report",
        "--bin",
        "runs-page",
        "--",
    ])
    .args(["--runs", "runs"]);
    if args.check {
        cmd.args(["--check", "--screenshots", "runs/screenshots"])
            .args(["--tiktoken", TIKTOKEN_CASES]);
    }
    run_child(cmd)
}

/// Rebuilds the page after a lecture's run; a failure here is only a warning,
/// since the run itself decides the exit code.
pub fn refresh_page() {
    match run(Args { check: false }) {
        Ok(code) if code == ExitCode::SUCCESS => {}
        Ok(_) => {
            eprintln!("warning: runs/index.html was not rebuilt (cargo xtask report says why)")
        }
        Err(e) => eprintln!("warning: runs/index.html was not rebuilt: {e}"),
    }
}
