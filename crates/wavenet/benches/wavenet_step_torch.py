"""The training step of benches/wavenet_step.rs in PyTorch (the notebook's code), timed.

Run: python crates/wavenet/benches/wavenet_step_torch.py
(any Python with torch installed, e.g. a venv outside the repo: pip install torch)
Prints the same line as `cargo bench -p wavenet --bench wavenet_step`.
"""
import os
import random
import time

import torch
import torch.nn.functional as F

WARMUP, STEPS = 200, 2000
# As many threads as ours: ZTH_THREADS, else every core this process may use.
torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
DATA = os.environ.get("ZTH_DATA", "datasets")

words = open(os.path.join(DATA, "names.txt")).read().splitlines()
stoi = {s: i + 1 for i, s in enumerate(sorted(set("".join(words))))}
stoi["."] = 0
random.seed(42)
random.shuffle(words)
X, Y = [], []
for w in words[: int(0.8 * len(words))]:
    context = [0] * 8
    for ch in w + ".":
        X.append(context)
        Y.append(stoi[ch])
        context = context[1:] + [stoi[ch]]
Xtr, Ytr = torch.tensor(X), torch.tensor(Y)


class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out)) / fan_in**0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps, self.momentum, self.training = eps, momentum, True
        self.gamma, self.beta = torch.ones(dim), torch.zeros(dim)
        self.running_mean, self.running_var = torch.zeros(dim), torch.ones(dim)

    def __call__(self, x):
        dim = 0 if x.ndim == 2 else (0, 1)
        xmean = x.mean(dim, keepdim=True)
        xvar = x.var(dim, keepdim=True)
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)
        self.out = self.gamma * xhat + self.beta
        with torch.no_grad():
            self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
            self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []


class Embedding:
    def __init__(self, num_embeddings, embedding_dim):
        self.weight = torch.randn((num_embeddings, embedding_dim))

    def __call__(self, IX):
        self.out = self.weight[IX]
        return self.out

    def parameters(self):
        return [self.weight]


class FlattenConsecutive:
    def __init__(self, n):
        self.n = n

    def __call__(self, x):
        B, T, C = x.shape
        x = x.view(B, T // self.n, C * self.n)
        if x.shape[1] == 1:
            x = x.squeeze(1)
        self.out = x
        return self.out

    def parameters(self):
        return []


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
    loss = F.cross_entropy(x, Yb)
    for p in parameters:
        p.grad = None
    loss.backward()
    for p in parameters:
        p.data += -0.1 * p.grad


for _ in range(WARMUP):
    step()
start = time.perf_counter()
for _ in range(STEPS):
    step()
print(f"lecture 6 wavenet (torch): {(time.perf_counter() - start) * 1e3 / STEPS:.4f} ms/step")
print(f"bench-row wavenet-step ms={(time.perf_counter() - start) * 1e3 / STEPS}")
