"""PyTorch and transformers doing what benches/inference.rs does, on a random
GPT-2 124M (transformers' GPT2LMHeadModel, eval mode, float32, CPU):
the forward pass at B=1, T=1024, and one decoded token at position 1,000 with
transformers' key/value cache and without it. Medians of several runs."""

import os
import resource
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def median_ms(runs, f):
    f()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[runs // 2]


def main():
    torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
    torch.manual_seed(1337)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    ids = torch.tensor([[(i * 7919) % 50257 for i in range(1024)]])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    with torch.no_grad():
        forward = median_ms(5, lambda: model(ids, use_cache=False))
        print(f"torch forward B=1 T=1024: {forward:.1f} ms")
        L, C = 12, 768
        params = 50257 * C + 1024 * C + L * (12 * C * C + 13 * C) + 2 * C
        print(f"bench-row gpt2-forward-b1t1024 ms={forward} gflop={(2 * params + 4 * L * C * 1024) * 1024 / 1e9}")
        past = model(ids[:, :1000], use_cache=True).past_key_values

        def cached_step():
            model(ids[:, 1000:1001], cache=past, use_cache=True)
            past.crop(-1)  # drop the new position: the same 1,000 cached for the next run

        cached = median_ms(9, cached_step)
        uncached = median_ms(3, lambda: model(ids[:, :1001], use_cache=False))
    print(f"torch decode at position 1000, with the cache: {cached:.1f} ms/token = {1e3 / cached:.1f} tokens/s")
    print(f"torch decode at position 1000, no cache: {uncached:.1f} ms/token = {1e3 / uncached:.2f} tokens/s")
    print(f"bench-row gpt2-decode-cached ms={cached}")
    print(f"torch peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
