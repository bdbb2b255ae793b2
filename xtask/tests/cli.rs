//! The xtask binary as a user meets it: exit codes and messages.

use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .env_remove("ZTH_DATA_MIRROR")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn unknown_lectures_exit_non_zero_with_a_message() {
    for bad in ["0", "10", "x"] {
        let out = xtask(&["lecture", bad]);
        assert_eq!(out.status.code(), Some(1), "lecture {bad}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("there is no lecture `{bad}`")),
            "{err}"
        );
    }
}

#[test]
fn bad_flags_get_clap_errors() {
    let out = xtask(&["lecture", "2", "--fast"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unexpected argument '--fast'"));
}

#[test]
fn list_existing_and_done_print_lecture_numbers_only() {
    for flag in ["--existing", "--done"] {
        let out = xtask(&["list", flag]);
        assert!(out.status.success(), "{flag}: {}", text(&out.stderr));
        let numbers: Vec<u32> = text(&out.stdout)
            .lines()
            .map(|line| {
                line.parse()
                    .unwrap_or_else(|_| panic!("not a number: {line:?}"))
            })
            .collect();
        // Lectures 1-8 are in this checkout and done; CI runs exactly the `--done` list.
        assert_eq!(numbers[..8], [1, 2, 3, 4, 5, 6, 7, 8], "{flag}");
        assert!(numbers.len() <= 9, "{flag}: {numbers:?}");
    }
}

#[test]
fn data_check_reports_each_file_and_fails_if_any_is_missing() {
    let good = data::path("names.txt").unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("xtask-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&good, dir.join("names.txt")).unwrap();
    let d = dir.to_str().unwrap();

    let one = xtask(&["data", "names.txt", "--check", "--dir", d]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    assert_eq!(text(&one.stdout), "ok       names.txt\n");

    let all = xtask(&["data", "--check", "--dir", d]);
    assert_eq!(all.status.code(), Some(1));
    let stdout = text(&all.stdout);
    assert!(stdout.contains("ok       names.txt"), "{stdout}");
    assert!(stdout.contains("MISSING  tokenizers/vocab.bpe"), "{stdout}");
    let stderr = text(&all.stderr);
    assert!(
        stderr.contains("6 data file(s) missing or corrupt"),
        "{stderr}"
    );
    assert!(stderr.contains("ZTH_DATA=DIR"), "{stderr}");
    // --check downloads nothing.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
