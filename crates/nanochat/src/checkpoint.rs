//! nanochat's `checkpoint_manager.py`: a step's model, optimizer and metadata, side by side in
//! `base_checkpoints/<model tag>/`, as `model_<step>`, `optim_<step>_rank0` and `meta_<step>.json`.
//!
//! The model and the optimizer are safetensors files (nanochat pickles them with `torch.save`)
//! under nanochat's `state_dict` names, each with a SHA-256 over its contents in its metadata
//! (the workspace's [`checkpoint_file::serialize_with_digest`]), so a damaged file is refused
//! before anything is built. `meta_<step>.json` holds nanochat's keys, and beside them what a
//! run needs to resume bit for bit: the batches its loader has drawn, the corpus' digest, and
//! the losses so far. The three files are written together, each to a temporary name first.

use crate::dataloader::LoaderState;
use crate::gpt::{Gpt, GptConfig};
use crate::optim::{AdamState, Kind, MuonAdamW, MuonState};
use checkpoint_file::{f32_bytes, open, read_f32, serialize_with_digest, to_json, NamedTensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The `format` metadata of the model file.
pub const MODEL_FORMAT: &str = "zero-to-hero/nanochat-model/1";
/// The `format` metadata of the optimizer file.
pub const OPTIM_FORMAT: &str = "zero-to-hero/nanochat-optim/1";

/// `loop_state`: the loop's variables other than the step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    /// The lowest validation bpb so far (infinite before the first evaluation, which JSON
    /// writes as null).
    #[serde(deserialize_with = "null_as_infinity")]
    pub min_val_bpb: f64,
    /// The EMA of the training loss (β = 0.9), before debiasing.
    pub smooth_train_loss: f64,
    /// Seconds of training after the first 10 steps.
    pub total_training_time: f64,
}

fn null_as_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Option::<f64>::deserialize(d).map(|v| v.unwrap_or(f64::INFINITY))
}

/// `meta_<step>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Steps taken.
    pub step: usize,
    /// The last validation bpb, if any.
    pub val_bpb: Option<f64>,
    /// The model's shape.
    pub model_config: GptConfig,
    /// Every flag of the run.
    pub user_config: serde_json::Value,
    /// Rows per forward pass.
    pub device_batch_size: usize,
    /// Tokens per row.
    pub max_seq_len: usize,
    /// Tokens per step.
    pub total_batch_size: usize,
    /// Where the loader's last documents came from.
    pub dataloader_state_dict: LoaderState,
    /// The loop's other variables.
    pub loop_state: LoopState,
    /// Batches the train loader has handed out (the next forward pass's included), so that a
    /// resumed loader is replayed to exactly where this one stood.
    pub batches_drawn: usize,
    /// SHA-256 of the training corpus' documents, so a resume on other data is refused.
    pub corpus_sha256: String,
    /// Every step's training loss (each forward pass's), for `loss.csv`.
    pub losses: Vec<(usize, f32)>,
    /// Every evaluation: `(step, val bpb)`.
    pub evals: Vec<(usize, f64)>,
}

/// The folder of a run's checkpoints: `<base>/base_checkpoints/<model tag>`.
pub fn checkpoint_dir(base: &Path, model_tag: &str) -> PathBuf {
    base.join("base_checkpoints").join(model_tag)
}

fn paths(dir: &Path, step: usize) -> [PathBuf; 3] {
    [
        dir.join(format!("model_{step:06}.safetensors")),
        dir.join(format!("optim_{step:06}_rank0.safetensors")),
        dir.join(format!("meta_{step:06}.json")),
    ]
}

fn finite(name: &str, values: &[f32]) -> Result<(), String> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(format!(
            "not saving a checkpoint: {name} holds {} at index {i}",
            values[i]
        )),
        None => Ok(()),
    }
}

/// Writes step `meta.step`'s three files into `dir`.
pub fn save(dir: &Path, meta: &Meta, model: &Gpt, optimizer: &MuonAdamW) -> Result<(), String> {
    let mut weights: Vec<NamedTensor> = Vec::new();
    let mut state: Vec<NamedTensor> = Vec::new();
    let mut adam_steps = HashMap::new();
    for (id, p) in model.params.iter() {
        let (shape, values) = (p.value.shape().to_vec(), p.value.to_vec());
        finite(&p.name, &values)?;
        weights.push((p.name.clone(), shape.clone(), f32_bytes(&values)));
        if let Some(Some(adam)) = optimizer.adam.get(id.0) {
            for (kind, v) in [("exp_avg", &adam.exp_avg), ("exp_avg_sq", &adam.exp_avg_sq)] {
                finite(&format!("{kind}/{}", p.name), v)?;
                state.push((format!("{kind}/{}", p.name), shape.clone(), f32_bytes(v)));
            }
            adam_steps.insert(p.name.clone(), adam.step);
        }
        if let Some(Some(muon)) = optimizer.muon.get(id.0) {
            let second = &muon.second_momentum_buffer;
            finite(
                &format!("momentum_buffer/{}", p.name),
                &muon.momentum_buffer,
            )?;
            finite(&format!("second_momentum_buffer/{}", p.name), second)?;
            state.push((
                format!("momentum_buffer/{}", p.name),
                shape.clone(),
                f32_bytes(&muon.momentum_buffer),
            ));
            state.push((
                format!("second_momentum_buffer/{}", p.name),
                vec![second.len()],
                f32_bytes(second),
            ));
        }
    }
    // Each group's settings as the last step left them (Muon's scheduled weight decay among
    // them): `load_state_dict` brings them back, and chat_sft.py keeps them.
    let group_kinds: Vec<&Kind> = optimizer.groups.iter().map(|g| &g.kind).collect();
    let model_bytes = serialize_with_digest(
        &weights,
        HashMap::from([
            ("format".to_string(), MODEL_FORMAT.to_string()),
            ("model_config".to_string(), to_json(&meta.model_config)?),
        ]),
    )?;
    let optim_bytes = serialize_with_digest(
        &state,
        HashMap::from([
            ("format".to_string(), OPTIM_FORMAT.to_string()),
            ("adam_steps".to_string(), to_json(&adam_steps)?),
            ("group_kinds".to_string(), to_json(&group_kinds)?),
        ]),
    )?;
    let meta_bytes = serde_json::to_vec_pretty(meta).map_err(|e| e.to_string())?;
    let [model_path, optim_path, meta_path] = paths(dir, meta.step);
    report::write_atomic_set(&[
        (&model_path, &model_bytes),
        (&optim_path, &optim_bytes),
        (&meta_path, &meta_bytes),
    ])
    .map_err(|e| {
        format!(
            "cannot write the checkpoint of step {} in {}: {e}",
            meta.step,
            dir.display()
        )
    })
}

