//! nanochat's `nanochat/core_eval.py` and base_eval.py's `evaluate_core`: the CORE metric of
//! the DCLM paper (Li et al. 2024, arXiv:2406.11794), a base model's in-context accuracy on the
//! tasks of nanochat's eval bundle, each centered on its random baseline, then averaged.
//!
//! The bundle is a folder as nanochat unzips `eval_bundle.zip` into its base directory:
//! `core.yaml` (the tasks: label, `icl_task_type`, `dataset_uri`, `num_fewshot`,
//! `continuation_delimiter`), `eval_meta_data.csv` (each task's random baseline, in percent) and
//! `eval_data/` (one JSON line per example). Three kinds of task:
//! - multiple choice: one query, several answers; the answer with the lowest mean loss wins;
//! - schema: several contexts, one continuation; the context under which the continuation has
//!   the lowest mean loss wins;
//! - language modeling: the continuation must be the model's greedy prediction, token by token.
//!
//! Target (`tests/core_eval.rs`, fixtures by nanochat's own `core_eval.py` at 92d63d4): on a
//! small bundle of all three kinds, few-shot and zero-shot, every example's tokens and answer
//! span equal, every choice's mean loss within 1e-5, every verdict, accuracy and the CORE metric
//! equal.

use crate::gpt::Gpt;
use crate::tokenizer::Tokenizer;
use pyrandom::PyRandom;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where nanochat's `evaluate_core` downloads the bundle from.
pub const EVAL_BUNDLE_URL: &str =
    "https://karpathy-public.s3.us-west-2.amazonaws.com/eval_bundle.zip";

/// `icl_task_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskType {
    /// `multiple_choice`: one query, several choices, `gold` the right one.
    MultipleChoice,
    /// `schema`: several contexts, one continuation, `gold` the right context.
    Schema,
    /// `language_modeling`: a context and the continuation to predict.
    LanguageModeling,
}

impl TaskType {
    fn parse(name: &str) -> Option<TaskType> {
        match name {
            "multiple_choice" => Some(TaskType::MultipleChoice),
            "schema" => Some(TaskType::Schema),
            "language_modeling" => Some(TaskType::LanguageModeling),
            _ => None,
        }
    }

    /// The name core.yaml gives it.
    pub fn name(self) -> &'static str {
        match self {
            TaskType::MultipleChoice => "multiple_choice",
            TaskType::Schema => "schema",
            TaskType::LanguageModeling => "language_modeling",
        }
    }
}

/// `task_meta`: how one task's examples are rendered.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskMeta {
    /// The kind of task.
    pub task_type: TaskType,
    /// Examples shown before each question (`num_fewshot[0]`).
    pub num_fewshot: usize,
    /// Between a context and its continuation (default one space).
    pub continuation_delimiter: String,
}

/// One task of `core.yaml`.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// Its label, as eval_meta_data.csv names it.
    pub label: String,
    /// The file under `eval_data/`.
    pub dataset_uri: String,
    /// How it is rendered.
    pub meta: TaskMeta,
}

/// An unzipped eval bundle.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The folder.
    pub dir: PathBuf,
    /// `core.yaml`'s `icl_tasks`, in order.
    pub tasks: Vec<Task>,
    /// Each task's random baseline, in percent.
    pub random_baselines: HashMap<String, f64>,
}

