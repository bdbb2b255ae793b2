"""PyTorch's CPU matmul speed at the shapes of benches/matmul.rs, for comparison.

Run: python crates/tensor/benches/matmul_torch.py
(any Python with torch installed, e.g. a venv outside the repo: pip install torch)
Prints GFLOP/s (2·M·K·N per product) at 1 and 2 threads, best of several
timed rounds, so the Rust figures can be read as a fraction of PyTorch's.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _torch_matmul import best_seconds  # noqa: E402

# (batch, M, K, N); batch 0 means a plain 2-D product.
SHAPES = [(0, 32, 30, 200), (0, 256, 768, 768), (0, 256, 768, 3072), (0, 1024, 1024, 1024), (0, 768, 128, 384),
          (384, 256, 64, 256), (4096, 8, 16, 8)]


def gflops(batch, m, k, n, threads):
    torch.set_num_threads(threads)
    lead = (batch,) if batch else ()
    a, b = torch.randn(*lead, m, k), torch.randn(*lead, k, n)
    flop = 2 * max(batch, 1) * m * k * n
    return flop / best_seconds(a, b, flop, rounds=5) / 1e9


print(f"torch {torch.__version__}, capability {torch.backends.cpu.get_cpu_capability()}")
print(f"{'shape':>22} {'1 thread':>10} {'2 threads':>10}  GFLOP/s")
for batch, m, k, n in SHAPES:
    name = (f"{batch}x" if batch else "") + f"{m}x{k}x{n}"
    print(f"{name:>22} {gflops(batch, m, k, n, 1):10.1f} {gflops(batch, m, k, n, 2):10.1f}")
