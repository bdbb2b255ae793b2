//! `cargo xtask list`: the course, and how much of it exists in this checkout.

use std::process::ExitCode;

use crate::lecture::LECTURES;
use crate::{crate_exists, workspace_root, TaskResult};

#[derive(clap::Args)]
pub struct Args {
    /// Print only the numbers of lectures whose crate exists, one per line.
    #[arg(long)]
    existing: bool,
}

pub fn run(args: Args) -> TaskResult {
    let root = workspace_root();
    if args.existing {
        for l in LECTURES.iter().filter(|l| crate_exists(&root, l.krate)) {
            println!("{}", l.number);
        }
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:>2}  {:<16} {:<11} {:<52} data",
        "#", "crate", "status", "lecture"
    );
    for l in LECTURES {
        let status = if crate_exists(&root, l.krate) {
            "present"
        } else {
            "not yet"
        };
        let data = summarise(l.data);
        println!(
            "{:>2}  {:<16} {:<11} {:<52} {}",
            l.number, l.krate, status, l.title, data
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The files, with the four tokenizer files shown as `tokenizers/*`.
fn summarise(files: &[&str]) -> String {
    if files.is_empty() {
        return "-".to_string();
    }
    let mut shown: Vec<&str> = files
        .iter()
        .copied()
        .filter(|f| !f.starts_with("tokenizers/"))
        .collect();
    if files.iter().any(|f| f.starts_with("tokenizers/")) {
        shown.push("tokenizers/*");
    }
    shown.join(", ")
}