/// Reads step `step`'s metadata from `dir`.
pub fn load_meta(dir: &Path, step: usize) -> Result<Meta, String> {
    let [_, _, meta_path] = paths(dir, step);
    let text =
        std::fs::read_to_string(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a nanochat checkpoint's metadata ({e})",
            meta_path.display()
        )
    })
}

/// The model saved at `step` in `dir`, built from the shape its metadata gives.
pub fn load_model(dir: &Path, step: usize) -> Result<(Gpt, Meta), String> {
    let meta = load_meta(dir, step)?;
    let [model_path, _, _] = paths(dir, step);
    let bytes = std::fs::read(&model_path).map_err(|e| format!("{}: {e}", model_path.display()))?;
    let file = open(&bytes, "not a nanochat model checkpoint")
        .and_then(|f| {
            f.check_format(MODEL_FORMAT)?;
            f.check_digest()?;
            Ok(f)
        })
        .map_err(|e| format!("{}: {e}", model_path.display()))?;
    let mut model = Gpt::zeros(meta.model_config.clone())
        .map_err(|e| format!("{}: {e}", model_path.display()))?;
    let names: Vec<String> = model.params.iter().map(|(_, p)| p.name.clone()).collect();
    if file.tensors.len() != names.len() {
        return Err(format!(
            "{}: {} tensors, the model of its metadata has {}",
            model_path.display(),
            file.tensors.len(),
            names.len()
        ));
    }
    for (_, p) in model.params.iter_mut() {
        let values = read_f32(&file.tensors, &p.name, p.value.shape())
            .map_err(|e| format!("{}: {e}", model_path.display()))?;
        p.value = tensor::Tensor::from_vec(values, p.value.shape());
    }
    Ok((model, meta))
}

/// Fills `optimizer`'s state from step `step`'s optimizer file, and its groups' settings
/// (betas, momentum, weight decay) as `load_state_dict` does; `model` names its parameters.
/// The learning rates stay as they are: base_train sets them each step, chat_sft.py restores
/// its own.
pub fn load_optimizer(
    dir: &Path,
    step: usize,
    model: &Gpt,
    optimizer: &mut MuonAdamW,
) -> Result<(), String> {
    let [_, optim_path, _] = paths(dir, step);
    let bytes = std::fs::read(&optim_path).map_err(|e| format!("{}: {e}", optim_path.display()))?;
    let mut restore = || -> Result<(), String> {
        let file = open(&bytes, "not a nanochat optimizer checkpoint")?;
        file.check_format(OPTIM_FORMAT)?;
        file.check_digest()?;
        let adam_steps: HashMap<String, u64> = file.json("adam_steps")?;
        let kinds: Vec<Kind> = file.json("group_kinds")?;
        if kinds.len() != optimizer.groups.len() {
            return Err(format!(
                "{} parameter groups, the model's optimizer has {}",
                kinds.len(),
                optimizer.groups.len()
            ));
        }
        for (group, kind) in optimizer.groups.iter_mut().zip(kinds) {
            if std::mem::discriminant(&group.kind) != std::mem::discriminant(&kind) {
                return Err("its parameter groups are of other kinds than the model's".into());
            }
            group.kind = kind;
        }
        for (id, p) in model.params.iter() {
            let shape = p.value.shape();
            if let Some(&step) = adam_steps.get(&p.name) {
                optimizer.adam[id.0] = Some(AdamState {
                    step,
                    exp_avg: read_f32(&file.tensors, &format!("exp_avg/{}", p.name), shape)?,
                    exp_avg_sq: read_f32(&file.tensors, &format!("exp_avg_sq/{}", p.name), shape)?,
                });
            }
            let momentum = format!("momentum_buffer/{}", p.name);
            if file.tensors.tensor(&momentum).is_ok() {
                let (m, n) = (shape[0], shape[1]);
                let second = format!("second_momentum_buffer/{}", p.name);
                optimizer.muon[id.0] = Some(MuonState {
                    momentum_buffer: read_f32(&file.tensors, &momentum, shape)?,
                    second_momentum_buffer: read_f32(&file.tensors, &second, &[m.max(n)])?,
                });
            }
        }
        Ok(())
    };
    restore().map_err(|e| format!("{}: {e}", optim_path.display()))
}

/// The largest step with a metadata file in `dir` (`find_last_step`).
pub fn last_step(dir: &Path) -> Result<usize, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("meta_")?
                .strip_suffix(".json")?
                .parse::<usize>()
                .ok()
        })
        .max()
        .ok_or_else(|| {
            format!(
                "{}: no checkpoints in it (no meta_<step>.json)",
                dir.display()
            )
        })
}
