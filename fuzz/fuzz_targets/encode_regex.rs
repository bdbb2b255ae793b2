//! Encode arbitrary bytes with lecture 8's RegexTokenizer and decode them back: the same
//! bytes (faults::fuzzing::round_trip).
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    faults::fuzzing::fuzz_round_trip("encode_regex", bytes);
});
