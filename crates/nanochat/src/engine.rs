//! nanochat's `nanochat/engine.py`, the part that base_eval.py's samples use: `generate_batch`
//! from one prompt, several rows at a temperature (0: argmax) and an optional top-k, drawn from
//! PyTorch's generator as `Engine.generate` draws them (`torch.Generator().manual_seed(seed)`,
//! then one `multinomial` over all rows a step).
//!
//! The tool use is `generate`'s: the tokens between `<|python_start|>` and `<|python_end|>` go to
//! the [`crate::calculator`], and its answer is forced in as `<|output_start|>…<|output_end|>`
//! ([`RowState`]). With [`Sampling::kv_cache`], the prompt is run once and its cache copied to
//! every row ([`crate::kv_cache`]), as `generate` does; without it, each step runs the whole
//! sequence again.
//!
//! Target (`tests/core_eval.rs`): from the CORE fixture's weights, the 8 unconditioned samples
//! of 128 tokens at temperature 1, the greedy samples of base_eval.py's prompts and samples with
//! top-k, token for token as nanochat's `Engine.generate_batch` gives them, with the cache and
//! without it.

use crate::calculator::use_calculator;
use crate::gpt::Gpt;
use crate::kv_cache::KvCache;
use crate::tokenizer::Tokenizer;
use std::collections::VecDeque;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

// ANCHOR: sample_next_token
/// `sample_next_token`: one token per row of `logits` (B, V): the argmax at temperature 0;
/// else a draw from `softmax(logits / temperature)`, over the `top_k` largest when given.
pub fn sample_next_token(
    logits: &Tensor,
    rng: &mut TorchGenerator,
    temperature: f32,
    top_k: Option<usize>,
) -> Vec<u32> {
    let v = logits.shape()[1];
    if temperature == 0.0 {
        return logits.argmax(1).into_iter().map(|i| i as u32).collect(); // (B,)
    }
    match top_k {
        Some(k) if k > 0 => {
            let (vals, idx) = logits.topk(k.min(v)); // (B, k) each
            let probs = vals.map(|x| x / temperature).softmax(-1); // (B, k)
            let choice = rng.multinomial(&probs, 1, false); // (B,)
            let k = probs.shape()[1];
            choice
                .iter()
                .enumerate()
                .map(|(row, &c)| idx[row * k + c as usize] as u32)
                .collect()
        }
        _ => {
            let probs = logits.map(|x| x / temperature).softmax(-1); // (B, V)
            let choice = rng.multinomial(&probs, 1, false); // (B,)
            choice.into_iter().map(|c| c as u32).collect()
        }
    }
}
// ANCHOR_END: sample_next_token

/// The special tokens of the tool use.
#[derive(Clone, Copy, Debug)]
pub struct ToolTokens {
    /// `<|python_start|>`.
    pub python_start: u32,
    /// `<|python_end|>`.
    pub python_end: u32,
    /// `<|output_start|>`.
    pub output_start: u32,
    /// `<|output_end|>`.
    pub output_end: u32,
}

impl ToolTokens {
    /// The ids of `tokenizer`'s tool tokens.
    pub fn of(tokenizer: &Tokenizer) -> Result<ToolTokens, String> {
        Ok(ToolTokens {
            python_start: tokenizer.encode_special("<|python_start|>")?,
            python_end: tokenizer.encode_special("<|python_end|>")?,
            output_start: tokenizer.encode_special("<|output_start|>")?,
            output_end: tokenizer.encode_special("<|output_end|>")?,
        })
    }
}

// ANCHOR: row_state
/// `RowState`: one row's tool use. Tokens inside a python block are kept; at its end the
/// calculator's answer is queued to be forced in, ahead of anything sampled.
#[derive(Clone, Debug, Default)]
pub struct RowState {
    /// Tokens waiting to be forced in.
    pub forced_tokens: VecDeque<u32>,
    /// Between `<|python_start|>` and `<|python_end|>`.
    pub in_python_block: bool,
    /// The expression so far.
    pub python_expr_tokens: Vec<u32>,
}

impl RowState {
    /// The row's next token: a forced one if any waits, else `sampled`; then the tool logic.
    /// Returns the token and whether it was sampled (the mask: 0 for forced).
    pub fn next(
        &mut self,
        sampled: u32,
        tools: &ToolTokens,
        tokenizer: &Tokenizer,
    ) -> Result<(u32, bool), String> {
        let forced = self.forced_tokens.pop_front();
        let token = forced.unwrap_or(sampled);
        if token == tools.python_start {
            self.in_python_block = true;
            self.python_expr_tokens.clear();
        } else if token == tools.python_end && self.in_python_block {
            self.in_python_block = false;
            if !self.python_expr_tokens.is_empty() {
                let expr = tokenizer.decode(&self.python_expr_tokens)?;
                if let Some(result) = use_calculator(&expr) {
                    self.forced_tokens.push_back(tools.output_start);
                    self.forced_tokens.extend(tokenizer.encode(&result));
                    self.forced_tokens.push_back(tools.output_end);
                }
            }
            self.python_expr_tokens.clear();
        } else if self.in_python_block {
            self.python_expr_tokens.push(token);
        }
        Ok((token, forced.is_none()))
    }
}
// ANCHOR_END: row_state

