#!/usr/bin/env python3
"""Lines of code are kept to 120 columns. The code written before the limit was enforced holds
CEILING longer lines; this test fails when there are more (a changed line that grew past 120), and
when there are fewer, so that the ceiling follows every line fixed: lower CEILING to the count it
prints. Run by CTest as docs.line_length."""
import pathlib
import sys

LIMIT = 120
CEILING = 552  # lines over LIMIT in the files below on 2026-11-29; it only goes down

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
suffixes = {".h", ".cpp", ".cu", ".cuh"}
long_lines = []
for folder in ("src", "kernels", "tests"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix in suffixes and path.is_file():
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if len(line) > LIMIT:
                    long_lines.append(f"{path.relative_to(root)}:{number}: {len(line)} columns")
count = len(long_lines)
if count > CEILING:
    print("\n".join(long_lines))
    print(f"{count} lines over {LIMIT} columns, more than the {CEILING} written before the limit: "
          f"wrap the new ones (the list above; `git diff` says which are yours)")
    sys.exit(1)
if count < CEILING:
    print(f"{count} lines over {LIMIT} columns, fewer than the ceiling: lower CEILING in {pathlib.Path(__file__).name} to {count}")
    sys.exit(1)
print(f"{count} lines over {LIMIT} columns, at the ceiling (none added)")
