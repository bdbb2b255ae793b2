"""makemore.py's own training step in PyTorch, timed as benches/step.rs times ours.

Run: MAKEMORE_PY=/path/to/makemore.py python crates/makemore/benches/step_torch.py --type transformer
(karpathy/makemore's makemore.py at 988aa59, imported, not copied; any Python
with torch, e.g. a venv outside the repo). Without MAKEMORE_PY it says so and
prints no row, and `cargo xtask bench` leaves the PyTorch column empty.

The step is makemore.py's loop body: the next batch from InfiniteDataLoader,
model(X, Y), zero_grad(set_to_none=True), backward, AdamW's step.
"""
import argparse, importlib.util, os, resource, sys, time

import torch

p = argparse.ArgumentParser()
p.add_argument("--type", default="transformer")
a = p.parse_args()
path = os.environ.get("MAKEMORE_PY")
if not path:
    print("step_torch.py: set MAKEMORE_PY to makemore.py (karpathy/makemore) to time PyTorch's step", file=sys.stderr)
    sys.exit(0)
torch.set_num_threads(int(os.environ.get("ZTH_THREADS", len(os.sched_getaffinity(0)))))
spec = importlib.util.spec_from_file_location("makemore", path)
mm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mm)

WARMUP, ROUNDS = 20, 5
STEPS = 50 if a.type == "transformer" else 200
torch.manual_seed(3407)
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    train_dataset, test_dataset = mm.create_datasets(os.path.join(os.environ.get("ZTH_DATA", "datasets"), "names.txt"))
    config = mm.ModelConfig(vocab_size=train_dataset.get_vocab_size(), block_size=train_dataset.get_output_length())
    if a.type == "lstm":
        # makemore.py has no LSTM: the fixture driver's RNN loop with nn.LSTMCell.
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location("fixtures", os.path.join(here, "../tests/fixtures/makemore_torch.py"))
        fixtures = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(fixtures)
        mm.RNNLSTM = fixtures.make_rnn_lstm(mm)
    model = {
        "lstm": lambda: mm.RNNLSTM(config),
        "transformer": lambda: mm.Transformer(config), "bigram": lambda: mm.Bigram(config),
        "mlp": lambda: mm.MLP(config), "rnn": lambda: mm.RNN(config, cell_type="rnn"),
        "gru": lambda: mm.RNN(config, cell_type="gru"), "bow": lambda: mm.BoW(config),
    }[a.type]()
opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)
loader = mm.InfiniteDataLoader(train_dataset, batch_size=32, num_workers=0)


def step():
    X, Y = loader.next()
    logits, loss = model(X, Y)
    model.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


for _ in range(WARMUP):
    step()
best = float("inf")
for _ in range(ROUNDS):
    t0 = time.perf_counter()
    for _ in range(STEPS):
        step()
    best = min(best, (time.perf_counter() - t0) * 1e3 / STEPS)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"makemore --type {a.type} (torch {torch.__version__}): {best:.3f} ms/step, the fastest of {ROUNDS} blocks of {STEPS}")
print(f"bench-row makemore-{a.type} ms={best} rss_mib={rss}")
