//! Running the model on a sequence.

use crate::model::Gpt;
use autograd::{ForwardPass, Graph, Params};
use tensor::Tensor;

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
