//! OpenAI's pretrained tokenizers, rebuilt as merge lists: GPT-4 (`cl100k_base`) and GPT-2
//! (`r50k_base`, and the original `encoder.json` + `vocab.bpe`).
//!
//! A `.tiktoken` file lists `base64(token bytes) rank`. It stores merged tokens, not merges:
//! [`recover_merges`] finds the pair each token was built from by running BPE on its bytes with
//! only the lower ranks allowed (minbpe `gpt4.py`); the two parts left are the pair.
//!
//! Both vocabularies number their 256 byte tokens in their own order (`!` is 0 in GPT-2), so a
//! byte `b` enters encoding as token `rank(bytes([b]))`: minbpe's `byte_shuffle`.
//!
//! GPT-2's original files use another disguise: `encoder.py` maps every byte to a printable
//! character (`bytes_to_unicode`) so that tokens are JSON strings, and `vocab.bpe` lists the
//! merges as pairs of such strings.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::Path;

use crate::data;
use crate::error::{Error, Result};
use crate::merges::{FastMap, Merges, Pair};
use crate::split::{GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN};
use crate::tokenizer::RegexTokenizer;

/// GPT-4's special tokens (`cl100k_base`).
pub const GPT4_SPECIAL_TOKENS: [(&str, u32); 5] = [
    ("<|endoftext|>", 100257),
    ("<|fim_prefix|>", 100258),
    ("<|fim_middle|>", 100259),
    ("<|fim_suffix|>", 100260),
    ("<|endofprompt|>", 100276),
];

/// GPT-2's one special token.
pub const GPT2_SPECIAL_TOKENS: [(&str, u32); 1] = [("<|endoftext|>", 50256)];

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// Standard base64 with padding, as `.tiktoken` files use.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let s = s.as_bytes();
    if s.is_empty() || !s.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (q, quad) in s.chunks(4).enumerate() {
        let last = q + 1 == s.len() / 4;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = n << 6 | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// Parses a `.tiktoken` file into tokens indexed by rank; ranks must be 0, 1, 2, ... with no gap.
pub fn parse_tiktoken(text: &str, name: &str) -> Result<Vec<Vec<u8>>> {
    // tiktoken's files end every line with "\n": without one the last line was cut.
    if !text.ends_with('\n') {
        return Err(Error::format(
            name,
            text.lines().count(),
            "the file ends in the middle of a line (was it truncated?)".to_string(),
        ));
    }
    let mut by_rank: Vec<Option<Vec<u8>>> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let bad = |msg: String| Error::format(name, i + 1, msg);
        let (tok, rank) = line.split_once(' ').ok_or_else(|| {
            bad(format!(
                "expected \"<base64 token> <rank>\", found {line:?}"
            ))
        })?;
        let bytes = base64_decode(tok).ok_or_else(|| bad(format!("bad base64 {tok:?}")))?;
        if bytes.len() > crate::merges::MAX_TOKEN_BYTES {
            return Err(bad(format!(
                "a token of {} bytes, past the limit of {}",
                bytes.len(),
                crate::merges::MAX_TOKEN_BYTES
            )));
        }
        let rank: usize = rank
            .parse()
            .map_err(|_| bad(format!("bad rank {rank:?}")))?;
        if rank > 10_000_000 {
            return Err(bad(format!("rank {rank} is implausibly large")));
        }
        if by_rank.len() <= rank {
            by_rank.resize(rank + 1, None);
        }
        if by_rank[rank].replace(bytes).is_some() {
            return Err(bad(format!("rank {rank} appears twice")));
        }
    }
    by_rank
        .into_iter()
        .enumerate()
        .map(|(r, t)| t.ok_or_else(|| Error::format(name, 0, format!("rank {r} is missing"))))
        .collect()
}

