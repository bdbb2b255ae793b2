//! A name and contents through the data catalogue's SHA-256 check: accepted
//! exactly when the catalogue knows the name and the hash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static SCRATCH: OnceLock<std::path::PathBuf> = OnceLock::new();

fuzz_target!(|bytes: &[u8]| {
    let scratch = SCRATCH.get_or_init(|| {
        std::env::temp_dir().join(format!("fuzz-catalogue-{}", std::process::id()))
    });
    if let Err(e) = faults::fuzzing::catalogue(bytes, scratch) {
        panic!("{e}");
    }
});
