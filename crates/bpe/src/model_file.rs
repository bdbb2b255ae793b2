//! minbpe's save format (`base.py` `save`/`load`), byte for byte.
//!
//! `PREFIX.model`, the file `load` reads:
//! ```text
//! minbpe v1
//! <split pattern, empty for BasicTokenizer>
//! <number of special tokens>
//! <special> <id>        (one line each)
//! <idx1> <idx2>         (one line per merge, in merge order; the new id is 256, 257, ...)
//! ```
//! `PREFIX.vocab` is for people only: one line per token, `[<token>] <id>` for the 256 bytes and
//! `[<child0>][<child1>] -> [<token>] <id>` for merges, with invalid UTF-8 shown as U+FFFD and
//! control characters escaped as `\uXXXX`. It loses information, so nothing reads it back.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex_automata::meta;

use crate::error::{Error, Result};
use crate::merges::{Merges, Pair};

/// The contents of a `.model` file.
#[derive(Debug, Clone)]
pub struct ModelFile {
    /// The split pattern (`""`: no split).
    pub pattern: String,
    /// Special tokens in file order.
    pub special_tokens: Vec<(String, u32)>,
    /// The merges, with their vocabulary.
    pub merges: Merges,
}

/// The text of a `.model` file.
pub fn model_text(pattern: &str, specials: &[(String, u32)], merges: &[Pair]) -> Result<String> {
    if pattern.contains(['\n', '\r']) || pattern.trim() != pattern {
        return Err(Error::Invalid(
            "a pattern with line breaks or surrounding whitespace cannot be saved in minbpe's format"
                .into(),
        ));
    }
    let mut s = format!("minbpe v1\n{pattern}\n{}\n", specials.len());
    for (special, idx) in specials {
        if special.is_empty() || special.contains(char::is_whitespace) {
            return Err(Error::Invalid(format!(
                "special token {special:?} contains whitespace, which minbpe's format cannot hold"
            )));
        }
        writeln!(s, "{special} {idx}").unwrap();
    }
    for (a, b) in merges {
        writeln!(s, "{a} {b}").unwrap();
    }
    Ok(s)
}

/// Parses the text of a `.model` file; `name` is used in error messages.
pub fn parse_model(text: &str, name: &str) -> Result<ModelFile> {
    // minbpe's `save` ends every line with "\n": without one the last line
    // was cut, perhaps in the middle of a number ("256 10" from "256 101").
    if !text.ends_with('\n') {
        let line = text.split('\n').count();
        return Err(Error::format(
            name,
            line,
            "the file ends in the middle of a line (was it truncated?)".to_string(),
        ));
    }
    let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l));
    let mut next = |what: &str| {
        lines
            .next()
            .ok_or_else(|| Error::format(name, 0, format!("file ends before {what}")))
    };
    let (n, version) = next("the version line")?;
    if version.trim() != "minbpe v1" {
        return Err(Error::format(
            name,
            n,
            format!("expected \"minbpe v1\", found {:?}", version.trim()),
        ));
    }
    // Python's `readline().strip()`.
    let pattern = next("the pattern line")?.1.trim().to_string();
    let (n, count) = next("the number of special tokens")?;
    let count: usize = count.trim().parse().map_err(|_| {
        Error::format(
            name,
            n,
            format!(
                "expected the number of special tokens, found {:?}",
                count.trim()
            ),
        )
    })?;
    let mut special_tokens = Vec::new();
    for _ in 0..count {
        let (n, line) = next("all special tokens are listed")?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [special, id] = fields[..] else {
            return Err(Error::format(
                name,
                n,
                format!("expected \"<special token> <id>\", found {line:?}"),
            ));
        };
        let id: u32 = id
            .parse()
            .map_err(|_| Error::format(name, n, format!("bad special token id {id:?}")))?;
        special_tokens.push((special.to_string(), id));
    }
    let mut merges = Merges::bytes_only();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let parsed = match fields[..] {
            [a, b] => a.parse::<u32>().ok().zip(b.parse::<u32>().ok()),
            _ => None,
        };
        let Some(pair) = parsed else {
            return Err(Error::format(
                name,
                n,
                format!("expected a merge \"<idx1> <idx2>\", found {line:?}"),
            ));
        };
        merges
            .push(pair)
            .map_err(|e| Error::format(name, n, e.to_string()))?;
    }
    Ok(ModelFile {
        pattern,
        special_tokens,
        merges,
    })
}

