//! `cargo xtask data gpt2`: OpenAI's GPT-2 (124M) from the Hugging Face hub,
//! `model.safetensors` (548 MB) and `config.json`, into `<data>/gpt2/`.
//!
//! The hub serves `model.safetensors` from Git LFS. Asked without following
//! redirects, it names the file's LFS object id, which is its SHA-256, in the
//! `X-Linked-Etag` header (and its size in `X-Linked-Size`). The download goes
//! to `model.safetensors.part`; an interrupted one is resumed with an HTTP
//! range request; the finished file is hashed and renamed into place only if
//! its SHA-256 is the hub's, which is then kept beside it in
//! `model.safetensors.sha256`. Tests, CI and the lectures never need it: a
//! random model saved by `transformers` stands in (crates/gpt2/tests/fixtures).
//!
//! `ZTH_GPT2_URL` replaces the hub's folder URL (the tests point it at a
//! server on 127.0.0.1).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The hub's folder for the `gpt2` checkpoint.
pub const HUB_URL: &str = "https://huggingface.co/openai-community/gpt2/resolve/main";
/// Environment variable with a folder URL that replaces [`HUB_URL`].
pub const URL_VAR: &str = "ZTH_GPT2_URL";

fn agent(follow_redirects: bool) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .max_redirects(if follow_redirects { 10 } else { 0 })
        .build()
        .into()
}

fn network(url: &str) -> impl Fn(ureq::Error) -> String + '_ {
    move |e| match e {
        ureq::Error::StatusCode(status) => format!("{url} answered HTTP {status}"),
        e => format!("could not download {url}: {e} (is this machine offline?)"),
    }
}

/// The SHA-256 the hub publishes for a file it serves from LFS.
fn published_sha256(url: &str) -> Result<String, String> {
    let response = agent(false).head(url).call().map_err(network(url))?;
    let etag = response
        .headers()
        .get("x-linked-etag")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            format!("{url} did not name the file's SHA-256 (no X-Linked-Etag header)")
        })?;
    let sha = etag
        .trim()
        .trim_start_matches("W/")
        .trim_matches('"')
        .to_ascii_lowercase();
    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{url}: X-Linked-Etag {etag:?} is not a SHA-256"));
    }
    Ok(sha)
}

/// Downloads `url` to `dest`, resuming `dest.part` if an earlier download left
/// one, and renames it into place once its SHA-256 is `sha256` (if given).
fn download(url: &str, dest: &Path, sha256: Option<&str>) -> Result<(), String> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e: std::io::Error| format!("{}: {e}", p.display())
    };
    let part = dest.with_extension(format!(
        "{}.part",
        dest.extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    let mut request = agent(true).get(url);
    if have > 0 {
        request = request.header("Range", format!("bytes={have}-"));
    }
    let response = request.call().map_err(network(url))?;
    // 206: the server sends the rest; 200: it ignored the range, start over.
    let resumed = have > 0 && response.status().as_u16() == 206;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resumed)
        .truncate(!resumed)
        .open(&part)
        .map_err(io(&part))?;
    let start = if resumed { have } else { 0 };
    let total = response.body().content_length().map(|n| n + start);
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bar = crate::data::download_bar(total, &name);
    bar.set_position(start);
    if resumed {
        bar.println(format!("resuming {} at byte {start}", dest.display()));
    }
    let mut reader = response.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| format!("{url}: {e}; run it again to resume"))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).map_err(io(&part))?;
        bar.inc(n as u64);
    }
    out.sync_all().map_err(io(&part))?;
    drop(out);
    bar.finish_and_clear();
    if let Some(want) = sha256 {
        let got = ::data::sha256_file(&part).map_err(io(&part))?;
        if got != want {
            std::fs::remove_file(&part).map_err(io(&part))?;
            return Err(format!(
                "{url} sent a file with SHA-256 {got}, the hub publishes {want}; it was not saved"
            ));
        }
    }
    std::fs::rename(&part, dest).map_err(io(dest))
}

