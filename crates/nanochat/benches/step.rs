//! One base_train step of a depth-4 nanochat (width 256, 2 heads, vocabulary 4,096, window
//! pattern SSSL) on 8 rows of 256 tokens of tiny Shakespeare, as the README's 10-minute CPU
//! run takes it: forward, backward and MuonAdamW, timed with `cargo bench -p nanochat --bench
//! step`. `step_torch.py` beside this file times nanochat's own step (eager, float32).

use clap::Parser;
use nanochat::base_train::{build_model, BaseTrain, BaseTrainArgs, Plan};
use nanochat::dataloader::InMemory;
use nanochat::documents::train_val_split;
use nanochat::Tokenizer;
use std::path::PathBuf;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WARMUP: usize = 3;
const STEPS: usize = 10;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BaseTrainArgs,
}

fn main() {
    tensor::keep_freed_memory();
    let argv = [
        "bench",
        "--depth=4",
        "--max-seq-len=256",
        "--device-batch-size=8",
        "--total-batch-size=2048",
        "--num-iterations=1000",
    ];
    let args = flags::parse_from::<Cli>(argv).args;
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/base_train");
    let pkl = std::fs::read(fixtures.join("tokenizer_4096.pkl")).unwrap();
    let tokenizer =
        Tokenizer::from_state(nanochat::pickle::loads(&pkl).unwrap(), "tokenizer_4096.pkl")
            .unwrap();
    let text = data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"));
    let (train, _): (InMemory, InMemory) = train_val_split(&text).unwrap();
    let model = build_model(&args, tokenizer.vocab_size()).unwrap();
    let mut quiet = |_: String| {};
    let mut plan = Plan::new(&args, &model, &mut quiet).unwrap();
    plan.horizon(&args, &mut quiet).unwrap();
    let mut run = BaseTrain::new(&args, model, &plan, &tokenizer, train, None).unwrap();
    for _ in 0..WARMUP {
        run.train_step().unwrap();
    }
    autograd::profile::reset(); // ZTH_PROFILE=1: only the timed steps in the table printed at exit
    let start = Instant::now();
    for _ in 0..STEPS {
        run.train_step().unwrap();
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / STEPS as f64;
    println!("nanochat d4 base_train step (rust): {ms:.2} ms");
    println!("bench-row nanochat-d4-step ms={ms}");
}
