# The example trainer of your own (examples/own-trainer/train.py: PyTorch, the build's Python —
# $SWEEP_PYTHON, the project's .venv — events through clients/python/sweep_events.py) run by `sweep run` at a tiny size on a prepared
# bytes dataset: every variant and seed trained and judged, and a run stopped by SIGTERM resumes
# from the trainer's checkpoint to the test loss of the same run trained without a stop.
source "$(dirname "$0")/lib.bash"
"${SWEEP_PYTHON:-none}" -c "import torch" 2>/dev/null ||
  { echo "skipped: this build names no Python with torch (SWEEP_PYTHON='${SWEEP_PYTHON:-}'; scripts/setup.sh sets it)"; exit 77; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
prepare_bytes
mkdir -p examples/own-trainer clients/python
cp "$repo/examples/own-trainer/train.py" examples/own-trainer/
cp "$repo/clients/python/sweep_events.py" clients/python/
sed -e 's|data.dataset: results/data/brown-sp4096|data.dataset: data/bytes|' \
    -e 's|default: 200K}|default: 6K}|; s|model.n_embd: {type: int, default: 64|model.n_embd: {type: int, default: 16|' \
    -e 's|model.block_size: {type: int, default: 64|model.block_size: {type: int, default: 16|' \
    -e 's|eval.every: {type: int, default: 20|eval.every: {type: int, default: 5|' \
    -e 's|seeds: \[1, 2, 3\]|seeds: [1, 2]|' -e "s|command: \[python3,|command: [$SWEEP_PYTHON,|" \
    "$repo/examples/own-trainer/sweep.yaml" > examples/own-trainer/sweep.yaml
"$SWEEP" run examples/own-trainer/sweep.yaml --results res --devices cpu:2x1 > run.txt || fail "the example: $(cat run.txt)"
"$SWEEP" report own-trainer --results res --out rep --format json > rep.json || fail "its report"
python3 - <<'PY' || fail "the example's report: $(cat rep.json)"
import json
r = json.load(open("rep.json"))
assert len(r["variants"]) == 4 and all(v["seeds"] == 2 for v in r["variants"]), r["variants"]
assert all(v["method"] in ("", "paired") for v in r["variants"]), r["variants"]
assert r["code"].startswith("code: trained by trainer tiny-gpt@"), r["code"]
print("example report: ok")
PY
# SIGTERM mid-run: checkpoint, exit 75, re-queued, resumed — to the uninterrupted run's test loss
sed -e 's|sweep: own-trainer|sweep: own-stopped|' -e 's|default: 6K}|default: 24K}|' examples/own-trainer/sweep.yaml > examples/own-trainer/long.yaml
"$SWEEP" run examples/own-trainer/long.yaml --results straight --devices cpu:2x1 > straight.txt || fail "uninterrupted: $(cat straight.txt)"
"$SWEEP" run examples/own-trainer/long.yaml --results res --devices cpu:2x1 > stopped.txt &
sched=$!
victim=$(awk '$1 == "baseline" && $2 == "1" {print $3}' <<< "$("$SWEEP" plan examples/own-trainer/long.yaml --results res)")
wait_for_train_events "res/runs/$victim/events.jsonl" 30
kill -TERM "$(worker_pid "$victim")"
wait "$sched" || fail "the stopped sweep should finish: $(cat stopped.txt)"
grep -q "preempted baseline seed 1 .*: re-queued" stopped.txt || fail "not preempted: $(cat stopped.txt)"
grep -q '"resumed":true' "res/runs/$victim/events.jsonl" || fail "the example did not resume from its checkpoint"
[ "$(test_loss "res/runs/$victim")" = "$(test_loss "straight/runs/$victim")" ] ||
  fail "resumed $(test_loss "res/runs/$victim") against uninterrupted $(test_loss "straight/runs/$victim")"
echo "own_trainer_python: ok"
