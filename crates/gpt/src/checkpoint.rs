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
use checkpoint_file::{model_and_moments, open, serialize_with_digest, to_json};
use std::collections::HashMap;
use std::path::Path;
use tensor::rng::TorchGenerator;

/// The `format` metadata value this module writes and accepts.
pub const FORMAT: &str = "zero-to-hero/gpt/2";
/// Checkpoints before the `sha256` entry: refused with a message that says so.
const FORMAT_WITHOUT_DIGEST: &str = "zero-to-hero/gpt/1";

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
