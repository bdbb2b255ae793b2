//! Building the grading crate, and reading which regions did not compile.

use super::*;

/// A compile error and the lines its spans point at, primary first.
pub(super) struct CompileError {
    pub(super) spans: Vec<(PathBuf, usize)>,
    pub(super) rendered: String,
}

/// The grading build: test executables by target, the lecture binary.
pub(super) struct Built {
    /// "lib", "bin/<name>", "test/<name>" → executable.
    pub(super) tests: BTreeMap<String, PathBuf>,
    pub(super) lecture_bin: Option<PathBuf>,
    pub(super) errors: Vec<CompileError>,
}

pub(super) fn build(opts: &Options, grading: &Path, krate: &str) -> Result<Built, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "test",
            "--release",
            "--no-run",
            "--message-format=json",
            "-p",
            krate,
        ])
        .current_dir(grading)
        .env("CARGO_TARGET_DIR", opts.root.join("target"))
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    let mut built = Built {
        tests: BTreeMap::new(),
        lecture_bin: None,
        errors: Vec::new(),
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match msg["reason"].as_str() {
            Some("compiler-message") if msg["message"]["level"] == "error" => {
                let m = &msg["message"];
                let rendered = m["rendered"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_end()
                    .to_string();
                let mut spans: Vec<&serde_json::Value> = m["spans"]
                    .as_array()
                    .map(|a| a.iter().collect())
                    .unwrap_or_default();
                spans.sort_by_key(|s| s["is_primary"] != true);
                let spans: Vec<(PathBuf, usize)> = spans
                    .iter()
                    .map(|s| {
                        (
                            PathBuf::from(s["file_name"].as_str().unwrap_or_default()),
                            s["line_start"].as_u64().unwrap_or(0) as usize,
                        )
                    })
                    .collect();
                if !spans.is_empty() || !rendered.starts_with("aborting") {
                    built.errors.push(CompileError { spans, rendered });
                }
            }
            Some("compiler-artifact") => {
                let Some(exe) = msg["executable"].as_str() else {
                    continue;
                };
                let name = msg["target"]["name"].as_str().unwrap_or_default();
                let kind = msg["target"]["kind"][0].as_str().unwrap_or_default();
                if msg["profile"]["test"] == true {
                    built
                        .tests
                        .insert(format!("{kind}/{name}"), PathBuf::from(exe));
                } else if kind == "bin" && name == format!("graded-{krate}") {
                    built.lecture_bin = Some(PathBuf::from(exe));
                }
            }
            _ => {}
        }
    }
    if built.errors.is_empty() && !out.status.success() {
        return Err(format!(
            "cargo test --no-run failed in {} ({})",
            grading.display(),
            out.status
        ));
    }
    Ok(built)
}
