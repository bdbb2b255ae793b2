//! nanochat's `scripts/chat_cli.py`: talk to a model in the terminal. Each answer streams token
//! by token from the [`crate::engine`] (its KV cache, its calculator), at `-t` temperature and
//! `-k` top-k; the conversation is kept across turns; `quit` or `exit` ends it, `clear` starts
//! a new one; `-p` asks one question and exits.
//!
//! One fix, nanochat's issue #581: there, a conversation that outgrows the model's context
//! fails. Here the oldest turns are dropped to make room, with a line that says so, and an
//! answer stops where the context ends (nanochat always allows 256 tokens, which a small
//! model's whole context may be).

use crate::base_eval::default_model_tag;
use crate::checkpoint::{last_step, load_model};
use crate::engine::{generate, Sampling};
use crate::gpt::Gpt;
use crate::tokenizer::Tokenizer;
use clap::Args;
use std::io::{BufRead, Write};
use std::path::Path;

/// Which checkpoint to load: the `-i -g -s` of chat_cli.py, chat_eval.py and chat_web.py.
#[derive(Args, Clone, Debug)]
pub struct ModelChoice {
    /// Which model: sft, rl (or base, which nanochat's loader also takes).
    #[arg(short = 'i', long, default_value = "sft")]
    pub source: String,
    /// The checkpoint folder (default: the deepest dN there).
    #[arg(short = 'g', long)]
    pub model_tag: Option<String>,
    /// The step to load (default: the last).
    #[arg(short = 's', long)]
    pub step: Option<usize>,
}

impl ModelChoice {
    /// The model this names, under `base`.
    pub fn load(&self, base: &Path) -> Result<Gpt, String> {
        load(base, &self.source, self.model_tag.as_deref(), self.step)
    }
}

/// chat_cli.py's flags.
#[derive(Args, Clone, Debug)]
pub struct ChatArgs {
    /// The checkpoint.
    #[command(flatten)]
    pub model: ModelChoice,
    /// Ask this one question, print the answer and exit.
    #[arg(short = 'p', long, default_value = "")]
    pub prompt: String,
    /// Temperature for generation, 0 (the most likely token) to 2.
    #[arg(short = 't', long, default_value_t = 0.6, value_parser = temperature, allow_negative_numbers = true)]
    pub temperature: f32,
    /// Top-k sampling parameter, up to 200 (0: off).
    #[arg(short = 'k', long, default_value_t = 50, value_parser = top_k, allow_negative_numbers = true)]
    pub top_k: usize,
    /// cuda|cpu|mps; this build runs on the CPU.
    #[arg(long, default_value = "")]
    pub device_type: String,
}

/// Most tokens an answer takes (chat_cli.py's `max_tokens`).
pub const MAX_ANSWER: usize = 256;

/// `load_model(source, …)`: the model of `source`'s checkpoint folder under `base`.
pub fn load(
    base: &Path,
    source: &str,
    tag: Option<&str>,
    step: Option<usize>,
) -> Result<Gpt, String> {
    let folder = match source {
        "base" => "base_checkpoints",
        "sft" => "chatsft_checkpoints",
        "rl" => "chatrl_checkpoints",
        other => return Err(format!("-i {other}: the sources are sft, rl and base")),
    };
    let checkpoints = base.join(folder);
    let tag = match tag {
        Some(t) => t.to_string(),
        None => default_model_tag(&checkpoints)?,
    };
    let dir = checkpoints.join(&tag);
    let step = match step {
        Some(s) => s,
        None => last_step(&dir)?,
    };
    Ok(load_model(&dir, step)?.0)
}

/// The room a conversation keeps for its answer: the answer's most tokens, or half the context
/// when that is less, so that old turns make way for the answer but never squeeze the
/// conversation to nothing.
pub fn answer_room(max_tokens: usize, context: usize) -> usize {
    max_tokens.min(context / 2).max(1)
}

/// `-t`/`--temperature`: a number from 0 (the most likely token) to chat_web.py's largest, 2,
/// checked at the flag: NaN, a negative or an infinite temperature has no distribution to draw
/// from.
pub fn temperature(text: &str) -> Result<f32, String> {
    use crate::serve::limits::MAX_TEMPERATURE;
    match text.parse::<f32>() {
        Ok(t) if (0.0..=MAX_TEMPERATURE).contains(&t) => Ok(t),
        _ => Err(format!(
            "the temperature must be a number from 0 to {MAX_TEMPERATURE}"
        )),
    }
}

/// `-k`/`--top-k`: the number of likeliest tokens to draw from, up to chat_web.py's largest,
/// 200; 0 draws from all of them.
pub fn top_k(text: &str) -> Result<usize, String> {
    use crate::serve::limits::MAX_TOP_K;
    match text.parse::<usize>() {
        Ok(k) if k <= MAX_TOP_K => Ok(k),
        _ => Err(format!(
            "top-k must be a whole number from 0 to {MAX_TOP_K}"
        )),
    }
}

/// The special tokens of a conversation.
struct Turns {
    bos: u32,
    user_start: u32,
    user_end: u32,
    assistant_start: u32,
    assistant_end: u32,
}

