"""A tiny GPT trained on a dataset prepared by `sweep data prepare` — a stand-in for your own
train.py, written to show what sweep needs from one: read the run's config and seeds, print
events (clients/python/sweep_events.py), checkpoint, resume, and stop cleanly on SIGTERM.

Under `sweep run examples/own-trainer/sweep.yaml` everything comes from the SWEEP_* environment.
Alone: python3 train.py --config my-config.json (the same keys as the sweep file declares).
"""

import argparse
import glob
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from sweep_events import Run  # noqa: E402  (copy sweep_events.py beside your own train.py)


def find_folder(name):
    """A dataset folder as written, looked up from here and each folder above (as sweep does)."""
    if os.path.isabs(name):
        return name
    here = os.getcwd()
    while True:
        if os.path.isdir(os.path.join(here, name)):
            return os.path.join(here, name)
        if os.path.dirname(here) == here:
            raise SystemExit(f"no dataset {name} here or in any folder above")
        here = os.path.dirname(here)


def load_split(folder, split):
    """A split's tokens: llm.c's shards (256 int32 of header: magic 20240520, version, count; then uint16)."""
    parts = []
    for path in sorted(glob.glob(os.path.join(folder, f"{split}_*.bin"))):
        header = np.fromfile(path, dtype=np.int32, count=256)
        assert header[0] == 20240520 and header[1] == 1, f"{path}: not a version-1 token shard"
        parts.append(np.fromfile(path, dtype=np.uint16, offset=1024, count=int(header[2])))
    return torch.from_numpy(np.concatenate(parts).astype(np.int64))


class Block(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        y = self.drop(F.softmax(scores, dim=-1)) @ v
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))
        return x + self.drop(self.mlp(self.norm2(x)))


class TinyGPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, width, dropout):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(block, width)
        self.blocks = nn.ModuleList(Block(width, heads, dropout) for _ in range(layers))
        self.norm, self.head, self.drop = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False), nn.Dropout(dropout)

    def forward(self, idx, targets):
        x = self.drop(self.tokens(idx) + self.positions(torch.arange(idx.shape[1])))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


@torch.no_grad()
def mean_loss(model, tokens, block, batch, limit):
    """The loss over consecutive windows of `tokens` (at most `limit` tokens), weighted by tokens."""
    model.eval()
    starts = list(range(0, min(len(tokens), limit + 1) - block - 1, block))
    total, count = 0.0, 0
    for i in range(0, len(starts), batch):
        s = starts[i:i + batch]
        x = torch.stack([tokens[j:j + block] for j in s])
        y = torch.stack([tokens[j + 1:j + block + 1] for j in s])
        total += model(x, y).item() * x.numel()
        count += x.numel()
    model.train()
    return total / count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="a JSON config (default: sweep's, from SWEEP_CONFIG)")
    run = Run(config=parser.parse_args().config)
    torch.set_num_threads(run.threads or 1)
    data = find_folder(run.get("data.dataset"))
    train, val, test = (load_split(data, s) for s in ("train", "val", "test"))
    vocab = int(max(train.max(), val.max(), test.max())) + 1
    block, batch = run.get("model.block_size"), run.get("train.micro_batch")
    steps = run.get("train.tokens") // (block * batch)
    torch.manual_seed(run.init_seed)  # the weights: the init seed
    model = TinyGPT(vocab, block, run.get("model.n_layer"), run.get("model.n_head"), run.get("model.n_embd"),
                    run.get("model.dropout"))
    lr, warmup = run.get("train.lr"), round(run.get("train.warmup") * steps)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1, betas=(0.9, 0.95))
    order = torch.Generator().manual_seed(run.data_seed)  # the batches and dropout masks: the data seed
    torch.manual_seed(run.data_seed)
    ckpt, step = os.path.join(run.checkpoint_dir, "ckpt.pt"), 0
    if run.resume and os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        order.set_state(state["order"])
        torch.set_rng_state(state["rng"])
        step = state["step"]

    def save():
        os.makedirs(run.checkpoint_dir, exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "order": order.get_state(),
                    "rng": torch.get_rng_state(), "step": step}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)  # a kill mid-save leaves the previous checkpoint whole
        run.checkpoint(step, step * block * batch)

    run.start(step, step * block * batch, total_steps=steps, tokens_per_step=block * batch,
              params=sum(p.numel() for p in model.parameters()))
    every, val_tokens = run.get("eval.every"), run.get("eval.val_tokens")
    while step < steps:
        if run.get("train.schedule") == "cosine" and step >= warmup:
            rate = 0.1 * lr + 0.45 * lr * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))
        else:
            rate = lr * min(1.0, (step + 1) / warmup) if warmup else lr
        for group in optimizer.param_groups:
            group["lr"] = rate
        started = time.time()
        starts = torch.randint(0, len(train) - block - 1, (batch,), generator=order)
        x = torch.stack([train[s:s + block] for s in starts])
        y = torch.stack([train[s + 1:s + block + 1] for s in starts])
        loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip = run.get("train.grad_clip")
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip if clip > 0 else float("inf"))
        optimizer.step()
        step += 1
        tokens = step * block * batch
        if not math.isfinite(loss.item()):
            run.diverged(step, tokens)
        run.train(step, tokens, loss.item(), lr=rate, grad_norm=norm.item(),
                  tokens_per_s=block * batch / (time.time() - started))
        if step % every == 0 or step == steps:
            run.eval(step, tokens, "val", mean_loss(model, val, block, batch, val_tokens))
            save()
        if run.stop_requested:  # SIGTERM: checkpoint and stop; sweep re-queues the run, which resumes
            save()
            run.preempted(step, tokens)
    run.end(step, steps * block * batch, test_loss=mean_loss(model, test, block, batch, len(test)))


if __name__ == "__main__":
    main()
