"""Times pip micrograd's moons demo on the fixture, as written and with the garbage
collector held off during each step, and compares with the Rust figures.

    python moons_py.py [--steps N] [--rust rust.json]

--rust takes the JSON line that `cargo bench -p micrograd --bench moons -- --json`
prints last; compare.sh runs both and prints the ratios. `cargo xtask bench`
runs this script without --rust, after the Rust bench. The loop is demo.ipynb's,
as in tests/fixtures/pip_micrograd_demo.py. The full 100 steps take about
2 minutes as written.
"""
import argparse
import gc
import json
import os
import random
import statistics
import sys
import time

import numpy as np

try:
    from micrograd.engine import Value
    from micrograd.nn import MLP
except ImportError:
    print("pip micrograd is not installed (pip install micrograd); skipping the Python side")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "tests", "fixtures", "moons.json")) as f:
    moons = json.load(f)
X = np.array(moons["x"])
y = np.array(moons["y"])


def loss(model):
    inputs = [list(map(Value, xrow)) for xrow in X]
    scores = list(map(model, inputs))
    losses = [(1 + -yi * scorei).relu() for yi, scorei in zip(y, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    alpha = 1e-4
    reg_loss = alpha * sum((p * p for p in model.parameters()))
    return data_loss + reg_loss


def step(model, k):
    total_loss = loss(model)
    model.zero_grad()
    total_loss.backward()
    learning_rate = 1.0 - 0.9 * k / 100
    for p in model.parameters():
        p.data -= learning_rate * p.grad
    return total_loss.data


def demo(steps, gc_off):
    """Returns (median step seconds, whole-run seconds, last loss)."""
    random.seed(1337)
    model = MLP(2, [16, 16, 1])
    gc.collect()
    times = []
    start = time.perf_counter()
    for k in range(steps):
        if gc_off:
            gc.disable()
        t0 = time.perf_counter()
        last = step(model, k)
        times.append(time.perf_counter() - t0)
        if gc_off:
            # Every node sits in a reference cycle (out._backward holds out), so
            # the graph only goes when the collector runs: here, between steps.
            gc.enable()
            gc.collect()
    return statistics.median(times), time.perf_counter() - start, last


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=100)
parser.add_argument("--rust", help="the JSON line of the Rust bench")
args = parser.parse_args()

rust = None
if args.rust:
    with open(args.rust) as f:
        rust = json.loads(f.read().strip().splitlines()[-1])

print(f"pip micrograd, {args.steps} steps of the moons demo")
for name, gc_off in (("as written", False), ("gc held off during each step", True)):
    step_s, run_s, last = demo(args.steps, gc_off)
    line = f"  {name}: {step_s:.3f} s/step, {run_s:.1f} s for {args.steps} steps (loss {last})"
    if rust:
        run_rust = rust["demo_seconds"] * args.steps / 100
        line += (
            f"\n    Rust is {step_s / rust['step_seconds']:.0f}x faster per step, "
            f"{run_s / run_rust:.0f}x over the run"
        )
    print(line, flush=True)
if rust:
    print(f"  Rust: {rust['step_seconds'] * 1e3:.2f} ms/step, {rust['demo_seconds']:.3f} s for 100 steps")
