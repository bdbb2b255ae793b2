//! Encode arbitrary bytes and decode them back: the same bytes (faults::fuzzing::round_trip).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static TOKENIZERS: OnceLock<faults::fuzzing::Tokenizers> = OnceLock::new();

fuzz_target!(|bytes: &[u8]| {
    let tokenizers = TOKENIZERS.get_or_init(|| faults::fuzzing::Tokenizers::load().unwrap());
    if let Err(e) = faults::fuzzing::round_trip(tokenizers, "encode_gpt4", bytes) {
        panic!("{e}");
    }
});
