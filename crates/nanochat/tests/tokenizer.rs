//! nanochat's tokenizer against nanochat's own code at 92d63d4 (fixtures made by
//! `tests/fixtures/tokenizer/make_fixtures.py`, with rustbpe 0.1.0 and tiktoken 0.14.0).
//!
//! For tiny Shakespeare and a text in five scripts, at vocabularies of 512 and 4,096 (and once
//! with a small document cap and character budget): our training gives rustbpe's ranks, our
//! `tokenizer.pkl` is the file nanochat saved byte for byte and reads back to the same state,
//! `token_bytes` is tok_train.py's, and the whole text and a few samples encode as tiktoken
//! encodes them.

use std::path::PathBuf;

use nanochat::documents::split_text;
use nanochat::pickle;
use nanochat::tokenizer::{text_iterator, Conversation, Tokenizer};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer")
}

fn text_of(name: &str) -> String {
    let path = match name {
        "shakespeare" => data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}")),
        "own_text" => data::workspace_root().join("crates/gpt/tests/fixtures/nanogpt/own_text.txt"),
        other => panic!("unknown text {other}"),
    };
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ids_of(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

fn check(name: &str) {
    let record: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join(format!("{name}.json"))).unwrap())
            .unwrap();
    let text = text_of(record["text"].as_str().unwrap());
    let num = |k: &str| record[k].as_u64().unwrap() as usize;
    let docs = text_iterator(split_text(&text), num("doc_cap"), num("max_chars"));
    let ours = Tokenizer::train_from_documents(&docs, num("vocab_size_asked")).unwrap();
    assert_eq!(
        ours.vocab_size(),
        num("vocab_size"),
        "{name}: vocabulary size"
    );

    // The pickle nanochat saved, byte for byte, and what it reads back to.
    let theirs = std::fs::read(fixtures().join(format!("{name}.pkl"))).unwrap();
    let state = pickle::loads(&theirs).unwrap();
    assert_eq!(
        &state,
        ours.state(),
        "{name}: the Encoding's state (ranks, specials, pattern)"
    );
    assert!(
        pickle::dumps(ours.state()) == theirs,
        "{name}: tokenizer.pkl differs from nanochat's"
    );

    let token_bytes: Vec<u32> = ids_of(&record["token_bytes"]);
    assert_eq!(ours.token_bytes(), token_bytes, "{name}: token_bytes");

    let ids = ours.encode(&text);
    assert_eq!(
        ids.len(),
        num("encoded_len"),
        "{name}: tokens in the whole text"
    );
    let le: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
    let sha = format!("{:x}", Sha256::digest(&le));
    assert_eq!(
        sha,
        record["encoded_sha256"].as_str().unwrap(),
        "{name}: the whole text's ids"
    );
    for sample in record["samples"].as_array().unwrap() {
        let s = sample[0].as_str().unwrap();
        assert_eq!(ours.encode(s), ids_of(&sample[1]), "{name}: {s:?}");
        assert_eq!(ours.decode(&ours.encode(s)).unwrap(), s);
    }
}

#[test]
fn shakespeare_512() {
    check("shakespeare_512");
}

#[test]
fn shakespeare_4096() {
    check("shakespeare_4096");
}

#[test]
fn shakespeare_4096_with_a_document_cap_and_a_character_budget() {
    check("shakespeare_4096_capped");
}

#[test]
fn shakespeare_8192_whose_pickle_spans_two_frames() {
    check("shakespeare_8192");
}

#[test]
fn own_text_512() {
    check("own_text_512");
}

#[test]
fn own_text_4096_stops_where_rustbpe_stops() {
    // 86 kB of text in five scripts allows only 877 merges (a vocabulary of 1,142): rustbpe,
    // and we, stop there.
    check("own_text_4096");
}

