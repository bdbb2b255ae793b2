//! `ZTH_DATA` decides where the data is looked up, and a bad copy there is
//! reported with the folder, URL and checksums.
//!
//! One test in its own binary: it sets the process's environment, which other
//! threads must not race with.

use std::path::PathBuf;

#[test]
fn zth_data_missing_corrupt_and_good_copies() {
    // The real names.txt, found the ordinary way, is the source for the good copy.
    let real = data::path("names.txt").unwrap_or_else(|e| panic!("{e}"));

    let dir: PathBuf = std::env::temp_dir().join(format!("data-zth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Safe: this binary's only test, so no other thread reads the environment.
    std::env::set_var(data::ENV_VAR, &dir);

    let missing = data::makemore::words().unwrap_err().to_string();
    for needle in [
        "`names.txt` not found",
        dir.to_str().unwrap(),
        "ZTH_DATA",
        "https://raw.githubusercontent.com/karpathy/makemore/master/names.txt",
        "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d",
        "cargo xtask data",
        "ZTH_DATA=DIR",
    ] {
        assert!(missing.contains(needle), "{needle:?} not in:\n{missing}");
    }

    // A truncated copy: the last byte dropped.
    let bytes = std::fs::read(&real).unwrap();
    std::fs::write(dir.join("names.txt"), &bytes[..bytes.len() - 1]).unwrap();
    let truncated_sha = data::sha256_hex(&bytes[..bytes.len() - 1]);
    let corrupt = data::makemore::words().unwrap_err().to_string();
    for needle in [
        "`names.txt`",
        "is corrupt",
        dir.to_str().unwrap(),
        "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d",
        truncated_sha.as_str(),
        "cargo xtask data",
    ] {
        assert!(corrupt.contains(needle), "{needle:?} not in:\n{corrupt}");
    }

    std::fs::write(dir.join("names.txt"), &bytes).unwrap();
    assert_eq!(data::path("names.txt").unwrap(), dir.join("names.txt"));
    assert_eq!(data::makemore::words().unwrap().len(), 32_033);

    std::env::remove_var(data::ENV_VAR);
    std::fs::remove_dir_all(&dir).unwrap();
}
