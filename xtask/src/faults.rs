//! `cargo xtask faults [--ci]`: the fault pass (issue 19), in figures.
//!
//! It builds every lecture and the `faults` crate in release and runs
//! `faults all`: every loader against its corpus of bad files, NaNs planted
//! in a run of lecture 7, every lecture's `--quick` run twice and on one
//! thread, and lecture 7's `cpu` stage killed 100 times and resumed. Then
//! each fuzz target for 1,000,000 inputs (`cargo xtask fuzz`): 27
//! minutes on two cores, measured.
//!
//! `--ci` is CI's subset, 2.5 minutes: the corpus, the NaNs, the lectures
//! that take seconds, 10 kills, and each fuzz target's committed corpus
//! replayed on stable Rust (no libFuzzer).

use crate::{cargo, run_child, TaskResult};
use ::data::FILES;
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
pub struct Args {
    /// CI's subset (2.5 minutes, no nightly toolchain).
    #[arg(long)]
    ci: bool,
    /// Inputs per fuzz target in the full pass.
    #[arg(long, default_value_t = 1_000_000)]
    fuzz_runs: u64,
}

pub fn run(args: Args) -> TaskResult {
    let names: Vec<&str> = FILES.iter().map(|f| f.name).collect();
    let data = crate::data::ensure(&names)?;
    let mut build = cargo();
    build.args(["build", "--release", "-p", "faults"]);
    // The lecture binaries, which the determinism check runs.
    for lecture in course::LECTURES {
        build.args(["-p", lecture.krate]);
    }
    if run_child(build)? != ExitCode::SUCCESS {
        return Err("the build failed".into());
    }
    let faults = crate::target_dir()?.join("release/faults");
    let mut all = Command::new(&faults);
    all.env(::data::ENV_VAR, &data.path).arg("all");
    let mut replay = Command::new(&faults);
    replay.env(::data::ENV_VAR, &data.path).arg("replay");
    if args.ci {
        all.arg("--ci");
    }
    let mut failed = run_child(all)? != ExitCode::SUCCESS;
    failed |= run_child(replay)? != ExitCode::SUCCESS;
    if !args.ci {
        println!("== fuzzing: {} inputs per target", args.fuzz_runs);
        let mut counts = Vec::new();
        for target in crate::fuzz::targets()? {
            let (runs, code) = crate::fuzz::fuzz(&target, None, Some(args.fuzz_runs))?;
            failed |= code != ExitCode::SUCCESS || runs < args.fuzz_runs;
            counts.push(format!(
                "{target:<14} {runs:>9} inputs{}",
                match code {
                    ExitCode::SUCCESS => "",
                    _ => "  FAILED (see fuzz/artifacts)",
                }
            ));
        }
        println!("== fuzz inputs per target\n{}", counts.join("\n"));
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
