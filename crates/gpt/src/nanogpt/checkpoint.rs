//! `ckpt.pt`'s contents in safetensors: `OUT_DIR/ckpt.safetensors` holds the
//! model under nanoGPT's `state_dict` names (`model/transformer.wte.weight`,
//! …; `lm_head.weight` is the same tensor as `transformer.wte.weight` and is
//! not stored twice), AdamW's moments, and in the metadata `model_args`,
//! `iter_num`, `best_val_loss` and `config` as train.py saves them, plus the
//! vocabulary (sample.py finds it through `config['dataset']`; keeping it here
//! lets a checkpoint sample after its data folder moved), the run's losses
//! and evaluations so far (so a resumed run's `loss.csv` is whole), and a
//! SHA-256 over everything (the lecture's [`checkpoint_file::serialize_with_digest`]).

use super::configurator::TrainArgs;
use crate::data::CharVocab;
use crate::model::GptConfig;
use crate::train::Trainer;
use checkpoint_file::{model_and_moments, open, serialize_with_digest, to_json};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// The checkpoint's name in the out dir.
pub const FILE: &str = "ckpt.safetensors";
/// The `format` metadata value.
pub const FORMAT: &str = "zero-to-hero/nanogpt-ckpt/1";

/// What a run of [`super::train::train`] leaves: every logged loss and every evaluation.
/// The checkpoint keeps the losses and evaluations, so a resumed run's
/// `loss.csv` starts at iteration 0.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct History {
    /// `(iter, loss)` of each logged iteration, the loss at full precision.
    pub losses: Vec<(usize, f32)>,
    /// `(iter, train, val)` of each evaluation.
    pub evals: Vec<(usize, f32, f32)>,
    /// Milliseconds of each iteration (`dt`), evaluations included as in
    /// nanoGPT's; this process's only.
    #[serde(skip)]
    pub step_ms: Vec<f64>,
}

/// A checkpoint read from disk (or about to be written).
pub struct Checkpoint {
    /// `model_args`.
    pub model_args: GptConfig,
    /// The iteration it was saved at.
    pub iter_num: usize,
    /// The val loss that made it the best.
    pub best_val_loss: f32,
    /// train.py's `config`: every flag of the run.
    pub config: TrainArgs,
    /// The characters of meta.pkl, in id order.
    pub vocab: CharVocab,
    /// The losses and evaluations up to the save (empty in a checkpoint
    /// written before the history was kept).
    pub history: History,
    /// The safetensors bytes, for [`Checkpoint::restore`].
    bytes: Vec<u8>,
}

impl Checkpoint {
    /// Reads and checks `path`: its digest, format and metadata.
    pub fn load(path: &Path) -> Result<Checkpoint, String> {
        let bytes = std::fs::read(path).map_err(|e| {
            format!(
                "cannot read checkpoint {}: {e}; train first with `gpt train --out-dir {}`",
                path.display(),
                path.parent().unwrap_or(Path::new(".")).display()
            )
        })?;
        Checkpoint::from_bytes(bytes).map_err(|e| format!("checkpoint {}: {e}", path.display()))
    }

