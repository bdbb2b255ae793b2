//! nanochat's `nanochat/engine.py`, the part that base_eval.py's samples use: `generate_batch`
//! from one prompt, several rows at a temperature (0: argmax) and an optional top-k, drawn from
//! PyTorch's generator as `Engine.generate` draws them (`torch.Generator().manual_seed(seed)`,
//! then one `multinomial` over all rows a step).
//!
//! Not here yet, and both for the chat half of nanochat: the KV cache (each step here runs the
//! whole sequence again, the same numbers rounded otherwise) and the tool use, in which
//! `<|python_start|>…<|python_end|>` goes to the calculator and its result is forced in. A base
//! model that samples `<|python_start|>` gets no calculator here.
//!
//! Target (`tests/core_eval.rs`): from the CORE fixture's weights, the 8 unconditioned samples
//! of 128 tokens at temperature 1 and the greedy samples of base_eval.py's prompts, token for
//! token as nanochat's `Engine.generate_batch` gives them.

use crate::gpt::Gpt;
use crate::tokenizer::Tokenizer;
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
    let logits = model.logits(&pass, &ids, b).value(); // (B, T, V)
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
}

// ANCHOR: generate_batch
/// `Engine.generate_batch(tokens, …)`: each row the prompt and what was sampled after it, up to
/// the first `<|assistant_end|>` or `<|bos|>` (not included). Every row draws at every step until
/// all have ended, as `generate` steps them together.
pub fn generate_batch(
    model: &Gpt,
    tokenizer: &Tokenizer,
    tokens: &[u32],
    sampling: Sampling,
) -> Result<Vec<Vec<u32>>, String> {
    let n = sampling.num_samples;
    if tokens.is_empty() || n == 0 {
        return Err(
            "generate_batch needs a prompt of one token or more and one sample or more".into(),
        );
    }
    let assistant_end = tokenizer.encode_special("<|assistant_end|>")?;
    let bos = tokenizer.bos_token_id();
    let mut rng = TorchGenerator::manual_seed(sampling.seed);
    // The prompt once, its last logits for every row (`expand(num_samples, -1)`).
    let prompt_logits = last_logits(model, &[tokens.to_vec()])?; // (1, V)
    let mut logits = prompt_logits.broadcast_to(&[n, model.config.vocab_size]); // (n, V)
    let mut rows = vec![tokens.to_vec(); n];
    let mut results = rows.clone();
    let mut completed = vec![false; n];
    for step in 0..sampling.max_tokens {
        let next = sample_next_token(&logits, &mut rng, sampling.temperature, sampling.top_k);
        for (i, &token) in next.iter().enumerate() {
            rows[i].push(token);
            if !completed[i] {
                if token == assistant_end || token == bos {
                    completed[i] = true;
                } else {
                    results[i].push(token);
                }
            }
        }
        if completed.iter().all(|&c| c) || step + 1 == sampling.max_tokens {
            break;
        }
        logits = last_logits(model, &rows)?; // (n, V)
    }
    Ok(results)
}
// ANCHOR_END: generate_batch
