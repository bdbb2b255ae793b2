//! `cargo xtask data`: download the catalogue's files and check their SHA-256.
//!
//! Files go into the folder the `data` crate reads from: `$ZTH_DATA` if set,
//! else the workspace's `datasets/` (or `--dir DIR`). So after this task,
//! `data::path(name)` finds them. A download goes to a temporary file beside the
//! target, is hashed, and only a file with the catalogue's checksum is renamed
//! into place: an interrupted or wrong download never looks like a good file.
//!
//! `ZTH_DATA_MIRROR=URL` fetches `URL/<name>` instead of each file's own URL
//! (a local mirror; the tests use it for a server on 127.0.0.1).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ::data::download::{self, DownloadError};
use ::data::{DataDir, DataError, DataFile, FILES};

use crate::TaskResult;

/// Environment variable with a base URL that replaces each file's own URL.
const MIRROR_VAR: &str = "ZTH_DATA_MIRROR";

#[derive(clap::Args)]
pub struct Args {
    /// Only this file, as named in datasets/README.md (e.g. names.txt, tokenizers/vocab.bpe);
    /// `gpt2` fetches OpenAI's GPT-2 (124M) from the Hugging Face hub into gpt2/ (548 MB).
    name: Option<String>,
    /// Only verify what is there; download nothing.
    #[arg(long)]
    check: bool,
    /// The folder to fill (default: $ZTH_DATA if set, else the workspace's datasets/).
    #[arg(long)]
    dir: Option<PathBuf>,
}