// ANCHOR: recover_merges
/// Rebuilds the merge list from tokens ordered by rank (minbpe `recover_merges`).
///
/// The 256 single bytes must hold ranks 0..256 (in any order); token `r >= 256` must then be
/// the merge of exactly two lower-ranked tokens, which a BPE on its bytes that may only use
/// ranks below `r` reveals.
pub fn recover_merges(by_rank: &[Vec<u8>], name: &str) -> Result<Merges> {
    let mut byte_ids = [u32::MAX; 256];
    for (r, tok) in by_rank.iter().enumerate().take(256) {
        if tok.len() != 1 {
            return Err(Error::format(
                name,
                0,
                format!("rank {r} should be a single byte (the first 256 ranks are the bytes)"),
            ));
        }
        byte_ids[tok[0] as usize] = r as u32;
    }
    if by_rank.len() < 256 || byte_ids.contains(&u32::MAX) {
        return Err(Error::format(name, 0, "not every byte has a rank"));
    }
    let mut rank: FastMap<&[u8], u32> = FastMap::default();
    for (r, tok) in by_rank.iter().enumerate() {
        if rank.insert(tok.as_slice(), r as u32).is_some() {
            return Err(Error::format(
                name,
                0,
                format!("token {tok:?} appears twice"),
            ));
        }
    }
    let mut list: Vec<Pair> = Vec::with_capacity(by_rank.len() - 256);
    let mut parts: Vec<(usize, usize)> = Vec::new();
    for (r, tok) in by_rank.iter().enumerate().skip(256) {
        // BPE on the token's bytes with ranks below r; parts are byte ranges of the token.
        parts.clear();
        parts.extend((0..tok.len()).map(|i| (i, i + 1)));
        loop {
            let mut best: Option<(u32, usize)> = None;
            for i in 0..parts.len().saturating_sub(1) {
                let joined = &tok[parts[i].0..parts[i + 1].1];
                if let Some(&pr) = rank.get(joined) {
                    if pr < r as u32 && best.is_none_or(|(b, _)| pr < b) {
                        best = Some((pr, i));
                    }
                }
            }
            let Some((_, i)) = best else { break };
            parts[i].1 = parts[i + 1].1;
            parts.remove(i + 1);
        }
        if parts.len() != 2 {
            return Err(Error::format(
                name,
                0,
                format!("token of rank {r} ({tok:?}) is not the merge of two lower-ranked tokens"),
            ));
        }
        let a = rank[&tok[parts[0].0..parts[0].1]];
        let b = rank[&tok[parts[1].0..parts[1].1]];
        list.push((a, b));
    }
    let mut merges = Merges::with_byte_ids(&list, byte_ids)
        .map_err(|e| Error::format(name, 0, e.to_string()))?;
    merges.enable_whole_lookup();
    Ok(merges)
}
// ANCHOR_END: recover_merges

// ANCHOR: bytes_to_unicode
/// GPT-2's `bytes_to_unicode`: printable bytes stand for themselves, the other 68 bytes are
/// moved to U+0100 and up, in byte order. (The space becomes `Ġ`, U+0120.)
pub fn bytes_to_unicode() -> [char; 256] {
    let printable = |b: u32| {
        (b'!' as u32..=b'~' as u32).contains(&b)
            || (0xa1..=0xac).contains(&b)
            || (0xae..=0xff).contains(&b)
    };
    let mut map = ['\0'; 256];
    let mut n = 0;
    for b in 0..256u32 {
        map[b as usize] = if printable(b) {
            char::from_u32(b).unwrap()
        } else {
            n += 1;
            char::from_u32(256 + n - 1).unwrap()
        };
    }
    map
}
// ANCHOR_END: bytes_to_unicode

/// GPT-2 from OpenAI's original `encoder.json` (token string -> id) and `vocab.bpe` (merges).
pub fn gpt2_merges_from_encoder(encoder_json: &str, vocab_bpe: &str) -> Result<Merges> {
    merges_from_encoder_files(encoder_json, "encoder.json", vocab_bpe, "vocab.bpe")
}

