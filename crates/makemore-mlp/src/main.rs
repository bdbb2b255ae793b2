//! `makemore-mlp lecture --out DIR [--quick] [--seed S] [--steps K] [--lr-find] [--fixed-init]`:
//! lecture 3 end to end, checked against the lecture's numbers.

mod lecture;

use clap::{Parser, Subcommand};
use lecture::LectureArgs;
use std::process::ExitCode;

#[derive(Parser)]
#[command(about = "Lecture 3: makemore part 2, the character MLP")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train the lecture's MLP and check its numbers.
    Lecture(LectureArgs),
}

fn main() -> ExitCode {
    report::main_with(tensor::check_threads_env(), 2, || {
        let Command::Lecture(args) = Cli::parse().command;
        lecture::run(args)
    })
}
