"""The makemore lectures' data and layers in PyTorch, for the reference scripts of lectures 3-6.

The Python twin of this crate's makemore loaders (src/makemore.rs): the fixture
and benchmark scripts of crates/makemore-mlp, backprop-ninja, batchnorm and
wavenet import it, each with a sys.path insert relative to its own file.

It holds names.txt found as the workspace finds it, the vocabulary (stoi, itos),
build_dataset with the context length as a parameter, the seeded shuffle and
80/10/10 split, and the torch.nn-like layers the lectures write by hand: Linear,
BatchNorm1d, Tanh, Embedding, FlattenConsecutive, Sequential.

Sources: Karpathy's nn-zero-to-hero, lectures/makemore/
  makemore_part2_mlp.ipynb       cell[6]: build_dataset, the shuffle and split (block_size 3)
  makemore_part3_bn.ipynb        cell[5]: the same; cell[13]: Linear, BatchNorm1d, Tanh
  makemore_part4_backprop.ipynb  cell[5]: the same build_dataset and split
  makemore_part5_cnn1.ipynb      cell[3]: the vocabulary; cells[4-5]: the shuffle, split
                                 and block_size 8; cell[7]: the layers of part 3 again
                                 (BatchNorm1d over 3-D input), Embedding,
                                 FlattenConsecutive, Sequential
"""
import os
import random

import torch

WORKSPACE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def read_words():
    """names.txt, one name a line: from $ZTH_DATA, else the workspace's datasets/;
    where that has no names.txt, from the shared/datasets/ beside the workspace."""
    data = os.environ.get("ZTH_DATA", os.path.join(WORKSPACE, "datasets"))
    if not os.path.exists(os.path.join(data, "names.txt")):
        data = os.path.join(WORKSPACE, "..", "shared", "datasets")
    with open(os.path.join(data, "names.txt")) as f:
        return f.read().splitlines()


def vocabulary(words):
    """The mappings to and from integers; '.' (a name's start and end) is 0."""
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    return stoi, itos


def build_dataset(words, block_size, stoi):
    """Every block_size characters of context and the character that follows.

    The notebooks read block_size and stoi as globals (3 in parts 2-4, 8 in part 5)."""
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]  # crop and append
    return torch.tensor(X), torch.tensor(Y)


def splits(words, block_size, stoi):
    """(Xtr, Ytr), (Xdev, Ydev), (Xte, Yte): the words shuffled by random.seed(42), 80/10/10.

    The notebooks shuffle `words` itself; this shuffles a copy, so that every call
    (lecture 6's fixture makes one per block_size) sees the one order the notebooks see."""
    words = list(words)
    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    return (
        build_dataset(words[:n1], block_size, stoi),  # 80%
        build_dataset(words[n1:n2], block_size, stoi),  # 10%
        build_dataset(words[n2:], block_size, stoi),  # 10%
    )


class Linear:
    # Part 3 draws the weight from its generator g, part 5 from torch's global
    # generator: `generator` is that g, None (the default) is part 5.
    def __init__(self, fan_in, fan_out, bias=True, generator=None):
        self.weight = torch.randn((fan_in, fan_out), generator=generator) / fan_in**0.5  # note: kaiming init
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    # Part 5's, which also normalises 3-D input (B, T, C) over (0, 1). bug=True is the
    # part 3 layer that part 5 first ran the hierarchical net with: mean and variance
    # over dim 0 only, one statistic per position (the "hierarchical" row of lecture
    # 6's performance log, before "batch-norm bug fixed").
    def __init__(self, dim, eps=1e-5, momentum=0.1, bug=False):
        self.eps = eps
        self.momentum = momentum
        self.training = True
        self.bug = bug
        # parameters (trained with backprop)
        self.gamma = torch.ones(dim)
        self.beta = torch.zeros(dim)
        # buffers (trained with a running 'momentum update')
        self.running_mean = torch.zeros(dim)
        self.running_var = torch.ones(dim)

    def __call__(self, x):
        # calculate the forward pass
        if self.training:
            if x.ndim == 2 or self.bug:
                dim = 0
            elif x.ndim == 3:
                dim = (0, 1)
            xmean = x.mean(dim, keepdim=True)  # batch mean
            xvar = x.var(dim, keepdim=True)  # batch variance
        else:
            xmean = self.running_mean
            xvar = self.running_var
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)  # normalize to unit variance
        self.out = self.gamma * xhat + self.beta
        # update the buffers
        if self.training:
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


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        self.out = x
        return self.out

    def parameters(self):
        # get parameters of all layers and stretch them out into one list
        return [p for layer in self.layers for p in layer.parameters()]
