//! llm.c's files (karpathy/llm.c `train_gpt2.py`, `train_gpt2.c`): the model
//! checkpoint `gpt2_124M.bin` and the tokenizer `gpt2_tokenizer.bin`.
//!
//! A checkpoint is a header of 256 little-endian int32s, `[magic 20240326,
//! version, maxT, V, L, NH, C, Vp, 0…]`, then every parameter as float32
//! (version 3) or bfloat16 (version 5), in llm.c's order: `wte` padded with
//! zero rows to `Vp` (a multiple of 128), `wpe`, then each kind of block
//! tensor for all `L` layers in turn (`ln_1.weight` of every layer, then
//! `ln_1.bias` of every layer, …), then `ln_f`. The weights are `(out, in)`,
//! as this crate's `Linear`s hold them.
//!
//! The tokenizer is a header `[magic 20240328, version 2, n, eot]` then, for
//! each token, one length byte and that many bytes.

use crate::model::{Gpt, GptConfig};
use autograd::{ParamId, Params};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use tensor::Tensor;

/// `header[0]` of a checkpoint.
pub const MODEL_MAGIC: i32 = 20240326;
/// `header[0]` of a tokenizer file.
pub const TOKENIZER_MAGIC: i32 = 20240328;
const HEADER_BYTES: u64 = 256 * 4;

/// How a checkpoint stores its numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// Version 3: float32.
    F32,
    /// Version 5: bfloat16, rounded to nearest even on the way out.
    Bf16,
}

impl Dtype {
    fn version(self) -> i32 {
        match self {
            Dtype::F32 => 3,
            Dtype::Bf16 => 5,
        }
    }

    fn bytes(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 => 2,
        }
    }
}

/// `torch.Tensor.to(torch.bfloat16)`: round to nearest, ties to even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16; // a quiet NaN
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// A bfloat16's exact value as float32.
pub fn bf16_to_f32(x: u16) -> f32 {
    f32::from_bits((x as u32) << 16)
}

/// The padded vocabulary: `V` rounded up to a multiple of 128 (`pad_vocab`).
pub fn padded_vocab(vocab: usize) -> usize {
    vocab.div_ceil(128) * 128
}

/// The parameters in llm.c's order, each with the rows it takes in the file
/// (`wte` takes `Vp`, the rows past `V` being zero).
fn llmc_order(model: &Gpt) -> Vec<ParamId> {
    let mut order = vec![model.wte.weight, model.wpe.weight];
    type Pick = fn(&crate::model::Block) -> ParamId;
    let per_layer: [Pick; 12] = [
        |b| b.ln_1.weight,
        |b| b.ln_1.bias.expect("bias"),
        |b| b.attn.c_attn.weight,
        |b| b.attn.c_attn.bias.expect("bias"),
        |b| b.attn.c_proj.weight,
        |b| b.attn.c_proj.bias.expect("bias"),
        |b| b.ln_2.weight,
        |b| b.ln_2.bias.expect("bias"),
        |b| b.mlp.c_fc.weight,
        |b| b.mlp.c_fc.bias.expect("bias"),
        |b| b.mlp.c_proj.weight,
        |b| b.mlp.c_proj.bias.expect("bias"),
    ];
    for pick in per_layer {
        order.extend(model.h.iter().map(pick));
    }
    order.push(model.ln_f.weight);
    order.push(model.ln_f.bias.expect("bias"));
    order
}

// ANCHOR: write_model
/// llm.c's `write_model`: the header, then every tensor in llm.c's order.
/// Written to a temporary file and renamed, so a crash leaves no half file.
pub fn write_model(path: &Path, model: &Gpt, params: &Params, dtype: Dtype) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let c = model.config;
    let vp = padded_vocab(c.vocab_size);
    let mut header = [0i32; 256];
    header[..8].copy_from_slice(&[
        MODEL_MAGIC,
        dtype.version(),
        c.block_size as i32,
        c.vocab_size as i32,
        c.n_layer as i32,
        c.n_head as i32,
        c.n_embd as i32,
        vp as i32,
    ]);
    let tmp = path.with_extension("bin.tmp");
    let mut out = BufWriter::new(File::create(&tmp).map_err(err)?);
    for h in header {
        out.write_all(&h.to_le_bytes()).map_err(err)?;
    }
    for id in llmc_order(model) {
        let mut values = params.value(id).to_vec();
        if id == model.wte.weight {
            values.resize(vp * c.n_embd, 0.0); // pad_vocab: zero rows up to Vp
        }
        for v in values {
            match dtype {
                Dtype::F32 => out.write_all(&v.to_le_bytes()),
                Dtype::Bf16 => out.write_all(&f32_to_bf16(v).to_le_bytes()),
            }
            .map_err(err)?;
        }
    }
    out.into_inner()
        .map_err(|e| err(e.into_error()))?
        .sync_all()
        .map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
