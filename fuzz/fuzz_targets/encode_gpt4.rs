//! Encode arbitrary bytes with GPT-4's tokenizer and decode them back: the same
//! bytes (faults::fuzzing::round_trip).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    faults::fuzzing::fuzz_round_trip("encode_gpt4", bytes);
});
