//! `nanochat serve` on loopback, with a model trained here to answer arithmetic with the
//! calculator: bad requests get a clear 4xx; 20 concurrent conversations are each answered,
//! none lost; a client that disconnects stops its generation; and in headless Chromium the page
//! streams an answer with the calculator's call and result shown, and says so when old turns
//! are dropped.

mod common;

use nanochat::engine::Sampling;
use nanochat::serve::{serve, serve_state, stream_answer, ServeArgs, ServerState};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const QUESTION: &str = "Ava buys 14 bags with 12 apples in each bag. How many apples does Ava buy?";

fn args() -> ServeArgs {
    ServeArgs {
        model: nanochat::chat_cli::ModelChoice {
            source: "sft".into(),
            model_tag: None,
            step: None,
        },
        temperature: 0.0,
        top_k: 50,
        max_tokens: 64,
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
    post_to(server(), body)
}

/// [`post`] to the server at `address`.
fn post_to(address: SocketAddr, body: &str) -> (u16, String) {
    let url = format!("http://{address}/chat/completions");
    let mut response = agent()
        .post(&url)
        .header("Content-Type", "application/json")
        .send(body)
        .unwrap();
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().unwrap())
}

/// GETs `path`: the status and the body.
fn get(path: &str) -> (u16, String) {
    let mut response = agent()
        .get(&format!("http://{}{path}", server()))
        .call()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().unwrap())
}

/// The `detail` of a refusal's JSON body.
fn detail(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{body}: {e}"));
    v["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("no detail: {body}"))
        .to_string()
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
    let (status, text) = post(&huge);
    assert_eq!(status, 413, "{text}");
    assert!(detail(&text).contains("length limit"), "{text}");
    // Every refusal is JSON with a detail, a page that is not there and a wrong method too.
    let (status, text) = get("/nope");
    assert_eq!(status, 404, "{text}");
    assert!(detail(&text).contains("No such page"), "{text}");
    let (status, text) = get("/chat/completions");
    assert_eq!(status, 405, "{text}");
    assert!(detail(&text).contains("POST /chat/completions"), "{text}");
}

#[test]
fn old_turns_make_room_for_the_answer_and_the_page_hears_of_it() {
    // The model reads 128 tokens and answers in up to 64: five long turns do not fit beside it.
    let answer = "Ava buys 14 bags of 12 apples, so 14*12 = 168 apples.";
    let turns: Vec<serde_json::Value> = (0..5)
        .map(|i| {
            let (role, content) = if i % 2 == 0 {
                ("user", QUESTION)
            } else {
                ("assistant", answer)
            };
            serde_json::json!({"role": role, "content": content})
        })
        .collect();
    let (status, body) = post(&serde_json::json!({ "messages": turns }).to_string());
    assert_eq!(status, 200, "{body}");
    let events = events(&body);
    let dropped = events[0]["dropped"]
        .as_u64()
        .unwrap_or_else(|| panic!("{body}"));
    assert!((1..=2).contains(&dropped), "{body}");
    assert_eq!(events[0]["context"], 128, "{body}");
    assert!(events.iter().all(|e| e.get("error").is_none()), "{body}");
    assert_eq!(events.last().unwrap()["done"], true, "{body}");
}

/// An answer that panics: a stand-in for a bug in the engine.
fn panics(
    _: &nanochat::gpt::Gpt,
    _: &nanochat::Tokenizer,
    _: &[u32],
    _: Sampling,
    _: &mut dyn FnMut(String) -> bool,
) -> Result<usize, String> {
    panic!("a planted panic in the generation")
}

#[test]
fn a_generation_that_panics_says_so_and_releases_its_slot() {
    let tokenizer = common::arithmetic_tokenizer();
    let config =
        nanochat::gpt::GptConfig::from_depth(1, 64, 64, 128, tokenizer.vocab_size(), "L").unwrap();
    let model = nanochat::gpt::Gpt::zeros(config).unwrap();
    let args = ServeArgs {
        max_concurrent: 1,
        ..args()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let state = ServerState {
            generate: panics,
            ..ServerState::new(model, tokenizer, &args)
        };
        serve_state(state, &args, &mut |address| tx.send(address).unwrap()).unwrap();
    });
    let address = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    // One slot: were it kept by the first panic, the second request would wait forever.
    for _ in 0..2 {
        let (status, body) = post_to(address, &ask(QUESTION));
        assert_eq!(status, 200, "{body}");
        let events = events(&body);
        assert!(
            events[0]["error"]
                .as_str()
                .unwrap_or_default()
                .contains("a bug in the server"),
            "{body}"
        );
        assert_eq!(events.last().unwrap()["done"], true, "{body}");
    }
    let mut response = agent()
        .get(&format!("http://{address}/health"))
        .call()
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut v = v;
    while (v["generating"].as_u64(), v["admitted"].as_u64()) != (Some(0), Some(0)) {
        assert!(Instant::now() < deadline, "the slots leaked: {v}");
        std::thread::sleep(Duration::from_millis(20));
        let mut response = agent()
            .get(&format!("http://{address}/health"))
            .call()
            .unwrap();
        v = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    }
}

