//! HellaSwag as build-nanogpt evaluates it (`hellaswag.py`): completion
//! style, zero-shot. Each example's context is followed by each of its four
//! endings (as `" " + ending`, because GPT-2's tokenizer keeps the space with
//! the word); the model scores each ending by the cross-entropy of its tokens
//! only. `acc` picks the ending with the lowest summed loss, `acc_norm` the
//! one with the lowest mean loss. OpenAI's 124M model scores acc 0.2859,
//! acc_norm 0.2955 on the 10,042 validation examples (hellaswag.py's
//! docstring).
//!
//! The file is the official `hellaswag_val.jsonl` (rowanz/hellaswag), one
//! JSON object per line with `ctx`, `endings` (four) and `label`.

use crate::model::Gpt;
use autograd::{ForwardPass, Graph, Params};
use bpe::{AllowedSpecial, RegexTokenizer};
use std::path::Path;

/// One example: a context, four endings and the index of the right one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    /// The context.
    pub ctx: String,
    /// The four candidate endings.
    pub endings: [String; 4],
    /// The index of the right ending.
    pub label: usize,
}

/// Reads a HellaSwag `.jsonl` file; a bad line is an error naming the file and the line.
pub fn read_examples(path: &Path) -> Result<Vec<Example>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut examples = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let err = |what: &str| format!("{}:{}: {what}", path.display(), i + 1);
        let json: serde_json::Value =
            serde_json::from_str(line).map_err(|e| err(&format!("not JSON: {e}")))?;
        let ctx = json["ctx"]
            .as_str()
            .ok_or_else(|| err("no string ctx"))?
            .to_string();
        let endings: Vec<String> = json["endings"]
            .as_array()
            .ok_or_else(|| err("no endings"))?
            .iter()
            .map(|e| {
                e.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| err("an ending is not a string"))
            })
            .collect::<Result<_, _>>()?;
        let endings: [String; 4] = endings
            .try_into()
            .map_err(|e: Vec<String>| err(&format!("{} endings, not 4", e.len())))?;
        // The official file stores the label as a number; some copies as a string.
        let label = match &json["label"] {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        }
        .filter(|&l| l < 4)
        .ok_or_else(|| err("label is not 0, 1, 2 or 3"))? as usize;
        examples.push(Example {
            ctx,
            endings,
            label,
        });
    }
    if examples.is_empty() {
        return Err(format!("{}: holds no examples", path.display()));
    }
    Ok(examples)
}

/// An example as four rows of tokens: the context, then one ending each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// The four rows, unpadded.
    pub rows: Vec<Vec<usize>>,
    /// Tokens of the context, where each row's ending starts.
    pub ctx_len: usize,
}

// ANCHOR: render
/// `render_example`: the context's tokens followed by each `" " + ending`'s.
pub fn render(example: &Example, tok: &RegexTokenizer) -> Result<Rendered, String> {
    let encode = |text: &str| -> Result<Vec<usize>, String> {
        let ids = tok
            .encode(text, &AllowedSpecial::NoneRaise)
            .map_err(|e| e.to_string())?;
        Ok(ids.into_iter().map(|i| i as usize).collect())
    };
    let ctx = encode(&example.ctx)?;
    if ctx.is_empty() {
        return Err("an example with an empty context: nothing to score its endings after".into());
    }
    let mut rows = Vec::new();
    for ending in &example.endings {
        let mut row = ctx.clone();
        row.extend(encode(&format!(" {ending}"))?); // GPT-2's tokens carry the space before a word
        rows.push(row);
    }
    Ok(Rendered {
        rows,
        ctx_len: ctx.len(),
    })
}
// ANCHOR_END: render

/// The model's losses on the four endings of an example.
#[derive(Clone, Debug, PartialEq)]
pub struct Scores {
    /// The summed cross-entropy of each ending's tokens.
    pub sum_loss: [f32; 4],
    /// The same divided by the ending's length.
    pub avg_loss: [f32; 4],
}

impl Scores {
    /// `acc`'s pick: the lowest summed loss (the first on a tie, as `argmin`).
    pub fn pred(&self) -> usize {
        argmin(&self.sum_loss)
    }

    /// `acc_norm`'s pick: the lowest mean loss.
    pub fn pred_norm(&self) -> usize {
        argmin(&self.avg_loss)
    }
}

fn argmin(xs: &[f32; 4]) -> usize {
    (1..4).fold(0, |best, i| if xs[i] < xs[best] { i } else { best })
}

