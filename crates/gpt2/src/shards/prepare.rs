//! `gpt2 prepare`: a text or JSON-lines file into token shards, as
//! build-nanogpt's `fineweb.py` writes them, or into nanoGPT's `train.bin`
//! and `val.bin` (`data/shakespeare/prepare.py`).

use super::*;

/// What `gpt2 prepare` reads: plain text (one document) or JSON lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// The whole file is one document.
    Text,
    /// One JSON object per line, the document in this string field
    /// (FineWeb-Edu's rows keep it in `text`).
    Jsonl {
        /// The field holding the document.
        field: String,
    },
}

/// The documents of `input`, each tokenized as `fineweb.py`'s `tokenize`:
/// `<|endoftext|>` then `encode_ordinary(text)` (special tokens in the text
/// are plain text), checked to fit uint16. Calls `each` per document with
/// the bytes read so far.
fn for_each_document(
    input: &Path,
    kind: &InputKind,
    tokenizer: &bpe::RegexTokenizer,
    each: &mut dyn FnMut(Vec<u16>, u64) -> Result<(), String>,
) -> Result<(), String> {
    let fail = |e: String| format!("{}: {e}", input.display());
    let tokenize = |doc: &str| -> Result<Vec<u16>, String> {
        let ids = tokenizer.encode_ordinary(doc).map_err(|e| e.to_string())?;
        let mut tokens = Vec::with_capacity(ids.len() + 1);
        tokens.push(EOT);
        for id in ids {
            tokens.push(u16::try_from(id).map_err(|_| format!("token {id} does not fit uint16"))?);
        }
        Ok(tokens)
    };
    match kind {
        InputKind::Text => {
            let text = std::fs::read_to_string(input).map_err(|e| fail(e.to_string()))?;
            each(tokenize(&text).map_err(fail)?, text.len() as u64)
        }
        InputKind::Jsonl { field } => {
            // Streamed line by line: FineWeb-Edu's export runs to tens of GB.
            let file = std::fs::File::open(input).map_err(|e| fail(e.to_string()))?;
            let mut read = 0u64;
            for (i, line) in std::io::BufRead::lines(std::io::BufReader::new(file)).enumerate() {
                let line = line.map_err(|e| fail(format!("line {}: {e}", i + 1)))?;
                read += line.len() as u64 + 1;
                if line.trim().is_empty() {
                    continue;
                }
                let row: serde_json::Value = serde_json::from_str(&line)
                    .map_err(|e| fail(format!("line {}: not JSON: {e}", i + 1)))?;
                let doc = row
                    .get(field)
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| fail(format!("line {}: no string field {field:?}", i + 1)))?;
                each(
                    tokenize(doc).map_err(|e| fail(format!("line {}: {e}", i + 1)))?,
                    read,
                )?;
            }
            Ok(())
        }
    }
}

// ANCHOR: prepare
/// `fineweb.py`: tokenizes `input` into shards of `shard_tokens` tokens in
/// `out`, filling each shard to the brim and carrying a document that does
/// not fit into the next; the last shard holds what is left. Shard 0 is
/// `val`, the rest `train`. Returns the paths written.
pub fn prepare(
    input: &Path,
    kind: &InputKind,
    out: &Path,
    prefix: &str,
    shard_tokens: usize,
    format: ShardFormat,
) -> Result<Vec<PathBuf>, String> {
    if format == ShardFormat::Nanogpt {
        if *kind != InputKind::Text {
            return Err(
                "--format nanogpt reads one text, as nanoGPT's data/shakespeare/prepare.py does; \
                 --jsonl makes shards (--format npy or bin)"
                    .into(),
            );
        }
        return prepare_nanogpt(input, out);
    }
    if shard_tokens == 0 {
        return Err("--shard-tokens must be above 0".into());
    }
    let size = std::fs::metadata(input)
        .map_err(|e| format!("{}: {e}", input.display()))?
        .len();
    report::check_out_dir("--out", out)?;
    for split in ["val", "train"] {
        if let Ok(existing) = list_shards(out, split) {
            if let Some(old) = existing.iter().find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{prefix}_{split}_")))
            }) {
                return Err(format!(
                    "{}: already holds shards ({}); remove them or choose another --out or --prefix",
                    out.display(),
                    old.display()
                ));
            }
        }
    }
    let tokenizer = bpe::Gpt2Tokenizer::from_data_dir()
        .map_err(|e| e.to_string())?
        .into_inner();
    let bar = indicatif::ProgressBar::new(size);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "tokenizing [{bar:40}] {bytes}/{total_bytes} ({eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut written = Vec::new();
    let mut shard: Vec<u16> = Vec::with_capacity(shard_tokens);
    let write = |shard: &[u16], written: &mut Vec<PathBuf>| -> Result<(), String> {
        let index = written.len();
        let split = if index == 0 { "val" } else { "train" };
        let path = out.join(format!(
            "{prefix}_{split}_{index:06}.{}",
            format.extension()
        ));
        write_shard(&path, format, shard)?;
        written.push(path);
        Ok(())
    };
    let mut text_tokens = 0; // the tokens besides each document's end-of-text
    for_each_document(input, kind, &tokenizer, &mut |tokens, read| {
        text_tokens += tokens.len() - 1;
        let mut rest = &tokens[..];
        while shard.len() + rest.len() >= shard_tokens {
            let take = shard_tokens - shard.len();
            shard.extend_from_slice(&rest[..take]);
            write(&shard, &mut written)?;
            shard.clear();
            rest = &rest[take..];
        }
        shard.extend_from_slice(rest);
        bar.set_position(read);
        Ok(())
    })?;
    if text_tokens == 0 {
        // Only end-of-text tokens: nothing to train on.
        for path in &written {
            let _ = std::fs::remove_file(path);
        }
        return Err(format!(
            "input file {}: it holds no text to tokenize",
            input.display()
        ));
    }
    if !shard.is_empty() {
        write(&shard, &mut written)?;
    }
    bar.finish_and_clear();
    Ok(written)
}
// ANCHOR_END: prepare

