//! Checkpoints in safetensors: the model, the AdamW moments, and in the metadata
//! the iteration, the configuration, the vocabulary and the generator's state, so
//! a stopped run resumes exactly where it was.
//!
//! Tensors are named `model/<param>`, `adamw.exp_avg/<param>` and
//! `adamw.exp_avg_sq/<param>` with the PyTorch-style parameter names
//! (`blocks.0.sa.heads.1.key.weight`). Files are written to a temporary name and
//! renamed, so an interrupted save leaves the previous checkpoint intact.

use crate::data::CharVocab;
use crate::stages::Config;
use crate::train::Trainer;
use autograd::{AdamW, Params};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::Path;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// The `format` metadata value this module writes and accepts.
pub const FORMAT: &str = "zero-to-hero/gpt/1";

fn to_bytes(t: &Tensor) -> Vec<u8> {
    t.to_vec().iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The checkpoint of `trainer` as safetensors bytes.
pub fn to_safetensors(trainer: &Trainer, vocab: &CharVocab) -> Result<Vec<u8>, String> {
    let tensors = model_and_moments(&trainer.params, &trainer.opt);
    let views = tensor_views(&tensors)?;
    let rng = trainer.rng.borrow().state();
    let metadata = HashMap::from([
        ("format".to_string(), FORMAT.to_string()),
        ("iter".to_string(), trainer.iter.to_string()),
        ("adamw_step".to_string(), trainer.opt.steps().to_string()),
        (
            "config".to_string(),
            serde_json::to_string(&trainer.cfg).map_err(|e| e.to_string())?,
        ),
        (
            "vocab".to_string(),
            vocab.chars().iter().collect::<String>(),
        ),
        (
            "rng".to_string(),
            serde_json::to_string(&rng).map_err(|e| e.to_string())?,
        ),
    ]);
    safetensors::serialize(views, Some(metadata)).map_err(|e| e.to_string())
}

/// The `model/`, `adamw.exp_avg/` and `adamw.exp_avg_sq/` tensors of a
/// checkpoint: `(name, shape, little-endian f32 bytes)`, in parameter order.
pub fn model_and_moments(params: &Params, opt: &AdamW) -> Vec<(String, Vec<usize>, Vec<u8>)> {
    let mut tensors = Vec::new();
    for (id, p) in params.iter() {
        let shape = p.value.shape().to_vec();
        tensors.push((
            format!("model/{}", p.name),
            shape.clone(),
            to_bytes(&p.value),
        ));
        if let Some((m, v)) = opt.moments(id) {
            tensors.push((
                format!("adamw.exp_avg/{}", p.name),
                shape.clone(),
                to_bytes(m),
            ));
            tensors.push((format!("adamw.exp_avg_sq/{}", p.name), shape, to_bytes(v)));
        }
    }
    tensors
}

/// safetensors' views of [`model_and_moments`]' tensors, for `serialize`.
pub fn tensor_views(
    tensors: &[(String, Vec<usize>, Vec<u8>)],
) -> Result<Vec<(String, safetensors::tensor::TensorView<'_>)>, String> {
    tensors
        .iter()
        .map(|(name, shape, bytes)| {
            let view = safetensors::tensor::TensorView::new(Dtype::F32, shape.clone(), bytes)
                .map_err(|e| e.to_string())?;
            Ok((name.clone(), view))
        })
        .collect()
}

/// Fills `params` from a checkpoint's `model/` tensors and `opt` from its
/// moments, checking every name, dtype and shape; a missing, extra or
/// misshapen tensor is an error naming it.
pub fn restore_model_and_moments(
    st: &SafeTensors,
    params: &mut Params,
    opt: &mut AdamW,
    adamw_step: u64,
) -> Result<(), String> {
    let read = |name: &str, want: &[usize]| -> Result<Option<Tensor>, String> {
        let view = match st.tensor(name) {
            Ok(v) => v,
            Err(_) => return Ok(None),
        };
        if view.dtype() != Dtype::F32 {
            return Err(format!("tensor {name} is {:?}, expected F32", view.dtype()));
        }
        if view.shape() != want {
            return Err(format!(
                "tensor {name} has shape {:?}, the model expects {want:?}",
                view.shape()
            ));
        }
        let values = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(Some(Tensor::from_vec(values, want)))
    };
    let mut moments = Vec::new();
    let mut expected = 0;
    for (_, p) in params.iter_mut() {
        let shape = p.value.shape().to_vec();
        let name = format!("model/{}", p.name);
        p.value = read(&name, &shape)?.ok_or_else(|| format!("tensor {name} is missing"))?;
        let m = read(&format!("adamw.exp_avg/{}", p.name), &shape)?;
        let v = read(&format!("adamw.exp_avg_sq/{}", p.name), &shape)?;
        // Every parameter is trained, so after a step each has both moments.
        if adamw_step > 0 && (m.is_none() || v.is_none()) {
            return Err(format!(
                "tensor adamw.exp_avg/{0} or adamw.exp_avg_sq/{0} is missing after {adamw_step} AdamW steps",
                p.name
            ));
        }
        expected += 1 + 2 * usize::from(m.is_some() && v.is_some());
        moments.push(m.zip(v));
    }
    if st.len() != expected {
        let known: Vec<String> = params.iter().map(|(_, p)| p.name.clone()).collect();
        let extra = st
            .names()
            .into_iter()
            .find(|n| !known.iter().any(|k| n.ends_with(&format!("/{k}"))))
            .unwrap_or("an AdamW moment without its pair");
        return Err(format!("tensor {extra} does not belong to this model"));
    }
    opt.restore(adamw_step, moments);
    Ok(())
}

/// Writes the checkpoint atomically (temp file + rename).
pub fn save(path: &Path, trainer: &Trainer, vocab: &CharVocab) -> Result<(), String> {
    let bytes = to_safetensors(trainer, vocab)?;
    report::write_atomic(path, &bytes)
        .map_err(|e| format!("cannot write checkpoint {}: {e}", path.display()))
}

/// Reads a checkpoint: rebuilds the model of its configuration, then checks and
/// copies every tensor. Any missing, extra or misshapen tensor is an error naming it.
pub fn load(path: &Path) -> Result<(Trainer, CharVocab), String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read checkpoint {}: {e}", path.display()))?;
    from_safetensors(&bytes).map_err(|e| format!("checkpoint {}: {e}", path.display()))
}

