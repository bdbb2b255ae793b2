//! The text nanochat trains on, as a list of documents.
//!
//! nanochat reads FineWeb-style parquet shards, one document per row. Offline, any text works:
//! - a text file is a list of documents separated by blank lines (a line break, then an empty
//!   line: `"\n\n"` or `"\r\n\r\n"`, as Python's `re.split(r"\r?\n\r?\n", text)`; empty
//!   pieces are dropped), so tiny Shakespeare is its 7,222 speeches;
//! - a JSON-lines file (`.jsonl`) holds one `{"text": …}` object per line;
//! - a folder holds such files, read in name order.

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

/// Every document under `path` (a file or a folder of `.txt`, `.md` and `.jsonl` files).
pub fn read_documents(path: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if path.is_dir() {
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
        for f in files {
            read_file(&f, &mut out)?;
        }
    } else {
        read_file(path, &mut out)?;
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no text in it (an empty corpus)",
            path.display()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_separate_documents() {
        // As Python's text.split("\n\n") with the empty pieces dropped.
        let docs: Vec<&str> = split_text("a b\nc\n\n\n\nd\n\n\ne\n\n").collect();
        assert_eq!(docs, ["a b\nc", "d", "\ne"]);
        let docs: Vec<&str> = split_text("a\r\n\r\nb\r\nc\n\r\nd\r\r\n\ne\r\n").collect();
        assert_eq!(docs, ["a", "b\r\nc", "d\r", "e\r\n"]);
    }
}
