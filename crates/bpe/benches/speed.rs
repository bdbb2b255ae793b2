//! Lecture 8's speed goals, measured side by side in one run: `cargo xtask bench --crate bpe`
//! runs this, then `minbpe_train.py` beside it, which times minbpe's Python on the same
//! machine and prints the ratios from the figures this bench leaves in
//! `target/tmp/bpe-speed.json`. Needs ZTH_DATA (xtask sets it), and MINBPE (a checkout of
//! karpathy/minbpe) for the Python side.
//!
//! - training vocab 512 on taylorswift.txt vs minbpe's Python (goal: 100x faster);
//! - the incremental trainer vs the plain one, and vocab 10,000 on tinyshakespeare.txt;
//! - encoding throughput with cl100k_base / r50k_base vs tiktoken-rs on the same text
//!   (goal: at least equal).

use std::time::Instant;

use bpe::train::{train_incremental, train_plain};
use bpe::{Gpt2Tokenizer, Gpt4Tokenizer, RegexTokenizer, Splitter, GPT4_SPLIT_PATTERN};

/// Best wall time of `n` runs, in seconds (the least disturbed by other work on the machine).
fn best<T>(n: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..n {
        let t0 = Instant::now();
        std::hint::black_box(f());
        best = best.min(t0.elapsed().as_secs_f64());
    }
    best
}

fn text(name: &str) -> String {
    data::read_text(name).unwrap_or_else(|e| panic!("{e}"))
}

fn main() {
    let swift = text("taylorswift.txt");
    let shakespeare = text("tinyshakespeare.txt");

    // Training, vocab 512, as train.py.
    let basic = best(10, || {
        bpe::BasicTokenizer::new()
            .train(&swift, 512, false)
            .unwrap()
    });
    let regex = best(10, || {
        RegexTokenizer::default().train(&swift, 512, false).unwrap()
    });
    println!(
        "rust   train vocab 512 on taylorswift.txt: Basic {:8.1} ms, Regex {:8.1} ms",
        basic * 1e3,
        regex * 1e3
    );

    let chunks = Splitter::new(GPT4_SPLIT_PATTERN)
        .unwrap()
        .chunks(swift.as_bytes())
        .unwrap();
    let plain = best(1, || train_plain(&chunks, 512).unwrap());
    let incr = best(10, || train_incremental(&chunks, 512).unwrap());
    println!(
        "rust   Regex 512 merges only: plain {:.1} ms, incremental {:.1} ms ({:.0}x)",
        plain * 1e3,
        incr * 1e3,
        plain / incr
    );
    let big = best(3, || {
        RegexTokenizer::default()
            .train(&shakespeare, 10_000, false)
            .unwrap()
    });
    println!("rust   train vocab 10,000 on tinyshakespeare.txt (GPT-4 pattern): {big:.2} s");

    // Encoding throughput against tiktoken-rs, same text, single thread.
    let gpt4 = Gpt4Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}"));
    let gpt2 = Gpt2Tokenizer::from_data_dir().unwrap_or_else(|e| panic!("{e}"));
    let cl100k = tiktoken_rs::cl100k_base_singleton();
    let r50k = tiktoken_rs::r50k_base_singleton();
    let fast = Splitter::new(GPT4_SPLIT_PATTERN).unwrap();
    let fancy = Splitter::fancy(GPT4_SPLIT_PATTERN).unwrap();
    let mb = shakespeare.len() as f64 / 1e6;
    let t_fast = best(5, || fast.chunks(shakespeare.as_bytes()).unwrap().len());
    let t_fancy = best(5, || fancy.chunks(shakespeare.as_bytes()).unwrap().len());
    println!(
        "rust   GPT-4 split of tinyshakespeare.txt alone: DFA {:.1} MB/s, fancy-regex {:.1} MB/s",
        mb / t_fast,
        mb / t_fancy
    );
    let mut ratios = Vec::new();
    for (file, text) in [
        ("taylorswift.txt", &swift),
        ("tinyshakespeare.txt", &shakespeare),
    ] {
        let mb = text.len() as f64 / 1e6;
        assert_eq!(
            gpt4.encode_ordinary(text).unwrap(),
            cl100k.encode_ordinary(text)
        );
        let ours4 = mb / best(7, || gpt4.encode_ordinary(text).unwrap());
        let theirs4 = mb / best(7, || cl100k.encode_ordinary(text));
        let ours2 = mb / best(7, || gpt2.encode_ordinary(text).unwrap());
        let theirs2 = mb / best(7, || r50k.encode_ordinary(text));
        println!(
            "rust   encode {file:<20} cl100k: ours {ours4:6.1} MB/s, tiktoken-rs {theirs4:6.1} MB/s ({:.2}x); \
             r50k: ours {ours2:6.1}, tiktoken-rs {theirs2:6.1} ({:.2}x)",
            ours4 / theirs4,
            ours2 / theirs2
        );
        ratios.push(ours4 / theirs4);
    }

    println!(
        "ratio  cl100k encode vs tiktoken-rs: {} (goal >= 1.00)",
        ratios
            .iter()
            .map(|r| format!("{r:.2}x"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let figures = serde_json::json!({
        "train_basic_s": basic, "train_regex_s": regex, "plain_regex_s": plain,
        "incremental_regex_s": incr, "vocab_10000_s": big, "cl100k_vs_tiktoken_rs": ratios,
    });
    let path = concat!(env!("CARGO_TARGET_TMPDIR"), "/bpe-speed.json");
    std::fs::write(path, figures.to_string()).unwrap();
    println!("wrote {path}; benches/minbpe_train.py times minbpe beside these figures");
}
