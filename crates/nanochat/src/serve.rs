//! `nanochat serve`: a chat page and its streaming endpoint, as nanochat's `scripts/chat_web.py`
//! served them before commit da32e1d removed its web UI (a page is where people chat).
//!
//! `GET /` is the page; `POST /chat/completions` takes `{"messages": [...], "temperature",
//! "top_k", "max_tokens"}` and streams the answer as server-sent events, `data: {"token": …,
//! "part": "text" | "python" | "output"}` then `data: {"done": true}`: the calculator's calls and
//! results come as parts of their own, so the page shows them. chat_web.py's limits bound every
//! request (messages, their length, temperature, top-k, tokens), the body is capped, at most
//! `--max-concurrent` answers are generated at once with a bounded queue behind them (a full
//! queue gets 503), and a client that disconnects stops its generation. The server binds to
//! 127.0.0.1 unless `--host` says otherwise.

use crate::chat_cli::{answer_room, fit_context};
use crate::engine::{generate, Sampling};
use crate::gpt::Gpt;
use crate::tokenizer::Tokenizer;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Semaphore};

/// The page.
pub const PAGE: &str = include_str!("serve/page.html");

/// chat_web.py's abuse-prevention limits.
pub mod limits {
    /// Messages in one request.
    pub const MAX_MESSAGES_PER_REQUEST: usize = 500;
    /// Characters in one message.
    pub const MAX_MESSAGE_LENGTH: usize = 8000;
    /// Characters in all messages.
    pub const MAX_TOTAL_CONVERSATION_LENGTH: usize = 32000;
    /// The hottest temperature.
    pub const MAX_TEMPERATURE: f32 = 2.0;
    /// The largest top-k (0 turns it off).
    pub const MAX_TOP_K: usize = 200;
    /// The most tokens an answer may ask for.
    pub const MAX_MAX_TOKENS: usize = 4096;
    /// Bytes in a request body (the conversation's characters, as JSON, with room to spare).
    pub const MAX_BODY_BYTES: usize = 256 * 1024;
}

/// `nanochat serve`'s flags (chat_web.py's, and the bounds of this server).
#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// The checkpoint.
    #[command(flatten)]
    pub model: crate::chat_cli::ModelChoice,
    /// The default temperature, 0 to 2.
    #[arg(short = 't', long, default_value_t = 0.8, value_parser = crate::chat_cli::temperature, allow_negative_numbers = true)]
    pub temperature: f32,
    /// The default top-k, up to 200 (0: off).
    #[arg(short = 'k', long, default_value_t = 50, value_parser = crate::chat_cli::top_k, allow_negative_numbers = true)]
    pub top_k: usize,
    /// The default most tokens of an answer, 1 to 4096.
    #[arg(short = 'm', long, default_value_t = 512, value_parser = max_tokens, allow_negative_numbers = true)]
    pub max_tokens: usize,
    /// The port.
    #[arg(short = 'p', long, default_value_t = 8000)]
    pub port: u16,
    /// The address to bind: localhost unless you mean to share the model.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Answers generated at once; more wait in the queue.
    #[arg(long, default_value_t = 2)]
    pub max_concurrent: usize,
    /// Requests waiting for a turn; beyond these, 503.
    #[arg(long, default_value_t = 64)]
    pub max_queue: usize,
}

/// `-m`/`--max-tokens`: 1 to chat_web.py's largest, 4096.
fn max_tokens(text: &str) -> Result<usize, String> {
    use limits::MAX_MAX_TOKENS;
    match text.parse::<usize>() {
        Ok(m) if (1..=MAX_MAX_TOKENS).contains(&m) => Ok(m),
        _ => Err(format!(
            "max-tokens must be a whole number from 1 to {MAX_MAX_TOKENS}"
        )),
    }
}

/// What writes an answer's events: [`stream_answer`]; a test puts a stand-in here.
pub type Generate =
    fn(&Gpt, &Tokenizer, &[u32], Sampling, &mut dyn FnMut(String) -> bool) -> Result<usize, String>;

/// A message of a request.
#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    /// "user" or "assistant".
    pub role: String,
    /// Its text.
    pub content: String,
}

