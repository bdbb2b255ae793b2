//! `nanochat serve` on loopback, with a model trained here to answer arithmetic with the
//! calculator: bad requests get a clear 4xx; 20 concurrent conversations are each answered,
//! none lost; a client that disconnects stops its generation; and in headless Chromium the page
//! streams an answer with the calculator's call and result shown.

mod common;

use nanochat::engine::Sampling;
use nanochat::serve::{serve, stream_answer, ServeArgs};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const QUESTION: &str = "Ava buys 14 bags with 12 apples in each bag. How many apples does Ava buy?";

fn args() -> ServeArgs {
    ServeArgs {
        source: "sft".into(),
        temperature: 0.0,
        top_k: 50,
        max_tokens: 64,
        model_tag: None,
        step: None,
        port: 0,
        host: "127.0.0.1".into(),
        max_concurrent: 2,
        max_queue: 32,
    }
}

/// One server for the whole binary, on a free port of 127.0.0.1.
fn server() -> SocketAddr {
    static ADDRESS: OnceLock<SocketAddr> = OnceLock::new();
    *ADDRESS.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let tokenizer = common::arithmetic_tokenizer();
            let (model, _) = common::train_arithmetic(2, 150, &tokenizer);
            serve(model, tokenizer, &args(), &mut |address| {
                tx.send(address).unwrap()
            })
            .unwrap();
        });
        rx.recv_timeout(Duration::from_secs(300))
            .expect("the server starts")
    })
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// POSTs `body` to /chat/completions: the status and the body.
fn post(body: &str) -> (u16, String) {
    let url = format!("http://{}/chat/completions", server());
    let mut response = agent()
        .post(&url)
        .header("Content-Type", "application/json")
        .send(body)
        .unwrap();
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().unwrap())
}

/// The events of a streamed answer.
fn events(body: &str) -> Vec<serde_json::Value> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

fn ask(question: &str) -> String {
    serde_json::json!({"messages": [{"role": "user", "content": question}]}).to_string()
}

#[test]
fn an_answer_streams_with_the_calculator_call_as_its_own_part() {
    let (status, body) = post(&ask(QUESTION));
    assert_eq!(status, 200, "{body}");
    let events = events(&body);
    assert_eq!(events.last().unwrap()["done"], true, "{body}");
    let part = |name: &str| -> String {
        events
            .iter()
            .filter(|e| e["part"] == name)
            .map(|e| e["token"].as_str().unwrap())
            .collect()
    };
    assert_eq!(part("python"), "14*12", "{body}");
    assert_eq!(part("output"), "168", "{body}");
    assert!(part("text").ends_with("#### 168"), "{body}");
}

#[test]
fn bad_requests_get_a_clear_4xx() {
    let cases: [(&str, u16, &str); 7] = [
        ("not json", 400, "must be JSON"),
        (r#"{"messages": []}"#, 400, "At least one message"),
        (
            r#"{"messages": [{"role": "user", "content": ""}]}"#,
            400,
            "empty content",
        ),
        (
            r#"{"messages": [{"role": "assistant", "content": "hi"}]}"#,
            400,
            "alternate",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "hi"}], "temperature": 5}"#,
            400,
            "Temperature",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "hi"}], "top_k": 1000}"#,
            400,
            "top_k",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}"#,
            400,
            "max_tokens",
        ),
    ];
    for (body, status, detail) in cases {
        let (got, text) = post(body);
        assert_eq!(got, status, "{body} → {text}");
        assert!(text.contains(detail), "{body} → {text}");
    }
    let long = "x".repeat(8001);
    let (got, text) = post(&ask(&long));
    assert_eq!(got, 400, "{text}");
    assert!(text.contains("too long"), "{text}");
    // A body past 256 KiB is refused before it is read whole.
    let huge = format!(
        r#"{{"messages": [{{"role": "user", "content": "{}"}}]}}"#,
        "y".repeat(300_000)
    );
    assert_eq!(post(&huge).0, 413);
}