// ANCHOR: prepare_nanogpt
/// nanoGPT's `data/shakespeare/prepare.py` on any text: read as Python's
/// `open(path, 'r', encoding='utf-8')` reads it, split at `int(n*0.9)`
/// characters, each part `encode_ordinary`'d with GPT-2's tokenizer (no
/// end-of-text tokens), written headerless to `out/train.bin` and
/// `out/val.bin`. Returns the two paths.
pub fn prepare_nanogpt(input: &Path, out: &Path) -> Result<Vec<PathBuf>, String> {
    let text = data::python_text::read(input)?;
    let n = text.chars().count();
    let cut = (n as f64 * 0.9) as usize; // int(n*0.9)
    let at = text.char_indices().nth(cut).map_or(text.len(), |(i, _)| i);
    let (train, val) = text.split_at(at);
    let tokenizer = bpe::Gpt2Tokenizer::from_data_dir()
        .map_err(|e| e.to_string())?
        .into_inner();
    let encode = |part: &str, split: &str| -> Result<Vec<u16>, String> {
        let ids = tokenizer.encode_ordinary(part).map_err(|e| e.to_string())?;
        if ids.is_empty() {
            return Err(format!(
                "input file {}: its {split} split ({} of {n} characters) holds no tokens; \
                 give a longer text",
                input.display(),
                part.chars().count()
            ));
        }
        ids.iter()
            .map(|&id| u16::try_from(id).map_err(|_| format!("token {id} does not fit uint16")))
            .collect()
    };
    let (train, val) = (encode(train, "train")?, encode(val, "val")?);
    report::check_out_dir("--out", out)?;
    let mut written = Vec::new();
    for (name, tokens) in [("train.bin", &train), ("val.bin", &val)] {
        let path = out.join(name);
        write_shard(&path, ShardFormat::Nanogpt, tokens)?;
        written.push(path);
    }
    Ok(written)
}
// ANCHOR_END: prepare_nanogpt

/// `gpt2 prepare`: tokenize text or JSON lines into token shards, as fineweb.py does.
#[derive(clap::Args)]
pub struct PrepareArgs {
    /// A text file (one document) or, with --jsonl, one JSON object per line.
    #[arg(long)]
    input: PathBuf,
    /// Read --input as JSON lines.
    #[arg(long)]
    jsonl: bool,
    /// The JSON field holding each document.
    #[arg(long, default_value = "text")]
    field: String,
    /// Folder for the shards (`--out-dir` too, as `gpt prepare` spells it).
    #[arg(long, alias = "out-dir")]
    out: PathBuf,
    /// Tokens per shard (fineweb.py: 100,000,000).
    #[arg(long, default_value_t = 100_000_000)]
    shard_tokens: usize,
    /// build-nanogpt's .npy shards, llm.c's .bin shards, or nanoGPT's
    /// headerless train.bin and val.bin (a 90/10 split of one text, as
    /// its data/shakespeare/prepare.py writes them).
    #[arg(long, value_enum, default_value = "npy")]
    format: ShardFormat,
    /// The shards' names start with this (fineweb.py: edufineweb).
    #[arg(long)]
    prefix: Option<String>,
}

impl PrepareArgs {
    /// Writes the shards and prints each one's token count.
    pub fn run(self) -> Result<(), String> {
        let kind = match self.jsonl {
            true => InputKind::Jsonl { field: self.field },
            false => InputKind::Text,
        };
        let stem = self
            .input
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("shard");
        let prefix = self.prefix.unwrap_or_else(|| stem.to_string());
        let written = prepare(
            &self.input,
            &kind,
            &self.out,
            &prefix,
            self.shard_tokens,
            self.format,
        )?;
        for path in written {
            let tokens = match self.format {
                ShardFormat::Nanogpt => TokenShard::open_as(&path, self.format)?.len(),
                _ => TokenShard::open(&path)?.len(),
            };
            println!("{}: {tokens} tokens", path.display());
        }
        Ok(())
    }
}
