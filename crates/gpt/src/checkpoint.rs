//! Checkpoints in safetensors: the model, the AdamW moments, and in the metadata
//! the iteration, the configuration, the vocabulary and the generator's state, so
//! a stopped run resumes exactly where it was.
//!
//! Tensors are named `model/<param>`, `adamw.exp_avg/<param>` and
//! `adamw.exp_avg_sq/<param>` with the PyTorch-style parameter names
//! (`blocks.0.sa.heads.1.key.weight`). Files are written to a temporary name and
//! renamed, so an interrupted save leaves the previous checkpoint intact.
//!
//! safetensors carries no checksum, so the metadata also holds `sha256`: the
//! SHA-256 of every tensor (name, dtype, shape, bytes) and every other metadata
//! entry. [`load`] checks it before it builds anything, so a damaged file is an
//! error however small the damage. Non-finite values are refused on save and on load.

use crate::data::CharVocab;
use crate::stages::{Config, ModelConfig};
use crate::train::Trainer;
use autograd::{AdamW, Params};
use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// A checkpoint tensor: name, shape, little-endian f32 bytes.
pub type NamedTensor = (String, Vec<usize>, Vec<u8>);

/// The `format` metadata value this module writes and accepts.
pub const FORMAT: &str = "zero-to-hero/gpt/2";
/// Checkpoints before the `sha256` entry: refused with a message that says so.
const FORMAT_WITHOUT_DIGEST: &str = "zero-to-hero/gpt/1";
/// The metadata key of the SHA-256 over a checkpoint's tensors and other metadata.
pub const SHA256_KEY: &str = "sha256";

fn to_bytes(t: &Tensor) -> Vec<u8> {
    t.to_vec().iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The checkpoint of `trainer` as safetensors bytes.
pub fn to_safetensors(trainer: &Trainer, vocab: &CharVocab) -> Result<Vec<u8>, String> {
    let tensors = model_and_moments(&trainer.params, &trainer.opt)?;
    let rng = trainer.rng.borrow().state();
    let metadata = HashMap::from([
        ("format".to_string(), FORMAT.to_string()),
        ("iter".to_string(), trainer.iter.to_string()),
        ("adamw_step".to_string(), trainer.opt.steps().to_string()),
        ("config".to_string(), to_json(&trainer.cfg)?),
        (
            "vocab".to_string(),
            vocab.chars().iter().collect::<String>(),
        ),
        ("rng".to_string(), to_json(&rng)?),
    ]);
    serialize_with_digest(&tensors, metadata)
}

/// The safetensors bytes of `tensors` and `metadata`, with [`SHA256_KEY`] added
/// to the metadata.
pub fn serialize_with_digest(
    tensors: &[NamedTensor],
    mut metadata: HashMap<String, String>,
) -> Result<Vec<u8>, String> {
    let entries = tensors
        .iter()
        .map(|(name, shape, bytes)| (name.as_str(), "F32", shape.as_slice(), bytes.as_slice()))
        .collect();
    let sha = digest(entries, &metadata);
    metadata.insert(SHA256_KEY.to_string(), sha);
    safetensors::serialize(tensor_views(tensors)?, Some(metadata)).map_err(|e| e.to_string())
}

/// SHA-256 over `(name, dtype, shape, bytes)` of every tensor in name order,
/// then every metadata entry but [`SHA256_KEY`] in key order, each field
/// prefixed with its length so that no two contents hash alike.
fn digest(
    mut tensors: Vec<(&str, &str, &[usize], &[u8])>,
    metadata: &HashMap<String, String>,
) -> String {
    tensors.sort_by(|a, b| a.0.cmp(b.0));
    let mut sha = Sha256::new();
    let mut field = |bytes: &[u8]| {
        sha.update((bytes.len() as u64).to_le_bytes());
        sha.update(bytes);
    };
    for (name, dtype, shape, bytes) in tensors {
        field(name.as_bytes());
        field(dtype.as_bytes());
        let dims: Vec<u8> = shape
            .iter()
            .flat_map(|&d| (d as u64).to_le_bytes())
            .collect();
        field(&dims);
        field(bytes);
    }
    let mut entries: Vec<_> = metadata.iter().filter(|(k, _)| *k != SHA256_KEY).collect();
    entries.sort();
    for (key, value) in entries {
        field(key.as_bytes());
        field(value.as_bytes());
    }
    sha.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the [`SHA256_KEY`] entry of a checkpoint against its contents.
pub fn check_digest(st: &SafeTensors, metadata: &HashMap<String, String>) -> Result<(), String> {
    let stored = metadata
        .get(SHA256_KEY)
        .ok_or_else(|| format!("metadata has no `{SHA256_KEY}`"))?;
    let tensors = st.tensors();
    let dtypes: Vec<String> = tensors
        .iter()
        .map(|(_, v)| format!("{:?}", v.dtype()))
        .collect();
    let entries = tensors
        .iter()
        .zip(&dtypes)
        .map(|((name, view), dtype)| (name.as_str(), dtype.as_str(), view.shape(), view.data()))
        .collect();
    if digest(entries, metadata) != *stored {
        return Err(
            "its contents do not match the SHA-256 stored in its metadata: \
             the file was damaged or edited after it was written"
                .to_string(),
        );
    }
    Ok(())
}

/// A checkpoint's bytes opened as safetensors, with its metadata: what every
/// checkpoint reader here starts from. Errors name the metadata key.
pub struct Opened<'a> {
    /// The tensors.
    pub tensors: SafeTensors<'a>,
    /// The metadata (empty if the file has none).
    pub meta: HashMap<String, String>,
    /// What a missing key says the file is not: "not a gpt checkpoint".
    not_a: &'static str,
}

/// Opens `bytes` as safetensors; a file cut short says it may be truncated.
/// `not_a` ends the message of a missing key ("not a gpt checkpoint").
pub fn open<'a>(bytes: &'a [u8], not_a: &'static str) -> Result<Opened<'a>, String> {
    let tensors = SafeTensors::deserialize(bytes)
        .map_err(|e| format!("not a complete safetensors file ({e}); was it truncated?"))?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| e.to_string())?;
    let meta = header.metadata().clone().unwrap_or_default();
    Ok(Opened {
        tensors,
        meta,
        not_a,
    })
}

