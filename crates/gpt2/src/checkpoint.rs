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
//! checkpoints ([`gpt::checkpoint`]; the file is [`checkpoint_file`]'s). The
//! file is written to a temporary name and renamed. Since format 3 the
//! metadata holds the SHA-256 of the tensors and the other metadata
//! ([`checkpoint_file::SHA256_KEY`]), checked before anything is built.

use crate::ddp::{check_in_sync, Collective, SingleProcess};
use crate::shards::LoaderState;
use crate::trainer::{train_loader, RecipeConfig, Split, Trainer};
use checkpoint_file::to_json;
use std::collections::HashMap;
use std::path::Path;

/// The `format` metadata value this module writes and accepts.
pub const FORMAT: &str = "zero-to-hero/gpt2-recipe/3";
/// The format before checkpoints carried a SHA-256.
const FORMAT_WITHOUT_DIGEST: &str = "zero-to-hero/gpt2-recipe/2";
/// The format before data-parallel training: one process, one `loader`.
const FORMAT_ONE_PROCESS: &str = "zero-to-hero/gpt2-recipe/1";

/// The checkpoint of `trainer` as safetensors bytes, with `loaders`, every
/// rank's loader position in rank order.
pub fn to_safetensors(trainer: &Trainer, loaders: &[LoaderState]) -> Result<Vec<u8>, String> {
    let tensors = checkpoint_file::model_and_moments(&trainer.params, &trainer.optimizer)?;
    let metadata = HashMap::from([
        ("format".to_string(), FORMAT.to_string()),
        ("step".to_string(), trainer.step.to_string()),
        (
            "adamw_step".to_string(),
            trainer.optimizer.steps().to_string(),
        ),
        ("config".to_string(), to_json(&trainer.config)?),
        ("world_size".to_string(), loaders.len().to_string()),
        ("loaders".to_string(), to_json(&loaders)?),
        ("train_data".to_string(), trainer.train_data.clone()),
    ]);
    checkpoint_file::serialize_with_digest(&tensors, metadata)
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
            to_json(&trainer.config)?,
            to_json(config)?
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
    let file = checkpoint_file::open(bytes, "not a gpt2 recipe checkpoint")?;
    let format = file.field("format")?;
    let one_process = format == FORMAT_ONE_PROCESS;
    if format == FORMAT {
        file.check_digest()?;
    } else if one_process || format == FORMAT_WITHOUT_DIGEST {
        // Older checkpoints carry no digest; one that has one was format 3 before
        // a flipped bit turned its version number into an older one.
        if file.meta.contains_key(checkpoint_file::SHA256_KEY) {
            return Err(format!(
                "format is {format:?}, which has no `{}`, yet this file has one",
                checkpoint_file::SHA256_KEY
            ));
        }
    } else {
        return Err(format!("format is {format:?}, expected {FORMAT:?}"));
    }
    let config: RecipeConfig = file.json("config")?;
    // Before a model is built from it: the model must fit in the file's tensors,
    // so a damaged config cannot ask for more memory than the file holds.
    let m = &config.model;
    if [m.block_size, m.vocab_size, m.n_layer, m.n_embd].contains(&0)
        || m.n_head == 0
        || !m.n_embd.is_multiple_of(m.n_head)
    {
        return Err(format!("its config's model {m:?} is not a GPT-2 shape"));
    }
    let file_floats: u64 = file
        .tensors
        .tensors()
        .iter()
        .filter(|(name, _)| name.starts_with("model/"))
        .map(|(_, view)| view.shape().iter().product::<usize>() as u64)
        .sum();
    if m.parameter_count().is_none_or(|n| n > file_floats) {
        return Err(format!(
            "its config's model {m:?} has more parameters than the {file_floats} the file holds"
        ));
    }
    let step: usize = file.parse("step")?;
    let adamw_step: u64 = file.parse("adamw_step")?;
    let (loaders, world): (Vec<LoaderState>, usize) = match one_process {
        true => (vec![file.json("loader")?], 1),
        false => (file.json("loaders")?, file.parse("world_size")?),
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
    let saved_data = file.field("train_data")?;
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
    file.restore_into(adamw_step, &mut trainer.params, &mut trainer.optimizer)?;
    trainer.train_loader = train_loader(&config, split, trainer.ddp.as_ref())?;
    trainer.train_loader.restore(loader)?;
    trainer.step = step;
    Ok(trainer)
}
