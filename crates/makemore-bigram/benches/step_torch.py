"""The neural bigram step of lecture 2 in PyTorch, beside benches/step.rs.

Run: ZTH_DATA=path/to/datasets python step_torch.py  (cargo xtask bench does it)
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "data", "python"))
from makemore_lectures import bigrams, read_words, vocabulary  # noqa: E402

words = read_words()
stoi, _ = vocabulary(words)
xs, ys = bigrams(words, stoi)
num = xs.nelement()

# As many threads as ours: ZTH_THREADS, else every core this process may use.
torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
threads = torch.get_num_threads()
for name, one_hot in (("one-hot", True), ("row index (E04)", False)):
    W = torch.randn((27, 27), generator=torch.Generator().manual_seed(2147483647), requires_grad=True)
    times = []
    for _ in range(22):
        start = time.perf_counter()
        logits = F.one_hot(xs, num_classes=27).float() @ W if one_hot else W[xs]
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdims=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W**2).mean()
        W.grad = None
        loss.backward()
        W.data += -50 * W.grad
        times.append((time.perf_counter() - start) * 1e3)
    steady = sorted(times[2:])
    print(f"torch  neural bigram step, {name:<16}: median {steady[len(steady) // 2]:7.2f} ms (min {steady[0]:.2f}), {threads} thread(s)")
    print(f"bench-row bigram-step-{'onehot' if one_hot else 'rowindex'} ms={steady[len(steady) // 2]}")
