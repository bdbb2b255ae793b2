"""The Python side of benches/speed.rs: minbpe's train.py steps, timed on this machine.

Prints JSON: {"basic": seconds, "regex": seconds, "tiktoken_cl100k_mb_s": MB/s}.
Needs MINBPE (a checkout of karpathy/minbpe; not vendored) and ZTH_DATA; tiktoken is
optional and reads its vocabulary from ZTH_DATA, offline.
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.environ["MINBPE"])
from minbpe import BasicTokenizer, RegexTokenizer  # noqa: E402

data = os.environ["ZTH_DATA"]
text = open(os.path.join(data, "taylorswift.txt"), encoding="utf-8").read()
out = {}
for cls, name in [(BasicTokenizer, "basic"), (RegexTokenizer, "regex")]:
    t0 = time.time()
    cls().train(text, 512)
    out[name] = time.time() - t0
    print(f"{name}: {out[name]:.2f} s", file=sys.stderr)

try:
    cache = os.path.join(tempfile.gettempdir(), "zth-tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    shutil.copyfile(os.path.join(data, "tokenizers", "cl100k_base.tiktoken"),
                    os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    best = min(_time for _time in (
        (lambda t0: (enc.encode_ordinary(text), time.time() - t0)[1])(time.time()) for _ in range(5)))
    out["tiktoken_cl100k_mb_s"] = len(text.encode()) / 1e6 / best
except ImportError:
    pass
print(json.dumps(out))
