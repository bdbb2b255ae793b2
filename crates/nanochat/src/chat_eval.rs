//! nanochat's `scripts/chat_eval.py`, for the tasks this build generates: each held-out problem
//! rendered for completion, answered by the engine (greedy, with the calculator), and scored by
//! the integer the answer ends with (`#### n` in GSM8K's form), or for SimpleSpelling by the
//! answer's text.

use crate::engine::{generate_batch, Sampling};
use crate::gpt::Gpt;
use crate::tasks::Task;
use crate::tokenizer::{Content, Conversation, Tokenizer};

/// The last integer in `text` (an optional minus sign, digits, commas dropped), as GSM8K's
/// `#### n` gives it; `None` without one.
pub fn final_integer(text: &str) -> Option<i64> {
    let chars: Vec<char> = text.chars().collect();
    let end = chars.iter().rposition(|c| c.is_ascii_digit())? + 1;
    let mut start = end;
    while start > 0 && (chars[start - 1].is_ascii_digit() || chars[start - 1] == ',') {
        start -= 1;
    }
    let digits: String = chars[start..end].iter().filter(|&&c| c != ',').collect();
    let negative = start > 0 && chars[start - 1] == '-';
    let value: i64 = digits.parse().ok()?;
    Some(if negative { -value } else { value })
}

/// Whether `completion` answers `conversation` as its last assistant message does: the same
/// final integer where that message ends with one (GSM8K's `#### n`), else the same text
/// (SimpleSpelling's `word:w,o,r,d`).
fn is_correct(conversation: &Conversation, completion: &str) -> bool {
    let Some(last) = conversation.messages.last() else {
        return false;
    };
    let reference = match &last.content {
        Content::Text(text) => text.clone(),
        Content::Parts(parts) => parts.iter().map(|p| p.text.as_str()).collect(),
    };
    match final_integer(&reference) {
        Some(n) => final_integer(completion) == Some(n),
        None => completion.trim() == reference.trim(),
    }
}

/// One problem's outcome.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The question.
    pub question: String,
    /// The answer as generated, tool calls and their outputs included.
    pub completion: String,
    /// Whether its final integer (or, for spelling, its text) is the reference's.
    pub correct: bool,
    /// Whether it called the calculator.
    pub called_tool: bool,
}

// ANCHOR: run_generative_eval
/// `run_generative_eval` with one greedy sample per problem: the first `max_problems` of `task`,
/// each answered in at most `max_tokens` tokens; an answer counts when the integer before
/// `<|assistant_end|>` is the reference's (or, where the reference has none, its text).
pub fn run_generative_eval(
    model: &Gpt,
    tokenizer: &Tokenizer,
    task: &dyn Task,
    max_problems: usize,
    max_tokens: usize,
) -> Result<Vec<Outcome>, String> {
    let python_start = tokenizer.encode_special("<|python_start|>")?;
    let sampling = Sampling {
        num_samples: 1,
        max_tokens,
        temperature: 0.0,
        top_k: None,
        seed: 42,
        kv_cache: true,
    };
    let mut outcomes = Vec::new();
    for i in 0..max_problems.min(task.len()) {
        let conversation = task.example(i);
        let prompt = tokenizer.render_for_completion(&conversation)?;
        let row = generate_batch(model, tokenizer, &prompt, sampling)?.remove(0);
        let answer = &row[prompt.len()..];
        let completion = tokenizer.decode(answer)?;
        let question = match &conversation.messages[0].content {
            Content::Text(text) => text.clone(),
            Content::Parts(_) => String::new(),
        };
        outcomes.push(Outcome {
            question,
            correct: is_correct(&conversation, &completion),
            called_tool: answer.contains(&python_start),
            completion,
        });
    }
    Ok(outcomes)
}
// ANCHOR_END: run_generative_eval

/// The fraction of `outcomes` that are correct.
pub fn accuracy(outcomes: &[Outcome]) -> f64 {
    if outcomes.is_empty() {
        return 0.0;
    }
    outcomes.iter().filter(|o| o.correct).count() as f64 / outcomes.len() as f64
}

/// chat_eval.py's flags, for this build's tasks.
#[derive(clap::Args, Clone, Debug)]
pub struct ChatEvalArgs {
    /// The checkpoint.
    #[command(flatten)]
    pub model: crate::chat_cli::ModelChoice,
    /// Tasks, separated by |: arithmetic, spelling-bee, simple-spelling.
    #[arg(
        short = 'a',
        long,
        default_value = "arithmetic|spelling-bee|simple-spelling"
    )]
    pub task_name: String,
    /// Held-out problems per task (from the test seeds).
    #[arg(short = 'x', long, default_value_t = 100)]
    pub max_problems: usize,
    /// Most tokens an answer takes.
    #[arg(short = 'm', long, default_value_t = 512)]
    pub max_new_tokens: usize,
    /// The spelling task's word list (default: names.txt).
    #[arg(long)]
    pub words: Option<std::path::PathBuf>,
}

/// Runs each task of `args` on the model under `base`, printing each accuracy.
pub fn chat_eval(
    args: &ChatEvalArgs,
    base: &std::path::Path,
    print0: &mut dyn FnMut(String),
) -> Result<(), String> {
    use crate::tasks::{read_words, Arithmetic, SimpleSpelling, SpellingBee, Split};
    let model = args.model.load(base)?;
    let tokenizer = Tokenizer::from_directory(&base.join("tokenizer"))?;
    for name in args.task_name.split('|') {
        let task: Box<dyn Task> = match name {
            "arithmetic" => Box::new(Arithmetic::new(args.max_problems, Split::Test)),
            "spelling-bee" | "simple-spelling" => {
                let path = match &args.words {
                    Some(p) => p.clone(),
                    None => data::path("names.txt").map_err(|e| e.to_string())?,
                };
                let words = read_words(&path)?;
                if name == "spelling-bee" {
                    Box::new(SpellingBee::new(words, args.max_problems, Split::Test))
                } else {
                    Box::new(SimpleSpelling::new(words, args.max_problems, Split::Test))
                }
            }
            other => {
                return Err(format!(
                    "-a {other}: the tasks are arithmetic, spelling-bee and simple-spelling"
                ))
            }
        };
        let outcomes = run_generative_eval(
            &model,
            &tokenizer,
            task.as_ref(),
            args.max_problems,
            args.max_new_tokens,
        )?;
        let correct = outcomes.iter().filter(|o| o.correct).count();
        print0(format!(
            "{name} accuracy: {correct}/{} ({:.2}%)",
            outcomes.len(),
            100.0 * accuracy(&outcomes)
        ));
    }
    Ok(())
}
