# nanoGPT's training step, timed the way `sweep bench` times sweep's, for a side-by-side figure:
# the GPT of the model.py given by path (karpathy/nanoGPT's, not part of sweep), built with the
# same shapes, trained as its train.py does (AdamW from configure_optimizers, autocast bf16 or
# TF32 as asked, clip 1.0, zero_grad(set_to_none=True)) on random tokens, optionally under
# torch.compile. Prints one JSON line. Standard library and torch only. Run by
# `sweep bench --nanogpt PATH`, which embeds this file.
import argparse
import contextlib
import importlib.util
import json
import sys
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--model", required=True, help="nanoGPT's model.py")
p.add_argument("--device", default="cpu")
p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"])
p.add_argument("--compile", type=int, default=0)
p.add_argument("--n-layer", type=int, required=True)
p.add_argument("--n-head", type=int, required=True)
p.add_argument("--n-embd", type=int, required=True)
p.add_argument("--block", type=int, required=True)
p.add_argument("--batch", type=int, required=True)
p.add_argument("--vocab", type=int, required=True)
p.add_argument("--data-vocab", type=int, required=True, help="tokens drawn below this")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--threads", type=int, default=0)
args = p.parse_args()


def emit(**fields):
    fields["torch"] = torch.__version__
    print(json.dumps(fields))
    sys.exit(0)


if args.compile and not hasattr(torch, "compile"):
    emit(error="torch.compile needs PyTorch 2 (this is " + torch.__version__ + ")")
cuda = args.device.startswith("cuda")
if cuda and not torch.cuda.is_available():
    emit(error="this torch sees no CUDA device")
if args.threads > 0:
    torch.set_num_threads(args.threads)
if cuda:
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"

spec = importlib.util.spec_from_file_location("nanogpt_model", args.model)
module = importlib.util.module_from_spec(spec)
with contextlib.redirect_stdout(sys.stderr):  # nanoGPT prints parameter counts: keep stdout for the result
    spec.loader.exec_module(module)
    torch.manual_seed(1)
    config = module.GPTConfig(block_size=args.block, vocab_size=args.vocab, n_layer=args.n_layer,
                              n_head=args.n_head, n_embd=args.n_embd, dropout=0.0, bias=True)
    model = module.GPT(config).to(args.device)
    optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda" if cuda else "cpu")
if args.compile:
    model = torch.compile(model)
autocast = (torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16)
            if args.precision == "bf16" else contextlib.nullcontext())
generator = torch.Generator().manual_seed(1234)


def step():
    x = torch.randint(args.data_vocab, (args.batch, args.block), generator=generator)
    y = torch.randint(args.data_vocab, (args.batch, args.block), generator=generator)
    if cuda:  # as nanoGPT's get_batch: pinned, copied without waiting
        x = x.pin_memory().to(args.device, non_blocking=True)
        y = y.pin_memory().to(args.device, non_blocking=True)
    with autocast:
        _, loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def synchronize():
    if cuda:
        torch.cuda.synchronize()


for _ in range(args.warmup):  # torch.compile compiles here
    step()
synchronize()
if cuda:
    torch.cuda.reset_peak_memory_stats()
    # as sweep's GPU bench: the timed steps back to back, one wait at the end
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    synchronize()
    step_s = (time.perf_counter() - start) / args.steps
else:
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step()
        loss.item()
        times.append(time.perf_counter() - start)
    step_s = sorted(times)[len(times) // 2]
emit(tokens_per_s=args.batch * args.block / step_s, step_ms=1e3 * step_s, loss=loss.item(),
     compile=bool(args.compile), peak_mib=torch.cuda.max_memory_allocated() / 2**20 if cuda else None)
