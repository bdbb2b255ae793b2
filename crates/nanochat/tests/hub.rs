//! nanochat's Hub tasks against nanochat's own code (fixtures made by
//! `tests/fixtures/hub/make_fixtures.py`: parquet shards in the Hub's schemas, served from
//! 127.0.0.1 as the Hub serves them, loaded by nanochat's SmolTalk, MMLU and GSM8K). Here the
//! same shards are served the same way, downloaded by `load_hub_dataset` into a base folder,
//! shuffled by numpy's `default_rng(42)` and turned into conversations: every conversation equal,
//! in order. Offline, `sft --hub` says the Hub tasks are missing and trains on the rest.

use nanochat::chat_sft::run::mixtures;
use nanochat::chat_sft::SftArgs;
use nanochat::hub::load_hub_dataset_from;
use nanochat::tasks::{
    gsm8k_row_conversation, mmlu_conversation, smoltalk_conversation, HubTask, Task,
};
use nanochat::Conversation;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hub")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
        .unwrap()
}

/// A stand-in for the Hub on 127.0.0.1: the listing API and the shards, as the fixture's
/// server answers them. Returns its address.
fn local_hub(listing: Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let origin = address.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request_line = String::new();
            BufReader::new(&stream)
                .read_line(&mut request_line)
                .unwrap();
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_string();
            let body = if let Some(urls) = listing.get(&path) {
                let urls: Vec<String> = urls
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| format!("{origin}{}", u.as_str().unwrap()))
                    .collect();
                Some(serde_json::to_vec(&urls).unwrap())
            } else if let Some(file) = path.strip_prefix("/files/") {
                std::fs::read(fixtures().join("hub").join(file)).ok()
            } else {
                None
            };
            let _ = match body {
                Some(body) => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    stream
                        .write_all(head.as_bytes())
                        .and_then(|_| stream.write_all(&body))
                }
                None => stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
        }
    });
    address
}

fn base_folder(name: &str) -> PathBuf {
    let base = std::env::temp_dir().join(format!("nanochat-hub-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    base
}

type Convert = fn(&Value) -> Result<Conversation, String>;
/// A task's name in the fixture, its dataset, subset and split, where it stops, and its rows'
/// conversion.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<usize>,
    Convert,
);

#[test]
fn the_hub_tasks_are_nanochats_conversation_for_conversation() {
    let expected = expected();
    let hub = local_hub(expected["listing"].clone());
    let base = base_folder("tasks");
    let cases: [Case; 6] = [
        (
            "smoltalk_train",
            "HuggingFaceTB/smol-smoltalk",
            "default",
            "train",
            None,
            smoltalk_conversation,
        ),
        (
            "smoltalk_test",
            "HuggingFaceTB/smol-smoltalk",
            "default",
            "test",
            None,
            smoltalk_conversation,
        ),
        (
            "mmlu_auxiliary_train",
            "cais/mmlu",
            "all",
            "auxiliary_train",
            None,
            mmlu_conversation,
        ),
        (
            "mmlu_test",
            "cais/mmlu",
            "all",
            "test",
            Some(5),
            mmlu_conversation,
        ),
        (
            "gsm8k_train",
            "openai/gsm8k",
            "main",
            "train",
            None,
            gsm8k_row_conversation,
        ),
        (
            "gsm8k_test",
            "openai/gsm8k",
            "main",
            "test",
            Some(4),
            gsm8k_row_conversation,
        ),
    ];
    for (name, repo, subset, split, stop, convert) in cases {
        let mut said = Vec::new();
        let rows = load_hub_dataset_from(&hub, &base, repo, subset, split, &mut |l| said.push(l))
            .unwrap()
            .shuffle(42);
        assert!(
            said.iter().all(|l| l.starts_with("Downloading ")),
            "{said:?}"
        );
        let task = HubTask::new(Arc::new(rows), stop, convert, name).unwrap();
        let want: Vec<Conversation> = serde_json::from_value(expected[name].clone()).unwrap();
        assert_eq!(task.len(), want.len(), "{name}");
        for (i, w) in want.iter().enumerate() {
            assert_eq!(&task.example(i), w, "{name} example {i}");
        }
        // Downloaded once: the second load reads the manifest and asks nothing.
        let mut again = Vec::new();
        load_hub_dataset_from("http://127.0.0.1:9", &base, repo, subset, split, &mut |l| {
            again.push(l)
        })
        .unwrap();
        assert!(again.is_empty(), "{again:?}");
    }
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn offline_the_hub_tasks_are_said_to_be_missing_and_sft_goes_on() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: SftArgs,
    }
    let base = base_folder("offline");
    let words = data::path("names.txt").unwrap_or_else(|e| panic!("{e}"));
    let args = flags::try_parse_from::<Cli>([
        "chat_sft",
        "--hub",
        "--hub-endpoint=http://127.0.0.1:9",
        "--arithmetic=10",
        "--simple-spelling=0",
        "--spelling-bee=0",
        &format!("--words={}", words.display()),
    ])
    .unwrap()
    .args;
    // Nothing listens on port 9 of 127.0.0.1: the first request is refused.
    let mut said = Vec::new();
    let (train, _) = mixtures(&args, &base, &mut |l| said.push(l)).unwrap();
    assert_eq!(train.len(), 10, "the local tasks remain");
    assert!(
        said.iter()
            .any(|l| l.contains("SmolTalk, MMLU and GSM8K are not available")
                && l.contains("127.0.0.1:9")),
        "{said:?}"
    );
    let _ = std::fs::remove_dir_all(&base);
}
