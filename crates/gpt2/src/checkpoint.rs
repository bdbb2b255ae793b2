//! Checkpoints of the `cpu` stage, in safetensors: the model, AdamW's moments,
//! and in the metadata the recipe, the steps taken, AdamW's step count,
//! the training data's shards and lengths, and the loader's position (build-nanogpt's efedfac saves the model, its config
//! and the step; its users ask for the optimizer and the data position too,
//! PR #83, so that a resumed run continues the same loss curve).
//!
//! The loop draws no random numbers once the model is built (GPT-2 has no
//! dropout) and the loader's order is a function of its position, so these
//! are the whole state. Tensors are named `model/<param>`,
//! `adamw.exp_avg/<param>` and `adamw.exp_avg_sq/<param>`, as in lecture 7's
//! checkpoints ([`gpt::checkpoint`], whose tensor code this shares). The
//! file is written to a temporary name and renamed.

use crate::recipe::{train_loader, RecipeConfig, Split, Trainer};
use crate::shards::LoaderState;
use safetensors::SafeTensors;
use std::collections::HashMap;
use std::path::Path;

/// The `format` metadata value this module writes and accepts.
pub const FORMAT: &str = "zero-to-hero/gpt2-recipe/1";

/// The checkpoint of `trainer` as safetensors bytes.
pub fn to_safetensors(trainer: &Trainer) -> Result<Vec<u8>, String> {
    let tensors = gpt::checkpoint::model_and_moments(&trainer.params, &trainer.optimizer);
    let views = gpt::checkpoint::tensor_views(&tensors)?;
    let metadata = HashMap::from([
        ("format".to_string(), FORMAT.to_string()),
        ("step".to_string(), trainer.step.to_string()),
        (
            "adamw_step".to_string(),
            trainer.optimizer.steps().to_string(),
        ),
        ("config".to_string(), json(&trainer.config)?),
        ("loader".to_string(), json(&trainer.train_loader.state())?),
        ("train_data".to_string(), trainer.train_data.clone()),
    ]);
    safetensors::serialize(views, Some(metadata)).map_err(|e| e.to_string())
}

fn json(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

/// Writes the checkpoint atomically (temp file + rename).
pub fn save(path: &Path, trainer: &Trainer) -> Result<(), String> {
    let bytes = to_safetensors(trainer)?;
    report::write_atomic(path, &bytes)
        .map_err(|e| format!("cannot write checkpoint {}: {e}", path.display()))
}

/// Reads a checkpoint: rebuilds the model of its recipe, then checks and
/// copies every tensor, and puts the loader back where it was on `split`.
/// A missing, extra or misshapen tensor is an error naming it.
pub fn load(path: &Path, split: &Split) -> Result<Trainer, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read checkpoint {}: {e}", path.display()))?;
    from_safetensors(&bytes, split).map_err(|e| format!("checkpoint {}: {e}", path.display()))
}

/// [`load`] from bytes.
pub fn from_safetensors(bytes: &[u8], split: &Split) -> Result<Trainer, String> {
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| format!("not a complete safetensors file ({e}); was it truncated?"))?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| e.to_string())?;
    let meta = header.metadata().clone().unwrap_or_default();
    let field = |key: &str| {
        meta.get(key)
            .ok_or_else(|| format!("metadata has no `{key}`; not a gpt2 recipe checkpoint"))
    };
    if field("format")? != FORMAT {
        return Err(format!(
            "format is {:?}, expected {FORMAT:?}",
            field("format")?
        ));
    }
    let config: RecipeConfig =
        serde_json::from_str(field("config")?).map_err(|e| format!("bad config metadata: {e}"))?;
    let step: usize = field("step")?
        .parse()
        .map_err(|e| format!("bad step metadata: {e}"))?;
    let adamw_step: u64 = field("adamw_step")?
        .parse()
        .map_err(|e| format!("bad adamw_step metadata: {e}"))?;
    let loader: LoaderState =
        serde_json::from_str(field("loader")?).map_err(|e| format!("bad loader metadata: {e}"))?;
    let saved_data = field("train_data")?;
    let data = split.train.describe()?;
    if *saved_data != data {
        return Err(format!(
            "it was trained on {saved_data}, but this run's training data is {data}"
        ));
    }
    if step > config.schedule.max_steps {
        return Err(format!(
            "step {step} is past the recipe's {} steps",
            config.schedule.max_steps
        ));
    }
    let mut trainer = Trainer::new(config.clone(), split)?;
    gpt::checkpoint::restore_model_and_moments(
        &st,
        &mut trainer.params,
        &mut trainer.optimizer,
        adamw_step,
    )?;
    trainer.train_loader = train_loader(&config, split)?;
    trainer.train_loader.restore(loader)?;
    trainer.step = step;
    Ok(trainer)
}
