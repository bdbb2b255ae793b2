//! `cargo xtask bench`: every crate's criterion benches, then, when a Python with
//! torch is available, the Python reference scripts kept beside them
//! (`benches/*.py`, e.g. `matmul_torch.py`), which print their own figures.
//! For developers comparing speed; nothing here gates.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::{cargo, run_child, workspace_root, TaskResult};

#[derive(clap::Args)]
pub struct Args {
    /// Only this crate (e.g. tensor).
    #[arg(long = "crate")]
    krate: Option<String>,
}

pub fn run(args: Args) -> TaskResult {
    let root = workspace_root();
    let mut crates = crates_with_benches(&root)?;
    if let Some(only) = &args.krate {
        if !crates.iter().any(|c| c == only) {
            return Err(format!(
                "crate `{only}` has no benches/ folder (crates with benches: {})",
                if crates.is_empty() {
                    "none".to_string()
                } else {
                    crates.join(", ")
                }
            ));
        }
        crates.retain(|c| c == only);
    }
    let python = find_python();
    for krate in &crates {
        let mut cmd = cargo();
        cmd.env(::data::ENV_VAR, &::data::DataDir::resolve().path)
            .args(["bench", "-p", krate]);
        let code = run_child(cmd)?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
        let scripts = reference_scripts(&root.join("crates").join(krate).join("benches"))?;
        match &python {
            Some(py) => {
                for script in scripts {
                    eprintln!("{py} {}", script.display());
                    let mut cmd = Command::new(py);
                    cmd.current_dir(&root).arg(&script);
                    let code = run_child(cmd)?;
                    if code != ExitCode::SUCCESS {
                        return Ok(code);
                    }
                }
            }
            None if !scripts.is_empty() => eprintln!(
                "no Python with torch found (set ZTH_PYTHON); skipped {} reference script(s) for {krate}",
                scripts.len()
            ),
            None => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn crates_with_benches(root: &Path) -> Result<Vec<String>, String> {
    let dir = root.join("crates");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("benches").is_dir() && e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

fn reference_scripts(benches: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(benches).map_err(|e| format!("{}: {e}", benches.display()))?;
    let mut scripts: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    scripts.sort();
    Ok(scripts)
}

/// `$ZTH_PYTHON`, else `python3`, if it can `import torch`.
fn find_python() -> Option<String> {
    let py = std::env::var("ZTH_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&py)
        .args(["-c", "import torch"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(py)
}
