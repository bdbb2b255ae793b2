//! OpenAI's weights in Hugging Face's layout: a folder with `config.json` and
//! `model.safetensors`, as `GPT2LMHeadModel.save_pretrained` writes it and as
//! the hub serves `gpt2` (build-nanogpt's `GPT.from_pretrained`).
//!
//! A safetensors file is an 8-byte little-endian header length, a JSON header
//! naming each tensor's dtype, shape and byte range, then the raw data. Every
//! part of the header is checked before a byte of data is read: a damaged or
//! truncated file is an error naming the file, never a panic. The format has
//! no checksum, so a flipped bit inside the data cannot be detected; a NaN or
//! an infinity can, and is an error naming the tensor.
//!
//! OpenAI's checkpoint stores the four projections of each block as `Conv1D`
//! weights, `(in, out)`; this model's `Linear`s hold `(out, in)`, as PyTorch's
//! do, so those four are transposed on the way in.

use crate::model::{Gpt, GptConfig};
use autograd::Params;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tensor::Tensor;

/// The projections stored as `Conv1D` weights, `(in, out)`.
const CONV1D: [&str; 4] = [
    "attn.c_attn.weight",
    "attn.c_proj.weight",
    "mlp.c_fc.weight",
    "mlp.c_proj.weight",
];

/// One tensor's entry in a safetensors header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// `F32`, `F16`, `BF16`, …
    pub dtype: String,
    /// The shape.
    pub shape: Vec<usize>,
    /// Byte range within the data section.
    pub start: u64,
    /// End of the byte range (exclusive).
    pub end: u64,
}

/// An open safetensors file whose header has been checked.
pub struct SafeTensors {
    path: PathBuf,
    file: File,
    data_start: u64,
    /// Every tensor by name.
    pub tensors: BTreeMap<String, TensorInfo>,
}

fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "F64" | "I64" | "U64" => 8,
        "F32" | "I32" | "U32" => 4,
        "F16" | "BF16" | "I16" | "U16" => 2,
        "I8" | "U8" | "BOOL" | "F8_E4M3" | "F8_E5M2" => 1,
        _ => return None,
    })
}

impl SafeTensors {
    /// Opens `path` and checks its header: its length against the file's, its
    /// JSON, each tensor's dtype, shape and byte range, and that the ranges
    /// tile the data section exactly.
    pub fn open(path: &Path) -> Result<SafeTensors, String> {
        let err = |what: String| format!("{}: {what}", path.display());
        let mut file = File::open(path).map_err(|e| err(e.to_string()))?;
        let len = file.metadata().map_err(|e| err(e.to_string()))?.len();
        if len < 8 {
            return Err(err(format!(
                "truncated: {len} bytes, less than the 8-byte header length"
            )));
        }
        let mut n = [0u8; 8];
        file.read_exact(&mut n).map_err(|e| err(e.to_string()))?;
        let header_len = u64::from_le_bytes(n);
        if header_len > len - 8 {
            return Err(err(format!(
                "the header claims {header_len} bytes but the file holds {} after the length",
                len - 8
            )));
        }
        let mut header = vec![0u8; header_len as usize];
        file.read_exact(&mut header)
            .map_err(|e| err(e.to_string()))?;
        let header: serde_json::Value =
            serde_json::from_slice(&header).map_err(|e| err(format!("damaged header: {e}")))?;
        let entries = header
            .as_object()
            .ok_or_else(|| err("damaged header: not a JSON object".into()))?;
        let data_start = 8 + header_len;
        let data_len = len - data_start;
        let mut tensors = BTreeMap::new();
        for (name, entry) in entries {
            if name == "__metadata__" {
                continue;
            }
            let bad = |what: &str| err(format!("damaged header: tensor {name}: {what}"));
            let dtype = entry["dtype"]
                .as_str()
                .ok_or_else(|| bad("no dtype"))?
                .to_string();
            let size = dtype_size(&dtype).ok_or_else(|| bad(&format!("unknown dtype {dtype}")))?;
            let shape: Vec<usize> = entry["shape"]
                .as_array()
                .ok_or_else(|| bad("no shape"))?
                .iter()
                .map(|d| {
                    d.as_u64()
                        .map(|d| d as usize)
                        .ok_or_else(|| bad("a dimension is not a number"))
                })
                .collect::<Result<_, _>>()?;
            let offsets = entry["data_offsets"]
                .as_array()
                .ok_or_else(|| bad("no data_offsets"))?;
            let (start, end) = match offsets.as_slice() {
                [s, e] => (
                    s.as_u64().ok_or_else(|| bad("bad data_offsets"))?,
                    e.as_u64().ok_or_else(|| bad("bad data_offsets"))?,
                ),
                _ => return Err(bad("data_offsets is not [start, end]")),
            };
            let elements = shape
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
            let bytes = elements
                .and_then(|e| e.checked_mul(size))
                .ok_or_else(|| bad("shape overflows"))?;
            if end < start || end - start != bytes {
                return Err(bad(&format!("shape {shape:?} of {dtype} needs {bytes} bytes, data_offsets give {start}..{end}")));
            }
            if end > data_len {
                return Err(err(format!(
                    "tensor {name} claims bytes {start}..{end} but the data section holds {data_len} (truncated file?)"
                )));
            }
            tensors.insert(
                name.clone(),
                TensorInfo {
                    dtype,
                    shape,
                    start,
                    end,
                },
            );
        }
        // The format requires the ranges to cover the data section with no holes or overlaps.
        let mut ranges: Vec<(u64, u64)> = tensors.values().map(|t| (t.start, t.end)).collect();
        ranges.sort();
        let mut at = 0;
        for (start, end) in ranges {
            if start != at {
                return Err(err(format!(
                    "damaged header: tensor data overlaps or leaves a hole at byte {at}"
                )));
            }
            at = end;
        }
        if at != data_len {
            return Err(err(format!(
                "damaged header: the tensors cover {at} of the {data_len} data bytes"
            )));
        }
        Ok(SafeTensors {
            path: path.to_path_buf(),
            file,
            data_start,
            tensors,
        })
    }