/// [`gpt2_merges_from_encoder`], its errors naming the files `ej` and `vb`.
fn merges_from_encoder_files(
    encoder_json: &str,
    ej: &str,
    vocab_bpe: &str,
    vb: &str,
) -> Result<Merges> {
    let encoder: HashMap<String, u32> = serde_json::from_str(encoder_json)
        .map_err(|e| Error::format(ej, e.line(), format!("not a JSON object of ids: {e}")))?;
    let b2u = bytes_to_unicode();
    let mut u2b: HashMap<char, u8> = HashMap::new();
    for (b, &c) in b2u.iter().enumerate() {
        u2b.insert(c, b as u8);
    }
    let mut byte_ids = [0u32; 256];
    for (b, c) in b2u.iter().enumerate() {
        byte_ids[b] = *encoder
            .get(&c.to_string())
            .ok_or_else(|| Error::format(ej, 0, format!("no token for byte {b} ({c:?})")))?;
    }
    let mut list = Vec::new();
    for (i, line) in vocab_bpe.lines().enumerate() {
        if i == 0 && line.starts_with("#version") || line.trim().is_empty() {
            continue;
        }
        let bad = |msg: String| Error::format(vb, i + 1, msg);
        let (a, b) = line
            .split_once(' ')
            .ok_or_else(|| bad(format!("expected \"<token> <token>\", found {line:?}")))?;
        let id = |s: &str| {
            encoder
                .get(s)
                .copied()
                .ok_or_else(|| bad(format!("{s:?} is not in encoder.json")))
        };
        let (ia, ib, ic) = (id(a)?, id(b)?, id(&format!("{a}{b}"))?);
        let want = 256 + list.len() as u32;
        if ic != want {
            return Err(bad(format!(
                "merge {} makes {a}{b:?} = id {ic}, expected id {want} (merge order)",
                list.len()
            )));
        }
        list.push((ia, ib));
    }
    let mut merges =
        Merges::with_byte_ids(&list, byte_ids).map_err(|e| Error::format(vb, 0, e.to_string()))?;
    // Every token of encoder.json must be what the merges build.
    for (s, &id) in &encoder {
        if GPT2_SPECIAL_TOKENS.iter().any(|(t, _)| t == s) {
            continue;
        }
        let bytes: Option<Vec<u8>> = s.chars().map(|c| u2b.get(&c).copied()).collect();
        if bytes.as_deref() != merges.token_bytes(id) {
            return Err(Error::format(
                ej,
                0,
                format!("token {s:?} = {id} does not match the merges of vocab.bpe"),
            ));
        }
    }
    merges.enable_whole_lookup();
    Ok(merges)
}

macro_rules! pretrained {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone)]
        pub struct $name(RegexTokenizer);

        impl Deref for $name {
            type Target = RegexTokenizer;
            fn deref(&self) -> &RegexTokenizer {
                &self.0
            }
        }

        impl $name {
            /// The underlying [`RegexTokenizer`].
            pub fn into_inner(self) -> RegexTokenizer {
                self.0
            }
        }
    };
}

pretrained!(
    Gpt4Tokenizer,
    "GPT-4's tokenizer (`cl100k_base`): encodes and decodes exactly as tiktoken does."
);
pretrained!(
    Gpt2Tokenizer,
    "GPT-2's tokenizer (`r50k_base`, a.k.a. `gpt2`): encodes and decodes exactly as tiktoken does."
);

/// The merges of the `.tiktoken` file at `path`, which must hold exactly
/// `ranks` tokens (the encoding's size, its special tokens aside): a file cut
/// at a line's end parses, and only its length tells.
fn read_tiktoken_merges(path: &Path, ranks: usize) -> Result<(Merges, String)> {
    let name = path.display().to_string();
    let by_rank = parse_tiktoken(&read(path)?, &name)?;
    if by_rank.len() != ranks {
        return Err(Error::format(
            &name,
            0,
            format!(
                "it holds {} tokens, but this encoding has {ranks} (was it truncated?)",
                by_rank.len()
            ),
        ));
    }
    Ok((recover_merges(&by_rank, &name)?, name))
}

fn build(pattern: &str, merges: Merges, specials: &[(&str, u32)]) -> Result<RegexTokenizer> {
    let mut t = RegexTokenizer::from_parts(pattern, merges)?;
    t.register_special_tokens(specials)?;
    Ok(t)
}

impl Gpt4Tokenizer {
    /// From a `cl100k_base.tiktoken` file.
    pub fn from_tiktoken_file(path: impl AsRef<Path>) -> Result<Gpt4Tokenizer> {
        let (merges, name) = read_tiktoken_merges(path.as_ref(), 100_256)?;
        build(GPT4_SPLIT_PATTERN, merges, &GPT4_SPECIAL_TOKENS)
            .map(Gpt4Tokenizer)
            .map_err(|e| Error::format(&name, 0, e.to_string()))
    }