    /// [`Checkpoint::load`] from bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Checkpoint, String> {
        let file = open(&bytes, "not a checkpoint of `gpt train`")?;
        file.check_format(FORMAT)?;
        file.check_digest()?;
        let model_args: GptConfig = file.json("model_args")?;
        let config: TrainArgs = file.json("config")?;
        let iter_num = file.parse::<f64>("iter_num")? as usize;
        let best_val_loss = file.parse::<f64>("best_val_loss")? as f32;
        let vocab = CharVocab::from_chars(file.field("vocab")?.chars().collect());
        let history = match file.meta.contains_key("history") {
            true => file.json("history")?,
            false => History::default(),
        };
        drop(file);
        if vocab.len() != model_args.vocab_size {
            return Err(format!(
                "its vocabulary has {} characters but model_args says vocab_size {}",
                vocab.len(),
                model_args.vocab_size
            ));
        }
        if model_args.n_head == 0 || !model_args.n_embd.is_multiple_of(model_args.n_head) {
            return Err(format!("model_args {model_args:?} is not a model"));
        }
        Ok(Checkpoint {
            model_args,
            iter_num,
            best_val_loss,
            config,
            vocab,
            history,
            bytes,
        })
    }

    /// nanoGPT's resume loads the optimizer's state dict, and with it the
    /// saved run's betas and weight decay (the learning rate is set again at
    /// every iteration). The flags' values give way to the checkpoint's,
    /// with a line saying so when they differ.
    pub fn take_optimizer_settings(&self, args: &mut TrainArgs) {
        let saved = &self.config;
        for (flag, ours, theirs) in [
            ("--beta1", &mut args.train_py.beta1, saved.train_py.beta1),
            ("--beta2", &mut args.train_py.beta2, saved.train_py.beta2),
            (
                "--weight-decay",
                &mut args.train_py.weight_decay,
                saved.train_py.weight_decay,
            ),
        ] {
            if *ours != theirs {
                println!(
                    "{flag} {ours}: the checkpoint's optimizer was built with {theirs}, \
                     and resuming keeps it, as nanoGPT's load_state_dict does"
                );
                *ours = theirs;
            }
        }
    }

    /// The history up to the save; without the evaluation at the save's own
    /// iteration when the resumed loop `evaluates` there again.
    pub fn history_before_resume(&self, evaluates: bool) -> History {
        let mut history = self.history.clone();
        history.losses.retain(|&(iter, _)| iter < self.iter_num);
        history
            .evals
            .retain(|&(iter, _, _)| iter < self.iter_num || !evaluates);
        history
    }

    /// `--init-from resume`: the flags' model must be the checkpoint's (nanoGPT
    /// would silently take the checkpoint's; here a difference is an error).
    /// Dropout may change, as in nanoGPT.
    pub fn check_model(&self, flags: &GptConfig, path: &Path) -> Result<(), String> {
        let saved = self.model_args;
        let keys = [
            ("n_layer", saved.n_layer, flags.n_layer),
            ("n_head", saved.n_head, flags.n_head),
            ("n_embd", saved.n_embd, flags.n_embd),
            ("block_size", saved.block_size, flags.block_size),
            ("bias", saved.bias as usize, flags.bias as usize),
            ("vocab_size", saved.vocab_size, flags.vocab_size),
        ];
        let differ: Vec<String> = keys
            .iter()
            .filter(|k| k.1 != k.2)
            .map(|(k, s, f)| format!("{k} {s} (the flags say {f})"))
            .collect();
        if differ.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "--init-from resume: checkpoint {} holds another model: {}",
                path.display(),
                differ.join(", ")
            ))
        }
    }

    /// Copies the weights and AdamW's moments into `trainer` (built for
    /// `model_args`) and sets its iteration.
    pub fn restore(&self, trainer: &mut Trainer) -> Result<(), String> {
        let file = open(&self.bytes, "not a checkpoint of `gpt train`")?;
        let adamw_step: u64 = file.parse("adamw_step")?;
        file.restore_into(adamw_step, &mut trainer.params, &mut trainer.opt)?;
        trainer.iter = self.iter_num;
        Ok(())
    }
}

/// A run's checkpoint (`Run::checkpoint`), written by [`CheckpointToSave::save`].
pub struct CheckpointToSave<'a> {
    /// Model, AdamW and the iteration.
    pub trainer: &'a Trainer,
    /// The flags.
    pub args: &'a TrainArgs,
    /// The data's characters.
    pub vocab: &'a CharVocab,
    /// The lowest val loss so far.
    pub best_val_loss: f32,
    /// The losses and evaluations so far.
    pub history: &'a History,
}

impl CheckpointToSave<'_> {
    /// The safetensors bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        let trainer = self.trainer;
        let tensors = model_and_moments(&trainer.params, &trainer.opt)?;
        let metadata = HashMap::from([
            ("format".to_string(), FORMAT.to_string()),
            (
                "model_args".to_string(),
                to_json(&self.args.model_args(self.vocab.len()))?,
            ),
            ("iter_num".to_string(), trainer.iter.to_string()),
            ("best_val_loss".to_string(), self.best_val_loss.to_string()),
            ("config".to_string(), to_json(self.args)?),
            ("adamw_step".to_string(), trainer.opt.steps().to_string()),
            ("vocab".to_string(), self.vocab.chars().iter().collect()),
            ("history".to_string(), to_json(self.history)?),
        ]);
        serialize_with_digest(&tensors, metadata)
    }

    /// Writes the checkpoint atomically (temp file + rename).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let bytes = self.to_bytes()?;
        report::write_atomic(path, &bytes)
            .map_err(|e| format!("cannot write checkpoint {}: {e}", path.display()))
    }
}
