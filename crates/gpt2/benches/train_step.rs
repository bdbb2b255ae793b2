//! GPT-2 training steps, timed beside `train_step_torch.py` (PyTorch running
//! build-nanogpt's model on the same work; `cargo xtask bench --crate gpt2`
//! runs both):
//! - one step of the 124M model (vocab 50,304) at B=4, T=64: forward,
//!   backward, clipping and AdamW as `configure_optimizers` sets it up;
//! - one step of the `cpu` stage's model (7.2M parameters) at B=16, T=64,
//!   and its tokens per second.
//!
//! Prints the median of several steps and the peak RSS.

use gpt2::recipe::RecipeConfig;
use gpt2::train::{accumulated_step, configure_optimizers};
use gpt2::{Gpt, GptConfig, InitScheme};
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The median milliseconds of `runs` training steps of `config` at `b`×`t`, after one warm-up step.
fn step_ms(config: GptConfig, (b, t): (usize, usize), runs: usize) -> f64 {
    let (mut model, mut params) = Gpt::seeded(config, InitScheme::Gpt2, 1337);
    // ZTH_FLASH=1: the fused attention (build-nanogpt's F.scaled_dot_product_attention).
    model.set_flash(std::env::var("ZTH_FLASH").is_ok_and(|v| v == "1"));
    let mut optimizer = configure_optimizers(&params, 0.1, 6e-4);
    let ids: Vec<usize> = (0..b * t + 1).map(|i| (i * 7919) % 50257).collect();
    let mut next_batch = || (ids[..b * t].to_vec(), ids[1..].to_vec());
    let mut times: Vec<f64> = (0..=runs)
        .map(|_| {
            let t0 = Instant::now();
            accumulated_step(
                &model,
                &mut params,
                &mut optimizer,
                &mut next_batch,
                (b, t),
                1,
                6e-4,
                &gpt2::ddp::SingleProcess,
            );
            t0.elapsed().as_secs_f64() * 1e3
        })
        .skip(1)
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

/// A training step's FLOPs, as nanoGPT's `estimate_mfu` counts them (PaLM's
/// appendix B): 6 per parameter per token, plus attention's 12·L·C·T per token.
fn step_gflop(config: GptConfig, (b, t): (usize, usize)) -> f64 {
    let (l, c, v) = (config.n_layer, config.n_embd, config.vocab_size);
    let params = v * c + config.block_size * c + l * (12 * c * c + 13 * c) + 2 * c;
    (6 * params + 12 * l * c * t) as f64 * (b * t) as f64 / 1e9
}

fn main() {
    gpt2::keep_freed_memory();
    // ZTH_DTYPE=bfloat16: every product with bfloat16 operands (`gpt2 train --dtype bfloat16`).
    let dtype = std::env::var("ZTH_DTYPE").unwrap_or_else(|_| "float32".into());
    let _precision =
        tensor::bf16::precision_scope(dtype.parse().unwrap_or_else(|e| panic!("ZTH_DTYPE: {e}")));
    println!("products in {dtype} ({})", tensor::bf16::kernel());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("gpt2 train step, {threads} threads available");
    let cpu = RecipeConfig::cpu();
    let ms = step_ms(cpu.model, (cpu.b, cpu.t), 9);
    println!(
        "gpt2 cpu-stage step B=16 T=64 (7.2M): {ms:.1} ms, {:.0} tok/s",
        (cpu.b * cpu.t) as f64 / ms * 1e3
    );
    let mut gpt2 = GptConfig::preset("gpt2").unwrap();
    gpt2.vocab_size = 50304;
    let ms = step_ms(gpt2, (4, 64), 3);
    println!("gpt2 124M train step B=4 T=64: {ms:.0} ms");
    println!(
        "bench-row gpt2-step-b4t64 ms={ms} gflop={}",
        step_gflop(gpt2, (4, 64))
    );
    let ms = step_ms(gpt2, (1, 1024), 3);
    println!("gpt2 124M train step B=1 T=1024: {ms:.0} ms");
    println!(
        "bench-row gpt2-step-b1t1024 ms={ms} gflop={}",
        step_gflop(gpt2, (1, 1024))
    );
    println!(
        "gpt2 train step peak RSS: {:.0} MiB",
        report::peak_rss_mib().unwrap_or(f64::NAN)
    );
}
