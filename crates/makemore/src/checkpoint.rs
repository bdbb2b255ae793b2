//! The two files a run keeps in its work dir.
//!
//! - `model.safetensors`, the best model by test loss (makemore.py's
//!   `model.pt`): exactly makemore.py's `state_dict` keys, the causal-mask
//!   buffers included, so `model.load_state_dict(load_file(path), strict=True)`
//!   loads it into makemore.py's own classes. Its metadata holds the type, the
//!   `ModelConfig` and the vocabulary, which `--sample-only` needs.
//! - `last.safetensors`, the state to resume from, written at every
//!   evaluation, at the end and when the run is interrupted: the weights,
//!   AdamW's moments and step, the global generator, the training sampler's
//!   generator and the indices left of its current draw, and the best loss.
//!
//! Both carry a SHA-256 of their tensors and metadata, as the lectures'
//! checkpoints do ([`checkpoint_file`]), so any damage is refused on load.

use crate::data::Vocab;
use crate::loader::InfiniteSampler;
use crate::model::{state_dict, ModelConfig, ModelType};
use crate::train::{TrainConfig, Trainer};
use checkpoint_file::{
    f32_bytes, model_and_moments, serialize_with_digest, to_json, NamedTensor, Opened,
};
use safetensors::SafeTensors;
use std::collections::HashMap;
use std::path::Path;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// The best model's file name in the work dir.
pub const BEST: &str = "model.safetensors";
/// The resume state's file name in the work dir.
pub const LAST: &str = "last.safetensors";
/// The `format` metadata of the best model.
const BEST_FORMAT: &str = "zero-to-hero/makemore/model/1";
/// The `format` metadata of the resume state.
const LAST_FORMAT: &str = "zero-to-hero/makemore/last/1";

fn common_metadata(trainer: &Trainer) -> Result<HashMap<String, String>, String> {
    Ok(HashMap::from([
        ("type".to_string(), trainer.cfg.kind.name().to_string()),
        ("config".to_string(), to_json(&trainer.config)?),
        ("train_config".to_string(), to_json(&trainer.cfg)?),
        (
            "vocab".to_string(),
            trainer.data.vocab.chars().iter().collect(),
        ),
    ]))
}

/// Writes `bytes` to `dir/name` atomically, naming the file in an error.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    let path = dir.join(name);
    report::write_atomic(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `torch.save(model.state_dict(), out_path)`, as safetensors.
pub fn save_best(dir: &Path, trainer: &Trainer, test_loss: f32) -> Result<(), String> {
    let tensors: Vec<NamedTensor> = state_dict(trainer.cfg.kind, &trainer.config, &trainer.params)
        .into_iter()
        .map(|(name, t)| (name, t.shape().to_vec(), f32_bytes(&t.to_vec())))
        .collect();
    let mut metadata = common_metadata(trainer)?;
    metadata.insert("format".into(), BEST_FORMAT.into());
    metadata.insert("step".into(), trainer.step.to_string());
    metadata.insert("test_loss".into(), test_loss.to_string());
    write(dir, BEST, &serialize_with_digest(&tensors, metadata)?)
}

/// Saves the resume state.
pub fn save_last(dir: &Path, trainer: &Trainer) -> Result<(), String> {
    let tensors = model_and_moments(&trainer.params, &trainer.opt)?;
    let mut metadata = common_metadata(trainer)?;
    metadata.insert("format".into(), LAST_FORMAT.into());
    metadata.insert("step".into(), trainer.step.to_string());
    metadata.insert("adamw_step".into(), trainer.opt.steps().to_string());
    metadata.insert("global_rng".into(), to_json(&trainer.global.state())?);
    metadata.insert("sampler".into(), to_json(&trainer.sampler)?);
    metadata.insert(
        "best_loss".into(),
        to_json(&trainer.best_loss.map(f32::to_bits))?,
    );
    write(dir, LAST, &serialize_with_digest(&tensors, metadata)?)
}

/// Opens a checkpoint of `format` and checks its digest.
fn open<'a>(bytes: &'a [u8], format: &str) -> Result<Opened<'a>, String> {
    let file = checkpoint_file::open(bytes, "not written by makemore")?;
    file.check_format(format)?;
    file.check_digest()?;
    Ok(file)
}