impl Bundle {
    /// Reads `core.yaml` and `eval_meta_data.csv` of the bundle in `dir`; a bundle that is not
    /// there says where to get it.
    pub fn open(dir: &Path) -> Result<Bundle, String> {
        let config_path = dir.join("core.yaml");
        if !dir.is_dir() {
            return Err(format!(
                "the CORE metric needs nanochat's eval bundle, which is not at {}: download \
                 {EVAL_BUNDLE_URL} and unzip it there (it holds core.yaml, eval_meta_data.csv and \
                 eval_data/), or leave core out (--eval bpb,sample)",
                dir.display()
            ));
        }
        let text = std::fs::read_to_string(&config_path)
            .map_err(|e| format!("{}: {e}", config_path.display()))?;
        let config: serde_yaml::Value = serde_yaml::from_str(&text)
            .map_err(|e| format!("{}: not YAML: {e}", config_path.display()))?;
        let bad = |what: String| format!("{}: {what}", config_path.display());
        let list = config
            .get("icl_tasks")
            .and_then(|t| t.as_sequence())
            .ok_or_else(|| bad("no list icl_tasks".into()))?;
        let mut tasks = Vec::new();
        for (i, task) in list.iter().enumerate() {
            let field = |name: &str| {
                task.get(name)
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| bad(format!("task {i}: no text field {name}")))
            };
            let label = field("label")?.to_string();
            let type_name = field("icl_task_type")?;
            let task_type = TaskType::parse(type_name).ok_or_else(|| {
                bad(format!(
                    "task {label}: unsupported icl_task_type {type_name:?} \
                     (multiple_choice, schema, language_modeling)"
                ))
            })?;
            let num_fewshot = task
                .get("num_fewshot")
                .and_then(|n| n.as_sequence())
                .and_then(|n| n.first())
                .and_then(|n| n.as_u64())
                .ok_or_else(|| bad(format!("task {label}: num_fewshot is not a list of counts")))?;
            let continuation_delimiter = match task.get("continuation_delimiter") {
                None => " ".to_string(),
                Some(d) => d
                    .as_str()
                    .ok_or_else(|| {
                        bad(format!("task {label}: continuation_delimiter is not text"))
                    })?
                    .to_string(),
            };
            tasks.push(Task {
                dataset_uri: field("dataset_uri")?.to_string(),
                label,
                meta: TaskMeta {
                    task_type,
                    num_fewshot: num_fewshot as usize,
                    continuation_delimiter,
                },
            });
        }
        let meta_path = dir.join("eval_meta_data.csv");
        let mut reader = csv::Reader::from_path(&meta_path)
            .map_err(|e| format!("{}: {e}", meta_path.display()))?;
        let headers = reader
            .headers()
            .map_err(|e| format!("{}: {e}", meta_path.display()))?
            .clone();
        let column = |name: &str| {
            headers
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| format!("{}: no column {name:?}", meta_path.display()))
        };
        let (task_column, baseline_column) = (column("Eval Task")?, column("Random baseline")?);
        let mut random_baselines = HashMap::new();
        for (line, row) in reader.records().enumerate() {
            let row = row.map_err(|e| format!("{}: {e}", meta_path.display()))?;
            let (task, baseline) = (
                row.get(task_column).unwrap_or(""),
                row.get(baseline_column).unwrap_or(""),
            );
            let baseline: f64 = baseline.trim().parse().map_err(|_| {
                format!(
                    "{}: line {}: random baseline {baseline:?} is not a number",
                    meta_path.display(),
                    line + 2
                )
            })?;
            random_baselines.insert(task.to_string(), baseline);
        }
        if let Some(task) = tasks
            .iter()
            .find(|t| !random_baselines.contains_key(&t.label))
        {
            return Err(format!(
                "{}: no random baseline for task {}",
                meta_path.display(),
                task.label
            ));
        }
        Ok(Bundle {
            dir: dir.to_path_buf(),
            tasks,
            random_baselines,
        })
    }

    /// A task's examples, one JSON object a line, as `json.loads(line.strip())` reads them.
    pub fn examples(&self, task: &Task) -> Result<Vec<Value>, String> {
        let path = self.dir.join("eval_data").join(&task.dataset_uri);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        text.lines()
            .enumerate()
            .map(|(i, line)| {
                let example: Value = serde_json::from_str(line.trim())
                    .map_err(|e| format!("{}: line {}: not JSON: {e}", path.display(), i + 1))?;
                check_example(&example, task.meta.task_type)
                    .map_err(|what| format!("{}: line {}: {what}", path.display(), i + 1))?;
                Ok(example)
            })
            .collect()
    }
}

/// The fields each kind of task reads, checked once so that rendering cannot fail.
fn check_example(example: &Value, task_type: TaskType) -> Result<(), String> {
    let text = |name: &str| match example.get(name) {
        Some(Value::String(_)) => Ok(()),
        _ => Err(format!("{name} is not a string")),
    };
    let texts = |name: &str| match example.get(name).and_then(|v| v.as_array()) {
        Some(list) if !list.is_empty() && list.iter().all(|v| v.is_string()) => Ok(list.len()),
        _ => Err(format!("{name} is not a list of strings")),
    };
    let gold = |n: usize| match example.get("gold").and_then(|g| g.as_u64()) {
        Some(g) if (g as usize) < n => Ok(()),
        _ => Err(format!("gold is not an index below {n}")),
    };
    match task_type {
        TaskType::MultipleChoice => {
            text("query")?;
            gold(texts("choices")?)
        }
        TaskType::Schema => {
            text("continuation")?;
            gold(texts("context_options")?)
        }
        TaskType::LanguageModeling => {
            text("context")?;
            text("continuation")
        }
    }
}