// ANCHOR_END: write_model

/// Reads a checkpoint written by llm.c (or [`write_model`]); every header
/// field and the file's size are checked first.
pub fn read_model(path: &Path) -> Result<(Gpt, Params), String> {
    let err = |what: String| format!("{}: {what}", path.display());
    let file = File::open(path).map_err(|e| err(e.to_string()))?;
    let len = file.metadata().map_err(|e| err(e.to_string()))?.len();
    if len < HEADER_BYTES {
        return Err(err(format!(
            "{len} bytes, shorter than the {HEADER_BYTES}-byte header"
        )));
    }
    let mut input = BufReader::with_capacity(1 << 20, file);
    let mut header = [0i32; 256];
    let mut word = [0u8; 4];
    for h in header.iter_mut() {
        input
            .read_exact(&mut word)
            .map_err(|e| err(e.to_string()))?;
        *h = i32::from_le_bytes(word);
    }
    if header[0] != MODEL_MAGIC {
        return Err(err(format!(
            "magic {} is not an llm.c GPT-2 checkpoint's ({MODEL_MAGIC})",
            header[0]
        )));
    }
    let dtype = match header[1] {
        3 => Dtype::F32,
        5 => Dtype::Bf16,
        v => {
            return Err(err(format!(
                "version {v}: only 3 (float32) and 5 (bfloat16) are read"
            )))
        }
    };
    let fields = ["maxT", "V", "L", "NH", "C", "Vp"];
    if let Some(k) = (2..8).find(|&k| header[k] <= 0) {
        return Err(err(format!(
            "header field {} is {}",
            fields[k - 2],
            header[k]
        )));
    }
    // llm.c's writers start from `torch.zeros(256)`: the words after the eighth are 0.
    if let Some(k) = (8..256).find(|&k| header[k] != 0) {
        return Err(err(format!(
            "header word {k} is {}, where llm.c writes 0 (damaged?)",
            header[k]
        )));
    }
    let [t, v, l, nh, c, vp] = [2, 3, 4, 5, 6, 7].map(|k| header[k] as usize);
    if vp < v || c % nh != 0 {
        return Err(err(format!(
            "inconsistent header: V {v}, Vp {vp}, C {c}, NH {nh}"
        )));
    }
    let config = GptConfig {
        block_size: t,
        vocab_size: v,
        n_layer: l,
        n_head: nh,
        n_embd: c,
    };
    // The parameter count, in checked arithmetic: a damaged header must not overflow.
    let floats = (|| {
        let block = c
            .checked_mul(c)?
            .checked_mul(12)?
            .checked_add(c.checked_mul(13)?)?;
        vp.checked_mul(c)?
            .checked_add(t.checked_mul(c)?)?
            .checked_add(l.checked_mul(block)?)?
            .checked_add(2 * c)
    })()
    .ok_or_else(|| {
        err(format!(
            "header sizes overflow: maxT {t}, V {v}, L {l}, C {c}, Vp {vp}"
        ))
    })?;
    let want = (floats as u64)
        .checked_mul(dtype.bytes())
        .and_then(|b| b.checked_add(HEADER_BYTES))
        .unwrap_or(u64::MAX);
    if len != want {
        return Err(err(format!(
            "{len} bytes, but its header describes {want} (truncated or damaged?)"
        )));
    }
    // Zeros that draw nothing and stay untouched until overwritten.
    let mut params = Params::new();
    let model = Gpt::zeros(&mut params, config);
    for id in llmc_order(&model) {
        let shape = params.value(id).shape().to_vec();
        let rows = if id == model.wte.weight { vp } else { shape[0] };
        let n = rows * shape[1..].iter().product::<usize>();
        let mut values = Vec::with_capacity(n);
        let mut buf = [0u8; 4];
        let width = dtype.bytes() as usize;
        for _ in 0..n {
            input
                .read_exact(&mut buf[..width])
                .map_err(|e| err(e.to_string()))?;
            values.push(match dtype {
                Dtype::F32 => f32::from_le_bytes(buf),
                Dtype::Bf16 => bf16_to_f32(u16::from_le_bytes([buf[0], buf[1]])),
            });
        }
        // Checked before wte's padding rows (V..Vp) are dropped, so damage there shows too.
        if let Some(bad) = values.iter().find(|x| !x.is_finite()) {
            return Err(err(format!("{} holds {bad}", params.get(id).name)));
        }
        values.truncate(shape.iter().product());
        params.get_mut(id).value = Tensor::from_vec(values, &shape);
    }
    Ok((model, params))
}

