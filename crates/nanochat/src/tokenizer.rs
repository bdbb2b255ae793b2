//! nanochat's `tokenizer.py`: trained as rustbpe trains it, encoding as tiktoken encodes, and
//! rendering conversations into token ids and a loss mask.

use std::path::{Path, PathBuf};

use bpe::rustbpe;
use bpe::{Merges, RegexTokenizer, Splitter, NANOCHAT_SPLIT_PATTERN};
use serde::{Deserialize, Serialize};

use crate::pickle::{self, EncodingState};
use crate::pt;

/// nanochat's special tokens, given the ids after the trained vocabulary, in this order.
pub const SPECIAL_TOKENS: [&str; 9] = [
    // every document begins with the Beginning of Sequence (BOS) token that delimits documents
    "<|bos|>",
    // the rest are only used in finetuning, to render conversations into token ids
    "<|user_start|>",
    "<|user_end|>",
    "<|assistant_start|>",
    "<|assistant_end|>",
    "<|python_start|>", // the assistant invokes the python tool
    "<|python_end|>",
    "<|output_start|>", // the tool's output, back to the assistant
    "<|output_end|>",
];

/// `tok_train.py`'s `text_iterator`: each document cropped to `doc_cap` characters, and no
/// document after the one that takes the count of characters past `max_chars`.
pub fn text_iterator<'a>(
    documents: impl IntoIterator<Item = &'a str>,
    doc_cap: usize,
    max_chars: usize,
) -> Vec<&'a str> {
    let mut nchars = 0;
    let mut out = Vec::new();
    for doc in documents {
        let doc = match doc.char_indices().nth(doc_cap) {
            Some((end, _)) => &doc[..end],
            None => doc,
        };
        nchars += doc.chars().count();
        out.push(doc);
        if nchars > max_chars {
            break;
        }
    }
    out
}

/// A conversation in nanochat's format: `{"messages": [{"role": …, "content": …}, …]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// The messages: an optional system message, then user and assistant in turn.
    pub messages: Vec<Message>,
}

/// One message of a [`Conversation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// "system", "user" or "assistant".
    pub role: String,
    /// A string, or (for the assistant) a list of parts with tool calls.
    pub content: Content,
}

/// A message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts: "text", "python" (a tool call) or "python_output" (its result).
    Parts(Vec<Part>),
}

/// One part of an assistant's message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// "text", "python" or "python_output".
    #[serde(rename = "type")]
    pub kind: String,
    /// The part's text.
    pub text: String,
}

/// nanochat's tokenizer: a tiktoken `Encoding` (its state is what `tokenizer.pkl` holds) and the
/// BPE that encodes with it.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    state: EncodingState,
    bpe: RegexTokenizer,
    bos: u32,
}

impl Tokenizer {
    /// `RustBPETokenizer.train_from_iterator`: rustbpe trains `vocab_size − 9` tokens with
    /// nanochat's split pattern, then the special tokens take the next ids. A text too small for
    /// that many merges gives a smaller vocabulary, as rustbpe does.
    pub fn train_from_documents(
        documents: &[&str],
        vocab_size: usize,
    ) -> Result<Tokenizer, String> {
        let no_special = vocab_size
            .checked_sub(SPECIAL_TOKENS.len())
            .filter(|&n| n >= 256);
        let no_special = no_special.ok_or_else(|| {
            format!("--vocab-size {vocab_size} leaves fewer than 256 tokens once the 9 special tokens are set aside")
        })?;
        let splitter = Splitter::new(NANOCHAT_SPLIT_PATTERN).map_err(|e| e.to_string())?;
        let records = rustbpe::train_documents(documents, no_special, &splitter)
            .map_err(|e| e.to_string())?;
        let pairs: Vec<_> = records.iter().map(|r| r.pair).collect();
        let merges = Merges::from_list(&pairs).map_err(|e| e.to_string())?;
        // get_mergeable_ranks: every token's bytes, ranked by id.
        let mergeable_ranks = (0..merges.vocab_size() as u32)
            .map(|id| {
                (
                    merges.token_bytes(id).expect("every id has bytes").to_vec(),
                    id,
                )
            })
            .collect::<Vec<_>>();
        let offset = mergeable_ranks.len() as u32;
        let special_tokens = (SPECIAL_TOKENS.iter().zip(offset..))
            .map(|(s, id)| (s.to_string(), id))
            .collect();
        Tokenizer::from_state(
            EncodingState {
                name: "rustbpe".into(),
                pat_str: NANOCHAT_SPLIT_PATTERN.into(),
                mergeable_ranks,
                special_tokens,
            },
            "the trained tokenizer",
        )
    }

