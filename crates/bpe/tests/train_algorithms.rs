//! The fast paths against minbpe's plain algorithms: the incremental trainer picks
//! exactly the plain trainer's merges, and the fast encoder gives exactly the ids
//! of the plain encode loop.

mod common;

use bpe::train::{train_incremental, train_plain, MergeRecord};
use bpe::{
    BasicTokenizer, Gpt2Tokenizer, Gpt4Tokenizer, Merges, RegexTokenizer, Result, Splitter,
    GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN,
};
use common::*;
use proptest::prelude::*;

fn both(
    text: &[u8],
    pattern: &str,
    vocab_size: usize,
) -> (Result<Vec<MergeRecord>>, Result<Vec<MergeRecord>>) {
    let chunks = Splitter::new(pattern).unwrap().chunks(text).unwrap();
    (
        train_plain(&chunks, vocab_size),
        train_incremental(&chunks, vocab_size),
    )
}

fn same(text: &[u8], pattern: &str, vocab_size: usize) {
    let (plain, incr) = both(text, pattern, vocab_size);
    let (plain, incr) = (plain.unwrap(), incr.unwrap());
    assert_eq!(plain.len(), vocab_size - 256);
    assert_eq!(incr.len(), plain.len(), "merges with pattern {pattern:?}");
    for (i, (p, q)) in plain.iter().zip(&incr).enumerate() {
        assert_eq!(p, q, "merge {i} with pattern {pattern:?}");
    }
}

#[test]
fn same_merges_on_the_lecture_corpora() {
    let swift = data_text("taylorswift.txt");
    let shakespeare = data_text("tinyshakespeare.txt");
    let names = data_text("names.txt");
    same(swift.as_bytes(), "", 256 + 120);
    same(swift.as_bytes(), GPT4_SPLIT_PATTERN, 256 + 300);
    same(
        &shakespeare.as_bytes()[..200_000],
        GPT2_SPLIT_PATTERN,
        256 + 400,
    );
    same(&shakespeare.as_bytes()[..30_000], "", 256 + 100);
    same(names.as_bytes(), GPT4_SPLIT_PATTERN, 256 + 200);
    // Invalid UTF-8 bytes are chunks of their own and take part like any byte.
    let mut noisy = swift.as_bytes()[..30_000].to_vec();
    for i in (0..noisy.len()).step_by(97) {
        noisy[i] = 0xff;
    }
    same(&noisy, GPT4_SPLIT_PATTERN, 256 + 200);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    // Tiny alphabets make equal counts the rule, so the tie-break decides most merges.
    #[test]
    fn same_merges_on_tie_heavy_text(
        text in "[ab c\n]{0,80}",
        extra in 1usize..40,
        pattern in prop::sample::select(vec!["", GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN]),
    ) {
        let (plain, incr) = both(text.as_bytes(), pattern, 256 + extra);
        match (plain, incr) {
            (Ok(p), Ok(q)) => prop_assert_eq!(p, q),
            (Err(e), Err(f)) => prop_assert_eq!(e.to_string(), f.to_string()),
            (p, q) => prop_assert!(false, "plain {:?} vs incremental {:?}", p.is_ok(), q.is_ok()),
        }
    }
}

/// Every chunk of `text` through minbpe's plain loop, concatenated.
fn encode_plain(merges: &Merges, splitter: Option<&Splitter>, text: &str) -> Vec<u32> {
    match splitter {
        None => merges.encode_plain(text.as_bytes()),
        Some(s) => s
            .chunks(text.as_bytes())
            .unwrap()
            .iter()
            .flat_map(|chunk| merges.encode_plain(chunk))
            .collect(),
    }
}

#[test]
fn fast_encoders_give_the_plain_loops_ids_on_the_lecture_corpora() {
    let swift = data_text("taylorswift.txt");
    let shakespeare = data_text("tinyshakespeare.txt");
    let names = data_text("names.txt");
    // The plain loop recounts every pair after each merge: a slice of each file keeps
    // the Basic tokenizer's single long chunk fast enough for a test.
    let head = |s: &'static str| {
        let mut end = 40_000.min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        &s[..end]
    };
    let (swift, shakespeare, names) = (swift.leak(), shakespeare.leak(), names.leak());
    let corpora = [head(swift), head(shakespeare), head(names)];

    let mut basic = BasicTokenizer::new();
    basic.train(&*swift, 512, false).unwrap();
    let mut regex = RegexTokenizer::new(GPT4_SPLIT_PATTERN).unwrap();
    regex.train(&*swift, 512, false).unwrap();
    let gpt2 = Gpt2Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}"));
    let gpt4 = Gpt4Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}"));
    for text in corpora {
        let fast = basic.encode(text);
        assert_eq!(fast, encode_plain(basic.merges(), None, text), "basic");
        for (name, tok) in [("regex", &regex), ("gpt2", &*gpt2), ("gpt4", &*gpt4)] {
            let fast = tok.encode_ordinary(text).unwrap();
            let plain = encode_plain(tok.merges(), Some(tok.splitter()), text);
            assert_eq!(fast.len(), plain.len(), "{name}");
            assert_eq!(fast, plain, "{name}");
        }
    }
}
