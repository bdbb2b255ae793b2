//! makemore.py's `generate` and `print_samples`.

use crate::data::{CharDataset, Vocab};
use crate::model::{Model, ModelConfig};
use autograd::{ForwardPass, Graph, Params};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// What `generate` needs of the model.
pub struct Sampler<'a> {
    /// The model.
    pub model: &'a Model,
    /// Its parameters.
    pub params: &'a Params,
    /// Its configuration.
    pub config: &'a ModelConfig,
}

impl Sampler<'_> {
    // ANCHOR: generate
    /// `generate(model, idx, max_new_tokens, do_sample=True, top_k)`: extends
    /// each row of `idx` (`rows` rows of length `t`) one token at a time, each
    /// drawn by `torch.multinomial` from the softmax of the last position's
    /// logits, cropped to the `top_k` largest when given. Returns the rows.
    pub fn generate(
        &self,
        mut idx: Vec<Vec<usize>>,
        max_new_tokens: usize,
        top_k: Option<usize>,
        rng: &mut TorchGenerator,
    ) -> Vec<Vec<usize>> {
        let block_size = self.model.block_size(self.config);
        let rows = idx.len();
        for _ in 0..max_new_tokens {
            // if the context is growing too long, crop it at block_size
            let t = idx[0].len().min(block_size);
            let cond: Vec<usize> = idx.iter().flat_map(|r| r[r.len() - t..].to_vec()).collect();
            let graph = Graph::no_grad();
            let pass = ForwardPass::eval(&graph, self.params);
            let logits = self.model.forward(&pass, &cond, rows, t).value(); // (rows, t, V)
            let v = logits.shape()[2];
            let mut last = logits.narrow(1, t - 1, 1).reshape(&[rows, v]).to_vec(); // (rows, V)
            if let Some(k) = top_k {
                gpt::generate::crop_to_top_k(&mut last, v, k);
            }
            let probs = Tensor::from_vec(last, &[rows, v]).softmax(-1); // (rows, V)
            let next = rng.multinomial(&probs, 1, false); // (rows, 1)
            for (row, &n) in idx.iter_mut().zip(&next) {
                row.push(n as usize);
            }
        }
        idx
    }
    // ANCHOR_END: generate
}

/// The samples of one `print_samples` call, grouped as it prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samples {
    /// Samples that are words of the training set.
    pub in_train: Vec<String>,
    /// Samples that are words of the test set.
    pub in_test: Vec<String>,
    /// Samples that are neither.
    pub new: Vec<String>,
}

impl Samples {
    /// The block `print_samples` prints, dashes included.
    pub fn print_block(&self) -> String {
        let dashes = "-".repeat(80);
        let mut out = format!("{dashes}\n");
        for (list, desc) in [
            (&self.in_train, "in train"),
            (&self.in_test, "in test"),
            (&self.new, "new"),
        ] {
            out += &format!("{} samples that are {desc}:\n", list.len());
            for word in list {
                out += word;
                out.push('\n');
            }
        }
        out + &dashes
    }
}

// ANCHOR: print_samples
/// `print_samples(num)`: `num` words sampled from a start token each, cut at
/// the first stop token, and sorted into seen in train, in test, and new.
pub fn samples(
    sampler: &Sampler<'_>,
    num: usize,
    top_k: Option<usize>,
    vocab: &Vocab,
    train: &CharDataset,
    test: &CharDataset,
    rng: &mut TorchGenerator,
) -> Samples {
    let steps = train.output_length() - 1; // the <START> token is already there
    let rows = sampler.generate(vec![vec![0]; num], steps, top_k, rng);
    let mut out = Samples::default();
    for row in rows {
        let row = &row[1..]; // crop the <START> token
        let end = row.iter().position(|&i| i == 0).unwrap_or(row.len()); // <STOP>
        let word = vocab.decode(&row[..end]);
        if train.contains(&word) {
            out.in_train.push(word);
        } else if test.contains(&word) {
            out.in_test.push(word);
        } else {
            out.new.push(word);
        }
    }
    out
}
// ANCHOR_END: print_samples
