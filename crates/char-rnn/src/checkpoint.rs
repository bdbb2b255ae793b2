//! char-rnn's checkpoints (`lm_<savefile>_epoch<E.EE>_<val>.t7`), in safetensors.
//!
//! train.lua saves `protos`, `opt`, `train_losses`, `val_loss`, `val_losses`,
//! `i`, `epoch` and `vocab` with `torch.save`. Here the parameters are the
//! tensors (`model/i2h_1.weight`, …, in the model's order) and the rest is
//! metadata, so `sample` and `-init_from` need nothing else. The metadata also
//! holds a SHA-256 of everything (the gpt crate's scheme), so a damaged file is
//! refused by name; files are written to a temporary name and renamed.

use crate::model::{CharRnn, Kind};
use crate::train::Options;
use autograd::Params;
use checkpoint_file::{f32_bytes, open, serialize_with_digest, NamedTensor};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use tensor::Tensor;

/// The `format` metadata value of a char-rnn checkpoint.
pub const FORMAT: &str = "zero-to-hero/char-rnn/1";

/// What train.lua's `checkpoint` table holds.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// `checkpoint.opt`.
    pub opt: Options,
    /// `checkpoint.vocab`: the byte of each id.
    pub vocab: Vec<u8>,
    /// `checkpoint.protos`: the model's parameters.
    pub params: Params,
    /// `checkpoint.i`.
    pub iteration: usize,
    /// `checkpoint.epoch`.
    pub epoch: f64,
    /// `checkpoint.val_loss`.
    pub val_loss: f64,
    /// `checkpoint.train_losses`.
    pub train_losses: Vec<f64>,
    /// `checkpoint.val_losses`, by iteration.
    pub val_losses: BTreeMap<usize, f64>,
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("plain data serialises")
}

/// Writes `checkpoint` to `path` atomically; a NaN in a weight is refused.
pub fn save(path: &Path, checkpoint: &Checkpoint) -> Result<(), String> {
    let bytes = checkpoint
        .to_bytes()
        .map_err(|e| format!("not saving {}: {e}", path.display()))?;
    report::write_atomic(path, &bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

impl Checkpoint {
    /// The checkpoint as safetensors bytes, with its SHA-256 in the metadata.
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        let mut tensors: Vec<NamedTensor> = Vec::new();
        for (_, p) in self.params.iter() {
            let values = p.value.to_vec();
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return Err(format!("{} holds {} at index {i}", p.name, values[i]));
            }
            let bytes = f32_bytes(&values);
            tensors.push((format!("model/{}", p.name), p.value.shape().to_vec(), bytes));
        }
        let metadata = HashMap::from([
            ("format".to_string(), FORMAT.to_string()),
            ("opt".to_string(), json(&self.opt)),
            ("vocab".to_string(), json(&self.vocab)),
            ("i".to_string(), self.iteration.to_string()),
            ("epoch".to_string(), json(&self.epoch)),
            ("val_loss".to_string(), json(&self.val_loss)),
            ("train_losses".to_string(), json(&self.train_losses)),
            ("val_losses".to_string(), json(&self.val_losses)),
        ]);
        serialize_with_digest(&tensors, metadata)
    }

    /// Reads a checkpoint: every error names the file and what is wrong.
    pub fn load(path: &Path) -> Result<Checkpoint, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Checkpoint::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// [`Checkpoint::load`] on bytes already read.
    pub fn from_bytes(bytes: &[u8]) -> Result<Checkpoint, String> {
        let file = open(bytes, "not a char-rnn checkpoint")?;
        file.check_format(FORMAT)?;
        file.check_digest()?;
        let opt: Options = file.json("opt")?;
        let vocab: Vec<u8> = file.json("vocab")?;
        let kind: Kind = opt.model.parse()?;
        if vocab.is_empty() || opt.rnn_size == 0 || opt.num_layers == 0 {
            return Err("its options describe an empty model".into());
        }
        let mut params = Params::new();
        CharRnn::new(
            &mut params,
            kind,
            vocab.len(),
            opt.rnn_size,
            opt.num_layers,
            0.0,
        );
        if file.tensors.len() != params.len() {
            return Err(format!(
                "it holds {} tensors; a {} of {} layers has {}",
                file.tensors.len(),
                kind.name(),
                opt.num_layers,
                params.len()
            ));
        }
        for (_, p) in params.iter_mut() {
            let name = format!("model/{}", p.name);
            let values = checkpoint_file::read_f32(&file.tensors, &name, p.value.shape())?;
            p.value = Tensor::from_vec(values, p.value.shape());
        }
        Ok(Checkpoint {
            opt,
            vocab,
            params,
            iteration: file.parse("i")?,
            epoch: file.json("epoch")?,
            val_loss: file.json("val_loss")?,
            train_losses: file.json("train_losses")?,
            val_losses: file.json("val_losses")?,
        })
    }

    /// The model these parameters belong to, with them.
    pub fn into_model(self) -> Result<(CharRnn, Params), String> {
        let kind: Kind = self.opt.model.parse()?;
        let mut fresh = Params::new();
        let model = CharRnn::new(
            &mut fresh,
            kind,
            self.vocab.len(),
            self.opt.rnn_size,
            self.opt.num_layers,
            self.opt.dropout as f32,
        );
        Ok((model, self.params))
    }
}
