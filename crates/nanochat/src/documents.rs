//! The text nanochat trains on, as a list of documents.
//!
//! nanochat reads FineWeb-style parquet shards, one document per row. Offline, any text works:
//! - a text file is a list of documents separated by blank lines (a line break, then an empty
//!   line: `"\n\n"` or `"\r\n\r\n"`, as Python's `re.split(r"\r?\n\r?\n", text)`; empty
//!   pieces are dropped), so tiny Shakespeare is its 7,222 speeches;
//! - a JSON-lines file (`.jsonl`) holds one `{"text": …}` object per line;
//! - a folder holds such files, read in name order.
//!
//! For training, each file stands for a shard and the last one is val, as in nanochat; a single
//! file gives its last tenth to val ([`train_val_split`]).

use crate::dataloader::InMemory;
use std::path::{Path, PathBuf};

/// A document read from `path`, with every error naming the file.
fn utf8(path: &Path, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        format!(
            "{}: not UTF-8 text (the byte at offset {at} starts no valid character)",
            path.display()
        )
    })
}

/// The documents of one text file: the pieces between blank lines, as
/// `re.split(r"\r?\n\r?\n", text)` cuts them, without the empty ones.
pub fn split_text(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut pieces = Vec::new();
    let (mut start, mut i) = (0, 0);
    // A match at i: an optional \r, \n, an optional \r, \n. Taking each \r when it is there
    // never loses a match: without it, a \n would be needed where the \r is.
    let newline = |j: usize| -> Option<usize> {
        let j = if b.get(j) == Some(&b'\r') { j + 1 } else { j };
        (b.get(j) == Some(&b'\n')).then_some(j + 1)
    };
    while i < b.len() {
        match newline(i).and_then(newline) {
            Some(end) => {
                pieces.push(&text[start..i]);
                (start, i) = (end, end);
            }
            None => i += 1,
        }
    }
    pieces.push(&text[start..]);
    pieces.into_iter().filter(|d| !d.is_empty())
}

fn read_jsonl(path: &Path, text: &str, out: &mut Vec<String>) -> Result<(), String> {
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not JSON ({e})", path.display(), i + 1))?;
        match value.get("text").and_then(|t| t.as_str()) {
            Some(t) => out.push(t.to_string()),
            None => {
                return Err(format!(
                    "{}:{}: a line needs a \"text\" string",
                    path.display(),
                    i + 1
                ))
            }
        }
    }
    Ok(())
}

fn read_file(path: &Path, out: &mut Vec<String>) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = utf8(path, bytes)?;
    if path.extension().is_some_and(|e| e == "jsonl") {
        read_jsonl(path, &text, out)
    } else {
        out.extend(split_text(&text).map(str::to_string));
        Ok(())
    }
}

/// A path that is not there but names one of the workspace's data files (`tinyshakespeare.txt`,
/// or `datasets/tinyshakespeare.txt` where `ZTH_DATA` keeps the files elsewhere): that file,
/// found as every lecture finds it, or the data crate's message saying how to get it.
fn catalogue_file(path: &Path) -> Result<PathBuf, String> {
    match path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(data::file)
    {
        Some(file) => data::path(file.name).map_err(|e| e.to_string()),
        None => Err(format!("{}: no such file or folder", path.display())),
    }
}

/// The files a corpus path names: the file itself, or a folder's `.txt`, `.md` and `.jsonl`
/// files in name order.
fn corpus_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    if !path.exists() {
        return Ok(vec![catalogue_file(path)?]);
    }
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "txt" || e == "md" || e == "jsonl")
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{}: the folder has no .txt, .md or .jsonl files to read",
            path.display()
        ));
    }
    Ok(files)
}

/// Every document under `path` (a file or a folder of `.txt`, `.md` and `.jsonl` files).
pub fn read_documents(path: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for f in corpus_files(path)? {
        read_file(&f, &mut out)?;
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no text in it (an empty corpus)",
            path.display()
        ));
    }
    Ok(out)
}

/// What tok_train.py trains the tokenizer on: the train documents only
/// (`parquets_iter_batched(split="train")`), so that the tokenizer never sees what base-train
/// validates on. A folder of nanochat's parquet shards gives every shard but the last; a text
/// file or a folder of them, the documents [`train_val_split`] keeps for training.
pub fn tokenizer_documents(path: &Path) -> Result<Vec<String>, String> {
    use crate::dataloader::DocumentSource;
    let parquet = path.is_dir() && !crate::shards::list_parquet_files(path)?.is_empty();
    let mut train: Box<dyn DocumentSource> = if parquet {
        Box::new(crate::shards::ParquetShards::train_val(path)?.0)
    } else {
        Box::new(train_val_split(path)?.0)
    };
    let mut documents = Vec::new();
    for file in 0..train.num_files() {
        for group in 0..train.num_row_groups(file)? {
            documents.extend(train.read_row_group(file, group)?);
        }
    }
    Ok(documents)
}

/// Documents per row group when text files stand in for parquet shards (a resumed run restarts
/// at a row group, so this is also how finely a run resumes).
pub const DOCUMENTS_PER_ROW_GROUP: usize = 1024;

/// The train and val documents under `path`, as nanochat splits its shards: with several files,
/// the last is val; a single file gives its last tenth of documents (at least one) to val. Each
/// file is one shard of row groups of [`DOCUMENTS_PER_ROW_GROUP`] documents.
pub fn train_val_split(path: &Path) -> Result<(InMemory, InMemory), String> {
    let files = corpus_files(path)?;
    let mut shards = Vec::new();
    for f in &files {
        let mut docs = Vec::new();
        read_file(f, &mut docs)?;
        if docs.is_empty() {
            return Err(format!("{}: no text in it (an empty file)", f.display()));
        }
        shards.push(docs);
    }
    let (train, val) = if shards.len() == 1 {
        let docs = shards.pop().expect("one shard");
        if docs.len() < 2 {
            return Err(format!(
                "{}: one document only; a run needs at least two, one of them for validation \
                 (documents are separated by blank lines)",
                path.display()
            ));
        }
        let n_val = (docs.len() / 10).max(1);
        let (train, val) = docs.split_at(docs.len() - n_val);
        (vec![train.to_vec()], vec![val.to_vec()])
    } else {
        let val = shards.pop().expect("two shards or more");
        (shards, vec![val])
    };
    let row_groups = |shards: Vec<Vec<String>>| {
        InMemory(
            shards
                .into_iter()
                .map(|docs| {
                    docs.chunks(DOCUMENTS_PER_ROW_GROUP)
                        .map(<[String]>::to_vec)
                        .collect()
                })
                .collect(),
        )
    };
    Ok((row_groups(train), row_groups(val)))
}