pub fn run(args: Args) -> TaskResult {
    let dir = match args.dir {
        Some(d) => DataDir::explicit(d),
        None => DataDir::resolve(),
    };
    if args.name.as_deref() == Some("gpt2") {
        // Not in the catalogue: large, and checked against the hub's own checksum.
        let base =
            std::env::var(crate::hub::URL_VAR).unwrap_or_else(|_| crate::hub::HUB_URL.to_string());
        let folder = crate::hub::fetch_gpt2(&dir.path.join("gpt2"), &base)?;
        println!(
            "gpt2 is in {}: cargo run --release -p gpt2 -- sample --model {}",
            folder.display(),
            folder.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let files: Vec<&'static DataFile> = match &args.name {
        Some(name) => vec![::data::file(name)
            .ok_or_else(|| DataError::Unknown { name: name.clone() }.to_string())?],
        None => FILES.iter().collect(),
    };
    let mirror = std::env::var(MIRROR_VAR).ok();
    let mut first_error = None;
    let mut failed = 0;
    for file in files {
        let error = match dir.path(file.name) {
            Ok(_) => {
                println!("ok       {}", file.name);
                continue;
            }
            Err(e @ (DataError::Missing { .. } | DataError::Corrupt { .. })) if !args.check => {
                match fetch(file, &dir.path, mirror.as_deref()) {
                    Ok(path) => {
                        println!("fetched  {} -> {}", file.name, path.display());
                        continue;
                    }
                    Err(fe) => {
                        println!("FAILED   {}: {fe}", file.name);
                        e
                    }
                }
            }
            Err(e) => {
                match &e {
                    DataError::Missing { .. } => println!("MISSING  {}", file.name),
                    DataError::Corrupt { actual, .. } => {
                        println!("CORRUPT  {} (sha256 {actual})", file.name)
                    }
                    _ => println!("ERROR    {}: {e}", file.name),
                }
                e
            }
        };
        failed += 1;
        first_error.get_or_insert(error);
    }
    if let Some(e) = first_error {
        // One full message is enough: it carries the folder and the ways out.
        eprintln!("\n{e}\n");
        return Err(format!(
            "{failed} data file(s) missing or corrupt in {}",
            dir.path.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// The data folder, holding every file in `names` with the right checksum,
/// downloading any that are missing or corrupt. For `lecture` and `test`.
pub fn ensure(names: &[&str]) -> Result<DataDir, String> {
    let mut dir = DataDir::resolve();
    let mirror = std::env::var(MIRROR_VAR).ok();
    for name in names {
        match dir.path(name) {
            Ok(_) => {}
            Err(e @ (DataError::Missing { file, .. } | DataError::Corrupt { file, .. })) => {
                eprintln!("fetching {name} into {}", dir.path.display());
                fetch(file, &dir.path, mirror.as_deref())
                    .map_err(|fe| format!("{e}\n\nDownloading it failed: {fe}"))?;
                dir.path(name).map_err(|e| e.to_string())?;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    // The child runs from the workspace root; a relative ZTH_DATA must not move.
    if let Ok(abs) = std::path::absolute(&dir.path) {
        dir.path = abs;
    }
    Ok(dir)
}

/// Downloads `file` into `dir` (from `base/<name>` if a base URL is given),
/// checks its SHA-256 and renames it into place. Returns the final path.
pub fn fetch(file: &DataFile, dir: &Path, base: Option<&str>) -> Result<PathBuf, DownloadError> {
    let url = match base {
        Some(base) => format!("{}/{}", base.trim_end_matches('/'), file.name),
        None => file.url.to_string(),
    };
    let dest = dir.join(file.name);
    let parent = dest.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|error| DownloadError::Io {
        path: parent.to_path_buf(),
        error,
    })?;
    // A part file of this process's own: the datasets are small, so a
    // download starts over rather than resuming another's.
    let file_name = dest.file_name().map(|n| n.to_string_lossy().into_owned());
    let part = parent.join(format!(
        ".{}.part-{}",
        file_name.unwrap_or_default(),
        std::process::id()
    ));
    let result = download::fetch_resuming(&url, &part, file.name).and_then(|()| {
        download::keep_if_sha256(&part, &dest, &url, file.sha256, |sha| file.accepts(sha))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    result.map(|()| dest)
}

#[cfg(test)]
mod tests {
    //! Downloads against a server on 127.0.0.1 started by each test: it answers
    //! a fixed number of requests, then stops (or gives up after 20 s).

    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    fn serve(routes: Vec<(&'static str, Vec<u8>)>, requests: usize) -> (String, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
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
                served += 1;
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split_whitespace().nth(1).unwrap_or("");
                let body = routes.iter().find(|(p, _)| *p == path).map(|(_, b)| b);
                let _ = match body {
                    Some(b) => stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                b.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|()| stream.write_all(b)),
                    None => stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                };
            }
        });
        (base, handle)
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_good_download_is_verified_and_put_in_place() {
        // The real vocab.bpe, found the ordinary way, is what the server sends.
        let real = ::data::path("tokenizers/vocab.bpe").unwrap_or_else(|e| panic!("{e}"));
        let bytes = std::fs::read(real).unwrap();
        let (base, server) = serve(vec![("/tokenizers/vocab.bpe", bytes.clone())], 1);
        let dir = temp_dir("good");
        let file = ::data::file("tokenizers/vocab.bpe").unwrap();
        let path = fetch(file, &dir, Some(&base)).unwrap();
        server.join().unwrap();
        assert_eq!(path, dir.join("tokenizers/vocab.bpe"));
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(entries(&dir.join("tokenizers")), ["vocab.bpe"]);
        assert!(DataDir::explicit(&dir).path("tokenizers/vocab.bpe").is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_wrong_checksum_leaves_no_file() {
        let (base, server) = serve(vec![("/names.txt", b"abc".to_vec())], 1);
        let dir = temp_dir("mismatch");
        let err = fetch(::data::file("names.txt").unwrap(), &dir, Some(&base)).unwrap_err();
        server.join().unwrap();
        let msg = err.to_string();
        assert!(matches!(err, DownloadError::Checksum { .. }), "{msg}");
        assert!(msg.contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        assert!(msg.contains("0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d"));
        assert!(msg.contains("not saved"), "{msg}");
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_404_is_reported_with_its_url() {
        let (base, server) = serve(vec![], 1);
        let dir = temp_dir("404");
        let err = fetch(::data::file("taylorswift.txt").unwrap(), &dir, Some(&base)).unwrap_err();
        server.join().unwrap();
        let msg = err.to_string();
        assert!(
            matches!(err, DownloadError::Status { status: 404, .. }),
            "{msg}"
        );
        assert!(
            msg.contains(&format!("{base}/taylorswift.txt answered HTTP 404")),
            "{msg}"
        );
        assert!(entries(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_refused_connection_is_a_network_error() {
        // Bind, note the port, close: nothing listens there now.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let dir = temp_dir("refused");
        let err = fetch(::data::file("names.txt").unwrap(), &dir, Some(&base)).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, DownloadError::Network { .. }), "{msg}");
        assert!(
            msg.contains(&format!("could not download {base}/names.txt")),
            "{msg}"
        );
        assert!(entries(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