/// Reads llm.c's `gpt2_tokenizer.bin`: every token's bytes, by id, and the
/// end-of-text id (version 2; version 1 files have none).
pub fn read_tokenizer(path: &Path) -> Result<(Vec<Vec<u8>>, Option<u32>), String> {
    let err = |what: String| format!("{}: {what}", path.display());
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    if bytes.len() < HEADER_BYTES as usize {
        return Err(err(format!(
            "{} bytes, shorter than the {HEADER_BYTES}-byte header",
            bytes.len()
        )));
    }
    let word = |k: usize| i32::from_le_bytes(bytes[4 * k..4 * k + 4].try_into().expect("4 bytes"));
    if word(0) != TOKENIZER_MAGIC {
        return Err(err(format!(
            "magic {} is not an llm.c tokenizer's ({TOKENIZER_MAGIC})",
            word(0)
        )));
    }
    let eot = match word(1) {
        1 => None,
        2 => Some(word(3) as u32),
        v => return Err(err(format!("tokenizer version {v}: only 1 and 2 exist"))),
    };
    let reserved = if eot.is_some() { 4 } else { 3 };
    if let Some(k) = (reserved..256).find(|&k| word(k) != 0) {
        return Err(err(format!(
            "header word {k} is {}, where llm.c writes 0 (damaged?)",
            word(k)
        )));
    }
    let n = word(2);
    // Each token takes at least two bytes (its length and one byte).
    if n <= 0 || n as usize > (bytes.len() - HEADER_BYTES as usize) / 2 {
        return Err(err(format!(
            "{n} tokens cannot fit in {} bytes",
            bytes.len()
        )));
    }
    if let Some(e) = eot.filter(|&e| e as i32 >= n || (e as i32) < 0) {
        return Err(err(format!(
            "end-of-text id {} is not one of the {n} tokens",
            e as i32
        )));
    }
    let mut at = HEADER_BYTES as usize;
    let mut tokens = Vec::with_capacity(n as usize);
    for id in 0..n {
        let len = *bytes
            .get(at)
            .ok_or_else(|| err(format!("ends before token {id}")))? as usize;
        let token = bytes
            .get(at + 1..at + 1 + len)
            .ok_or_else(|| err(format!("ends inside token {id}")))?;
        if len == 0 {
            return Err(err(format!("token {id} is empty")));
        }
        tokens.push(token.to_vec());
        at += 1 + len;
    }
    if at != bytes.len() {
        return Err(err(format!(
            "{} bytes after the last token",
            bytes.len() - at
        )));
    }
    Ok((tokens, eot))
}

/// `gpt2 to-llmc`: write a model as llm.c's checkpoint (gpt2_124M.bin's format).
#[derive(clap::Args)]
pub struct ToLlmcArgs {
    /// Folder with config.json and model.safetensors.
    #[arg(long)]
    model: std::path::PathBuf,
    /// The checkpoint to write.
    #[arg(long)]
    out: std::path::PathBuf,
    /// Store bfloat16 (llm.c's version 5) instead of float32 (version 3).
    #[arg(long)]
    bf16: bool,
}

impl ToLlmcArgs {
    /// Reads the Hugging Face folder and writes the checkpoint.
    pub fn run(self) -> Result<(), String> {
        let (gpt, params) = crate::hf::from_pretrained(&self.model)?;
        let dtype = if self.bf16 { Dtype::Bf16 } else { Dtype::F32 };
        write_model(&self.out, &gpt, &params, dtype)?;
        println!("wrote {}", self.out.display());
        Ok(())
    }
}

/// `gpt2 from-llmc`: read llm.c's checkpoint and save it in Hugging Face's layout.
#[derive(clap::Args)]
pub struct FromLlmcArgs {
    /// An llm.c checkpoint (version 3 or 5).
    #[arg(long)]
    checkpoint: std::path::PathBuf,
    /// Folder for config.json and model.safetensors.
    #[arg(long)]
    out: std::path::PathBuf,
}

impl FromLlmcArgs {
    /// Reads the checkpoint and writes the Hugging Face folder.
    pub fn run(self) -> Result<(), String> {
        let (gpt, params) = read_model(&self.checkpoint)?;
        crate::hf::save_pretrained(&self.out, &gpt, &params)?;
        println!("wrote {}", self.out.display());
        Ok(())
    }
}