#[test]
fn a_saved_tokenizer_loads_back() {
    let dir = std::env::temp_dir().join(format!("nanochat-tok-{}", std::process::id()));
    let theirs = std::fs::read(fixtures().join("shakespeare_512.pkl")).unwrap();
    let tok = Tokenizer::from_state(pickle::loads(&theirs).unwrap(), "fixture").unwrap();
    let path = tok.save(&dir).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), theirs);
    let back = Tokenizer::from_directory(&dir).unwrap();
    assert_eq!(back.state(), tok.state());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn render_conversation_as_nanochat() {
    let pkl = std::fs::read(fixtures().join("shakespeare_4096.pkl")).unwrap();
    let tok = Tokenizer::from_state(pickle::loads(&pkl).unwrap(), "fixture").unwrap();
    let cases: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("conversations.json")).unwrap())
            .unwrap();
    let cases = cases.as_array().unwrap();
    assert!(cases.len() >= 10);
    for (i, case) in cases.iter().enumerate() {
        let conv: Conversation = serde_json::from_value(case["conversation"].clone()).unwrap();
        let mask_of = |v: &Value| -> Vec<u8> { ids_of(v).iter().map(|&m| m as u8).collect() };
        let (ids, mask) = tok.render_conversation(&conv, 2048).unwrap();
        assert_eq!(ids, ids_of(&case["ids"]), "conversation {i}: ids");
        assert_eq!(mask, mask_of(&case["mask"]), "conversation {i}: mask");
        let short = case["max_tokens"].as_u64().unwrap() as usize;
        let (ids, mask) = tok.render_conversation(&conv, short).unwrap();
        assert_eq!(
            ids,
            ids_of(&case["ids_truncated"]),
            "conversation {i}: truncated ids"
        );
        assert_eq!(
            mask,
            mask_of(&case["mask_truncated"]),
            "conversation {i}: truncated mask"
        );
        match case.get("completion") {
            Some(want) => assert_eq!(tok.render_for_completion(&conv).unwrap(), ids_of(want)),
            None => assert!(
                tok.render_for_completion(&conv).is_err(),
                "conversation {i}"
            ),
        }
    }
}

#[test]
fn conversations_nanochat_refuses_are_errors() {
    let pkl = std::fs::read(fixtures().join("shakespeare_512.pkl")).unwrap();
    let tok = Tokenizer::from_state(pickle::loads(&pkl).unwrap(), "fixture").unwrap();
    for bad in [
        r#"{"messages": []}"#,
        r#"{"messages": [{"role": "assistant", "content": "hi"}]}"#,
        r#"{"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]}"#,
        r#"{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "bash", "text": "ls"}]}]}"#,
        r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "q"}]}]}"#,
    ] {
        let conv: Conversation = serde_json::from_str(bad).unwrap();
        assert!(tok.render_conversation(&conv, 2048).is_err(), "{bad}");
    }
}

#[test]
fn blank_lines_separate_documents() {
    // As Python's text.split("\n\n") with the empty pieces dropped.
    let docs: Vec<&str> = split_text("a b\nc\n\n\n\nd\n\n\ne\n\n").collect();
    assert_eq!(docs, ["a b\nc", "d", "\ne"]);
    let docs: Vec<&str> = split_text("a\r\n\r\nb\r\nc\n\r\nd\r\r\n\ne\r\n").collect();
    assert_eq!(docs, ["a", "b\r\nc", "d\r", "e\r\n"]);
}

/// An Encoding's state with `n` one-token ranks and a special token after them.
fn encoding_state(n: usize) -> pickle::EncodingState {
    pickle::EncodingState {
        name: "rustbpe".into(),
        pat_str: "a|b".into(),
        mergeable_ranks: (0..n as u32)
            .map(|i| (i.to_le_bytes().to_vec(), i))
            .collect(),
        special_tokens: vec![("<|bos|>".into(), n as u32)],
    }
}

#[test]
fn what_dumps_writes_loads_reads() {
    for n in [3, 1000, 1001, 2000, 70_000] {
        let s = encoding_state(n);
        assert_eq!(pickle::loads(&pickle::dumps(&s)).unwrap(), s, "{n} ranks");
    }
}

#[test]
fn a_cut_pickle_is_an_error() {
    let bytes = pickle::dumps(&encoding_state(10));
    for cut in [0, 1, 20, bytes.len() - 1] {
        assert!(pickle::loads(&bytes[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn an_input_named_for_a_data_file_is_found_where_the_data_is() {
    // The README's `--input tinyshakespeare.txt`, run where no such file is in the folder: it is
    // the workspace's data file, wherever ZTH_DATA or datasets/ keeps it.
    let named = std::path::Path::new("tinyshakespeare.txt");
    assert!(
        !named.exists(),
        "the test runs where the name alone finds nothing"
    );
    let found = nanochat::documents::read_documents(named).unwrap();
    let data = data::path("tinyshakespeare.txt").unwrap();
    assert_eq!(found, nanochat::documents::read_documents(&data).unwrap());
    // Any other missing path is an error that names it.
    let e = nanochat::documents::read_documents(std::path::Path::new("no/such.txt")).unwrap_err();
    assert_eq!(e, "no/such.txt: no such file or folder");
}
