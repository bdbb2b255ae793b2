"""The neural bigram step of lecture 2 in PyTorch, beside benches/step.rs.

Run: ZTH_DATA=path/to/datasets python step_torch.py  (cargo xtask bench does it)
"""
import os
import time

import torch
import torch.nn.functional as F

words = open(os.path.join(os.environ["ZTH_DATA"], "names.txt")).read().splitlines()
stoi = {s: i + 1 for i, s in enumerate(sorted(set("".join(words))))}
stoi["."] = 0
xs, ys = [], []
for w in words:
    chs = ["."] + list(w) + ["."]
    for a, b in zip(chs, chs[1:]):
        xs.append(stoi[a])
        ys.append(stoi[b])
xs, ys = torch.tensor(xs), torch.tensor(ys)
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