/// [`load`] from bytes.
pub fn from_safetensors(bytes: &[u8]) -> Result<(Trainer, CharVocab), String> {
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| format!("not a complete safetensors file ({e}); was it truncated?"))?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| e.to_string())?;
    let meta = header.metadata().clone().unwrap_or_default();
    let field = |key: &str| {
        meta.get(key)
            .ok_or_else(|| format!("metadata has no `{key}`; not a gpt checkpoint"))
    };
    if field("format")? != FORMAT {
        return Err(format!(
            "format is {:?}, expected {FORMAT:?}",
            field("format")?
        ));
    }
    let cfg: Config =
        serde_json::from_str(field("config")?).map_err(|e| format!("bad config metadata: {e}"))?;
    let iter: usize = field("iter")?
        .parse()
        .map_err(|e| format!("bad iter metadata: {e}"))?;
    let adamw_step: u64 = field("adamw_step")?
        .parse()
        .map_err(|e| format!("bad adamw_step metadata: {e}"))?;
    let words: Vec<u32> =
        serde_json::from_str(field("rng")?).map_err(|e| format!("bad rng metadata: {e}"))?;
    let rng = TorchGenerator::from_state(&words).map_err(|e| format!("bad rng metadata: {e}"))?;
    let vocab = CharVocab::from_chars(field("vocab")?.chars().collect());
    if vocab.len() != cfg.model.vocab_size() {
        return Err(format!(
            "vocab has {} characters but the config says {}",
            vocab.len(),
            cfg.model.vocab_size()
        ));
    }

    let mut trainer = Trainer::new(cfg);
    restore_model_and_moments(&st, &mut trainer.params, &mut trainer.opt, adamw_step)?;
    trainer.iter = iter;
    trainer.rng = std::cell::RefCell::new(rng);
    Ok((trainer, vocab))
}
