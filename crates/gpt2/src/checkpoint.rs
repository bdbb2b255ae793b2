//! Checkpoints of the `cpu` stage, in safetensors: the model, AdamW's moments,
//! and in the metadata the recipe, the steps taken, AdamW's step count,
//! the training data's shards and lengths, the number of processes and each
//! one's loader position (build-nanogpt's efedfac saves the model, its config
//! and the step; its users ask for the optimizer and the data position too,
//! PR #83, so that a resumed run continues the same loss curve).
//!
//! In a data-parallel run every rank calls [`save`] and rank 0 writes; a run
//! resumes only with as many processes as wrote it, since each one's place
//! in the data is its own.
//!
//! The loop draws no random numbers once the model is built (GPT-2 has no
//! dropout) and the loader's order is a function of its position, so these
//! are the whole state. Tensors are named `model/<param>`,
//! `adamw.exp_avg/<param>` and `adamw.exp_avg_sq/<param>`, as in lecture 7's
//! checkpoints ([`gpt::checkpoint`], whose tensor code this shares). The
//! file is written to a temporary name and renamed.

use crate::ddp::{check_in_sync, Collective, SingleProcess};
use crate::recipe::{train_loader, RecipeConfig, Split, Trainer};
use crate::shards::LoaderState;
use safetensors::SafeTensors;
use std::collections::HashMap;
use std::path::Path;

/// The `format` metadata value this module writes and accepts.
pub const FORMAT: &str = "zero-to-hero/gpt2-recipe/2";
/// The format before data-parallel training: one process, one `loader`.
const FORMAT_ONE_PROCESS: &str = "zero-to-hero/gpt2-recipe/1";

/// The checkpoint of `trainer` as safetensors bytes, with `loaders`, every
/// rank's loader position in rank order.
pub fn to_safetensors(trainer: &Trainer, loaders: &[LoaderState]) -> Result<Vec<u8>, String> {
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
        ("world_size".to_string(), loaders.len().to_string()),
        ("loaders".to_string(), json(&loaders)?),
        ("train_data".to_string(), trainer.train_data.clone()),
    ]);
    safetensors::serialize(views, Some(metadata)).map_err(|e| e.to_string())
}

fn json(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

/// Writes the checkpoint atomically (temp file + rename). Every rank calls
/// it: the ranks' loader positions are gathered and their weights checked
/// equal, then rank 0 writes.
pub fn save(path: &Path, trainer: &Trainer) -> Result<(), String> {
    let ddp = trainer.ddp.as_ref();
    check_in_sync(&trainer.params, ddp, trainer.step)?;
    let state = trainer.train_loader.state();
    let mine = [
        state.epoch,
        state.current_shard as u64,
        state.current_position as u64,
    ];
    let loaders: Vec<LoaderState> = ddp
        .all_gather(&mine, "the loaders' positions")
        .chunks(3)
        .map(|s| LoaderState {
            epoch: s[0],
            current_shard: s[1] as usize,
            current_position: s[2] as usize,
        })
        .collect();
    if !ddp.is_master() {
        return Ok(());
    }
    let bytes = to_safetensors(trainer, &loaders)?;
    report::write_atomic(path, &bytes)
        .map_err(|e| format!("cannot write checkpoint {}: {e}", path.display()))
}

/// Reads a checkpoint: rebuilds the model of its recipe, then checks and
/// copies every tensor, and puts the loader back where it was on `split`.
/// A missing, extra or misshapen tensor is an error naming it.
pub fn load(path: &Path, split: &Split) -> Result<Trainer, String> {
    load_ddp(path, split, Box::new(SingleProcess))
}

/// `--resume`: the checkpoint at `path` on every rank of `ddp`, which must
/// exist and hold the recipe `config` that this run asks for.
pub fn resume(
    path: &Path,
    split: &Split,
    config: &RecipeConfig,
    ddp: Box<dyn Collective>,
) -> Result<Trainer, String> {
    if !path.exists() {
        return Err(format!(
            "--resume: there is no checkpoint at {}",
            path.display()
        ));
    }
    let trainer = load_ddp(path, split, ddp)?;
    if trainer.config != *config {
        return Err(format!(
            "--resume: {} holds the recipe {}, but this run asks for {}",
            path.display(),
            json(&trainer.config)?,
            json(config)?
        ));
    }
    if trainer.ddp.is_master() {
        println!("resuming from {} at step {}", path.display(), trainer.step);
    }
    Ok(trainer)
}

/// [`load`] on every rank of `ddp` (each reads the file), each rank's
/// loader put back where it was; a checkpoint written by another number of
/// processes is an error.
pub fn load_ddp(path: &Path, split: &Split, ddp: Box<dyn Collective>) -> Result<Trainer, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read checkpoint {}: {e}", path.display()))?;
    from_safetensors(&bytes, split, ddp).map_err(|e| format!("checkpoint {}: {e}", path.display()))
}

/// [`load_ddp`] from bytes.
pub fn from_safetensors(
    bytes: &[u8],
    split: &Split,
    ddp: Box<dyn Collective>,
) -> Result<Trainer, String> {
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| format!("not a complete safetensors file ({e}); was it truncated?"))?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| e.to_string())?;
    let meta = header.metadata().clone().unwrap_or_default();
    let field = |key: &str| {
        meta.get(key)
            .ok_or_else(|| format!("metadata has no `{key}`; not a gpt2 recipe checkpoint"))
    };
    let one_process = field("format")? == FORMAT_ONE_PROCESS;
    if field("format")? != FORMAT && !one_process {
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
    let (loaders, world): (Vec<LoaderState>, usize) = match one_process {
        true => (
            vec![serde_json::from_str(field("loader")?)
                .map_err(|e| format!("bad loader metadata: {e}"))?],
            1,
        ),
        false => (
            serde_json::from_str(field("loaders")?)
                .map_err(|e| format!("bad loaders metadata: {e}"))?,
            field("world_size")?
                .parse()
                .map_err(|e| format!("bad world_size metadata: {e}"))?,
        ),
    };
    if loaders.len() != world {
        return Err(format!(
            "it holds {} loader positions for {world} processes",
            loaders.len()
        ));
    }
    if world != ddp.world_size() {
        let launch = |n: usize| match n {
            1 => "one process (no mpirun)".to_string(),
            n => format!("{n} processes (mpirun -np {n} … --ddp)"),
        };
        return Err(format!(
            "it was written by a run of {}, and each process's place in the data is its own; \
             resume it with {}, not {}",
            launch(world),
            launch(world),
            launch(ddp.world_size())
        ));
    }
    let loader = loaders[ddp.rank()];
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
    let mut trainer = Trainer::with_ddp(config.clone(), split, ddp)?;
    gpt::checkpoint::restore_model_and_moments(
        &st,
        &mut trainer.params,
        &mut trainer.optimizer,
        adamw_step,
    )?;
    trainer.train_loader = train_loader(&config, split, trainer.ddp.as_ref())?;
    trainer.train_loader.restore(loader)?;
    trainer.step = step;
    Ok(trainer)
}
