//! `cargo xtask test`: the README's test command.
//!
//! Tests that read data never skip: they fail with the data crate's message when
//! a file is missing. So this task first makes sure every file is there
//! (fetching if needed), then runs the whole workspace's tests in release, where
//! the training-flavoured tests run at full speed.

use ::data::FILES;

use crate::{cargo, run_child, TaskResult};

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
    run_child(cmd)
}
