#!/usr/bin/env bash
# Quick start, the main job: install and build, prepare the Brown corpus, and train the
# reference run (experiments/train/gpt-mini.yaml). Idempotent: a finished run is not re-trained.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/brown.sh
run_dir=results/train/gpt-mini
if grep -qs '"status":"done"' "$run_dir/events.jsonl"; then
  echo "main: $run_dir is already trained:"
  tail -n 3 "$run_dir/train.log"
elif [ -f "$run_dir/config.yaml" ]; then
  ./build/sweep train experiments/train/gpt-mini.yaml --run-dir "$run_dir" --resume
else
  ./build/sweep train experiments/train/gpt-mini.yaml --run-dir "$run_dir"
fi