/// Refuses a file whose model is not the one the flags and the data made.
fn check_model(file: &Opened, trainer: &Trainer) -> Result<(), String> {
    let kind = ModelType::parse(file.field("type")?)?;
    let config: ModelConfig = file.json("config")?;
    if kind != trainer.cfg.kind || config != trainer.config {
        return Err(format!(
            "it holds a {kind} model with {config:?}, but the flags and the input make a {} model with {:?}; \
             pass the flags it was trained with, or another --work-dir",
            trainer.cfg.kind, trainer.config
        ));
    }
    let vocab: Vec<char> = file.field("vocab")?.chars().collect();
    if Vocab::from_chars(vocab.clone())? != trainer.data.vocab {
        return Err(format!(
            "its vocabulary {:?} is not the input file's {:?}",
            vocab.iter().collect::<String>(),
            trainer.data.vocab.chars().iter().collect::<String>()
        ));
    }
    Ok(())
}

fn read_f32(st: &SafeTensors<'_>, name: &str, shape: &[usize]) -> Result<Tensor, String> {
    Ok(Tensor::from_vec(
        checkpoint_file::read_f32(st, name, shape)?,
        shape,
    ))
}

/// Loads the best model's weights into `trainer` (`model.load_state_dict`).
pub fn load_best(dir: &Path, trainer: &mut Trainer) -> Result<(), String> {
    let path = dir.join(BEST);
    let bytes = std::fs::read(&path).map_err(|e| no_file(&path, e))?;
    (|| {
        let file = open(&bytes, BEST_FORMAT)?;
        check_model(&file, trainer)?;
        let expected = state_dict(trainer.cfg.kind, &trainer.config, &trainer.params);
        if file.tensors.len() != expected.len() {
            return Err(format!(
                "it holds {} tensors, the model's state_dict {}",
                file.tensors.len(),
                expected.len()
            ));
        }
        for (_, p) in trainer.params.iter_mut() {
            p.value = read_f32(&file.tensors, &p.name, p.value.shape())?;
        }
        Ok(())
    })()
    .map_err(|e: String| format!("{}: {e}", path.display()))
}

/// Restores `trainer` from the resume state.
pub fn load_last(dir: &Path, trainer: &mut Trainer) -> Result<(), String> {
    let path = dir.join(LAST);
    let bytes = std::fs::read(&path).map_err(|e| no_file(&path, e))?;
    (|| {
        let file = open(&bytes, LAST_FORMAT)?;
        check_model(&file, trainer)?;
        let adamw_step: u64 = file.parse("adamw_step")?;
        let step: usize = file.parse("step")?;
        let words: Vec<u32> = file.json("global_rng")?;
        let global = TorchGenerator::from_state(&words).map_err(|e| format!("global_rng: {e}"))?;
        let sampler: Option<InfiniteSampler> = file.json("sampler")?;
        if let Some(s) = &sampler {
            let state_ok = s
                .generator
                .as_deref()
                .is_none_or(|w| TorchGenerator::from_state(w).is_ok());
            if s.n != trainer.data.train.len() || !state_ok || s.pending.iter().any(|&i| i >= s.n) {
                return Err("its sampler does not fit the training set".into());
            }
        }
        // Another seed splits the file differently: test words would train.
        let saved: TrainConfig = file.json("train_config")?;
        if saved.seed != trainer.cfg.seed {
            return Err(format!(
                "it was trained with --seed {}, which chose its test words; resume with --seed {0}",
                saved.seed
            ));
        }
        let best: Option<u32> = file.json("best_loss")?;
        file.restore_into(adamw_step, &mut trainer.params, &mut trainer.opt)?;
        trainer.global = global;
        trainer.sampler = sampler;
        trainer.step = step;
        trainer.best_loss = best.map(f32::from_bits);
        Ok(())
    })()
    .map_err(|e: String| format!("{}: {e}", path.display()))
}

fn no_file(path: &Path, e: std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        let (what, other) = if path.ends_with(LAST) {
            (
                "no state in this work dir to resume from",
                "--sample-only needs only model.safetensors",
            )
        } else {
            (
                "no model in this work dir to sample from",
                "a run saves it at its first evaluation, step 500",
            )
        };
        format!(
            "{} does not exist: there is {what}; train one first (without --resume or --sample-only); {other}",
            path.display()
        )
    } else {
        format!("cannot read {}: {e}", path.display())
    }
}
