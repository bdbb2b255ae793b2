"""Times pip micrograd's moons demo on the fixture, as written and with the garbage
collector held off during each step, and compares with the Rust figures.

    python moons_py.py [--steps N] [--rust rust.json]

--rust takes the JSON line that `cargo bench -p micrograd --bench moons -- --json`
prints last; compare.sh runs both and prints the ratios. `cargo xtask bench`
runs this script without --rust, after the Rust bench. The loop is demo.ipynb's,
from tests/fixtures/moons_demo.py, which pip_micrograd_demo.py runs too. The
full 100 steps take about 2 minutes as written.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

try:
    import micrograd  # noqa: F401
except ImportError:
    print("pip micrograd is not installed (pip install micrograd); skipping the Python side")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
from moons_demo import demo_model, step  # noqa: E402


def demo(steps, gc_off):
    """Returns (median step seconds, whole-run seconds, last loss)."""
    model = demo_model()
    gc.collect()
    times = []
    start = time.perf_counter()
    for k in range(steps):
        if gc_off:
            gc.disable()
        t0 = time.perf_counter()
        last = step(model, k, accuracy=False)[0].data
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
