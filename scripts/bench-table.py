#!/usr/bin/env python3
"""The bench's rows (`sweep bench --rows FILE`, one JSON line each) as a Markdown table for
docs/performance.md: per device, model and precision, each row's tokens/s, step time, model FLOP/s,
MFU, peak tensor memory, optimizer time and host reads, and its speed against sweep's default row
and nanoGPT's of the same model and precision where the file has them. Python's standard library
only (the GPU machine has no package registry).

    scripts/bench-table.py OUT/rows.jsonl > OUT/table.md
"""
import json
import sys


def number(value, fmt):
    return "-" if value is None else format(value, fmt)


def main(path):
    rows = []
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        sys.exit(f"bench-table: {path} has no row: no bench row was measured")
    with f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"bench-table: {path}:{n}: not a row ({e})")
    if not rows:
        sys.exit(f"bench-table: {path} has no row: no bench row was measured")
    print("| device | model | precision | row | tokens/s | step ms | model TFLOP/s | MFU | peak MiB "
          "| optimizer ms | host reads/step | × sweep | × nanoGPT | × nanoGPT compiled | note |")
    print("|:--|:--|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|")

    def speed_of(r, who):
        for o in rows:
            if (o["device"], o["model"], o["precision"], o["who"]) == (r["device"], r["model"], r["precision"], who):
                return o["tokens_per_s"] or None
        return None

    def ratio(r, who):
        other = speed_of(r, who)
        return "-" if not other or not r["tokens_per_s"] or r["who"] == who else f"{r['tokens_per_s'] / other:.2f}×"

    for r in rows:
        measured = r["tokens_per_s"] > 0
        print("| " + " | ".join([
            r["device"], r["model"], r["precision"], r["who"],
            number(r["tokens_per_s"] if measured else None, ",.0f"),
            number(r["step_ms"] if measured else None, ".1f"),
            number(r["flops_per_s"] / 1e12 if measured else None, ".3g"),
            f"{100 * r['mfu']:.1f}%" if measured and r["mfu"] else "-",
            number(r.get("peak_mib"), ",.0f"),
            number(r.get("optimizer_ms"), ".2f"),
            number(r.get("reads_per_step"), ".1f"),
            ratio(r, "sweep"), ratio(r, "nanogpt"), ratio(r, "nanogpt-compile"),
            r.get("note", "").replace("|", "/"),
        ]) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench-table.py ROWS.jsonl")
    main(sys.argv[1])
