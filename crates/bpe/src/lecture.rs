//! `bpe lecture`: placeholder until the `report` crate lands.

use std::process::ExitCode;

/// Flags of `bpe lecture`.
#[derive(clap::Args)]
pub struct LectureArgs {
    /// Output folder.
    #[arg(long)]
    out: std::path::PathBuf,
}

pub fn run(args: LectureArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    Err(format!("lecture run into {} is not written yet", args.out.display()).into())
}
