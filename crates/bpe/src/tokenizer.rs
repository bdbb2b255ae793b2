//! minbpe's two trainable tokenizers: [`BasicTokenizer`] (BPE on raw bytes) and
//! [`RegexTokenizer`] (split first, BPE inside each chunk, special tokens).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::merges::Merges;
use crate::model_file::{self, ModelFile};
use crate::split::{Splitter, GPT4_SPLIT_PATTERN};
use crate::train::{self, Algorithm, MergeRecord};

/// Which special tokens `encode` may produce (minbpe's `allowed_special`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AllowedSpecial {
    /// Every registered special token is encoded as its id.
    All,
    /// Special token strings are encoded as ordinary text.
    None,
    /// Like `None`, but a special token string in the text is an error (tiktoken's default).
    #[default]
    NoneRaise,
    /// Only these special tokens are encoded as their ids; the others are ordinary text.
    Set(BTreeSet<String>),
}

impl FromStr for AllowedSpecial {
    type Err = Error;
    fn from_str(s: &str) -> Result<AllowedSpecial> {
        match s {
            "all" => Ok(AllowedSpecial::All),
            "none" => Ok(AllowedSpecial::None),
            "none_raise" => Ok(AllowedSpecial::NoneRaise),
            _ => Err(Error::Invalid(format!(
                "allowed_special={s:?} not understood: use \"all\", \"none\" or \"none_raise\""
            ))),
        }
    }
}

/// Prints merges the way minbpe's `train(verbose=True)` does.
pub fn print_merges(records: &[MergeRecord], merges: &Merges) {
    let n = records.len();
    for (i, r) in records.iter().enumerate() {
        let bytes = merges.token_bytes(r.id).unwrap_or_default();
        println!(
            "merge {}/{n}: ({}, {}) -> {} ({}) had {} occurrences",
            i + 1,
            r.pair.0,
            r.pair.1,
            r.id,
            model_file::py_bytes_repr(bytes),
            r.count
        );
    }
}

fn merges_from(records: &[MergeRecord]) -> Merges {
    let list: Vec<_> = records.iter().map(|r| r.pair).collect();
    Merges::from_list(&list).expect("a trainer only merges tokens that exist")
}

fn decode_with(merges: &Merges, specials: &[(String, u32)], ids: &[u32]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(ids.len() * 4);
    for &id in ids {
        if let Some(bytes) = merges.token_bytes(id) {
            out.extend_from_slice(bytes);
        } else if let Some((s, _)) = specials.iter().find(|(_, i)| *i == id) {
            out.extend_from_slice(s.as_bytes());
        } else {
            return Err(Error::InvalidToken(id));
        }
    }
    Ok(out)
}

/// Byte-level BPE on the raw bytes of the whole text: no split, no special tokens.
#[derive(Debug, Clone, Default)]
pub struct BasicTokenizer {
    merges: Merges,
}

impl BasicTokenizer {
    /// An untrained tokenizer: 256 byte tokens.
    pub fn new() -> BasicTokenizer {
        BasicTokenizer::default()
    }

    /// Learns `vocab_size - 256` merges from `text` (incremental algorithm); with `verbose`,
    /// prints each merge as minbpe does.
    pub fn train(
        &mut self,
        text: impl AsRef<[u8]>,
        vocab_size: usize,
        verbose: bool,
    ) -> Result<Vec<MergeRecord>> {
        let records = self.train_with(text, vocab_size, Algorithm::Incremental)?;
        if verbose {
            print_merges(&records, &self.merges);
        }
        Ok(records)
    }

    /// [`BasicTokenizer::train`] with a chosen algorithm.
    pub fn train_with(
        &mut self,
        text: impl AsRef<[u8]>,
        vocab_size: usize,
        algo: Algorithm,
    ) -> Result<Vec<MergeRecord>> {
        let text = text.as_ref();
        let chunks: &[&[u8]] = if text.is_empty() { &[] } else { &[text] };
        let records = train::train(chunks, vocab_size, algo)?;
        self.merges = merges_from(&records);
        Ok(records)
    }

