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
