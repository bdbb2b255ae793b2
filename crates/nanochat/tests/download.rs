//! `nanochat data`'s downloads against a server on 127.0.0.1 that each test starts: it answers
//! a fixed number of requests (range requests included), then stops, or gives up after 20 s.
//! The files served are the parquet fixtures of `tests/fixtures/shards` (made by pyarrow).

mod shard_server;

use nanochat::download::{shards_to_download, Downloader, MAX_SHARD};
use shard_server::{serve, Answer, Request};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn shard(i: usize) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/shards/shard_{i:05}.parquet"));
    std::fs::read(path).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nanochat-download-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn downloader(base: &str, attempts: u32) -> Downloader {
    Downloader {
        base_url: base.to_string(),
        workers: 2,
        max_attempts: attempts,
        backoff: Duration::from_millis(10),
    }
}

fn lines() -> (Arc<Mutex<Vec<String>>>, impl Fn(String) + Sync) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    (lines, move |l: String| sink.lock().unwrap().push(l))
}

#[test]
fn the_first_n_shards_and_val_arrive_whole_and_are_kept() {
    assert_eq!(shards_to_download(2), vec![0, 1, MAX_SHARD]);
    assert_eq!(shards_to_download(-1).len(), MAX_SHARD + 1);
    let files = vec![
        ("/shard_00000.parquet".to_string(), shard(0)),
        ("/shard_06542.parquet".to_string(), shard(2)),
    ];
    let server = serve(files.clone(), 2, vec![]);
    let dir = temp_dir("whole");
    let (said, say) = lines();
    let done = downloader(&server.base, 1)
        .download(&shards_to_download(1), &dir, &say)
        .unwrap();
    assert_eq!(done, 2);
    server.handle.join().unwrap();
    assert_eq!(
        std::fs::read(dir.join("shard_00000.parquet")).unwrap(),
        shard(0)
    );
    assert_eq!(
        std::fs::read(dir.join("shard_06542.parquet")).unwrap(),
        shard(2)
    );
    assert!(!dir.join("shard_00000.parquet.tmp").exists());
    // A second run finds both whole and asks for nothing.
    downloader("http://127.0.0.1:9", 1)
        .download(&shards_to_download(1), &dir, &say)
        .unwrap();
    let said = said.lock().unwrap();
    assert_eq!(
        said.iter().filter(|l| l.starts_with("Skipping")).count(),
        2,
        "{said:#?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Serves shard 0 for `requests` requests (answered by `answers` first), downloads it into
/// `dir` with `requests` attempts, checks it arrived whole, and returns what the server saw
/// (each request's path and range) and the lines said.
fn fetch_shard_0(dir: &Path, requests: usize, answers: Vec<Answer>) -> (Vec<Request>, Vec<String>) {
    let server = serve(
        vec![("/shard_00000.parquet".to_string(), shard(0))],
        requests,
        answers,
    );
    let (said, say) = lines();
    downloader(&server.base, requests as u32)
        .download_one(0, dir, &say)
        .unwrap();
    server.handle.join().unwrap();
    assert_eq!(
        std::fs::read(dir.join("shard_00000.parquet")).unwrap(),
        shard(0)
    );
    let seen = server.seen.lock().unwrap().clone();
    let said = said.lock().unwrap().clone();
    (seen, said)
}

#[test]
fn a_partial_download_resumes_where_it_stopped() {
    let dir = temp_dir("resume");
    std::fs::write(dir.join("shard_00000.parquet.tmp"), &shard(0)[..1000]).unwrap();
    let (seen, _) = fetch_shard_0(&dir, 1, vec![]);
    assert_eq!(seen[0].1.as_deref(), Some("bytes=1000-"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_download_cut_short_is_tried_again_from_where_it_was_cut() {
    let dir = temp_dir("cut");
    let (seen, said) = fetch_shard_0(&dir, 2, vec![Answer::CutAfter(5000)]);
    assert!(
        said.iter()
            .any(|l| l.starts_with("Attempt 1/2 failed for shard_00000.parquet")),
        "{said:#?}"
    );
    assert_eq!(seen[1].1.as_deref(), Some("bytes=5000-"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_that_is_not_parquet_is_refused_and_not_kept() {
    let dir = temp_dir("foreign");
    let server = serve(
        vec![(
            "/shard_00000.parquet".to_string(),
            b"<html>rate limited</html>".to_vec(),
        )],
        2,
        vec![],
    );
    let (said, say) = lines();
    let e = downloader(&server.base, 2)
        .download(&[0], &dir, &say)
        .unwrap_err();
    server.handle.join().unwrap();
    assert!(
        e.contains("shard_00000.parquet") && e.contains("after 2 attempts"),
        "{e}"
    );
    let said = said.lock().unwrap();
    assert!(
        said.iter().any(|l| l.contains("not a whole parquet file")),
        "{said:#?}"
    );
    assert!(
        !dir.join("shard_00000.parquet").exists() && !dir.join("shard_00000.parquet.tmp").exists()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_shard_in_place_is_downloaded_again() {
    let dir = temp_dir("damaged");
    std::fs::write(dir.join("shard_00000.parquet"), &shard(0)[..3000]).unwrap();
    let (_, said) = fetch_shard_0(&dir, 1, vec![]);
    assert!(said.iter().any(|l| l.ends_with("downloading it again")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let dir = temp_dir("missing");
    let server = serve(vec![], 1, vec![]);
    let (said, say) = lines();
    let e = downloader(&server.base, 1)
        .download(&[7], &dir, &say)
        .unwrap_err();
    server.handle.join().unwrap();
    assert!(e.contains("shard_00007.parquet"), "{e}");
    assert!(said.lock().unwrap().iter().any(|l| l.contains("HTTP 404")));
    std::fs::remove_dir_all(&dir).unwrap();
}
