//! `cargo xtask list`: the course, and how much of it exists in this checkout.

use std::path::Path;
use std::process::ExitCode;

use crate::lecture::LECTURES;
use crate::{crate_exists, workspace_root, TaskResult};

#[derive(clap::Args)]
pub struct Args {
    /// Print only the numbers of lectures whose crate exists, one per line.
    #[arg(long)]
    existing: bool,
    /// Print the numbers of the lectures README.md's table marks `done`, one per
    /// line (what CI runs in full); fails if none is, or if one has no crate.
    #[arg(long, conflicts_with = "existing")]
    done: bool,
}

pub fn run(args: Args) -> TaskResult {
    let root = workspace_root();
    if args.done {
        for n in done_lectures_checked(&root)? {
            println!("{n}");
        }
        return Ok(ExitCode::SUCCESS);
    }
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

/// The lectures that the README's "## Lectures" table marks `done`, in order.
///
/// Each row is `| N | `crate` | … | status |`; a row's crate must be the
/// lecture's own, so a renamed crate can't drop out of CI unnoticed.
/// The lectures README.md's table marks done (what CI runs in full); an error
/// if none is, or if one has no crate.
pub fn done_lectures_checked(root: &Path) -> Result<Vec<u32>, String> {
    let readme = root.join("README.md");
    let text = std::fs::read_to_string(&readme)
        .map_err(|e| format!("cannot read {}: {e}", readme.display()))?;
    let done = done_lectures(&text).map_err(|e| format!("{}: {e}", readme.display()))?;
    for &n in &done {
        let lecture = LECTURES.iter().find(|l| l.number == n).expect("checked");
        if !crate_exists(root, lecture.krate) {
            return Err(format!(
                "README.md marks lecture {n} done, but its crate crates/{}/Cargo.toml \
                 does not exist: rename it back, or fix the README's table",
                lecture.krate
            ));
        }
    }
    Ok(done)
}

fn done_lectures(readme: &str) -> Result<Vec<u32>, String> {
    let table = readme
        .split("\n## ")
        .find(|section| section.starts_with("Lectures"))
        .ok_or("no \"## Lectures\" section")?;
    let mut done = Vec::new();
    for line in table.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Ok(number) = cells[0].parse::<u32>() else {
            continue; // the header and the |---| row
        };
        let lecture = LECTURES
            .iter()
            .find(|l| l.number == number)
            .ok_or_else(|| {
                format!("the Lectures table has a row for lecture {number}, which does not exist")
            })?;
        let krate = cells
            .get(1)
            .map(|c| c.trim_matches('`'))
            .unwrap_or_default();
        if krate != lecture.krate {
            return Err(format!(
                "the Lectures table names crate `{krate}` for lecture {number}, whose crate is `{}`",
                lecture.krate
            ));
        }
        if cells.last() == Some(&"done") {
            done.push(number);
        }
    }
    if done.is_empty() {
        return Err("the Lectures table marks no lecture `done`".to_string());
    }
    Ok(done)
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

#[cfg(test)]
mod tests {
    use super::done_lectures;

    const TABLE: &str = "intro\n\n## Lectures\n\n| # | crate | what | targets | status |\n\
        |---|---|---|---|---|\n\
        | 1 | `micrograd` | a | b | done |\n\
        | 2 | `makemore-bigram` | a | b | planned |\n\
        | 3 | `makemore-mlp` | a | b | done |\n\n## Next\n| 4 | `batchnorm` | a | b | done |\n";

    #[test]
    fn only_rows_marked_done_in_the_lectures_section() {
        assert_eq!(done_lectures(TABLE).unwrap(), [1, 3]);
    }

    #[test]
    fn a_renamed_crate_or_an_empty_table_is_an_error() {
        let renamed = TABLE.replace("`makemore-mlp`", "`mlp`");
        let msg = done_lectures(&renamed).unwrap_err();
        assert!(msg.contains("crate `mlp` for lecture 3"), "{msg}");
        let none = TABLE.replace("| done |", "| planned |");
        assert!(done_lectures(&none)
            .unwrap_err()
            .contains("no lecture `done`"));
        assert!(done_lectures("# README\n").is_err());
    }

    #[test]
    fn the_workspace_readme_marks_lectures_one_to_nine_done() {
        let readme = std::fs::read_to_string(crate::workspace_root().join("README.md")).unwrap();
        let done = done_lectures(&readme).unwrap();
        assert_eq!(done, (1..=9).collect::<Vec<_>>());
    }
}
