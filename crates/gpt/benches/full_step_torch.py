"""PyTorch side of `benches/train_step.rs --stage full`: one training step of
the video's gpt.py (karpathy/ng-video-lecture at 482b15d): batch 64, block
256, 6 layers of 6 separate heads, n_embd 384, ReLU, dropout 0.2, AdamW at
3e-4, the attention written out (q @ k.T, masked_fill, softmax, dropout, @ v).
Prints the median ms over --steps steps after --warmup, GFLOP/s with the Rust
bench's FLOP count, the peak RSS, and a `bench-row` line for `cargo xtask
bench`. Threads: ZTH_THREADS, else every core this process may use.
Run: python crates/gpt/benches/full_step_torch.py [PATH/tinyshakespeare.txt] [--steps 3]
"""
import os
import sys

import torch
import torch.nn as nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _torch_bench import bench_args, peak_rss_mib, step_flops, step_times, train_split  # noqa: E402

args = bench_args(steps=3, warmup=1)
B, T, L, H, C, DROPOUT = 64, 256, 6, 6, 384, 0.2
V, data = train_split(args.data)


class Head(nn.Module):
    def __init__(s, hs):
        super().__init__()
        s.key, s.query, s.value = (nn.Linear(C, hs, bias=False) for _ in range(3))
        s.register_buffer("tril", torch.tril(torch.ones(T, T)))
        s.dropout = nn.Dropout(DROPOUT)

    def forward(s, x):
        k, q = s.key(x), s.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(s.tril == 0, float("-inf"))
        wei = s.dropout(F.softmax(wei, dim=-1))
        return wei @ s.value(x)


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.heads = nn.ModuleList([Head(C // H) for _ in range(H)])
        s.proj = nn.Linear(C, C)
        s.ffwd = nn.Sequential(nn.Linear(C, 4 * C), nn.ReLU(), nn.Linear(4 * C, C), nn.Dropout(DROPOUT))
        s.ln1, s.ln2, s.dropout = nn.LayerNorm(C), nn.LayerNorm(C), nn.Dropout(DROPOUT)

    def forward(s, x):
        h = s.ln1(x)
        x = x + s.dropout(s.proj(torch.cat([head(h) for head in s.heads], dim=-1)))
        return x + s.ffwd(s.ln2(x))


class GPTLanguageModel(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok, s.pos = nn.Embedding(V, C), nn.Embedding(T, C)
        s.blocks = nn.Sequential(*[Block() for _ in range(L)])
        s.ln_f, s.lm_head = nn.LayerNorm(C), nn.Linear(C, V)

    def forward(s, idx, targets):
        x = s.blocks(s.tok(idx) + s.pos(torch.arange(T)))
        logits = s.lm_head(s.ln_f(x))
        return F.cross_entropy(logits.view(B * T, V), targets.view(B * T))


torch.manual_seed(1337)
model = GPTLanguageModel()
n_params = sum(p.numel() for p in model.parameters())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)


def update(loss):
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


times = step_times(model, update, data, B, T, args)
median = times[len(times) // 2]
flops = step_flops(n_params, L, C, B, T)
rss = peak_rss_mib()
print(f"torch full step: median {median:.0f} ms over {args.steps} steps, {flops / (median / 1000) / 1e9:.1f} GFLOP/s, "
      f"peak RSS {rss:.0f} MiB, {n_params} params, threads {torch.get_num_threads()}")
print(f"bench-row gpt-full-step ms={median} gflop={flops / 1e9} rss_mib={rss}")
