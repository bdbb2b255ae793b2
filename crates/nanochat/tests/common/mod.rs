//! A model that answers arithmetic with the calculator, trained from scratch in seconds: the
//! tool-use gate and the server's tests share it.

#![allow(dead_code)] // each test binary uses part of it

use nanochat::chat_sft::{Sft, SftBatches, SftSchedule};
use nanochat::gpt::{Gpt, GptConfig};
use nanochat::tasks::{arithmetic_problem, Arithmetic, Split, TaskMixture};
use nanochat::Tokenizer;
use tensor::rng::TorchGenerator;

/// Problems in the training mixture.
pub const TRAIN_PROBLEMS: usize = 6000;

/// A 512-token tokenizer trained on the text of 2,000 training problems.
pub fn arithmetic_tokenizer() -> Tokenizer {
    let texts: Vec<String> = (0..2000)
        .map(|i| {
            let (q, a) = arithmetic_problem(i, Split::Train);
            format!("{q}\n{a}")
        })
        .collect();
    let docs: Vec<&str> = texts.iter().map(String::as_str).collect();
    Tokenizer::train_from_documents(&docs, 512).unwrap()
}

/// A depth-2 model (128 channels, two heads of 64, context 128) initialised from `seed` and
/// fine-tuned from scratch on the arithmetic conversations for `steps` steps of 8 rows, with
/// nanochat's optimizer and SFT schedule. Returns it and its last loss.
pub fn train_arithmetic(seed: u64, steps: usize, tokenizer: &Tokenizer) -> (Gpt, f32) {
    let config = GptConfig::from_depth(2, 64, 64, 128, tokenizer.vocab_size(), "L").unwrap();
    let model = Gpt::new(config, &mut TorchGenerator::manual_seed(seed)).unwrap();
    let optimizer = model.setup_optimizer(0.008, 0.3, 0.02, 0.0, 0.5);
    let mixture = TaskMixture::new(vec![Box::new(Arithmetic::new(
        TRAIN_PROBLEMS,
        Split::Train,
    ))]);
    let batches = SftBatches::new(&mixture, tokenizer, 8, 128, true, steps as i64).unwrap();
    let schedule = SftSchedule {
        warmup_ratio: 0.0,
        warmdown_ratio: 0.5,
        final_lr_frac: 0.0,
    };
    let mut run = Sft::new(model, optimizer, schedule, 1, batches).unwrap();
    let mut last = f32::NAN;
    while !run.batches.last_step {
        last = run.train_step().unwrap().0[0];
    }
    (run.model, last)
}
