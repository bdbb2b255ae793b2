//! Arbitrary bytes as a minbpe `.model` file: an error or a working tokenizer, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err(e) = faults::fuzzing::minbpe_model(bytes) {
        panic!("{e}");
    }
});
