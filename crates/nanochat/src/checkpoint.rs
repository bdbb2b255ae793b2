//! nanochat's `checkpoint_manager.py`: a step's model, optimizer and metadata, side by side in
//! `base_checkpoints/<model tag>/`, as `model_<step>`, `optim_<step>_rank0` and `meta_<step>.json`.
//!
//! The model and the optimizer are written in one of two formats ([`Format`]):
//! - safetensors (the default) under nanochat's `state_dict` names, each with a SHA-256 over
//!   its contents in its metadata (the workspace's [`checkpoint_file::serialize_with_digest`]),
//!   so a damaged file is refused before anything is built;
//! - nanochat's own `.pt` files ([`crate::pt`]): `model_<step>.pt` is `model.state_dict()` and
//!   `optim_<step>_rank0.pt` is `optimizer.state_dict()`, as `save_checkpoint` writes them, so
//!   nanochat's scripts load ours and we load theirs.
//!
//! `meta_<step>.json` holds nanochat's keys, and beside them what a run needs to resume bit for
//! bit: the batches its loader has drawn, the corpus' digest, and the losses so far (a
//! nanochat checkpoint has none of these, and resumes as nanochat resumes). The three files are
//! written together, each to a temporary name first.
//!
//! Reading applies `checkpoint_manager.py`'s fixes: bfloat16 tensors widened to float32,
//! torch.compile's `_orig_mod.` prefix stripped, and the keys older checkpoints lack
//! (`window_pattern`, `resid_lambdas`, `x0_lambdas`) patched in.

use crate::dataloader::LoaderState;
use crate::gpt::{Gpt, GptConfig};
use crate::optim::{AdamState, Kind, MuonAdamW, MuonState};
use crate::pt;
use checkpoint_file::{f32_bytes, open, read_f32, serialize_with_digest, to_json, NamedTensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod state_dict;
use state_dict::{fill_from_state_dict, optimizer_from_state_dict, pt_files, refuse_sharded};

/// The `format` metadata of the model file.
pub const MODEL_FORMAT: &str = "zero-to-hero/nanochat-model/1";
/// The `format` metadata of the optimizer file.
pub const OPTIM_FORMAT: &str = "zero-to-hero/nanochat-optim/1";

/// The files a checkpoint's model and optimizer are written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `model_<step>.safetensors` and `optim_<step>_rank0.safetensors`, with their digests.
    #[default]
    Safetensors,
    /// nanochat's `model_<step>.pt` and `optim_<step>_rank0.pt` (`torch.save` archives).
    Pt,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::Pt => "pt",
        }
    }
}

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
    /// resumed loader is replayed to exactly where this one stood (none in nanochat's own
    /// checkpoints, whose loader restarts after the row group it stopped in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches_drawn: Option<usize>,
    /// SHA-256 of the training corpus' documents, so a resume on other data is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_sha256: Option<String>,
    /// Every step's training loss (each forward pass's), for `loss.csv`.
    #[serde(default)]
    pub losses: Vec<(usize, f32)>,
    /// Every evaluation: `(step, val bpb)`.
    #[serde(default)]
    pub evals: Vec<(usize, f64)>,
}

/// The folder of a run's checkpoints: `<base>/base_checkpoints/<model tag>`.
pub fn checkpoint_dir(base: &Path, model_tag: &str) -> PathBuf {
    base.join("base_checkpoints").join(model_tag)
}

fn paths(dir: &Path, step: usize, format: Format) -> [PathBuf; 3] {
    let ext = format.extension();
    [
        dir.join(format!("model_{step:06}.{ext}")),
        dir.join(format!("optim_{step:06}_rank0.{ext}")),
        dir.join(format!("meta_{step:06}.json")),
    ]
}

