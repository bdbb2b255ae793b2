//! One `cpu`-stage training step (nanoGPT's CPU recipe: batch 12 × block 64,
//! 4 layers, 4 heads, n_embd 128), timed side by side with PyTorch's.
//!
//! `cargo bench -p gpt --bench train_step` prints ms per step, GFLOP/s and the
//! peak RSS; `train_step_torch.py` beside this file does the same step in
//! PyTorch, and `cargo xtask bench` runs both and reports the ratio.
//! Flags after `--`: `--stage full` for gpt.py's config, `--steps N`, `--warmup N`,
//! `--flash` for nanoGPT's fused attention (stage `cpu`).
//! The last line, `bench-row …`, is for `cargo xtask bench`'s table.
//! With `ZTH_PROFILE=1` it also prints the time per op kind over the timed steps.
//! It then times the step's matrix products alone, each at its own shape
//! (forward and backward, as `gemm` runs them in `tensor::matmul`): the
//! step's time at this machine's product rate for these small shapes.

use gpt::{Config, Shakespeare, Split, Stage, Trainer};
use std::time::Instant;

// As lecture 7's binary: mimalloc, keeping the pages it frees.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    tensor::keep_freed_memory();
    // ZTH_DTYPE=bfloat16: every product with bfloat16 operands (`gpt train --dtype bfloat16`).
    let dtype = std::env::var("ZTH_DTYPE").unwrap_or_else(|_| "float32".into());
    let _precision =
        tensor::bf16::precision_scope(dtype.parse().unwrap_or_else(|e| panic!("ZTH_DTYPE: {e}")));
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let stage = match flag("--stage").as_deref() {
        Some("full") => Stage::Full,
        _ => Stage::Cpu,
    };
    let steps: usize = flag("--steps").map_or(20, |s| s.parse().expect("--steps N"));
    let warmup: usize = flag("--warmup").map_or(3, |s| s.parse().expect("--warmup N"));
    let data = Shakespeare::load().expect("tinyshakespeare.txt (set ZTH_DATA)");
    let mut trainer = Trainer::new(Config::for_stage(stage));
    if args.iter().any(|a| a == "--flash") {
        match &mut trainer.model {
            gpt::Model::Gpt(model) => model.set_flash(true),
            _ => panic!("--flash: only the cpu stage has nanoGPT's attention"),
        }
    }
    let n_params = trainer.params.count();
    let flops = trainer.cfg.flops_per_iter(n_params);
    let mut times = Vec::new();
    for i in 0..warmup + steps {
        if i == warmup {
            // ZTH_PROFILE=1: only the timed steps in the table printed at exit.
            autograd::profile::reset();
        }
        let (x, y) = trainer.get_batch(&data, Split::Train);
        let t0 = Instant::now();
        trainer.step(&x, &y);
        if i >= warmup {
            times.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let products = products_alone_ms(&trainer.cfg);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "rust {} step: median {median:.2} ms, mean {mean:.2} ms over {steps} steps, {:.1} GFLOP/s, peak RSS {:.0} MiB, threads {}",
        stage.name(),
        flops / (median / 1000.0) / 1e9,
        report::peak_rss_mib().unwrap_or(f64::NAN),
        std::env::var("ZTH_THREADS").unwrap_or_else(|_| "all cores".into())
    );
    println!(
        "rust {} step's products alone, at their own shapes: {products:.2} ms, {:.0}% of the step",
        stage.name(),
        100.0 * products / median
    );
    // For `cargo xtask bench`'s table.
    println!(
        "bench-row gpt-{}-step ms={median} gflop={} rss_mib={}",
        stage.name(),
        flops / 1e9,
        report::peak_rss_mib().unwrap_or(f64::NAN)
    );
}

/// The milliseconds of one step's matrix products, each timed alone at its
/// shape (the median of 5 runs): per layer q·k·v, the attention's two batched
/// products, the projection and the MLP's two; then the head. Each forward
/// `[M,K]·[K,N]` has two backward products, `[M,N]·[N,K]` and `[K,M]·[M,N]`,
/// and each batched one its two as well.
fn products_alone_ms(cfg: &gpt::Config) -> f64 {
    let (b, t) = (cfg.train.batch_size, cfg.model.block_size());
    let (l, h, c) = match &cfg.model {
        gpt::ModelConfig::Video(m) => (m.n_layer, m.n_head, m.n_embd),
        gpt::ModelConfig::Gpt(m) => (m.n_layer, m.n_head, m.n_embd),
        gpt::ModelConfig::Bigram { .. } => return 0.0,
    };
    let (m, hs, v) = (b * t, c / h, cfg.model.vocab_size());
    // (batch, M, K, N) of every forward product.
    let mut forward = Vec::new();
    for _ in 0..l {
        forward.extend([(1, m, c, 3 * c), (b * h, t, hs, t), (b * h, t, t, hs)]);
        forward.extend([(1, m, c, c), (1, m, c, 4 * c), (1, m, 4 * c, c)]);
    }
    forward.push((1, m, c, v));
    let mut all = Vec::new();
    for &(n, mm, k, nn) in &forward {
        all.extend([(n, mm, k, nn), (n, mm, nn, k), (n, k, mm, nn)]);
    }
    let mut g = tensor::rng::TorchGenerator::manual_seed(1);
    let mut total = 0.0;
    for (n, mm, k, nn) in all {
        let (a, bm) = (g.randn(&[n, mm, k]), g.randn(&[n, k, nn]));
        let mut runs: Vec<f64> = (0..6)
            .map(|_| {
                let t0 = Instant::now();
                std::hint::black_box(a.matmul(&bm));
                t0.elapsed().as_secs_f64() * 1000.0
            })
            .skip(1)
            .collect();
        runs.sort_by(f64::total_cmp);
        total += runs[runs.len() / 2];
    }
    total
}
