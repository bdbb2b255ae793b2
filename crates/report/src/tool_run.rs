//! What every tool run (makemore, nanoGPT's `train`, char-rnn's `train`) writes beside its
//! checkpoints, and its copy on the runs page: `loss.csv`, the loss plot, and
//! the run's files mirrored into `runs/tools/<tool>-<folder>-<digest>/`.

use crate::LossRow;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The runs page's folder: `$ZTH_RUNS` if set (empty turns the mirror off),
/// else `runs/` in `workspace_root`, while that is a workspace.
pub fn runs_folder(workspace_root: &Path) -> Option<PathBuf> {
    match std::env::var_os("ZTH_RUNS") {
        Some(v) if v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => workspace_root
            .join("Cargo.lock")
            .is_file()
            .then(|| workspace_root.join("runs")),
    }
}

/// `runs/tools/<tool>-<folder name>-<digest>`: the folder's name, and a digest
/// of its whole path so that `a/out` and `b/out` stay two runs.
pub fn mirror_folder(runs: &Path, tool: &str, dir: &Path) -> PathBuf {
    let full = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let name: String = full
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().into_owned())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest: String = Sha256::digest(full.to_string_lossy().as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect();
    runs.join("tools").join(format!("{tool}-{name}-{digest}"))
}

/// Copies `files` of the run in `dir` into its [`mirror_folder`] and rebuilds
/// the runs page, so that every tool run shows there beside the lectures'. A
/// file the run has not made yet is removed from the copy, so that no older
/// run's stands in. A failure only warns: the run itself is in `dir`.
pub fn mirror_to_runs_page(runs: Option<PathBuf>, tool: &str, dir: &Path, files: &[&str]) {
    let Some(runs) = runs else { return };
    let target = mirror_folder(&runs, tool, dir);
    let copy = || -> Result<(), String> {
        for file in files {
            match std::fs::read(dir.join(file)) {
                Ok(bytes) => crate::write_atomic(&target.join(file), &bytes)
                    .map_err(|e| format!("{}: {e}", target.join(file).display()))?,
                Err(_) => {
                    let _ = std::fs::remove_file(target.join(file));
                }
            }
        }
        crate::page::write_index(&runs).map(|_| ())
    };
    if let Err(e) = copy() {
        eprintln!("{tool}: warning: the runs page was not updated: {e}");
    }
}

/// `loss.csv` and the loss plot (`loss.png`, `loss.svg`) in `dir`, as every
/// run of the workspace writes them.
pub fn write_loss_files(dir: &Path, title: &str, rows: &[LossRow]) -> Result<(), String> {
    let refs: Vec<&LossRow> = rows.iter().collect();
    let csv = crate::loss_csv(&refs).map_err(|e| e.to_string())?;
    crate::write_atomic(&dir.join("loss.csv"), &csv)
        .map_err(|e| format!("cannot write {}: {e}", dir.join("loss.csv").display()))?;
    if !rows.is_empty() {
        crate::plot::loss_curves(title, &refs, &dir.join("loss.png"), &dir.join("loss.svg"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(())
}

/// What a tool run's `report.json` says: one stage, its last losses, its
/// informational targets.
pub struct ToolReport {
    /// The tool's name on the runs page (`nanogpt`, `gpt2-finetune`).
    pub tool: String,
    /// The crate that ran it.
    pub crate_name: String,
    /// The run's seed.
    pub seed: u64,
    /// Every flag of the run.
    pub config: serde_json::Value,
    /// The stage's name.
    pub stage: String,
    /// Steps taken so far.
    pub steps: usize,
    /// Mean milliseconds per step.
    pub ms_per_step: Option<f64>,
    /// The last evaluation's losses by split.
    pub final_losses: std::collections::BTreeMap<String, f64>,
    /// What the run reproduces, and on what.
    pub source: String,
    /// Figures for the page.
    pub targets: Vec<crate::Target>,
}

impl ToolReport {
    /// Writes `report.json` into `dir` atomically; `done` stamps the finish time.
    pub fn write(self, dir: &Path, wall_seconds: f64, done: bool) -> Result<(), String> {
        let report = crate::RunReport {
            schema_version: crate::SCHEMA_VERSION,
            lecture: 0,
            tool: Some(self.tool),
            crate_name: self.crate_name,
            mode: "full".into(),
            seed: self.seed,
            config: self.config,
            wall_seconds,
            finished_at: done.then(crate::utc_now),
            stages: vec![crate::StageReport {
                name: self.stage,
                steps: self.steps,
                wall_seconds,
                ms_per_step: self.ms_per_step,
                final_losses: self.final_losses,
                source: Some(self.source),
                targets: self.targets,
            }],
        };
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        let path = dir.join("report.json");
        crate::write_atomic(&path, json.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}