/// The format of step `step`'s model file in `dir`: the one that is there.
fn format_of(dir: &Path, step: usize) -> Result<Format, String> {
    let [ours, ..] = paths(dir, step, Format::Safetensors);
    let [theirs, ..] = paths(dir, step, Format::Pt);
    match (ours.exists(), theirs.exists()) {
        (true, false) => Ok(Format::Safetensors),
        (false, true) => Ok(Format::Pt),
        (true, true) => Err(format!(
            "{}: both {} and {} are there; remove the one not to load",
            dir.display(),
            file_name(&ours),
            file_name(&theirs)
        )),
        (false, false) => Err(format!(
            "{}: no model of step {step} ({} or {})",
            dir.display(),
            file_name(&ours),
            file_name(&theirs)
        )),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
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

/// Writes step `meta.step`'s three files into `dir`, the model and the optimizer in `format`.
pub fn save(
    dir: &Path,
    meta: &Meta,
    model: &Gpt,
    optimizer: &MuonAdamW,
    format: Format,
) -> Result<(), String> {
    let [model_path, optim_path, meta_path] = paths(dir, meta.step, format);
    let (model_bytes, optim_bytes) = match format {
        Format::Safetensors => safetensors_files(meta, model, optimizer)?,
        Format::Pt => pt_files(&model_path, &optim_path, model, optimizer)?,
    };
    let meta_bytes = serde_json::to_vec_pretty(meta).map_err(|e| e.to_string())?;
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

fn safetensors_files(
    meta: &Meta,
    model: &Gpt,
    optimizer: &MuonAdamW,
) -> Result<(Vec<u8>, Vec<u8>), String> {
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
    Ok((model_bytes, optim_bytes))
}

/// Python's `json.dump` writes an infinite float as `Infinity` (nanochat's `min_val_bpb`
/// before the first evaluation), which JSON has not: such a bare word becomes `null`.
fn python_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(word) = ["-Infinity", "Infinity", "NaN"]
            .iter()
            .find(|w| rest.starts_with(**w))
        {
            out.push_str("null");
            rest = &rest[word.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Reads step `step`'s metadata from `dir`.
pub fn load_meta(dir: &Path, step: usize) -> Result<Meta, String> {
    let [_, _, meta_path] = paths(dir, step, Format::Safetensors);
    let text =
        std::fs::read_to_string(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?;
    serde_json::from_str(&python_json(&text)).map_err(|e| {
        format!(
            "{}: not a nanochat checkpoint's metadata ({e})",
            meta_path.display()
        )
    })
}

/// The model saved at `step` in `dir` (in either format), built from the shape its metadata
/// gives.
pub fn load_model(dir: &Path, step: usize) -> Result<(Gpt, Meta), String> {
    let meta = load_meta(dir, step)?;
    let format = format_of(dir, step)?;
    let [model_path, _, _] = paths(dir, step, format);
    let mut model = Gpt::zeros(meta.model_config.clone())
        .map_err(|e| format!("{}: {e}", model_path.display()))?;
    let filled = match format {
        Format::Safetensors => std::fs::read(&model_path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| fill_from_safetensors(&mut model, &bytes)),
        Format::Pt => std::fs::File::open(&model_path)
            .map_err(|e| e.to_string())
            .and_then(|file| pt::load_from(std::io::BufReader::new(file)))
            .and_then(|state_dict| fill_from_state_dict(&mut model, state_dict)),
    };
    filled.map_err(|e| format!("{}: {e}", model_path.display()))?;
    Ok((model, meta))
}

fn fill_from_safetensors(model: &mut Gpt, bytes: &[u8]) -> Result<(), String> {
    let file = open(bytes, "not a nanochat model checkpoint")?;
    file.check_format(MODEL_FORMAT)?;
    file.check_digest()?;
    if file.tensors.len() != model.params.len() {
        return Err(format!(
            "{} tensors, the model of its metadata has {}",
            file.tensors.len(),
            model.params.len()
        ));
    }
    for (_, p) in model.params.iter_mut() {
        let values = read_f32(&file.tensors, &p.name, p.value.shape())?;
        p.value = tensor::Tensor::from_vec(values, p.value.shape());
    }
    Ok(())
}

/// Fills `optimizer`'s state from step `step`'s optimizer file (in either format), and its
/// groups' settings (betas, momentum, weight decay) as `load_state_dict` does; `model` names
/// its parameters. The learning rates stay as they are: base_train sets them each step,
/// chat_sft.py restores its own.
pub fn load_optimizer(
    dir: &Path,
    step: usize,
    model: &Gpt,
    optimizer: &mut MuonAdamW,
) -> Result<(), String> {
    let format = format_of(dir, step)?;
    let [_, optim_path, _] = paths(dir, step, format);
    let bytes = std::fs::read(&optim_path).map_err(|e| format!("{}: {e}", optim_path.display()))?;
    let restored = match format {
        Format::Safetensors => optimizer_from_safetensors(&bytes, model, optimizer),
        Format::Pt => {
            refuse_sharded(dir, step)?;
            optimizer_from_state_dict(&bytes, model, optimizer)
        }
    };
    restored.map_err(|e| format!("{}: {e}", optim_path.display()))
}

fn optimizer_from_safetensors(
    bytes: &[u8],
    model: &Gpt,
    optimizer: &mut MuonAdamW,
) -> Result<(), String> {
    let file = open(bytes, "not a nanochat optimizer checkpoint")?;
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
