//! The regex split that runs before BPE, so that merges never cross a chunk boundary.
//!
//! GPT-2 and GPT-4 cut text into words, numbers, punctuation runs and whitespace runs first;
//! BPE then runs inside each chunk. Both patterns need `fancy-regex`: `\s+(?!\S)` is a
//! look-ahead and `?+`, `++` are possessive, which the `regex` crate rejects.
//!
//! `fancy-regex` runs these patterns on its backtracking VM. For the two known patterns we also
//! have a faster equivalent: drop the look-ahead (the possessive quantifiers change nothing here,
//! see [`Splitter::new`]), run the lookahead-free pattern on `regex-automata`'s DFA anchored at
//! each chunk start, and redo what `\s+(?!\S)` does by hand. Tests check both engines give the
//! same chunks.
//!
//! Text that is not valid UTF-8 is never rejected: the pattern runs over each maximal valid run
//! and every invalid byte is a chunk of its own, so decoding gives back the same bytes.

use regex_automata::meta;
use regex_automata::{Anchored, Input};

use crate::error::{Error, Result};

/// GPT-2's split pattern (minbpe `GPT2_SPLIT_PATTERN`).
pub const GPT2_SPLIT_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// GPT-4's split pattern (minbpe `GPT4_SPLIT_PATTERN`, `cl100k_base`).
pub const GPT4_SPLIT_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

/// nanochat's split pattern (`nanochat/tokenizer.py` `SPLIT_PATTERN`): GPT-4's with numbers cut
/// into runs of at most two digits (`\p{N}{1,2}`), so small vocabularies spend fewer tokens on
/// numbers.
pub const NANOCHAT_SPLIT_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

// The same patterns with `\s+(?!\S)|\s+` replaced by `\s+` and the possessive quantifiers made
// greedy. A possessive `X?+` or `X++` only differs from `X?`/`X+` when backtracking into X could
// help what follows; here what follows (`\p{L}+`, `[\r\n]*`) can never match a character of X.
const GPT2_FAST: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+";
const GPT4_FAST: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+";
const NANOCHAT_FAST: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+";

#[derive(Debug, Clone)]
enum Engine {
    /// Empty pattern: the whole text is one chunk (BasicTokenizer).
    Whole,
    Fancy(Box<fancy_regex::Regex>),
    /// `newline_branch`: the pattern has GPT-4's `\s*[\r\n]` before `\s+(?!\S)`.
    Fast {
        re: Box<meta::Regex>,
        newline_branch: bool,
    },
}

/// A compiled split pattern.
#[derive(Debug, Clone)]
pub struct Splitter {
    pattern: String,
    engine: Engine,
}

/// The error for text at `at` that the split pattern does not match.
fn uncovered(text: &str, at: usize) -> Error {
    let rest: String = text[at..].chars().take(12).collect();
    Error::Regex(format!(
        "the split pattern matches nothing at {rest:?}: encoding it would drop that text \
         (minbpe's findall would), so it is refused"
    ))
}

impl Splitter {
    /// Compiles `pattern`; the empty pattern means "do not split". GPT-2's and GPT-4's patterns
    /// get the fast engine, anything else runs on `fancy-regex`.
    pub fn new(pattern: &str) -> Result<Splitter> {
        let fast = match pattern {
            GPT2_SPLIT_PATTERN => Some((GPT2_FAST, false)),
            GPT4_SPLIT_PATTERN => Some((GPT4_FAST, true)),
            NANOCHAT_SPLIT_PATTERN => Some((NANOCHAT_FAST, true)),
            _ => None,
        };
        match fast {
            Some((fast, newline_branch)) => {
                let re = meta::Regex::new(fast).map_err(|e| Error::Regex(e.to_string()))?;
                Ok(Splitter {
                    pattern: pattern.to_string(),
                    engine: Engine::Fast {
                        re: Box::new(re),
                        newline_branch,
                    },
                })
            }
            None => Splitter::fancy(pattern),
        }
    }

    /// Compiles `pattern` with `fancy-regex` even when a fast engine exists (the reference the
    /// fast engine is tested against).
    pub fn fancy(pattern: &str) -> Result<Splitter> {
        let engine = if pattern.is_empty() {
            Engine::Whole
        } else {
            let re = fancy_regex::Regex::new(pattern)
                .map_err(|e| Error::Regex(format!("{pattern:?}: {e}")))?;
            Engine::Fancy(Box::new(re))
        };
        Ok(Splitter {
            pattern: pattern.to_string(),
            engine,
        })
    }

    /// The pattern this splitter was built from.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Calls `emit` on each chunk of `text`, in order. The chunks are what `re.findall` gives
    /// on each maximal valid UTF-8 run, with every invalid byte a chunk of its own.
    pub fn split<'t>(&self, text: &'t [u8], mut emit: impl FnMut(&'t [u8])) -> Result<()> {
        if let Engine::Whole = self.engine {
            if !text.is_empty() {
                emit(text);
            }
            return Ok(());
        }
        let mut cache = match &self.engine {
            Engine::Fast { re, .. } => Some(re.create_cache()),
            _ => None,
        };
        for run in text.utf8_chunks() {
            let valid = run.valid();
            match &self.engine {
                Engine::Fast { re, newline_branch } => {
                    let cache = cache.as_mut().unwrap();
                    split_fast(re, cache, *newline_branch, valid, &mut emit)
                }
                Engine::Fancy(re) => {
                    // minbpe's `re.findall` drops what no match covers; a pattern
                    // edited into one that skips text would then lose it silently.
                    let mut covered = 0;
                    for m in re.find_iter(valid) {
                        let m = m.map_err(|e| Error::Regex(e.to_string()))?;
                        if m.start() != covered {
                            return Err(uncovered(valid, covered));
                        }
                        covered = m.end();
                        emit(m.as_str().as_bytes());
                    }
                    if covered != valid.len() {
                        return Err(uncovered(valid, covered));
                    }
                }
                Engine::Whole => unreachable!(),
            }
            for i in 0..run.invalid().len() {
                emit(&run.invalid()[i..i + 1]);
            }
        }
        Ok(())
    }