impl Opened<'_> {
    /// A metadata value, or an error naming the missing key.
    pub fn field(&self, key: &str) -> Result<&str, String> {
        self.meta
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| format!("metadata has no `{key}`; {}", self.not_a))
    }

    /// A metadata value parsed (`"3"` as a step), or an error naming the key.
    pub fn parse<T: std::str::FromStr>(&self, key: &str) -> Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        self.field(key)?
            .parse()
            .map_err(|e| format!("bad {key} metadata: {e}"))
    }

    /// A metadata value read as JSON, or an error naming the key.
    pub fn json<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<T, String> {
        serde_json::from_str(self.field(key)?).map_err(|e| format!("bad {key} metadata: {e}"))
    }

    /// Refuses a file whose `format` is not `format`.
    pub fn check_format(&self, format: &str) -> Result<(), String> {
        match self.field("format")? {
            f if f == format => Ok(()),
            f => Err(format!("format is {f:?}, expected {format:?}")),
        }
    }

    /// [`check_digest`] on this file.
    pub fn check_digest(&self) -> Result<(), String> {
        check_digest(&self.tensors, &self.meta)
    }

    /// Copies the model and AdamW's moments into `params` and `opt`
    /// ([`restore_model_and_moments`]); `adamw_step` is the `adamw_step`
    /// metadata, which a loader reads (and checks) before it builds a model.
    pub fn restore_into(
        &self,
        adamw_step: u64,
        params: &mut Params,
        opt: &mut AdamW,
    ) -> Result<(), String> {
        restore_model_and_moments(&self.tensors, params, opt, adamw_step)
    }
}

