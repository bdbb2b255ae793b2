"""The training steps of benches/batchnorm_step.rs in PyTorch (the notebook's code), timed.

Run: python crates/batchnorm/benches/batchnorm_step_torch.py
(any Python with torch installed, e.g. a venv outside the repo: pip install torch)
Prints the same lines as `cargo bench -p batchnorm --bench batchnorm_step`.
"""
import os
import sys

import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "data", "python"))
from makemore_lectures import (  # noqa: E402
    BatchNorm1d, Linear, Tanh, ms_per_step, read_words, sgd_step, splits, vocabulary,
)

WARMUP, STEPS = 200, 2000

words = read_words()
stoi, _ = vocabulary(words)
(Xtr, Ytr), _, _ = splits(words, 3, stoi)


def timed(label, step):
    print(f"{label}: {ms_per_step(step, WARMUP, STEPS):.4f} ms/step")


# Model A (part 3, cells 6-7)
g = torch.Generator().manual_seed(2147483647)
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 200), generator=g) * (5 / 3) / (30**0.5)
W2 = torch.randn((200, 27), generator=g) * 0.01
b2 = torch.randn(27, generator=g) * 0
bngain, bnbias = torch.ones((1, 200)), torch.zeros((1, 200))
state = {"mean": torch.zeros((1, 200)), "std": torch.ones((1, 200))}
params_a = [C, W1, W2, b2, bngain, bnbias]
for p in params_a:
    p.requires_grad = True


def step_a():
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix]
    emb = C[Xb]
    hpreact = emb.view(emb.shape[0], -1) @ W1
    bnmeani = hpreact.mean(0, keepdim=True)
    bnstdi = hpreact.std(0, keepdim=True)
    hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
    with torch.no_grad():
        state["mean"] = 0.999 * state["mean"] + 0.001 * bnmeani
        state["std"] = 0.999 * state["std"] + 0.001 * bnstdi
    logits = torch.tanh(hpreact) @ W2 + b2
    loss = F.cross_entropy(logits, Yb)
    sgd_step(params_a, loss, 0.1)


timed("lecture 4 model A (torch)", step_a)


# Model B (part 3, cells 13-14), without the retain_grad/ud diagnostics
g = torch.Generator().manual_seed(2147483647)
C = torch.randn((27, 10), generator=g)
layers = []
for fan_in in [30, 100, 100, 100, 100]:
    layers += [Linear(fan_in, 100, bias=False, generator=g), BatchNorm1d(100), Tanh()]
layers += [Linear(100, 27, bias=False, generator=g), BatchNorm1d(27)]
with torch.no_grad():
    layers[-1].gamma *= 0.1
params_b = [C] + [p for layer in layers for p in layer.parameters()]
for p in params_b:
    p.requires_grad = True


def step_b():
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix]
    x = C[Xb].view(32, -1)
    for layer in layers:
        x = layer(x)
    loss = F.cross_entropy(x, Yb)
    sgd_step(params_b, loss, 0.1)


timed("lecture 4 model B (torch)", step_b)
