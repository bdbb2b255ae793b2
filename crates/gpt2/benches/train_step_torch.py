"""PyTorch doing what benches/train_step.rs does: build-nanogpt's GPT (the
model of crates/gpt2/tests/fixtures/make_fixtures.py, GPT-2 init, float32,
CPU), one training step each: forward, backward, clip_grad_norm_(1.0) and
AdamW with configure_optimizers' groups, betas (0.9, 0.95). The 124M model
(vocab 50,304) at B=4, T=64, and the cpu stage's model at B=16, T=64.
Medians of several steps after a warm-up, and the peak RSS. ZTH_DTYPE=bfloat16 runs the
forward under torch.autocast("cpu", dtype=torch.bfloat16), as build-nanogpt's train_gpt2.py does."""

import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
from make_fixtures import GPT  # noqa: E402


BFLOAT16 = os.environ.get("ZTH_DTYPE", "float32") == "bfloat16"


class Gpt2:
    block_size, vocab_size, n_layer, n_head, n_embd = 1024, 50304, 12, 12, 768


class Cpu:
    block_size, vocab_size, n_layer, n_head, n_embd = 64, 50304, 4, 4, 128


def step_ms(cfg, B, T, runs):
    torch.manual_seed(1337)
    model = GPT(cfg(), gpt2_init=True)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
        lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=False,
    )
    ids = torch.tensor([(i * 7919) % 50257 for i in range(B * T + 1)])
    x, y = ids[:-1].view(B, T), ids[1:].view(B, T)
    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        optimizer.zero_grad()
        # ZTH_DTYPE=bfloat16: build-nanogpt's autocast on a CPU.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=BFLOAT16):
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times[1:])[runs // 2]


def step_gflop(cfg, B, T):
    """nanoGPT's estimate_mfu count: 6 FLOPs per parameter per token, plus attention's 12*L*C*T."""
    L, C, V = cfg.n_layer, cfg.n_embd, cfg.vocab_size
    params = V * C + cfg.block_size * C + L * (12 * C * C + 13 * C) + 2 * C
    return (6 * params + 12 * L * C * T) * B * T / 1e9


def main():
    # As many threads as ours: ZTH_THREADS, else rayon's default (every core
    # this process may use); torch picks 1 here.
    torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {'bfloat16 autocast' if BFLOAT16 else 'float32'}")
    ms = step_ms(Cpu, 16, 64, 9)
    print(f"torch cpu-stage step B=16 T=64 (7.2M): {ms:.1f} ms, {16 * 64 / ms * 1e3:.0f} tok/s")
    for B, T in ((4, 64), (1, 1024)):
        ms = step_ms(Gpt2, B, T, 3)
        print(f"torch 124M train step B={B} T={T}: {ms:.0f} ms")
        print(f"bench-row gpt2-step-b{B}t{T} ms={ms} gflop={step_gflop(Gpt2, B, T)}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"torch train step peak RSS: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