    /// The learned merges.
    pub fn merges(&self) -> &Merges {
        &self.merges
    }

    /// Token ids of `text`.
    pub fn encode(&self, text: impl AsRef<[u8]>) -> Vec<u32> {
        let mut out = Vec::new();
        self.merges
            .encode_chunk(text.as_ref(), &mut out, &mut Vec::new());
        out
    }

    /// The bytes of `ids`.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        decode_with(&self.merges, &[], ids)
    }

    /// The text of `ids`, invalid UTF-8 replaced by U+FFFD (Python's `errors="replace"`).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.decode_bytes(ids)?).into_owned())
    }

    /// Writes `PREFIX.model` and `PREFIX.vocab` in minbpe's format; returns their paths.
    pub fn save(&self, prefix: impl AsRef<Path>) -> Result<(PathBuf, PathBuf)> {
        model_file::save(prefix.as_ref(), "", &[], &self.merges)
    }

    /// Loads a `.model` file written by [`BasicTokenizer::save`] or minbpe's Python.
    pub fn load(path: impl AsRef<Path>) -> Result<BasicTokenizer> {
        let path = path.as_ref();
        let m = model_file::load(path)?;
        if !m.pattern.is_empty() || !m.special_tokens.is_empty() {
            return Err(Error::format(
                path.display(),
                2,
                "this model has a split pattern or special tokens: load it as a RegexTokenizer",
            ));
        }
        Ok(BasicTokenizer { merges: m.merges })
    }
}

/// BPE inside the chunks of a split pattern, plus special tokens.
#[derive(Debug, Clone)]
pub struct RegexTokenizer {
    merges: Merges,
    splitter: Splitter,
    special_tokens: Vec<(String, u32)>,
}

impl Default for RegexTokenizer {
    /// minbpe's default: the GPT-4 pattern.
    fn default() -> Self {
        RegexTokenizer::new(GPT4_SPLIT_PATTERN).expect("the GPT-4 pattern compiles")
    }
}

impl RegexTokenizer {
    /// An untrained tokenizer with this split pattern (`""` means no split).
    pub fn new(pattern: &str) -> Result<RegexTokenizer> {
        Ok(RegexTokenizer {
            merges: Merges::bytes_only(),
            splitter: Splitter::new(pattern)?,
            special_tokens: Vec::new(),
        })
    }

    /// A tokenizer from a pattern and ready-made merges (GPT-2, GPT-4, a loaded model).
    pub fn from_parts(pattern: &str, merges: Merges) -> Result<RegexTokenizer> {
        Ok(RegexTokenizer {
            merges,
            splitter: Splitter::new(pattern)?,
            special_tokens: Vec::new(),
        })
    }

    /// The split pattern.
    pub fn pattern(&self) -> &str {
        self.splitter.pattern()
    }

    /// The splitter.
    pub fn splitter(&self) -> &Splitter {
        &self.splitter
    }

    /// The merges and vocabulary.
    pub fn merges(&self) -> &Merges {
        &self.merges
    }

    /// Registered special tokens, in registration order.
    pub fn special_tokens(&self) -> &[(String, u32)] {
        &self.special_tokens
    }

    /// Learns `vocab_size - 256` merges from `text`, never across chunks (incremental algorithm).
    pub fn train(
        &mut self,
        text: impl AsRef<[u8]>,
        vocab_size: usize,
        verbose: bool,
    ) -> Result<Vec<MergeRecord>> {
        let records = self.train_with(text, vocab_size, Algorithm::Incremental)?;
        if verbose {
            print_merges(&records, &self.merges);
        }
        Ok(records)
    }

