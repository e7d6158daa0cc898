"""The test loss of what nanoGPT's train.py saved: its checkpoint (out_dir/ckpt.pt) scored once on
every whole window of the held-out split (data/DATASET/test.bin, which prepare.py writes), printed
as `test loss X` — the line sweep.yaml's trainer.output.result reads. nanoGPT's own val loss is a
mean over random batches; a fixed split scored whole is the steadier verdict. Run from nanoGPT's
folder (its model.py) with the run's --key=value arguments."""
import os
import sys

import numpy as np
import torch

args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
sys.path.insert(0, os.getcwd())
from model import GPT, GPTConfig  # noqa: E402 (nanoGPT's)

device = args.get("device", "cpu")
checkpoint = torch.load(os.path.join(args["out_dir"], "ckpt.pt"), map_location=device)
model = GPT(GPTConfig(**checkpoint["model_args"]))
model.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in checkpoint["model"].items()})
model.to(device).eval()
block = checkpoint["model_args"]["block_size"]
data = np.memmap(os.path.join("data", args.get("dataset", "sweep_char"), "test.bin"), dtype=np.uint16, mode="r")
windows = (len(data) - 1) // block
x = torch.from_numpy(data[: windows * block].astype(np.int64)).view(windows, block)
y = torch.from_numpy(data[1 : windows * block + 1].astype(np.int64)).view(windows, block)
total = 0.0
with torch.no_grad():
    for i in range(0, windows, 64):
        _, loss = model(x[i : i + 64].to(device), y[i : i + 64].to(device))
        total += loss.item() * len(x[i : i + 64])
print(f"test loss {total / windows:.6f}")
