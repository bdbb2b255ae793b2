//! `runs-page [--runs DIR] [--check] [--screenshots DIR] [--tiktoken FILE]`:
//! builds `runs/index.html` from every run under `runs/` (`cargo xtask report`
//! runs it, and `cargo xtask lecture N` after each lecture).
//!
//! With `--check`, headless Chromium loads the page and [`report::page::browser`]
//! compares what it shows with the reports. Without Chromium the check is
//! skipped with a message, except in CI (`CI` set), where it is an error.

use clap::Parser;
use report::page::{self, browser};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "runs-page",
    about = "Build runs/index.html, and check it in a browser"
)]
struct Cli {
    /// The runs folder.
    #[arg(long, default_value = "runs")]
    runs: PathBuf,
    /// Load the page in headless Chromium and check it against the reports.
    #[arg(long)]
    check: bool,
    /// With --check: save a screenshot of each lecture's section here.
    #[arg(long)]
    screenshots: Option<PathBuf>,
    /// With --check: tiktoken's ids of the test strings (crates/bpe/tests/fixtures/tiktoken_cases.json),
    /// to compare the GPT-2 and GPT-4 token views with.
    #[arg(long)]
    tiktoken: Option<PathBuf>,
}

fn main() -> ExitCode {
    report::quiet_on_broken_pipe();
    match run(flags::parse::<Cli>()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let index = page::write_index(&cli.runs)?;
    let folders = page::collect(&cli.runs);
    let size = std::fs::metadata(&index).map_or(0, |m| m.len());
    println!(
        "wrote {} ({} runs, {} KB)",
        index.display(),
        folders.len(),
        size / 1024
    );
    if !cli.check {
        return Ok(());
    }
    let Some(chromium) = browser::find_chromium() else {
        let install = "apt-get install chromium";
        if std::env::var_os("CI").is_some() {
            return Err(format!(
                "CI checks the runs page in Chromium, which is not installed ({install})"
            ));
        }
        println!("skipping the browser check: Chromium is not installed ({install})");
        return Ok(());
    };
    let tiktoken = match &cli.tiktoken {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            Some(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
        }
        None => None,
    };
    let mut first = None;
    for screen in browser::SCREENS {
        let seen = browser::look(&chromium, &index, screen)?;
        let checked = browser::check(&seen, &folders, tiktoken.as_ref()).map_err(|problems| {
            format!(
                "the runs page in {} at {}×{} px:\n  {}",
                chromium.display(),
                screen.0,
                screen.1,
                problems.join("\n  ")
            )
        })?;
        println!(
            "browser check ({}) at {}×{} px: {} sections, {} runs, each headline as in report.json and \
             within the first screen, {} target rows as in report.json, {} images decoded, {} drawings, \
             {} token splits as in tokens.json ({} equal to tiktoken's), no sideways scroll",
            chromium.display(),
            screen.0,
            screen.1,
            checked.sections,
            checked.runs,
            checked.rows,
            checked.images,
            checked.svgs,
            checked.token_splits,
            checked.tiktoken_splits,
        );
        first.get_or_insert(seen);
    }
    let seen = first.expect("two screens");
    if let Some(dir) = &cli.screenshots {
        let shots = browser::screenshots(&chromium, &index, &seen.sections, dir)?;
        println!("{} screenshots in {}", shots.len(), dir.display());
    }
    Ok(())
}
