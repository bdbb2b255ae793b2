//! A text file read as Python's `open(path, 'r').read()` reads it: UTF-8, and
//! universal newlines, which turn `\r\n` and a lone `\r` into `\n`.
//!
//! makemore.py and nanoGPT's `prepare.py` both read their input this way, so
//! a file written on Windows gives them the same characters as on Linux. A
//! byte-order mark is not removed (that is `utf-8-sig`): it stays a character.

use std::path::Path;

/// `bytes` as UTF-8, or an error naming `name`, the line and the byte offset of
/// the first byte that is not.
pub fn decode_utf8<'a>(bytes: &'a [u8], name: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
        format!(
            "{name}: not UTF-8 text: line {line}, byte offset {at} (0x{:02x})",
            bytes[at]
        )
    })
}

/// Universal newlines: `\r\n` and a lone `\r` become `\n`.
pub fn universal_newlines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            chars.next_if_eq(&'\n');
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// The file's text as Python's `open(path, 'r').read()` returns it, with
/// errors naming the file: unreadable, a folder, or not UTF-8.
pub fn read(path: &Path) -> Result<String, String> {
    if path.is_dir() {
        return Err(format!(
            "input file {} is a folder; give a text file",
            path.display()
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read input file {}: {e}", path.display()))?;
    let text = decode_utf8(&bytes, &format!("input file {}", path.display()))?;
    Ok(universal_newlines(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_lone_cr_become_newlines() {
        assert_eq!(universal_newlines("a\r\nb\rc\n\r\r\nd"), "a\nb\nc\n\n\nd");
        assert_eq!(universal_newlines("\u{feff}é\r"), "\u{feff}é\n");
    }

    #[test]
    fn bad_utf8_names_line_and_offset() {
        let err = decode_utf8(b"ab\ncd\n\xe9x", "input file t.txt").unwrap_err();
        assert_eq!(
            err,
            "input file t.txt: not UTF-8 text: line 3, byte offset 6 (0xe9)"
        );
    }
}
