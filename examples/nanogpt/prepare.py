"""Character-level data for nanoGPT with a held-out test split: the text of the files given (or
the files of a folder) cut 90% train, 5% val, 5% test, written as nanoGPT's data/DATASET/
{train,val}.bin and meta.pkl (its shakespeare_char format) plus test.bin for score.py.

    python3 prepare.py input.txt [nanoGPT/data/sweep_char]
"""
import os
import pickle
import sys

import numpy as np

sources, out = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "nanoGPT", "data", "sweep_char")
files = sorted(os.path.join(sources, f) for f in os.listdir(sources)) if os.path.isdir(sources) else [sources]
text = "".join(open(f, encoding="utf-8", errors="replace").read() for f in files if os.path.isfile(f))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
ids = np.array([stoi[c] for c in text], dtype=np.uint16)
n = len(ids)
os.makedirs(out, exist_ok=True)
for name, part in (("train", ids[: int(n * 0.9)]), ("val", ids[int(n * 0.9): int(n * 0.95)]),
                   ("test", ids[int(n * 0.95):])):
    part.tofile(os.path.join(out, f"{name}.bin"))
with open(os.path.join(out, "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)
print(f"{n:,} characters, vocabulary {len(chars)}: {out}")
