#!/usr/bin/env python3
"""src/report/README.md's layers against the includes: every file of src/report is in one layer,
and includes only report/ headers of its own layer or a lower one. Run by CTest as
docs.report_layers; exits 1 naming each file that is not listed or includes upward."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
report = root / "src/report"
rows = re.findall(r"^- (\d+) [^:]+: (.+)$", (report / "README.md").read_text(), re.M)
patterns = [(int(layer), name) for layer, names in rows for name in re.findall(r"`([^`]+)`", names)]
if not patterns:
    sys.exit("src/report/README.md: no layers (- N name: `file` ...)")


def layer_of(stem: str):
    for layer, name in patterns:
        if name == stem or (name.endswith("/*") and stem.startswith(name[:-1])):
            return layer
    return None


problems = []
files = sorted(p for p in report.rglob("*") if p.suffix in (".h", ".cpp"))
for path in files:
    stem = path.relative_to(report).with_suffix("").as_posix()
    own = layer_of(stem)
    if own is None:
        problems.append(f"src/report/{stem}: in no layer of src/report/README.md")
        continue
    for included in re.findall(r'^#include "report/([^"]+)\.h"', path.read_text(), re.M):
        theirs = layer_of(included)
        if theirs is not None and theirs > own:
            problems.append(f"{path.relative_to(root)} (layer {own}) includes report/{included}.h (layer {theirs}): "
                            "an arrow back up — move what it needs down, or the file up")
print(f"{len(files)} files of src/report in {len(set(l for l, _ in patterns))} layers")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
