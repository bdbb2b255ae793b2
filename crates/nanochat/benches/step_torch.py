"""The step of benches/step.rs in PyTorch: nanochat's own GPT and MuonAdamW at 92d63d4, eager
and float32 (optim.py's compiled steps replaced by the functions they wrap, as the fixtures
do), depth 4 with base_train's defaults for a batch of 2,048 tokens, 8 rows of 256, timed.

Run: NANOCHAT=/path/to/nanochat python crates/nanochat/benches/step_torch.py
(karpathy/nanochat at 92d63d4, imported, not copied; any Python with torch). Without NANOCHAT
it says so and prints no row, and `cargo xtask bench` leaves the PyTorch column empty. The
batches are random tokens: the step's time does not depend on them.
"""
import os
import sys
import time

os.environ["NANOCHAT_DTYPE"] = "float32"
path = os.environ.get("NANOCHAT")
if not path:
    print("step_torch.py: set NANOCHAT to a checkout of karpathy/nanochat at 92d63d4 to time PyTorch's step", file=sys.stderr)
    sys.exit(0)
sys.path.insert(0, os.path.abspath(path))

import torch  # noqa: E402

torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
import nanochat.optim as optim  # noqa: E402
from nanochat.gpt import GPT, GPTConfig  # noqa: E402

optim.adamw_step_fused = optim.adamw_step_fused._torchdynamo_orig_callable
optim.muon_step_fused = optim.muon_step_fused._torchdynamo_orig_callable

WARMUP, STEPS = 3, 10
B, T, V = 8, 256, 4096
torch.manual_seed(42)
config = GPTConfig(sequence_len=T, vocab_size=V, n_layer=4, n_head=2, n_kv_head=2, n_embd=256, window_pattern="SSSL")
model = GPT(config)
model.init_weights()
# base_train's rates for 2,048 tokens a step: scaled by sqrt(2048 / 2^19) = 0.0625.
s = (2048 / 524288) ** 0.5
opt = model.setup_optimizer(unembedding_lr=0.008 * s, embedding_lr=0.3 * s, matrix_lr=0.02 * s,
                            weight_decay=0.28, scalar_lr=0.5 * s)
gen = torch.Generator().manual_seed(0)


def step():
    x = torch.randint(0, V, (B, T), generator=gen)
    y = torch.randint(0, V, (B, T), generator=gen)
    loss = model(x, y)
    loss.backward()
    opt.step()
    model.zero_grad(set_to_none=True)


for _ in range(WARMUP):
    step()
start = time.perf_counter()
for _ in range(STEPS):
    step()
ms = (time.perf_counter() - start) * 1e3 / STEPS
print(f"nanochat d4 base_train step (pytorch): {ms:.2f} ms")
print(f"bench-row nanochat-d4-step ms={ms}")