    /// From `$ZTH_DATA/tokenizers/cl100k_base.tiktoken`.
    pub fn from_data_dir() -> Result<Gpt4Tokenizer> {
        Gpt4Tokenizer::from_tiktoken_file(data::path("tokenizers/cl100k_base.tiktoken")?)
    }
}

impl Gpt2Tokenizer {
    /// From an `r50k_base.tiktoken` file.
    pub fn from_tiktoken_file(path: impl AsRef<Path>) -> Result<Gpt2Tokenizer> {
        let (merges, name) = read_tiktoken_merges(path.as_ref(), 50_256)?;
        build(GPT2_SPLIT_PATTERN, merges, &GPT2_SPECIAL_TOKENS)
            .map(Gpt2Tokenizer)
            .map_err(|e| Error::format(&name, 0, e.to_string()))
    }

    /// From OpenAI's original `encoder.json` and `vocab.bpe`.
    pub fn from_encoder_files(
        encoder_json: impl AsRef<Path>,
        vocab_bpe: impl AsRef<Path>,
    ) -> Result<Gpt2Tokenizer> {
        let (ej, vb) = (encoder_json.as_ref(), vocab_bpe.as_ref());
        let merges = merges_from_encoder_files(
            &read(ej)?,
            &ej.display().to_string(),
            &read(vb)?,
            &vb.display().to_string(),
        )?;
        Ok(Gpt2Tokenizer(build(
            GPT2_SPLIT_PATTERN,
            merges,
            &GPT2_SPECIAL_TOKENS,
        )?))
    }

    /// From `$ZTH_DATA/tokenizers/r50k_base.tiktoken`.
    pub fn from_data_dir() -> Result<Gpt2Tokenizer> {
        Gpt2Tokenizer::from_tiktoken_file(data::path("tokenizers/r50k_base.tiktoken")?)
    }

    /// From `$ZTH_DATA/tokenizers/encoder.json` and `vocab.bpe`.
    pub fn from_data_dir_encoder() -> Result<Gpt2Tokenizer> {
        Gpt2Tokenizer::from_encoder_files(
            data::path("tokenizers/encoder.json")?,
            data::path("tokenizers/vocab.bpe")?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_known_values() {
        assert_eq!(base64_decode("IQ==").unwrap(), b"!");
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("IGhlbGxv").unwrap(), b" hello");
        assert!(base64_decode("a=bc").is_none());
        assert!(base64_decode("abc").is_none());
    }

    #[test]
    fn bytes_to_unicode_matches_encoder_py() {
        let m = bytes_to_unicode();
        assert_eq!(m[b'!' as usize], '!');
        assert_eq!(m[b' ' as usize], 'Ġ');
        assert_eq!(m[b'\n' as usize], 'Ċ');
        assert_eq!(m[0], 'Ā');
        assert_eq!(m[0xad], 'Ń'); // the 68th moved byte: U+0100 + 67
    }

    #[test]
    fn recover_merges_on_a_toy_vocabulary() {
        let mut by_rank: Vec<Vec<u8>> = (0..=255u8).rev().map(|b| vec![b]).collect();
        by_rank.push(b"ab".to_vec()); // 256
        by_rank.push(b"abc".to_vec()); // 257: ab + c
        by_rank.push(b"cab".to_vec()); // 258: c + ab
        let m = recover_merges(&by_rank, "toy").unwrap();
        let (a, b, c) = (255 - 97, 255 - 98, 255 - 99);
        assert_eq!(m.list(), &[(a, b), (256, c), (c, 256)]);
        by_rank.push(b"xyz".to_vec()); // no "xy" or "yz": cannot be a merge
        let err = recover_merges(&by_rank, "toy").unwrap_err().to_string();
        assert!(err.contains("rank 259"), "{err}");
    }

    #[test]
    fn malformed_tiktoken_files() {
        assert!(parse_tiktoken("IQ== 0\nIQ== x\n", "f")
            .unwrap_err()
            .to_string()
            .contains("f:2: bad rank"));
        assert!(parse_tiktoken("IQ== 1\n", "f")
            .unwrap_err()
            .to_string()
            .contains("rank 0 is missing"));
        assert!(parse_tiktoken("I 0\n", "f")
            .unwrap_err()
            .to_string()
            .contains("bad base64"));
    }
}
