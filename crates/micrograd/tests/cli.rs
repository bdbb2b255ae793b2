//! The lecture binary's flags: clap's errors, not panics.

use std::process::Command;

fn micrograd(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_micrograd"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = micrograd(&["lecture", "--out", "unused", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unexpected argument '--bogus'"), "{stderr}");
}

#[test]
fn out_is_required() {
    let out = micrograd(&["lecture", "--quick"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--out <OUT>"), "{stderr}");
}