/// A value as JSON text, for the metadata.
pub fn to_json(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

/// The `model/`, `adamw.exp_avg/` and `adamw.exp_avg_sq/` tensors of a
/// checkpoint: `(name, shape, little-endian f32 bytes)`, in parameter order.
/// A NaN or infinity in any of them is an error naming the tensor: a
/// checkpoint on disk never holds one.
pub fn model_and_moments(params: &Params, opt: &AdamW) -> Result<Vec<NamedTensor>, String> {
    let finite = |name: &str, t: &Tensor| match t.to_vec().iter().position(|v| !v.is_finite()) {
        Some(i) => Err(format!(
            "not saving a checkpoint: tensor {name} holds {} at index {i}",
            t.to_vec()[i]
        )),
        None => Ok(()),
    };
    let mut tensors = Vec::new();
    for (id, p) in params.iter() {
        finite(&format!("model/{}", p.name), &p.value)?;
        if let Some((m, v)) = opt.moments(id) {
            finite(&format!("adamw.exp_avg/{}", p.name), m)?;
            finite(&format!("adamw.exp_avg_sq/{}", p.name), v)?;
        }
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
    Ok(tensors)
}

/// safetensors' views of [`model_and_moments`]' tensors, for `serialize`.
pub fn tensor_views(
    tensors: &[NamedTensor],
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

/// The float32 tensor `name` of a safetensors file, checked to have `shape`
/// and to hold only finite numbers; each problem is an error naming the
/// tensor (the caller adds the file). The one reader behind every
/// checkpoint of the tools (gpt, makemore, char-rnn, nanochat).
pub fn read_f32(st: &SafeTensors<'_>, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
    let view = st
        .tensor(name)
        .map_err(|_| format!("tensor {name} is missing"))?;
    if view.dtype() != Dtype::F32 || view.shape() != shape {
        return Err(format!(
            "tensor {name} is {:?} {:?}, the model expects F32 {shape:?}",
            view.dtype(),
            view.shape()
        ));
    }
    let values: Vec<f32> = view
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(format!("tensor {name} holds {} at index {i}", values[i])),
        None => Ok(values),
    }
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
        if st.tensor(name).is_err() {
            return Ok(None);
        }
        Ok(Some(Tensor::from_vec(read_f32(st, name, want)?, want)))
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

/// The run's config from a checkpoint's metadata, checked before a model is
/// built from it: every gpt checkpoint holds one of the lecture's models, so
/// a config that is not one is refused, not allocated.
fn lecture_config(json: &str) -> Result<Config, String> {
    let mut cfg: Config =
        serde_json::from_str(json).map_err(|e| format!("bad config metadata: {e}"))?;
    let lecture_model = Config::for_stage(cfg.stage)
        .with_head_size_scale(cfg.head_size_scale())
        .model;
    // `flash` changes no number (the same bits either way), so it is the
    // stage's whatever the file says: checkpoints written before the switch
    // existed, which lack it, still load.
    if let (ModelConfig::Video(saved), ModelConfig::Video(stage)) = (&mut cfg.model, &lecture_model)
    {
        saved.flash = stage.flash;
    }
    if cfg.model != lecture_model {
        return Err(format!(
            "its config's model {:?} is not stage {}'s model {lecture_model:?}",
            cfg.model,
            cfg.stage.name()
        ));
    }
    Ok(cfg)
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
    let file = open(bytes, "not a gpt checkpoint")?;
    if file.field("format")? == FORMAT_WITHOUT_DIGEST {
        return Err(format!(
            "format is {FORMAT_WITHOUT_DIGEST:?}, written by an older version of this crate \
             (before checkpoints carried a SHA-256); train again without --resume"
        ));
    }
    file.check_format(FORMAT)?;
    file.check_digest()?;
    let cfg = lecture_config(file.field("config")?)?;
    let iter: usize = file.parse("iter")?;
    let adamw_step: u64 = file.parse("adamw_step")?;
    let words: Vec<u32> = file.json("rng")?;
    let rng = TorchGenerator::from_state(&words).map_err(|e| format!("bad rng metadata: {e}"))?;
    let vocab = CharVocab::from_chars(file.field("vocab")?.chars().collect());
    if vocab.len() != cfg.model.vocab_size() {
        return Err(format!(
            "vocab has {} characters but the config says {}",
            vocab.len(),
            cfg.model.vocab_size()
        ));
    }

    let mut trainer = Trainer::new(cfg);
    file.restore_into(adamw_step, &mut trainer.params, &mut trainer.opt)?;
    trainer.iter = iter;
    trainer.rng = std::cell::RefCell::new(rng);
    Ok((trainer, vocab))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::Stage;

    #[test]
    fn a_full_checkpoint_from_before_flash_still_loads_and_runs_flash() {
        let json = serde_json::to_string(&Config::for_stage(Stage::Full)).unwrap();
        assert!(json.contains("\"flash\":true"), "{json}");
        let before = json.replace(",\"flash\":true", "");
        assert!(!before.contains("flash"), "{before}");
        let cfg = lecture_config(&before).expect("an older full checkpoint loads");
        assert_eq!(cfg.model, Config::for_stage(Stage::Full).model);
        // Another model is still refused.
        let wider = json.replace("\"n_embd\":384", "\"n_embd\":385");
        assert!(lecture_config(&wider)
            .unwrap_err()
            .contains("is not stage full's model"));
    }
}