#[test]
fn temperatures_top_k_and_max_tokens_out_of_range_are_refused_at_the_flag() {
    #[derive(clap::Parser)]
    struct ServeCli {
        #[command(flatten)]
        args: ServeArgs,
    }
    let parse = |flags: &[&str]| {
        let argv = ["serve", "-i", "sft"].iter().chain(flags);
        flags::try_parse_from::<ServeCli>(argv)
            .map(|cli| cli.args)
            .map_err(|e| e.to_string())
    };
    for (flag, value, says) in [
        ("-t", "nan", "temperature must be a number from 0 to 2"),
        ("-t", "-1", "temperature must be a number from 0 to 2"),
        ("-t", "inf", "temperature must be a number from 0 to 2"),
        ("-t", "50", "temperature must be a number from 0 to 2"),
        ("-k", "201", "top-k must be a whole number from 0 to 200"),
        (
            "-m",
            "0",
            "max-tokens must be a whole number from 1 to 4096",
        ),
        (
            "-m",
            "5000",
            "max-tokens must be a whole number from 1 to 4096",
        ),
    ] {
        let e = parse(&[flag, value])
            .err()
            .unwrap_or_else(|| panic!("{flag} {value} was taken"));
        assert!(e.contains(says), "{flag} {value}: {e}");
    }
    let args = parse(&["-t", "0", "-k", "0", "-m", "1"]).unwrap();
    assert_eq!((args.temperature, args.top_k, args.max_tokens), (0.0, 0, 1));
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

/// Headless Chromium driven through the DevTools protocol over a pipe
/// (`--remote-debugging-pipe`: commands on its fd 3, replies on its fd 4, each a JSON message
/// ended by a NUL), so the test can wait until the page says the answer is done.
struct Browser {
    child: std::process::Child,
    commands: std::fs::File,
    replies: std::io::BufReader<std::fs::File>,
    next_id: u64,
    profile: PathBuf,
}

impl Browser {
    fn launch(browser: &PathBuf) -> Browser {
        use std::os::fd::FromRawFd;
        use std::os::unix::process::CommandExt;
        let pipe = || {
            let mut fds = [0i32; 2];
            // SAFETY: fds has room for the two descriptors pipe2 writes.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            (fds[0], fds[1])
        };
        let (to_chromium_read, to_chromium_write) = pipe();
        let (from_chromium_read, from_chromium_write) = pipe();
        let profile =
            std::env::temp_dir().join(format!("nanochat-serve-chromium-{}", std::process::id()));
        let mut command = Command::new(browser);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
                "--disable-dev-shm-usage",
                "--remote-debugging-pipe",
                "--window-size=900,600",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only dup2 between fork and exec; the duplicates are not close-on-exec.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(to_chromium_read, 3) < 0 || libc::dup2(from_chromium_write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        // SAFETY: each descriptor is ours, closed or owned exactly once.
        unsafe {
            libc::close(to_chromium_read);
            libc::close(from_chromium_write);
            Browser {
                child,
                commands: std::fs::File::from_raw_fd(to_chromium_write),
                replies: std::io::BufReader::new(std::fs::File::from_raw_fd(from_chromium_read)),
                next_id: 0,
                profile,
            }
        }
    }

    /// Sends `method` with `params` (to `session`, if given) and returns its result.
    fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        use std::io::BufRead;
        self.next_id += 1;
        let mut message =
            serde_json::json!({"id": self.next_id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = s.into();
        }
        self.commands
            .write_all(message.to_string().as_bytes())
            .unwrap();
        self.commands.write_all(&[0]).unwrap();
        loop {
            let mut reply = Vec::new();
            self.replies.read_until(0, &mut reply).unwrap();
            assert!(!reply.is_empty(), "Chromium closed its pipe");
            reply.pop();
            let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
            if reply["id"] == self.next_id {
                assert!(reply["error"].is_null(), "{method}: {}", reply["error"]);
                return reply["result"].clone();
            }
        }
    }

    /// Opens `url` in a new page; the page's session.
    fn open(&mut self, url: &str) -> String {
        let target = self.call(None, "Target.createTarget", serde_json::json!({"url": url}));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            serde_json::json!({"targetId": target["targetId"], "flatten": true}),
        );
        attached["sessionId"].as_str().unwrap().to_string()
    }

    /// The value of `expression` in the page.
    fn evaluate(&mut self, session: &str, expression: &str) -> serde_json::Value {
        let result = self.call(
            Some(session),
            "Runtime.evaluate",
            serde_json::json!({"expression": expression, "returnByValue": true}),
        );
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression}: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

#[test]
fn in_chromium_the_page_streams_an_answer_and_shows_the_calculator() {
    let Some(browser) = chromium() else { return };
    let address = server();
    let mut chromium = Browser::launch(&browser);
    let session = chromium.open(&format!("http://{address}/?temperature=0"));
    let deadline = Instant::now() + Duration::from_secs(60);
    // A new page starts at about:blank, already complete: wait for ours.
    let loaded = "location.protocol === 'http:' && document.readyState === 'complete'";
    while chromium.evaluate(&session, loaded) != true {
        assert!(Instant::now() < deadline, "the page did not load");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Count the page's updates (each streamed piece is appended on its own), then type the
    // question and press Enter, as a person would.
    let observe = "window.updates = 0; window.pieces = 0; \
        new MutationObserver(m => { window.updates += 1; window.pieces += m.length; }) \
            .observe(document.getElementById('messages'), {childList: true, subtree: true, characterData: true}); true";
    assert_eq!(chromium.evaluate(&session, observe), true);
    let typed = format!(
        "document.getElementById('input').value = {}; \
         document.getElementById('input').dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter', bubbles: true}})); \
         document.body.dataset.state",
        serde_json::Value::from(QUESTION)
    );
    assert_eq!(chromium.evaluate(&session, &typed), "streaming");
    // The answer streams in: seen part-way, then done.
    let mut partial_lengths = Vec::new();
    while chromium.evaluate(&session, "document.body.dataset.state") != "done" {
        assert!(Instant::now() < deadline, "the answer never finished");
        let shown = chromium.evaluate(
            &session,
            "document.querySelector('.message.assistant').textContent",
        );
        partial_lengths.push(shown.as_str().map_or(0, str::len));
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut text = |expression: &str| {
        chromium
            .evaluate(&session, expression)
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let user = text("document.querySelector('.message.user').textContent");
    let call = text("document.querySelector('.message.assistant .tool-call').textContent");
    let output = text("document.querySelector('.message.assistant .tool-output').textContent");
    let answer = text("document.querySelector('.message.assistant').textContent");
    let errors = chromium.evaluate(
        &session,
        "document.querySelectorAll('.message.error').length",
    );
    assert_eq!(user, QUESTION);
    assert_eq!(call, "14*12", "the calculator call shown");
    assert_eq!(output, "168", "the calculator's result shown");
    assert!(answer.ends_with("#### 168"), "{answer}");
    assert_eq!(errors, 0);
    let updates = chromium
        .evaluate(&session, "window.updates")
        .as_u64()
        .unwrap();
    let pieces = chromium
        .evaluate(&session, "window.pieces")
        .as_u64()
        .unwrap();
    assert!(
        updates >= 2 && pieces >= 10,
        "{updates} updates, {pieces} pieces: not streamed"
    );
    println!(
        "the answer as shown: {answer:?}; {pieces} pieces in {updates} updates; its length as polled: {partial_lengths:?}"
    );
    if let Some(path) = std::env::var_os("NANOCHAT_SERVE_SCREENSHOT") {
        let shot = chromium.call(
            Some(&session),
            "Page.captureScreenshot",
            serde_json::json!({}),
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        std::fs::write(path, png).unwrap();
    }
    // The question again: the first turn no longer fits beside the answer's room (the model
    // reads 128 tokens), and the page says so above the new answer.
    assert_eq!(chromium.evaluate(&session, &typed), "streaming");
    while chromium.evaluate(&session, "document.body.dataset.state") != "done" {
        assert!(
            Instant::now() < deadline,
            "the second answer never finished"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let note = chromium.evaluate(
        &session,
        "[...document.querySelectorAll('.message.note')].map(e => e.textContent).join('|')",
    );
    let note = note.as_str().unwrap_or_default();
    assert!(
        note.starts_with("(The conversation outgrew the model's 128 tokens: the oldest ")
            && note.ends_with(" dropped.)"),
        "{note:?}"
    );
    let order = chromium.evaluate(
        &session,
        "[...document.querySelectorAll('.message')].map(e => e.className).join(',')",
    );
    assert_eq!(
        order,
        "message user,message assistant,message user,message note,message assistant"
    );
}

/// Standard base64, as the DevTools protocol sends screenshots.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | (value(c) as u32) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}
