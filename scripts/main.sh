#!/usr/bin/env bash
# Quick start, the main job: install and build, prepare the Brown corpus, and run the quick
# intervention study (experiments/quick.yaml: 8 variants × 3 seeds, two runs at a time), then
# its report: the ranked table, and reports/quick/ (report.md, index.html, summary.csv,
# report.json, SVG plots). Idempotent: finished runs are never trained again; interrupted ones resume.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --target sweep  # only what the main job runs: not the tests
scripts/brown.sh
./build/sweep run experiments/quick.yaml --devices cpu:2x1
./build/sweep report quick
