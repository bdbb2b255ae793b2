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
use crate::pt::{self, Obj, StoredTensor};
use checkpoint_file::{f32_bytes, open, read_f32, serialize_with_digest, to_json, NamedTensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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

/// `model.state_dict()` and `optimizer.state_dict()` as nanochat's `save_checkpoint` pickles
/// them (float32, the parameters in the model's order).
fn pt_files(
    model_path: &Path,
    optim_path: &Path,
    model: &Gpt,
    optimizer: &MuonAdamW,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut weights = Vec::new();
    for (_, p) in model.params.iter() {
        let values = p.value.to_vec();
        finite(&p.name, &values)?;
        let tensor = StoredTensor::f32(p.value.shape(), &values);
        weights.push((Obj::Str(p.name.clone()), Obj::Tensor(tensor)));
    }
    let state = optimizer_state_dict(model, optimizer)?;
    let archive = |path: &Path| {
        let stem = path.file_stem().unwrap_or_default();
        stem.to_string_lossy().into_owned()
    };
    Ok((
        pt::save(&archive(model_path), &Obj::OrderedDict(weights))?,
        pt::save(&archive(optim_path), &state)?,
    ))
}

fn str_key(key: &str) -> Obj {
    Obj::Str(key.to_string())
}

/// `MuonAdamW.state_dict()`: `state` by parameter index (the parameters numbered through the
/// groups in order), AdamW's per parameter and Muon's per group (kept under the group's first
/// parameter, its buffers stacked), and `param_groups` with their settings.
fn optimizer_state_dict(model: &Gpt, optimizer: &MuonAdamW) -> Result<Obj, String> {
    let mut state = Vec::new();
    let mut groups = Vec::new();
    let mut index = 0i64;
    let name = |id: autograd::ParamId| &model.params.get(id).name;
    // AdamW's state first, then Muon's: the order in which step() first creates them.
    let mut muon_state = Vec::new();
    for group in &optimizer.groups {
        let first = index;
        let params: Vec<Obj> = (0..group.params.len() as i64)
            .map(|i| Obj::Int(first + i))
            .collect();
        index += group.params.len() as i64;
        let mut settings = vec![
            (str_key("kind"), str_key("adamw")),
            (str_key("lr"), Obj::Float(group.lr)),
        ];
        match &group.kind {
            Kind::AdamW {
                betas,
                eps,
                weight_decay,
            } => {
                settings.extend([
                    (
                        str_key("betas"),
                        Obj::Tuple(vec![Obj::Float(betas.0), Obj::Float(betas.1)]),
                    ),
                    (str_key("eps"), Obj::Float(*eps)),
                    (str_key("weight_decay"), Obj::Float(*weight_decay)),
                ]);
                for (i, &id) in group.params.iter().enumerate() {
                    let Some(Some(adam)) = optimizer.adam.get(id.0) else {
                        continue;
                    };
                    let shape = model.params.value(id).shape();
                    finite(&format!("exp_avg of {}", name(id)), &adam.exp_avg)?;
                    finite(&format!("exp_avg_sq of {}", name(id)), &adam.exp_avg_sq)?;
                    state.push((
                        Obj::Int(first + i as i64),
                        Obj::Dict(vec![
                            (str_key("step"), Obj::Int(adam.step as i64)),
                            (
                                str_key("exp_avg"),
                                Obj::Tensor(StoredTensor::f32(shape, &adam.exp_avg)),
                            ),
                            (
                                str_key("exp_avg_sq"),
                                Obj::Tensor(StoredTensor::f32(shape, &adam.exp_avg_sq)),
                            ),
                        ]),
                    ));
                }
            }
            Kind::Muon {
                momentum,
                ns_steps,
                beta2,
                weight_decay,
            } => {
                settings[0].1 = str_key("muon");
                settings.extend([
                    (str_key("momentum"), Obj::Float(*momentum)),
                    (str_key("ns_steps"), Obj::Int(*ns_steps as i64)),
                    (str_key("beta2"), Obj::Float(*beta2)),
                    (str_key("weight_decay"), Obj::Float(*weight_decay)),
                ]);
                let states: Vec<&MuonState> = group
                    .params
                    .iter()
                    .filter_map(|id| optimizer.muon.get(id.0).and_then(Option::as_ref))
                    .collect();
                if states.len() == group.params.len() && !states.is_empty() {
                    let shape = model.params.value(group.params[0]).shape();
                    let (k, m, n) = (states.len(), shape[0], shape[1]);
                    let second_shape = if m >= n { [k, m, 1] } else { [k, 1, n] };
                    let mut momentum = Vec::with_capacity(k * m * n);
                    let mut second = Vec::with_capacity(k * m.max(n));
                    for (s, &id) in states.iter().zip(&group.params) {
                        finite(
                            &format!("momentum_buffer of {}", name(id)),
                            &s.momentum_buffer,
                        )?;
                        finite(
                            &format!("second_momentum_buffer of {}", name(id)),
                            &s.second_momentum_buffer,
                        )?;
                        momentum.extend_from_slice(&s.momentum_buffer);
                        second.extend_from_slice(&s.second_momentum_buffer);
                    }
                    muon_state.push((
                        Obj::Int(first),
                        Obj::Dict(vec![
                            (
                                str_key("momentum_buffer"),
                                Obj::Tensor(StoredTensor::f32(&[k, m, n], &momentum)),
                            ),
                            (
                                str_key("second_momentum_buffer"),
                                Obj::Tensor(StoredTensor::f32(&second_shape, &second)),
                            ),
                        ]),
                    ));
                }
            }
        }
        settings.push((str_key("initial_lr"), Obj::Float(group.initial_lr)));
        settings.push((str_key("params"), Obj::List(params)));
        groups.push(Obj::Dict(settings));
    }
    state.extend(muon_state);
    Ok(Obj::Dict(vec![
        (str_key("state"), Obj::Dict(state)),
        (str_key("param_groups"), Obj::List(groups)),
    ]))
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
            .and_then(|state_dict| fill_from_state_dict(&mut model, &state_dict)),
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

/// `build_model`'s loading of a `model.state_dict()`: `_orig_mod.` stripped, bfloat16 widened,
/// `resid_lambdas` (ones) and `x0_lambdas` (zeros) patched in where an older checkpoint lacks
/// them, then `load_state_dict(strict=True)`: every name and shape must be the model's.
fn fill_from_state_dict(model: &mut Gpt, obj: &Obj) -> Result<(), String> {
    let items = obj
        .items()
        .ok_or("its object is not a state_dict (a dict)")?;
    let mut tensors: HashMap<String, &StoredTensor> = HashMap::new();
    for (k, v) in items {
        let (Obj::Str(k), Obj::Tensor(t)) = (k, v) else {
            return Err("its state_dict holds an entry that is not a named tensor".into());
        };
        tensors.insert(k.strip_prefix("_orig_mod.").unwrap_or(k).to_string(), t);
    }
    let n_layer = model.config.n_layer;
    let patches = [
        (
            "resid_lambdas",
            StoredTensor::f32(&[n_layer], &vec![1.0; n_layer]),
        ),
        (
            "x0_lambdas",
            StoredTensor::f32(&[n_layer], &vec![0.0; n_layer]),
        ),
    ];
    for (name, patch) in &patches {
        tensors.entry(name.to_string()).or_insert(patch);
    }
    let missing: Vec<&str> = model
        .params
        .iter()
        .map(|(_, p)| p.name.as_str())
        .filter(|n| !tensors.contains_key(*n))
        .collect();
    if !missing.is_empty() {
        return Err(format!("its state_dict lacks {}", missing.join(", ")));
    }
    let mut unexpected: Vec<&str> = tensors
        .keys()
        .map(String::as_str)
        .filter(|n| !model.params.iter().any(|(_, p)| p.name == *n))
        .collect();
    if !unexpected.is_empty() {
        unexpected.sort();
        return Err(format!(
            "its state_dict holds {}, which the model of its metadata has not",
            unexpected.join(", ")
        ));
    }
    for (_, p) in model.params.iter_mut() {
        let t = tensors[&p.name];
        if t.shape != p.value.shape() {
            return Err(format!(
                "{} has the shape {:?}, the model of its metadata has {:?}",
                p.name,
                t.shape,
                p.value.shape()
            ));
        }
        p.value = tensor::Tensor::from_vec(t.to_f32(&p.name)?, p.value.shape());
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

/// A run on several ranks leaves one optimizer file per rank, each holding its shard of the
/// state; one process cannot take their place.
fn refuse_sharded(dir: &Path, step: usize) -> Result<(), String> {
    let rank1 = dir.join(format!("optim_{step:06}_rank1.pt"));
    if rank1.exists() {
        let ranks = (1..)
            .take_while(|r| dir.join(format!("optim_{step:06}_rank{r}.pt")).exists())
            .count()
            + 1;
        return Err(format!(
            "{}: step {step}'s optimizer state is sharded over {ranks} ranks \
             (optim_{step:06}_rank0.pt to rank{}.pt), and this run is one process: resume it on \
             {ranks} ranks, or start from the model alone",
            dir.display(),
            ranks - 1
        ));
    }
    Ok(())
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

fn number(group: &Obj, key: &str, at: usize) -> Result<f64, String> {
    group
        .get(key)
        .and_then(Obj::as_f64)
        .ok_or_else(|| format!("param_groups[{at}] has no number {key:?}"))
}

/// A float32 (or bfloat16) tensor of `shape` under `key` in a state entry.
fn state_tensor(entry: &Obj, key: &str, shape: &[usize], what: &str) -> Result<Vec<f32>, String> {
    match entry.get(key) {
        Some(Obj::Tensor(t)) if t.shape == shape => t.to_f32(&format!("{key} of {what}")),
        Some(Obj::Tensor(t)) => Err(format!(
            "{key} of {what} has the shape {:?}, not {shape:?}",
            t.shape
        )),
        _ => Err(format!("the state of {what} has no tensor {key:?}")),
    }
}

/// `load_state_dict` of nanochat's `MuonAdamW.state_dict()`: the groups must be the model's
/// (kinds and sizes), their settings are taken, and each state is split back per parameter.
fn optimizer_from_state_dict(
    bytes: &[u8],
    model: &Gpt,
    optimizer: &mut MuonAdamW,
) -> Result<(), String> {
    let obj = pt::load(bytes)?;
    let Some(Obj::List(groups)) = obj.get("param_groups") else {
        return Err("its object is not an optimizer's state_dict (no param_groups)".into());
    };
    let Some(state) = obj.get("state").and_then(Obj::items) else {
        return Err("its object is not an optimizer's state_dict (no state)".into());
    };
    if groups.len() != optimizer.groups.len() {
        return Err(format!(
            "{} parameter groups, the model's optimizer has {}",
            groups.len(),
            optimizer.groups.len()
        ));
    }
    // Index -> (group, position in it).
    let mut owner = Vec::new();
    for (at, (saved, group)) in groups.iter().zip(&mut optimizer.groups).enumerate() {
        let count = match saved.get("params") {
            Some(Obj::List(p)) => p.len(),
            _ => return Err(format!("param_groups[{at}] has no params")),
        };
        if count != group.params.len() {
            return Err(format!(
                "param_groups[{at}] holds {count} parameters, the model's has {}",
                group.params.len()
            ));
        }
        owner.extend((0..count).map(|i| (at, i)));
        let kind = match saved.get("kind") {
            Some(Obj::Str(k)) => k.as_str(),
            _ => return Err(format!("param_groups[{at}] has no kind")),
        };
        match (&mut group.kind, kind) {
            (
                Kind::AdamW {
                    betas,
                    eps,
                    weight_decay,
                },
                "adamw",
            ) => {
                let Some(Obj::Tuple(b)) = saved.get("betas") else {
                    return Err(format!("param_groups[{at}] has no betas"));
                };
                let b: Vec<f64> = b.iter().filter_map(Obj::as_f64).collect();
                let [b1, b2] = b[..] else {
                    return Err(format!("param_groups[{at}]'s betas are not two numbers"));
                };
                *betas = (b1, b2);
                *eps = number(saved, "eps", at)?;
                *weight_decay = number(saved, "weight_decay", at)?;
            }
            (
                Kind::Muon {
                    momentum,
                    ns_steps,
                    beta2,
                    weight_decay,
                },
                "muon",
            ) => {
                *momentum = number(saved, "momentum", at)?;
                *ns_steps = number(saved, "ns_steps", at)? as usize;
                *beta2 = number(saved, "beta2", at)?;
                *weight_decay = number(saved, "weight_decay", at)?;
            }
            (_, kind) => {
                return Err(format!(
                    "param_groups[{at}] is {kind:?}, the model's group there is of another kind"
                ))
            }
        }
    }
    for (index, entry) in state {
        let Obj::Int(index) = index else {
            return Err("a state whose key is not a parameter index".into());
        };
        let &(at, i) = usize::try_from(*index)
            .ok()
            .and_then(|x| owner.get(x))
            .ok_or_else(|| format!("a state for parameter {index}, of {}", owner.len()))?;
        let group = &optimizer.groups[at];
        let id = group.params[i];
        let shape = model.params.value(id).shape().to_vec();
        let what = &model.params.get(id).name;
        match group.kind {
            Kind::AdamW { .. } => {
                let step = match entry.get("step") {
                    Some(Obj::Int(s)) if *s >= 0 => *s as u64,
                    Some(Obj::Tensor(t)) if t.numel() == 1 => t.to_f32(what)?[0] as u64,
                    _ => return Err(format!("the state of {what} has no step")),
                };
                optimizer.adam[id.0] = Some(AdamState {
                    step,
                    exp_avg: state_tensor(entry, "exp_avg", &shape, what)?,
                    exp_avg_sq: state_tensor(entry, "exp_avg_sq", &shape, what)?,
                });
            }
            Kind::Muon { .. } => {
                if i != 0 {
                    return Err(format!(
                        "a Muon state under {what}, not under its group's first parameter"
                    ));
                }
                let (k, m, n) = (group.params.len(), shape[0], shape[1]);
                let second_shape = if m >= n { [k, m, 1] } else { [k, 1, n] };
                let momentum = state_tensor(entry, "momentum_buffer", &[k, m, n], what)?;
                let second = state_tensor(entry, "second_momentum_buffer", &second_shape, what)?;
                for (j, &id) in group.params.iter().enumerate() {
                    optimizer.muon[id.0] = Some(MuonState {
                        momentum_buffer: momentum[j * m * n..(j + 1) * m * n].to_vec(),
                        second_momentum_buffer: second[j * m.max(n)..(j + 1) * m.max(n)].to_vec(),
                    });
                }
            }
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
