//! Every input of the fuzz corpora (`fuzz/corpus/`) and every input that
//! ever failed (`fuzz/regressions/`), replayed through its target's function
//! on stable Rust: no panic, no wrong answer.

use faults::fuzzing;

#[test]
fn every_fuzz_corpus_input_passes_its_target() {
    let tokenizers = fuzzing::Tokenizers::load().unwrap();
    let scratch = std::env::temp_dir().join(format!("faults-fuzz-replay-{}", std::process::id()));
    for target in fuzzing::TARGETS {
        let inputs = fuzzing::inputs(target);
        assert!(!inputs.is_empty(), "fuzz/corpus/{target} is empty");
        for (path, bytes) in inputs {
            let result = fuzzing::run_target(&tokenizers, target, &bytes, &scratch);
            assert!(result.is_ok(), "{}: {result:?}", path.display());
        }
    }
    let _ = std::fs::remove_dir_all(scratch);
}