fn field<'a>(example: &'a Value, name: &str) -> &'a str {
    example[name].as_str().unwrap_or_default()
}

fn option<'a>(example: &'a Value, list: &str, i: usize) -> &'a str {
    example[list][i].as_str().unwrap_or_default()
}

fn gold(example: &Value) -> usize {
    example["gold"].as_u64().unwrap_or_default() as usize
}

/// Python's `str.strip()`: Rust's white space and the four separators U+001C..U+001F, which
/// Python's `str.isspace` also counts.
fn python_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

// ANCHOR: render_prompts
/// `render_prompts_mc`: the few-shot examples with their right answers, a blank line after
/// each, then the query with each choice.
pub fn render_prompts_mc(item: &Value, delimiter: &str, fewshot: &[&Value]) -> Vec<String> {
    let shots: String = fewshot
        .iter()
        .map(|ex| {
            let answer = option(ex, "choices", gold(ex));
            format!("{}{delimiter}{answer}\n\n", field(ex, "query"))
        })
        .collect();
    let choices = item["choices"].as_array().map_or(0, |c| c.len());
    (0..choices)
        .map(|i| {
            let choice = option(item, "choices", i);
            format!("{shots}{}{delimiter}{choice}", field(item, "query"))
        })
        .collect()
}

/// `render_prompts_schema`: the few-shot examples with their right contexts, then each
/// context with the continuation.
pub fn render_prompts_schema(item: &Value, delimiter: &str, fewshot: &[&Value]) -> Vec<String> {
    let shots: String = fewshot
        .iter()
        .map(|ex| {
            let context = option(ex, "context_options", gold(ex));
            format!("{context}{delimiter}{}\n\n", field(ex, "continuation"))
        })
        .collect();
    let contexts = item["context_options"].as_array().map_or(0, |c| c.len());
    (0..contexts)
        .map(|i| {
            let context = option(item, "context_options", i);
            format!("{shots}{context}{delimiter}{}", field(item, "continuation"))
        })
        .collect()
}

/// `render_prompts_lm`: the prompt without the continuation (stripped, so that its last
/// token is a clean prefix) and with it; contexts are trimmed (`| trim`).
pub fn render_prompts_lm(item: &Value, delimiter: &str, fewshot: &[&Value]) -> [String; 2] {
    let shots: String = fewshot
        .iter()
        .map(|ex| {
            let context = python_strip(field(ex, "context"));
            format!("{context}{delimiter}{}\n\n", field(ex, "continuation"))
        })
        .collect();
    let context = python_strip(field(item, "context"));
    let without = format!("{shots}{context}{delimiter}");
    let with = format!("{without}{}", field(item, "continuation"));
    [python_strip(&without).to_string(), with]
}
// ANCHOR_END: render_prompts

/// `find_common_length`: how many tokens every sequence shares at its start (`left`) or its
/// end (`right`).
pub fn find_common_length(sequences: &[Vec<u32>], from_the_right: bool) -> usize {
    let min_len = sequences.iter().map(Vec::len).min().unwrap_or(0);
    let at = |seq: &Vec<u32>, i: usize| {
        if from_the_right {
            seq[seq.len() - 1 - i]
        } else {
            seq[i]
        }
    };
    (0..min_len)
        .find(|&i| sequences.iter().any(|s| at(s, i) != at(&sequences[0], i)))
        .unwrap_or(min_len)
}

/// The rows one example puts through the model, and in each the span `start..end` whose
/// tokens are scored.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// One row of token ids per prompt, BOS first.
    pub tokens: Vec<Vec<u32>>,
    /// Where each row's scored span starts.
    pub start: Vec<usize>,
    /// Where it ends.
    pub end: Vec<usize>,
}

