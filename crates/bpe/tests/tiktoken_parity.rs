//! GPT-4 and GPT-2 against tiktoken: Python tiktoken's ids (fixtures) and tiktoken-rs (offline).

mod common;

use std::sync::OnceLock;

use bpe::{AllowedSpecial, Gpt2Tokenizer, Gpt4Tokenizer};
use common::*;

fn gpt4() -> &'static Gpt4Tokenizer {
    static T: OnceLock<Gpt4Tokenizer> = OnceLock::new();
    T.get_or_init(|| Gpt4Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}")))
}

fn gpt2() -> &'static Gpt2Tokenizer {
    static T: OnceLock<Gpt2Tokenizer> = OnceLock::new();
    T.get_or_init(|| Gpt2Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn minbpe_readme_examples() {
    let ids = gpt4()
        .encode("hello123!!!? (안녕하세요!) 😉", &AllowedSpecial::NoneRaise)
        .unwrap();
    assert_eq!(
        ids,
        [15339, 4513, 12340, 30, 320, 31495, 230, 75265, 243, 92245, 16715, 57037]
    );
    let ids = gpt4()
        .encode("<|endoftext|>hello world", &AllowedSpecial::All)
        .unwrap();
    assert_eq!(ids, [100257, 15339, 1917]);
    assert_eq!(gpt4().decode(&ids).unwrap(), "<|endoftext|>hello world");
    assert!(gpt4()
        .encode("<|endoftext|>hello world", &AllowedSpecial::NoneRaise)
        .is_err());
}

#[test]
fn the_string_a_public_port_got_wrong() {
    // minbpe-rs's proptest found "\u{1e01b}%SΣ" differing from tiktoken.
    let text = "\u{1e01b}%SΣ";
    let want = tiktoken_rs::cl100k_base_singleton().encode_ordinary(text);
    assert_eq!(gpt4().encode_ordinary(text).unwrap(), want);
    assert_eq!(gpt4().decode(&want).unwrap(), text);
    let fx = fixture_json("tiktoken_cases.json");
    let case = fx["cl100k_base"]["strings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["text"] == text)
        .unwrap();
    assert_eq!(want, ids(&case["ids"]));
}

fn check_strings(name: &str, tok: &bpe::RegexTokenizer, oracle: &tiktoken_rs::CoreBPE) {
    let fx = fixture_json("tiktoken_cases.json");
    let enc = &fx[name];
    for case in enc["strings"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let got = tok.encode(text, &AllowedSpecial::None).unwrap();
        assert_eq!(
            got,
            ids(&case["ids"]),
            "{name}: {text:?} vs Python tiktoken"
        );
        assert_eq!(
            got,
            oracle.encode_ordinary(text),
            "{name}: {text:?} vs tiktoken-rs"
        );
        assert_eq!(tok.decode(&got).unwrap(), text);
    }
    let text = enc["specials"]["text"].as_str().unwrap();
    let got = tok.encode(text, &AllowedSpecial::All).unwrap();
    assert_eq!(got, ids(&enc["specials"]["ids"]), "{name}: specials");
    assert_eq!(got, oracle.encode_with_special_tokens(text));
    assert_eq!(tok.decode(&got).unwrap(), text);
}

#[test]
fn gpt4_test_strings_and_specials() {
    check_strings("cl100k_base", gpt4(), tiktoken_rs::cl100k_base_singleton());
}

#[test]
fn gpt2_test_strings_and_specials() {
    check_strings("r50k_base", gpt2(), tiktoken_rs::r50k_base_singleton());
}

#[test]
fn whole_files_match_python_tiktoken() {
    let fx = fixture_json("tiktoken_cases.json");
    for (name, tok) in [("cl100k_base", &**gpt4()), ("r50k_base", &**gpt2())] {
        for file in ["taylorswift.txt", "tinyshakespeare.txt"] {
            let text = data_text(file);
            let got = tok.encode(&text, &AllowedSpecial::None).unwrap();
            let want = &fx[name]["files"][file];
            let (len, sha) = fingerprint(&got);
            assert_eq!(len as u64, want["len"].as_u64().unwrap(), "{name} {file}");
            assert_eq!(sha, want["sha256"].as_str().unwrap(), "{name} {file}");
            assert_eq!(tok.decode(&got).unwrap(), text);
        }
    }
}

#[test]
fn gpt2_from_encoder_json_equals_gpt2_from_r50k() {
    let original = Gpt2Tokenizer::from_data_dir_encoder().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (original.merges(), gpt2().merges());
    assert_eq!(a.list().len(), 50_000);
    assert_eq!(a.list(), b.list());
    assert_eq!(a.byte_ids(), b.byte_ids());
    assert_eq!(a.vocab_size(), 50_256);
    for id in 0..a.vocab_size() as u32 {
        assert_eq!(a.token_bytes(id), b.token_bytes(id), "token {id}");
    }
    // `!` is GPT-2's token 0, and the space is 220 ("Ġ").
    assert_eq!(a.byte_ids()[b'!' as usize], 0);
    assert_eq!(a.byte_ids()[b' ' as usize], 220);
    let text = "GPT-2 was released in 2019.<|endoftext|> Ġ";
    assert_eq!(
        original.encode(text, &AllowedSpecial::All).unwrap(),
        gpt2().encode(text, &AllowedSpecial::All).unwrap()
    );
}

#[test]
fn gpt4_has_100k_merges_and_its_byte_permutation() {
    let m = gpt4().merges();
    assert_eq!(m.list().len(), 100_000);
    // cl100k numbers the printable bytes first: '!' is 0, 'a' is 64, ' ' is 220.
    assert_eq!(m.byte_ids()[b'!' as usize], 0);
    assert_eq!(m.byte_ids()[b'a' as usize], 64);
    assert_eq!(m.byte_ids()[b' ' as usize], 220);
    assert!(gpt4().save(std::env::temp_dir().join("gpt4")).is_err());
}

#[test]
fn invalid_utf8_round_trips() {
    let text: &[u8] = b"caf\xc3\xa9 \xff\xfe broken \xe2\x82 end\xf0\x9f";
    for tok in [&**gpt4(), &**gpt2()] {
        let ids = tok.encode(text, &AllowedSpecial::NoneRaise).unwrap();
        assert_eq!(tok.decode_bytes(&ids).unwrap(), text);
        // The valid prefix encodes as tiktoken does.
        let head = tok.encode("café ", &AllowedSpecial::None).unwrap();
        assert_eq!(ids[..head.len()], head[..]);
    }
}

#[test]
fn long_chunks_match_tiktoken() {
    // Chunks over 256 bytes take the heap path of encode_chunk.
    let texts = [
        " ".repeat(1000),
        "a".repeat(777),
        format!("x{}", "ab".repeat(400)),
        "Supercalifragilisticexpialidocious".repeat(20),
        "안녕하세요".repeat(60),
        "!?".repeat(300) + "\n\n\n",
    ];
    for text in &texts {
        let cl = tiktoken_rs::cl100k_base_singleton().encode_ordinary(text);
        assert_eq!(gpt4().encode_ordinary(text).unwrap(), cl, "{:.20}", text);
        let r50 = tiktoken_rs::r50k_base_singleton().encode_ordinary(text);
        assert_eq!(gpt2().encode_ordinary(text).unwrap(), r50, "{:.20}", text);
    }
}

#[test]
fn token_view_pieces_are_tiktokens_tokens() {
    // The runs page's token view: tiktoken's ids, and pieces that join into the text.
    let text = "hello world!!!? (안녕하세요!) lol123 😉";
    let ids = gpt4().encode(text, &AllowedSpecial::None).unwrap();
    let view = bpe::token_view("GPT-4", &ids, |ids| gpt4().decode_bytes(ids)).unwrap();
    let want = [
        15339, 1917, 12340, 30, 320, 31495, 230, 75265, 243, 92245, 16715, 28509, 4513, 57037,
    ];
    let got: Vec<u64> = view["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(got, want);
    let joined: Vec<u8> = view["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            p.as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u8)
        })
        .collect();
    assert_eq!(joined, text.as_bytes());
    // 안 is split: tiktoken's decode_single_token_bytes(31495) is b'\xec\x95'.
    assert_eq!(view["pieces"][5], serde_json::json!([236, 149]));
}