/// The body of `POST /chat/completions`.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far, ending with the user's message.
    pub messages: Vec<ChatMessage>,
    /// Overrides `-t`.
    pub temperature: Option<f32>,
    /// Overrides `-m`.
    pub max_tokens: Option<usize>,
    /// Overrides `-k` (0: the whole vocabulary).
    pub top_k: Option<usize>,
}

// ANCHOR: validate_chat_request
/// `validate_chat_request`: the reason a request is refused, if it is.
pub fn validate_chat_request(request: &ChatRequest) -> Result<(), String> {
    use limits::*;
    if request.messages.is_empty() {
        return Err("At least one message is required".into());
    }
    if request.messages.len() > MAX_MESSAGES_PER_REQUEST {
        return Err(format!(
            "Too many messages. Maximum {MAX_MESSAGES_PER_REQUEST} messages allowed per request"
        ));
    }
    let mut total = 0;
    for (i, message) in request.messages.iter().enumerate() {
        if message.content.is_empty() {
            return Err(format!("Message {i} has empty content"));
        }
        let length = message.content.chars().count();
        if length > MAX_MESSAGE_LENGTH {
            return Err(format!("Message {i} is too long. Maximum {MAX_MESSAGE_LENGTH} characters allowed per message"));
        }
        total += length;
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        if message.role != expected {
            return Err(format!(
                "Message {i} is from {:?}; messages alternate user and assistant, starting with the user",
                message.role
            ));
        }
    }
    if total > MAX_TOTAL_CONVERSATION_LENGTH {
        return Err(format!("Total conversation is too long. Maximum {MAX_TOTAL_CONVERSATION_LENGTH} characters allowed"));
    }
    if request.messages.len().is_multiple_of(2) {
        return Err("The last message must be the user's".into());
    }
    if let Some(t) = request.temperature {
        if !(0.0..=MAX_TEMPERATURE).contains(&t) {
            return Err(format!(
                "Temperature must be between 0 and {MAX_TEMPERATURE}"
            ));
        }
    }
    if let Some(k) = request.top_k {
        if k > MAX_TOP_K {
            return Err(format!("top_k must be between 0 and {MAX_TOP_K}"));
        }
    }
    if let Some(m) = request.max_tokens {
        if !(1..=MAX_MAX_TOKENS).contains(&m) {
            return Err(format!("max_tokens must be between 1 and {MAX_MAX_TOKENS}"));
        }
    }
    Ok(())
}
// ANCHOR_END: validate_chat_request

/// What the handlers share.
pub struct ServerState {
    /// The model.
    pub model: Gpt,
    /// Its tokenizer.
    pub tokenizer: Tokenizer,
    /// `-t`, `-k`, `-m`.
    pub defaults: (f32, usize, usize),
    /// Turns to generate.
    pub slots: Arc<Semaphore>,
    /// Requests waiting for a turn, or generating.
    pub admitted: AtomicUsize,
    /// Most requests admitted at once: generating and waiting.
    pub max_admitted: usize,
    /// Answers being generated now.
    pub generating: AtomicUsize,
    /// What writes an answer.
    pub generate: Generate,
}

impl ServerState {
    /// The state of a server of `model`, with `args`' defaults and bounds.
    pub fn new(model: Gpt, tokenizer: Tokenizer, args: &ServeArgs) -> ServerState {
        ServerState {
            model,
            tokenizer,
            defaults: (args.temperature, args.top_k, args.max_tokens),
            slots: Arc::new(Semaphore::new(args.max_concurrent.max(1))),
            admitted: AtomicUsize::new(0),
            max_admitted: args.max_concurrent.max(1) + args.max_queue,
            generating: AtomicUsize::new(0),
            generate: stream_answer,
        }
    }
}

/// The routes: the page, the endpoint, and `/health`.
pub fn router(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route("/health", get(health))
        .route("/chat/completions", post(chat_completions))
        .fallback(|| async {
            refuse(
                StatusCode::NOT_FOUND,
                "No such page: try / or /health".into(),
            )
        })
        .method_not_allowed_fallback(|| async {
            refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                "Not with that method: GET / and /health, POST /chat/completions".into(),
            )
        })
        .layer(DefaultBodyLimit::max(limits::MAX_BODY_BYTES))
        .with_state(state)
}