// ANCHOR: batch_sequences
/// `batch_sequences_mc`, `_schema` and `_lm`: the prompts encoded with BOS before each, and the
/// span to score: after the shared start (multiple choice), the shared end (schema), or what the
/// continuation adds (language modeling, one row).
pub fn batch_sequences(
    task_type: TaskType,
    tokenizer: &Tokenizer,
    prompts: &[String],
) -> Result<Batch, String> {
    let bos = tokenizer.bos_token_id();
    let tokens: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| std::iter::once(bos).chain(tokenizer.encode(p)).collect())
        .collect();
    let ends: Vec<usize> = tokens.iter().map(Vec::len).collect();
    match task_type {
        TaskType::MultipleChoice => {
            let answer_start = find_common_length(&tokens, false);
            Ok(Batch {
                start: vec![answer_start; tokens.len()],
                end: ends,
                tokens,
            })
        }
        TaskType::Schema => {
            let suffix = find_common_length(&tokens, true);
            Ok(Batch {
                start: ends.iter().map(|e| e - suffix).collect(),
                end: ends,
                tokens,
            })
        }
        TaskType::LanguageModeling => {
            let (without, with) = (&tokens[0], &tokens[1]);
            if without.len() >= with.len() || with[..without.len()] != without[..] {
                return Err(
                    "the prompt without the continuation does not tokenize to a prefix \
                            of the prompt with it"
                        .into(),
                );
            }
            Ok(Batch {
                start: vec![without.len()],
                end: vec![with.len()],
                tokens: vec![with.clone()],
            })
        }
    }
}
// ANCHOR_END: batch_sequences

/// What one example gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The rows and spans put through the model.
    pub batch: Batch,
    /// Multiple choice and schema: each row's mean loss over its span.
    pub mean_losses: Vec<f64>,
    /// Whether the model got it right.
    pub correct: bool,
}

/// `forward_model`: each position's loss of predicting the next token (the last position has
/// none) and the argmax prediction, for rows padded on the right with `pad`.
pub fn forward_model(model: &Gpt, tokens: &[Vec<u32>], pad: u32) -> (Vec<Vec<f32>>, Vec<Vec<u32>>) {
    let (b, t) = (tokens.len(), tokens.iter().map(Vec::len).max().unwrap_or(0));
    let mut ids = vec![pad; b * t]; // (B, T)
    for (row, seq) in ids.chunks_mut(t).zip(tokens) {
        row[..seq.len()].copy_from_slice(seq);
    }
    let graph = autograd::Graph::no_grad();
    let pass = autograd::ForwardPass::eval(&graph, &model.params);
    let v = model.config.vocab_size;
    let logits = model
        .forward(&pass, &ids, b, None)
        .value()
        .reshape(&[b * t, v]); // (B·T, V)
    let predictions = logits.argmax(1); // (B·T,)
    let logp = logits.log_softmax(-1).to_vec(); // (B·T, V)
    let losses = (0..b)
        .map(|r| {
            (0..t - 1)
                .map(|i| -logp[(r * t + i) * v + ids[r * t + i + 1] as usize])
                .chain(std::iter::once(f32::NAN))
                .collect()
        })
        .collect();
    let predictions = predictions
        .chunks(t)
        .map(|row| row.iter().map(|&p| p as u32).collect())
        .collect();
    (losses, predictions)
}

// ANCHOR: evaluate_example
/// `evaluate_example`: renders example `idx` with its few-shot examples (drawn by
/// `random.Random(1234 + idx)` from the others), runs the model, and judges it.
pub fn evaluate_example(
    idx: usize,
    model: &Gpt,
    tokenizer: &Tokenizer,
    data: &[Value],
    meta: &TaskMeta,
) -> Result<Verdict, String> {
    let item = &data[idx];
    let others: Vec<usize> = (0..data.len()).filter(|&i| i != idx).collect();
    let fewshot: Vec<&Value> = if meta.num_fewshot > 0 {
        PyRandom::seed(1234 + idx as u64)
            .sample(&others, meta.num_fewshot)
            .ok_or_else(|| {
                format!(
                    "{} few-shot examples asked, {} others in the task",
                    meta.num_fewshot,
                    others.len()
                )
            })?
            .into_iter()
            .map(|i| &data[i])
            .collect()
    } else {
        Vec::new()
    };
    let delimiter = &meta.continuation_delimiter;
    let prompts = match meta.task_type {
        TaskType::MultipleChoice => render_prompts_mc(item, delimiter, &fewshot),
        TaskType::Schema => render_prompts_schema(item, delimiter, &fewshot),
        TaskType::LanguageModeling => render_prompts_lm(item, delimiter, &fewshot).to_vec(),
    };
    let batch = batch_sequences(meta.task_type, tokenizer, &prompts)?;
    // nanochat's GPT has no max_seq_len, so nothing is cropped; its rotary table is ten
    // sequence lengths long, and a longer row fails there.
    let longest = batch.tokens.iter().map(Vec::len).max().unwrap_or(0);
    if longest > 10 * model.config.sequence_len || longest < 2 {
        return Err(format!(
            "a prompt of {longest} tokens (the model reads 2 to {})",
            10 * model.config.sequence_len
        ));
    }
    let (losses, predictions) = forward_model(model, &batch.tokens, tokenizer.bos_token_id());
    let (mean_losses, correct) = match meta.task_type {
        TaskType::LanguageModeling => {
            let (s, e) = (batch.start[0], batch.end[0]);
            // predictions[i] predicts tokens[i + 1]
            let correct = predictions[0][s - 1..e - 1] == batch.tokens[0][s..e];
            (Vec::new(), correct)
        }
        TaskType::MultipleChoice | TaskType::Schema => {
            let means: Vec<f64> = (0..batch.tokens.len())
                .map(|i| {
                    let span = &losses[i][batch.start[i] - 1..batch.end[i] - 1];
                    span.iter().map(|&l| l as f64).sum::<f64>() / span.len() as f64
                })
                .collect();
            // the first of the lowest, as list.index(min(...)) finds it
            let lowest = means.iter().cloned().fold(f64::INFINITY, f64::min);
            let pick = means.iter().position(|&m| m == lowest);
            (means, pick == Some(gold(item)))
        }
    };
    Ok(Verdict {
        batch,
        mean_losses,
        correct,
    })
}
// ANCHOR_END: evaluate_example

