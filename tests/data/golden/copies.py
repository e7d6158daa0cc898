#!/usr/bin/env python3
"""Copies of one report.json as `sweep pool` must treat them (tests/integration/golden_report.sh):
   copies.py REPORT OUT
writes OUT/same-{a,b,c}/report.json — the study as if run three times under other names with a key
that does not change training (eval.every): other run ids, the same per-seed losses — and
OUT/near-{a,b,c}/report.json: the same, each variant's values and improvement 1e-5 apart per copy
(report.json copies that agree more closely than their errors). The pool counts the first three as
one setting; the near-copies are three settings whose prediction interval must not collapse."""
import json
import pathlib
import sys

report = json.loads(pathlib.Path(sys.argv[1]).read_text())
out = pathlib.Path(sys.argv[2])
for kind, shift in (("same", 0.0), ("near", 1e-5)):
    for i, copy in enumerate("abc"):
        r = json.loads(json.dumps(report))
        r["sweep"] = f"{kind}-{copy}"
        for v in r["variants"]:
            for run in v.get("runs_detail") or []:
                run["run_id"] = f"{copy}{run['run_id'][1:]}"
                if isinstance(run.get("value"), (int, float)) and not v.get("baseline"):
                    run["value"] -= shift * i
            if isinstance(v.get("improvement"), (int, float)) and not v.get("baseline"):
                v["improvement"] += shift * i
        folder = out / f"{kind}-{copy}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(json.dumps(r, indent=2) + "\n")
