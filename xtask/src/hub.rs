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

use ::data::download::{self, DownloadError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The hub's folder for the `gpt2` checkpoint.
pub const HUB_URL: &str = "https://huggingface.co/openai-community/gpt2/resolve/main";
/// Environment variable with a folder URL that replaces [`HUB_URL`].
pub const URL_VAR: &str = "ZTH_GPT2_URL";

/// The SHA-256 the hub publishes for a file it serves from LFS.
fn published_sha256(url: &str) -> Result<String, String> {
    let response = download::agent(false).head(url).call().map_err(|e| {
        let error = e.to_string();
        DownloadError::Network {
            url: url.into(),
            error,
        }
        .to_string()
    })?;
    let status = response.status().as_u16();
    if status >= 400 {
        return Err(DownloadError::Status {
            url: url.into(),
            status,
        }
        .to_string());
    }
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
    let part = dest.with_extension(format!(
        "{}.part",
        dest.extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    download::fetch_resuming(url, &part, &name)
        .map_err(|e| format!("{e}; run it again to resume"))?;
    match sha256 {
        Some(want) => download::keep_if_sha256(&part, dest, url, want, |got| got == want),
        None => std::fs::rename(&part, dest).map_err(|error| DownloadError::Io {
            path: dest.to_path_buf(),
            error,
        }),
    }
    .map_err(|e| e.to_string())
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
    use std::io::Read;
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

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
