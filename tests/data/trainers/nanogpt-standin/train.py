# A stand-in for nanoGPT's train.py (README.md): its arguments, seeding, checkpoints and lines.
import json
import math
import os
import random
import signal
import time


class torch:  # what nanoGPT's seeding and a seed hook touch of torch
    manual_seed = staticmethod(lambda seed: random.seed(seed))


out_dir = "out"
eval_interval = 2000
log_interval = 1
eval_iters = 200
always_save_checkpoint = True
init_from = "scratch"
dataset = "openwebtext"
gradient_accumulation_steps = 1
batch_size = 12
block_size = 1024
n_layer = 12
n_head = 12
n_embd = 768
dropout = 0.0
learning_rate = 6e-4
max_iters = 600000
weight_decay = 1e-1
grad_clip = 1.0
lr_decay_iters = 600000
device = "cuda"
dtype = "bfloat16"
compile = True
deaf = False
step_seconds = 0.004
exec(open("configurator.py").read())

if deaf:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
tokens_per_iter = gradient_accumulation_steps * batch_size * block_size
print(f"tokens per iteration will be: {tokens_per_iter:,}")
os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(1337)
iter_num, w = 0, 0.0
if init_from == "resume":
    print(f"Resuming training from {out_dir}")
    with open(os.path.join(out_dir, "ckpt.json")) as f:
        saved = json.load(f)
    iter_num, w = saved["iter_num"], saved["w"]
else:
    print("Initializing a new model from scratch")
print(f"number of parameters: {12 * n_layer * n_embd * n_embd / 1e6:.2f}M")


def loss_at(w, noise):
    return 1.5 + 3.0 * math.exp(-w) + 0.3 * dropout + 0.05 * (weight_decay == 0) + noise


while True:
    if iter_num % eval_interval == 0:
        val = loss_at(w, random.gauss(0, 0.01))
        print(f"step {iter_num}: train loss {val + 0.02:.4f}, val loss {val:.4f}")
        if iter_num > 0 and always_save_checkpoint:
            print(f"saving checkpoint to {out_dir}")
            with open(os.path.join(out_dir, "ckpt.json.tmp"), "w") as f:
                json.dump({"iter_num": iter_num, "w": w}, f)
            os.replace(os.path.join(out_dir, "ckpt.json.tmp"), os.path.join(out_dir, "ckpt.json"))
    t0 = time.time()
    time.sleep(step_seconds)
    w += learning_rate * 20 * (1 + random.gauss(0, 0.05)) * (1 - 0.2 * (grad_clip == 0))
    if iter_num % log_interval == 0:
        print(f"iter {iter_num}: loss {loss_at(w, random.gauss(0, 0.05)):.4f}, time {(time.time() - t0) * 1000:.2f}ms, "
              f"mfu {-100.0:.2f}%")
    iter_num += 1
    if iter_num > max_iters:
        break