async fn health(State(state): State<Arc<ServerState>>) -> Response {
    let body = serde_json::json!({
        "status": "ok",
        "generating": state.generating.load(Ordering::SeqCst),
        "admitted": state.admitted.load(Ordering::SeqCst),
    });
    json_response(StatusCode::OK, body)
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn refuse(status: StatusCode, detail: String) -> Response {
    json_response(status, serde_json::json!({ "detail": detail }))
}

/// Counts a request as admitted until dropped.
struct Admission(Arc<ServerState>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts an answer as being generated until dropped, also when its generation panics.
struct Generating(Arc<ServerState>);

impl Generating {
    fn start(state: Arc<ServerState>) -> Generating {
        state.generating.fetch_add(1, Ordering::SeqCst);
        Generating(state)
    }
}

impl Drop for Generating {
    fn drop(&mut self) {
        self.0.generating.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The conversation's tokens, primed for the assistant's answer (as chat_web.py builds them).
pub fn conversation_tokens(
    tokenizer: &Tokenizer,
    messages: &[ChatMessage],
) -> Result<Vec<u32>, String> {
    let special = |name| tokenizer.encode_special(name);
    let mut tokens = vec![tokenizer.bos_token_id()];
    for message in messages {
        let (start, end) = if message.role == "user" {
            (special("<|user_start|>")?, special("<|user_end|>")?)
        } else {
            (
                special("<|assistant_start|>")?,
                special("<|assistant_end|>")?,
            )
        };
        tokens.push(start);
        tokens.extend(tokenizer.encode(&message.content));
        tokens.push(end);
    }
    tokens.push(special("<|assistant_start|>")?);
    Ok(tokens)
}

async fn chat_completions(
    State(state): State<Arc<ServerState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // A body past the cap (413) or cut off is refused in JSON, as every other refusal is.
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return refuse(rejection.status(), rejection.body_text()),
    };
    let request: ChatRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("The body must be JSON: {{\"messages\": [{{\"role\": \"user\", \"content\": \"…\"}}]}} ({e})"),
            )
        }
    };
    if let Err(detail) = validate_chat_request(&request) {
        return refuse(StatusCode::BAD_REQUEST, detail);
    }
    if state.admitted.fetch_add(1, Ordering::SeqCst) >= state.max_admitted {
        state.admitted.fetch_sub(1, Ordering::SeqCst);
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is busy: too many conversations are waiting. Try again shortly.".into(),
        );
    }
    let admission = Admission(state.clone());
    let mut tokens = match conversation_tokens(&state.tokenizer, &request.messages) {
        Ok(t) => t,
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    let context = state.model.config.sequence_len;
    let user_start = state
        .tokenizer
        .encode_special("<|user_start|>")
        .unwrap_or(0);
    let (temperature, top_k, max_tokens) = state.defaults;
    let max_tokens = request.max_tokens.unwrap_or(max_tokens);
    let dropped = fit_context(
        &mut tokens,
        user_start,
        context,
        answer_room(max_tokens, context),
    );
    if tokens.len() >= context {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "The last message alone is longer than the model's context of {context} tokens"
            ),
        );
    }
    let top_k = request.top_k.unwrap_or(top_k);
    let sampling = Sampling {
        num_samples: 1,
        max_tokens: max_tokens.min(context - tokens.len()),
        temperature: request.temperature.unwrap_or(temperature),
        top_k: (top_k > 0).then_some(top_k),
        seed: rand_seed(),
        kv_cache: true,
    };
    let (sender, receiver) = mpsc::channel::<String>(64);
    let state_for_task = state.clone();
    tokio::spawn(async move {
        let _admission = admission;
        let Ok(permit) = state_for_task.slots.clone().acquire_owned().await else {
            return;
        };
        let state = state_for_task.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let _generating = Generating::start(state.clone());
            if dropped > 0 {
                let note = serde_json::json!({ "dropped": dropped, "context": context });
                let _ = sender.blocking_send(note.to_string());
            }
            let mut send = |event| sender.blocking_send(event).is_ok();
            let generate = state.generate;
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                generate(&state.model, &state.tokenizer, &tokens, sampling, &mut send)
            }));
            let error = match result {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(e),
                // The panic's message and place are in the server's log (stderr).
                Err(_) => {
                    Some("The answer failed: a bug in the server (its log says where)".into())
                }
            };
            if let Some(e) = error {
                let _ = sender.blocking_send(serde_json::json!({ "error": e }).to_string());
            }
            let _ = sender.blocking_send(serde_json::json!({ "done": true }).to_string());
        })
        .await;
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let event = receiver.recv().await?;
        Some((
            Ok::<_, std::convert::Infallible>(format!("data: {event}\n\n")),
            receiver,
        ))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .expect("a valid response")
}

