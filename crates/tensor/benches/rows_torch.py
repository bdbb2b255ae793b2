"""PyTorch side of benches/rows.rs: the sgemm peak (1024^3), the same product of bfloat16
tensors, and 4096 tiny batched products (8x16 @ 16x8), best of 7 rounds, on ZTH_THREADS threads
(default: every core this process may use). Prints `bench-row` lines for
`cargo xtask bench`."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _torch_matmul import best_seconds  # noqa: E402

torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
ROWS = (
    ("sgemm-1024", 1, 1024, 1024, 1024),
    ("bf16-1024", 1, 1024, 1024, 1024),
    ("batched-4096x8x16x8", 4096, 8, 16, 8),
)
for name, batch, m, k, n in ROWS:
    lead = (batch,) if batch > 1 else ()
    a, b = torch.randn(*lead, m, k), torch.randn(*lead, k, n)
    if name == "bf16-1024":
        a, b = a.bfloat16(), b.bfloat16()
    flop = 2 * batch * m * k * n
    best = best_seconds(a, b, flop, rounds=7)
    ms, gflop = best * 1e3, flop / 1e9
    print(f"torch {name}: {ms:.4f} ms, {gflop / best:.1f} GFLOP/s, {torch.get_num_threads()} thread(s)")
    print(f"bench-row {name} ms={ms} gflop={gflop}")