    /// The tokenizer of a tiktoken `Encoding`'s state; `origin` names it in errors.
    pub fn from_state(state: EncodingState, origin: &str) -> Result<Tokenizer, String> {
        let mut by_rank = vec![Vec::new(); state.mergeable_ranks.len()];
        for (bytes, rank) in &state.mergeable_ranks {
            let slot = by_rank.get_mut(*rank as usize).filter(|s| s.is_empty());
            let slot = slot.ok_or_else(|| {
                format!("{origin}: the ranks are not 0, 1, 2, … each once (rank {rank})")
            })?;
            *slot = bytes.clone();
        }
        let merges = bpe::openai::recover_merges(&by_rank, origin).map_err(|e| e.to_string())?;
        let mut bpe = RegexTokenizer::from_parts(&state.pat_str, merges)
            .map_err(|e| format!("{origin}: its split pattern: {e}"))?;
        let specials: Vec<(&str, u32)> = state
            .special_tokens
            .iter()
            .map(|(s, i)| (s.as_str(), *i))
            .collect();
        bpe.register_special_tokens(&specials)
            .map_err(|e| format!("{origin}: {e}"))?;
        let bos = specials
            .iter()
            .find(|(s, _)| *s == "<|bos|>")
            .map(|&(_, id)| id);
        let bos = bos.ok_or_else(|| format!("{origin}: there is no <|bos|> special token"))?;
        Ok(Tokenizer { state, bpe, bos })
    }

