#!/bin/sh
# Runs the Rust moons benchmark and then pip micrograd's on the same fixture, and
# prints how many times faster Rust is. Run it from anywhere in the workspace:
#   sh crates/micrograd/benches/compare.sh [--steps N]
# PYTHON names an interpreter with `pip install micrograd numpy` (default python3).
# The Python side takes about 5 minutes for the full 100 steps.
set -e
cd "$(dirname "$0")"
rust_json=$(mktemp)
trap 'rm -f "$rust_json"' EXIT
cargo bench -p micrograd --bench moons -- --json | tee "$rust_json"
"${PYTHON:-python3}" moons_py.py --rust "$rust_json" "$@"