// ANCHOR: score
/// Runs the four rows as one batch, padded with token 0 to the longest (the
/// padding is never scored), and scores each ending: the loss of predicting
/// each of its tokens from everything before it.
pub fn score(model: &Gpt, params: &Params, rendered: &Rendered) -> Scores {
    let v = model.config.vocab_size;
    let t = rendered.rows.iter().map(Vec::len).max().expect("four rows");
    let mut idx = vec![0usize; 4 * t]; // (4, T)
    for (r, row) in rendered.rows.iter().enumerate() {
        idx[r * t..r * t + row.len()].copy_from_slice(row);
    }
    let graph = Graph::no_grad();
    let logits = model
        .forward(&ForwardPass::eval(&graph, params), &idx, 4, t)
        .value()
        .to_vec(); // (4, T, V)
    let mut scores = Scores {
        sum_loss: [0.0; 4],
        avg_loss: [0.0; 4],
    };
    for (r, row) in rendered.rows.iter().enumerate() {
        let mut sum = 0f32;
        // Position p predicts token p + 1; the ending's tokens are ctx_len .. row.len().
        for p in rendered.ctx_len - 1..row.len() - 1 {
            let l = &logits[(r * t + p) * v..(r * t + p + 1) * v];
            let max = l.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
            let log_sum_exp = max + l.iter().map(|&x| (x - max).exp()).sum::<f32>().ln();
            sum += log_sum_exp - l[row[p + 1]]; // cross-entropy of the next token
        }
        let n = (row.len() - rendered.ctx_len) as f32;
        scores.sum_loss[r] = sum;
        scores.avg_loss[r] = sum / n;
    }
    scores
}
// ANCHOR_END: score

/// Accuracy over a set of examples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Accuracy {
    /// Examples scored.
    pub total: usize,
    /// Right by the summed loss.
    pub correct: usize,
    /// Right by the mean loss.
    pub correct_norm: usize,
}

impl Accuracy {
    /// `acc`.
    pub fn acc(&self) -> f64 {
        self.correct as f64 / self.total.max(1) as f64
    }

    /// `acc_norm`.
    pub fn acc_norm(&self) -> f64 {
        self.correct_norm as f64 / self.total.max(1) as f64
    }
}

/// Scores `examples` in order, calling `progress` after each.
pub fn evaluate(
    model: &Gpt,
    params: &Params,
    tok: &RegexTokenizer,
    examples: &[Example],
    mut progress: impl FnMut(&Accuracy),
) -> Result<Accuracy, String> {
    let mut acc = Accuracy::default();
    for example in examples {
        let rendered = render(example, tok)?;
        let vocab = model.config.vocab_size;
        if let Some(bad) = rendered.rows.iter().flatten().find(|&&id| id >= vocab) {
            return Err(format!(
                "token {bad} is outside the model's vocabulary of {vocab}: is it a GPT-2 model?"
            ));
        }
        let longest = rendered.rows.iter().map(Vec::len).max().unwrap_or(0);
        if longest > model.config.block_size {
            return Err(format!(
                "an example of {longest} tokens does not fit the context of {}",
                model.config.block_size
            ));
        }
        let scores = score(model, params, &rendered);
        acc.total += 1;
        acc.correct += usize::from(scores.pred() == example.label);
        acc.correct_norm += usize::from(scores.pred_norm() == example.label);
        progress(&acc);
    }
    Ok(acc)
}

/// `gpt2 eval hellaswag`: score a model the way build-nanogpt's hellaswag.py does.
#[derive(clap::Args)]
pub struct EvalArgs {
    /// The benchmark (only `hellaswag`).
    #[arg(value_parser = ["hellaswag"])]
    benchmark: String,
    /// Folder with config.json and model.safetensors.
    #[arg(long)]
    model: std::path::PathBuf,
    /// The examples: rowanz/hellaswag's data/hellaswag_val.jsonl, or a file in its format.
    #[arg(long)]
    file: std::path::PathBuf,
    /// Score only the first N examples.
    #[arg(long)]
    limit: Option<usize>,
}

impl EvalArgs {
    /// Prints the running acc_norm every 100 examples, then acc and acc_norm.
    pub fn run(self) -> Result<(), String> {
        let mut examples = read_examples(&self.file)?;
        examples.truncate(self.limit.unwrap_or(usize::MAX));
        let tok = bpe::Gpt2Tokenizer::from_data_dir()
            .map_err(|e| e.to_string())?
            .into_inner();
        let (gpt, params) = crate::hf::from_pretrained(&self.model)?;
        let n = examples.len();
        let acc = evaluate(&gpt, &params, &tok, &examples, |a| {
            if a.total % 100 == 0 || a.total == n {
                eprintln!(
                    "{}/{n} acc_norm: {}/{}={:.4}",
                    a.total,
                    a.correct_norm,
                    a.total,
                    a.acc_norm()
                );
            }
        })?;
        println!(
            "{}: {} examples, acc {:.4}, acc_norm {:.4}",
            self.benchmark,
            acc.total,
            acc.acc(),
            acc.acc_norm()
        );
        Ok(())
    }
}