/// One task's result.
#[derive(Clone, Debug)]
pub struct TaskResult {
    /// Its label.
    pub label: String,
    /// The fraction of its examples answered right.
    pub accuracy: f64,
    /// `(accuracy − baseline) / (1 − baseline)`, the baseline as a fraction.
    pub centered: f64,
    /// Each example's verdict, in the shuffled order evaluated.
    pub verdicts: Vec<Verdict>,
}

/// `evaluate_core`'s result: each task's and their mean, the CORE metric.
#[derive(Clone, Debug)]
pub struct CoreResults {
    /// The tasks in core.yaml's order.
    pub tasks: Vec<TaskResult>,
    /// The mean of the centered results.
    pub core_metric: f64,
}

/// `evaluate_core`: every task of the bundle, its examples shuffled by `random.Random(1337)`
/// and cut to `max_per_task` (when positive), printing base_eval.py's line for each.
pub fn evaluate_core(
    model: &Gpt,
    tokenizer: &Tokenizer,
    bundle: &Bundle,
    max_per_task: i64,
    print0: &mut dyn FnMut(String),
) -> Result<CoreResults, String> {
    let mut tasks = Vec::new();
    for task in &bundle.tasks {
        let start = std::time::Instant::now();
        let mut data = bundle.examples(task)?;
        PyRandom::seed(1337).shuffle(&mut data);
        if max_per_task > 0 {
            data.truncate(max_per_task as usize);
        }
        if data.is_empty() {
            return Err(format!("task {}: no examples", task.label));
        }
        let verdicts = (0..data.len())
            .map(|idx| {
                evaluate_example(idx, model, tokenizer, &data, &task.meta)
                    .map_err(|e| format!("task {}, example {idx}: {e}", task.label))
            })
            .collect::<Result<Vec<Verdict>, String>>()?;
        let right = verdicts.iter().filter(|v| v.correct).count();
        // torch's mean of a float32 tensor of 0s and 1s, then .item()
        let accuracy = (right as f32 / verdicts.len() as f32) as f64;
        let baseline = 0.01 * bundle.random_baselines[&task.label];
        let centered = (accuracy - baseline) / (1.0 - baseline);
        print0(format!(
            "Evaluating: {} ({}-shot, type: {})... accuracy: {accuracy:.4} | centered: {centered:.4} | time: {:.2}s",
            task.label,
            task.meta.num_fewshot,
            task.meta.task_type.name(),
            start.elapsed().as_secs_f64()
        ));
        tasks.push(TaskResult {
            label: task.label.clone(),
            accuracy,
            centered,
            verdicts,
        });
    }
    let core_metric = tasks.iter().map(|t| t.centered).sum::<f64>() / tasks.len().max(1) as f64;
    Ok(CoreResults { tasks, core_metric })
}

/// base_eval.py's CSV of the results: each task's accuracy and centered result, then CORE.
pub fn results_csv(results: &CoreResults) -> String {
    let mut out = format!("{:<35}, {:<10}, {:<10}\n", "Task", "Accuracy", "Centered");
    for task in &results.tasks {
        out += &format!(
            "{:<35}, {:<10.6}, {:<10.6}\n",
            task.label, task.accuracy, task.centered
        );
    }
    out += &format!(
        "{:<35}, {:<10}, {:<10.6}\n",
        "CORE", "", results.core_metric
    );
    out
}