    /// Reads an `F32` tensor. The bytes go straight into the tensor's storage,
    /// a megabyte at a time, so a load never holds a second copy of the model.
    pub fn read_f32(&mut self, name: &str) -> Result<Tensor, String> {
        let err = |what: String| format!("{}: {what}", self.path.display());
        let info = self
            .tensors
            .get(name)
            .ok_or_else(|| err(format!("no tensor {name}")))?
            .clone();
        if info.dtype != "F32" {
            return Err(err(format!(
                "tensor {name} is {}, only F32 is read",
                info.dtype
            )));
        }
        self.file
            .seek(SeekFrom::Start(self.data_start + info.start))
            .map_err(|e| err(e.to_string()))?;
        let n = ((info.end - info.start) / 4) as usize;
        let mut values = Vec::with_capacity(n);
        let mut chunk = vec![0u8; (1 << 20).min(4 * n)];
        while values.len() < n {
            let take = (4 * (n - values.len())).min(chunk.len());
            self.file
                .read_exact(&mut chunk[..take])
                .map_err(|e| err(format!("tensor {name}: {e}")))?;
            values.extend(
                chunk[..take]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(err(format!(
                "tensor {name} holds {} at flat index {i}",
                values[i]
            )));
        }
        Ok(Tensor::from_vec(values, &info.shape))
    }
}

/// Reads Hugging Face's `config.json` for GPT-2 and checks that it describes
/// the model built here: tanh GELU, LayerNorm eps 1e-5, the 4× MLP, a tied head.
pub fn read_config(path: &Path) -> Result<GptConfig, String> {
    let err = |what: String| format!("{}: {what}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| err(format!("not JSON: {e}")))?;
    let field = |key: &str| -> Result<usize, String> {
        json[key]
            .as_u64()
            .map(|v| v as usize)
            .ok_or_else(|| err(format!("no integer {key}")))
    };
    let config = GptConfig {
        block_size: field("n_positions")?,
        vocab_size: field("vocab_size")?,
        n_layer: field("n_layer")?,
        n_head: field("n_head")?,
        n_embd: field("n_embd")?,
    };
    let sizes = [
        ("n_positions", config.block_size),
        ("vocab_size", config.vocab_size),
        ("n_layer", config.n_layer),
        ("n_embd", config.n_embd),
    ];
    if let Some((key, _)) = sizes.iter().find(|(_, v)| *v == 0) {
        return Err(err(format!("{key} is 0")));
    }
    if config.n_head == 0 || !config.n_embd.is_multiple_of(config.n_head) {
        return Err(err(format!(
            "n_embd {} is not a multiple of n_head {}",
            config.n_embd, config.n_head
        )));
    }
    match json["activation_function"].as_str() {
        None | Some("gelu_new") | Some("gelu_pytorch_tanh") => {}
        Some(other) => {
            return Err(err(format!(
                "activation_function {other:?}: this model uses GELU's tanh form (gelu_new)"
            )))
        }
    }
    if let Some(eps) = json["layer_norm_epsilon"].as_f64() {
        if (eps - 1e-5).abs() > 1e-12 {
            return Err(err(format!(
                "layer_norm_epsilon {eps}: this model uses 1e-5"
            )));
        }
    }
    if let Some(inner) = json["n_inner"].as_u64() {
        if inner as usize != 4 * config.n_embd {
            return Err(err(format!(
                "n_inner {inner}: this model's MLP is 4 × n_embd = {}",
                4 * config.n_embd
            )));
        }
    }
    if json["tie_word_embeddings"].as_bool() == Some(false) {
        return Err(err(
            "tie_word_embeddings is false: GPT-2's head is tied to wte".into(),
        ));
    }
    Ok(config)
}

// ANCHOR: from_pretrained
/// `GPT.from_pretrained`: builds the model that `dir/config.json` describes,
/// then copies every tensor of `dir/model.safetensors` into it, transposing
/// the `Conv1D` weights. Keys may carry the `transformer.` prefix or not;
/// the attention masks (`attn.bias`, `attn.masked_bias`) are buffers, not
/// weights, and are skipped. Every other key must match a parameter, every
/// parameter must be filled, and every shape must agree.
pub fn from_pretrained(dir: &Path) -> Result<(Gpt, Params), String> {
    let config = read_config(&dir.join("config.json"))?;
    let path = dir.join("model.safetensors");
    let mut file = SafeTensors::open(&path)?;
    let err = |what: String| format!("{}: {what}", path.display());
    // Before anything is allocated: the model config.json describes must fit in
    // the file, so a wrong or hostile config cannot ask for more memory than that.
    let file_elements: u64 = file
        .tensors
        .iter()
        .filter(|(k, _)| {
            !(k.ends_with(".attn.bias")
                || k.ends_with(".attn.masked_bias")
                || *k == "lm_head.weight")
        })
        .map(|(_, t)| t.shape.iter().product::<usize>() as u64)
        .sum();
    let described = config.parameter_count();
    if described.is_none_or(|n| n > file_elements) {
        let n = described.map_or("more than 2^64".to_string(), |n| n.to_string());
        return Err(err(format!(
            "config.json describes {n} parameters, more than the {file_elements} this file holds"
        )));
    }
    // Zeros that draw nothing and stay untouched until overwritten.
    let mut params = Params::new();
    let model = Gpt::zeros(&mut params, config);
    let ids: BTreeMap<String, autograd::ParamId> =
        params.iter().map(|(id, p)| (p.name.clone(), id)).collect();
    let mut filled = BTreeSet::new();
    let names: Vec<String> = file.tensors.keys().cloned().collect();
    for key in names {
        if key.ends_with(".attn.bias") || key.ends_with(".attn.masked_bias") {
            continue;
        }
        let name = if key.starts_with("transformer.") || key.starts_with("lm_head.") {
            key.clone()
        } else {
            format!("transformer.{key}")
        };
        let found = file.tensors[&key].shape.clone();
        if name == "lm_head.weight" {
            // Some exports keep the tied head as a copy of wte: checked once wte is in.
            let want = [config.vocab_size, config.n_embd];
            if found != want {
                return Err(err(format!(
                    "tensor {key}: expected shape {want:?} (config.json), found {found:?}"
                )));
            }
            continue;
        }
        if filled.contains(&name) {
            return Err(err(format!(
                "tensor {key} is stored twice (with and without `transformer.`)"
            )));
        }
        let id = *ids.get(&name).ok_or_else(|| {
            err(format!(
                "tensor {key} is not a GPT-2 parameter (config.json: {} layers)",
                config.n_layer
            ))
        })?;
        let want = params.value(id).shape().to_vec();
        let conv1d = CONV1D.iter().any(|s| name.ends_with(s));
        let stored: Vec<usize> = if conv1d {
            want.iter().rev().copied().collect()
        } else {
            want.clone()
        };
        if found != stored {
            let layout = if conv1d { " (Conv1D, in × out)" } else { "" };
            return Err(err(format!(
                "tensor {key}: expected shape {stored:?}{layout} from config.json, found {found:?}"
            )));
        }
        // Drop the zeros before reading, so the two never coexist.
        params.get_mut(id).value = Tensor::zeros(&[0]);
        let value = file.read_f32(&key)?;
        params.get_mut(id).value = if conv1d {
            value.transpose(0, 1).contiguous()
        } else {
            value
        };
        filled.insert(name);
    }
    if let Some(missing) = ids.keys().find(|n| !filled.contains(*n)) {
        return Err(err(format!("missing tensor {missing}")));
    }
    if file.tensors.contains_key("lm_head.weight") {
        // GPT-2's head is tied: a stored copy must be wte, bit for bit.
        let head = file.read_f32("lm_head.weight")?;
        if head.to_vec() != params.value(model.wte.weight).to_vec() {
            return Err(err(
                "tensor lm_head.weight differs from wte: an untied head, which GPT-2 does not have"
                    .into(),
            ));
        }
    }
    Ok((model, params))
}
// ANCHOR_END: from_pretrained

// ANCHOR: save_pretrained
/// `save_pretrained`: writes `dir/config.json` and `dir/model.safetensors` as
/// `transformers` does for a GPT-2 (the tied head left out, the `Conv1D`
/// weights stored `(in, out)`). Each file is written to a temporary name and
/// renamed.
pub fn save_pretrained(dir: &Path, model: &Gpt, params: &Params) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let c = model.config;
    let config = serde_json::json!({
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
        "n_positions": c.block_size, "n_ctx": c.block_size, "vocab_size": c.vocab_size,
        "n_layer": c.n_layer, "n_head": c.n_head, "n_embd": c.n_embd,
        "tie_word_embeddings": true, "bos_token_id": 50256, "eos_token_id": 50256,
    });
    let text = serde_json::to_string_pretty(&config).expect("JSON") + "\n";
    write_atomic(&dir.join("config.json"), text.as_bytes())?;
    // (name, parameter, stored as Conv1D); each tensor is made only as it is written.
    let mut tensors: Vec<(String, autograd::ParamId, bool)> = params
        .iter()
        .map(|(id, p)| {
            (
                p.name.clone(),
                id,
                CONV1D.iter().any(|s| p.name.ends_with(s)),
            )
        })
        .collect();
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    let stored = |id, conv1d: bool| -> Tensor {
        let value = params.value(id);
        if conv1d {
            value.transpose(0, 1).contiguous()
        } else {
            value.clone()
        }
    };
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
    let mut at = 0u64;
    for (name, id, conv1d) in &tensors {
        let mut shape = params.value(*id).shape().to_vec();
        if *conv1d {
            shape.reverse();
        }
        let bytes = 4 * shape.iter().product::<usize>() as u64;
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [at, at + bytes]}),
        );
        at += bytes;
    }
    let mut header = serde_json::to_vec(&header).expect("JSON");
    header.resize(header.len().div_ceil(8) * 8, b' '); // the data starts 8-byte aligned
                                                       // Streamed tensor by tensor, so saving holds no second copy of the model.
    let path = dir.join("model.safetensors");
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let tmp = path.with_extension("tmp");
    let mut out = std::io::BufWriter::new(File::create(&tmp).map_err(err)?);
    out.write_all(&(header.len() as u64).to_le_bytes())
        .map_err(err)?;
    out.write_all(&header).map_err(err)?;
    for (_, id, conv1d) in &tensors {
        for v in stored(*id, *conv1d).to_vec() {
            out.write_all(&v.to_le_bytes()).map_err(err)?;
        }
    }
    out.into_inner()
        .map_err(|e| err(e.into_error()))?
        .sync_all()
        .map_err(err)?;
    std::fs::rename(&tmp, &path).map_err(err)
}
// ANCHOR_END: save_pretrained

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp).map_err(err)?;
    file.write_all(bytes).map_err(err)?;
    file.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