    /// The chunks as a vector (handy in tests and the lecture's demo).
    pub fn chunks<'t>(&self, text: &'t [u8]) -> Result<Vec<&'t [u8]>> {
        let mut out = Vec::new();
        self.split(text, |c| out.push(c))?;
        Ok(out)
    }
}

// ANCHOR: split_fast
fn split_fast<'t>(
    re: &meta::Regex,
    cache: &mut meta::Cache,
    newline_branch: bool,
    s: &'t str,
    emit: &mut impl FnMut(&'t [u8]),
) {
    let mut pos = 0;
    while pos < s.len() {
        let input = Input::new(s).range(pos..).anchored(Anchored::Yes);
        let mut end = match re.search_with(cache, &input) {
            Some(m) if m.end() > pos => m.end(),
            // Every character matches some branch of both patterns; stay safe anyway.
            _ => pos + s[pos..].chars().next().map_or(1, char::len_utf8),
        };
        // Only the final `\s+` branch ends a chunk on whitespace, except GPT-4's `\s*[\r\n]`
        // which ends on a newline (and `\s+` never sees a newline there: that branch would
        // have matched first). Where the original says `\s+(?!\S)`, a run followed by more
        // text leaves its last whitespace character to the next chunk (" world" keeps its
        // space), unless the run is that one character.
        if end < s.len() {
            let last = s[pos..end].chars().next_back().unwrap();
            let newline = last == '\r' || last == '\n';
            if last.is_whitespace() && !(newline_branch && newline) {
                let cut = end - last.len_utf8();
                if cut > pos {
                    end = cut;
                }
            }
        }
        emit(&s.as_bytes()[pos..end]);
        pos = end;
    }
}
// ANCHOR_END: split_fast

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_the_pattern_does_not_match_is_refused_not_dropped() {
        // minbpe's findall would give ["ab", "cd"] and lose " 12 ".
        let sp = Splitter::new("[a-z]+").unwrap();
        let err = sp.chunks(b"ab 12 cd").unwrap_err().to_string();
        assert!(err.contains("matches nothing at \" 12 cd\""), "{err}");
        let err = sp.chunks(b"ab!").unwrap_err().to_string();
        assert!(err.contains("matches nothing at \"!\""), "{err}");
        assert_eq!(strs(&sp, "ab"), ["ab"]);
    }

    fn strs(sp: &Splitter, text: &str) -> Vec<String> {
        sp.chunks(text.as_bytes())
            .unwrap()
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect()
    }

    #[test]
    fn gpt4_pattern_chunks() {
        let sp = Splitter::new(GPT4_SPLIT_PATTERN).unwrap();
        assert_eq!(
            strs(&sp, "hello world!!!? (안녕하세요!) lol123 😉"),
            [
                "hello",
                " world",
                "!!!?",
                " (",
                "안녕하세요",
                "!)",
                " lol",
                "123",
                " 😉"
            ]
        );
        assert_eq!(strs(&sp, "a\n  b  "), ["a", "\n", " ", " b", "  "]);
        assert_eq!(strs(&sp, "!!!?\n\n"), ["!!!?\n\n"]);
    }

    #[test]
    fn gpt2_pattern_chunks() {
        let sp = Splitter::new(GPT2_SPLIT_PATTERN).unwrap();
        assert_eq!(
            strs(&sp, "I'll  go\n\n x"),
            ["I", "'ll", " ", " go", "\n\n", " x"]
        );
    }

    #[test]
    fn fast_and_fancy_agree_on_tricky_whitespace() {
        for pat in [
            GPT2_SPLIT_PATTERN,
            GPT4_SPLIT_PATTERN,
            NANOCHAT_SPLIT_PATTERN,
        ] {
            let fast = Splitter::new(pat).unwrap();
            let fancy = Splitter::fancy(pat).unwrap();
            for text in [
                "",
                " ",
                "  ",
                "a  ",
                " \t\u{3000}x",
                "x \r\n \n y",
                "\u{a0}\u{a0}b",
                "'S 'll 'VE",
                "12345 678",
                "a\u{2028}\u{2028}b",
                "ſ'ſ x",
                "\n\n\n   \n\t z",
                "---\n\nMain",
                "a \r\n\rb",
                " \n",
            ] {
                assert_eq!(
                    fast.chunks(text.as_bytes()).unwrap(),
                    fancy.chunks(text.as_bytes()).unwrap(),
                    "{pat} on {text:?}"
                );
            }
        }
    }

    #[test]
    fn invalid_bytes_are_chunks_of_their_own() {
        let sp = Splitter::new(GPT4_SPLIT_PATTERN).unwrap();
        let text = b"ab\xff\xfe cd\xe2\x82";
        let chunks = sp.chunks(text).unwrap();
        assert_eq!(
            chunks,
            [&b"ab"[..], b"\xff", b"\xfe", b" cd", b"\xe2", b"\x82"]
        );
        assert_eq!(chunks.concat(), text);
    }
}