    /// [`RegexTokenizer::train`] with a chosen algorithm.
    pub fn train_with(
        &mut self,
        text: impl AsRef<[u8]>,
        vocab_size: usize,
        algo: Algorithm,
    ) -> Result<Vec<MergeRecord>> {
        let chunks = self.splitter.chunks(text.as_ref())?;
        let records = train::train(&chunks, vocab_size, algo)?;
        let merges = merges_from(&records);
        check_specials(&merges, &self.special_tokens)?;
        self.merges = merges;
        Ok(records)
    }

    /// Registers special tokens (string, id), e.g. `("<|endoftext|>", 100257)`. Replaces any
    /// earlier registration, as minbpe does. Ids must not collide with the vocabulary.
    pub fn register_special_tokens(&mut self, specials: &[(&str, u32)]) -> Result<()> {
        let specials: Vec<(String, u32)> =
            specials.iter().map(|&(s, i)| (s.to_string(), i)).collect();
        check_specials(&self.merges, &specials)?;
        self.special_tokens = specials;
        Ok(())
    }

    // ANCHOR: encode_ordinary
    /// Encodes `text` ignoring special tokens: split, then BPE each chunk.
    pub fn encode_ordinary(&self, text: impl AsRef<[u8]>) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        self.splitter.split(text.as_ref(), |chunk| {
            self.merges.encode_chunk(chunk, &mut out, &mut scratch)
        })?;
        Ok(out)
    }
    // ANCHOR_END: encode_ordinary

    // ANCHOR: encode
    /// Encodes `text`, turning the allowed special tokens into their ids.
    ///
    /// Like minbpe's `re.split` on the escaped specials, the leftmost occurrence of any allowed
    /// special token wins, and at one position the token registered first wins.
    pub fn encode(&self, text: impl AsRef<[u8]>, allowed: &AllowedSpecial) -> Result<Vec<u32>> {
        let text = text.as_ref();
        let special: Vec<&(String, u32)> = match allowed {
            AllowedSpecial::All => self.special_tokens.iter().collect(),
            AllowedSpecial::None => Vec::new(),
            AllowedSpecial::NoneRaise => {
                if let Some((s, _)) = self
                    .special_tokens
                    .iter()
                    .find(|(s, _)| find(text, s.as_bytes(), 0).is_some())
                {
                    return Err(Error::DisallowedSpecial(s.clone()));
                }
                Vec::new()
            }
            AllowedSpecial::Set(set) => self
                .special_tokens
                .iter()
                .filter(|(s, _)| set.contains(s))
                .collect(),
        };
        if special.is_empty() {
            return self.encode_ordinary(text);
        }
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        // Next occurrence of each special token at or after `pos` (None: no more).
        let mut next: Vec<Option<usize>> = special
            .iter()
            .map(|(s, _)| find(text, s.as_bytes(), 0))
            .collect();
        let mut pos = 0;
        loop {
            let mut best: Option<(usize, usize)> = None; // (start, which special)
            for (k, at) in next.iter().enumerate() {
                if let Some(at) = *at {
                    if best.is_none_or(|(b, _)| at < b) {
                        best = Some((at, k));
                    }
                }
            }
            let end = best.map_or(text.len(), |(at, _)| at);
            self.splitter.split(&text[pos..end], |chunk| {
                self.merges.encode_chunk(chunk, &mut out, &mut scratch)
            })?;
            let Some((at, k)) = best else { break };
            out.push(special[k].1);
            pos = at + special[k].0.len();
            for (j, n) in next.iter_mut().enumerate() {
                if n.is_some_and(|n| n < pos) {
                    *n = find(text, special[j].0.as_bytes(), pos);
                }
            }
        }
        Ok(out)
    }
    // ANCHOR_END: encode

    /// The bytes of `ids`; special tokens decode to their strings.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        decode_with(&self.merges, &self.special_tokens, ids)
    }

    /// The text of `ids`, invalid UTF-8 replaced by U+FFFD (Python's `errors="replace"`).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.decode_bytes(ids)?).into_owned())
    }

    /// Writes `PREFIX.model` and `PREFIX.vocab` in minbpe's format; returns their paths.
    pub fn save(&self, prefix: impl AsRef<Path>) -> Result<(PathBuf, PathBuf)> {
        model_file::save(
            prefix.as_ref(),
            self.pattern(),
            &self.special_tokens,
            &self.merges,
        )
    }

    /// Loads a `.model` file written by [`RegexTokenizer::save`] or minbpe's Python. The
    /// pattern comes from the file (an empty one means no split).
    pub fn load(path: impl AsRef<Path>) -> Result<RegexTokenizer> {
        let path = path.as_ref();
        let m = model_file::load(path)?;
        // A pattern that does not compile or a special token's id clash: name the file.
        RegexTokenizer::from_model_file(m).map_err(|e| match e {
            Error::Regex(msg) | Error::Invalid(msg) => Error::format(path.display(), 0, msg),
            other => other,
        })
    }

    /// A tokenizer from a parsed model file.
    pub fn from_model_file(m: ModelFile) -> Result<RegexTokenizer> {
        let mut t = RegexTokenizer::from_parts(&m.pattern, m.merges)?;
        let specials: Vec<(&str, u32)> = m
            .special_tokens
            .iter()
            .map(|(s, i)| (s.as_str(), *i))
            .collect();
        t.register_special_tokens(&specials)?;
        Ok(t)
    }
}

