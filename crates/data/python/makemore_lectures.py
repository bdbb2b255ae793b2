"""The makemore lectures' data and layers in PyTorch, for the reference scripts of lectures 2-6.

The Python twin of this crate's makemore loaders (src/makemore.rs): the fixture
and benchmark scripts of crates/makemore-bigram, makemore-mlp, backprop-ninja,
batchnorm and wavenet import it, each with a sys.path insert relative to its own file.

It holds names.txt found as the workspace finds it, the vocabulary (stoi, itos),
lecture 2's bigrams, build_dataset with the context length as a parameter, the
seeded shuffle and 80/10/10 split, lecture 3's MLP, the notebooks' SGD step and
sampling loop, and the torch.nn-like layers the lectures write by hand: Linear,
BatchNorm1d, Tanh, Embedding, FlattenConsecutive, Sequential.

Sources: Karpathy's nn-zero-to-hero, lectures/makemore/
  makemore_part1_bigrams.ipynb   cell[9]: the vocabulary; cell[56]: the bigrams (xs, ys)
  makemore_part2_mlp.ipynb       cell[6]: build_dataset, the shuffle and split (block_size 3);
                                 cell[22]: the MLP's parameters; cell[27]: its forward pass
                                 and the SGD step; cell[34]: the sampling loop
  makemore_part3_bn.ipynb        cell[5]: the same; cell[13]: Linear, BatchNorm1d, Tanh;
                                 cell[7], cell[14]: the same SGD step
  makemore_part4_backprop.ipynb  cell[5]: the same build_dataset and split; cell[27]: the
                                 same sampling loop
  makemore_part5_cnn1.ipynb      cell[3]: the vocabulary; cells[4-5]: the shuffle, split
                                 and block_size 8; cell[7]: the layers of part 3 again
                                 (BatchNorm1d over 3-D input), Embedding,
                                 FlattenConsecutive, Sequential; cell[10]: the same SGD step
"""
import os
import random
import time

import torch
import torch.nn.functional as F

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


def bigrams(words, stoi):
    """Lecture 2's training set: xs every character of each name padded as '.name.'
    but the last, ys the character that follows it."""
    xs, ys = [], []
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    return torch.tensor(xs), torch.tensor(ys)


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


def mlp_parameters(fixed=False):
    """Lecture 3's MLP: C (27, 10), W1 (30, 200), b1, W2 (200, 27), b2, drawn in that order
    from the generator seeded 2147483647. fixed=True scales W2 by 0.01 and b2 by 0, part 3's
    fix of the initial loss."""
    g = torch.Generator().manual_seed(2147483647)
    C = torch.randn((27, 10), generator=g)
    W1 = torch.randn((30, 200), generator=g)
    b1 = torch.randn(200, generator=g)
    W2 = torch.randn((200, 27), generator=g)
    b2 = torch.randn(27, generator=g)
    if fixed:
        W2 = W2 * 0.01
        b2 = b2 * 0
    return [C, W1, b1, W2, b2]


def mlp_logits(parameters, X):
    """Lecture 3's forward pass: the embeddings of the three context characters, tanh of
    a hidden layer of 200, logits over the 27 characters."""
    C, W1, b1, W2, b2 = parameters
    emb = C[X]
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
    return h @ W2 + b2


def sgd_step(parameters, loss, lr):
    """The notebooks' backward pass and update: every grad set to None, loss.backward(),
    then p.data += -lr * p.grad."""
    for p in parameters:
        p.grad = None
    loss.backward()
    for p in parameters:
        p.data += -lr * p.grad


def sample_names(logits_of, itos, block_size, n=20):
    """The notebooks' sampling loop: n names drawn with the generator seeded 2147483647 + 10,
    each from a context of '.'s until the model picks '.'; logits_of maps a (1, block_size)
    tensor of the context to (1, 27) logits."""
    g = torch.Generator().manual_seed(2147483647 + 10)
    names = []
    for _ in range(n):
        out = []
        context = [0] * block_size
        while True:
            logits = logits_of(torch.tensor([context]))
            probs = F.softmax(logits, dim=1)
            ix = torch.multinomial(probs, num_samples=1, generator=g).item()
            context = context[1:] + [ix]
            out.append(ix)
            if ix == 0:
                break
        names.append("".join(itos[i] for i in out))
    return names


def ms_per_step(step, warmup, steps):
    """The benches' timing: warmup untimed calls of step, then the mean ms of steps more."""
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) * 1e3 / steps


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
