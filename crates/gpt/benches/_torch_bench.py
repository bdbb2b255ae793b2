"""What the PyTorch sides of benches/train_step.rs share: the flags and threads, the
training split of tinyshakespeare as the video's gpt.py encodes it, the timed loop and
the FLOP count. full_step_torch.py and train_step_torch.py import it, each with a
sys.path insert of its own folder.
"""
import argparse
import os
import resource
import time

import torch


def bench_args(steps, warmup):
    """The flags: the text's path (default $ZTH_DATA/tinyshakespeare.txt, else
    datasets/tinyshakespeare.txt), --steps and --warmup with the given defaults. Sets
    torch's threads as many as ours: ZTH_THREADS, else every core this process may use."""
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?",
                    default=os.path.join(os.environ.get("ZTH_DATA", "datasets"), "tinyshakespeare.txt"))
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--warmup", type=int, default=warmup)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
    return args


def train_split(path):
    """The vocabulary size and the first 90% of the text, one integer a character."""
    text = open(path, encoding="utf-8").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    return len(chars), torch.tensor([stoi[c] for c in text[: int(0.9 * len(text))]], dtype=torch.long)


def step_times(model, update, data, B, T, args):
    """The ms of each of args.steps training steps after args.warmup more, sorted. A step:
    a batch of B random windows of T drawn from torch's global generator (as get_batch
    draws them), untimed; then model(x, y), the loss, with ZTH_DTYPE=bfloat16 under
    torch.autocast("cpu", dtype=torch.bfloat16), and update(loss)."""
    times = []
    for i in range(args.warmup + args.steps):
        ix = torch.randint(len(data) - T, (B,))
        x = torch.stack([data[j:j + T] for j in ix])
        y = torch.stack([data[j + 1:j + T + 1] for j in ix])
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=os.environ.get("ZTH_DTYPE") == "bfloat16"):
            loss = model(x, y)
        update(loss)
        if i >= args.warmup:
            times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)


def step_flops(n_params, L, C, B, T):
    """A training step's FLOPs as the Rust bench counts them: 6 a parameter a token, and
    attention's 12·L·C·T a token."""
    return (6 * n_params + 12 * L * C * T) * B * T


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
