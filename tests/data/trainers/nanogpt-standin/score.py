# The stand-in's scorer (README.md): the test loss of the checkpoint train.py saved.
import json
import math
import os
import sys

args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
with open(os.path.join(args["out_dir"], "ckpt.json")) as f:
    w = json.load(f)["w"]
dropout, weight_decay = float(args.get("dropout", 0)), float(args.get("weight_decay", 0.1))
print(f"test loss {1.5 + 3.0 * math.exp(-w) + 0.3 * dropout + 0.05 * (weight_decay == 0):.6f}")
