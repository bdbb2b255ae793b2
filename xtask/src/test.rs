//! `cargo xtask test`: the README's test command.
//!
//! Tests that read data never skip: they fail with the data crate's message when
//! a file is missing. So this task first makes sure every file is there
//! (fetching if needed), then runs the whole workspace's tests in release, where
//! the training-flavoured tests run at full speed.
//!
//! Then lecture 9's data-parallel tests, which need OpenMPI and the `gpt2`
//! crate's `mpi` feature: run where OpenMPI is installed, required in CI
//! (`CI` set), and skipped with the install line elsewhere, so that the
//! command passes on a machine without MPI.

use ::data::FILES;
use std::process::ExitCode;

use crate::{cargo, run_child, TaskResult};

/// What a user installs for `--features mpi` (Debian and Ubuntu package names).
pub const MPI_PACKAGES: &str = "openmpi-bin libopenmpi-dev libclang-dev";

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> TaskResult {
    let names: Vec<&str> = FILES.iter().map(|f| f.name).collect();
    let dir = crate::data::ensure(&names)?;
    eprintln!(
        "ZTH_DATA={} cargo test --workspace --release",
        dir.path.display()
    );
    let mut cmd = cargo();
    cmd.env(::data::ENV_VAR, &dir.path)
        .args(["test", "--workspace", "--release"]);
    let code = run_child(cmd)?;
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }

    if !["mpirun", "mpicc"]
        .iter()
        .all(|p| course::find_on_path(p).is_some())
    {
        let install = format!("apt install {MPI_PACKAGES}");
        if std::env::var_os("CI").is_some() {
            return Err(format!(
                "CI runs the data-parallel tests, and mpirun or mpicc is missing: {install}"
            ));
        }
        eprintln!("skipping lecture 9's data-parallel tests: OpenMPI is not installed ({install})");
        return Ok(ExitCode::SUCCESS);
    }
    // One test at a time: each starts two ranks, and the machine may have two cores.
    let args = [
        "test",
        "--release",
        "-p",
        "gpt2",
        "--features",
        "mpi",
        "--test",
        "ddp",
        "--",
        "--test-threads",
        "1",
    ];
    eprintln!("ZTH_DATA={} cargo {}", dir.path.display(), args.join(" "));
    let mut cmd = cargo();
    cmd.env(::data::ENV_VAR, &dir.path).args(args);
    run_child(cmd)
}
