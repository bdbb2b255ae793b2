"""The Python side of benches/speed.rs: minbpe's train.py steps, timed on this machine.

`cargo xtask bench --crate bpe` runs speed.rs and then this script, so both sides are measured
in one run; this script prints the ratios from the figures speed.rs left in
$CARGO_TARGET_DIR/tmp/bpe-speed.json (default target/tmp/). Needs MINBPE, a checkout of
karpathy/minbpe (not vendored here); without it, it says so and does nothing. Data comes
from $ZTH_DATA, else the workspace's datasets/. Python tiktoken, if installed, is timed too,
reading its vocabulary from the data folder (offline).
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if "MINBPE" not in os.environ:
    print("minbpe_train.py: set MINBPE=/path/to/karpathy/minbpe to time minbpe beside benches/speed.rs")
    sys.exit(0)
sys.path.insert(0, os.environ["MINBPE"])
from minbpe import BasicTokenizer, RegexTokenizer  # noqa: E402

data = os.environ.get("ZTH_DATA") or os.path.join(root, "datasets")
text = open(os.path.join(data, "taylorswift.txt"), encoding="utf-8").read()
py = {}
for cls, name in [(BasicTokenizer, "basic"), (RegexTokenizer, "regex")]:
    t0 = time.time()
    cls().train(text, 512)
    py[name] = time.time() - t0
print(f"python minbpe train vocab 512 on taylorswift.txt: Basic {py['basic']:.2f} s, Regex {py['regex']:.2f} s")

try:
    cache = os.path.join(tempfile.gettempdir(), "zth-tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    shutil.copyfile(os.path.join(data, "tokenizers", "cl100k_base.tiktoken"),
                    os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    best = float("inf")
    for _ in range(5):
        t0 = time.time()
        enc.encode_ordinary(text)
        best = min(best, time.time() - t0)
    print(f"python tiktoken cl100k encode taylorswift.txt: {len(text.encode()) / 1e6 / best:.1f} MB/s")
except ImportError:
    pass

target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(root, "target")
figures = os.path.join(target, "tmp", "bpe-speed.json")
if os.path.exists(figures) and time.time() - os.path.getmtime(figures) < 3600:
    rust = json.load(open(figures))
    print(f"ratio  training speed-up over minbpe: Basic {py['basic'] / rust['train_basic_s']:.0f}x, "
          f"Regex {py['regex'] / rust['train_regex_s']:.0f}x (goal >= 100x)")
else:
    print(f"no recent {figures}: run `cargo bench -p bpe` first for the ratios")
