//! The checkpoint file of every trainer after lecture 7 (gpt, gpt2, makemore,
//! char-rnn, nanochat): safetensors, with the model's tensors named
//! `model/<param>` and AdamW's moments `adamw.exp_avg/<param>` and
//! `adamw.exp_avg_sq/<param>`, and in the metadata whatever the trainer needs
//! to resume (iteration, configuration, vocabulary, generator state).
//!
//! safetensors carries no checksum, so the metadata also holds `sha256`: the
//! SHA-256 of every tensor (name, dtype, shape, bytes) and every other metadata
//! entry ([`serialize_with_digest`], [`check_digest`]), so that a damaged file
//! is an error however small the damage. Non-finite values are refused on save
//! ([`model_and_moments`]) and on load ([`read_f32`]).
//!
//! Each trainer keeps its own format name and metadata next to its model (for
//! lecture 7, `gpt::checkpoint`); this crate is the file they share.
#![deny(missing_docs)]

use autograd::{AdamW, Params};
use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use tensor::Tensor;

/// A checkpoint tensor: name, shape, little-endian f32 bytes.
pub type NamedTensor = (String, Vec<usize>, Vec<u8>);

/// The metadata key of the SHA-256 over a checkpoint's tensors and other metadata.
pub const SHA256_KEY: &str = "sha256";

/// Values as little-endian f32 bytes, safetensors' `F32` layout.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
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
            f32_bytes(&p.value.to_vec()),
        ));
        if let Some((m, v)) = opt.moments(id) {
            tensors.push((
                format!("adamw.exp_avg/{}", p.name),
                shape.clone(),
                f32_bytes(&m.to_vec()),
            ));
            tensors.push((
                format!("adamw.exp_avg_sq/{}", p.name),
                shape,
                f32_bytes(&v.to_vec()),
            ));
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
