//! nanochat's own checkpoint files: `model.state_dict()` and `MuonAdamW.state_dict()` as
//! `torch.save` archives ([`crate::pt`]), read and written as `checkpoint_manager.py` and
//! `torch.optim.Optimizer` lay them out.

use super::finite;
use crate::gpt::Gpt;
use crate::optim::{AdamState, Kind, MuonAdamW, MuonState};
use crate::pt::{self, Obj, StoredTensor};
use std::collections::HashMap;
use std::path::Path;

/// `model.state_dict()` and `optimizer.state_dict()` as nanochat's `save_checkpoint` pickles
/// them (float32, the parameters in the model's order).
pub(super) fn pt_files(
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

/// `build_model`'s loading of a `model.state_dict()`: `_orig_mod.` stripped, bfloat16 widened,
/// `resid_lambdas` (ones) and `x0_lambdas` (zeros) patched in where an older checkpoint lacks
/// them, then `load_state_dict(strict=True)`: every name and shape must be the model's.
///
/// Each tensor's bytes are dropped as soon as it is in the model, so that loading takes little
/// more memory than the file and the model would each take.
pub(super) fn fill_from_state_dict(model: &mut Gpt, obj: Obj) -> Result<(), String> {
    let (Obj::Dict(items) | Obj::OrderedDict(items)) = obj else {
        return Err("its object is not a state_dict (a dict)".into());
    };
    let mut tensors: HashMap<String, StoredTensor> = HashMap::new();
    for (k, v) in items {
        let (Obj::Str(k), Obj::Tensor(t)) = (k, v) else {
            return Err("its state_dict holds an entry that is not a named tensor".into());
        };
        let name = k
            .strip_prefix("_orig_mod.")
            .map(str::to_string)
            .unwrap_or(k);
        tensors.insert(name, t);
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
    for (name, patch) in patches {
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
        let t = tensors
            .remove(&p.name)
            .expect("every name was checked above");
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

/// A run on several ranks leaves one optimizer file per rank, each holding its shard of the
/// state; one process cannot take their place.
pub(super) fn refuse_sharded(dir: &Path, step: usize) -> Result<(), String> {
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
pub(super) fn optimizer_from_state_dict(
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