// ANCHOR: fit_context
/// Drops the oldest turns of `conversation` (after its `<|bos|>`) until it fits in `context`
/// tokens with `room` left for the answer; returns how many turns went. The last turn, the one
/// being asked, is never dropped.
pub fn fit_context(
    conversation: &mut Vec<u32>,
    user_start: u32,
    context: usize,
    room: usize,
) -> usize {
    let mut dropped = 0;
    while conversation.len() + room > context {
        // The second <|user_start|> starts the turn after the oldest.
        let starts: Vec<usize> = (1..conversation.len())
            .filter(|&i| conversation[i] == user_start)
            .collect();
        let Some(&next) = starts.get(1) else {
            break;
        };
        conversation.drain(1..next);
        dropped += 1;
    }
    dropped
}
// ANCHOR_END: fit_context

/// chat_cli.py's loop over `input`, writing to `out`.
pub fn chat(
    args: &ChatArgs,
    model: &Gpt,
    tokenizer: &Tokenizer,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<(), String> {
    if !matches!(args.device_type.as_str(), "" | "cpu") {
        return Err(format!(
            "--device-type {}: this build runs on the CPU only",
            args.device_type
        ));
    }
    let io = |e: std::io::Error| e.to_string();
    let special = |s: &str| tokenizer.encode_special(s);
    let turns = Turns {
        bos: tokenizer.bos_token_id(),
        user_start: special("<|user_start|>")?,
        user_end: special("<|user_end|>")?,
        assistant_start: special("<|assistant_start|>")?,
        assistant_end: special("<|assistant_end|>")?,
    };
    let context = model.config.sequence_len;
    if args.prompt.is_empty() {
        let rule = "-".repeat(50);
        writeln!(out, "\nNanoChat Interactive Mode\n{rule}").map_err(io)?;
        writeln!(out, "Type 'quit' or 'exit' to end the conversation").map_err(io)?;
        writeln!(out, "Type 'clear' to start a new conversation\n{rule}").map_err(io)?;
    }
    let mut conversation = vec![turns.bos];
    loop {
        let user_input = if !args.prompt.is_empty() {
            args.prompt.clone()
        } else {
            write!(out, "\nUser: ").map_err(io)?;
            out.flush().map_err(io)?;
            let mut line = String::new();
            if input.read_line(&mut line).map_err(io)? == 0 {
                writeln!(out, "\nGoodbye!").map_err(io)?;
                break;
            }
            line.trim().to_string()
        };
        match user_input.to_lowercase().as_str() {
            "quit" | "exit" => {
                writeln!(out, "Goodbye!").map_err(io)?;
                break;
            }
            "clear" => {
                conversation = vec![turns.bos];
                writeln!(out, "Conversation cleared.").map_err(io)?;
                continue;
            }
            "" => continue,
            _ => {}
        }
        let mut asked = conversation.clone();
        asked.push(turns.user_start);
        asked.extend(tokenizer.encode(&user_input));
        asked.push(turns.user_end);
        asked.push(turns.assistant_start);
        let dropped = fit_context(
            &mut asked,
            turns.user_start,
            context,
            answer_room(MAX_ANSWER, context),
        );
        if dropped > 0 {
            writeln!(
                out,
                "(The conversation outgrew the model's {context} tokens: the oldest {dropped} turn{} dropped.)",
                if dropped == 1 { " was" } else { "s were" }
            )
            .map_err(io)?;
        }
        if asked.len() >= context {
            writeln!(
                out,
                "(That message is {} tokens with the conversation's start; the model reads {context}. Ask it shorter.)",
                asked.len()
            )
            .map_err(io)?;
            if !args.prompt.is_empty() {
                break;
            }
            continue;
        }
        conversation = asked;
        let sampling = Sampling {
            num_samples: 1,
            max_tokens: MAX_ANSWER.min(context - conversation.len()),
            temperature: args.temperature,
            top_k: (args.top_k > 0).then_some(args.top_k),
            seed: 42,
            kv_cache: true,
        };
        write!(out, "\nAssistant: ").map_err(io)?;
        out.flush().map_err(io)?;
        let mut response = Vec::new();
        let mut failed = None;
        generate(
            model,
            tokenizer,
            &conversation,
            sampling,
            &mut |column, _| {
                response.push(column[0]);
                // The token that ends the answer is the conversation's, not the reader's.
                if column[0] == turns.assistant_end || column[0] == turns.bos {
                    return true;
                }
                let shown = tokenizer
                    .decode(&column[..1])
                    .and_then(|text| write!(out, "{text}").and_then(|()| out.flush()).map_err(io));
                if let Err(e) = shown {
                    failed = Some(e);
                    return false;
                }
                true
            },
        )?;
        if let Some(e) = failed {
            return Err(e);
        }
        writeln!(out).map_err(io)?;
        // The answer always ends with <|assistant_end|>, even one cut short.
        if response.last() != Some(&turns.assistant_end) {
            response.push(turns.assistant_end);
        }
        conversation.extend(response);
        if !args.prompt.is_empty() {
            break;
        }
    }
    Ok(())
}