/// The logits at the last position of each row, (B, V), for B rows of equal length.
fn last_logits(model: &Gpt, rows: &[Vec<u32>]) -> Result<Tensor, String> {
    let (b, t) = (rows.len(), rows[0].len());
    if t > 10 * model.config.sequence_len {
        return Err(format!(
            "a sequence of {t} tokens: the model reads at most {}",
            10 * model.config.sequence_len
        ));
    }
    let ids: Vec<u32> = rows.concat(); // (B, T)
    let graph = autograd::Graph::no_grad();
    let pass = autograd::ForwardPass::eval(&graph, &model.params);
    let logits = model.forward(&pass, &ids, b, None).value(); // (B, T, V)
    Ok(logits
        .narrow(1, t - 1, 1)
        .reshape(&[b, model.config.vocab_size])) // (B, V)
}

/// The sampling of a [`generate_batch`].
#[derive(Clone, Copy, Debug)]
pub struct Sampling {
    /// Rows sampled from the one prompt.
    pub num_samples: usize,
    /// Tokens generated at most.
    pub max_tokens: usize,
    /// 0 for the argmax.
    pub temperature: f32,
    /// Only the k most likely tokens, if given.
    pub top_k: Option<usize>,
    /// The generator's seed (`Engine.generate`'s default is 42).
    pub seed: u64,
    /// Keep each layer's keys and values instead of running the whole sequence each step.
    pub kv_cache: bool,
}

impl Sampling {
    /// base_eval.py's unconditioned samples: 8 rows of 128 tokens at temperature 1, seed 42.
    pub const UNCONDITIONED: Sampling = Sampling {
        num_samples: 8,
        max_tokens: 128,
        temperature: 1.0,
        top_k: None,
        seed: 42,
        kv_cache: true,
    };
}

// ANCHOR: generate
/// `Engine.generate(tokens, …)`: each step, one token per row (forced by the tool use, else
/// sampled), handed to `emit` with whether each was sampled, until `max_tokens` or every row
/// has reached `<|assistant_end|>` or `<|bos|>`, or `emit` returns false. Every row draws at
/// every step, forced tokens or not, as nanochat's rows step together.
pub fn generate(
    model: &Gpt,
    tokenizer: &Tokenizer,
    tokens: &[u32],
    sampling: Sampling,
    emit: &mut dyn FnMut(&[u32], &[bool]) -> bool,
) -> Result<(), String> {
    let n = sampling.num_samples;
    if tokens.is_empty() || n == 0 {
        return Err("generate needs a prompt of one token or more and one sample or more".into());
    }
    let assistant_end = tokenizer.encode_special("<|assistant_end|>")?;
    let bos = tokenizer.bos_token_id();
    let mut rng = TorchGenerator::manual_seed(sampling.seed);
    let v = model.config.vocab_size;
    // The prompt once, its last logits for every row (`expand(num_samples, -1)`), and with a
    // cache, its keys and values copied to every row.
    let (prompt_logits, mut cache) = if sampling.kv_cache {
        let mut prefill = KvCache::new(model.config.n_layer);
        let logits = model.forward_cached(tokens, 1, &mut prefill)?; // (1, T, V)
        let last = logits.narrow(1, tokens.len() - 1, 1).reshape(&[1, v]); // (1, V)
        (last, Some(prefill.replicate(n)))
    } else {
        (last_logits(model, &[tokens.to_vec()])?, None) // (1, V)
    };
    let mut logits = prompt_logits.broadcast_to(&[n, v]); // (n, V)
    let tools = ToolTokens::of(tokenizer)?;
    let mut states = vec![RowState::default(); n];
    let mut rows = vec![tokens.to_vec(); n];
    let mut completed = vec![false; n];
    for step in 0..sampling.max_tokens {
        if completed.iter().all(|&c| c) {
            break;
        }
        let sampled = sample_next_token(&logits, &mut rng, sampling.temperature, sampling.top_k);
        let mut column = Vec::with_capacity(n);
        let mut masks = Vec::with_capacity(n);
        for (i, &sampled) in sampled.iter().enumerate() {
            let (token, was_sampled) = states[i].next(sampled, &tools, tokenizer)?;
            rows[i].push(token);
            completed[i] |= token == assistant_end || token == bos;
            column.push(token);
            masks.push(was_sampled);
        }
        if !emit(&column, &masks) || step + 1 == sampling.max_tokens {
            break;
        }
        logits = match &mut cache {
            Some(cache) => model.forward_cached(&column, n, cache)?.reshape(&[n, v]), // (n, V)
            None => last_logits(model, &rows)?,                                       // (n, V)
        };
    }
    Ok(())
}
// ANCHOR_END: generate

/// `Engine.generate_batch(tokens, …)`: each row the prompt and what was sampled or forced after
/// it, up to the first `<|assistant_end|>` or `<|bos|>` (not included).
pub fn generate_batch(
    model: &Gpt,
    tokenizer: &Tokenizer,
    tokens: &[u32],
    sampling: Sampling,
) -> Result<Vec<Vec<u32>>, String> {
    let assistant_end = tokenizer.encode_special("<|assistant_end|>")?;
    let bos = tokenizer.bos_token_id();
    let mut results = vec![tokens.to_vec(); sampling.num_samples];
    let mut completed = vec![false; sampling.num_samples];
    generate(model, tokenizer, tokens, sampling, &mut |column, _| {
        for (i, &token) in column.iter().enumerate() {
            if !completed[i] {
                if token == assistant_end || token == bos {
                    completed[i] = true;
                } else {
                    results[i].push(token);
                }
            }
        }
        !completed.iter().all(|&c| c) // generate_batch stops once every row has ended
    })?;
    Ok(results)
}