/// chat_web.py's `random.randint(0, 2**31 - 1)` seed, from the clock and a counter.
fn rand_seed() -> u64 {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    (nanos ^ (COUNTER.fetch_add(1, Ordering::SeqCst) as u64).wrapping_mul(0x9E37_79B9))
        & 0x7FFF_FFFF
}

// ANCHOR: stream_answer
/// `generate_stream`: the answer's text as it is generated, each new piece of whole characters
/// sent as an event naming its part (text, a python call, or the calculator's output); the
/// tool's own tokens are not text. Stops at `<|assistant_end|>` or `<|bos|>`, or as soon as
/// `send` returns false (the client has gone). Returns the tokens generated.
pub fn stream_answer(
    model: &Gpt,
    tokenizer: &Tokenizer,
    tokens: &[u32],
    sampling: Sampling,
    send: &mut dyn FnMut(String) -> bool,
) -> Result<usize, String> {
    let special = |name| tokenizer.encode_special(name);
    let (assistant_end, bos) = (special("<|assistant_end|>")?, tokenizer.bos_token_id());
    let marks = [
        (special("<|python_start|>")?, "python"),
        (special("<|python_end|>")?, "text"),
        (special("<|output_start|>")?, "output"),
        (special("<|output_end|>")?, "text"),
    ];
    let mut part = "text";
    let mut pending: Vec<u32> = Vec::new();
    let mut generated = 0;
    let mut failure = None;
    generate(model, tokenizer, tokens, sampling, &mut |column, _| {
        let token = column[0];
        generated += 1;
        if token == assistant_end || token == bos {
            return false;
        }
        if let Some(&(_, next)) = marks.iter().find(|(id, _)| *id == token) {
            part = next;
            pending.clear();
            return true;
        }
        pending.push(token);
        match tokenizer.decode(&pending) {
            // A character cut between tokens decodes to U+FFFD until its last byte comes.
            Ok(text) if !text.ends_with('\u{FFFD}') => {
                pending.clear();
                send(serde_json::json!({ "token": text, "part": part }).to_string())
            }
            Ok(_) => true,
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(generated),
    }
}
// ANCHOR_END: stream_answer

/// Serves `model` on `args.host:args.port` until the process ends; `ready` gets the address
/// once the socket is bound.
pub fn serve(
    model: Gpt,
    tokenizer: Tokenizer,
    args: &ServeArgs,
    ready: &mut dyn FnMut(std::net::SocketAddr),
) -> Result<(), String> {
    serve_state(ServerState::new(model, tokenizer, args), args, ready)
}

/// [`serve`] with a state built by the caller (a test's stand-in for [`stream_answer`]).
pub fn serve_state(
    state: ServerState,
    args: &ServeArgs,
    ready: &mut dyn FnMut(std::net::SocketAddr),
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let state = Arc::new(state);
    runtime.block_on(async move {
        let address = format!("{}:{}", args.host, args.port);
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .map_err(|e| format!("cannot listen on {address}: {e}"))?;
        ready(listener.local_addr().map_err(|e| e.to_string())?);
        axum::serve(listener, router(state))
            .await
            .map_err(|e| e.to_string())
    })
}
