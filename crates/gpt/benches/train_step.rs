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

use gpt::{Config, Shakespeare, Split, Stage, Trainer};
use std::time::Instant;

// As lecture 7's binary: mimalloc, keeping the pages it frees.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    gpt::keep_freed_memory();
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
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "rust {} step: median {median:.2} ms, mean {mean:.2} ms over {steps} steps, {:.1} GFLOP/s, peak RSS {:.0} MiB, threads {}",
        stage.name(),
        flops / (median / 1000.0) / 1e9,
        report::peak_rss_mib().unwrap_or(f64::NAN),
        std::env::var("ZTH_THREADS").unwrap_or_else(|_| "all cores".into())
    );
    // For `cargo xtask bench`'s table.
    println!(
        "bench-row gpt-{}-step ms={median} gflop={} rss_mib={}",
        stage.name(),
        flops / 1e9,
        report::peak_rss_mib().unwrap_or(f64::NAN)
    );
}