#[test]
fn twenty_concurrent_conversations_are_each_answered() {
    let address = server();
    let started = Instant::now();
    let threads: Vec<_> = (0..20)
        .map(|i| {
            std::thread::spawn(move || {
                let (q, _) = nanochat::tasks::arithmetic_problem(i, nanochat::tasks::Split::Test);
                let url = format!("http://{address}/chat/completions");
                let mut response = agent()
                    .post(&url)
                    .header("Content-Type", "application/json")
                    .send(&ask(&q))
                    .unwrap();
                let status = response.status().as_u16();
                (status, response.body_mut().read_to_string().unwrap())
            })
        })
        .collect();
    let mut answered = 0;
    for t in threads {
        let (status, body) = t.join().unwrap();
        assert_eq!(status, 200, "{body}");
        let events = events(&body);
        assert!(events.iter().any(|e| e["token"].is_string()), "{body}");
        assert_eq!(events.last().unwrap()["done"], true, "{body}");
        answered += 1;
    }
    assert_eq!(answered, 20);
    println!(
        "20 concurrent conversations answered in {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

/// `/health`'s counts: answers generating, requests admitted.
fn health() -> (u64, u64) {
    let mut response = agent()
        .get(&format!("http://{}/health", server()))
        .call()
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    (
        v["generating"].as_u64().unwrap(),
        v["admitted"].as_u64().unwrap(),
    )
}

#[test]
fn a_client_that_disconnects_stops_its_generation() {
    // The mechanism: once the client's end is gone, the next send fails and generation stops.
    let tokenizer = common::arithmetic_tokenizer();
    let (model, _) = common::train_arithmetic(2, 5, &tokenizer);
    let prompt = nanochat::serve::conversation_tokens(
        &tokenizer,
        &[nanochat::serve::ChatMessage {
            role: "user".into(),
            content: QUESTION.into(),
        }],
    )
    .unwrap();
    let sampling = Sampling {
        num_samples: 1,
        max_tokens: 40,
        temperature: 1.0,
        top_k: None,
        seed: 1,
        kv_cache: true,
    };
    let mut sent = 0;
    let generated = stream_answer(&model, &tokenizer, &prompt, sampling, &mut |_| {
        sent += 1;
        false // the receiver is gone
    })
    .unwrap();
    assert_eq!(sent, 1);
    assert!(
        generated < 40,
        "{generated} tokens generated after the client left"
    );

    // Over a socket: ask, read the first event, hang up; the server's counts go back to zero.
    let address = server();
    let body = ask(QUESTION);
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /chat/completions HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut first = [0u8; 256];
    let n = stream.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).contains("200 OK"));
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    while health() != (0, 0) {
        assert!(
            Instant::now() < deadline,
            "the generation kept going: {:?}",
            health()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        post(&ask(QUESTION)).0,
        200,
        "the server answers the next request"
    );
}

fn chromium() -> Option<PathBuf> {
    match report::page::browser::find_chromium() {
        Some(path) => Some(path),
        None if std::env::var_os("CI").is_some() => {
            panic!("CI runs the browser tests, and Chromium is missing (apt-get install chromium)")
        }
        None => {
            eprintln!(
                "skipping the browser test: Chromium is not installed (apt-get install chromium)"
            );
            None
        }
    }
}

/// Runs headless Chromium on `url` with `extra` flags and a fresh profile; its stdout.
fn run_chromium(browser: &PathBuf, extra: &[String], url: &str) -> String {
    let profile =
        std::env::temp_dir().join(format!("nanochat-serve-chromium-{}", std::process::id()));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=30000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    out
}

#[test]
fn in_chromium_the_page_streams_an_answer_and_shows_the_calculator() {
    let Some(browser) = chromium() else { return };
    let address = server();
    let query: String = QUESTION
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let url = format!("http://{address}/?temperature=0&q={query}");
    let dom = run_chromium(&browser, &["--dump-dom".to_string()], &url);
    assert!(
        dom.contains("data-state=\"done\""),
        "the answer never finished:\n{dom}"
    );
    assert!(
        dom.contains(&format!("<div class=\"message user\">{QUESTION}</div>")),
        "{dom}"
    );
    assert!(
        dom.contains("<span class=\"tool-call\">14*12</span>"),
        "no calculator call shown:\n{dom}"
    );
    assert!(
        dom.contains("<span class=\"tool-output\">168</span>"),
        "no calculator result shown:\n{dom}"
    );
    assert!(dom.contains("#### 168</div>"), "{dom}");
    assert!(!dom.contains("class=\"message error\""), "{dom}");
    if let Some(path) = std::env::var_os("NANOCHAT_SERVE_SCREENSHOT") {
        let shot = format!("--screenshot={}", PathBuf::from(path).display());
        run_chromium(&browser, &[shot, "--window-size=900,600".into()], &url);
    }
}