    /// `RustBPETokenizer.from_directory`: `tokenizer.pkl` in `dir`.
    pub fn from_directory(dir: &Path) -> Result<Tokenizer, String> {
        let path = dir.join("tokenizer.pkl");
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let state = pickle::loads(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Tokenizer::from_state(state, &path.display().to_string())
    }

    /// `save`: `tokenizer.pkl` in `dir`, the bytes Python's pickle writes, written atomically.
    pub fn save(&self, dir: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("tokenizer.pkl");
        report::write_atomic(&path, &pickle::dumps(&self.state))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// `tok_train.py`'s last step: [`Tokenizer::token_bytes`] as an int32 tensor, saved with
    /// `torch.save` to `token_bytes.pt` in `dir` (nanochat's base_train.py and base_eval.py
    /// stop without it).
    pub fn save_token_bytes(&self, dir: &Path) -> Result<PathBuf, String> {
        let path = dir.join("token_bytes.pt");
        let counts: Vec<i32> = self.token_bytes().iter().map(|&b| b as i32).collect();
        let tensor = pt::Obj::Tensor(pt::StoredTensor::i32(&[counts.len()], &counts));
        let bytes = pt::save("archive", &tensor)?; // torch.save to a file object names it so
        report::write_atomic(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// The pickled state.
    pub fn state(&self) -> &EncodingState {
        &self.state
    }

    /// tiktoken's `n_vocab`: the largest id plus one.
    pub fn vocab_size(&self) -> usize {
        let top = self.state.special_tokens.iter().map(|&(_, id)| id);
        top.chain([self.state.mergeable_ranks.len() as u32 - 1])
            .max()
            .unwrap() as usize
            + 1
    }

    /// The id of `<|bos|>`.
    pub fn bos_token_id(&self) -> u32 {
        self.bos
    }

    /// The id of a special token, by name.
    pub fn encode_special(&self, name: &str) -> Result<u32, String> {
        let found = self.state.special_tokens.iter().find(|(s, _)| s == name);
        found
            .map(|&(_, id)| id)
            .ok_or_else(|| format!("no special token {name:?}"))
    }

    /// `encode`: tiktoken's `encode_ordinary`, where special tokens in the text are plain text.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.bpe
            .encode_ordinary(text)
            .expect("the pattern covers any text")
    }

    /// `decode`: the bytes of the tokens, invalid UTF-8 replaced by U+FFFD as tiktoken does.
    pub fn decode(&self, ids: &[u32]) -> Result<String, String> {
        let bytes = self.bpe.decode_bytes(ids).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `tok_train.py`'s `token_bytes`: each token's length in bytes, 0 for special tokens (the
    /// bits-per-byte evaluation leaves them out).
    pub fn token_bytes(&self) -> Vec<u32> {
        let mut out = vec![0; self.vocab_size()];
        for (bytes, rank) in &self.state.mergeable_ranks {
            out[*rank as usize] = bytes.len() as u32;
        }
        for (_, id) in &self.state.special_tokens {
            out[*id as usize] = 0;
        }
        out
    }

    // ANCHOR: render_conversation
    /// `render_conversation`: the conversation's token ids, and a mask that is 1 where the
    /// assistant is trained (its text, its tool calls, `<|assistant_end|>`) and 0 elsewhere
    /// (the user, the tool's outputs). A system message is folded into the first user message.
    /// Both are cut to `max_tokens`.
    pub fn render_conversation(
        &self,
        conversation: &Conversation,
        max_tokens: usize,
    ) -> Result<(Vec<u32>, Vec<u8>), String> {
        let mut ids = Vec::new();
        let mut mask = Vec::new();
        let mut add = |tokens: &[u32], m: u8| {
            ids.extend_from_slice(tokens);
            mask.extend(std::iter::repeat_n(m, tokens.len()));
        };
        let mut messages = conversation.messages.clone();
        if messages.first().is_some_and(|m| m.role == "system") {
            let system = messages.remove(0);
            let (Content::Text(system), Some(first)) = (system.content, messages.first_mut())
            else {
                return Err(
                    "a system message must be text and be followed by a user message".into(),
                );
            };
            match (&first.role[..], &mut first.content) {
                ("user", Content::Text(user)) => *user = format!("{system}\n\n{user}"),
                _ => return Err("a system message must be followed by a user message".into()),
            }
        }
        if messages.is_empty() {
            return Err("the conversation has no messages".into());
        }
        let special = |name| {
            self.encode_special(name)
                .expect("nanochat's special tokens")
        };
        add(&[self.bos], 0);
        for (i, message) in messages.iter().enumerate() {
            let must_be_from = if i % 2 == 0 { "user" } else { "assistant" };
            if message.role != must_be_from {
                return Err(format!(
                    "message {i} is from {:?} but should be from {must_be_from:?}",
                    message.role
                ));
            }
            match (&message.role[..], &message.content) {
                ("user", Content::Text(text)) => {
                    add(&[special("<|user_start|>")], 0);
                    add(&self.encode(text), 0);
                    add(&[special("<|user_end|>")], 0);
                }
                ("user", Content::Parts(_)) => {
                    return Err(format!("message {i}: a user message must be a string"));
                }
                (_, content) => {
                    add(&[special("<|assistant_start|>")], 0);
                    match content {
                        Content::Text(text) => add(&self.encode(text), 1),
                        Content::Parts(parts) => {
                            for part in parts {
                                let value = self.encode(&part.text);
                                match &part.kind[..] {
                                    "text" => add(&value, 1),
                                    "python" => {
                                        add(&[special("<|python_start|>")], 1);
                                        add(&value, 1);
                                        add(&[special("<|python_end|>")], 1);
                                    }
                                    // The tool's output comes from Python at test time: not trained.
                                    "python_output" => {
                                        add(&[special("<|output_start|>")], 0);
                                        add(&value, 0);
                                        add(&[special("<|output_end|>")], 0);
                                    }
                                    other => {
                                        return Err(format!(
                                            "message {i}: unknown part type {other:?}"
                                        ))
                                    }
                                }
                            }
                        }
                    }
                    add(&[special("<|assistant_end|>")], 1);
                }
            }
        }
        ids.truncate(max_tokens);
        mask.truncate(max_tokens);
        Ok((ids, mask))
    }
    // ANCHOR_END: render_conversation

    /// `render_for_completion`: the conversation without its last (assistant) message, then
    /// `<|assistant_start|>`, priming the model to answer.
    pub fn render_for_completion(&self, conversation: &Conversation) -> Result<Vec<u32>, String> {
        let mut conversation = conversation.clone();
        match conversation.messages.pop() {
            Some(last) if last.role == "assistant" => {}
            _ => return Err("the last message must be from the assistant".into()),
        }
        let (mut ids, _) = self.render_conversation(&conversation, 2048)?;
        ids.push(self.encode_special("<|assistant_start|>")?);
        Ok(ids)
    }
}
