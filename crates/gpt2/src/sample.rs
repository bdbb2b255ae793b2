//! Sampling as build-nanogpt does it (af6e591, "generate from the model"):
//! the logits at the last position, softmax, the 50 most likely tokens
//! (Hugging Face's pipeline default), `torch.multinomial` among them, and the
//! chosen token appended, until every row is `max_length` tokens long.

use crate::model::Gpt;
use autograd::{ForwardPass, Graph, Params};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

// ANCHOR: generate
/// Continues `prompt` in `num_return_sequences` rows to `max_length` tokens
/// each (prompt included), drawing from `rng` as PyTorch's loop draws from
/// `torch.manual_seed(42)`'s generator.
pub fn generate(
    model: &Gpt,
    params: &Params,
    prompt: &[usize],
    num_return_sequences: usize,
    max_length: usize,
    top_k: usize,
    rng: &mut TorchGenerator,
) -> Result<Vec<Vec<usize>>, String> {
    check_request(model, prompt, num_return_sequences, max_length, top_k)?;
    let vocab = model.config.vocab_size;
    let b = num_return_sequences;
    let mut x: Vec<Vec<usize>> = vec![prompt.to_vec(); b]; // (B, T)
    while x[0].len() < max_length {
        let t = x[0].len();
        let idx: Vec<usize> = x.concat();
        let graph = Graph::no_grad();
        let logits = model
            .forward(&ForwardPass::eval(&graph, params), &idx, b, t)
            .value(); // (B, T, V)
        let last = logits.narrow(1, t - 1, 1).reshape(&[b, vocab]); // (B, V)
        for (seq, token) in x.iter_mut().zip(draw_top_k(&last, top_k, rng)) {
            seq.push(token);
        }
    }
    Ok(x)
}

/// One token per row of `logits` `(B, V)`: softmax, the `k` most likely,
/// `torch.multinomial` among them, and `torch.gather` back to token ids.
pub fn draw_top_k(logits: &Tensor, k: usize, rng: &mut TorchGenerator) -> Vec<usize> {
    let probs = logits.softmax(-1); // (B, V)
    let (topk_probs, topk_indices) = probs.topk(k); // (B, k), B·k indices
    let ix = rng.multinomial(&topk_probs, 1, false); // (B, 1)
    ix.iter()
        .enumerate()
        .map(|(row, &pick)| topk_indices[row * k + pick as usize])
        .collect()
}
// ANCHOR_END: generate

/// The requests [`generate`] refuses: no rows, an empty prompt, more tokens
/// than the context holds, a top-k outside the vocabulary, or a token id
/// outside it.
pub fn check_request(
    model: &Gpt,
    prompt: &[usize],
    num_return_sequences: usize,
    max_length: usize,
    top_k: usize,
) -> Result<(), String> {
    let (block_size, vocab) = (model.config.block_size, model.config.vocab_size);
    if num_return_sequences == 0 {
        return Err("asked for 0 sequences".into());
    }
    if prompt.is_empty() || prompt.len() > max_length.max(1) || max_length > block_size {
        return Err(format!(
            "cannot generate {max_length} tokens from a prompt of {}: the context holds 1 to {block_size}",
            prompt.len()
        ));
    }
    if top_k == 0 || top_k > vocab {
        return Err(format!(
            "top-k must be between 1 and the vocabulary size {vocab}, got {top_k}"
        ));
    }
    if let Some(bad) = prompt.iter().find(|&&i| i >= vocab) {
        return Err(format!(
            "token id {bad} is outside the vocabulary of {vocab}"
        ));
    }
    Ok(())
}

/// The logits `(T, V)` of one sequence, for outside checks (`gpt2 logits`).
pub fn logits(model: &Gpt, params: &Params, ids: &[usize]) -> Result<Tensor, String> {
    let (t, vocab) = (ids.len(), model.config.vocab_size);
    if t == 0 || t > model.config.block_size {
        return Err(format!(
            "{t} tokens: the context holds 1 to {}",
            model.config.block_size
        ));
    }
    if let Some(bad) = ids.iter().find(|&&i| i >= vocab) {
        return Err(format!(
            "token id {bad} is outside the vocabulary of {vocab}"
        ));
    }
    let graph = Graph::no_grad();
    Ok(model
        .forward(&ForwardPass::eval(&graph, params), ids, 1, t)
        .value()
        .reshape(&[t, vocab]))
}

/// `gpt2 sample`: continue a prompt, as build-nanogpt's demo does (top-k sampling).
#[derive(clap::Args)]
pub struct SampleArgs {
    /// Folder with config.json and model.safetensors.
    #[arg(long)]
    model: std::path::PathBuf,
    /// The text to continue.
    #[arg(long, default_value = "Hello, I'm a language model,")]
    prompt: String,
    /// How many continuations.
    #[arg(long, default_value_t = 5)]
    num_return_sequences: usize,
    /// Tokens per continuation, the prompt's included.
    #[arg(long, default_value_t = 30)]
    max_length: usize,
    /// Sample among this many most likely tokens.
    #[arg(long, default_value_t = 50)]
    top_k: usize,
    /// `torch.manual_seed` of the sampling generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

impl SampleArgs {
    /// Prints each continuation as `> text`.
    pub fn run(self) -> Result<(), String> {
        let tok = bpe::Gpt2Tokenizer::from_data_dir()
            .map_err(|e| e.to_string())?
            .into_inner();
        let ids = tok
            .encode(&self.prompt, &bpe::AllowedSpecial::NoneRaise)
            .map_err(|e| e.to_string())?;
        let ids: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
        let (gpt, params) = crate::hf::from_pretrained(&self.model)?;
        let mut rng = TorchGenerator::manual_seed(self.seed);
        // The cache draws the same tokens as the plain loop, without redoing the prefix.
        let rows = crate::kv_cache::generate(
            &gpt,
            &params,
            &ids,
            self.num_return_sequences,
            self.max_length,
            self.top_k,
            &mut rng,
        )?;
        for row in rows {
            let row: Vec<u32> = row.iter().map(|&i| i as u32).collect();
            let text = tok.decode_bytes(&row).map_err(|e| e.to_string())?;
            println!("> {}", String::from_utf8_lossy(&text));
        }
        Ok(())
    }
}

/// `gpt2 logits`: the logits of a token sequence as JSON, one row per position.
#[derive(clap::Args)]
pub struct LogitsArgs {
    /// Folder with config.json and model.safetensors.
    #[arg(long)]
    model: std::path::PathBuf,
    /// Comma-separated token ids.
    #[arg(long, value_delimiter = ',', required = true)]
    ids: Vec<usize>,
}

impl LogitsArgs {
    /// Prints [`logits`] as one JSON array of rows.
    pub fn run(self) -> Result<(), String> {
        use std::io::Write;
        let (gpt, params) = crate::hf::from_pretrained(&self.model)?;
        let logits = logits(&gpt, &params, &self.ids)?; // (T, V)
        let v = gpt.config.vocab_size;
        let values = logits.to_vec();
        let rows: Vec<&[f32]> = values.chunks(v).collect();
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &rows).map_err(|e| e.to_string())?;
        writeln!(out).map_err(|e| e.to_string())
    }
}
