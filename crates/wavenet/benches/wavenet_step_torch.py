"""The training step of benches/wavenet_step.rs in PyTorch (the notebook's code), timed.

Run: python crates/wavenet/benches/wavenet_step_torch.py
(any Python with torch installed, e.g. a venv outside the repo: pip install torch)
Prints the same line as `cargo bench -p wavenet --bench wavenet_step`.
"""
import os
import sys

import torch
import torch.nn.functional as F

WARMUP, STEPS = 200, 2000
# As many threads as ours: ZTH_THREADS, else every core this process may use.
torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "data", "python"))
from makemore_lectures import (  # noqa: E402
    BatchNorm1d, Embedding, FlattenConsecutive, Linear, Tanh, ms_per_step, read_words, sgd_step, splits, vocabulary,
)

words = read_words()
stoi, _ = vocabulary(words)
(Xtr, Ytr), _, _ = splits(words, 8, stoi)


torch.manual_seed(42)
layers = [Embedding(27, 24)]
for fan_in in [48, 256, 256]:
    layers += [FlattenConsecutive(2), Linear(fan_in, 128, bias=False), BatchNorm1d(128), Tanh()]
layers += [Linear(128, 27)]
with torch.no_grad():
    layers[-1].weight *= 0.1
parameters = [p for layer in layers for p in layer.parameters()]
for p in parameters:
    p.requires_grad = True


def step():
    ix = torch.randint(0, Xtr.shape[0], (32,))
    x, Yb = Xtr[ix], Ytr[ix]
    for layer in layers:
        x = layer(x)
    sgd_step(parameters, F.cross_entropy(x, Yb), 0.1)


ms = ms_per_step(step, WARMUP, STEPS)
print(f"lecture 6 wavenet (torch): {ms:.4f} ms/step")
print(f"bench-row wavenet-step ms={ms}")