/// Reads a `.model` file.
pub fn load(path: &Path) -> Result<ModelFile> {
    if path.extension().and_then(|e| e.to_str()) != Some("model") {
        return Err(Error::Invalid(format!(
            "{}: expected a .model file (the .vocab file is for reading only)",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_model(&text, &path.display().to_string())
}

/// Writes `PREFIX.model` and `PREFIX.vocab` atomically; returns their paths.
pub fn save(
    prefix: &Path,
    pattern: &str,
    specials: &[(String, u32)],
    merges: &Merges,
) -> Result<(PathBuf, PathBuf)> {
    if !merges.is_identity_bytes() {
        return Err(Error::Invalid(
            "this tokenizer numbers its byte tokens in its own order (GPT-2/GPT-4), which \
             minbpe's format cannot record"
                .into(),
        ));
    }
    let model = model_text(pattern, specials, merges.list())?;
    let vocab = vocab_text(merges, specials);
    let model_path = with_suffix(prefix, ".model");
    let vocab_path = with_suffix(prefix, ".vocab");
    write_atomic(&model_path, model.as_bytes())?;
    write_atomic(&vocab_path, vocab.as_bytes())?;
    Ok((model_path, vocab_path))
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Writes a file through a temporary file and a rename, so a reader never sees half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

// ANCHOR: render_token
/// A token as minbpe prints it: UTF-8 with errors replaced, control characters (Unicode
/// category C*) escaped as `\uXXXX`.
pub fn render_token(bytes: &[u8]) -> String {
    static OTHER: OnceLock<meta::Regex> = OnceLock::new();
    let other = OTHER.get_or_init(|| meta::Regex::new(r"^\p{C}$").unwrap());
    let mut out = String::new();
    let mut buf = [0u8; 4];
    for ch in String::from_utf8_lossy(bytes).chars() {
        if other.is_match(ch.encode_utf8(&mut buf) as &str) {
            write!(out, "\\u{:04x}", ch as u32).unwrap();
        } else {
            out.push(ch);
        }
    }
    out
}
// ANCHOR_END: render_token

/// The text of a `.vocab` file: bytes, merges, then special tokens.
pub fn vocab_text(merges: &Merges, specials: &[(String, u32)]) -> String {
    let mut s = String::new();
    let list = merges.list();
    for id in 0..merges.vocab_size() as u32 {
        let token = render_token(merges.token_bytes(id).unwrap());
        if id >= 256 {
            let (a, b) = list[id as usize - 256];
            let s0 = render_token(merges.token_bytes(a).unwrap());
            let s1 = render_token(merges.token_bytes(b).unwrap());
            writeln!(s, "[{s0}][{s1}] -> [{token}] {id}").unwrap();
        } else {
            writeln!(s, "[{token}] {id}").unwrap();
        }
    }
    for (special, id) in specials {
        writeln!(s, "[{}] {id}", render_token(special.as_bytes())).unwrap();
    }
    s
}

/// Python's `repr(bytes)`, as minbpe's verbose training prints tokens: `b'e '`.
pub fn py_bytes_repr(bytes: &[u8]) -> String {
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut s = format!("b{quote}");
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            _ if b as char == quote => {
                s.push('\\');
                s.push(quote)
            }
            0x20..=0x7e => s.push(b as char),
            _ => write!(s, "\\x{b:02x}").unwrap(),
        }
    }
    s.push(quote);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_escapes_controls_and_replaces_invalid() {
        assert_eq!(render_token(b"a\nb"), "a\\u000ab");
        assert_eq!(render_token(b"\xe2\x82"), "\u{fffd}");
        assert_eq!(render_token("\u{200b}é".as_bytes()), "\\u200bé");
    }

    #[test]
    fn bytes_repr_like_python() {
        assert_eq!(py_bytes_repr(b"e "), "b'e '");
        assert_eq!(py_bytes_repr(b"it's"), "b\"it's\"");
        assert_eq!(py_bytes_repr(b"\xe2\x80\n"), "b'\\xe2\\x80\\n'");
    }

    #[test]
    fn malformed_models_give_clear_errors() {
        let cases = [
            ("minbpe v2\n\n0\n", ":1: expected \"minbpe v1\""),
            (
                "minbpe v1\n\nx\n",
                ":3: expected the number of special tokens",
            ),
            (
                "minbpe v1\n\n1\n<|a|>\n",
                ":4: expected \"<special token> <id>\"",
            ),
            (
                "minbpe v1\n\n2\n<|a|> 300\n",
                ":5: expected \"<special token> <id>\", found \"\"",
            ),
            (
                "minbpe v1\n\n2\n<|a|> 300",
                ":4: the file ends in the middle of a line (was it truncated?)",
            ),
            (
                "minbpe v1\n\n0\n97 97\n256 9999\n",
                ":5: merge 1 = (256, 9999) uses a token",
            ),
            ("minbpe v1\n\n0\n97 x\n", ":4: expected a merge"),
            (
                "minbpe v1\n\n0\n97 97\n256 25",
                ":5: the file ends in the middle",
            ),
            (
                "minbpe v1\n\n0\n97 97\n256 256\n257 257\n258 258\n259 259\n260 260\n\
                 261 261\n262 262\n263 263\n264 264\n265 265\n266 266\n267 267\n\
                 268 268\n269 269\n270 270\n271 271\n",
                ":20: merge 16 = (271, 271) makes a token of 131072 bytes",
            ),
            (
                "minbpe v1\n",
                "file ends before the number of special tokens",
            ),
        ];
        for (text, want) in cases {
            let err = parse_model(text, "t.model").unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
