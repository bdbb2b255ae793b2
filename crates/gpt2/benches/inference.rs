//! GPT-2 124M inference, random weights, timed beside `inference_torch.py`
//! (PyTorch and `transformers` doing the same work; `cargo xtask bench --crate gpt2`
//! runs both):
//! - the forward pass at B=1, T=1024;
//! - one decoded token at position 1,000 with the key/value cache, and
//!   without it (the whole 1,001-token sequence again): tokens per second.
//!
//! Prints the median of several runs and the peak RSS.

use gpt2::kv_cache::{forward_cached, KvCache};
use gpt2::{Gpt, GptConfig, InitScheme};
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn main() {
    gpt2::keep_freed_memory();
    let (mut model, params) =
        Gpt::seeded(GptConfig::preset("gpt2").unwrap(), InitScheme::Gpt2, 1337);
    // transformers' GPT2 attends with scaled_dot_product_attention; this is
    // ours, as in a model from_pretrained loads.
    model.set_flash(true);
    let ids: Vec<usize> = (0..1024).map(|i| (i * 7919) % 50257).collect();
    let forward = median_ms(5, || {
        gpt2::sample::logits(&model, &params, &ids).unwrap();
    });
    println!("gpt2 forward B=1 T=1024: {forward:.1} ms");
    // A forward pass is a third of a training step's FLOPs (2 per parameter per token, plus 4·L·C·T).
    let (l, c) = (12.0, 768.0);
    let n_params = 50257.0 * c + 1024.0 * c + l * (12.0 * c * c + 13.0 * c) + 2.0 * c;
    let gflop = (2.0 * n_params + 4.0 * l * c * 1024.0) * 1024.0 / 1e9;
    println!("bench-row gpt2-forward-b1t1024 ms={forward} gflop={gflop}");
    let mut cache = KvCache::new(12);
    forward_cached(&model, &params, &ids[..1000], 1, 1000, &mut cache).unwrap();
    let cached = median_ms(9, || {
        let mut step = KvCache::new(12);
        // The same cache each time: position 1,000 attends to the 1,000 cached positions.
        std::mem::swap(&mut step, &mut cache);
        let snapshot = step.clone();
        forward_cached(&model, &params, &ids[1000..1001], 1, 1, &mut step).unwrap();
        cache = snapshot;
    });
    let uncached = median_ms(3, || {
        gpt2::sample::logits(&model, &params, &ids[..1001]).unwrap();
    });
    println!(
        "gpt2 decode at position 1000, with the cache: {cached:.1} ms/token = {:.1} tokens/s",
        1e3 / cached
    );
    println!(
        "gpt2 decode at position 1000, no cache: {uncached:.1} ms/token = {:.2} tokens/s",
        1e3 / uncached
    );
    println!("bench-row gpt2-decode-cached ms={cached}");
    println!(
        "gpt2 peak RSS: {:.0} MiB",
        report::peak_rss_mib().unwrap_or(f64::NAN)
    );
}
