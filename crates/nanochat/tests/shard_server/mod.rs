//! A server of files on 127.0.0.1, as the Hugging Face Hub serves nanochat's shards: it
//! answers a fixed number of requests (range requests included), then stops, or gives up after
//! 20 s. `nanochat data`'s tests and the base folder's end-to-end test share it.

#![allow(dead_code)] // each test binary uses part of it

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the server answers a request for a file: whole (honouring a range), or cut short after
/// `n` bytes while announcing the whole length.
#[derive(Clone, Copy)]
pub enum Answer {
    Whole,
    CutAfter(usize),
}

/// A request's path and Range header.
pub type Request = (String, Option<String>);

pub struct Server {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// Every request's path and Range header.
    pub seen: Arc<Mutex<Vec<Request>>>,
    pub handle: JoinHandle<()>,
}

/// Serves `files` (path, bytes); the i-th request gets `answers[i]` (then `Whole`).
pub fn serve(files: Vec<(String, Vec<u8>)>, requests: usize, answers: Vec<Answer>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let handle = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut served = 0;
        while served < requests && Instant::now() < deadline {
            let mut stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
            };
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
            let range = head
                .lines()
                .find(|l| l.to_ascii_lowercase().starts_with("range:"))
                .map(|l| l[6..].trim().to_string());
            log.lock().unwrap().push((path.clone(), range.clone()));
            let answer = answers.get(served).copied().unwrap_or(Answer::Whole);
            served += 1;
            let Some((_, body)) = files.iter().find(|(p, _)| *p == path) else {
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            };
            let from = range
                .as_deref()
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok());
            let (status, part, extra) = match from {
                Some(from) => (
                    "206 Partial Content",
                    &body[from..],
                    format!(
                        "Content-Range: bytes {from}-{}/{}\r\n",
                        body.len() - 1,
                        body.len()
                    ),
                ),
                None => ("200 OK", &body[..], String::new()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                part.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let sent = match answer {
                Answer::Whole => part,
                Answer::CutAfter(n) => &part[..n.min(part.len())],
            };
            let _ = stream.write_all(sent);
        }
    });
    Server { base, seen, handle }
}
