//! Arbitrary bytes as a lecture 7 checkpoint: an error or a finite model, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err(e) = faults::fuzzing::checkpoint(bytes) {
        panic!("{e}");
    }
});