/// Fetches `config.json` and `model.safetensors` from `base` into `dir`,
/// checking the model against the SHA-256 the hub publishes. Returns the folder.
pub fn fetch_gpt2(dir: &Path, base: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let base = base.trim_end_matches('/');
    let model_url = format!("{base}/model.safetensors");
    let sha = published_sha256(&model_url)?;
    let model = dir.join("model.safetensors");
    let recorded = dir.join("model.safetensors.sha256");
    let have = model.is_file() && ::data::sha256_file(&model).ok().as_deref() == Some(sha.as_str());
    if have {
        println!("ok       {}", model.display());
    } else {
        download(&model_url, &model, Some(&sha))?;
        println!("fetched  {} (sha256 {sha})", model.display());
    }
    let mut file =
        std::fs::File::create(&recorded).map_err(|e| format!("{}: {e}", recorded.display()))?;
    writeln!(file, "{sha}  model.safetensors")
        .map_err(|e| format!("{}: {e}", recorded.display()))?;
    download(
        &format!("{base}/config.json"),
        &dir.join("config.json"),
        None,
    )?;
    println!("fetched  {}", dir.join("config.json").display());
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    //! Against a server on 127.0.0.1 that speaks like the hub: HEAD answers
    //! with a redirect carrying `X-Linked-Etag`, GET honours `Range`.

    use super::*;
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;
    use std::time::Instant;

    /// Serves `model` and `config` for `requests` requests; records each request's head.
    fn hub(
        model: Vec<u8>,
        sha: String,
        requests: usize,
    ) -> (String, Arc<Mutex<Vec<String>>>, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let handle = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut served = 0;
            while served < requests && Instant::now() < deadline {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                served += 1;
                stream.set_nonblocking(false).unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                log.lock().unwrap().push(head.clone());
                let mut words = head.split_whitespace();
                let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                let range = head.lines().find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("range: bytes=")
                        .map(|r| r.trim_end_matches('-').parse::<usize>().unwrap())
                });
                let reply = match (method, path) {
                    ("HEAD", "/model.safetensors") => format!(
                        "HTTP/1.1 302 Found\r\nLocation: /cdn/model.safetensors\r\nX-Linked-Etag: \"{sha}\"\r\nX-Linked-Size: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        model.len()
                    )
                    .into_bytes(),
                    ("GET", "/model.safetensors") => b"HTTP/1.1 302 Found\r\nLocation: /cdn/model.safetensors\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
                    ("GET", "/cdn/model.safetensors") => {
                        let from = range.unwrap_or(0);
                        let status = if range.is_some() { "206 Partial Content" } else { "200 OK" };
                        let mut r = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", model.len() - from).into_bytes();
                        r.extend(&model[from..]);
                        r
                    }
                    ("GET", "/config.json") => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec(),
                    _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
                };
                let _ = stream.write_all(&reply);
            }
        });
        (base, seen, handle)
    }

    fn model_bytes() -> (Vec<u8>, String) {
        let path =
            ::data::workspace_root().join("crates/gpt2/tests/fixtures/tiny/model.safetensors");
        let bytes = std::fs::read(path).unwrap();
        let sha = ::data::sha256_hex(&bytes);
        (bytes, sha)
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-hub-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_download_is_checked_against_the_hubs_sha256_and_kept_with_it() {
        let (bytes, sha) = model_bytes();
        let (base, _, server) = hub(bytes.clone(), sha.clone(), 4);
        let dir = temp_dir("good");
        fetch_gpt2(&dir, &base).unwrap();
        server.join().unwrap();
        assert_eq!(std::fs::read(dir.join("model.safetensors")).unwrap(), bytes);
        let recorded = std::fs::read_to_string(dir.join("model.safetensors.sha256")).unwrap();
        assert_eq!(recorded, format!("{sha}  model.safetensors\n"));
        assert_eq!(
            std::fs::read_to_string(dir.join("config.json")).unwrap(),
            "{}"
        );
    }

    #[test]
    fn an_interrupted_download_resumes_where_it_stopped() {
        let (bytes, sha) = model_bytes();
        let dir = temp_dir("resume");
        let half = bytes.len() / 2;
        std::fs::write(dir.join("model.safetensors.part"), &bytes[..half]).unwrap();
        let (base, seen, server) = hub(bytes.clone(), sha, 4);
        fetch_gpt2(&dir, &base).unwrap();
        server.join().unwrap();
        assert_eq!(std::fs::read(dir.join("model.safetensors")).unwrap(), bytes);
        let asked = seen.lock().unwrap().iter().any(|h| {
            h.to_ascii_lowercase()
                .contains(&format!("range: bytes={half}-"))
        });
        assert!(asked, "the second half was asked for with a range request");
        assert!(!dir.join("model.safetensors.part").exists());
    }

    #[test]
    fn a_file_whose_sha256_is_not_the_hubs_is_not_kept() {
        let (mut bytes, sha) = model_bytes();
        let last = bytes.len() - 1;
        bytes[last] ^= 1; // one flipped bit in the data
        let (base, _, server) = hub(bytes, sha.clone(), 3);
        let dir = temp_dir("flip");
        let e = fetch_gpt2(&dir, &base).unwrap_err();
        server.join().unwrap();
        assert!(e.contains(&sha) && e.contains("was not saved"), "{e}");
        assert!(
            !dir.join("model.safetensors").exists() && !dir.join("model.safetensors.part").exists()
        );
    }
}
