//! Shared helpers for the integration tests: fixtures and data files.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// `tests/fixtures/<name>`.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A JSON fixture.
pub fn fixture_json(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture_path(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A data file from `$ZTH_DATA` (or the workspace's datasets/); panics with the data crate's
/// message (which says `cargo xtask data` / `ZTH_DATA=DIR`) when it is missing.
pub fn data_text(name: &str) -> String {
    match data::read_text(name) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

/// A JSON array of ids.
pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// The pairs of a JSON list of [a, b].
pub fn pairs(v: &Value) -> Vec<(u32, u32)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let p = ids(p);
            (p[0], p[1])
        })
        .collect()
}

/// Length and sha256 of the ids as compact JSON, as make_fixtures.py fingerprints them.
pub fn fingerprint(ids: &[u32]) -> (usize, String) {
    (ids.len(), bpe::ids_sha256(ids))
}
