//! Property tests: our GPT-4 and GPT-2 encoders equal tiktoken-rs on random text, and the fast
//! split equals fancy-regex's.

mod common;

use std::sync::OnceLock;

use bpe::{
    Gpt2Tokenizer, Gpt4Tokenizer, Splitter, GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN,
    NANOCHAT_SPLIT_PATTERN,
};
use proptest::prelude::*;

fn gpt4() -> &'static Gpt4Tokenizer {
    static T: OnceLock<Gpt4Tokenizer> = OnceLock::new();
    T.get_or_init(|| Gpt4Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}")))
}

fn gpt2() -> &'static Gpt2Tokenizer {
    static T: OnceLock<Gpt2Tokenizer> = OnceLock::new();
    T.get_or_init(|| Gpt2Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}")))
}

/// Random Unicode, whitespace runs, digits, emoji, apostrophes and case, mixed.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "\\PC{0,8}",
        "[ \t\n\r\u{a0}\u{3000}\u{2028}\u{85}]{1,6}",
        "[0-9]{1,7}",
        "[😉👋🏽👨‍👩‍👧🇺🇸❤️\u{fe0f}\u{200d}]{1,4}",
        "'(s|S|ll|LL|ve|re|d|m|t|ſ)?",
        "[a-zA-ZÀ-ÿΣσς한국어日本]{1,6}",
        "[!-/:-@\\[-`{-~]{1,4}",
        any::<char>().prop_map(|c| c.to_string()),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn gpt4_equals_tiktoken(s in text()) {
        let want = tiktoken_rs::cl100k_base_singleton().encode_ordinary(&s);
        prop_assert_eq!(gpt4().encode_ordinary(&s).unwrap(), want);
    }

    #[test]
    fn gpt2_equals_tiktoken(s in text()) {
        let want = tiktoken_rs::r50k_base_singleton().encode_ordinary(&s);
        prop_assert_eq!(gpt2().encode_ordinary(&s).unwrap(), want);
    }

    #[test]
    fn fast_split_equals_fancy_regex(s in text()) {
        for pat in [GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, NANOCHAT_SPLIT_PATTERN] {
            let fast = Splitter::new(pat).unwrap();
            let fancy = Splitter::fancy(pat).unwrap();
            prop_assert_eq!(fast.chunks(s.as_bytes()).unwrap(), fancy.chunks(s.as_bytes()).unwrap());
        }
    }

    #[test]
    fn any_bytes_round_trip(b in prop::collection::vec(any::<u8>(), 0..64)) {
        for tok in [&**gpt4(), &**gpt2()] {
            let ids = tok.encode_ordinary(&b).unwrap();
            prop_assert_eq!(tok.decode_bytes(&ids).unwrap(), b.clone());
        }
    }
}
