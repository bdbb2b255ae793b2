"""PyTorch side of the lecture-3 step benchmark (benches/step.rs is the Rust side).

Run: python crates/makemore-mlp/benches/step_torch.py [--steps N]
(any Python with torch installed, e.g. a venv outside the repo: pip install torch)
Times the notebook's training step (minibatch of 32 via torch.randint, forward,
F.cross_entropy, backward, SGD update) on the real training split, single-threaded
like the Rust side: --warmup untimed steps (default 20,000, as step.rs), then
prints `ms/step` as the best of three timed runs of --steps.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5000)
parser.add_argument("--warmup", type=int, default=20000)
parser.add_argument("--threads", type=int, default=1)
args = parser.parse_args()
torch.set_num_threads(args.threads)

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "data", "python"))
from makemore_lectures import mlp_logits, mlp_parameters, read_words, sgd_step, splits, vocabulary  # noqa: E402

words = read_words()
stoi, _ = vocabulary(words)
(Xtr, Ytr), _, _ = splits(words, 3, stoi)

parameters = mlp_parameters()
for p in parameters:
    p.requires_grad = True
torch.manual_seed(42)


def step(lr=0.1):
    ix = torch.randint(0, Xtr.shape[0], (32,))
    loss = F.cross_entropy(mlp_logits(parameters, Xtr[ix]), Ytr[ix])
    sgd_step(parameters, loss, lr)


for _ in range(args.warmup):
    step()
best = float("inf")
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    best = min(best, (time.perf_counter() - t0) / args.steps)
print(f"pytorch lecture-3 step: {best * 1e3:.4f} ms/step (torch {torch.__version__}, {args.threads} thread(s))")
