"""The iteration of benches/iteration.rs in PyTorch: char-rnn's feval and
optim.rmsprop as tests/fixtures/train/char_rnn.py writes them, timed.

Run: python crates/char-rnn/benches/iteration_torch.py
(any Python with torch installed); prints the same line as
`cargo bench -p char-rnn --bench iteration`.
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "train"))
import char_rnn  # noqa: E402  (it sets one thread; ours is set below)

WARMUP, STEPS = 3, 20
torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
DATA = os.environ.get("ZTH_DATA", "datasets")

torch.manual_seed(123)
loader = char_rnn.Loader(os.path.join(DATA, "tinyshakespeare.txt"), 50, 50, [0.95, 0.05])
model = char_rnn.CharRNN("lstm", len(loader.ivocab), 128, 2, 0.0)
params, m, state = model.flat, torch.zeros_like(model.flat), model.init_state(50)


def iteration():
    global state
    x, y = loader.next_batch(0)
    x, y = x.t().contiguous(), y.t().contiguous()
    loss = 0
    for t in range(50):
        state, logp = model.step(x[t], state, training=True)
        loss = loss + F.nll_loss(logp, y[t])
    params.grad = None
    loss.backward()
    state = [s.detach() for s in state]
    with torch.no_grad():
        g = params.grad.clamp(-5.0, 5.0)
        m.mul_(0.95).addcmul_(g, g, value=0.05)
        params.addcdiv_(g, m.sqrt().add_(1e-8), value=-2e-3)


for _ in range(WARMUP):
    iteration()
start = time.perf_counter()
for _ in range(STEPS):
    iteration()
ms = (time.perf_counter() - start) * 1e3 / STEPS
print(f"char-rnn lstm iteration (pytorch): {ms:.2f} ms")
print(f"bench-row char-rnn-lstm ms={ms}")
