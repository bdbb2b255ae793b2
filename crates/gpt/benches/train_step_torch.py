"""PyTorch side of benches/train_step.rs: one training step of nanoGPT's CPU
recipe for shakespeare_char (batch 12, block 64, 4 layers, 4 heads, n_embd 128,
no bias, weight tying, GELU, flash attention, AdamW on two groups, clip 1.0).

Prints the median ms per step over --steps steps after --warmup, GFLOP/s with
the same FLOP count as the Rust bench, and the peak RSS.
Run: python crates/gpt/benches/train_step_torch.py [PATH/tinyshakespeare.txt] [--steps 20]
(the default path is $ZTH_DATA/tinyshakespeare.txt, else datasets/tinyshakespeare.txt).
"""
import os
import sys

import torch
import torch.nn as nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _torch_bench import bench_args, peak_rss_mib, step_flops, step_times, train_split  # noqa: E402

args = bench_args(steps=20, warmup=3)
B, T, L, H, C, V = 12, 64, 4, 4, 128, 65
_, data = train_split(args.data)


class Attn(nn.Module):
    def __init__(s):
        super().__init__()
        s.c_attn = nn.Linear(C, 3 * C, bias=False)
        s.c_proj = nn.Linear(C, C, bias=False)

    def forward(s, x):
        q, k, v = s.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln_1 = nn.LayerNorm(C, bias=False)
        s.attn = Attn()
        s.ln_2 = nn.LayerNorm(C, bias=False)
        s.mlp = nn.Sequential(nn.Linear(C, 4 * C, bias=False), nn.GELU(), nn.Linear(4 * C, C, bias=False))

    def forward(s, x):
        x = x + s.attn(s.ln_1(x))
        return x + s.mlp(s.ln_2(x))


class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        s.h = nn.ModuleList([Block() for _ in range(L)])
        s.ln_f = nn.LayerNorm(C, bias=False)
        s.lm_head = nn.Linear(C, V, bias=False)
        s.wte.weight = s.lm_head.weight

    def forward(s, idx, targets):
        x = s.wte(idx) + s.wpe(torch.arange(T))
        for b in s.h:
            x = b(x)
        logits = s.lm_head(s.ln_f(x))
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


torch.manual_seed(1337)
model = GPT()
n_params = sum(p.numel() for p in model.parameters())
decay = [p for p in model.parameters() if p.dim() >= 2]
nodecay = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.99))


def update(loss):
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)


times = step_times(model, update, data, B, T, args)
median = times[len(times) // 2]
flops = step_flops(n_params, L, C, B, T)
rss = peak_rss_mib()
print(f"torch cpu step: median {median:.2f} ms, mean {sum(times)/len(times):.2f} ms over {args.steps} steps, "
      f"{flops / (median / 1000) / 1e9:.1f} GFLOP/s, peak RSS {rss:.0f} MiB, threads {torch.get_num_threads()}")
print(f"bench-row gpt-cpu-step ms={median} gflop={flops / 1e9} rss_mib={rss}")