fn check_specials(merges: &Merges, specials: &[(String, u32)]) -> Result<()> {
    for (i, (s, id)) in specials.iter().enumerate() {
        if s.is_empty() {
            return Err(Error::Invalid("a special token cannot be empty".into()));
        }
        if (*id as usize) < merges.vocab_size() {
            return Err(Error::Invalid(format!(
                "special token {s:?} has id {id}, which the vocabulary already uses \
                 (ids below {} are taken)",
                merges.vocab_size()
            )));
        }
        if specials[..i].iter().any(|(t, j)| t == s || j == id) {
            return Err(Error::Invalid(format!(
                "special token {s:?} / id {id} is registered twice"
            )));
        }
    }
    Ok(())
}

/// First occurrence of `needle` in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let j = i + hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&b| b == first)?;
        if hay[j..].starts_with(needle) {
            return Some(j);
        }
        i = j + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_substrings() {
        assert_eq!(find(b"abcabc", b"ca", 0), Some(2));
        assert_eq!(find(b"abcabc", b"abc", 1), Some(3));
        assert_eq!(find(b"abc", b"abcd", 0), None);
        assert_eq!(find(b"ab", b"b", 2), None);
    }

    #[test]
    fn specials_leftmost_then_first_registered() {
        let mut t = RegexTokenizer::default();
        t.register_special_tokens(&[("<|a|>", 1000), ("<|a", 1001), ("b", 1002)])
            .unwrap();
        let ids = t.encode("x<|a|>b<|a", &AllowedSpecial::All).unwrap();
        assert_eq!(ids, vec![b'x' as u32, 1000, 1002, 1001]);
        let set = AllowedSpecial::Set(["b".to_string()].into());
        let ids = t.encode("<|a|>b", &set).unwrap();
        assert_eq!(*ids.last().unwrap(), 1002);
        assert!(matches!(
            t.encode("hello b", &AllowedSpecial::NoneRaise),
            Err(Error::DisallowedSpecial(s)) if s == "b"
        ));
        assert_eq!(
            t.encode("<|a|>", &AllowedSpecial::None).unwrap(),
            t.encode_ordinary("<|a|>").unwrap()
        );
    }

    #[test]
    fn special_ids_must_not_collide() {
        let mut t = RegexTokenizer::default();
        assert!(t.register_special_tokens(&[("<|x|>", 10)]).is_err());
        assert!(t
            .register_special_tokens(&[("<|x|>", 300), ("<|y|>", 300)])
            .is_err());
    }

    #[test]
    fn decode_rejects_unknown_ids() {
        let t = RegexTokenizer::default();
        assert!(matches!(
            t.decode(&[65, 999]),
            Err(Error::InvalidToken(999))
        ));
    }
}
