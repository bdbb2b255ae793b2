//! What a nanochat run leaves beside its checkpoints, and on the runs page: `loss.csv`, the loss
//! plot and `report.json`. base_train and chat_sft both end with [`write_run_files`].

use crate::checkpoint::Meta;
use std::path::PathBuf;

/// What a run leaves: the last checkpoint's metadata and the folder it is in.
pub struct Finished {
    /// The metadata of the checkpoint written at the end.
    pub meta: Meta,
    /// `base_checkpoints/<model tag>`.
    pub dir: PathBuf,
}

/// Which script made a run, for its run files.
pub struct Stage {
    /// The runs page's name for it.
    pub tool: &'static str,
    /// The stage column of `loss.csv`.
    pub stage: &'static str,
    /// The script it reproduces.
    pub source: &'static str,
}

/// `loss.csv`, the loss plot and `report.json` beside the checkpoints, copied to the runs page:
/// each step's training loss (nats, its last forward pass) and each evaluation's bits per byte.
pub fn write_run_files(finished: &Finished, wall_seconds: f64, kind: &Stage) -> Result<(), String> {
    let meta = &finished.meta;
    let mut rows: Vec<report::LossRow> = Vec::new();
    for &(step, loss) in &meta.losses {
        match rows.last_mut() {
            Some(row) if row.step == step => row.train = loss as f64,
            _ => rows.push(report::LossRow {
                step,
                stage: kind.stage.into(),
                train: loss as f64,
                val: None,
                lr: None,
            }),
        }
    }
    for &(step, bpb) in &meta.evals {
        match rows.iter_mut().find(|r| r.step == step) {
            Some(row) => row.val = Some(bpb),
            None => rows.push(report::LossRow {
                step,
                stage: kind.stage.into(),
                train: f64::NAN,
                val: Some(bpb),
                lr: None,
            }),
        }
    }
    // The last evaluation comes after the last step, so its row has a val and no train loss.
    rows.sort_by_key(|r| r.step);
    let dir = &finished.dir;
    report::tool_run::write_loss_files(
        dir,
        &format!(
            "nanochat {}: train loss (nats), val bits per byte",
            kind.stage
        ),
        &rows,
    )?;
    let mut final_losses = std::collections::BTreeMap::new();
    let mut targets = Vec::new();
    if let Some(bpb) = meta.val_bpb {
        final_losses.insert("val_bpb".to_string(), bpb);
        targets.push(report::Target::info(
            &format!("val bpb at step {}", meta.step),
            bpb,
        ));
    }
    if let Some(&(step, bpb)) = meta.evals.first() {
        targets.push(report::Target::info(
            &format!("val bpb at step {step}"),
            bpb,
        ));
    }
    report::tool_run::ToolReport {
        tool: kind.tool.into(),
        crate_name: "nanochat".into(),
        seed: 42,
        config: meta.user_config.clone(),
        stage: kind.stage.into(),
        steps: meta.step,
        ms_per_step: None,
        final_losses,
        source: kind.source.into(),
        targets,
    }
    .write(dir, wall_seconds, true)?;
    let runs = report::tool_run::runs_folder(&data::workspace_root());
    report::tool_run::mirror_to_runs_page(
        runs,
        kind.tool,
        dir,
        &["report.json", "loss.csv", "loss.png", "loss.svg"],
    );
    Ok(())
}
