//! `cargo xtask lecture N`: fetch lecture N's data, then train and check it in release.
//!
//! Each lecture crate has a binary with a `lecture` subcommand (see crates/report):
//! `cargo run --release -p <crate> -- lecture --out runs/lecture-NN [--quick] ...`.
//! This task picks the crate, makes sure its data is there, sets `ZTH_DATA`, and
//! passes the child's exit code on, so a failed target fails the command.

use std::path::Path;

use crate::{cargo, crate_exists, run_child, workspace_root, TaskResult};

pub use course::{Lecture, LECTURES};

#[derive(clap::Args)]
pub struct Args {
    /// Lecture number, 1 to 9 (`cargo xtask list` shows them).
    number: String,
    /// A short run that still checks real numbers (used by CI).
    #[arg(long)]
    quick: bool,
    /// Seed for the run (default: the lecture's own).
    #[arg(long)]
    seed: Option<u64>,
    /// Override the number of training steps (targets then only report).
    #[arg(long)]
    steps: Option<usize>,
    /// Flags for the lecture binary itself, after `--`.
    #[arg(last = true)]
    crate_flags: Vec<String>,
}

pub fn run(args: Args) -> TaskResult {
    let root = workspace_root();
    let lecture = find(&args.number)?;
    check_exists(&root, lecture)?;
    let dir = crate::data::ensure(lecture.data)?;

    let mut cmd = cargo();
    cmd.env(data::ENV_VAR, &dir.path)
        .args(["run", "--release", "-p", lecture.krate, "--"])
        .args(lecture_args(lecture, &args));
    eprintln!(
        "lecture {} ({}): ZTH_DATA={} cargo run --release -p {} -- {}",
        lecture.number,
        lecture.title,
        dir.path.display(),
        lecture.krate,
        lecture_args(lecture, &args).join(" ")
    );
    let code = run_child(cmd);
    // The page shows a failed run too: that is when a learner looks at it.
    crate::report::refresh_page();
    code
}

/// The lecture with this number, or a message listing the valid ones.
pub fn find(number: &str) -> Result<&'static Lecture, String> {
    number
        .parse::<u32>()
        .ok()
        .and_then(|n| LECTURES.iter().find(|l| l.number == n))
        .ok_or_else(|| {
            format!(
                "there is no lecture `{number}`: the lectures are numbered 1 to {} \
                 (see `cargo xtask list`)",
                LECTURES.len()
            )
        })
}

fn check_exists(root: &Path, lecture: &Lecture) -> Result<(), String> {
    if crate_exists(root, lecture.krate) {
        Ok(())
    } else {
        Err(format!(
            "lecture {} ({}) has no crate yet: {} does not exist in this checkout",
            lecture.number,
            lecture.title,
            Path::new("crates")
                .join(lecture.krate)
                .join("Cargo.toml")
                .display()
        ))
    }
}

/// The arguments after `cargo run ... --`: the `lecture` subcommand and its flags.
fn lecture_args(lecture: &Lecture, args: &Args) -> Vec<String> {
    let mut out = format!("runs/lecture-{:02}", lecture.number);
    if args.quick {
        out.push_str("/quick");
    }
    let mut v = vec!["lecture".to_string(), "--out".to_string(), out];
    if args.quick {
        v.push("--quick".into());
    }
    if let Some(seed) = args.seed {
        v.extend(["--seed".into(), seed.to_string()]);
    }
    if let Some(steps) = args.steps {
        v.extend(["--steps".into(), steps.to_string()]);
    }
    v.extend(args.crate_flags.iter().cloned());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Result<Args, clap::Error> {
        Cli::try_parse_from(std::iter::once("lecture").chain(argv.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn numbers_outside_one_to_nine_are_refused_with_a_message() {
        for bad in ["0", "10", "x", "2.5", ""] {
            let msg = find(bad).err().unwrap();
            assert!(msg.contains(&format!("no lecture `{bad}`")), "{msg}");
            assert!(msg.contains("1 to 9"), "{msg}");
        }
        assert_eq!(find("2").unwrap().krate, "makemore-bigram");
        assert_eq!(find("8").unwrap().krate, "bpe");
    }

    #[test]
    fn every_lecture_names_catalogue_files() {
        for l in LECTURES {
            for name in l.data {
                assert!(data::file(name).is_some(), "lecture {}: {name}", l.number);
            }
        }
        let numbers: Vec<u32> = LECTURES.iter().map(|l| l.number).collect();
        assert_eq!(numbers, (1..=9).collect::<Vec<_>>());
    }

    #[test]
    fn a_missing_crate_is_named() {
        let root = std::env::temp_dir().join(format!("xtask-root-{}", std::process::id()));
        let msg = check_exists(&root, find("6").unwrap()).unwrap_err();
        assert!(msg.contains("lecture 6"), "{msg}");
        assert!(msg.contains("crates/wavenet/Cargo.toml"), "{msg}");
        std::fs::create_dir_all(root.join("crates/wavenet")).unwrap();
        std::fs::write(root.join("crates/wavenet/Cargo.toml"), "").unwrap();
        assert!(check_exists(&root, find("6").unwrap()).is_ok());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn quick_run_with_seed_steps_and_crate_flags() {
        let args = parse(&[
            "2", "--quick", "--seed", "7", "--steps", "100", "--", "--foo", "3",
        ])
        .unwrap();
        assert_eq!(
            lecture_args(find(&args.number).unwrap(), &args),
            [
                "lecture",
                "--out",
                "runs/lecture-02/quick",
                "--quick",
                "--seed",
                "7",
                "--steps",
                "100",
                "--foo",
                "3"
            ]
        );
        let args = parse(&["9"]).unwrap();
        assert_eq!(
            lecture_args(find(&args.number).unwrap(), &args),
            ["lecture", "--out", "runs/lecture-09"]
        );
    }

    #[test]
    fn unknown_flags_are_clap_errors() {
        let err = parse(&["2", "--fast"]).err().unwrap();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
        let err = parse(&["2", "--seed", "abc"]).err().unwrap();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
    }
}
